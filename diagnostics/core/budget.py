"""Time: the budget of one run in hosted mode (checks past the deadline stop with a `skip` saying so), and how the
time a computation has left is said (`core.progress` estimates it)."""

from __future__ import annotations

import contextlib
import contextvars
import time
from dataclasses import dataclass
from typing import Callable

from diagnostics.i18n import Text, msg
from diagnostics.config.limits import hosted


class BudgetExceeded(BaseException):
    """The run's time budget ran out. A BaseException, so checks that turn errors into findings let it through."""


@dataclass
class Budget:
    """One run's deadline; `exceeded` once a check found it past (its results are then cut short)."""

    deadline: float
    seconds: float
    exceeded: bool = False


_deadline: contextvars.ContextVar[Budget | None] = contextvars.ContextVar("run_deadline", default=None)
# Why the computation running in this context must stop at its next step, asked at each step (None: go on).
_stop: contextvars.ContextVar[Callable[[], str | None] | None] = contextvars.ContextVar("run_stop", default=None)


@contextlib.contextmanager
def stoppable(reason: Callable[[], str | None]):
    """Within it, `check_deadline` (called before each check and at each training step or epoch) also stops the
    work when `reason()` says why (everyone waiting for it left, or it was given up), with that reason."""
    token = _stop.set(reason)
    try:
        yield
    finally:
        _stop.reset(token)


@contextlib.contextmanager
def run_budget():
    """Start the per-run time budget in hosted mode; nested runs share the outermost one's deadline. Yields the
    budget (None outside hosted mode), whose `exceeded` says afterwards whether it ran out."""
    limits = hosted()
    current = _deadline.get()
    if limits is None or current is not None:
        yield current
        return
    budget = Budget(time.monotonic() + limits.run_budget_s, limits.run_budget_s)
    token = _deadline.set(budget)
    try:
        yield budget
    finally:
        _deadline.reset(token)


def check_deadline(where: str = "") -> None:
    """Raise BudgetExceeded when the current run is past its deadline (hosted mode), or has a reason to stop
    (`stoppable`)."""
    stop = _stop.get()
    if stop is not None and (reason := stop()) is not None:
        raise BudgetExceeded(f"Stopped{' ' + where if where else ''}: {reason}.")
    budget = _deadline.get()
    if budget is not None and time.monotonic() > budget.deadline:
        budget.exceeded = True
        raise BudgetExceeded(
            f"Stopped: this run used up hosted mode's time budget of {budget.seconds:g} s"
            + (f" {where}" if where else "")
            + ". Try fewer rates, steps or epochs, or run the app on your own machine."
        )


def stop_asked() -> str | None:
    """Why the computation running in this context must stop, when its `stoppable` hook says so (None: go on); for
    work done in another process, which hears the reason from here (`serve.worker`)."""
    stop = _stop.get()
    return stop() if stop is not None else None


def exhaust() -> None:
    """Mark the current run's budget as run out: work done for it in another process ran out of its own."""
    budget = _deadline.get()
    if budget is not None:
        budget.exceeded = True


def time_left_text(seconds: float) -> Text:
    """"about 3 min left" from a minute and a half on, else "about 40 s left"."""
    if seconds >= 90:
        return msg("about {minutes} min left", minutes=round(seconds / 60))
    return msg("about {seconds} s left", seconds=max(1, round(seconds)))
