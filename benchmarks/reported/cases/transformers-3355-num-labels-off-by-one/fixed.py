"""huggingface/transformers#3355 (2020-03-19): "NaN loss after training for a while using for BERT Encoded
sentences" (on a GPU; a CPU stops at the first step with `Received a label value of 1 which is outside the valid
range of [0, 1)`): the number of labels is taken as the largest label, `max(max(train_label), max(test_label))`,
one fewer than there are classes when labels count from 0; the loss also reads the model's logits as probabilities
(`from_logits=False`).

The reporter's shape: `BertConfig.from_pretrained(..., num_labels=num_labels)` and
`TFBertForSequenceClassification.from_pretrained(..., config=config)`, `Adam(1e-5, epsilon=1e-06, clipnorm=1.0)`,
`SparseCategoricalCrossentropy(from_logits=use_logits)` with `use_logits=False`, a sparse accuracy metric, and
`fit([input_ids, attention_masks], labels)` on numpy arrays of 48 tokens.
Lines marked `# adapted:` are what running offline on today's stack needs; the rest is the report's.

The fix, marked `# fix`: the documented one (the thread closed without an answer): as many labels as there are
classes, the largest label + 1, and `from_logits=True` for the logits the model gives (the Hugging Face course,
chapter 8, TensorFlow: both bugs of its debugging walk).
"""

import argparse

import numpy as np
import pandas as pd
import tf_keras as keras  # adapted: tf.keras is Keras 3 since TensorFlow 2.16; Transformers' TF models are tf_keras
from transformers import BertConfig, BertTokenizerFast, TFBertForSequenceClassification

parser = argparse.ArgumentParser()  # adapted: the checkpoint and data are local files
parser.add_argument("--checkpoint", required=True)  # adapted
parser.add_argument("--data", required=True)  # adapted: SST-2 sentences (the report's own labelled sentences)
parser.add_argument("--epochs", type=int, default=3)  # adapted
args = parser.parse_args()  # adapted

frame = pd.read_csv(args.data, sep="\t")  # adapted: the report's own data
test_frame = frame.sample(n=150, random_state=0)  # adapted: the report's test split, also the score's rows
frame = frame.drop(test_frame.index)  # adapted
train_label, test_label = frame["label"].to_numpy(), test_frame["label"].to_numpy()

# adapted: BertTokenizer.from_pretrained("bert-base-cased"); the local copy has tokenizer.json, no vocab.txt
tokenizer = BertTokenizerFast.from_pretrained(args.checkpoint)  # adapted
MAX_LEN = 48


def encode(sentences):
    encoded = tokenizer(list(sentences), max_length=MAX_LEN, truncation=True, padding="max_length")
    return np.array(encoded["input_ids"]), np.array(encoded["attention_mask"])


train_ids, train_masks = encode(frame["sentence"])
test_ids, test_masks = encode(test_frame["sentence"])

num_labels = max(max(train_label), max(test_label)) + 1  # fix


def build_bert(batch_size, use_logits):
    config = BertConfig.from_pretrained(args.checkpoint, num_labels=num_labels)  # adapted: "bert-base-cased"
    model = TFBertForSequenceClassification.from_pretrained(args.checkpoint, config=config)  # adapted: as above
    optimizer = keras.optimizers.Adam(learning_rate=1e-5, epsilon=1e-06, clipnorm=1.0)
    loss = keras.losses.SparseCategoricalCrossentropy(from_logits=use_logits)
    metric = keras.metrics.SparseCategoricalAccuracy("accuracy")
    model.compile(optimizer=optimizer, loss=loss, metrics=[metric])
    return model


model = build_bert(16, True)  # fix; adapted: a batch of 16 (the report's was 1000)
model.fit([train_ids, train_masks], train_label, batch_size=16, epochs=args.epochs)  # adapted: batch, epochs

predicted = np.argmax(model.predict([test_ids, test_masks], verbose=0).logits, axis=-1)  # adapted: the score
print(f"held-out accuracy {np.mean(predicted == test_label):.3f} on {len(test_label)} rows; "  # adapted
      f"majority class {np.bincount(test_label).max() / len(test_label):.3f}")  # adapted
