"""How far one whole computation is, and how long it has left, told as it goes.

A call of the runner plans its work in training steps (each unit that trains says how many it will take, before it
starts), and every training step, wherever it runs, counts itself here (`step`). The time left is the steps that
remain times the measured cost of a step, the first step of each traced copy (which traces the train step and costs
many steps' time) left out of that pace and counted apart. Nothing is estimated before a few steps have a pace to go
on, and a computation whose plan is spent says nothing of time rather than guess. An earlier computation of the same
run on this machine (`Work(key=...)`: the same model, batch and length), in this process or an earlier one (a trace's
child, the app started again: `PACES_FILE` in the cache folder), lends its measured pace and tracing time from the
first second, until the computation has a pace of its own.

What is running is said at once (`doing`), and said again every `heartbeat` seconds while a step or a load takes
long, so a page, a trace or a notebook never goes long without a line.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import os
import threading
import time
from typing import Callable

from diagnostics.i18n import Text, msg

# A report of progress: (share of the planned steps done, what runs now, seconds left or None).
Report = Callable[[float, Text, "float | None"], None]

# Steps timed after the first traced one before any time is told: one step is noise, two are a pace.
MIN_PACED_STEPS = 2
# What tracing a copy's train step costs, in steps, before one has been measured.
TRACE_STEPS = 10
# The pace of a step and the seconds of a copy's traced first step, as the last computation of each run measured them
# (a run: the same model, batch and length, `Work.key`), newest last; at most `MEASURED_RUNS` runs are kept.
MEASURED: dict[str, tuple[float, float | None]] = {}
MEASURED_RUNS = 64
# Where `MEASURED` outlives the process, in the cache folder: the first computation of a new process (each trace runs
# in one) then has an estimate from its first second where the same run was measured before.
PACES_FILE = "progress-paces.json"
_read_from_disk = [False]
_disk_lock = threading.Lock()


def _paces_path():
    from diagnostics.keras.disk import cache_dir

    return cache_dir() / PACES_FILE


def measured(key: str) -> tuple[float, float | None] | None:
    """The pace and tracing seconds last measured for the run `key`: in this process, else on this machine's disk."""
    with _disk_lock:
        if not _read_from_disk[0]:
            _read_from_disk[0] = True
            try:
                read = json.loads(_paces_path().read_text())
                for run, (pace, traced) in read.items() if isinstance(read, dict) else ():
                    if run not in MEASURED and float(pace) > 0:
                        MEASURED[str(run)] = (float(pace), float(traced) if traced is not None else None)
            except (OSError, ValueError, TypeError):
                pass  # none kept, or unreadable: no estimate until a pace is measured
        return MEASURED.get(key)


def remember(key: str, pace: float, traced: float | None) -> None:
    """Keep a run's measured pace, newest last, here and on disk (written whole, at most `MEASURED_RUNS` runs)."""
    measured(key)  # what the disk holds joins first, so writing keeps it
    with _disk_lock:
        MEASURED.pop(key, None)
        MEASURED[key] = (pace, traced)
        while len(MEASURED) > MEASURED_RUNS:
            MEASURED.pop(next(iter(MEASURED)))
        try:
            path = _paces_path()
            path.parent.mkdir(parents=True, exist_ok=True)
            temporary = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}")
            temporary.write_text(json.dumps(MEASURED))
            temporary.replace(path)
        except OSError:
            pass  # no estimate in the next process; this one goes on


class Work:
    """The progress of one computation: planned and done steps, the pace of a step, and what runs now.

    Args:
        report: called with (fraction, text, seconds left or None) at each step, each new text, and each heartbeat.
        clock: seconds, monotonic (a test passes its own).
        heartbeat: seconds after which an unchanged status is reported again from a thread (None: never).
    """

    def __init__(self, report: Report, *, clock: Callable[[], float] = time.monotonic,
                 heartbeat: float | None = None, key: str | None = None):
        self.report, self.clock, self.heartbeat = report, clock, heartbeat
        self.key = key  # the run whose pace an earlier computation measured (`MEASURED`), and this one keeps
        self.known = measured(key) if key is not None else None  # (pace, a traced first step's seconds)
        self.planned = 0.0  # steps the whole computation plans
        self.done = 0.0
        self.traces_planned = 0  # traced copies planned, each one's first step costing more than a step
        self.traces_done = 0
        self.paced_seconds = 0.0  # time spent in steps other than a trace's first
        self.paced_steps = 0.0
        self.trace_seconds: list[float] = []  # the first step of each traced copy, tracing included
        self.text: Text = msg("Starting")
        self._last = self._said = clock()
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ what the work says of itself

    def plan(self, steps: float, traces: int = 0) -> None:
        """More work to come: `steps` training steps, of which `traces` are a new copy's first (traced) step."""
        with self._lock:
            self.planned = max(0.0, self.planned + steps)  # less: steps spared (a range test that stopped)
            self.traces_planned += traces

    def doing(self, text: Text) -> None:
        """What runs now; reported at once."""
        with self._lock:
            self.text = text
        self.emit()

    def step(self, count: float = 1, *, traced: bool = False) -> None:
        """`count` steps done since the last one; `traced`: the first step of a new copy, whose time is tracing's."""
        now = self.clock()
        with self._lock:
            seconds, self._last = now - self._last, now
            if traced:
                self.trace_seconds.append(seconds)
                self.traces_done += 1
            else:
                self.paced_seconds += seconds
                self.paced_steps += count
            self.done += count
        self.emit()

    def idle(self) -> None:
        """Time since the last step that is not a step's (building batches, scoring): left out of the next step."""
        with self._lock:
            self._last = self.clock()

    # ------------------------------------------------------------------ what is told

    def fraction(self) -> float:
        with self._lock:
            return min(1.0, self.done / self.planned) if self.planned else 0.0

    def pace(self) -> float | None:
        """Seconds a step, past the traced first ones; before `MIN_PACED_STEPS` of them, an earlier computation's of
        the same run (None without one)."""
        with self._lock:
            if self.paced_steps >= MIN_PACED_STEPS:
                return self.paced_seconds / self.paced_steps
            return self.known[0] if self.known else None

    def left(self) -> float | None:
        """Seconds left: the remaining steps at the pace, plus what tracing the copies still to come costs beyond a
        step (as the traced ones so far took); less the time the step under way has run, never below a step. None
        without a pace, once the planned steps are done (what remains then is not in the plan), and while the step
        under way has run longer than the whole estimate: its pace no longer says anything (a step seen to stall
        for 40 s on a loaded machine was told as "about 1 s left" throughout), so no time is told until it ends."""
        pace = self.pace()
        with self._lock:
            remaining = self.planned - self.done
            if pace is None or remaining <= 0:
                return None
            traces = max(0, self.traces_planned - self.traces_done)
            traced = sum(self.trace_seconds) / len(self.trace_seconds) if self.trace_seconds else \
                self.known[1] if self.known and self.known[1] is not None else None
            extra = max(0.0, traced - pace) if traced is not None else TRACE_STEPS * pace
            seconds = remaining * pace + traces * extra
            under_way = self.clock() - self._last
        if under_way > seconds:
            return None
        return max(pace * min(remaining, 1.0), seconds - under_way)

    def emit(self) -> None:
        self._said = self.clock()
        self.report(self.fraction(), self.text, self.left())

    # ------------------------------------------------------------------ a line every so often

    def __enter__(self) -> "Work":
        if self.heartbeat:
            self._thread = threading.Thread(target=self._beat, daemon=True, name="progress-heartbeat")
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stopped.set()
        if self._thread is not None:
            self._thread.join(timeout=1.0)
        if self.key is not None and self.paced_steps >= MIN_PACED_STEPS:  # the next computation of the run starts here
            remember(self.key, self.paced_seconds / self.paced_steps,
                     sum(self.trace_seconds) / len(self.trace_seconds) if self.trace_seconds else None)

    def _beat(self) -> None:
        while not self._stopped.wait(min(1.0, self.heartbeat)):
            if self.clock() - self._said >= self.heartbeat:
                try:
                    self.emit()
                except Exception:  # a report that fails (a closed notebook output) must not end the heartbeat
                    pass


_current: contextvars.ContextVar[Work | None] = contextvars.ContextVar("progress_work", default=None)


def current() -> Work | None:
    """The computation this context counts its steps into, or None."""
    return _current.get()


@contextlib.contextmanager
def counting(work: Work):
    """Steps taken within count into `work` (`step`, `doing`, `plan` reach it from anywhere below)."""
    token = _current.set(work)
    try:
        with work:
            yield work
    finally:
        _current.reset(token)


def step(count: float = 1, *, traced: bool = False) -> None:
    """Count a training step into the current computation, if any."""
    if (work := _current.get()) is not None:
        work.step(count, traced=traced)


def doing(text: Text) -> None:
    """Say what runs now in the current computation, if any."""
    if (work := _current.get()) is not None:
        work.doing(text)


def idle() -> None:
    if (work := _current.get()) is not None:
        work.idle()


def plan(steps: float, traces: int = 0) -> None:
    if (work := _current.get()) is not None:
        work.plan(steps, traces)


def run_key(config) -> str | None:
    """What a training step's time depends on, for `Work.key`: the model and the batches' size and length."""
    if config is None:
        return None
    return "|".join(str(getattr(config, field, "")) for field in ("checkpoint", "task", "batch_size", "max_length"))


def no_report(fraction: float, text: Text, left: float | None) -> None:
    return None


class Lines:
    """When progress is worth a line in a terminal or a log: nothing for work done within `every` seconds, then a
    new text a second after the last line (the copy being traced says so while it is traced), the same text again
    every `every` seconds; a line a check or a step would flood the screen."""

    def __init__(self, every: float = 3.0, new_after: float = 1.0):
        self.every, self.new_after = every, new_after
        self.at, self.text = time.monotonic(), None

    def due(self, text: str) -> bool:
        now = time.monotonic()
        wait = min(self.new_after, self.every) if self.text is not None and text != self.text else self.every
        if now - self.at < wait:
            return False
        self.at, self.text = now, text
        return True


def in_sequence(planned: list[tuple[float, bool]], current: int, fraction: float, left: float | None
                ) -> tuple[float, float | None]:
    """How far a sequence of computations run one after another is, and how long all of it has left: `planned` is
    each one's (steps, whether it traces a copy of its own), `current` the one running, `fraction` of its steps done,
    `left` its own estimate. The computations still to come cost their steps at the current one's pace, and a trace
    `TRACE_STEPS`; None without a pace (the current one has none, or plans no steps)."""
    total = sum(steps for steps, _ in planned) or 1.0
    steps = planned[current][0]
    done = sum(steps for steps, _ in planned[:current]) + fraction * steps
    remaining = (1.0 - fraction) * steps
    if left is None or remaining <= 0:
        return min(1.0, done / total), None
    pace = left / remaining
    later = sum(count + (TRACE_STEPS if traces else 0) for count, traces in planned[current + 1:])
    return min(1.0, done / total), left + later * pace
