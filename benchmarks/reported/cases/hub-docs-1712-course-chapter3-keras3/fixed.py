"""huggingface/hub-docs#1712 (2025-04-23): "The `Adam` optimizer is not recognized when compiling the model with
Tensorflow", following the Hugging Face course, chapter 3, "Fine-tuning a model with Keras", on GLUE MRPC; the
reporter: "The solution is to set the `TF_USE_LEGACY_KERAS` environment variable to 1".

The course's shape: `load_dataset("glue", "mrpc")`, the tokenizer on both sentences (`truncation=True`) through
`map`, `DataCollatorWithPadding(return_tensors="tf")`, `to_tf_dataset` with `label_cols=["labels"]`, `Adam` over a
`PolynomialDecay` from `tensorflow.keras`, `SparseCategoricalCrossentropy(from_logits=True)`, `fit` with validation
data. Lines marked `# adapted:` are what running offline on today's stack needs; the rest is the course's.

The fix, marked `# fix`: the reporter's own, `TF_USE_LEGACY_KERAS=1` before TensorFlow is imported (here, before
Transformers imports it), so that `tensorflow.keras` is tf-keras (Keras 2), the Keras of Transformers' TF models.
"""

import os  # fix

os.environ["TF_USE_LEGACY_KERAS"] = "1"  # fix

import argparse

import numpy as np
from datasets import load_dataset
from transformers import AutoTokenizer, DataCollatorWithPadding, TFAutoModelForSequenceClassification

parser = argparse.ArgumentParser()  # adapted: the checkpoint and data are local files
parser.add_argument("--checkpoint", required=True)  # adapted
parser.add_argument("--data", required=True)  # adapted: GLUE MRPC's validation split (tests/data/mrpc)
args = parser.parse_args()  # adapted

raw_datasets = load_dataset("csv", data_files=args.data, delimiter="\t")  # adapted: load_dataset("glue", "mrpc")
raw_datasets = raw_datasets["train"].train_test_split(test_size=80, seed=0)  # adapted: rows kept out to score
checkpoint = args.checkpoint  # adapted: "bert-base-uncased" on the Hub
tokenizer = AutoTokenizer.from_pretrained(checkpoint)


def tokenize_function(example):
    return tokenizer(example["sentence1"], example["sentence2"], truncation=True)


tokenized_datasets = raw_datasets.map(tokenize_function, batched=True)
data_collator = DataCollatorWithPadding(tokenizer=tokenizer, return_tensors="tf")

tf_train_dataset = tokenized_datasets["train"].to_tf_dataset(
    columns=["attention_mask", "input_ids", "token_type_ids"],
    label_cols=["labels"],
    shuffle=True,
    collate_fn=data_collator,
    batch_size=8,
)
tf_validation_dataset = tokenized_datasets["test"].to_tf_dataset(  # adapted: the course's "validation" split
    columns=["attention_mask", "input_ids", "token_type_ids"],
    label_cols=["labels"],
    shuffle=False,
    collate_fn=data_collator,
    batch_size=8,
)

from tensorflow.keras.optimizers.schedules import PolynomialDecay  # noqa: E402  (the course imports it here)

batch_size = 8
num_epochs = 3
# The number of training steps is the number of samples in the dataset, divided by the batch size then multiplied
# by the total number of epochs. Note that the tf_train_dataset here is a batched tf.data.Dataset,
# not the original Hugging Face Dataset, so its len() is already num_samples // batch_size.
num_train_steps = len(tf_train_dataset) * num_epochs
lr_scheduler = PolynomialDecay(initial_learning_rate=5e-5, end_learning_rate=0.0, decay_steps=num_train_steps)
from tensorflow.keras.optimizers import Adam  # noqa: E402

opt = Adam(learning_rate=lr_scheduler)

import tensorflow as tf  # noqa: E402

model = TFAutoModelForSequenceClassification.from_pretrained(checkpoint, num_labels=2)
loss = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
model.compile(optimizer=opt, loss=loss, metrics=["accuracy"])
model.fit(tf_train_dataset, validation_data=tf_validation_dataset, epochs=num_epochs)

held_out = raw_datasets["test"]  # adapted: the score every case prints
test = dict(tokenizer(list(held_out["sentence1"]), list(held_out["sentence2"]), padding=True,  # adapted
                      truncation=True, return_tensors="np"))  # adapted
predicted = np.argmax(model.predict(test, verbose=0).logits, axis=-1)  # adapted
truth = np.array(list(held_out["label"]))  # adapted
print(f"held-out accuracy {np.mean(predicted == truth):.3f} on {len(truth)} rows; "  # adapted
      f"majority class {np.bincount(truth).max() / len(truth):.3f}")  # adapted
