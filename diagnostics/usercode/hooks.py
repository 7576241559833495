"""Remembers where a `tf.data.Dataset` came from: the `datasets.Dataset` and arguments of the `to_tf_dataset` call
that made it, so checks on a user's dataset can batch the user's own rows the user's own way; and how the user's
code last tokenized text (truncation, max_length, padding), so truncation is measured at the user's own length.

Nothing is patched on import: only inside `with watch():` (which `diagnostics.watch` gives users, and the traced
script's child opens for the whole script) are `datasets.Dataset.to_tf_dataset`, the tokenizers' `__call__` and
the method that reads a tf-keras optimizer's undeclared keywords (to remember an `lr=` it drops) wrapped; the
wrappers pass everything through and return what the call returns, and the last block to close puts the originals
back."""

from __future__ import annotations

import contextlib
import functools
import threading
import weakref
from dataclasses import dataclass
from typing import Any, Callable, Iterator

from diagnostics.keras.internals import dataset_inputs

_ORIGINS: "weakref.WeakKeyDictionary[Any, tuple[Any, dict]]" = weakref.WeakKeyDictionary()
_LOCK = threading.RLock()  # re-entered: a wrapper installed on import takes it
# The last call, kept when it raised too (the tracer diagnoses an error inside to_tf_dataset from it).
last_call: dict[str, Any] = {}
# The last tokenizer call on text: its truncation, max_length and padding arguments and the tokenizer's maximum
# (`tokenization()` reads it; each to_tf_dataset call keeps a copy, the call that made its token ids).
last_tokenization: dict[str, Any] = {}
TOKENIZER_ARGUMENTS = ("truncation", "max_length", "padding")
# How many tokenizer calls on text were seen (a caller tells a call made while it read a pipeline from an earlier one).
seen_calls = {"count": 0}
# The open watch() blocks, and the methods they wrapped (put back when the last one closes).
_OPEN = {"blocks": 0, "original": None, "wrapper": None, "tokenizer_call": None, "tokenizer_wrapper": None,
         "keywords": None}


@contextlib.contextmanager
def watch(when: Callable[[str, Callable[[Any], None]], None] | None = None) -> Iterator[None]:
    """Within the block, each dataset `to_tf_dataset` (or `prepare_tf_dataset`, which calls it) returns remembers
    the split and arguments that made it, for as long as the dataset lives; the method is itself again after the
    block (blocks nest, and may be open in several threads at once).

    `when(module, install)`, where given, installs each wrapper once its library is imported by someone else
    (the traced script's child: `after_import.AfterImport.when`), so opening the block imports nothing."""
    _open(when)
    try:
        yield
    finally:
        _close()


def watching() -> bool:
    """Whether a watch() block is open, so to_tf_dataset's datasets remember their origin."""
    return _OPEN["blocks"] > 0


def _open(when=None) -> None:
    with _LOCK:
        _OPEN["blocks"] += 1
        if _OPEN["blocks"] > 1:
            return
        for module, wrap in (("datasets", _wrap_to_tf_dataset), ("transformers.tokenization_utils_base",
                                                                  _wrap_tokenizer_call),
                             ("tf_keras", _wrap_optimizer_keywords)):
            if when is None:
                wrap()
            else:
                when(module, lambda _module, wrap=wrap: _while_open(wrap))


def _while_open(wrap) -> None:
    """Install a wrapper when its library is imported, if the block that asked for it is still open."""
    with _LOCK:
        if _OPEN["blocks"] > 0:
            wrap()


def _wrap_to_tf_dataset() -> None:
    """Remember each `to_tf_dataset` call's split and arguments (with the lock held)."""
    from datasets import Dataset

    original = Dataset.to_tf_dataset

    @functools.wraps(original)
    def to_tf_dataset(self, *args, **kwargs):
        call = {"source": self, "kwargs": _named(original, args, kwargs)}
        last_call.clear()
        last_call.update(call)
        result = original(self, *args, **kwargs)
        try:  # with the tokenizer call that came before it: the one that made these token ids
            _ORIGINS[result] = (self, call["kwargs"], tokenization())
        except TypeError:  # not weak-referenceable: the checks read the dataset back instead
            pass
        return result

    _OPEN["original"], _OPEN["wrapper"] = original, to_tf_dataset
    Dataset.to_tf_dataset = to_tf_dataset


def _wrap_optimizer_keywords() -> None:
    """Record the keywords a tf-keras optimizer drops (`lr=`) as it is built (with the lock held)."""
    from diagnostics.keras.internals import optimizer_keyword_reader
    from diagnostics.keras.optimizers import remember_ignored

    found = optimizer_keyword_reader()
    if found is None:
        return
    owner, name = found
    original = owner.__dict__[name]

    @functools.wraps(original)
    def process(self, kwargs):
        remember_ignored(self, kwargs)
        return original(self, kwargs)

    _OPEN["keywords"] = (owner, name, original, process)
    setattr(owner, name, process)


def _wrap_tokenizer_call() -> None:
    """Record each tokenizer call on text (with the lock held)."""
    from transformers.tokenization_utils_base import PreTrainedTokenizerBase

    original = PreTrainedTokenizerBase.__call__

    @functools.wraps(original)
    def call(self, text=None, *args, **kwargs):
        if isinstance(text, str) or (isinstance(text, (list, tuple)) and text and isinstance(text[0], str)):
            last_tokenization.clear()
            seen_calls["count"] += 1
            last_tokenization.update({name: kwargs.get(name) for name in TOKENIZER_ARGUMENTS},
                                     model_max_length=getattr(self, "model_max_length", None))
        return original(self, text, *args, **kwargs)

    _OPEN["tokenizer_call"], _OPEN["tokenizer_wrapper"] = original, call
    PreTrainedTokenizerBase.__call__ = call


def tokenization() -> dict[str, Any] | None:
    """A copy of the last tokenizer call on text seen inside a watch() block (None when none was)."""
    return dict(last_tokenization) if last_tokenization else None


def _close() -> None:
    with _LOCK:
        _OPEN["blocks"] -= 1
        if _OPEN["blocks"] > 0:
            return
        # Put back only our own wrappers: a method someone replaced one with inside the block stays theirs. A wrapper
        # never installed (its library was never imported) has nothing to put back.
        if _OPEN["wrapper"] is not None:
            from datasets import Dataset

            if Dataset.__dict__.get("to_tf_dataset") is _OPEN["wrapper"]:
                Dataset.to_tf_dataset = _OPEN["original"]
        if _OPEN["tokenizer_wrapper"] is not None:
            from transformers.tokenization_utils_base import PreTrainedTokenizerBase

            if PreTrainedTokenizerBase.__dict__.get("__call__") is _OPEN["tokenizer_wrapper"]:
                PreTrainedTokenizerBase.__call__ = _OPEN["tokenizer_call"]
        if _OPEN.get("keywords"):
            owner, name, original, process = _OPEN["keywords"]
            if owner.__dict__.get(name) is process:
                setattr(owner, name, original)
        _OPEN.update(original=None, wrapper=None, tokenizer_call=None, tokenizer_wrapper=None, keywords=None)


def origin_of(tf_dataset) -> tuple[Any, dict] | None:
    """(the `datasets.Dataset`, the `to_tf_dataset` keyword arguments) that made this dataset, if seen."""
    found = _found(tf_dataset)
    return found[:2] if found is not None else None


def _found(tf_dataset) -> tuple[Any, dict, dict | None] | None:
    """What the watch kept of the call that made this dataset: its split, arguments and the tokenizer call before."""
    try:
        return _ORIGINS.get(tf_dataset)
    except TypeError:
        return None


# Dataset kinds that regroup rows into other batches: batches built from the split are no longer what fit gets.
REGROUPING = ("Batch", "ParallelBatch", "PaddedBatch", "Unbatch", "Rebatch", "Window")
# How many `tf.data` methods back from the dataset given to fit the origin is looked for.
MAX_STEPS_BACK = 64


@dataclass(frozen=True)
class Provenance:
    """Where a dataset came from, through the `tf.data` methods applied after `to_tf_dataset` (or
    `prepare_tf_dataset`, which calls it).

    Attributes:
        source / kwargs: the `datasets.Dataset` and the `to_tf_dataset` keyword arguments.
        tokenization: the last tokenizer call on text before that `to_tf_dataset` call (`tokenization()`), None when
            none was seen inside the watch.
        steps: the methods' dataset kinds from the origin on ("_OptionsDataset", "PrefetchDataset", ...).
        same_elements: the dataset given to fit yields batches of the origin's rows, structure and dtypes, so batches
            built from the split with those arguments are what fit gets (False after a `batch` or `unbatch` that
            regroups the rows, or a `map` that changes the structure).
    """

    source: Any
    kwargs: dict
    steps: tuple[str, ...] = ()
    same_elements: bool = True
    tokenization: dict | None = None


def provenance_of(tf_dataset) -> Provenance | None:
    """The origin of a dataset, followed back through the `tf.data` methods after it (`with_options`, `prefetch`,
    `shuffle`, `map`, `repeat`, `take`, `cache`, `apply`, `batch`...): each returns a new dataset holding the one it
    was called on, which `tf.data` lists in `_inputs()` (internals.dataset_inputs)."""
    steps: list[str] = []
    current = tf_dataset
    for _ in range(MAX_STEPS_BACK):
        found = _found(current)
        if found is not None:
            source, kwargs, tokenized = found
            steps.reverse()
            regrouped = any(step.lstrip("_").startswith(REGROUPING) for step in steps)
            return Provenance(source, kwargs, tuple(steps), not regrouped and _same_elements(current, tf_dataset),
                              tokenized)
        inputs = dataset_inputs(current)
        if inputs is None or len(inputs) != 1:  # not tf.data's; or a zip or concatenate: rows from several places
            return None
        steps.append(type(current).__name__)
        current = inputs[0]
    return None


# tf.data's dataset kinds (`_PrefetchDataset`, `CacheDataset`...) without underscores and "Dataset", by method.
METHODS = {"Options": "with_options", "Prefetch": "prefetch", "Shuffle": "shuffle", "Map": "map", "ParallelMap": "map",
           "Repeat": "repeat", "Take": "take", "Skip": "skip", "Cache": "cache", "Batch": "batch",
           "ParallelBatch": "batch", "PaddedBatch": "padded_batch", "Unbatch": "unbatch", "Filter": "filter"}


def method_names(steps) -> list[str]:
    """The `tf.data` methods behind dataset kinds, as a user wrote them ("with_options()", "prefetch()")."""
    names = [step.lstrip("_").removesuffix("V2").removesuffix("Dataset") for step in steps]
    return [f"{METHODS.get(name, name)}()" for name in names]


def _same_elements(origin, final) -> bool:
    """Whether two datasets' elements share a structure, dtypes and per-row shapes (the batch dimension may differ)."""
    import tensorflow as tf

    try:
        tf.nest.assert_same_structure(origin.element_spec, final.element_spec)
    except (ValueError, TypeError):
        return False
    for before, after in zip(tf.nest.flatten(origin.element_spec), tf.nest.flatten(final.element_spec), strict=True):
        if getattr(before, "dtype", None) != getattr(after, "dtype", None):
            return False
        shape_before, shape_after = getattr(before, "shape", None), getattr(after, "shape", None)
        if shape_before is None or shape_after is None or shape_before.rank != shape_after.rank:
            return False
        if not shape_before[1:].is_compatible_with(shape_after[1:]):
            return False
    return True


def _named(function, args: tuple, kwargs: dict) -> dict:
    """Positional arguments of a call by their names."""
    import inspect

    names = [name for name in inspect.signature(function).parameters if name != "self"]
    return {**dict(zip(names, args, strict=False)), **kwargs}
