"""tensorflow/tensorflow#43582 (2020-09-28): `'tuple' object has no attribute 'apply_gradients'` when training with
the optimizer Transformers' `create_optimizer` builds: it returns the optimizer and its schedule.

The reporter's shape (a Kaggle notebook): `create_optimizer(init_lr, num_train_steps, num_warmup_steps)` taken as an
optimizer, a Transformers TF classifier, tf.data batches of the tokenizer's tensors and labels. Compiled with it, as
here, the same mistake stops at `compile` ("Could not interpret optimizer identifier").
Lines marked `# adapted:` are what running offline on today's stack needs; the rest is the report's.
"""

import argparse

import numpy as np
import pandas as pd
import tensorflow as tf
from transformers import AutoTokenizer, TFAutoModelForSequenceClassification, create_optimizer

parser = argparse.ArgumentParser()  # adapted: the checkpoint and data are local files
parser.add_argument("--checkpoint", required=True)  # adapted
parser.add_argument("--data", required=True)  # adapted: SST-2 sentences (tests/data/sst2/train.tsv)
parser.add_argument("--epochs", type=int, default=2)  # adapted
args = parser.parse_args()  # adapted

frame = pd.read_csv(args.data, sep="\t")  # adapted: the notebook's dataframe of texts and labels
held_out = frame.sample(n=150, random_state=0)  # adapted: rows kept out to score the run
frame = frame.drop(held_out.index)

tokenizer = AutoTokenizer.from_pretrained(args.checkpoint)  # adapted: a Hub checkpoint
encoded = tokenizer(list(frame["sentence"]), truncation=True, padding=True, max_length=64, return_tensors="np")
train = tf.data.Dataset.from_tensor_slices((dict(encoded), frame["label"].to_numpy())).shuffle(1000).batch(16)

model = TFAutoModelForSequenceClassification.from_pretrained(args.checkpoint, num_labels=2)  # adapted: the checkpoint
num_train_steps = len(train) * args.epochs
optimizer = create_optimizer(init_lr=5e-5, num_train_steps=num_train_steps, num_warmup_steps=0)
model.compile(optimizer=optimizer, metrics=["accuracy"])
model.fit(train, epochs=args.epochs)

test = tokenizer(list(held_out["sentence"]), truncation=True, padding=True, max_length=64,  # adapted: the score
                 return_tensors="np")  # adapted
predicted = np.argmax(model.predict(dict(test), verbose=0).logits, axis=-1)  # adapted
truth = held_out["label"].to_numpy()  # adapted
print(f"held-out accuracy {np.mean(predicted == truth):.3f} on {len(truth)} rows; "  # adapted
      f"majority class {np.bincount(truth).max() / len(truth):.3f}")  # adapted
