"""Overfit test against plain Keras: time(the overfit test) / time(plain `model.fit(batch, epochs=N)` on a copy).

Both start from a fresh copy of the same loaded model, compile, trace and train on the same batch for
N epochs on CPU; the overfit test adds its bookkeeping (weight reset, progress callback, final predictions).

    python bench/overfit_ratio.py [--checkpoint real|demo|DIR] [--epochs 20] [--repeats 3]
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
from diagnostics.keras import data_files, loading  # noqa: E402
from diagnostics.config.run import DEMO_LEARNING_RATE, RunConfig  # noqa: E402
from diagnostics.keras.batches import build_first_batch  # noqa: E402
from diagnostics.checks.overfit.one_batch import overfit_one_batch  # noqa: E402
from diagnostics.keras.training import build_loss, fresh_copy, split_batch, sweep_optimizer  # noqa: E402


def plain_fit(model, batch, config, epochs) -> float:
    import tensorflow as tf

    start = time.perf_counter()
    copy = fresh_copy(model, split_batch(batch)[0])
    copy.compile(optimizer=sweep_optimizer(config), loss=build_loss(config.loss), metrics=["accuracy"])
    copy.fit(tf.data.Dataset.from_tensors(batch), epochs=epochs, verbose=0)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", default="real", help="real (the real pretrained checkpoint, what users "
                        "train: the default), demo (the kit's tiny random model, where fixed costs dominate), or a "
                        "directory")
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    checkpoint = checkpoint_argument(args.checkpoint)
    config = RunConfig(checkpoint=checkpoint, **({"learning_rate": DEMO_LEARNING_RATE} if checkpoint == "demo" else {}))
    tokenizer = loading.load_tokenizer(config.checkpoint)
    split = data_files.load_split(config)
    model = loading.load_model(config.checkpoint, config.effective_num_labels)
    batch = build_first_batch(split, tokenizer, config)

    plain_fit(model, batch.tf_batch, config, 1)  # warm TensorFlow's kernels for both sides
    plain, ours = [], []
    for _ in range(args.repeats):
        plain.append(plain_fit(model, batch.tf_batch, config, args.epochs))
        start = time.perf_counter()
        overfit_one_batch(model, batch, config, args.epochs)
        ours.append(time.perf_counter() - start)
    print(f"checkpoint = {args.checkpoint}")
    print(f"epochs = {args.epochs}")
    print(f"plain_fit_s = {statistics.median(plain):.3f}")
    print(f"overfit_test_s = {statistics.median(ours):.3f}")
    print(f"overfit_ratio = {statistics.median(ours) / statistics.median(plain):.3f}")


if __name__ == "__main__":
    main()
