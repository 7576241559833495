"""Heavy work in worker processes with a hard memory limit: loading a model and every unit that trains run there, so
a checkpoint that costs more than its estimate ends its own worker, not the server.

Each of the server's heavy slots has one warm worker (TensorFlow imported once, its own bounded loaders). While a
job runs, the server reads the worker's resident memory twenty times a second and ends it past its limit, or past
the job's time limit; the worker also limits its own address space (`RLIMIT_AS`, well above the resident limit: a
backstop for one huge allocation between two readings). A worker ended, or one whose memory grew past half its
limit while idle, is replaced at once. Results come back as the same `CheckResult`s; progress and stop requests
cross the pipe between them.

On in hosted mode; `DEBUGGER_WORKERS=1` or `0` turns it on or off anywhere. `DEBUGGER_WORKER_GIB` sets the limit
(0 or unset: the hosted training cap plus 2 GiB, and at most 80% of the machine's memory shared by the slots).
"""

from __future__ import annotations

import contextlib
import os
import pickle
import queue
import subprocess
import sys
import threading
import time
from multiprocessing.connection import Connection
from pathlib import Path

from diagnostics.config import limits
from diagnostics.core.errors import InputError
from diagnostics.i18n import msg
from diagnostics.serve.memo import kept

WORKERS_ENV = "DEBUGGER_WORKERS"
MEMORY_ENV = "DEBUGGER_WORKER_GIB"
PACKAGE_ROOT = Path(__file__).resolve().parents[2]
POLL_S = 0.05  # how often the server reads a busy worker's memory
STOP_GRACE_S = 30.0  # how long a worker asked to stop may take to reach its next step before it is ended


class WorkerEnded(InputError):
    """A job's worker was ended: past its memory or time limit, or it died; the visitor reads why in one sentence."""


def enabled() -> bool:
    """Whether heavy jobs run in worker processes: $DEBUGGER_WORKERS when set, else in hosted mode only."""
    value = os.environ.get(WORKERS_ENV, "").strip().lower()
    if value:
        return value not in ("0", "false", "no", "off")
    return limits.hosted() is not None


def pool(slots: int) -> "Workers | None":
    """The process's workers, one for each of the server's `slots` heavy slots, when heavy work runs in them."""
    return _pool(slots) if enabled() else None


@kept()
def _pool(slots: int) -> "Workers":
    return Workers(slots)


def shut_down() -> None:
    """End every worker of this process's pools (they would end with it: a test starting afresh)."""
    for workers in list(_pool._values.values()):
        workers.close()
    _pool.clear()


def memory_limit(slots: int) -> int:
    """The most resident memory one worker may hold, in bytes."""
    import psutil

    value = os.environ.get(MEMORY_ENV, "").strip()
    if value:
        try:
            gib = float(value)
        except ValueError:
            gib = float("nan")
        if not 0 <= gib < float("inf"):
            raise InputError(msg("The environment variable {name} must be a number, zero or more, not {text}.",
                                 name=MEMORY_ENV, text=repr(value)))
        if gib > 0:
            return int(gib * 2**30)
    machine = int(0.8 * psutil.virtual_memory().total / max(1, slots))
    caps = limits.hosted()
    return machine if caps is None else min(machine, int((caps.max_training_gib + 2) * 2**30))


def over_time(seconds: float, limit: float):
    from diagnostics.serve.store import over_time as said  # the store's sentence, its module loaded when needed

    return said(seconds, limit)


def _gib(amount: int) -> float:
    return round(amount / 2**30, 2)


class _Worker:
    """One worker process and the two ends of its pipes."""

    def __init__(self, memory: int):
        from_parent, to_child = os.pipe()  # (read, write): the job and stop requests
        from_child, to_parent = os.pipe()  # progress and results
        env = {**os.environ, "MALLOC_ARENA_MAX": "2",  # few malloc arenas: the address-space backstop reads truer
               "PYTHONPATH": os.pathsep.join([str(PACKAGE_ROOT), *filter(None, os.environ.get("PYTHONPATH", "")
                                                                          .split(os.pathsep))])}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "diagnostics.serve.worker", str(from_parent), str(to_parent), str(memory),
             str(os.getpid())], pass_fds=(from_parent, to_parent), env=env, stdin=subprocess.DEVNULL)
        os.close(from_parent)
        os.close(to_parent)
        self.inbox = Connection(from_child, writable=False)
        self.outbox = Connection(to_child, readable=False)
        self.memory = memory
        self.ready = False

    def rss(self) -> int:
        import psutil

        try:
            return psutil.Process(self.process.pid).memory_info().rss
        except psutil.Error:
            return 0

    def end(self) -> None:
        with contextlib.suppress(OSError):
            self.process.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(10)
        for end in (self.inbox, self.outbox):
            with contextlib.suppress(OSError):
                end.close()


class Workers:
    """`count` warm workers, each limited to `memory` bytes resident; a job runs on an idle one (`run`)."""

    def __init__(self, count: int, memory: int | None = None, *, time_limit_s: float | None = None):
        self.count, self.memory = count, memory if memory is not None else memory_limit(count)
        self.time_limit_s = time_limit_s
        self.ended = 0  # workers ended past a limit or found dead (a test and the bench read it)
        self._idle: queue.Queue[_Worker] = queue.Queue()
        self._lock = threading.Lock()
        self._all: list[_Worker] = []
        for _ in range(count):
            self._replace(None)

    def limit_s(self) -> float:
        from diagnostics.serve.store import time_limit  # the store's module imports the walk: not at start-up

        return self.time_limit_s if self.time_limit_s is not None else time_limit()

    def _replace(self, worker: _Worker | None) -> None:
        """End `worker` (when given) and start a fresh one in its place, idle once started."""
        if worker is not None:
            worker.end()
        for _attempt in range(12):  # a server short of memory may fail to start one for a while
            try:
                fresh = _Worker(self.memory)
                break
            except OSError:
                time.sleep(5)
        else:
            return  # a job waiting for a worker is told, at its time limit
        with self._lock:
            self._all = [other for other in self._all if other is not worker] + [fresh]
        self._idle.put(fresh)

    def close(self) -> None:
        with self._lock:
            every, self._all = self._all, []
        for worker in every:
            worker.end()

    def run(self, job, report) -> list:
        """`job`'s results (a `store.Job`), computed on a worker, its progress heard by `report(fraction, text,
        seconds_left)`; called inside the store's computation, whose stop requests and time budget it carries over.

        Raises:
            WorkerEnded: the worker passed its memory or time limit, or died; a fresh one takes its place.
            whatever the job raised (an `InputError` for unusable input).
        """
        from diagnostics.core import budget

        report(0.0, msg("Waiting for a worker process"), None)
        started = time.monotonic()
        try:
            worker = self._idle.get(timeout=self.limit_s())
        except queue.Empty:
            raise WorkerEnded(over_time(time.monotonic() - started, self.limit_s())) from None
        healthy = False
        try:
            if not worker.ready:
                report(0.0, msg("Starting a worker process (it loads TensorFlow once)"), None)
                self._receive(worker, started, report, lambda message: message[0] == "ready")
                worker.ready = True
                started = time.monotonic()  # the job's time and memory count from here
            worker.outbox.send(("job", job))
            asked_stop: float | None = None
            while True:
                reason = budget.stop_asked()
                if reason is not None and asked_stop is None:
                    worker.outbox.send(("stop", reason))
                    asked_stop = time.monotonic()
                if asked_stop is not None and time.monotonic() - asked_stop > STOP_GRACE_S:
                    self._end(worker, msg("This computation was asked to stop and did not within {grace:.0f} "
                                                   "s, so its worker process was ended.", grace=STOP_GRACE_S))
                message = self._receive(worker, started, report, lambda message: message[0] in ("done", "error"),
                                        once=True)
                if message is None:
                    continue
                kind, payload, partial, resident = message
                healthy = resident <= worker.memory // 2  # a worker grown past half its limit is started afresh
                if kind == "error":
                    raise payload
                if partial == "budget":
                    budget.exhaust()
                return payload
        finally:
            if healthy:
                self._idle.put(worker)
            else:
                threading.Thread(target=self._replace, args=(worker,), daemon=True).start()

    def _receive(self, worker: _Worker, started: float, report, wanted, once: bool = False):
        """The next message `wanted` picks from the worker, relaying its progress meanwhile, and ending it past its
        memory or time limit or found dead (`WorkerEnded`); with `once`, None when none came within one poll."""
        while True:
            if worker.inbox.poll(POLL_S):
                try:
                    message = worker.inbox.recv()
                except (EOFError, OSError):
                    message = None
                if message is None:
                    self._died(worker, started)
                if message[0] == "progress":
                    report(*message[1:])
                elif wanted(message):
                    return message
                continue
            if worker.process.poll() is not None:
                self._died(worker, started)
            resident = worker.rss()
            if resident > worker.memory:
                self._end(worker, msg(
                    "This computation took {used:.2f} GiB of memory after {seconds:.0f} s, past the {limit:g} GiB "
                    "one computation may use on this server, and was ended; a smaller batch size, max length or "
                    "checkpoint needs less.", used=_gib(resident), seconds=time.monotonic() - started,
                    limit=_gib(worker.memory)))
            if time.monotonic() - started > self.limit_s():
                self._end(worker, over_time(time.monotonic() - started, self.limit_s()))
            if once:
                return None

    def _end(self, worker: _Worker, why) -> None:
        worker.end()
        self.ended += 1
        raise WorkerEnded(why)

    def _died(self, worker: _Worker, started: float) -> None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            worker.process.wait(5)
        self._end(worker, msg(
            "The worker process running this computation ended after {seconds:.0f} s (exit code {code}), most likely "
            "out of the {limit:g} GiB of memory one computation may use on this server; a smaller batch size, max "
            "length or checkpoint needs less.", seconds=time.monotonic() - started, code=worker.process.returncode,
            limit=_gib(worker.memory)))


# ---------------------------------------------------------------- the worker's side


def _picklable(exc: BaseException) -> BaseException:
    try:
        pickle.dumps(exc)
        return exc
    except Exception:  # an exception holding what does not pickle: its type and text
        return RuntimeError(f"{type(exc).__name__}: {exc}")


def _resident() -> int:
    import psutil

    return psutil.Process().memory_info().rss


def _warm_up() -> None:
    """Import the libraries and run one small training step, so the thread pools and allocators a job uses exist
    before the address space is measured."""
    import diagnostics

    diagnostics.own_process()
    from diagnostics.core.libraries import import_libraries

    import_libraries()
    import tensorflow as tf

    variable = tf.Variable(tf.ones((8, 8)))
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(tf.matmul(variable, variable))
    variable.assign_sub(0.1 * tape.gradient(loss, variable))


def _limit_address_space(memory: int) -> None:
    """The operating system's backstop: the address space now, plus twice the resident limit."""
    import resource

    import psutil

    ceiling = psutil.Process().memory_info().vms + 2 * memory
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_AS, (ceiling, ceiling))


def _work(job, outbox: Connection, send_lock: threading.Lock, stop: list) -> None:
    from diagnostics.core.budget import run_budget, stoppable
    from diagnostics.serve.loaders import open_run
    from diagnostics.serve.store import NEEDS_MODEL

    def send(message) -> None:
        with send_lock:
            outbox.send(message)

    def report(fraction, text, left=None) -> None:
        send(("progress", fraction, text, left))

    try:
        run = open_run(job.config)
        with run_budget() as budget, stoppable(lambda: stop[0]):
            if job.kind in NEEDS_MODEL:
                report(0.0, msg("Loading the model…"))
                _loaded = run.classifier
            results = job.run(run, report)
        partial = "budget" if budget is not None and budget.exceeded else "stopped" if stop[0] else None
        send(("done", results, partial, _resident()))
    except BaseException as exc:  # every error goes back to the job's waiters, as in the server's own threads
        send(("error", _picklable(exc), None, _resident()))


def serve(read_fd: int, write_fd: int, memory: int, parent: int) -> None:
    """The worker's loop: warm up, say so, then run each job sent (one at a time) and hear stop requests."""
    from diagnostics.usercode.keeper import tie_to_parent

    tie_to_parent(parent)  # dies with the server
    inbox, outbox = Connection(read_fd, writable=False), Connection(write_fd, readable=False)
    _warm_up()
    _limit_address_space(memory)
    send_lock = threading.Lock()
    with send_lock:
        outbox.send(("ready", _resident()))
    stop: list = [None]
    while True:
        try:
            kind, payload = inbox.recv()
        except (EOFError, OSError):
            return
        if kind == "job":
            stop[0] = None
            threading.Thread(target=_work, args=(payload, outbox, send_lock, stop), daemon=True).start()
        elif kind == "stop":
            stop[0] = payload


if __name__ == "__main__":
    serve(*map(int, sys.argv[1:5]))
