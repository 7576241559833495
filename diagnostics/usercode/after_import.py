"""Calls a function on a module once something else has imported it: the traced script's child wraps Keras's `fit`
and the libraries' calls when the script imports them, never before, so the script's imports resolve as they do
when it runs alone (TensorFlow reads `TF_USE_LEGACY_KERAS` when it is first imported, and `tf.keras` when first used:
a debugger that imported them ahead of the script would choose the script's Keras for it).

A finder put first on `sys.meta_path` answers for the awaited names alone: it asks the finders after it for the
module's spec, runs the module's own loader, and then calls what waits for it. The module keeps its own loader
(`__loader__` and `__spec__.loader` are the real one before its code runs), and every other import is untouched.
"""

from __future__ import annotations

import importlib.abc
import sys
import threading
import traceback
from typing import Any, Callable

Callback = Callable[[Any], None]


class AfterImport(importlib.abc.MetaPathFinder):
    """Functions waiting on modules not imported yet; `close()` takes the finder off and drops what still waits."""

    def __init__(self):
        self._waiting: dict[str, list[Callback]] = {}
        self._starting: dict[str, list[Callable[[str], None]]] = {}  # called with the name as its import begins
        self._lock = threading.RLock()
        self.failed: list[str] = []  # "module: error" for each callback that raised (the import itself went on)

    def when(self, name: str, callback: Callback) -> None:
        """Call `callback(module)` now if `name` is imported, else once it is (after its code has run)."""
        with self._lock:
            module = sys.modules.get(name)
            if module is not None and not _initialising(module):
                self._call(name, callback, module)
                return
            self._waiting.setdefault(name, []).append(callback)
            if self not in sys.meta_path:
                sys.meta_path.insert(0, self)

    def before(self, name: str, callback: Callable[[str], None]) -> None:
        """Call `callback(name)` once, as the import of `name` begins (never, if it is imported already)."""
        with self._lock:
            if name in sys.modules:
                return
            self._starting.setdefault(name, []).append(callback)
            if self not in sys.meta_path:
                sys.meta_path.insert(0, self)

    def close(self) -> None:
        with self._lock:
            self._waiting.clear()
            self._starting.clear()
            if self in sys.meta_path:
                sys.meta_path.remove(self)

    def _take(self, table: dict, name: str) -> list:
        """What waits on `name` in `table`, taken out; the finder off once nothing waits on anything."""
        with self._lock:
            taken = table.pop(name, [])
            if not self._waiting and not self._starting and self in sys.meta_path:
                sys.meta_path.remove(self)
        return taken

    def find_spec(self, fullname, path, target=None):
        for callback in self._take(self._starting, fullname):
            self._call(fullname, callback, fullname)
        if fullname not in self._waiting:
            return None
        for finder in list(sys.meta_path):
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                break
        else:
            return None
        if spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        spec.loader = _Then(spec.loader, self, fullname)
        return spec

    def _ran(self, name: str, module) -> None:
        for callback in self._take(self._waiting, name):
            self._call(name, callback, module)

    def _call(self, name: str, callback: Callback, module) -> None:
        try:
            callback(module)
        except Exception as exc:  # the script's import goes on; what the callback would have done is missing, said
            self.failed.append(f"{name}: {type(exc).__name__}: {exc}")
            traceback.print_exc()


class _Then(importlib.abc.Loader):
    """The module's own loader, then the functions waiting on it."""

    def __init__(self, loader, finder: AfterImport, name: str):
        self.loader, self.finder, self.name = loader, finder, name

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module) -> None:
        module.__loader__ = self.loader
        if getattr(module, "__spec__", None) is not None:
            module.__spec__.loader = self.loader
        self.loader.exec_module(module)
        self.finder._ran(self.name, module)


def _initialising(module) -> bool:
    """Whether a module in sys.modules is still running its own code (imported from inside its own import)."""
    spec = getattr(module, "__spec__", None)
    return bool(getattr(spec, "_initializing", False))
