"""keras-team/keras#21666 (2025-09-15): with tf-keras 2.20.1 installed, `compile` throws "ValueError: Could not
interpret optimizer identifier: <keras.src.optimizers.adam.Adam ...>"; the reporter "tried
`os.environ['TF_USE_LEGACY_KERAS'] = '1'` but to no avail": it was set after TensorFlow had been imported, when
`tensorflow.keras` already meant Keras 3.

The reporter's shape: a DistilBERT token classifier (here its sequence classifier, the benchmark's task) compiled
with `Adam` from `tensorflow.keras`, the model's own `hf_compute_loss` as the loss and an accuracy metric, then
`fit`; the environment variable set in the script after the imports. Lines marked `# adapted:` are what running
offline on today's stack needs; the rest is the report's.

The fix, marked `# fix`: the documented one (the thread went stale): the variable set before TensorFlow is imported
(the TensorFlow 2.16 release notes: "set the environment variable TF_USE_LEGACY_KERAS=1" before importing it).
"""

import os  # fix

os.environ["TF_USE_LEGACY_KERAS"] = "1"  # fix

import argparse

import numpy as np
import tensorflow as tf
from tensorflow.keras.optimizers import Adam
from transformers import AutoTokenizer, TFAutoModelForSequenceClassification
# fix: TF_USE_LEGACY_KERAS is set at the top, before TensorFlow is imported;

# fix: set here, after the imports above, it came too late

parser = argparse.ArgumentParser()  # adapted: the checkpoint and data are local files
parser.add_argument("--checkpoint", required=True)  # adapted
parser.add_argument("--data", required=True)  # adapted: SST-2 sentences (the report's token-labelled text)
parser.add_argument("--epochs", type=int, default=2)  # adapted
args = parser.parse_args()  # adapted

rows = [line.rstrip("\n").split("\t") for line in open(args.data)][1:]  # adapted: the report's own data
texts, labels = [text for text, _ in rows], np.array([int(label) for _, label in rows])  # adapted
held_texts, held_labels = texts[:150], labels[:150]  # adapted: rows kept out to score the run
texts, labels = texts[150:], labels[150:]  # adapted

tokenizer = AutoTokenizer.from_pretrained(args.checkpoint)  # adapted: "distilbert-base-uncased" on the Hub
# adapted: TFDistilBertForTokenClassification.from_pretrained(...); the benchmark's task is sequence classification
model = TFAutoModelForSequenceClassification.from_pretrained(args.checkpoint, num_labels=2)
train = dict(tokenizer(texts, padding=True, truncation=True, max_length=64, return_tensors="np"))
dataset = tf.data.Dataset.from_tensor_slices((train, labels)).shuffle(1000).batch(16)
model.compile(optimizer=Adam(learning_rate=5e-5), loss=model.hf_compute_loss, metrics=["accuracy"])
model.fit(dataset, epochs=args.epochs)

test = dict(tokenizer(held_texts, padding=True, return_tensors="np"))  # adapted: the score every case prints
predicted = np.argmax(model.predict(test, verbose=0).logits, axis=-1)  # adapted
print(f"held-out accuracy {np.mean(predicted == held_labels):.3f} on {len(held_labels)} rows; "  # adapted
      f"majority class {np.bincount(held_labels).max() / len(held_labels):.3f}")  # adapted
