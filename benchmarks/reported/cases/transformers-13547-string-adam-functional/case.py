"""huggingface/transformers#13547 (2021-09-13): "the training loss is not decreasing" for a functional Keras model
around a pretrained BERT encoder, compiled with the optimizer given as the string "adam"; the reporter's own
`TFBertForSequenceClassification` with `Adam(learning_rate=2e-5)` "converges fast" on the same data.

The reporter's shape: the encoder inside a functional model with `input_ids` and `attention_mask` inputs, its pooled
output through Dropout(0.1), Dense(128, relu) and Dense(1, sigmoid), `binary_crossentropy`, numpy arrays.
Lines marked `# adapted:` are what running offline on today's stack needs; the rest is the report's.
"""

import argparse

import numpy as np
import pandas as pd
import tf_keras as keras  # adapted: tf.keras is Keras 3 since TensorFlow 2.16; Transformers' TF models are tf_keras
from transformers import AutoTokenizer, TFAutoModel

parser = argparse.ArgumentParser()  # adapted: the checkpoint and data are local files
parser.add_argument("--checkpoint", required=True)  # adapted
parser.add_argument("--data", required=True)  # adapted: SST-2 sentences (tests/data/sst2/train.tsv)
parser.add_argument("--epochs", type=int, default=3)  # adapted
args = parser.parse_args()  # adapted

SEQ_LEN = 64
frame = pd.read_csv(args.data, sep="\t")  # adapted: the report's own CSV of texts and 0/1 labels
held_out = frame.sample(n=150, random_state=0)  # adapted: rows kept out to score the run
frame = frame.drop(held_out.index)

tokenizer = AutoTokenizer.from_pretrained(args.checkpoint)  # adapted: 'bert-base-uncased' on the Hub


def encode(texts):
    tokens = tokenizer(list(texts), max_length=SEQ_LEN, truncation=True, padding="max_length", return_tensors="np")
    return tokens["input_ids"], tokens["attention_mask"]


input_ids, attention_mask = encode(frame["sentence"])
labels = frame["label"].to_numpy()

bert = TFAutoModel.from_pretrained(args.checkpoint)  # adapted: TFBertModel.from_pretrained('bert-base-uncased')
ids = keras.layers.Input(shape=(SEQ_LEN,), name="input_ids", dtype="int32")
mask = keras.layers.Input(shape=(SEQ_LEN,), name="attention_mask", dtype="int32")
pooled = bert(input_ids=ids, attention_mask=mask)[1]
x = keras.layers.Dropout(0.1)(pooled)
x = keras.layers.Dense(128, activation="relu")(x)
out = keras.layers.Dense(1, activation="sigmoid")(x)
model = keras.Model(inputs=[ids, mask], outputs=out)

model.compile(optimizer="adam", loss="binary_crossentropy", metrics=["accuracy"])
model.fit([input_ids, attention_mask], labels, batch_size=16, epochs=args.epochs)

test_ids, test_mask = encode(held_out["sentence"])  # adapted: the score every case prints
predicted = (model.predict([test_ids, test_mask], verbose=0)[:, 0] > 0.5).astype(int)  # adapted
truth = held_out["label"].to_numpy()  # adapted
print(f"held-out accuracy {np.mean(predicted == truth):.3f} on {len(truth)} rows; "  # adapted
      f"majority class {np.bincount(truth).max() / len(truth):.3f}")  # adapted
