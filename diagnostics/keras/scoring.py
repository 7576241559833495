"""Scoring a model on rows: each row's loss, computed the same way on every device, and the figures of a batch it
never trained on."""

from __future__ import annotations

from typing import Any

import numpy as np

from diagnostics.keras.keras_model import Forward, call, class_ids, class_logits
from diagnostics.keras.training import split_batch


def per_sample_losses(logits: np.ndarray, labels: np.ndarray, regression: bool, *, binary: bool = False
                      ) -> np.ndarray:
    """Loss of every row, computed the same way on every device.

    Cross-entropy from `log_softmax` and a gather, with NaN where the label is outside
    [0, num_labels) (CPU kernels raise there, GPU kernels return NaN). Regression: squared error.
    `binary`: binary cross-entropy of one sigmoid output (the two columns of its class logits), which takes any
    label as its target, so a label outside 0..1 has a finite loss, as Keras computes it.
    """
    logits = np.asarray(logits, dtype=np.float64)
    labels = np.asarray(labels)
    if regression:
        return (logits.reshape(len(labels), -1)[:, 0] - labels.astype(np.float64)) ** 2
    with np.errstate(all="ignore"):
        shifted = logits - logits.max(axis=1, keepdims=True)
        log_probs = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    if binary and logits.shape[1] == 2:
        targets = labels.astype(np.float64)
        return -(targets * log_probs[:, 1] + (1.0 - targets) * log_probs[:, 0])
    labels = labels.astype(np.int64)
    valid = (labels >= 0) & (labels < logits.shape[1])
    picked = np.take_along_axis(log_probs, np.where(valid, labels, 0)[:, None], axis=1)[:, 0]
    return np.where(valid, -picked, np.nan)


def held_out_figures(model, batch, regression: bool, forward: Forward | None = None) -> dict[str, Any]:
    """Loss, accuracy and the share of the commonest predicted class on a batch the model never trained on.

    Rows whose label is outside the head's range are left out (they have no loss to measure).

    Args:
        forward: the model's traced forward pass, when it scores more than once (a trainer's `forward`).
    """
    inputs, labels = split_batch(batch)
    logits = class_logits(model, forward(inputs) if forward is not None else call(model, inputs))
    labels = class_ids(labels)
    losses = per_sample_losses(logits, labels, regression)
    if regression:
        return {"loss": _finite_mean(losses), "accuracy": None, "commonest_share": None, "rows": int(len(labels))}
    labels = labels.astype(np.int64)
    valid = (labels >= 0) & (labels < logits.shape[1])
    predictions = logits.argmax(axis=1)
    return {
        "loss": _finite_mean(losses[valid]),
        "accuracy": float(np.mean(predictions[valid] == labels[valid])) if valid.any() else None,
        "commonest_share": float(np.bincount(predictions).max() / len(predictions)) if len(predictions) else None,
        "rows": int(valid.sum()),
    }


def _finite_mean(values: np.ndarray) -> float | None:
    value = float(np.mean(values)) if len(values) else float("nan")
    return value if np.isfinite(value) else None
