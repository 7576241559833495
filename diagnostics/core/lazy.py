"""A value computed once per instance, on first read, under a lock of that instance's own.

`functools.cached_property` on Python 3.11 holds one lock per property for every instance of the class: while one
session's run context builds its first batch (a tokenizer that takes a minute), every other session's context waits
to build its own. `once` locks each instance and property apart, so only readers of the same value wait.
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Generic, TypeVar

T = TypeVar("T")

_LOCKS = "_once_locks"
_MAKING_LOCKS = threading.Lock()  # held only while an instance's lock table is made, never while a value is


class once(Generic[T]):  # noqa: N801 - used as a decorator, like `property`
    """`@once` on a method: the method's value, computed on the first read of the attribute and kept in the instance's
    `__dict__` (a later read finds it there, with no lock). A reader that arrives while another computes the same
    value waits for it; a value whose method raised is not kept, so the next read computes it again, as with
    `functools.cached_property`. `del instance.name` forgets it."""

    def __init__(self, method: Callable[[Any], T]):
        self.method, self.name, self.__doc__ = method, method.__name__, method.__doc__

    def __set_name__(self, owner, name: str) -> None:
        self.name = name

    def __get__(self, instance, owner=None) -> T:
        if instance is None:
            return self  # type: ignore[return-value]
        values = instance.__dict__
        if self.name in values:
            return values[self.name]
        with _lock_of(instance, self.name):
            if self.name in values:  # computed by the reader this one waited for
                return values[self.name]
            value = self.method(instance)
            values[self.name] = value
            return value


def _lock_of(instance, name: str) -> threading.RLock:
    """The instance's own lock for one of its values (re-entrant: a value's method may read another)."""
    locks = instance.__dict__.get(_LOCKS)
    if locks is None or name not in locks:
        with _MAKING_LOCKS:
            locks = instance.__dict__.setdefault(_LOCKS, {})
            locks.setdefault(name, threading.RLock())
    return locks[name]
