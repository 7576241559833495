"""The optimizer a user built, read without touching it: its learning rate now, every setting it was built with, and
clones of it for copies to train with. Keras and Transformers keep some of this in private attributes (the rate of
new and legacy optimizers, AdamWeightDecay's choice of weights to decay); this module is where they are read."""

from __future__ import annotations

from typing import Any

import numpy as np

from diagnostics.core.errors import InputError
from diagnostics.i18n import msg
from diagnostics.keras.internals import copy_decay_selection, decay_selection, optimizer_rate


def current_rate(model) -> float | None:
    """The rate the model's optimizer applies now (a schedule read at the optimizer's step); None when there is no
    optimizer or its rate cannot be read."""
    optimizer = getattr(model, "optimizer", None)
    rate = optimizer_rate(optimizer) if optimizer is not None else None
    try:
        if callable(rate) and not hasattr(rate, "numpy"):
            rate = rate(optimizer.iterations)
        return plain_rate(rate) if rate is not None else None
    except Exception:  # an unreadable rate leaves the finding without its number, never breaks the watch
        return None


def optimizer_settings_of(optimizer) -> dict[str, Any]:
    """Every setting of an optimizer object as built: its Keras config, plus AdamWeightDecay's choice of which weights
    decay (not in that config)."""
    return {**optimizer.get_config(), **decay_selection(optimizer)}


def clone_optimizer(optimizer, rate: float | None = None):
    """A new optimizer with every setting of `optimizer` (clipping, betas, epsilon, weight decay and the weights it
    spares, the schedule) and none of its state; `rate` replaces the learning rate (or schedule) with a constant.

    Raises:
        InputError: an optimizer Keras cannot rebuild from its config.
    """
    settings = dict(optimizer.get_config())
    if rate is not None:
        settings["learning_rate"] = float(rate)
    try:
        copy = type(optimizer).from_config(settings)
    except Exception as exc:
        raise InputError(msg("{optimizer} cannot be rebuilt from its settings ({error}), so copies cannot train with "
                             "it.", optimizer=type(optimizer).__name__, error=exc)) from None
    copy_decay_selection(optimizer, copy)
    return copy


def plain_rate(rate) -> float:
    """A rate as the user wrote it: Keras keeps rates in float32 (5e-5 reads back as 4.9999999e-05)."""
    value = rate.numpy() if hasattr(rate, "numpy") else rate  # a mirrored variable is read through numpy()
    return float(str(np.float32(value)))


# A LossScaleOptimizer starts at 2**15 and halves its scale at each step whose gradients overflow.
MAX_LOSS_SCALE_HALVINGS = 16


def until_applied(step, optimizer, finite):
    """`step()` run again while the LossScaleOptimizer a mixed_float16 compile wraps the optimizer in skipped it (its
    scaled gradients overflowed, `finite()` saying which were finite, and it halved its scale), as real training's
    first steps are skipped: the result of the first step it applies. A skipped step changes no weight."""
    result = step()
    for _ in range(MAX_LOSS_SCALE_HALVINGS):
        if not getattr(optimizer, "dynamic", False) or not hasattr(optimizer, "inner_optimizer") or all(finite()) or \
                float(optimizer.loss_scale) < 1.0:
            break
        result = step()
    return result
