"""What a user's `compile` set, read back: the loss and the optimizer with its rate and schedule."""

from __future__ import annotations


from typing import Any




from diagnostics.i18n import msg
from diagnostics.core.errors import InputError
from diagnostics.keras.internals import is_dummy_loss, optimizer_rate, uses_internal_loss
from diagnostics.keras.optimizers import is_schedule, peak_rate, plain_rate


# When the model is not compiled, the checks assume the course's fixed setup, and say so.
UNCOMPILED_RATE = 5e-5


LOSS_STRINGS = {"sparse_categorical_crossentropy": "sparse_categorical_crossentropy", "mse": "mse",
                "mean_squared_error": "mse", "categorical_crossentropy": "categorical_crossentropy",
                "binary_crossentropy": "binary_crossentropy"}


# Keras loss classes (and their functions) read as `config.LOSSES`/`CODE_LOSSES` keys.
LOSS_CLASSES = {"SparseCategoricalCrossentropy": "sparse_categorical_crossentropy",
                "CategoricalCrossentropy": "categorical_crossentropy", "BinaryCrossentropy": "binary_crossentropy"}


def loss_object(model, given: Any = None, *, seen: bool = False) -> Any:
    """The loss object or function itself, as `compile` got it (`given`, when `seen`) or the model keeps it; the
    one loss of a dict or list that holds one (`loss={"output": ...}` for a model with one output)."""
    return one_loss(given if seen else getattr(model, "loss", None))


def one_loss(given: Any) -> Any:
    """The loss inside a dict or list of one (a loss per output, for a model with one output); else `given`."""
    from collections.abc import Mapping

    if isinstance(given, Mapping) and len(given) == 1:
        return one_loss(next(iter(given.values())))
    if isinstance(given, (list, tuple)) and len(given) == 1:
        return one_loss(given[0])
    return given


def read_loss(model, given: Any = None, *, seen: bool = False) -> str:
    """The `config.LOSSES` key of the model's loss, from what `compile` got (`given`, when `seen`) or the model;
    "custom" for any other callable (a function or class of the script's own).

    Raises:
        InputError: a loss that is not a callable (a dict or list of losses, one an output).
    """
    if not seen:
        if getattr(model, "optimizer", None) is None:
            return "internal"
        if uses_internal_loss(model):
            return "internal"
        given = getattr(model, "loss", None)
    given = one_loss(given)
    if given is None or (isinstance(given, str) and given in ("auto", "auto_with_warning", "passthrough")):
        return "internal"
    if not isinstance(given, str) and not callable(given) and hasattr(given, "__len__") and not len(given):
        return "internal"  # compile without a loss: Keras keeps an empty one (a DictWrapper)
    if is_dummy_loss(given):
        return "internal"
    if isinstance(given, str):
        if given in LOSS_STRINGS:
            return LOSS_STRINGS[given]
    else:
        name = type(given).__name__ if not callable(given) or hasattr(given, "get_config") else given.__name__
        if name in LOSS_CLASSES:
            from_logits = bool(given.get_config().get("from_logits"))
            return f"{name}(from_logits={from_logits})"
        if name in LOSS_STRINGS:
            return LOSS_STRINGS[name]
        if name in ("MeanSquaredError", "mean_squared_error"):
            return "mse"
    if getattr(getattr(given, "__func__", None), "__qualname__", "") == "TFSequenceClassificationLoss.hf_compute_loss":
        # A Transformers classifier's own loss given to compile (`loss=model.hf_compute_loss`, as Transformers' older
        # docs wrote it): cross-entropy of class ids on its logits, or for one output a squared error.
        outputs = getattr(getattr(given.__self__, "config", None), "num_labels", None)
        return "mse" if outputs == 1 else "SparseCategoricalCrossentropy(from_logits=True)"
    if callable(given):  # a loss of the script's own: trained with as it is; the checks that judge a loss's kind skip
        return "custom"
    raise InputError(msg("compile(loss={loss}) is not a loss the debugger can judge: it reads the model's internal "
                         "loss, sparse, categorical and binary cross-entropy (a string or an object, from logits or "
                         "not) and mean squared error.", loss=repr(given)))


def read_optimizer(model, given: Any = None, *, seen: bool = False, planned_steps: int | None = None
                   ) -> dict[str, Any]:
    """The configuration's optimizer fields (optimizer, learning_rate, weight_decay, train_steps, warmup_steps)
    for the optimizer the user compiled with. A schedule of the user's own is read by calling it at the planned
    steps (`planned_steps`, the fit's; else the configuration's default): its peak is the rate the checks judge.

    Raises:
        InputError: an optimizer named by a string that no compile has built.
    """
    if seen and isinstance(given, str):
        if given.lower() == "adam":
            return {"optimizer": "adam"}
        if getattr(model, "optimizer", None) is None:  # a string no compile has turned into an optimizer yet
            raise InputError(msg("compile(optimizer={optimizer}) names an optimizer that is not built yet: compile the "
                                 "model before fit.", optimizer=repr(given)))
    optimizer = _optimizer_of(model, given)
    if optimizer is None:
        return {"optimizer": "Adam", "learning_rate": UNCOMPILED_RATE}
    name = type(optimizer).__name__
    rate = optimizer_rate(optimizer)
    schedule = _schedule(rate)
    if schedule is not None:
        weight_decay = float(getattr(optimizer, "weight_decay_rate", 0.0) or 0.0)
        return {"optimizer": "create_optimizer", "weight_decay": weight_decay, **schedule}
    value = plain_rate(peak_rate(rate, planned_steps) if is_schedule(rate) else rate)
    if name == "AdamWeightDecay":
        return {"optimizer": "create_optimizer", "learning_rate": value, "train_steps": 1, "warmup_steps": 0,
                "weight_decay": float(optimizer.weight_decay_rate or 0.0)}
    if name == "AdamW":
        return {"optimizer": "AdamW", "learning_rate": value, "weight_decay": float(optimizer.weight_decay or 0.0)}
    if name == "Adam":
        return {"optimizer": "Adam", "learning_rate": value}
    # Any other optimizer (SGD, RMSprop, Adafactor...): copies train with clones of it; its weight decay, where it
    # has one, is Keras's decoupled decay.
    return {"optimizer": "other", "learning_rate": value,
            "weight_decay": float(getattr(optimizer, "weight_decay", 0.0) or 0.0)}


def _optimizer_of(model, given: Any = None):
    """The optimizer the model trains with: the one it was compiled with, else one given as an object (a custom
    loop's, given to `diagnose(optimizer=)` or seen at its first `apply_gradients`)."""
    optimizer = getattr(model, "optimizer", None) if model is not None else None
    if optimizer is None and given is not None and not isinstance(given, str):
        optimizer = given
    # compile under a mixed_float16 policy wraps the optimizer in a LossScaleOptimizer: its settings are the inner
    # one's.
    return getattr(optimizer, "inner_optimizer", optimizer)


def _schedule(rate) -> dict[str, Any] | None:
    """create_optimizer's schedule (a linear decay, after a warmup or not) as configuration fields."""
    kind = type(rate).__name__
    if kind == "WarmUp" and type(rate).__module__.startswith("transformers"):  # not a script's own class of the name
        decay = rate.decay_schedule_fn
        warmup = int(rate.warmup_steps)
        return {"learning_rate": plain_rate(rate.initial_learning_rate), "warmup_steps": warmup,
                "train_steps": warmup + int(getattr(decay, "decay_steps", 0))}
    if kind == "PolynomialDecay":
        return {"learning_rate": plain_rate(rate.initial_learning_rate), "warmup_steps": 0,
                "train_steps": int(rate.decay_steps)}
    return None
