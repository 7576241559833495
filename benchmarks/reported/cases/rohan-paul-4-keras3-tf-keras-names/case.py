"""rohan-paul/LLM-FineTuning-Large-Language-Models#4 (2024-03-28): a notebook fine-tuning BERT with TensorFlow stops
at compile in Colab with `ValueError: Could not interpret optimizer identifier: <keras.src.optimizers.adam.Adam
object at 0x7f8a8336ae00>`: `tf.keras` is Keras 3 since TensorFlow 2.16, and Transformers' TF models are tf-keras
(Keras 2) models.

The notebook's shape: `TFAutoModelForSequenceClassification.from_pretrained("bert-base-cased", num_labels=3)`, the
tokenizer's arrays padded and truncated, `compile(optimizer=tf.keras.optimizers.Adam(5e-5),
loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=tf.metrics.SparseCategoricalAccuracy())`,
`fit`. Lines marked `# adapted:` are what running offline on today's stack needs; the rest is the notebook's.
"""

import argparse
import json

import numpy as np
import tensorflow as tf
from transformers import AutoTokenizer, TFAutoModelForSequenceClassification

parser = argparse.ArgumentParser()  # adapted: the checkpoint and data are local files
parser.add_argument("--checkpoint", required=True)  # adapted
parser.add_argument("--data", required=True)  # adapted: MNLI pairs, three labels (the notebook's own three classes)
parser.add_argument("--epochs", type=int, default=3)  # adapted
args = parser.parse_args()  # adapted

LABELS = {"entailment": 0, "neutral": 1, "contradiction": 2}  # adapted: the notebook's label ids
rows = [json.loads(line) for line in open(args.data)]  # adapted: the notebook's data frame
held_out, rows = rows[:80], rows[80:]  # adapted: rows kept out to score the run

tokenizer = AutoTokenizer.from_pretrained(args.checkpoint)  # adapted: "bert-base-cased" on the Hub


def encode(part):  # adapted: the pairs of each row
    return dict(tokenizer([row["premise"] for row in part], [row["hypothesis"] for row in part], padding=True,
                          truncation=True, max_length=128, return_tensors="tf"))


model = TFAutoModelForSequenceClassification.from_pretrained(args.checkpoint, num_labels=3)  # adapted: the checkpoint
model.compile(optimizer=tf.keras.optimizers.Adam(5e-5),
              loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
              metrics=tf.metrics.SparseCategoricalAccuracy())
model.fit(encode(rows), np.array([LABELS[row["label"]] for row in rows]), batch_size=16, epochs=args.epochs)

predicted = np.argmax(model.predict(encode(held_out), verbose=0).logits, axis=-1)  # adapted: the score
truth = np.array([LABELS[row["label"]] for row in held_out])  # adapted
print(f"held-out accuracy {np.mean(predicted == truth):.3f} on {len(truth)} rows; "  # adapted
      f"majority class {np.bincount(truth).max() / len(truth):.3f}")  # adapted
