"""A bound on the reruns one session may ask for, whoever sends them.

Streamlit starts work for every `rerun_script` message a session sends: 3,000 of them in 0.3 s from one client that
never read its replies left `/_stcore/health` unanswered for over two minutes and a new visitor waiting 413 s (a
one-line Streamlit app too: Streamlit's own, so the bound sits in its message handling). Here each session has a
bucket of `BURST` reruns that refills at `RATE` a second; a rerun past it is not started but kept as the session's
latest, and run when the bucket has room again, so what the visitor last asked for still runs, once, and a storm
costs the server no more than `RATE` reruns a second. No page a person clicks through comes near the bound.

One bucket a session does not bound a room: 40 sessions each sending 21 identical reruns left the health endpoint
unanswered for over 60 s twice, and a new visitor's page opened after 134 s. The server has a bucket of its own
(`SERVER_BURST` reruns, refilling at `SERVER_RATE` a second), and a rerun starts only with a token from both; past
either, the session's latest is held as above, so a room's storm costs the server at most `SERVER_RATE` reruns a
second and one held rerun a session.

`bound_reruns()` is called by app.py on every run, and by `python -m ui.serve` before the server starts (the Space's
command), so that no message comes before it.
"""

from __future__ import annotations

import asyncio
import random
import threading
import time

RATE = 5.0  # reruns a second, once the burst is spent
BURST = 20  # reruns at once (a person typing into a number box sends a few a second)
# The whole server's: page runs share its cores and Python's lock with the thread that answers every request, so
# 40 runs started at once held /_stcore/health past 10 s on two cores; 10 at once and 5 a second more is what two
# cores keep answering beside (a room of 40 clicking at once waits a few seconds for the last page).
SERVER_RATE = 5.0
SERVER_BURST = 10

_INSTALLED = threading.Lock()
_installed: list[bool] = []


class Bucket:
    """One session's reruns (or the server's): the tokens left, when they were counted, and the latest rerun held
    back."""

    def __init__(self, now: float, rate: float = RATE, burst: int = BURST):
        self.rate, self.burst = rate, burst
        self.tokens, self.at = float(burst), now
        self.held = None  # the latest rerun message past the bound, run when a token comes

    def refill(self, now: float) -> None:
        self.tokens = min(float(self.burst), self.tokens + (now - self.at) * self.rate)
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
        return max(0.0, (1 - self.tokens) / self.rate)


SERVER: list[Bucket] = []  # the server's bucket, made on the first rerun


def admitted(bucket: Bucket, now: float) -> bool:
    """A token from the session's bucket and the server's, or neither taken."""
    if not SERVER:
        SERVER.append(Bucket(now, SERVER_RATE, SERVER_BURST))
    if not bucket.take(now):
        return False
    if SERVER[0].take(now):
        return True
    bucket.tokens += 1  # the session's token goes back: the server's bound held it
    return False


def wait_for(bucket: Bucket, now: float) -> float:
    """Seconds until both buckets have a token."""
    return max(bucket.wait(now), SERVER[0].wait(now) if SERVER else 0.0)


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
            if bucket.held is None and admitted(bucket, now):
                return handle(self, msg)
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:  # not on the server's event loop (no server): nothing to protect
                return handle(self, msg)
            if bucket.held is None:  # else the held one is replaced by this later one: only the latest runs
                loop.call_later(wait_for(bucket, now), _release, self, bucket, handle)
            bucket.held = msg
            return None

        AppSession.handle_backmsg = bounded
        _installed.append(True)


def _release(session, bucket: Bucket, handle) -> None:
    """Run the held rerun once a token has come (later, if it has not yet)."""
    now = time.monotonic()
    if bucket.held is None:
        return
    if not admitted(bucket, now):
        # A little later than both buckets' next token, spread over the sessions waiting, so they do not all wake
        # for the same token.
        asyncio.get_running_loop().call_later(wait_for(bucket, now) * (1 + random.random()), _release, session,
                                              bucket, handle)
        return
    msg, bucket.held = bucket.held, None
    handle(session, msg)
