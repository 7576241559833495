"""Results shared by configuration: every stage's results kept by the full configuration and settings, bounded in
memory, computed once when many ask at once (single flight), with the computation's progress visible to every
waiter. A room of thirty opening one link waits for one computation, not thirty."""

from __future__ import annotations

import math
import os
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field, replace
from typing import Callable, Hashable

from diagnostics.config import limits

from diagnostics.walk import registry
from diagnostics.config.run import RunConfig
from diagnostics.core.errors import InputError
from diagnostics.config.training import DEFAULT_EPOCHS, SweepSettings
from diagnostics.i18n import Text, msg, msgn
from diagnostics.core.result import CheckResult
from diagnostics.walk.runner import Settings, run_units

Progress = Callable[[float, str, "float | None"], None]  # (fraction, text, seconds left): `core.progress.Report`

# The units of the walk a job may run, in walk order, with each one's stage and whether it loads the model.
KINDS = tuple(registry.UNITS)
STAGE_OF = {unit.name: unit.stage for unit in registry.UNITS.values()}
NEEDS_MODEL = {unit.name for unit in registry.UNITS.values() if unit.heavy}


@dataclass(frozen=True)
class Job:
    """One unit of shared work: a unit of the walk on a configuration with its settings; its key for the store.

    Attributes:
        kind: the unit's name (`registry.UNITS`).
        settings: a `runner.Settings` holding what the unit takes (the sweep for "training"; epochs, rate and the
            sweep's best rate for "overfit"); the defaults otherwise, so equal jobs have equal keys.
    """

    kind: str
    config: RunConfig
    settings: Settings = Settings()

    @property
    def stage(self) -> str:
        return STAGE_OF[self.kind]

    def run(self, run, progress: Progress | None = None) -> list[CheckResult]:
        """The job's results on `run` (a RunContext of this configuration), from the one runner."""
        return run_units(run, (self.kind,), replace(self.settings, asked=(self.kind,)), progress)  # a page asks


def training_job(config: RunConfig, settings: SweepSettings = SweepSettings()) -> Job:
    return Job("training", config, Settings(sweep=settings))


def overfit_job(config: RunConfig, epochs: int = DEFAULT_EPOCHS, rate: float | None = None,
                best_rate: float | None = None, configured_broke: bool | None = None) -> Job:
    """The overfit test: at the configured rate (`rate` None; at the checkpoint's usual one when the sweep measured
    the configured one as broken), or rerun at `rate`."""
    return Job("overfit", config, Settings(epochs=int(epochs), rate=rate, best_rate=best_rate,
                                           configured_broke=configured_broke))


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
        if unit == "minute":
            return msgn("{count} minute ago", "{count} minutes ago", count)
        if unit == "hour":
            return msgn("{count} hour ago", "{count} hours ago", count)
        return msgn("{count} day ago", "{count} days ago", count)


@dataclass
class Flight:
    """A computation under way; every session asking for its key waits on it and reads its progress.

    Attributes:
        heavy: it trains or copies a model, so it waits for one of the server's heavy slots.
        owners: the sessions that asked for it (a session may have only so many heavy ones waiting).
        partial: the run's time budget cut it short: its results are shown to its waiters but not kept.
        abandoned: it outlived its time limit and was replaced; whatever it returns is dropped.
        left_at: when its last waiter left (None while someone waits): past the store's grace, it stops at its next
            step (a rerun within the grace joins it again).
    """

    started: float = field(default_factory=time.monotonic)
    fraction: float = 0.0
    text: str = "Starting"
    waiters: int = 0
    done: threading.Event = field(default_factory=threading.Event)
    entry: Entry | None = None
    error: BaseException | None = None
    heavy: bool = False
    owners: set = field(default_factory=set)
    pin: bool = False
    partial: bool = False
    abandoned: bool = False
    admitted: float | None = None  # when it began to compute (a heavy one waits in the queue before)
    left_at: float | None = None
    seconds_left: float | None = None  # the computation's estimate of its seconds left, when it last reported
    seconds_left_at: float = 0.0

    def report(self, fraction: float, text: str, left: float | None = None) -> None:
        """The computation's progress (`core.progress.Work`): how far, what runs, and its own estimate of the seconds
        left (None while it has no pace to go on)."""
        if not self.abandoned:
            self.fraction, self.text = min(max(float(fraction), 0.0), 1.0), text
            self.seconds_left, self.seconds_left_at = left, time.monotonic()

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def remaining(self) -> float | None:
        """Seconds left, the computation's last estimate less the time since it said it; None when it has none."""
        if self.seconds_left is None:
            return None
        return max(1.0, self.seconds_left - (time.monotonic() - self.seconds_left_at))

    def stuck(self, limit_s: float) -> bool:
        """Computing for longer than `limit_s` (time in the queue does not count)."""
        return self.admitted is not None and not self.done.is_set() and time.monotonic() - self.admitted > limit_s


class Busy(InputError):
    """A visitor asked for more heavy computations than they may have waiting at once, or the queue is full."""


def heavy_capacity() -> int:
    """How many heavy computations (model copies that train) this server runs at once: $DEBUGGER_HEAVY_JOBS, else
    one for every two cores and every 8 GiB of memory, at least 1 and at most 4 (1 on a free 2-vCPU, 16 GB Space,
    where one 110M-parameter copy takes 1.5 to 2 GB and a second would halve the speed of both)."""
    import psutil

    if os.environ.get("DEBUGGER_HEAVY_JOBS", "").strip():
        return max(1, int(os.environ["DEBUGGER_HEAVY_JOBS"]))
    cores = os.cpu_count() or 1
    memory_gib = psutil.virtual_memory().total / 2**30
    return max(1, min(cores // 2, int(memory_gib // 8), 4))


def time_limit() -> float:
    """How long a computation may run before it counts as stuck: the hosted run budget plus a margin for loading,
    else $DEBUGGER_STALE_S (two hours by default: a long sweep on a laptop's CPU)."""
    caps = limits.hosted()
    if caps is not None:
        return caps.run_budget_s + 120.0
    return float(os.environ.get("DEBUGGER_STALE_S") or 7200.0)


def over_time(seconds: float, limit: float):
    """What a computation given up past its time limit tells its waiters (the store's, and a worker's)."""
    return msg("This computation ran for {seconds:.0f} s, past the {limit:.0f} s it may take, and was given up; ask "
               "again to start it afresh.", seconds=seconds, limit=limit)


class SharedResults:
    """The store: finished entries and flights under way.

    Bounded in entries and in bytes (pickled size), least recently used dropped first, pinned entries (the
    presenter's warm-up) only when pins alone pass the bounds; in hosted mode nothing is pinned (a visitor's
    warm-up would keep results for any checkpoint). A computation runs in a thread of its own, not in the asking
    session's, so a session that leaves (a rerun, a closed tab) never stops the work others wait for. Heavy
    computations are admitted `heavy_slots` at a time, the rest queued in order with their place shown to their
    waiters; each session may have `per_session` heavy ones queued or running. An error is handed to every waiter
    and never kept, so the next request tries again; so are results cut short by the time budget. A computation
    older than `time_limit` is abandoned when asked for again, and a fresh one starts.
    """

    def __init__(self, max_entries: int = 64, *, max_bytes: int = 256 * 2**20, heavy_slots: int | None = None,
                 per_session: int = 2, time_limit_s: float | None = None, max_queue: int | None = None,
                 leave_grace_s: float = 15.0):
        self.max_entries, self.max_bytes, self.per_session = max_entries, max_bytes, per_session
        self.heavy_slots = heavy_slots or heavy_capacity()
        self.max_queue = max_queue if max_queue is not None else 8 * self.heavy_slots
        self.leave_grace_s = leave_grace_s
        self._durations: list[float] = []  # the last heavy computations' seconds, for the full queue's message
        self.time_limit_s = time_limit_s
        self.runs = 0  # computations started: what single flight keeps at one per key
        self.heavy_peak = 0  # the most heavy computations that ever ran at once
        self._entries: OrderedDict[Hashable, Entry] = OrderedDict()
        self._sizes: dict[Hashable, int] = {}
        self._pinned: set[Hashable] = set()
        self._flights: dict[Hashable, Flight] = {}
        self._queue: list[Flight] = []
        self._running: dict[Hashable, Flight] = {}  # the heavy flights holding a slot, by key
        self._lock = threading.Lock()
        self._slots = threading.Condition(self._lock)

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def nbytes(self) -> int:
        return sum(self._sizes.values())

    def limit_s(self) -> float:
        return self.time_limit_s if self.time_limit_s is not None else time_limit()

    def get(self, key: Hashable) -> Entry | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None:
                self._entries.move_to_end(key)
            return entry

    def flight(self, key: Hashable) -> Flight | None:
        """The computation of `key` under way, if any (one past its time limit counts as none)."""
        with self._lock:
            flight = self._flights.get(key)
            return flight if flight is not None and not flight.stuck(self.limit_s()) else None

    def start(self, key: Hashable, compute: Callable[[Progress], list[CheckResult]], *, again: bool = False,
              heavy: bool = False, owner: Hashable | None = None, pin: bool = False) -> Flight:
        """The flight of `key`: one already under way (joined), a finished one holding the kept entry (unless
        `again`), or a new computation of `compute(progress)` in its own thread, queued first when `heavy`.

        Raises:
            Busy: `owner` already has `per_session` heavy computations queued or running.
        """
        pin = pin and limits.hosted() is None  # a presenter's warm-up only: hosted visitors pin nothing
        with self._lock:
            flight = self._flights.get(key)
            if flight is not None and flight.stuck(self.limit_s()):
                self._abandon(key, flight)
                flight = None
            if flight is None and not again and key in self._entries:
                flight = Flight(fraction=1.0, text="Done", entry=self._entries[key])
                flight.done.set()
                self._entries.move_to_end(key)
                if pin:
                    self._pinned.add(key)
                return flight
            if flight is None:
                if heavy and owner is not None and self._owned(owner) >= self.per_session:
                    raise Busy(msg("You already have {count} computations waiting or running on this server; this "
                                   "one can start when one of them is done.", count=self._owned(owner)))
                if heavy and len(self._queue) >= self.max_queue:
                    raise Busy(self._full())
                flight = self._flights[key] = Flight(heavy=heavy, pin=pin)
                if heavy:
                    self._queue.append(flight)  # in the order asked, whichever thread starts first
                self.runs += 1
                threading.Thread(target=self._compute, args=(key, compute, flight), daemon=True,
                                 name=f"shared-results-{self.runs}").start()
            flight.waiters += 1
            flight.left_at = None
            flight.pin = flight.pin or pin
            if owner is not None:
                flight.owners.add(owner)
            return flight

    def leave(self, key: Hashable, flight: Flight) -> None:
        """A waiter stops waiting (its page moved on, or its tab closed): with nobody left waiting, an unpinned
        computation stops at its next step once `leave_grace_s` has passed without anyone joining it again."""
        with self._lock:
            flight.waiters -= 1
            if flight.waiters <= 0 and not flight.done.is_set():
                flight.left_at = time.monotonic()

    def stop_reason(self, flight: Flight) -> str | None:
        """Why `flight` must stop at its next step, or None."""
        if flight.abandoned:
            return "it ran past its time limit and was given up"
        if not flight.pin and flight.waiters <= 0 and flight.left_at is not None \
                and time.monotonic() - flight.left_at > self.leave_grace_s:
            return "everyone waiting for it left"
        return None

    def _full(self):
        """The message for a heavy computation asked for while the queue is full, with when to try again when the
        last computations' durations say it."""
        if self._durations:
            minutes = max(1, math.ceil(sum(self._durations) / len(self._durations)
                                       * (len(self._queue) + len(self._running)) / self.heavy_slots / 60))
            return msg("The server is full: {queued} heavy computations are waiting for its {slots} slot(s); try again "
                       "in about {minutes} min.", queued=len(self._queue), slots=self.heavy_slots, minutes=minutes)
        return msg("The server is full: {queued} heavy computations are waiting for its {slots} slot(s); try again "
                   "once some of them are done.", queued=len(self._queue), slots=self.heavy_slots)

    def _owned(self, owner: Hashable) -> int:
        return sum(1 for flight in self._flights.values() if flight.heavy and owner in flight.owners)

    def _abandon(self, key: Hashable, flight: Flight) -> None:
        """Give up on a computation past its time limit (with the lock held): its waiters are told, its slot is
        freed, and whatever it returns later is dropped."""
        flight.abandoned = True
        flight.error = TimeoutError(over_time(time.monotonic() - (flight.admitted or flight.started), self.limit_s()))
        self._flights.pop(key, None)
        if flight in self._queue:
            self._queue.remove(flight)
        if self._running.get(key) is flight:
            del self._running[key]
        self._slots.notify_all()
        flight.done.set()

    def _admit(self, key: Hashable, flight: Flight) -> bool:
        """Wait for a heavy slot, in order, telling the waiters their place (and giving up on a slot's holder that
        is stuck); False when this flight was abandoned meanwhile."""
        with self._slots:
            while not flight.abandoned and not (self._queue[0] is flight and len(self._running) < self.heavy_slots):
                if self.stop_reason(flight) is not None:  # everyone waiting left before it could start
                    self._queue.remove(flight)
                    self._flights.pop(key, None)
                    flight.error = TimeoutError(msg("Nobody was waiting for this computation any more."))
                    self._slots.notify_all()
                    flight.done.set()
                    return False
                for held, holder in list(self._running.items()):
                    if holder.stuck(self.limit_s()):
                        self._abandon(held, holder)
                ahead = self._queue.index(flight) + len(self._running)
                flight.text = msg("Queued: {ahead} heavy computations ahead of this one (this server runs {slots} at "
                                  "once)", ahead=ahead, slots=self.heavy_slots)
                self._slots.wait(0.5)
            if flight.abandoned:
                return False
            self._queue.remove(flight)
            self._running[key] = flight
            self.heavy_peak = max(self.heavy_peak, len(self._running))
            self._write_stats()
            flight.admitted, flight.text = time.monotonic(), "Starting"  # its time limit counts from here
            self._slots.notify_all()
            return True

    def _compute(self, key: Hashable, compute, flight: Flight) -> None:
        from diagnostics.core.budget import run_budget, stoppable

        if flight.heavy and not self._admit(key, flight):
            return
        if flight.admitted is None:
            flight.admitted = time.monotonic()
        try:
            stopped: list[str] = []

            def stop() -> str | None:  # a reason given is a step not taken: the results are cut short
                reason = self.stop_reason(flight)
                stopped.extend([reason] if reason else [])
                return reason

            with run_budget() as budget, stoppable(stop):  # starts at admission: copies and compiles count
                results = compute(flight.report)
            flight.entry = Entry(results, time.time(), time.monotonic() - flight.admitted)
            flight.partial = budget is not None and budget.exceeded or bool(stopped)
        except BaseException as exc:  # handed to every waiter; a thread's exception would otherwise vanish
            flight.error = exc
        with self._slots:
            if self._running.get(key) is flight:
                del self._running[key]
                self._durations = [*self._durations[-9:], time.monotonic() - flight.admitted]
                self._slots.notify_all()
            if flight.abandoned:
                return
            if flight.entry is not None and not flight.partial:
                self._keep(key, flight.entry, flight.pin)
            self._flights.pop(key, None)
        flight.done.set()

    def _write_stats(self) -> None:
        """The heavy-work counters as one JSON line in $DEBUGGER_STATS_FILE when set (bench/shared_server.py reads
        them from a running server), with the lock held."""
        path = os.environ.get("DEBUGGER_STATS_FILE")
        if path:
            import json

            with open(path, "a", encoding="utf-8") as stats:
                stats.write(json.dumps({"heavy_running": len(self._running), "heavy_peak": self.heavy_peak,
                                        "heavy_slots": self.heavy_slots, "queued": len(self._queue),
                                        "runs": self.runs, "entries": len(self._entries)}) + "\n")

    def _keep(self, key: Hashable, entry: Entry, pin: bool) -> None:
        """Keep an entry (with the lock held), then drop the least recently used unpinned ones past the bounds."""
        self._entries[key] = entry
        self._entries.move_to_end(key)
        self._sizes[key] = _size(entry)
        if pin:
            self._pinned.add(key)
        # The least recently used unpinned entries go first; then, when pins alone pass the bounds, the oldest pinned
        # ones: a warm-up is kept before anything else but never grows the store past its bounds.
        for spare_pins in (False, True):
            for old in list(self._entries):
                if len(self._entries) <= self.max_entries and self.nbytes <= self.max_bytes:
                    return
                if old != key and (spare_pins or old not in self._pinned):
                    del self._entries[old]
                    self._sizes.pop(old, None)
                    self._pinned.discard(old)

    def result(self, key: Hashable, compute: Callable[[Progress], list[CheckResult]], *, again: bool = False,
               progress: Progress | None = None, poll_s: float = 0.25, heavy: bool = False,
               owner: Hashable | None = None) -> Entry:
        """The entry of `key`, computing it once however many ask at once; `progress(fraction, text)` is called
        while waiting, with the computation's own progress whoever started it.

        Raises:
            whatever the computation raised; TimeoutError when it outlived its time limit.
        """
        flight = self.start(key, compute, again=again, heavy=heavy, owner=owner)
        while not flight.done.wait(poll_s):
            if progress is not None:
                progress(flight.fraction, flight.text, flight.remaining())
            self.give_up_if_stuck(key, flight)
        if flight.error is not None:
            raise flight.error
        return flight.entry

    def give_up_if_stuck(self, key: Hashable, flight: Flight) -> None:
        """Abandon `flight` when it has run past the time limit, so its waiters stop waiting with a message."""
        with self._lock:
            if flight.stuck(self.limit_s()) and self._flights.get(key) is flight:
                self._abandon(key, flight)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._sizes.clear()
            self._pinned.clear()


def _size(entry: Entry) -> int:
    """An entry's size in bytes, as pickled (its evidence: tables, series)."""
    import pickle

    try:
        return len(pickle.dumps(entry.results, protocol=pickle.HIGHEST_PROTOCOL))
    except Exception:  # something that does not pickle is measured by its text
        return len(repr(entry.results))
