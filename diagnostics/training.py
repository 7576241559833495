"""Training helpers: fresh copies of a model, the configured loss and optimizer, and one real train step."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from diagnostics.config import RunConfig

LABEL_KEYS = ("labels", "label")


def build_loss(name: str):
    """What `model.compile(loss=...)` gets for a loss name of `config.LOSSES`."""
    import tf_keras

    if name == "internal":
        return "auto"
    if name.startswith("SparseCategoricalCrossentropy("):
        return tf_keras.losses.SparseCategoricalCrossentropy(from_logits="from_logits=True" in name)
    return name


def build_optimizer(config: RunConfig):
    """What `model.compile(optimizer=...)` gets: the string as given, or a fresh optimizer object."""
    import tf_keras

    if config.optimizer == "adam":
        return tf_keras.optimizers.get("adam")
    if config.optimizer == "Adam":
        return tf_keras.optimizers.Adam(learning_rate=config.learning_rate)
    if config.optimizer == "AdamW":
        return tf_keras.optimizers.AdamW(learning_rate=config.learning_rate, weight_decay=config.weight_decay)
    from transformers import create_optimizer

    optimizer, _ = create_optimizer(config.learning_rate, num_train_steps=config.train_steps,
                                    num_warmup_steps=config.warmup_steps, weight_decay_rate=config.weight_decay)
    return optimizer


def split_batch(tf_batch) -> tuple[dict, Any]:
    """(model inputs without labels, labels or None) of a batch in either layout."""
    if isinstance(tf_batch, tuple):
        inputs, labels = tf_batch
        return dict(inputs), labels
    inputs = {key: value for key, value in tf_batch.items() if key not in LABEL_KEYS}
    labels = next((tf_batch[key] for key in LABEL_KEYS if key in tf_batch), None)
    return inputs, labels


def fresh_copy(model, inputs: dict):
    """A new instance of the model with the same config and weights; the original is never touched.

    `clone_model` does not work on Transformers' subclassed models, so the copy is built from the
    config, called once to create its variables, then given the original's weights.
    """
    copy = type(model)(model.config)
    copy(inputs, training=False)
    copy.set_weights(model.get_weights())
    return copy


@dataclass
class StepRecord:
    """What one `train_step` did.

    Attributes:
        loss: the loss it minimised (None when it failed before).
        gradients: (variable name, gradient or None) for every trainable variable.
        error: "Type: message" when the step raised.
    """

    loss: float | None = None
    gradients: list[tuple[str, np.ndarray | None]] = field(default_factory=list)
    error: str | None = None


def one_train_step(copy, tf_batch, config: RunConfig) -> StepRecord:
    """One real `train_step` (Transformers' own, as `model.fit` runs it) on a copy, recording the gradients.

    The copy is compiled with the configured loss and optimizer; the gradients are read where
    `optimizer.minimize` hands them to `apply_gradients`, then applied as usual.
    """
    optimizer = build_optimizer(config)
    copy.compile(optimizer=optimizer, loss=build_loss(config.loss), run_eagerly=True)
    record = StepRecord()
    optimizer = copy.optimizer
    apply = optimizer.apply_gradients

    def recording_apply(grads_and_vars, *args, **kwargs):
        pairs = list(grads_and_vars)
        record.gradients = [(var.name, None if grad is None else np.asarray(tf_to_dense(grad))) for grad, var in pairs]
        return apply(pairs, *args, **kwargs)

    optimizer.apply_gradients = recording_apply
    try:
        metrics = copy.train_step(tf_batch)
        record.loss = float(np.asarray(metrics["loss"])) if "loss" in metrics else None
    except Exception as exc:
        record.error = f"{type(exc).__name__}: {first_line(exc)}"
    finally:
        optimizer.apply_gradients = apply
    return record


def tf_to_dense(grad):
    import tensorflow as tf

    return tf.convert_to_tensor(grad)


def first_line(exc: BaseException) -> str:
    """The first meaningful line of an exception message.

    Keras wraps errors raised inside a layer in "Exception encountered when calling layer ...", and
    TensorFlow prefixes op errors with "{{function_node ...}}" and suffixes "[Op:...]"; both are dropped.
    """
    text = str(exc).strip()
    for line in text.splitlines():
        line = re.sub(r"\{\{[^}]*\}\}\s*", "", line).strip()
        line = line.split(" [Op:")[0].strip()
        if line and not line.startswith(("Exception encountered when calling layer", "[[", "Traceback")):
            return line[:400]
    return text[:400] or type(exc).__name__
