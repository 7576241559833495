"""huggingface/transformers#3727 (2020-04-09): "ValueError: Cannot reshape a tensor - TFBertForSequenceClassification":
each sentence tokenized alone with `encode_plus(..., return_tensors='tf')`, which gives a batch of one, (1, 128),
so the stacked inputs are (rows, 1, 128) where the model reads (rows, 128).

The reporter's shape: a loop of `tokenizer.encode_plus(sent, add_special_tokens=True, max_length=128,
pad_to_max_length=True, return_attention_mask=True, return_tensors='tf')`, the ids and masks appended to lists and
stacked, `TFBertForSequenceClassification.from_pretrained(..., num_labels=...)`, `Adam(2e-5)`,
`SparseCategoricalCrossentropy(from_logits=True)`, `fit([input_ids, attention_masks], labels)`.
Lines marked `# adapted:` are what running offline on today's stack needs; the rest is the report's.

The fix, marked `# fix`: the documented one (the thread closed as stale): the rows joined along the batch axis,
(rows, 128), as tokenizing the whole list at once gives (the Transformers docs, "Preprocessing data").
"""

import argparse

import numpy as np
import pandas as pd
import tf_keras as keras  # adapted: tf.keras is Keras 3 since TensorFlow 2.16; Transformers' TF models are tf_keras
from transformers import BertTokenizerFast, TFBertForSequenceClassification

parser = argparse.ArgumentParser()  # adapted: the checkpoint and data are local files
parser.add_argument("--checkpoint", required=True)  # adapted
parser.add_argument("--data", required=True)  # adapted: SST-2 sentences (the report's 45-class data)
parser.add_argument("--epochs", type=int, default=3)  # adapted
args = parser.parse_args()  # adapted

frame = pd.read_csv(args.data, sep="\t")  # adapted: the report's own data
held_out = frame.sample(n=150, random_state=0)  # adapted: rows kept out to score the run
frame = frame.drop(held_out.index)  # adapted
sentences, labels = list(frame["sentence"]), frame["label"].to_numpy()  # adapted: the report's lists
# adapted: BertTokenizer.from_pretrained('bert-base-uncased'); the local copy has tokenizer.json, no vocab.txt
tokenizer = BertTokenizerFast.from_pretrained(args.checkpoint)  # adapted


def encode(sentences):
    input_ids, attention_masks = [], []
    for sent in sentences:
        encoded_dict = tokenizer.encode_plus(
            sent,
            add_special_tokens=True,
            max_length=128,
            padding="max_length",  # adapted: pad_to_max_length=True, refused since Transformers 4 deprecated it
            truncation=True,  # adapted: what pad_to_max_length implied
            return_attention_mask=True,
            return_tensors="tf",
        )
        input_ids.append(encoded_dict["input_ids"])
        attention_masks.append(encoded_dict["attention_mask"])
    return np.concatenate(input_ids, axis=0), np.concatenate(attention_masks, axis=0)  # fix


input_ids, attention_masks = encode(sentences)

# adapted: 'bert-base-uncased' with the report's num_labels=45; SST-2 has two labels
model = TFBertForSequenceClassification.from_pretrained(args.checkpoint, num_labels=2)
optimizer = keras.optimizers.Adam(learning_rate=2e-5, epsilon=1e-08)
loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
model.compile(optimizer=optimizer, loss=loss, metrics=["accuracy"])
model.fit([input_ids, attention_masks], labels, batch_size=16, epochs=args.epochs)  # adapted: batch, epochs

test_ids, test_masks = encode(held_out["sentence"])  # adapted: the score every case prints
predicted = np.argmax(model.predict([test_ids, test_masks], verbose=0).logits, axis=-1)  # adapted
truth = held_out["label"].to_numpy()  # adapted
print(f"held-out accuracy {np.mean(predicted == truth):.3f} on {len(truth)} rows; "  # adapted
      f"majority class {np.bincount(truth).max() / len(truth):.3f}")  # adapted
