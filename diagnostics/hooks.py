"""Remembers where a `tf.data.Dataset` came from: the `datasets.Dataset` and arguments of the `to_tf_dataset` call
that made it, so checks on a user's dataset can batch the user's own rows the user's own way. The call itself is
unchanged (the wrapper passes everything through and returns what it returns)."""

from __future__ import annotations

import functools
import threading
import weakref
from typing import Any

_ORIGINS: "weakref.WeakKeyDictionary[Any, tuple[Any, dict]]" = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()
# The last call, kept when it raised too (the tracer diagnoses an error inside to_tf_dataset from it).
last_call: dict[str, Any] = {}


def remember_to_tf_dataset() -> None:
    """Wrap `datasets.Dataset.to_tf_dataset` once per process so each dataset it returns remembers its origin."""
    from datasets import Dataset

    with _LOCK:
        original = Dataset.to_tf_dataset
        if getattr(original, "_remembers_origin", False):
            return

        @functools.wraps(original)
        def to_tf_dataset(self, *args, **kwargs):
            call = {"source": self, "kwargs": _named(original, args, kwargs)}
            last_call.clear()
            last_call.update(call)
            result = original(self, *args, **kwargs)
            try:
                _ORIGINS[result] = (self, call["kwargs"])
            except TypeError:  # not weak-referenceable: the checks read the dataset back instead
                pass
            return result

        to_tf_dataset._remembers_origin = True
        Dataset.to_tf_dataset = to_tf_dataset


def origin_of(tf_dataset) -> tuple[Any, dict] | None:
    """(the `datasets.Dataset`, the `to_tf_dataset` keyword arguments) that made this dataset, if seen."""
    try:
        return _ORIGINS.get(tf_dataset)
    except TypeError:
        return None


def _named(function, args: tuple, kwargs: dict) -> dict:
    """Positional arguments of a call by their names."""
    import inspect

    names = [name for name in inspect.signature(function).parameters if name != "self"]
    return {**dict(zip(names, args)), **kwargs}
