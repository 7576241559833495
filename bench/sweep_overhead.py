"""The learning-rate sweep against its true floor, and against the sweep a user writes by hand.

`sweep_overhead_ratio`: the sweep over N rates x K steps (warm: its copy compiled and traced) against N x K
calls of the same traced train function on the same tensors, with nothing between them. What is left is the
sweep's own work: putting the weights back and zeroing the optimizer for each rate, scoring each rate on the
held-out rows, and measuring how far each rate moved the pretrained kernels.

`sweep_vs_by_hand_ratio`: what the same question costs written by hand, as a notebook does it: for each
rate, `from_pretrained`, `compile` with Adam at that rate, `fit` for K steps on the same batches and
`evaluate` on the same held-out rows; against the sweep from cold (its one copy and trace included).

    python bench/sweep_overhead.py [--checkpoint real|demo|DIR] [--rates 7] [--steps 8] [--repeats 5]

The two sides of each figure are timed in turn; each ratio is the median of the per-turn ratios.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))

import diagnostics  # noqa: E402
diagnostics.own_process()  # Keras 2 for tf.keras, quiet libraries, before TensorFlow loads
from real_checkpoint import checkpoint_argument  # noqa: E402
from diagnostics.keras import loading  # noqa: E402
from diagnostics.config.run import RunConfig  # noqa: E402
from diagnostics.core.context import RunContext  # noqa: E402
from diagnostics.keras.devices import per_replica_dataset  # noqa: E402
from diagnostics.checks.hparams.lr_sweep import lr_sweep
from diagnostics.config.training import SweepSettings  # noqa: E402
from diagnostics.keras.training import Trainer, build_loss  # noqa: E402


def profiled(function, top: int = 25) -> None:
    """Run `function` under cProfile; print its heaviest functions by cumulative time as `#` lines."""
    import cProfile
    import io
    import pstats

    profile = cProfile.Profile()
    profile.runcall(function)
    out = io.StringIO()
    pstats.Stats(profile, stream=out).sort_stats("cumulative").print_stats(top)
    for line in out.getvalue().splitlines():
        if line.strip():
            print(f"# {line}")


def timed(function) -> float:
    start = time.perf_counter()
    function()
    return time.perf_counter() - start


def by_hand(config: RunConfig, rates: list[float], batches: list, held, steps: int) -> None:
    """The sweep as a notebook writes it: reload, compile and fit at each rate, then evaluate."""
    import tensorflow as tf
    import tf_keras
    from transformers import TFAutoModelForSequenceClassification

    path = loading.resolve_checkpoint(config.checkpoint)
    for rate in rates:
        model = TFAutoModelForSequenceClassification.from_pretrained(path, num_labels=config.effective_num_labels)
        model.compile(optimizer=tf_keras.optimizers.Adam(rate), loss=build_loss(config.loss))
        dataset = tf.data.Dataset.from_tensors(batches[0])
        for batch in batches[1:]:
            dataset = dataset.concatenate(tf.data.Dataset.from_tensors(batch))
        model.fit(dataset.repeat(), steps_per_epoch=steps, epochs=1, verbose=0)
        model.evaluate(tf.data.Dataset.from_tensors(held), verbose=0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", default="real", help="real (the real pretrained checkpoint, what users "
                        "train: the default), demo (the kit's tiny random model, where fixed costs dominate), or a "
                        "directory")
    parser.add_argument("--rates", type=int, default=7)
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--by-hand-repeats", type=int, default=1)
    parser.add_argument("--profile", action="store_true", help="print where a warm sweep's time goes (cProfile, the "
                        "functions of most cumulative time), as comment lines")
    args = parser.parse_args()

    config = RunConfig(checkpoint=checkpoint_argument(args.checkpoint), batch_size=args.batch_size)
    model = loading.load_model(config.checkpoint, config.effective_num_labels)
    run = RunContext.open(config, model_loader=lambda *_: model)
    batches, held = run.training_batches(max(1, min(args.steps // 4, 4)))  # as the Hyperparameters stage does
    settings = SweepSettings(rates=args.rates, steps=args.steps)
    steps = len(settings.grid()) * args.steps

    def cold_sweep() -> None:
        lr_sweep(Trainer(model, batches, config), settings, held)

    trainer = Trainer(model, batches, config)
    setup = timed(lambda: (trainer.reset(1e-5), trainer.run(1)))  # the copy's one-time trace
    floor_iterator = iter(per_replica_dataset(batches, trainer.strategy, repeat=True))  # the same tensors

    def floor() -> None:
        for _ in range(steps):
            out = trainer.train_function(floor_iterator)
        float(out["loss"])  # wait for the last step

    floor()
    lr_sweep(trainer, settings, held)
    floor_times, sweep_times = [], []
    for _ in range(args.repeats):  # interleaved, so drift in the machine's speed hits both sides alike
        floor_times.append(timed(floor))
        sweep_times.append(timed(lambda: lr_sweep(trainer, settings, held)))
    if args.profile:
        profiled(lambda: lr_sweep(trainer, settings, held))
    hand_times, cold_times = [], []
    for _ in range(args.by_hand_repeats):
        hand_times.append(timed(lambda: by_hand(config, settings.grid(), batches, held, args.steps)))
        cold_times.append(timed(cold_sweep))

    print(f"checkpoint = {args.checkpoint}")
    print(f"rates = {len(settings.grid())}")
    print(f"steps_per_rate = {args.steps}")
    print(f"sweep_setup_s = {setup:.3f}")
    print(f"floor_s = {statistics.median(floor_times):.3f}")
    print(f"sweep_s = {statistics.median(sweep_times):.3f}")
    if hand_times:  # --by-hand-repeats 0 leaves the by-hand comparison out (minutes on a real checkpoint)
        print(f"sweep_cold_s = {statistics.median(cold_times):.3f}")
        print(f"by_hand_s = {statistics.median(hand_times):.3f}")
        print(f"sweep_vs_by_hand_ratio = "
              f"{statistics.median(c / h for c, h in zip(cold_times, hand_times, strict=True)):.3f}")
    print(f"sweep_overhead_ratio = "
          f"{statistics.median(s / f for s, f in zip(sweep_times, floor_times, strict=True)):.3f}")


if __name__ == "__main__":
    main()
