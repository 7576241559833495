"""huggingface/transformers PR #22960 (2023-04-24): "The quicktour example for `prepare_tf_dataset` was passing the
`DatasetDict` of all the dataset splits, instead of a single dataset, which threw an error."

The quicktour's shape: `load_dataset`, `map` with the tokenizer, `model.prepare_tf_dataset(dataset, batch_size=16,
shuffle=True, tokenizer=tokenizer)`, `compile(optimizer=Adam(3e-5))` with the model's internal loss, `fit`.
Lines marked `# adapted:` are what running offline on today's stack needs; the rest is the quicktour's.
"""

import argparse

import numpy as np
from datasets import load_dataset
from tf_keras.optimizers import Adam  # adapted: the quicktour's tensorflow.keras is Keras 3 since TensorFlow 2.16
from transformers import AutoTokenizer, TFAutoModelForSequenceClassification

parser = argparse.ArgumentParser()  # adapted: the checkpoint and data are local files
parser.add_argument("--checkpoint", required=True)  # adapted
parser.add_argument("--data", required=True)  # adapted: SST-2 sentences (the quicktour's rotten_tomatoes)
args = parser.parse_args()  # adapted

model = TFAutoModelForSequenceClassification.from_pretrained(args.checkpoint)  # adapted: "distilbert-base-uncased"
tokenizer = AutoTokenizer.from_pretrained(args.checkpoint)  # adapted: as above

dataset = load_dataset("csv", data_files=args.data, delimiter="\t")  # adapted: load_dataset("rotten_tomatoes")
dataset = dataset["train"].train_test_split(test_size=150, seed=0)  # adapted: rows kept out to score the run


def tokenize_dataset(dataset):
    return tokenizer(dataset["sentence"])  # adapted: rotten_tomatoes' column is "text"


dataset = dataset.map(tokenize_dataset)
tf_dataset = model.prepare_tf_dataset(dataset, batch_size=16, shuffle=True, tokenizer=tokenizer)

model.compile(optimizer=Adam(3e-5))  # No loss argument!
model.fit(tf_dataset, epochs=2)  # adapted: two epochs (the quicktour's one, on 8,530 rows)

held_out = dataset["test"]  # adapted: the score every case prints
test = dict(tokenizer(list(held_out["sentence"]), padding=True, return_tensors="np"))  # adapted
predicted = np.argmax(model.predict(test, verbose=0).logits, axis=-1)  # adapted
truth = np.array(list(held_out["label"]))  # adapted
print(f"held-out accuracy {np.mean(predicted == truth):.3f} on {len(truth)} rows; "  # adapted
      f"majority class {np.bincount(truth).max() / len(truth):.3f}")  # adapted
