"""ai.stackexchange.com/questions/18234 (TensorFlow 2.0 era): "Why is my loss (binary cross entropy) converging on
~0.6? (Task: Natural Language Inference)": BERT, its parameters not frozen, a classifier on its pooled output,
binary cross-entropy and Adam at learning rate 0.001, trained "for 80 epochs and it's converging on ~0.68" on a
balanced binary task: the loss of a model that predicts one class for everything.

The reporter's shape: the sentence pair joined with [SEP] into one text of at most 64 tokens, batches of 8, a
classifier on BERT's pooled output with one sigmoid unit, `binary_crossentropy`, `Adam(learning_rate=0.001)`.
Lines marked `# adapted:` are what running offline on today's stack needs; the rest is the question's.

The fix, marked `# fix`: the documented one (the stored page keeps the question, not its answers): a rate from the
range BERT's authors give for fine-tuning, 5e-5, 3e-5 or 2e-5 (Devlin et al., 2019, appendix A.3; the Hugging Face
course, chapter 8, TensorFlow, says the same of Adam's default 1e-3).
"""

import argparse

import numpy as np
import pandas as pd
import tf_keras as keras  # adapted: tf.keras is Keras 3 since TensorFlow 2.16; Transformers' TF models are tf_keras
from transformers import AutoTokenizer, TFAutoModel

parser = argparse.ArgumentParser()  # adapted: the checkpoint and data are local files
parser.add_argument("--checkpoint", required=True)  # adapted
parser.add_argument("--data", required=True)  # adapted: SST-2 sentences (the question's own NLI pairs)
parser.add_argument("--epochs", type=int, default=3)  # adapted: the question's 80 epochs, shortened
args = parser.parse_args()  # adapted

MAX_LEN = 64
BATCH_SIZE = 8
frame = pd.read_csv(args.data, sep="\t")  # adapted: the question's premise [SEP] hypothesis texts
held_out = frame.sample(n=150, random_state=0)  # adapted: rows kept out to score the run
frame = frame.drop(held_out.index)  # adapted

tokenizer = AutoTokenizer.from_pretrained(args.checkpoint)  # adapted: BERT's FullTokenizer


def encode(texts):
    tokens = tokenizer(list(texts), max_length=MAX_LEN, truncation=True, padding="max_length", return_tensors="np")
    return [tokens["input_ids"], tokens["attention_mask"]]


bert = TFAutoModel.from_pretrained(args.checkpoint)  # adapted: TF-Hub's BERT layer, trainable=True
input_ids = keras.layers.Input(shape=(MAX_LEN,), dtype="int32", name="input_ids")
input_mask = keras.layers.Input(shape=(MAX_LEN,), dtype="int32", name="input_mask")
pooled_output = bert(input_ids=input_ids, attention_mask=input_mask).pooler_output
output = keras.layers.Dense(1, activation="sigmoid")(pooled_output)
model = keras.Model(inputs=[input_ids, input_mask], outputs=output)

model.compile(loss="binary_crossentropy", optimizer=keras.optimizers.Adam(learning_rate=2e-5),  # fix
              metrics=["accuracy"])
model.fit(encode(frame["sentence"]), frame["label"].to_numpy(), batch_size=BATCH_SIZE, epochs=args.epochs)

predicted = (model.predict(encode(held_out["sentence"]), verbose=0)[:, 0] > 0.5).astype(int)  # adapted: the score
truth = held_out["label"].to_numpy()  # adapted
print(f"held-out accuracy {np.mean(predicted == truth):.3f} on {len(truth)} rows; "  # adapted
      f"majority class {np.bincount(truth).max() / len(truth):.3f}")  # adapted
