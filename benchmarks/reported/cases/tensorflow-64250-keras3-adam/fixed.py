"""tensorflow/tensorflow#64250, the comment of 2025-06-14: a DistilBERT emotion classifier "nothing is working":
`ValueError: Could not interpret optimizer identifier: <keras.src.optimizers.adam.Adam object ...>`.

The reporter's shape: `TFDistilBertForSequenceClassification` with `num_labels=6`, the tokenizer's tensors
(`padding=True, truncation=True, max_length=200, return_tensors='tf'`), `Adam` and `EarlyStopping` imported from
`tensorflow.keras`, `loss='sparse_categorical_crossentropy'`, `fit` with a validation split.
Lines marked `# adapted:` are what running offline on today's stack needs; the rest is the report's.

The fix, marked `# fix`: Keras 2 for `tensorflow.keras`, set before TensorFlow is imported (the workaround other
reporters of the same error posted: amaiya/ktrain#529, huggingface/hub-docs#1712), then the loss it reveals: a string
'sparse_categorical_crossentropy' reads the model's logits as probabilities; the Hugging Face course, chapter 8
(TensorFlow), gives `SparseCategoricalCrossentropy(from_logits=True)`.
"""

import argparse
import os

os.environ["TF_USE_LEGACY_KERAS"] = "1"  # fix: tensorflow.keras is then Keras 2, the Keras of Transformers' models

import numpy as np
import pandas as pd
from tensorflow.keras.callbacks import EarlyStopping
from tensorflow.keras.losses import SparseCategoricalCrossentropy  # fix
from tensorflow.keras.optimizers import Adam
from transformers import AutoTokenizer, TFAutoModelForSequenceClassification

parser = argparse.ArgumentParser()  # adapted: the checkpoint and data are local files
parser.add_argument("--checkpoint", required=True)  # adapted
parser.add_argument("--data", required=True)  # adapted: SST-2 sentences, 2 labels (the report's had 6 emotions)
parser.add_argument("--epochs", type=int, default=3)  # adapted
args = parser.parse_args()  # adapted

frame = pd.read_csv(args.data, sep="\t")  # adapted: the report's dataframe of texts and label ids
held_out = frame.sample(n=150, random_state=0)  # adapted: rows kept out to score the run
frame = frame.drop(held_out.index)

tokenizer = AutoTokenizer.from_pretrained(args.checkpoint)  # adapted: DistilBertTokenizer, distilbert-base-uncased
model = TFAutoModelForSequenceClassification.from_pretrained(args.checkpoint, num_labels=2)  # adapted: 6 labels

train_encodings = tokenizer(list(frame["sentence"]), padding=True, truncation=True, max_length=200,
                            return_tensors="tf")
train_labels = frame["label"].to_numpy()

model.compile(optimizer=Adam(learning_rate=1e-5), loss=SparseCategoricalCrossentropy(from_logits=True),  # fix
              metrics=["accuracy"])
early_stopping = EarlyStopping(monitor="val_loss", patience=2, restore_best_weights=True)
model.fit(dict(train_encodings), train_labels, validation_split=0.1, epochs=args.epochs, batch_size=16,
          callbacks=[early_stopping])

test = tokenizer(list(held_out["sentence"]), padding=True, truncation=True, max_length=200,  # adapted: the score
                 return_tensors="tf")  # adapted
predicted = np.argmax(model.predict(dict(test), verbose=0).logits, axis=-1)  # adapted
truth = held_out["label"].to_numpy()  # adapted
print(f"held-out accuracy {np.mean(predicted == truth):.3f} on {len(truth)} rows; "  # adapted
      f"majority class {np.bincount(truth).max() / len(truth):.3f}")  # adapted
