"""Sentiment fine-tuning as the Transformers docs' TensorFlow recipe writes it (a csv of sentences, a padding
collator, `to_tf_dataset` with the labels apart, the model's internal loss), with the optimizer given as the string
"adam", whose learning rate of 1e-3 a pretrained encoder does not survive. It trains, then prints its accuracy on
held-out rows beside the share of their commonest label.

It was not written around the debugger's checks; bench/repair_truth.py traces and repairs it, then trains the
original and the repaired script in full:

    python tests/scripts/sentiment_string_adam.py --checkpoint DIR [--data tests/data/sst2/train.tsv] [--epochs 10]
"""

import argparse
from pathlib import Path

import numpy as np
from datasets import load_dataset
from transformers import AutoTokenizer, DataCollatorWithPadding, TFAutoModelForSequenceClassification

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--checkpoint", required=True, help="a save_pretrained directory")
parser.add_argument("--data", default=str(Path(__file__).resolve().parents[1] / "data" / "sst2" / "train.tsv"))
parser.add_argument("--epochs", type=int, default=10)
parser.add_argument("--held_out", type=int, default=150, help="rows kept out of training to score it")
args = parser.parse_args()

dataset = load_dataset("csv", data_files=args.data, delimiter="\t")["train"]
dataset = dataset.train_test_split(test_size=args.held_out, seed=0)
tokenizer = AutoTokenizer.from_pretrained(args.checkpoint)


def tokenize(batch):
    return tokenizer(batch["sentence"], truncation=True, max_length=64)


tokenized = dataset.map(tokenize, batched=True)
collator = DataCollatorWithPadding(tokenizer=tokenizer, return_tensors="np")
train_set = tokenized["train"].to_tf_dataset(columns=["input_ids", "attention_mask"], label_cols=["label"],
                                             batch_size=16, shuffle=True, collate_fn=collator)
test_set = tokenized["test"].to_tf_dataset(columns=["input_ids", "attention_mask"], label_cols=["label"],
                                           batch_size=16, shuffle=False, collate_fn=collator)

model = TFAutoModelForSequenceClassification.from_pretrained(args.checkpoint, num_labels=2)
model.compile(optimizer="adam", metrics=["accuracy"])
model.fit(train_set, epochs=args.epochs)

logits = model.predict(test_set).logits
predicted = np.argmax(logits, axis=-1)
labels = np.array(tokenized["test"]["label"])
majority = np.bincount(labels).max() / len(labels)
print(f"held-out accuracy {np.mean(predicted == labels):.3f} on {len(labels)} rows; majority class {majority:.3f}; "
      f"rows given their commonest prediction {np.bincount(predicted).max() / len(predicted):.3f}")
