"""The time budget of one run in hosted mode: checks past the deadline stop with a `skip` saying so."""

from __future__ import annotations

import contextlib
import contextvars
import time

from diagnostics.limits import hosted


class BudgetExceeded(BaseException):
    """The run's time budget ran out. A BaseException, so checks that turn errors into findings let it through."""


_deadline: contextvars.ContextVar[tuple[float, float] | None] = contextvars.ContextVar("run_deadline", default=None)


@contextlib.contextmanager
def run_budget():
    """Start the per-run time budget in hosted mode; nested runs share the outermost one's deadline."""
    limits = hosted()
    if limits is None or _deadline.get() is not None:
        yield
        return
    token = _deadline.set((time.monotonic() + limits.run_budget_s, limits.run_budget_s))
    try:
        yield
    finally:
        _deadline.reset(token)


def check_deadline(where: str = "") -> None:
    """Raise BudgetExceeded when the current run is past its deadline (a no-op outside hosted mode)."""
    deadline = _deadline.get()
    if deadline is not None and time.monotonic() > deadline[0]:
        raise BudgetExceeded(
            f"Stopped: this run used up hosted mode's time budget of {deadline[1]:g} s"
            + (f" {where}" if where else "")
            + ". Try fewer rates, steps or epochs, or run the app on your own machine."
        )
