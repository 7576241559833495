"""Ground truth for the learning-rate verdicts: real fine-tuning against what the debugger says.

On a real pretrained checkpoint (all-MiniLM-L6-v2, fetched by scripts/real_checkpoint.py) and real GLUE
text (tests/data/), a fresh copy is fine-tuned at each rate of a grid for enough steps to separate the
rates, with plain Keras train steps, and scored on held-out rows. Beside each rate it prints what the
debugger's measured learning-rate checks say when that rate is configured: the sweep's verdict on it and
its recommended rate, the range test's suggestion, and the overfit test at that rate. "one class" is the share
of held-out rows the fine-tuned model gives its commonest class (100%: it collapsed to one class).

A rate is bad in truth when its held-out accuracy is within 5 points of the majority class, or below 90%
of the best rate's. The debugger calls a rate bad when `hparams.lr_sweep` or `overfit.one_batch` warns or
fails with it configured. The last line is `lr_truth_agreement = K/N` over every task and rate.

    python bench/lr_truth.py [--tasks mrpc,mnli] [--steps 150] [--refresh]

Truth runs take about 15 minutes a task on 2 CPU cores; they are kept in .cache-bench/lr_truth.json
(keyed by task, rate, steps, batch size and max length) so the debugger's side can be rerun alone.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

import numpy as np  # noqa: E402

import diagnostics  # noqa: E402
diagnostics.own_process()  # Keras 2 for tf.keras, quiet libraries, before TensorFlow loads
from diagnostics.keras import data_files, loading  # noqa: E402
from diagnostics.config.run import RunConfig  # noqa: E402
from diagnostics.keras.batches import LABEL, build_batch  # noqa: E402
from diagnostics.keras.training import Trainer, split_batch  # noqa: E402

DATA = {"mrpc": ("validation", ROOT / "tests/data/mrpc/validation.tsv"),
        "mnli": ("validation_matched", ROOT / "tests/data/mnli/validation_matched.jsonl")}
RATES = (1e-5, 3e-5, 1e-4, 3e-4, 1e-3, 3e-3)
CACHE = ROOT / ".cache-bench" / "lr_truth.json"


def task_config(task: str, checkpoint: str, batch_size: int, max_length: int) -> RunConfig:
    split, path = DATA[task]
    return RunConfig(checkpoint=checkpoint, task=task, split=split, data_source="files",
                     data_files=((split, str(path)),), batch_size=batch_size, max_length=max_length,
                     optimizer="Adam", loss="internal", labels_in="inputs")


def held_out_split(count: int, seed: int = 0) -> tuple[list[int], list[int]]:
    """(held-out rows, training rows): a quarter held out, seeded."""
    order = np.random.default_rng(seed).permutation(count).tolist()
    held = count // 4
    return order[:held], order[held:]


def predict(model, batches: list) -> np.ndarray:
    return np.concatenate([np.asarray(model(split_batch(b)[0], training=False).logits).argmax(axis=1) for b in batches])


def fine_tune_truth(task: str, checkpoint: str, rates, steps: int, batch_size: int, max_length: int) -> dict:
    """Held-out accuracy after `steps` Adam steps at each rate, every rate from the same pretrained start."""
    config = task_config(task, checkpoint, batch_size, max_length).validated()
    tokenizer = loading.load_tokenizer(checkpoint)
    split = data_files.load_split(config)
    model = loading.load_model(checkpoint, config.effective_num_labels, config.seed)
    held, train = held_out_split(len(split))
    train_batches = [build_batch(split, tokenizer, config, train[i:i + batch_size]).tf_batch
                     for i in range(0, len(train) - batch_size + 1, batch_size)]
    held_batches = [build_batch(split, tokenizer, config, held[i:i + 32]).tf_batch for i in range(0, len(held), 32)]
    labels = np.asarray(split.select(held)[LABEL])
    majority = float(np.bincount(labels).max() / len(labels))
    trainer = Trainer(model, train_batches, config)
    results = {}
    for rate in rates:
        start = time.perf_counter()
        trainer.reset(rate)
        losses = trainer.run(steps)
        predictions = predict(trainer.model, held_batches)
        results[f"{rate:g}"] = {
            "accuracy": float(np.mean(predictions == labels)),
            "predicted_share_of_commonest": float(np.bincount(predictions).max() / len(predictions)),
            "final_train_loss": float(np.mean(losses[-10:])),
            "seconds": time.perf_counter() - start,
        }
        print(f"truth {task} {rate:g}: held-out accuracy {results[f'{rate:g}']['accuracy']:.3f} "
              f"({time.perf_counter() - start:.0f} s)", flush=True)
    return {"majority": majority, "held_rows": len(held), "train_rows": len(train), "rates": results}


def truth_labels(truth: dict, *, majority_margin: float = 0.05, best_share: float = 0.9) -> dict[str, bool]:
    """rate -> True when real fine-tuning at it is bad (near the majority class, or well below the best rate)."""
    best = max(entry["accuracy"] for entry in truth["rates"].values())
    return {rate: entry["accuracy"] <= truth["majority"] + majority_margin or entry["accuracy"] < best_share * best
            for rate, entry in truth["rates"].items()}


def cached_truth(task: str, checkpoint: str, rates, steps: int, batch_size: int, max_length: int,
                 refresh: bool) -> dict:
    key = f"{task}|{','.join(f'{r:g}' for r in rates)}|{steps}|{batch_size}|{max_length}"
    cache = json.loads(CACHE.read_text()) if CACHE.is_file() else {}
    if key not in cache or refresh:
        cache[key] = fine_tune_truth(task, checkpoint, rates, steps, batch_size, max_length)
        CACHE.parent.mkdir(parents=True, exist_ok=True)
        CACHE.write_text(json.dumps(cache, indent=1))
    return cache[key]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", default="mrpc,mnli")
    parser.add_argument("--steps", type=int, default=150)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--max-length", type=int, default=64)
    parser.add_argument("--refresh", action="store_true", help="rerun the fine-tuning even when cached")
    parser.add_argument("--truth-only", action="store_true", help="fine-tune and print the truth, no debugger")
    parser.add_argument("--rates", default=",".join(f"{rate:g}" for rate in RATES),
                        help="comma-separated rates to fine-tune at (default: all six)")
    args = parser.parse_args()
    rates = tuple(float(rate) for rate in args.rates.split(","))
    from real_checkpoint import real_checkpoint_dir

    checkpoint = str(real_checkpoint_dir())
    agree = total = 0
    for task in args.tasks.split(","):
        truth = cached_truth(task, checkpoint, rates, args.steps, args.batch_size, args.max_length, args.refresh)
        bad = truth_labels(truth)
        print(f"\n{task}: {truth['train_rows']} training rows, {truth['held_rows']} held out, "
              f"majority class {truth['majority']:.1%}, {args.steps} steps of batch {args.batch_size}")
        if args.truth_only:
            for rate, entry in truth["rates"].items():
                print(f"  {rate:>6}  held-out {entry['accuracy']:.1%}  {'bad' if bad[rate] else 'good'}")
            print(f"\ntruth_rates = {len(truth['rates'])}")
            continue
        from lr_truth_debugger import debugger_table

        rows = debugger_table(task_config(task, checkpoint, 8, args.max_length), rates)
        if not any(not is_bad for is_bad in bad.values()):
            print("  no rate beats the majority class by 5 points: this sample cannot separate the rates")
        print(f"  {'rate':>6}  {'held-out':>8}  {'one class':>9}  {'truth':>5}  {'sweep':>24}  {'overfit':>8}  "
              f"{'debugger':>8}")
        for rate in rates:
            key = f"{rate:g}"
            row = rows[key]
            verdict_bad = row["bad"]
            agree += verdict_bad == bad[key]
            total += 1
            print(f"  {key:>6}  {truth['rates'][key]['accuracy']:>8.1%}  "
                  f"{truth['rates'][key]['predicted_share_of_commonest']:>9.0%}  {'bad' if bad[key] else 'good':>5}  "
                  f"{row['sweep']:>24}  {row['overfit']:>8}  {'bad' if verdict_bad else 'good':>8}"
                  f"{'' if verdict_bad == bad[key] else '  <- disagrees'}")
        recommended = rows["recommended"]
        good_rates = [float(rate) for rate, is_bad in bad.items() if not is_bad]
        lands = (
            bool(good_rates)
            and recommended is not None
            and min(good_rates) / 1.8 <= recommended <= max(good_rates) * 1.8
        )
        print(f"  recommended rate {recommended if recommended is None else f'{recommended:.1e}'} "
              f"({'among' if lands else 'NOT among'} the good rates {', '.join(f'{r:g}' for r in good_rates)}); "
              f"range test suggests {rows['range_suggestion']}")
    if total:
        print(f"\nlr_truth_agreement = {agree}/{total}")


if __name__ == "__main__":
    main()
