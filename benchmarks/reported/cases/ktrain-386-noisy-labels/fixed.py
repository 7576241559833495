"""amaiya/ktrain#386 (closed 2021-08-18): DistilBERT "performance compared to bert" much worse than expected on the
reporter's text classification; the reporter, closing: "Looks like the issue was approx. 30% of training data was
randomly labeled ... Bad data in training set".

The reporter's shape (ktrain over Transformers' TF models): texts and labels from a data frame, a Transformers
sequence classifier, a rate of 5e-5, a few epochs. ktrain is not part of the pinned stack: its place is taken by
what it runs underneath, `TFAutoModelForSequenceClassification`, `Adam`, the model's internal loss, `fit`. The 30% of
rows labelled at random are drawn here with a fixed seed from SST-2's own labels. Lines marked `# adapted:` are what
running offline on today's stack needs; the rest is the report's.

The fix, marked `# fix`: the reporter's own, the training rows with their true labels.
"""

import argparse

import numpy as np
import pandas as pd
from tf_keras.optimizers import Adam  # adapted: tf.keras is Keras 3 since TensorFlow 2.16
from transformers import AutoTokenizer, TFAutoModelForSequenceClassification

parser = argparse.ArgumentParser()  # adapted: the checkpoint and data are local files
parser.add_argument("--checkpoint", required=True)  # adapted
parser.add_argument("--data", required=True)  # adapted: SST-2 sentences (the report's own data frame)
parser.add_argument("--epochs", type=int, default=3)  # adapted
args = parser.parse_args()  # adapted

frame = pd.read_csv(args.data, sep="\t")  # adapted: the report's texts_from_df data frame
held_out = frame.sample(n=150, random_state=0)  # adapted: rows kept out to score the run, labelled right
frame = frame.drop(held_out.index).reset_index(drop=True)  # adapted
# fix: the rows keep their true labels (the reporter: "Bad data in training set")

tokenizer = AutoTokenizer.from_pretrained(args.checkpoint)  # adapted: "distilbert-base-uncased" on the Hub
model = TFAutoModelForSequenceClassification.from_pretrained(args.checkpoint, num_labels=2)  # adapted: as above
train = dict(tokenizer(list(frame["sentence"]), padding=True, truncation=True, max_length=64, return_tensors="np"))
model.compile(optimizer=Adam(learning_rate=5e-5))
model.fit(train, frame["label"].to_numpy(), batch_size=16, epochs=args.epochs)

test = dict(tokenizer(list(held_out["sentence"]), padding=True, return_tensors="np"))  # adapted: the score
predicted = np.argmax(model.predict(test, verbose=0).logits, axis=-1)  # adapted
truth = held_out["label"].to_numpy()  # adapted
print(f"held-out accuracy {np.mean(predicted == truth):.3f} on {len(truth)} rows; "  # adapted
      f"majority class {np.bincount(truth).max() / len(truth):.3f}")  # adapted
