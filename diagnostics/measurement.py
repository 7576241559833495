"""Measuring a model: one eager forward pass keeping every layer's output, and a batch's loss as the configured
loss computes it; shared by the Model and Hyperparameters stages."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from diagnostics.training import build_loss, first_line, per_sample_losses, split_batch


@dataclass
class Forward:
    """One eager forward pass of the batch.

    Attributes:
        logits: (rows, num_labels) array, or None when the pass raised.
        trace: (name, output) of each stage of the network in forward order: embeddings,
            every encoder layer, the logits.
        error: "Type: message" when the forward pass itself raised.
        fit_call_error: "Type: message" when calling the model with the labels inside the
            input dict (as `model.fit` does) raised, e.g. an out-of-range label on CPU.
    """

    logits: np.ndarray | None = None
    trace: list[tuple[str, np.ndarray]] = field(default_factory=list)
    error: str | None = None
    fit_call_error: str | None = None


def run_forward(model, tf_batch) -> Forward:
    """The batch through the model, eagerly (like `run_eagerly=True`), keeping every layer's output."""
    inputs, _ = split_batch(tf_batch)
    record = Forward()
    try:
        output = model(inputs, training=False, output_hidden_states=True)
    except Exception as exc:
        record.error = f"{type(exc).__name__}: {first_line(exc)}"
        return record
    record.logits = np.asarray(output.logits)
    hidden = [np.asarray(state) for state in (output.hidden_states or ())]
    if hidden:
        record.trace.append(("embeddings", hidden[0]))
        record.trace += [(f"encoder layer {i} of {len(hidden) - 1}", state) for i, state in enumerate(hidden[1:])]
    record.trace.append(("classification head (logits)", record.logits))
    if not isinstance(tf_batch, tuple) and "labels" in tf_batch:
        try:
            model(dict(tf_batch), training=False)
        except Exception as exc:
            record.fit_call_error = f"{type(exc).__name__}: {first_line(exc)}"
    return record


def configured_loss_value(loss_name: str, logits: np.ndarray, labels: np.ndarray, regression: bool) -> float:
    """Mean loss of the rows with a valid label, computed with the configured loss (the model's own, or Keras')."""
    import tf_keras

    labels = np.asarray(labels)
    if regression:
        valid = np.isfinite(labels.astype(float))
    else:
        valid = (labels >= 0) & (labels < logits.shape[1])
    if not valid.any():
        return math.nan
    if loss_name == "internal":
        return float(np.mean(per_sample_losses(logits[valid], labels[valid], regression)))
    loss = tf_keras.losses.get(build_loss(loss_name))
    return float(np.mean(np.asarray(loss(labels[valid], logits[valid]))))
