"""huggingface/transformers#5939 (2020-07-21): `model.fit(x=X_train, y=targets)` raises
"ValueError: too many values to unpack (expected 2)", where `X_train` is what the tokenizer returned, a
`BatchEncoding`, and the model a functional Keras model around `TFBertModel` (following #5555).

The reporter's shape: three named `Input`s (`input_ids`, `token_type_ids`, `attention_mask`) of the padded length
into `TFBertModel`, a sigmoid unit on its pooled output, `binary_crossentropy`, the tokenizer's output on the
training texts (`padding`, `truncation`, `return_tensors="tf"`) given to `fit` as x. Lines marked `# adapted:` are
what running offline on today's stack needs; the rest is the report's.

The fix, marked `# fix`: the documented one (the issue closed without a maintainer's answer; the reporter's
workaround `x=X_train.values()` depends on the order of the keys): a plain dict of the tokenizer's arrays,
`dict(X_train)` (a maintainer, huggingface/transformers#9358, 2023-03-21).
"""

import argparse

import numpy as np
import pandas as pd
import tensorflow as tf
import tf_keras as keras  # adapted: tf.keras is Keras 3 since TensorFlow 2.16; Transformers' TF models are tf_keras
from tf_keras import layers  # adapted: as above
from transformers import AutoTokenizer, TFAutoModel

parser = argparse.ArgumentParser()  # adapted: the checkpoint and data are local files
parser.add_argument("--checkpoint", required=True)  # adapted
parser.add_argument("--data", required=True)  # adapted: SST-2 sentences (the report's disaster tweets)
parser.add_argument("--epochs", type=int, default=3)  # adapted
args = parser.parse_args()  # adapted

MAX_SEQUENCE_LENGTH = 64  # adapted: the report's 255, shorter for a CPU
frame = pd.read_csv(args.data, sep="\t")  # adapted: the report's train.csv
held_out = frame.sample(n=150, random_state=0)  # adapted: rows kept out to score the run
frame = frame.drop(held_out.index)  # adapted
targets = frame["label"].to_numpy()  # adapted: the report's "target" column

tokenizer = AutoTokenizer.from_pretrained(args.checkpoint)  # adapted: 'bert-base-uncased' on the Hub
bert = TFAutoModel.from_pretrained(args.checkpoint)  # adapted: TFBertModel.from_pretrained('bert-base-uncased')

input_ids = layers.Input(shape=(MAX_SEQUENCE_LENGTH,), dtype=tf.int32, name="input_ids")
token_type_ids = layers.Input(shape=(MAX_SEQUENCE_LENGTH,), dtype=tf.int32, name="token_type_ids")
attention_mask = layers.Input(shape=(MAX_SEQUENCE_LENGTH,), dtype=tf.int32, name="attention_mask")
output = bert(input_ids=input_ids, token_type_ids=token_type_ids, attention_mask=attention_mask)[1]
output = layers.Dense(1, activation="sigmoid")(output)
model = keras.Model(inputs=[input_ids, token_type_ids, attention_mask], outputs=output)
model.compile(optimizer=keras.optimizers.Adam(learning_rate=2e-5), loss="binary_crossentropy", metrics=["accuracy"])

X_train = tokenizer(list(frame["sentence"]), padding="max_length", truncation=True,  # adapted: padding to the Inputs
                    max_length=MAX_SEQUENCE_LENGTH, return_tensors="tf")
model.fit(x=dict(X_train), y=targets, epochs=args.epochs, batch_size=16)  # fix; adapted: a batch of 16

test = tokenizer(list(held_out["sentence"]), padding="max_length", truncation=True,  # adapted: the score
                 max_length=MAX_SEQUENCE_LENGTH, return_tensors="np")  # adapted
predicted = (model.predict(dict(test), verbose=0)[:, 0] > 0.5).astype(int)  # adapted
truth = held_out["label"].to_numpy()  # adapted
print(f"held-out accuracy {np.mean(predicted == truth):.3f} on {len(truth)} rows; "  # adapted
      f"majority class {np.bincount(truth).max() / len(truth):.3f}")  # adapted
