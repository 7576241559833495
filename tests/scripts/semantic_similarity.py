"""Semantic similarity with BERT, in the shape of the most copied Keras tutorial: TFBertModel's main layer inside a
functional model with a BiLSTM and a softmax head, a keras.utils.Sequence that tokenizes each batch and returns a list
of three int32 arrays with one-hot labels, MirroredStrategy, and two fits: the encoder frozen with Adam(), then
unfrozen and compiled again at a fine-tuning rate.

    python semantic_similarity.py CHECKPOINT DATA.jsonl [FINE_TUNING_RATE]
"""

import json
import sys

import numpy as np
import tensorflow as tf
import tf_keras as keras
from transformers import BertTokenizerFast, TFBertModel

CHECKPOINT, DATA = sys.argv[1], sys.argv[2]
FINE_TUNING_RATE = float(sys.argv[3]) if len(sys.argv) > 3 else 1e-5
MAX_LENGTH, BATCH_SIZE, EPOCHS = 48, 8, 2
LABELS = ["entailment", "neutral", "contradiction"]

records = [json.loads(line) for line in open(DATA)]
for record in records:  # GLUE's files write the label by name or by number
    record["label"] = LABELS.index(record["label"]) if record["label"] in LABELS else record["label"]
records = [record for record in records if record["label"] in (0, 1, 2)]
train_records, valid_records = records[:200], records[200:]


class BertSemanticDataGenerator(keras.utils.Sequence):
    """Batches of sentence pairs: [input_ids, attention_masks, token_type_ids] and one-hot labels."""

    def __init__(self, pairs, labels, batch_size=BATCH_SIZE, shuffle=True):
        self.pairs, self.labels, self.batch_size, self.shuffle = pairs, labels, batch_size, shuffle
        self.tokenizer = BertTokenizerFast.from_pretrained(CHECKPOINT, do_lower_case=True)
        self.indexes = np.arange(len(self.pairs))
        self.on_epoch_end()

    def __len__(self):
        return len(self.pairs) // self.batch_size

    def __getitem__(self, idx):
        indexes = self.indexes[idx * self.batch_size:(idx + 1) * self.batch_size]
        pairs = [self.pairs[i] for i in indexes]
        encoded = self.tokenizer.batch_encode_plus(
            pairs, add_special_tokens=True, max_length=MAX_LENGTH, return_attention_mask=True,
            return_token_type_ids=True, padding="max_length", truncation=True, return_tensors="tf")
        input_ids = np.array(encoded["input_ids"], dtype="int32")
        attention_masks = np.array(encoded["attention_mask"], dtype="int32")
        token_type_ids = np.array(encoded["token_type_ids"], dtype="int32")
        return [input_ids, attention_masks, token_type_ids], np.array(self.labels[indexes], dtype="int32")

    def on_epoch_end(self):
        if self.shuffle:
            np.random.RandomState(42).shuffle(self.indexes)


def one_hot(records):
    return keras.utils.to_categorical([record["label"] for record in records], num_classes=3)


strategy = tf.distribute.MirroredStrategy()
with strategy.scope():
    input_ids = keras.layers.Input(shape=(MAX_LENGTH,), dtype=tf.int32, name="input_ids")
    attention_masks = keras.layers.Input(shape=(MAX_LENGTH,), dtype=tf.int32, name="attention_masks")
    token_type_ids = keras.layers.Input(shape=(MAX_LENGTH,), dtype=tf.int32, name="token_type_ids")
    bert_model = TFBertModel.from_pretrained(CHECKPOINT)
    bert_model.trainable = False  # the head first, on the frozen encoder
    sequence_output = bert_model.bert(input_ids, attention_mask=attention_masks,
                                      token_type_ids=token_type_ids).last_hidden_state
    bi_lstm = keras.layers.Bidirectional(keras.layers.LSTM(64, return_sequences=True))(sequence_output)
    avg_pool = keras.layers.GlobalAveragePooling1D()(bi_lstm)
    max_pool = keras.layers.GlobalMaxPooling1D()(bi_lstm)
    dropout = keras.layers.Dropout(0.3)(keras.layers.concatenate([avg_pool, max_pool]))
    output = keras.layers.Dense(3, activation="softmax")(dropout)
    model = keras.models.Model(inputs=[input_ids, attention_masks, token_type_ids], outputs=output)
    model.compile(optimizer=keras.optimizers.Adam(), loss="categorical_crossentropy", metrics=["acc"])

train_data = BertSemanticDataGenerator([[r["premise"], r["hypothesis"]] for r in train_records], one_hot(train_records))
valid_data = BertSemanticDataGenerator([[r["premise"], r["hypothesis"]] for r in valid_records], one_hot(valid_records),
                                       shuffle=False)
model.fit(train_data, validation_data=valid_data, epochs=EPOCHS)

# Fine-tuning: everything trains, at a low rate.
bert_model.trainable = True
model.compile(optimizer=keras.optimizers.Adam(FINE_TUNING_RATE), loss="categorical_crossentropy", metrics=["accuracy"])
model.fit(train_data, validation_data=valid_data, epochs=EPOCHS)
