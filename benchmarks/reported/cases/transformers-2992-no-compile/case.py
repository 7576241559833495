"""huggingface/transformers#2992 (2020-02-24): a ValueError from `model.fit(...)` on an XLNet sequence classifier
loaded with `from_pretrained`, its `config.num_labels` set afterwards, and fit called without `compile`.

The reporter's shape: `TFXLNetForSequenceClassification.from_pretrained(path)`, then `model.config.num_labels = 1`
(which does not rebuild the head), a `tf.data.Dataset` of feature dicts (`input_ids`, `attention_mask`,
`token_type_ids`) and int64 labels, no `compile`, `fit(train, epochs=6, steps_per_epoch=10,
validation_data=dev, validation_steps=5)`. Lines marked `# adapted:` are what running offline on today's stack needs;
the rest is the report's.
"""

import argparse

import numpy as np
import pandas as pd
import tensorflow as tf
from transformers import AutoTokenizer, TFAutoModelForSequenceClassification

parser = argparse.ArgumentParser()  # adapted: the checkpoint and data are local files
parser.add_argument("--checkpoint", required=True)  # adapted
parser.add_argument("--data", required=True)  # adapted: SST-2 sentences (the report's own two classes)
args = parser.parse_args()  # adapted

frame = pd.read_csv(args.data, sep="\t")  # adapted: the report's features
held_out = frame.sample(n=150, random_state=0)  # adapted: rows kept out to score the run
frame = frame.drop(held_out.index)  # adapted
dev_frame = frame.sample(n=80, random_state=1)  # adapted: the report's dev split
frame = frame.drop(dev_frame.index)  # adapted
tokenizer = AutoTokenizer.from_pretrained(args.checkpoint)  # adapted: the report's XLNet checkpoint


def features(part):  # adapted: glue_convert_examples_to_features, gone from Transformers
    encoded = tokenizer(list(part["sentence"]), max_length=64, truncation=True, padding="max_length",
                        return_tensors="np")
    return tf.data.Dataset.from_tensor_slices((dict(encoded), part["label"].to_numpy().astype("int64")))


train = features(frame).shuffle(100).batch(16).repeat()
dev = features(dev_frame).batch(16).repeat()

model = TFAutoModelForSequenceClassification.from_pretrained(args.checkpoint)  # adapted: TFXLNet..., the checkpoint
model.config.num_labels = 1
model.fit(train, epochs=6, steps_per_epoch=10, validation_data=dev, validation_steps=5)

test = dict(tokenizer(list(held_out["sentence"]), padding=True, return_tensors="np"))  # adapted: the score
predicted = np.argmax(model.predict(test, verbose=0).logits, axis=-1)  # adapted
truth = held_out["label"].to_numpy()  # adapted
print(f"held-out accuracy {np.mean(predicted == truth):.3f} on {len(truth)} rows; "  # adapted
      f"majority class {np.bincount(truth).max() / len(truth):.3f}")  # adapted
