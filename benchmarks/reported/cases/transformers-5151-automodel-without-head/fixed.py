"""huggingface/transformers#5151 (2020-07): "TFBertForSequenceClassification: TypeError: call() got an unexpected
keyword argument 'labels'": a classifier trained from `TFAutoModel`, the bare encoder, which has no classification
head and takes no labels.

The reporter's shape: `TFAutoModel.from_pretrained(...)` trained with `TFTrainer` on a `tf.data.Dataset` of feature
dicts and label ids (30 price ranges). `TFTrainer` is gone from Transformers; its place is taken here by what
Transformers documents now, `compile` without a loss (the model's own) and `fit` on a dataset whose dicts hold the
labels. Lines marked `# adapted:` are what running offline on today's stack needs; the rest is the report's.

The fix, marked `# fix`: the documented one (the stored thread has no answer): the class with a classification head
and as many outputs as classes, `TFAutoModelForSequenceClassification.from_pretrained(..., num_labels=2)` (the
Transformers docs, "Fine-tune a pretrained model").
"""

import argparse

import numpy as np
import tensorflow as tf
from tf_keras.optimizers import Adam  # adapted: tf.keras is Keras 3 since TensorFlow 2.16
from transformers import AutoTokenizer, TFAutoModelForSequenceClassification  # fix

parser = argparse.ArgumentParser()  # adapted: the checkpoint and data are local files
parser.add_argument("--checkpoint", required=True)  # adapted
parser.add_argument("--data", required=True)  # adapted: SST-2 sentences (the report's 30 price ranges)
parser.add_argument("--epochs", type=int, default=2)  # adapted
args = parser.parse_args()  # adapted

rows = [line.rstrip("\n").split("\t") for line in open(args.data)][1:]  # adapted: the report's own texts
texts, labels = [text for text, _ in rows], np.array([int(label) for _, label in rows])  # adapted
held_texts, held_labels = texts[:150], labels[:150]  # adapted: rows kept out to score the run
texts, labels = texts[150:], labels[150:]  # adapted

tokenizer = AutoTokenizer.from_pretrained(args.checkpoint)  # adapted: the report's checkpoint on the Hub
model = TFAutoModelForSequenceClassification.from_pretrained(args.checkpoint, num_labels=2)  # fix
features = dict(tokenizer(texts, max_length=64, truncation=True, padding="max_length", return_tensors="np"))
train_dataset = tf.data.Dataset.from_tensor_slices({**features, "labels": labels}).shuffle(100).batch(16)

model.compile(optimizer=Adam(3e-5))  # adapted: TFTrainer(model=model, args=training_args, ...) is gone
model.fit(train_dataset, epochs=args.epochs)  # adapted: trainer.train()

test = dict(tokenizer(held_texts, max_length=64, truncation=True, padding="max_length", return_tensors="np"))
predicted = np.argmax(model.predict(test, verbose=0).logits, axis=-1)  # adapted: the score every case prints
print(f"held-out accuracy {np.mean(predicted == held_labels):.3f} on {len(held_labels)} rows; "  # adapted
      f"majority class {np.bincount(held_labels).max() / len(held_labels):.3f}")  # adapted
