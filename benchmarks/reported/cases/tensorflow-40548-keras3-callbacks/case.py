"""tensorflow/tensorflow#40548 (comment of 2024-08-30): a complaint classifier with `TFBertForSequenceClassification`
and the optimizer and callbacks (`EarlyStopping`, `ReduceLROnPlateau`) from `tensorflow.keras` fails: since
TensorFlow 2.16 `tensorflow.keras` is Keras 3, whose objects a tf-keras (Keras 2) model such as Transformers' cannot
take ("Make keras.callbacks.Callback and tensorflow.keras.callbacks.Callback mutually compatible").

The reporter's shape: a CSV read with pandas, the labels through `LabelEncoder`, `train_test_split`, the tokenizer's
tensors (`max_length=128, padding=True, truncation=True, return_tensors='tf'`), `TFBertForSequenceClassification`,
`Adam` and the two callbacks from `tensorflow.keras`, `fit` with validation data. Lines marked `# adapted:` are what
running offline on today's stack needs; the rest is the report's.
"""

import argparse

import numpy as np
import pandas as pd
from tensorflow.keras.callbacks import EarlyStopping, ReduceLROnPlateau
from tensorflow.keras.losses import SparseCategoricalCrossentropy
from tensorflow.keras.optimizers import Adam
from transformers import BertTokenizerFast, TFBertForSequenceClassification

parser = argparse.ArgumentParser()  # adapted: the checkpoint and data are local files
parser.add_argument("--checkpoint", required=True)  # adapted
parser.add_argument("--data", required=True)  # adapted: SST-2 sentences (the report's 10,000 complaints)
parser.add_argument("--epochs", type=int, default=3)  # adapted
args = parser.parse_args()  # adapted

df = pd.read_csv(args.data, sep="\t")  # adapted: the report's complaints CSV
held_out = df.sample(n=150, random_state=0)  # adapted: rows kept out to score the run
df = df.drop(held_out.index)  # adapted
# adapted: scikit-learn's LabelEncoder and train_test_split (not in the pinned stack), as numpy and pandas do them
classes = np.unique(df["label"])  # adapted: label_encoder.classes_ of the report's "Product" column
df["label_id"] = np.searchsorted(classes, df["label"])  # adapted: label_encoder.fit_transform
val = df.sample(frac=0.2, random_state=42)  # adapted: train_test_split(..., test_size=0.2, random_state=42)
X_train, X_val = df.drop(val.index)["sentence"], val["sentence"]  # adapted
y_train, y_val = df.drop(val.index)["label_id"], val["label_id"]  # adapted

# adapted: BertTokenizer.from_pretrained('bert-base-uncased'); the local copy has tokenizer.json, no vocab.txt
tokenizer = BertTokenizerFast.from_pretrained(args.checkpoint)  # adapted
train_encodings = tokenizer(list(X_train), max_length=128, padding=True, truncation=True, return_tensors="tf")
val_encodings = tokenizer(list(X_val), max_length=128, padding=True, truncation=True, return_tensors="tf")

model = TFBertForSequenceClassification.from_pretrained(  # adapted: 'bert-base-uncased'
    args.checkpoint, num_labels=len(classes))  # adapted: len(label_encoder.classes_)
optimizer = Adam(learning_rate=2e-5)
loss = SparseCategoricalCrossentropy(from_logits=True)
model.compile(optimizer=optimizer, loss=loss, metrics=["accuracy"])
early_stopping = EarlyStopping(monitor="val_loss", patience=2, restore_best_weights=True)
reduce_lr = ReduceLROnPlateau(monitor="val_loss", factor=0.5, patience=1)
model.fit(dict(train_encodings), y_train.to_numpy(), validation_data=(dict(val_encodings), y_val.to_numpy()),
          epochs=args.epochs, batch_size=16, callbacks=[early_stopping, reduce_lr])

test = dict(tokenizer(list(held_out["sentence"]), padding=True, truncation=True, return_tensors="np"))  # adapted
predicted = classes[np.argmax(model.predict(test, verbose=0).logits, axis=-1)]  # adapted
truth = held_out["label"].to_numpy()  # adapted
print(f"held-out accuracy {np.mean(predicted == truth):.3f} on {len(truth)} rows; "  # adapted
      f"majority class {np.bincount(truth).max() / len(truth):.3f}")  # adapted
