"""Sweep overhead against plain Keras: time(sweep over N rates) / (N * time(K plain `model.fit` steps at one rate)).

Both run the same model and the same batches on CPU, and both are measured warm (train step already
traced), so the ratio shows the sweep's per-rate and per-step overhead: weight and optimizer resets, one
step at a time. The sweep's one-time copy and tracing is printed apart as `sweep_setup_s`.

    python bench/sweep_overhead.py [--checkpoint demo] [--rates 7] [--steps 8] [--repeats 5]

The two sides are timed in turn `repeats` times; the ratio is the median of the per-turn ratios.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import diagnostics  # noqa: E402,F401
from diagnostics import loading  # noqa: E402
from diagnostics.config import RunConfig  # noqa: E402
from diagnostics.batches import training_batches  # noqa: E402
from diagnostics.hyperparams import SweepSettings, lr_sweep  # noqa: E402
from diagnostics.training import Trainer, build_loss, fresh_copy, split_batch, sweep_optimizer  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", default="demo")
    parser.add_argument("--rates", type=int, default=7)
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()

    import tensorflow as tf

    config = RunConfig(checkpoint=args.checkpoint, batch_size=args.batch_size)
    tokenizer = loading.load_tokenizer(config.checkpoint)
    split = loading.load_split(config)
    model = loading.load_model(config.checkpoint, config.effective_num_labels)
    batches = training_batches(split, tokenizer, config, count=args.steps)

    plain = fresh_copy(model, split_batch(batches[0])[0])
    plain.compile(optimizer=sweep_optimizer(config), loss=build_loss(config.loss))
    dataset = tf.data.Dataset.from_generator(lambda: iter(batches), output_signature=tf.nest.map_structure(
        lambda t: tf.TensorSpec([None] * len(t.shape), t.dtype), batches[0])).repeat()
    plain.fit(dataset, epochs=1, steps_per_epoch=args.steps, verbose=0)  # trace once
    settings = SweepSettings(rates=args.rates, steps=args.steps)
    start = time.perf_counter()
    trainer = Trainer(model, batches, config)
    trainer.reset(1e-5)
    trainer.run(1)  # trace once
    setup_time = time.perf_counter() - start
    # Interleaved, so drift in the machine's speed hits both sides alike.
    plain_times, sweep_times = [], []
    for _ in range(args.repeats):
        start = time.perf_counter()
        for _ in range(args.rates):
            plain.fit(dataset, epochs=1, steps_per_epoch=args.steps, verbose=0)
        plain_times.append(time.perf_counter() - start)
        start = time.perf_counter()
        lr_sweep(trainer, settings, batches[-1])
        sweep_times.append(time.perf_counter() - start)
    ratios = [sweep / plain for sweep, plain in zip(sweep_times, plain_times)]
    plain_time = statistics.median(plain_times) / args.rates
    sweep_time = statistics.median(sweep_times)

    print(f"checkpoint = {args.checkpoint}")
    print(f"rates = {args.rates}")
    print(f"steps_per_rate = {args.steps}")
    print(f"plain_fit_s = {plain_time:.3f}")
    print(f"sweep_setup_s = {setup_time:.3f}")
    print(f"sweep_s = {sweep_time:.3f}")
    print(f"sweep_overhead_ratio = {statistics.median(ratios):.3f}")


if __name__ == "__main__":
    main()
