"""A room asking for one sweep: N sessions open the same scenario link and press "Run the sweep" at once.

`room_ratio`: seconds until all N sessions have the sweep and range test, against seconds for one session alone.
Each session is a thread making the pages' own calls (the run context from the app's shared cache, then the shared
results' `result` with the Hyperparameters page's job), as Streamlit runs each session's script in a thread of
one server process. With results shared by configuration the room waits for one computation: target at most 1.2.
`unshared_ratio` (with `--unshared`): the same N sessions each training their own sweep, as without the store.

    python bench/room.py [--sessions 10] [--rates 7] [--steps 8] [--range-steps 40] [--unshared]

Both sides run warm: one sweep first traces the training step, so no side pays for the first trace.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import diagnostics  # noqa: E402
diagnostics.own_process()  # Keras 2 for tf.keras, quiet libraries, before TensorFlow loads
from diagnostics.config.run import DEMO_LEARNING_RATE, RunConfig  # noqa: E402
from diagnostics.config.training import SweepSettings  # noqa: E402
from diagnostics.config.scenarios import SCENARIOS  # noqa: E402
from diagnostics.serve.store import SharedResults, training_job  # noqa: E402
from ui.caches import open_run  # noqa: E402


def room(sessions: int, ask) -> float:
    """Seconds until every one of `sessions` threads, started together, has had `ask()` answered."""
    gate = threading.Barrier(sessions + 1)
    failures = []

    def session() -> None:
        gate.wait()
        try:
            ask()
        except BaseException as exc:  # a thread's exception would vanish
            failures.append(exc)

    threads = [threading.Thread(target=session) for _ in range(sessions)]
    for thread in threads:
        thread.start()
    gate.wait()
    start = time.perf_counter()
    for thread in threads:
        thread.join()
    if failures:
        raise failures[0]
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=10)
    parser.add_argument("--rates", type=int, default=SweepSettings.rates)
    parser.add_argument("--steps", type=int, default=SweepSettings.steps)
    parser.add_argument("--range-steps", type=int, default=SweepSettings.range_steps)
    parser.add_argument("--unshared", action="store_true", help="also time N sessions each training its own sweep")
    args = parser.parse_args()

    # The workshop's string-"adam" scenario on the demo kit, as its link opens it offline.
    config = SCENARIOS["adam-string-default-lr"].apply(RunConfig(learning_rate=DEMO_LEARNING_RATE)).validated()
    job = training_job(config, SweepSettings(rates=args.rates, steps=args.steps, range_steps=args.range_steps))
    run = open_run(config)
    _ = run.classifier  # loaded once, as the page loads it before asking

    def compute(progress):
        return job.run(run, progress)

    SharedResults().result(job, compute)  # warm: the first trace of the train step
    alone_store = SharedResults()
    alone = room(1, lambda: alone_store.result(job, compute))
    room_store = SharedResults()
    together = room(args.sessions, lambda: room_store.result(job, compute))
    print(f"sessions = {args.sessions}")
    print(f"sweeps_trained = {room_store.runs}")
    print(f"one_session_s = {alone:.2f}")
    print(f"room_s = {together:.2f}")
    if args.unshared:
        unshared = room(args.sessions, lambda: compute(lambda fraction, text: None))
        print(f"unshared_room_s = {unshared:.2f}")
        print(f"unshared_ratio = {unshared / alone:.2f}")
    print(f"room_ratio = {together / alone:.2f}")


if __name__ == "__main__":
    main()
