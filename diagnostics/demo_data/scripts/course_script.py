"""The course's TensorFlow training script ("Debugging the training pipeline"), adapted to local files as a reader
would: the demo kit's MNLI sample instead of `load_dataset("glue", "mnli")`, the kit's checkpoint (or
--checkpoint DIR) instead of the Hub. Every bug of the original is kept: on today's libraries it stops at
`to_tf_dataset` with "Column labels not found in dataset!".

    python -m diagnostics trace diagnostics/demo_data/scripts/course_script.py
"""

import argparse
from pathlib import Path

from datasets import load_dataset
from transformers import AutoTokenizer, TFAutoModelForSequenceClassification

KIT = Path(__file__).resolve().parent.parent
parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--checkpoint", help="a save_pretrained directory (default: the demo kit's checkpoint)")
parser.add_argument("--train", default=str(KIT / "mnli" / "train.jsonl"), help="MNLI rows, JSON lines")
parser.add_argument("--validation", default=str(KIT / "mnli" / "validation_matched.jsonl"), help="MNLI rows")
args = parser.parse_args()

if args.checkpoint:
    model_checkpoint = args.checkpoint
else:
    from diagnostics.keras.loading import demo_checkpoint_dir

    model_checkpoint = str(demo_checkpoint_dir())

raw_datasets = load_dataset("json", data_files={"train": args.train, "validation_matched": args.validation})
# GLUE's own files name the labels; the Hub's copy numbers them.
label_names = ["entailment", "neutral", "contradiction"]
raw_datasets = raw_datasets.map(lambda row: {"label": label_names.index(row["label"])
                                             if isinstance(row["label"], str) else row["label"]})
tokenizer = AutoTokenizer.from_pretrained(model_checkpoint)


def preprocess_function(examples):
    return tokenizer(examples["premise"], examples["hypothesis"], truncation=True)


tokenized_datasets = raw_datasets.map(preprocess_function, batched=True)

train_dataset = tokenized_datasets["train"].to_tf_dataset(
    columns=["input_ids", "labels"], batch_size=16, shuffle=True
)

validation_dataset = tokenized_datasets["validation_matched"].to_tf_dataset(
    columns=["input_ids", "labels"], batch_size=16, shuffle=True
)

model = TFAutoModelForSequenceClassification.from_pretrained(model_checkpoint)

model.compile(loss="sparse_categorical_crossentropy", optimizer="adam")

model.fit(train_dataset)
