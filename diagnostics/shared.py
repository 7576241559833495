"""Results shared by configuration: every stage's results kept by the full configuration and settings, bounded in
memory, computed once when many ask at once (single flight), with the computation's progress visible to every
waiter. A room of thirty opening one link waits for one computation, not thirty."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Callable, Hashable

from diagnostics.config import RunConfig
from diagnostics.hyperparams import SweepSettings
from diagnostics.i18n import Text, msg
from diagnostics.overfit import DEFAULT_EPOCHS
from diagnostics.result import CheckResult

Progress = Callable[[float, str], None]

# What each kind of job runs, in the walk's order; "setup" and "training" are the Hyperparameters stage's parts.
KINDS = ("data", "learnability", "model", "setup", "training", "overfit")
STAGE_OF = {"data": "data", "learnability": "data", "model": "model", "setup": "hparams", "training": "hparams",
            "overfit": "overfit"}
NEEDS_MODEL = {"learnability", "model", "setup", "training", "overfit"}


@dataclass(frozen=True)
class Job:
    """One unit of shared work: a kind of job on a configuration with its settings; its key for the store.

    Attributes:
        settings: the sweep's `SweepSettings` for "training"; `(epochs, rate, best_rate)` for "overfit"; else ().
    """

    kind: str
    config: RunConfig
    settings: Any = ()

    @property
    def stage(self) -> str:
        return STAGE_OF[self.kind]

    def run(self, run, progress: Progress | None = None) -> list[CheckResult]:
        """The job's results on `run` (a RunContext of this configuration)."""
        from diagnostics import pipeline

        if self.kind == "data":
            return pipeline.data_stage(run)
        if self.kind == "learnability":
            return pipeline.learnability_stage(run)
        if self.kind == "model":
            return pipeline.model_stage(run)
        if self.kind == "setup":
            return pipeline.hparams_stage(run, parts=("setup",))
        if self.kind == "training":
            return pipeline.hparams_stage(run, sweep=self.settings, parts=("training",), progress=progress)
        epochs, rate, best_rate = self.settings
        return pipeline.overfit_stage(run, epochs=epochs, rate=rate, best_rate=best_rate, progress=progress)


def training_job(config: RunConfig, settings: SweepSettings = SweepSettings()) -> Job:
    return Job("training", config, settings)


def overfit_job(config: RunConfig, epochs: int = DEFAULT_EPOCHS, rate: float | None = None,
                best_rate: float | None = None) -> Job:
    return Job("overfit", config, (int(epochs), rate, best_rate))


@dataclass
class Entry:
    """A finished computation: its results, when it finished (wall clock) and how long it took."""

    results: list[CheckResult]
    computed_at: float
    seconds: float

    def age(self, now: float | None = None) -> Text:
        """'just now', '2 minutes ago', '1 hour ago'."""
        seconds = max(0.0, (time.time() if now is None else now) - self.computed_at)
        if seconds < 45:
            return msg("just now")
        size, unit = (60, "minute") if seconds < 45 * 60 else (3600, "hour") if seconds < 36 * 3600 else (86400, "day")
        count = max(1, round(seconds / size))
        if count == 1:
            return {"minute": msg("1 minute ago"), "hour": msg("1 hour ago"), "day": msg("1 day ago")}[unit]
        return {"minute": msg("{count} minutes ago", count=count), "hour": msg("{count} hours ago", count=count),
                "day": msg("{count} days ago", count=count)}[unit]


@dataclass
class Flight:
    """A computation under way; every session asking for its key waits on it and reads its progress."""

    started: float = field(default_factory=time.monotonic)
    fraction: float = 0.0
    text: str = "Starting"
    waiters: int = 0
    done: threading.Event = field(default_factory=threading.Event)
    entry: Entry | None = None
    error: BaseException | None = None

    def report(self, fraction: float, text: str) -> None:
        self.fraction, self.text = min(max(float(fraction), 0.0), 1.0), text

    def elapsed(self) -> float:
        return time.monotonic() - self.started


class SharedResults:
    """The store: finished entries (least recently used dropped past `max_entries`) and flights under way.

    A computation runs in a thread of its own, not in the asking session's, so a session that leaves (a rerun, a
    closed tab) never stops the work others wait for. An error is handed to every waiter and never kept, so the
    next request tries again.
    """

    def __init__(self, max_entries: int = 64):
        self.max_entries = max_entries
        self.runs = 0  # computations started: what single flight keeps at one per key
        self._entries: OrderedDict[Hashable, Entry] = OrderedDict()
        self._flights: dict[Hashable, Flight] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: Hashable) -> Entry | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None:
                self._entries.move_to_end(key)
            return entry

    def flight(self, key: Hashable) -> Flight | None:
        """The computation of `key` under way, if any."""
        with self._lock:
            return self._flights.get(key)

    def start(self, key: Hashable, compute: Callable[[Progress], list[CheckResult]], *,
              again: bool = False) -> Flight:
        """The flight of `key`: one already under way, a finished one holding the kept entry (unless `again`), or a
        new computation of `compute(progress)` in its own thread."""
        with self._lock:
            flight = self._flights.get(key)
            if flight is None and not again and key in self._entries:
                flight = Flight(fraction=1.0, text="Done", entry=self._entries[key])
                flight.done.set()
                self._entries.move_to_end(key)
                return flight
            if flight is None:
                flight = self._flights[key] = Flight()
                self.runs += 1
                threading.Thread(target=self._compute, args=(key, compute, flight), daemon=True,
                                 name=f"shared-results-{self.runs}").start()
            flight.waiters += 1
            return flight

    def _compute(self, key: Hashable, compute, flight: Flight) -> None:
        try:
            results = compute(flight.report)
            flight.entry = Entry(results, time.time(), flight.elapsed())
        except BaseException as exc:  # handed to every waiter; a thread's exception would otherwise vanish
            flight.error = exc
        with self._lock:
            if flight.entry is not None:
                self._entries[key] = flight.entry
                self._entries.move_to_end(key)
                while len(self._entries) > self.max_entries:
                    self._entries.popitem(last=False)
            self._flights.pop(key, None)
        flight.done.set()

    def result(self, key: Hashable, compute: Callable[[Progress], list[CheckResult]], *, again: bool = False,
               progress: Progress | None = None, poll_s: float = 0.25) -> Entry:
        """The entry of `key`, computing it once however many ask at once; `progress(fraction, text)` is called
        while waiting, with the computation's own progress whoever started it.

        Raises:
            whatever the computation raised.
        """
        flight = self.start(key, compute, again=again)
        while not flight.done.wait(poll_s):
            if progress is not None:
                progress(flight.fraction, flight.text)
        if flight.error is not None:
            raise flight.error
        return flight.entry

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
