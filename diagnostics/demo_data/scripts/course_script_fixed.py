"""The course's training script with every bug fixed: a padding collator and the `label` column, `num_labels=3`,
the model's internal loss, and Adam at a rate that suits the checkpoint (5e-5 for a pretrained one; the demo kit's
random weights need 3e-3). The debugger finds nothing to fail in it.

    python -m diagnostics trace diagnostics/demo_data/scripts/course_script_fixed.py
"""

import argparse

import tf_keras
from pathlib import Path

from datasets import load_dataset
from transformers import AutoTokenizer, DataCollatorWithPadding, TFAutoModelForSequenceClassification

KIT = Path(__file__).resolve().parent.parent
parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--checkpoint", help="a save_pretrained directory (default: the demo kit's checkpoint)")
parser.add_argument("--train", default=str(KIT / "mnli" / "train.jsonl"), help="MNLI rows, JSON lines")
parser.add_argument("--validation", default=str(KIT / "mnli" / "validation_matched.jsonl"), help="MNLI rows")
parser.add_argument("--learning-rate", type=float,
                    help="Adam's rate (default: 5e-5 for a pretrained checkpoint, 3e-3 for the demo kit's)")
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
data_collator = DataCollatorWithPadding(tokenizer=tokenizer, return_tensors="np")

train_dataset = tokenized_datasets["train"].to_tf_dataset(
    columns=["input_ids", "attention_mask", "label"], batch_size=16, shuffle=True, collate_fn=data_collator
)

validation_dataset = tokenized_datasets["validation_matched"].to_tf_dataset(
    columns=["input_ids", "attention_mask", "label"], batch_size=16, shuffle=True, collate_fn=data_collator
)

model = TFAutoModelForSequenceClassification.from_pretrained(model_checkpoint, num_labels=3)

learning_rate = args.learning_rate or (5e-5 if args.checkpoint else 3e-3)
model.compile(optimizer=tf_keras.optimizers.Adam(learning_rate=learning_rate))

model.fit(train_dataset)
