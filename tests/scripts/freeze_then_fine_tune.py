"""Freeze, then fine-tune, as transfer-learning tutorials write it: a new classifier trained on the frozen encoder
with Keras's default Adam, then the encoder unfrozen, the model compiled again at a small rate and fitted again, on
numpy arrays given with y=. The test suite traces it (it was not written around the debugger's checks):

    python tests/scripts/freeze_then_fine_tune.py CHECKPOINT PAIRS.tsv [--fine_tune_lr 2e-5] [--recompile 1]
"""
import argparse

import pandas as pd
import tf_keras as keras
from transformers import AutoTokenizer, TFAutoModelForSequenceClassification

parser = argparse.ArgumentParser()
parser.add_argument("checkpoint")
parser.add_argument("data")
parser.add_argument("--fine_tune_lr", type=float, default=2e-5)
parser.add_argument("--recompile", type=int, default=1)
args = parser.parse_args()

frame = pd.read_csv(args.data, sep="\t")
tokenizer = AutoTokenizer.from_pretrained(args.checkpoint)
encoded = tokenizer(list(frame["sentence1"]), list(frame["sentence2"]), padding="max_length", truncation=True,
                    max_length=64, return_tensors="np")
x = dict(encoded)
y = frame["label"].values

model = TFAutoModelForSequenceClassification.from_pretrained(args.checkpoint, num_labels=2)
loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)

# Phase 1: the encoder frozen, only the new classifier learns.
model.layers[0].trainable = False
model.compile(optimizer=keras.optimizers.Adam(), loss=loss, metrics=["accuracy"])
model.fit(x, y, batch_size=16, epochs=2)

# Phase 2: unfreeze and fine-tune the whole model with a small rate.
model.layers[0].trainable = True
if args.recompile:
    model.compile(optimizer=keras.optimizers.Adam(learning_rate=args.fine_tune_lr), loss=loss, metrics=["accuracy"])
model.fit(x, y, batch_size=16, epochs=2)
print("validation accuracy", model.evaluate(x, y, return_dict=True)["accuracy"])
