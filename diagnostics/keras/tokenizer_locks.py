"""The lock of one tokenizer object that the app's sessions share: a fast tokenizer's Rust side may not be borrowed
from two threads at once."""

from __future__ import annotations

import threading
from typing import Any
import weakref

_TOKENIZER_LOCKS: "weakref.WeakKeyDictionary[Any, threading.Lock]" = weakref.WeakKeyDictionary()
_TOKENIZER_LOCKS_GUARD = threading.Lock()


def tokenizer_lock(tokenizer) -> threading.Lock:
    """The lock for one tokenizer object shared by the app's sessions.

    A fast tokenizer sets its truncation on the Rust tokenizer before each call, and that object may
    not be borrowed from two threads at once ("RuntimeError: Already borrowed"), so every call into it
    (encoding, decoding) holds this lock.
    """
    with _TOKENIZER_LOCKS_GUARD:
        lock = _TOKENIZER_LOCKS.get(tokenizer)
        if lock is None:
            lock = _TOKENIZER_LOCKS[tokenizer] = threading.Lock()
        return lock


def locked_collator(collator, tokenizer):
    """The collator, holding the tokenizer's lock while it pads (padding reads the pad id from the tokenizer)."""
    def collate(features):
        with tokenizer_lock(tokenizer):
            return collator(features)
    return collate
