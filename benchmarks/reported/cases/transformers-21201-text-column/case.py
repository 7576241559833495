"""huggingface/transformers PR #21201 (2023-01-19): the Keras section of the training tutorial "throws an error
because it tokenizes `dataset["text"]` instead of `dataset["sentence"]`. There is no `text` column in this dataset."

The tutorial's shape: a GLUE single-sentence dataset from `load_dataset`, the tokenizer on a column as numpy arrays
padded to the longest row, the labels as a numpy array, the model's internal loss and `fit(tokenized, labels)`.
Lines marked `# adapted:` are what running offline on today's stack needs; the rest is the tutorial's.
"""

import argparse

import numpy as np
from datasets import load_dataset
from tf_keras.optimizers import Adam  # adapted: the tutorial's tensorflow.keras is Keras 3 since TensorFlow 2.16
from transformers import AutoTokenizer, TFAutoModelForSequenceClassification

parser = argparse.ArgumentParser()  # adapted: the checkpoint and data are local files
parser.add_argument("--checkpoint", required=True)  # adapted
parser.add_argument("--data", required=True)  # adapted: SST-2 sentences, a GLUE split with a "sentence" column
parser.add_argument("--epochs", type=int, default=2)  # adapted
args = parser.parse_args()  # adapted

dataset = load_dataset("csv", data_files=args.data, delimiter="\t")["train"]  # adapted: load_dataset("glue", "cola")
split = dataset.train_test_split(test_size=150, seed=0)  # adapted: rows kept out to score the run
dataset, held_out = split["train"], split["test"]  # adapted
tokenizer = AutoTokenizer.from_pretrained(args.checkpoint)  # adapted: "bert-base-cased" on the Hub
# adapted: list(...): datasets 4 gives a lazy Column, which the tokenizer refuses; 2023's gave a list
tokenized_data = tokenizer(list(dataset["text"]), return_tensors="np", padding=True)
# Tokenizer returns a BatchEncoding, but we convert that to a dict for Keras
tokenized_data = dict(tokenized_data)

labels = np.array(list(dataset["label"]))  # adapted: list(...), as above

# Load and compile our model
model = TFAutoModelForSequenceClassification.from_pretrained(args.checkpoint)  # adapted: "bert-base-cased"
# Lower learning rates are often better for fine-tuning transformers
model.compile(optimizer=Adam(3e-5))

model.fit(tokenized_data, labels, epochs=args.epochs)  # adapted: the number of epochs

test = dict(tokenizer(list(held_out["sentence"]), return_tensors="np", padding=True))  # adapted: the score
predicted = np.argmax(model.predict(test, verbose=0).logits, axis=-1)  # adapted
truth = np.array(list(held_out["label"]))  # adapted
print(f"held-out accuracy {np.mean(predicted == truth):.3f} on {len(truth)} rows; "  # adapted
      f"majority class {np.bincount(truth).max() / len(truth):.3f}")  # adapted
