"""keras-team/keras#19262 (2024-03-07): fine-tuning DistilBERT on IMDB with `to_tf_dataset` stops at compile with
`ValueError: Could not interpret optimizer identifier: <keras.src.optimizers.adam.Adam object at 0x...>`: the
optimizer and its `PolynomialDecay` schedule come from `tensorflow.keras`, which is Keras 3 since TensorFlow 2.16,
while Transformers' TF models are tf-keras (Keras 2) models.

The reporter's shape (the Hugging Face text-classification tutorial): `load_dataset` and `map` with the tokenizer
(`truncation=True`), `DataCollatorWithPadding(return_tensors="tf")`, `to_tf_dataset` for each split, `Adam` over a
`PolynomialDecay` from the number of training steps, `SparseCategoricalCrossentropy(from_logits=True)`, `fit` with
validation data. Lines marked `# adapted:` are what running offline on today's stack needs; the rest is the report's.
"""

import argparse

import numpy as np
import tensorflow as tf
from datasets import load_dataset
from transformers import AutoTokenizer, DataCollatorWithPadding, TFAutoModelForSequenceClassification

parser = argparse.ArgumentParser()  # adapted: the checkpoint and data are local files
parser.add_argument("--checkpoint", required=True)  # adapted
parser.add_argument("--data", required=True)  # adapted: SST-2 sentences (the report's IMDB reviews)
parser.add_argument("--epochs", type=int, default=3)  # adapted
args = parser.parse_args()  # adapted

imdb = load_dataset("csv", data_files=args.data, delimiter="\t")["train"]  # adapted: load_dataset("imdb")
imdb = imdb.train_test_split(test_size=150, seed=0)  # adapted: rows kept out to score the run
tokenizer = AutoTokenizer.from_pretrained(args.checkpoint)  # adapted: "distilbert-base-uncased" on the Hub


def preprocess_function(examples):
    return tokenizer(examples["sentence"], truncation=True)  # adapted: IMDB's column is "text"


tokenized_imdb = imdb.map(preprocess_function, batched=True)
data_collator = DataCollatorWithPadding(tokenizer=tokenizer, return_tensors="tf")

tf_train_set = tokenized_imdb["train"].to_tf_dataset(
    columns=["attention_mask", "input_ids", "label"], shuffle=True, batch_size=16, collate_fn=data_collator)
tf_validation_set = tokenized_imdb["test"].to_tf_dataset(
    columns=["attention_mask", "input_ids", "label"], shuffle=False, batch_size=16, collate_fn=data_collator)

batch_size = 16
num_epochs = args.epochs  # adapted: the number of epochs
batches_per_epoch = len(tokenized_imdb["train"]) // batch_size
total_train_steps = int(batches_per_epoch * num_epochs)
lr_scheduler = tf.keras.optimizers.schedules.PolynomialDecay(
    initial_learning_rate=2e-5, end_learning_rate=0.0, decay_steps=total_train_steps)
optimizer = tf.keras.optimizers.Adam(learning_rate=lr_scheduler)

model = TFAutoModelForSequenceClassification.from_pretrained(args.checkpoint, num_labels=2)  # adapted: the checkpoint
model.compile(optimizer=optimizer, loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
              metrics=["accuracy"])
model.fit(x=tf_train_set, validation_data=tf_validation_set, epochs=num_epochs)

test = dict(tokenizer(list(imdb["test"]["sentence"]), padding=True, return_tensors="np"))  # adapted: the score
predicted = np.argmax(model.predict(test, verbose=0).logits, axis=-1)  # adapted
truth = np.array(list(imdb["test"]["label"]))  # adapted
print(f"held-out accuracy {np.mean(predicted == truth):.3f} on {len(truth)} rows; "  # adapted
      f"majority class {np.bincount(truth).max() / len(truth):.3f}")  # adapted
