"""Memory: peak resident memory of a four-stage run on a DistilBERT-base-size model / the floor.

The model is DistilBERT's standard configuration (`DistilBertConfig()`: 768 wide, 6 layers, 30,522-word
vocabulary, about 67M parameters) with random weights, written locally with `save_pretrained` beside the
demo tokenizer, so nothing is downloaded. The run is `python -m diagnostics run` over all four stages on
the demo MNLI samples, in a fresh process. The floor is what any fine-tuning of that model needs: the
weights, their gradients and Adam's two slots in float32 (16 bytes a parameter), plus the TensorFlow and
Transformers runtime measured alone in a fresh process.

    python bench/memory.py [--sweep-rates 3 --sweep-steps 4 --range-steps 10 --epochs 5]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PEAK = "import resource; print('peak_kib', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)"
RUNTIME = ("import diagnostics, tensorflow as tf, transformers; "
           "from transformers import TFAutoModelForSequenceClassification, AutoTokenizer; "
           "tf.reduce_sum(tf.ones((64, 64)) @ tf.ones((64, 64))).numpy(); " + PEAK)


def child(code: str) -> int:
    """Run Python code in a fresh process; its peak resident memory in bytes."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TF_CPP_MIN_LOG_LEVEL": "3", "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, check=True, capture_output=True, text=True)
    line = next(line for line in done.stdout.splitlines() if line.startswith("peak_kib"))
    return int(line.split()[1]) * 1024


# The model's size: DistilBERT-base's, or a tiny one for the small mode the suite runs (tests/test_benches.py).
SIZES = {"base": "", "tiny": "n_layers=1, dim=64, hidden_dim=128, n_heads=2"}


def build_checkpoint(directory: Path, size: str = "base") -> int:
    """A DistilBERT classifier of `size` with random weights and the demo tokenizer; its parameter count."""
    code = f"""
import diagnostics
diagnostics.own_process()  # Keras 2 for tf.keras, quiet libraries, before TensorFlow loads
import tf_keras
from transformers import DistilBertConfig, TFDistilBertForSequenceClassification
from diagnostics.keras.loading import load_tokenizer
tf_keras.utils.set_random_seed(0)
model = TFDistilBertForSequenceClassification(DistilBertConfig(num_labels=3, {SIZES[size]}))
model(model.dummy_inputs)
model.save_pretrained({str(directory)!r})
load_tokenizer("demo").save_pretrained({str(directory)!r})
print("parameters", model.count_params())
"""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TF_CPP_MIN_LOG_LEVEL": "3", "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, check=True, capture_output=True, text=True)
    return int(next(line for line in done.stdout.splitlines() if line.startswith("parameters")).split()[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sweep-rates", default="3")
    parser.add_argument("--sweep-steps", default="4")
    parser.add_argument("--range-steps", default="10")
    parser.add_argument("--epochs", default="5")
    parser.add_argument("--size", choices=sorted(SIZES), default="base", help="the model's size (tiny: a quick check "
                        "that the bench runs, its ratio dominated by the runtime)")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as folder:
        checkpoint = Path(folder) / f"distilbert-{args.size}-size"
        parameters = build_checkpoint(checkpoint, args.size)
        argv = ["run", "--checkpoint", str(checkpoint), "--learning-rate", "5e-5", "--sweep-rates", args.sweep_rates,
                "--sweep-steps", args.sweep_steps, "--range-steps", args.range_steps, "--epochs", args.epochs]
        run = ("import sys; from diagnostics.__main__ import main; "
               f"code = main({argv!r}); assert code in (0, 1), code; " + PEAK)
        peak = child(run)
    runtime = child(RUNTIME)
    training_state = 16 * parameters
    floor = runtime + training_state
    print(f"parameters = {parameters}")
    print(f"runtime_alone_mib = {runtime / 2**20:.0f}")
    print(f"weights_grads_adam_mib = {training_state / 2**20:.0f}")
    print(f"floor_mib = {floor / 2**20:.0f}")
    print(f"four_stage_peak_mib = {peak / 2**20:.0f}")
    print(f"memory_ratio = {peak / floor:.2f}")


if __name__ == "__main__":
    main()
