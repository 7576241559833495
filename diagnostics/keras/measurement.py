"""Measuring a model: one eager forward pass keeping every layer's output, and a batch's loss as the configured
loss computes it; shared by the Model and Hyperparameters stages."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from diagnostics.keras.internals import variable_path
from diagnostics.keras.keras_model import (
    Head,
    as_output,
    call,
    class_logits,
    is_transformers_classifier,
    labels_for_loss,
    raw_output,
)
from diagnostics.keras.scoring import per_sample_losses
from diagnostics.keras.training import (
    StepRecord,
    build_loss,
    decoupled_decay,
    first_line,
    fresh_copy,
    moved_variables,
    one_train_step,
    split_batch,
)


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
    raw: np.ndarray | None = None  # the output as the loss reads it (probabilities for a softmax head)
    trace: list[tuple[str, np.ndarray]] = field(default_factory=list)
    error: str | None = None
    fit_call_error: str | None = None


def run_forward(model, tf_batch) -> Forward:
    """The batch through the model, eagerly (like `run_eagerly=True`), keeping every layer's output."""
    inputs, _ = split_batch(tf_batch)
    record = Forward()
    try:
        output = call(model, inputs, hidden_states=True)
    except Exception as exc:
        record.error = f"{type(exc).__name__}: {first_line(exc)}"
        return record
    record.raw = np.asarray(raw_output(output))
    record.logits = class_logits(model, output).astype(record.raw.dtype)
    hidden = [np.asarray(state) for state in (getattr(output, "hidden_states", None) or ())]
    if hidden:
        record.trace.append(("embeddings", hidden[0]))
        record.trace += [(f"encoder layer {i} of {len(hidden) - 1}", state) for i, state in enumerate(hidden[1:])]
    record.trace.append(("classification head (logits)", record.logits))
    if not isinstance(tf_batch, tuple) and "labels" in tf_batch and is_transformers_classifier(model):
        try:
            model(dict(tf_batch), training=False)
        except Exception as exc:
            record.fit_call_error = f"{type(exc).__name__}: {first_line(exc)}"
    return record


def kept(record: Forward) -> Forward:
    """The pass with its layer outputs let go when every one is finite (then model.nan_origin has nothing to trace),
    so a run context that keeps it holds little more than the logits."""
    if all(np.isfinite(output).all() for _, output in record.trace):
        record.trace = []
    return record


def non_finite_weights(model) -> list[str]:
    """Paths of trainable variables holding NaN or Inf, in model order."""
    return [variable_path(v.name) for v in model.trainable_variables if not np.isfinite(v.numpy()).all()]


@dataclass
class ModelStep:
    """One real train step on a copy of the model, on one batch as `model.fit` gets it.

    Attributes:
        record: what the step did: its loss, gradients and rate, or the error it raised.
        broken: the copy's trainable variables holding NaN or Inf after it.
        forward: the copy's forward pass after it, when it broke weights (model.nan_origin traces it); else None.
        moved: which variables it moved (`training.moved_variables`); None when the step raised.
    """

    record: StepRecord
    broken: list[str]
    forward: Forward | None
    moved: dict | None


def take_step(model, tf_batch, config, *, copy=None) -> ModelStep:
    """One train step on `copy` (a fresh copy of `model` when None; `model` is never modified), measured."""
    copy = copy if copy is not None else fresh_copy(model, split_batch(tf_batch)[0])
    record = one_train_step(copy, tf_batch, config)
    broken = non_finite_weights(copy)
    moved = None if record.error else moved_variables(model, copy, record.rate, decoupled_decay(config))
    return ModelStep(record, broken, kept(run_forward(copy, tf_batch)) if broken else None, moved)


def configured_loss_value(loss_name: str, logits: np.ndarray, labels: np.ndarray, regression: bool,
                          head: Head | None = None) -> float:
    """Mean loss of the rows with a valid label, computed with the configured loss (the model's own, or Keras').

    Args:
        logits: class logits (`keras_model.class_logits`); a Keras model's own head gets them back as it outputs
            them (probabilities for a softmax head), with the labels as its loss takes them.
    """
    import tf_keras

    labels = np.asarray(labels)
    if regression:
        valid = np.isfinite(labels.astype(float))
    else:
        valid = (labels >= 0) & (labels < logits.shape[1])
    if not valid.any():
        return math.nan
    # A loss of the script's own ("custom") is not evaluated here: the checks that judge a loss's value skip it, and
    # the value that says whether any row can be scored is the cross-entropy of the outputs.
    if loss_name in ("internal", "custom"):
        return float(np.mean(per_sample_losses(logits[valid], labels[valid], regression)))
    loss = tf_keras.losses.get(build_loss(loss_name))
    if head is not None and not regression:
        return float(np.mean(np.asarray(loss(labels_for_loss(labels[valid], loss_name, head),
                                             as_output(head, logits[valid]).astype(np.float32)))))
    return float(np.mean(np.asarray(loss(labels[valid], logits[valid]))))
