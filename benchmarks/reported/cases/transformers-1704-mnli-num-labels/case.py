"""huggingface/transformers#1704 (2019-11): fine-tuning BERT on MNLI with TensorFlow, the loss is NaN from the start
(on a GPU; a CPU stops with `InvalidArgumentError: Received a label value of 2 which is outside the valid range of
[0, 2)`): the model was built with the default two labels while MNLI has three.

The reporter's shape: `TFBertForSequenceClassification.from_pretrained` without `num_labels`, the GLUE example's
features as a `tf.data.Dataset` of dicts and label ids, `Adam(3e-5, epsilon=1e-08, clipnorm=1.0)`,
`SparseCategoricalCrossentropy(from_logits=True)`, a sparse accuracy metric, `fit`.
Lines marked `# adapted:` are what running offline on today's stack needs; the rest is the report's.
"""

import argparse
import json

import numpy as np
import tensorflow as tf
import tf_keras as keras  # adapted: tf.keras is Keras 3 since TensorFlow 2.16; Transformers' TF models are tf_keras
from transformers import AutoTokenizer, TFAutoModelForSequenceClassification

parser = argparse.ArgumentParser()  # adapted: the checkpoint and data are local files
parser.add_argument("--checkpoint", required=True)  # adapted
parser.add_argument("--data", required=True)  # adapted: MNLI rows (tests/data/mnli/validation_matched.jsonl)
parser.add_argument("--epochs", type=int, default=4)  # adapted
args = parser.parse_args()  # adapted

LABELS = {"entailment": 0, "neutral": 1, "contradiction": 2}  # adapted: GLUE's label ids, as its features hold them
rows = [json.loads(line) for line in open(args.data)]  # adapted: glue_convert_examples_to_features is gone
held_out, rows = rows[:80], rows[80:]  # adapted: rows kept out to score the run

tokenizer = AutoTokenizer.from_pretrained(args.checkpoint)  # adapted: 'bert-base-cased' on the Hub
# adapted: TFBertForSequenceClassification.from_pretrained('bert-base-cased')
model = TFAutoModelForSequenceClassification.from_pretrained(args.checkpoint)


def features(part):  # adapted: the GLUE example's features, as a dataset of dicts and label ids
    encoded = tokenizer([row["premise"] for row in part], [row["hypothesis"] for row in part], max_length=128,
                        truncation=True, padding="max_length", return_tensors="np")
    return dict(encoded), np.array([LABELS[row["label"]] for row in part])


inputs, labels = features(rows)
train_dataset = tf.data.Dataset.from_tensor_slices((inputs, labels)).shuffle(100).batch(16)

optimizer = keras.optimizers.Adam(learning_rate=3e-5, epsilon=1e-08, clipnorm=1.0)
loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
metric = keras.metrics.SparseCategoricalAccuracy("accuracy")
model.compile(optimizer=optimizer, loss=loss, metrics=[metric])
history = model.fit(train_dataset, epochs=args.epochs)

test, truth = features(held_out)  # adapted: the score every case prints
predicted = np.argmax(model.predict(test, verbose=0).logits, axis=-1)  # adapted
print(f"held-out accuracy {np.mean(predicted == truth):.3f} on {len(truth)} rows; "  # adapted
      f"majority class {np.bincount(truth).max() / len(truth):.3f}")  # adapted
