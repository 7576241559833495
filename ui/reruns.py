"""A bound on the reruns one session may ask for, whoever sends them.

Streamlit starts work for every `rerun_script` message a session sends: 3,000 of them in 0.3 s from one client that
never read its replies left `/_stcore/health` unanswered for over two minutes and a new visitor waiting 413 s (a
one-line Streamlit app too: Streamlit's own, so the bound sits in its message handling). Here each session has a
bucket of `BURST` reruns that refills at `RATE` a second; a rerun past it is not started but kept as the session's
latest, and run when the bucket has room again, so what the visitor last asked for still runs, once, and a storm
costs the server no more than `RATE` reruns a second. No page a person clicks through comes near the bound.

`bound_reruns()` is called by app.py on every run, and by `python -m ui.serve` before the server starts (the Space's
command), so that no message comes before it.
"""

from __future__ import annotations

import asyncio
import threading
import time

RATE = 5.0  # reruns a second, once the burst is spent
BURST = 20  # reruns at once (a person typing into a number box sends a few a second)

_INSTALLED = threading.Lock()
_installed: list[bool] = []


class Bucket:
    """One session's reruns: the tokens left, when they were counted, and the latest rerun held back."""

    def __init__(self, now: float):
        self.tokens, self.at = float(BURST), now
        self.held = None  # the latest rerun message past the bound, run when a token comes

    def refill(self, now: float) -> None:
        self.tokens = min(float(BURST), self.tokens + (now - self.at) * RATE)
        self.at = now

    def take(self, now: float) -> bool:
        """A token for a rerun now, if one is left."""
        self.refill(now)
        if self.tokens >= 1:
            self.tokens -= 1
            return True
        return False

    def wait(self, now: float) -> float:
        """Seconds until the next token."""
        self.refill(now)
        return max(0.0, (1 - self.tokens) / RATE)


def bound_reruns() -> None:
    """Install the bound on Streamlit's handling of a session's messages (once per process)."""
    with _INSTALLED:
        if _installed:
            return
        from streamlit.runtime.app_session import AppSession

        handle = AppSession.handle_backmsg

        def bounded(self, msg) -> None:
            if msg.WhichOneof("type") != "rerun_script":
                return handle(self, msg)
            now = time.monotonic()
            bucket = self.__dict__.setdefault("_debugger_reruns", Bucket(now))
            if bucket.held is None and bucket.take(now):
                return handle(self, msg)
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:  # not on the server's event loop (no server): nothing to protect
                return handle(self, msg)
            if bucket.held is None:  # else the held one is replaced by this later one: only the latest runs
                loop.call_later(bucket.wait(now), _release, self, bucket, handle)
            bucket.held = msg
            return None

        AppSession.handle_backmsg = bounded
        _installed.append(True)


def _release(session, bucket: Bucket, handle) -> None:
    """Run the held rerun once a token has come (later, if it has not yet)."""
    now = time.monotonic()
    if bucket.held is None:
        return
    if not bucket.take(now):
        asyncio.get_running_loop().call_later(bucket.wait(now), _release, session, bucket, handle)
        return
    msg, bucket.held = bucket.held, None
    handle(session, msg)
