"""Every read of a private or version-dependent part of the libraries the debugger diagnoses, in one place.

Each function here reads something Keras, Transformers, `tf.data` or `datasets` keep for themselves (or spell in a
way they may change): an upgrade that moves one breaks it here, and `tests/keras/test_internals.py` names which, on the
pinned versions (requirements.txt), instead of a check elsewhere quietly judging wrongly.
"""

from __future__ import annotations

import sys
from typing import Any

# Where each read was measured (requirements.txt pins them; the test fails loudly when one moves).
MEASURED_ON = {"tensorflow": "2.20.0", "tf-keras": "2.20.1", "transformers": "4.54.1", "datasets": "5.0.1"}

# Parts of a variable's name: Transformers' encoder layers ("bert/encoder/layer_._0/..."), a dense layer's weight
# matrix ("kernel"), and the task heads that from_pretrained initialises at random.
LAYER_PREFIX = "layer_._"
KERNEL = "kernel"
HEAD_MARKERS = ("classifier", "score")
# What `datasets` says when to_tf_dataset is asked for a column the split lacks.
MISSING_COLUMN_TEXT = "not found in dataset"


def optimizer_rate(optimizer) -> Any:
    """The optimizer's learning rate as it keeps it: a number, a variable or a schedule (new Keras optimizers keep
    it in `_learning_rate`; legacy ones behind `_get_hyper`)."""
    rate = getattr(optimizer, "_learning_rate", None)
    if rate is None and hasattr(optimizer, "_get_hyper"):
        rate = optimizer._get_hyper("learning_rate")
    return rate


# Transformers' AdamWeightDecay keeps which weights decay outside its Keras config.
DECAY_SELECTION = ("_include_in_weight_decay", "_exclude_from_weight_decay")


def decay_selection(optimizer) -> dict[str, list]:
    """AdamWeightDecay's choice of weights to decay or spare ({} for other optimizers), by setting name."""
    return {attribute.lstrip("_"): list(getattr(optimizer, attribute)) for attribute in DECAY_SELECTION
            if getattr(optimizer, attribute, None) is not None}


def copy_decay_selection(source, copy) -> None:
    """Give a rebuilt optimizer the source's choice of weights to decay (from_config leaves it out)."""
    for attribute in DECAY_SELECTION:
        if hasattr(source, attribute):
            setattr(copy, attribute, getattr(source, attribute))


def make_optimizer_state(optimizer, variables: list) -> None:
    """Make the optimizer's state for these variables now, outside any traced step (a `tf.function` that makes
    variables traces its Python twice): new Keras optimizers `build`; legacy ones, such as Transformers'
    `AdamWeightDecay`, make it in `_create_all_weights`, which their `apply_gradients` calls."""
    if hasattr(optimizer, "build"):
        optimizer.build(variables)
    elif hasattr(optimizer, "_create_all_weights"):
        optimizer._create_all_weights(variables)


def keras_step_function(model):
    """The Python function Keras traces into `model.train_function` (one step; `make_train_function` as
    `run_eagerly` builds it), for the caller to trace as it chooses. Only for a model compiled with one step an
    execution, whose function holds no loop of its own."""
    eagerly = model._run_eagerly
    model._run_eagerly = True
    try:
        return model.make_train_function(force=True)
    finally:
        model._run_eagerly = eagerly


def uses_internal_loss(model) -> bool:
    """Whether `compile` left a Transformers model on its own loss (it sets `_using_dummy_loss` when no loss was
    given)."""
    return bool(getattr(model, "_using_dummy_loss", False))


def is_dummy_loss(loss) -> bool:
    """Whether a loss is the placeholder Transformers passes Keras when the model computes its own."""
    return getattr(loss, "__name__", "") == "dummy_loss"


def checkpoint_path(model) -> str:
    """Where `from_pretrained` loaded the model from ("" when not known)."""
    return str(getattr(getattr(model, "config", None), "_name_or_path", "") or "")


def split_fingerprint(split) -> str | None:
    """A `datasets.Dataset`'s content fingerprint (None for anything else)."""
    return getattr(split, "_fingerprint", None)


def dataset_inputs(dataset) -> list | None:
    """The datasets a `tf.data` dataset was made from (one for `map`, `prefetch`...; several for `zip`), or None
    when it is not a `tf.data` dataset."""
    try:
        return list(dataset._inputs())
    except Exception:
        return None


def repeated_input(dataset) -> tuple[Any, int | None] | None:
    """(the dataset the outermost `repeat()` of a `tf.data` chain repeats, the rows a `batch` or `padded_batch` after
    it groups, or None when none does); None when nothing in the chain repeats. Read from tf.data's private classes
    (`_RepeatDataset`, `_BatchDataset._batch_size`)."""
    batch, node = None, dataset
    while node is not None:
        name = type(node).__name__
        if name == "_RepeatDataset":
            inputs = dataset_inputs(node)
            return (inputs[0], batch) if inputs else None
        if name in ("_BatchDataset", "_PaddedBatchDataset") and batch is None:
            try:
                batch = int(node._batch_size)
            except Exception:
                batch = None
        inputs = dataset_inputs(node)
        node = inputs[0] if inputs is not None and len(inputs) == 1 else None
    return None


def optimizer_keyword_reader():
    """(the class, the name of its method) that reads the keywords a tf-keras optimizer does not declare, and drops
    `lr=` with a logged warning: `_BaseOptimizer._process_kwargs(self, kwargs)`; None where tf-keras has no such
    method."""
    try:
        from tf_keras.src.optimizers.optimizer import _BaseOptimizer
    except ImportError:
        return None
    return (_BaseOptimizer, "_process_kwargs") if hasattr(_BaseOptimizer, "_process_kwargs") else None


def fit_argument(model, name: str = "x") -> Any:
    """An argument of the `model.fit` call running now, read from its frame (callbacks are not handed the data)."""
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_name == "fit" and frame.f_locals.get("self") is model and name in frame.f_locals:
            return frame.f_locals[name]
        frame = frame.f_back
    return None


def is_missing_column_error(exc: BaseException) -> bool:
    """Whether an exception is `datasets` refusing a column the split lacks."""
    return isinstance(exc, (ValueError, KeyError)) and MISSING_COLUMN_TEXT in str(exc)


def variable_path(name: str) -> str:
    """'tf_bert_for_sequence_classification_3/bert/encoder/layer_._0/attention/self/query/kernel:0'
    -> 'bert/encoder/layer_._0/attention/self/query/kernel' (the instance prefix varies per copy)."""
    return name.split(":")[0].split("/", 1)[-1]


def is_pretrained_kernel(variable) -> bool:
    """A weight matrix learned in pretraining: a dense kernel outside the task head."""
    path = variable.name
    return KERNEL in path and not any(marker in path for marker in HEAD_MARKERS) and len(variable.shape) >= 2
