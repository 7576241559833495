"""A custom training loop, as TensorFlow's "writing a training loop from scratch" guide writes one: a
tf.GradientTape step inside tf.function, its own optimizer and loss object, no compile and no fit. The test suite
traces it (it was not written around the debugger's checks):

    python tests/scripts/tape_loop.py CHECKPOINT PAIRS.tsv [RATE]
"""
import sys

import pandas as pd
import tensorflow as tf
import tf_keras as keras
from transformers import AutoTokenizer, TFAutoModelForSequenceClassification

checkpoint, data_file = sys.argv[1], sys.argv[2]
rate = float(sys.argv[3]) if len(sys.argv) > 3 else 2e-5
frame = pd.read_csv(data_file, sep="\t")
tokenizer = AutoTokenizer.from_pretrained(checkpoint)
encoded = tokenizer(list(frame["sentence1"]), list(frame["sentence2"]), padding="max_length", truncation=True,
                    max_length=64, return_tensors="tf")
train_dataset = tf.data.Dataset.from_tensor_slices((dict(encoded), frame["label"].values)).shuffle(256).batch(16)

model = TFAutoModelForSequenceClassification.from_pretrained(checkpoint, num_labels=2)
optimizer = keras.optimizers.Adam(learning_rate=rate)
loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)


@tf.function
def train_step(x, y):
    with tf.GradientTape() as tape:
        logits = model(x, training=True).logits
        loss_value = loss_fn(y, logits)
    grads = tape.gradient(loss_value, model.trainable_weights)
    optimizer.apply_gradients(zip(grads, model.trainable_weights, strict=True))
    return loss_value


for epoch in range(2):
    for step, (x_batch, y_batch) in enumerate(train_dataset):
        loss_value = train_step(x_batch, y_batch)
        if step % 10 == 0:
            print(f"epoch {epoch} step {step} loss {float(loss_value):.4f}")
