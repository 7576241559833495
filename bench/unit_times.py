"""Seconds each unit of the walk takes on one configuration, and the whole walk, through the one runner; and how close
the time left that the progress line says (`core.progress.Work`, as every page and trace says it) is to the truth.

Each unit is timed as the runner calls it (its needs, its function, the collection after it); the units that
train share one copy of the model, so the first of them pays for copying the model and tracing its train step.
Measured on a 2-core machine with the real checkpoint on real MRPC (batch 8, max_length 128): 118 to 136 s in all
(learnability 59 to 76 s, the sweep with the range test 38 s, the overfit test 9 to 13 s), against 146 to 157 s
when each training unit made and traced its own copy and a reset dropped the data iterator. On real MNLI (batch
8, max_length 64) 110 s, learnability 52 s. On both splits learnability's verdict is inconclusive (a skip that
says so): a pretrained model fits shuffled labels about as fast as real ones in its short run. On a slower machine
(2026-11-24, later) the same MRPC walk took 354 s, and 366 s for the code of the 118 s measurement: the machine, not
the code; on another (2026-11-24, evening) 242 s (learnability 125 s, the sweep with the range test 80 s, the overfit
test 17 s), with every check judged by the registry's rules.

    python bench/unit_times.py --checkpoint .cache-test/real-checkpoint/all-MiniLM-L6-v2 --task mrpc \\
        --data-files validation=tests/data/mrpc/validation.tsv --split validation --batch-size 8
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import diagnostics  # noqa: E402
diagnostics.own_process()  # Keras 2 for tf.keras, quiet libraries, before TensorFlow loads
from diagnostics.core.libraries import import_libraries  # noqa: E402
from diagnostics.walk import registry  # noqa: E402
from diagnostics.walk import runner  # noqa: E402
from diagnostics.config.run import RunConfig  # noqa: E402
from diagnostics.config.settings import parse_data_files  # noqa: E402
from diagnostics.core.context import RunContext  # noqa: E402
from diagnostics.core.progress import Work, counting, no_report  # noqa: E402
from diagnostics.config.training import DEFAULT_EPOCHS, SweepSettings  # noqa: E402
from diagnostics.walk.stages import parse_asked  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", default="demo")
    parser.add_argument("--task", default="mnli")
    parser.add_argument("--data-files", default="", help="SPLIT=PATH pairs joined by ';'")
    parser.add_argument("--split", default="train")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--max-length", type=int, default=128)
    parser.add_argument("--with", dest="asked", default="", help="checks run only when asked for, e.g. "
                        "data.learnability (as the command line's --with)")
    parser.add_argument("--sweep-rates", type=int, default=SweepSettings.rates)
    parser.add_argument("--sweep-steps", type=int, default=SweepSettings.steps)
    parser.add_argument("--range-steps", type=int, default=SweepSettings.range_steps)
    parser.add_argument("--epochs", type=int, default=DEFAULT_EPOCHS)
    args = parser.parse_args()
    files = parse_data_files(args.data_files)
    config = RunConfig(checkpoint=args.checkpoint, task=args.task, data_files=files, split=args.split,
                       data_source="files" if files else "demo", batch_size=args.batch_size,
                       max_length=args.max_length)
    import_libraries()  # as the command line does
    run = RunContext.open(config)
    timed = runner.run_unit
    work = Work(no_report)

    def unit_timed(context, name, *rest, **keywords):
        start, steps = time.perf_counter(), work.done
        results = timed(context, name, *rest, **keywords)
        print(f"{name:<14} {time.perf_counter() - start:7.1f} s  {work.done - steps:4.0f} steps  " + ", ".join(
            f"{result.id} {result.status.value}" for result in results), flush=True)
        return results

    runner.run_unit = unit_timed
    said: list[tuple[float, float]] = []  # (when, the time left it said), as a page's progress line says it

    def heard(fraction, text, left) -> None:
        if left is not None:
            said.append((time.perf_counter(), left))

    work = Work(heard, heartbeat=runner.HEARTBEAT_S)
    settings = runner.Settings(sweep=SweepSettings(rates=args.sweep_rates, steps=args.sweep_steps,
                                                   range_steps=args.range_steps),
                               epochs=args.epochs, asked=parse_asked(args.asked))
    start = time.perf_counter()
    with counting(work):  # the runner counts every training step into it
        runner.run_units(run, list(registry.UNITS), settings)
    end = time.perf_counter()
    print(f"training_steps = {work.done:.0f}")
    print_estimates(said, start, end)
    print(f"walk_s = {end - start:.1f}")
    return 0


def print_estimates(said: list[tuple[float, float]], start: float, end: float) -> None:
    """How the time left that progress said compares with the time that was left: each said against the truth while
    at least 20 s were left (shorter waits need no estimate), as ratios, the worst either way."""
    ratios = [left / (end - when) for when, left in said if end - when >= 20]
    first = min((when for when, _ in said), default=None)
    print(f"first_estimate_after_s = {first - start:.1f}" if first is not None else "first_estimate_after_s = none")
    if ratios:
        print("estimate_ratios = " + " ".join(f"{ratio:.2f}" for ratio in ratios[::max(1, len(ratios) // 12)]))
        print(f"estimate_worst_ratio = {max(max(ratio, 1 / ratio) for ratio in ratios):.2f}")


if __name__ == "__main__":
    sys.exit(main())
