"""Values kept for every session of the server, out of reach of any client.

Streamlit's `st.cache_resource` is emptied by a message any client may send (`BackMsg.clear_cache`, the "Clear
cache" of its developer menu): one visitor could drop every other visitor's kept results, and each store built
again came with heavy slots of its own, so three heavy computations ran at once on a server sized for one. The
app's shared loaders and results store are kept here instead, where only the process's own code reaches them.
"""

from __future__ import annotations

from collections import OrderedDict
import functools
import threading
from typing import Any, Callable


class Kept:
    """A function's values by its arguments (hashable), computed once for every thread: a caller asking for a
    value another is computing waits for it. At most `max_entries` are kept (None: no bound), and at most `max_bytes`
    as `weigh(args)` weighs each (the newest is kept whatever it weighs), the least recently used let go first; a
    call that raised keeps nothing."""

    def __init__(self, function: Callable, max_entries: int | None = None, max_bytes: int | None = None,
                 weigh: Callable[..., int] | None = None):
        functools.update_wrapper(self, function)
        self.function, self.max_entries, self.max_bytes, self.weigh = function, max_entries, max_bytes, weigh
        self._values: OrderedDict = OrderedDict()
        self._weights: dict = {}
        self._making: dict[Any, threading.Lock] = {}
        self._lock = threading.Lock()

    def __call__(self, *args, **kwargs):
        key = (args, tuple(sorted(kwargs.items())))
        found, value = self._get(key)
        if found:
            return value
        with self._lock:
            making = self._making.setdefault(key, threading.Lock())
        with making:
            found, value = self._get(key)  # made by the caller this one waited for
            if found:
                return value
            try:
                value = self.function(*args, **kwargs)
            finally:
                with self._lock:
                    self._making.pop(key, None)
            weight = self.weigh(*args, **kwargs) if self.weigh is not None else 0
            with self._lock:
                self._values[key], self._weights[key] = value, weight
                while len(self._values) > 1 and (
                        (self.max_entries is not None and len(self._values) > self.max_entries)
                        or (self.max_bytes is not None and sum(self._weights.values()) > self.max_bytes)):
                    old, _ = self._values.popitem(last=False)
                    self._weights.pop(old, None)
            return value

    def _get(self, key) -> tuple[bool, Any]:
        with self._lock:
            if key in self._values:
                self._values.move_to_end(key)
                return True, self._values[key]
        return False, None

    def __len__(self) -> int:
        return len(self._values)

    def clear(self) -> None:
        """Forget every value (the process's own code: a test, a tidy-up; never a client's message)."""
        with self._lock:
            self._values.clear()
            self._weights.clear()


def kept(max_entries: int | None = None, max_bytes: int | None = None,
         weigh: Callable[..., int] | None = None) -> Callable[[Callable], Kept]:
    """`@kept(max_entries=..., max_bytes=..., weigh=...)`: the decorated function's values are `Kept` for the
    process."""
    return lambda function: Kept(function, max_entries, max_bytes, weigh)
