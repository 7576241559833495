"""huggingface/transformers#10075 (2021-02-08): fine-tuning a RoBERTa sequence classifier on sentence pairs with
Keras's `Precision()` and `Recall()` among the metrics stops at fit: "assertion failed: [predictions must be >= 0]".
The metrics read the model's output as probabilities in [0, 1]; a Transformers classifier gives logits, two a row.

The reporter's shape: sentence pairs read from a TSV, the tokenizer on both sentences (`padding=True`), a
`tf.data.Dataset` of the encodings and labels, `TFAutoModelForSequenceClassification`, `Adam`,
`SparseCategoricalCrossentropy(from_logits=True)` and `metrics=[Precision(), Recall()]`, `fit`.
Lines marked `# adapted:` are what running offline on today's stack needs; the rest is the report's.

The fix, marked `# fix`: the documented one (the thread gives no accepted answer): metrics that read logits and
class ids, here sparse accuracy; precision and recall computed after `predict` on the predicted classes
(keras-team/keras#15715: "Many metrics cannot handle predictions out of [0..1] range").
"""

import argparse

import numpy as np
import pandas as pd
import tensorflow as tf
import tf_keras as keras  # adapted: tf.keras is Keras 3 since TensorFlow 2.16; Transformers' TF models are tf_keras
from transformers import AutoTokenizer, TFAutoModelForSequenceClassification

parser = argparse.ArgumentParser()  # adapted: the checkpoint and data are local files
parser.add_argument("--checkpoint", required=True)  # adapted
parser.add_argument("--data", required=True)  # adapted: GLUE MRPC pairs (the report's own pairs)
parser.add_argument("--epochs", type=int, default=3)  # adapted
args = parser.parse_args()  # adapted

frame = pd.read_csv(args.data, sep="\t", quoting=3)  # adapted: the report's TSV
held_out = frame.sample(n=80, random_state=0)  # adapted: rows kept out to score the run
frame = frame.drop(held_out.index)  # adapted

tokenizer = AutoTokenizer.from_pretrained(args.checkpoint)  # adapted: "roberta-base" / "xlm-roberta-base"
encodings = tokenizer(list(frame["sentence1"]), list(frame["sentence2"]), padding=True, truncation=True,
                      max_length=128, return_tensors="np")
train_dataset = tf.data.Dataset.from_tensor_slices((dict(encodings), frame["label"].to_numpy())).batch(16)

model = TFAutoModelForSequenceClassification.from_pretrained(args.checkpoint, num_labels=2)  # adapted: the checkpoint
optimizer = keras.optimizers.Adam(learning_rate=3e-5)
loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
model.compile(optimizer=optimizer, loss=loss, metrics=[keras.metrics.SparseCategoricalAccuracy()])  # fix
model.fit(train_dataset, epochs=args.epochs)

test = dict(tokenizer(list(held_out["sentence1"]), list(held_out["sentence2"]), padding=True,  # adapted: the score
                      truncation=True, max_length=128, return_tensors="np"))  # adapted
predicted = np.argmax(model.predict(test, verbose=0).logits, axis=-1)  # adapted
truth = held_out["label"].to_numpy()  # adapted
print(f"held-out accuracy {np.mean(predicted == truth):.3f} on {len(truth)} rows; "  # adapted
      f"majority class {np.bincount(truth).max() / len(truth):.3f}")  # adapted
