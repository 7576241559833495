"""The optimizer a user built, read without touching it: its learning rate now, every setting it was built with, and
clones of it for copies to train with. Keras and Transformers keep some of this in private attributes (the rate of
new and legacy optimizers, AdamWeightDecay's choice of weights to decay); this module is where they are read."""

from __future__ import annotations

import copy
from typing import Any
import weakref

import numpy as np

from diagnostics.core.errors import InputError
from diagnostics.i18n import msg
from diagnostics.keras.internals import copy_decay_selection, decay_selection, optimizer_rate


# The keywords an optimizer was built with and dropped with no more than a logged warning (tf-keras's optimizers
# take `lr=` and train at their default rate), by optimizer: written while `usercode.hooks.watch()` is open.
_IGNORED: "weakref.WeakKeyDictionary[Any, dict[str, Any]]" = weakref.WeakKeyDictionary()
# The keywords tf-keras's optimizers drop that way, and the keyword each should be.
IGNORED_KEYWORDS = {"lr": "learning_rate"}


def remember_ignored(optimizer, keywords: dict[str, Any]) -> None:
    """Keep the keywords of IGNORED_KEYWORDS this optimizer was given (and dropped)."""
    dropped = {name: value for name, value in keywords.items() if name in IGNORED_KEYWORDS and value is not None}
    if dropped:
        try:
            _IGNORED[optimizer] = dropped
        except TypeError:  # not weak-referenceable: nothing is kept
            pass


def ignored_keywords(optimizer) -> dict[str, Any]:
    """The keywords this optimizer was given and dropped ({} when none was seen)."""
    try:
        return dict(_IGNORED.get(getattr(optimizer, "inner_optimizer", optimizer), {}))
    except TypeError:
        return {}


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


def optimizer_config(optimizer, *, schedule_as_object: bool = False) -> dict[str, Any]:
    """The optimizer's Keras config. A learning-rate schedule of the user's own that does not serialize (a class
    without `get_config`, which Keras's config refuses with NotImplementedError) stands as `{"class_name": its
    class}`, or with `schedule_as_object` as the schedule itself (what `from_config` takes to build a clone that
    follows it; a schedule is a function of the step and keeps no state)."""
    try:
        settings = dict(optimizer.get_config())
    except NotImplementedError:
        schedule = optimizer_rate(optimizer)
        if not callable(schedule) or hasattr(schedule, "numpy"):
            raise
        shadow = copy.copy(optimizer)  # the user's optimizer is never touched, not even for a moment
        if hasattr(shadow, "_hyper"):  # a legacy optimizer keeps its rate among its hyperparameters
            shadow._hyper = {**shadow._hyper, "learning_rate": 0.0}
        else:
            shadow._learning_rate = 0.0
        settings = dict(shadow.get_config())
        settings["learning_rate"] = schedule if schedule_as_object else {"class_name": type(schedule).__name__}
    return settings


def optimizer_settings_of(optimizer) -> dict[str, Any]:
    """Every setting of an optimizer object as built: its Keras config, plus AdamWeightDecay's choice of which weights
    decay (not in that config)."""
    return {**optimizer_config(optimizer), **decay_selection(optimizer)}


def clone_optimizer(optimizer, rate: float | None = None):
    """A new optimizer with every setting of `optimizer` (clipping, betas, epsilon, weight decay and the weights it
    spares, the schedule) and none of its state; `rate` replaces the learning rate (or schedule) with a constant.

    Raises:
        InputError: an optimizer Keras cannot rebuild from its config.
    """
    settings = optimizer_config(optimizer, schedule_as_object=True)
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


def is_schedule(rate) -> bool:
    """Whether an optimizer's rate is a schedule (a function of the step), not a number or a variable."""
    return callable(rate) and not hasattr(rate, "numpy")


# The steps a run plans when nothing says how many (RunConfig.train_steps's default).
DEFAULT_PLANNED_STEPS = 1000
# How many steps of a schedule are read to draw it and find its peak.
SCHEDULE_POINTS = 200


def schedule_steps(train_steps: int, points: int = SCHEDULE_POINTS) -> list[int]:
    """The steps a schedule is read at: `points` spread evenly from 0 to `train_steps`, each once."""
    return np.unique(np.linspace(0, train_steps, min(points, train_steps + 1)).astype(int)).tolist()


def schedule_rates(schedule, steps: list[int]) -> list[float]:
    """The rate a schedule of any kind gives at each step, as the optimizer reads it (called with the step)."""
    import tensorflow as tf

    rates = []
    for step in steps:
        try:  # with the step as the optimizer gives it: its iteration count, an int64 tensor
            rates.append(plain_rate(schedule(tf.constant(step, tf.int64))))
        except Exception as exc:
            raise InputError(msg("The learning-rate schedule {kind} raised when called at step {step} ({error}); the "
                                 "optimizer calls it the same way at each step.", kind=type(schedule).__name__,
                                 step=step, error=exc)) from None
    return rates


def peak_rate(schedule, planned_steps: int | None) -> float:
    """The highest rate a schedule of the user's own gives over the planned steps."""
    steps = schedule_steps(int(planned_steps or DEFAULT_PLANNED_STEPS))
    return max(schedule_rates(schedule, steps))
