"""Docs recipe: `trace` of the Transformers docs' TensorFlow fine-tuning recipe / the same script run plainly.

The recipe ("Fine-tune a pretrained model", TensorFlow): the texts tokenized at once into a numpy dict padded to the
split's longest row, `compile(optimizer=Adam(...))` with no loss, `fit(tokenized, labels)`, then `prepare_tf_dataset`
and a second fit. Written here as a user would, on the demo kit's SST-2 rows repeated to `--rows` (or a checkpoint
directory's own tokenizer and weights with `--checkpoint`). Both sides run in fresh processes; each side's peak
resident memory is the largest of its processes (the trace's child included).

    python bench/docs_recipe.py [--rows 700] [--checkpoint DIR --rate 5e-5] [--data FILE] [--stages data,model]
    python bench/docs_recipe.py --checkpoint .cache-test/real-checkpoint/all-MiniLM-L6-v2 \
        --data tests/data/sst2/train.tsv          real sentences on a real checkpoint

`--stages` traces only those stages (the suite's small mode, which checks that the bench runs, not its figure).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
import subprocess
import sys
import tempfile
import time

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "diagnostics" / "demo_data" / "sst2" / "train.jsonl"

RECIPE = '''
import json
import sys

import numpy as np
import tf_keras as keras
from datasets import Dataset
from transformers import AutoTokenizer, TFAutoModelForSequenceClassification

checkpoint, data, rows, rate = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
if data.endswith(".tsv"):  # GLUE's own SST-2 file: a header, then sentence<TAB>label
    import csv

    records = [{"sentence": row["sentence"], "label": int(row["label"])}
               for row in csv.DictReader(open(data), delimiter="\t", quoting=csv.QUOTE_NONE)]
else:
    records = [json.loads(line) for line in open(data)]
records = (records * (rows // len(records) + 1))[:rows]
tokenizer = AutoTokenizer.from_pretrained(checkpoint)
tokenized = dict(tokenizer([r["sentence"] for r in records], return_tensors="np", padding=True))
labels = np.array([r["label"] for r in records])

model = TFAutoModelForSequenceClassification.from_pretrained(checkpoint, num_labels=2)
model.compile(optimizer=keras.optimizers.Adam(rate))
model.fit(tokenized, labels, epochs=1)

dataset = Dataset.from_list(records).map(lambda batch: tokenizer(batch["sentence"]), batched=True)
tf_dataset = model.prepare_tf_dataset(dataset, batch_size=16, shuffle=True, tokenizer=tokenizer)
model.compile(optimizer=keras.optimizers.Adam(rate))
model.fit(tf_dataset, epochs=1)
'''

# Runs a command and prints the largest resident memory of it and every process it started (waited for).
PEAK = ("import resource, subprocess, sys; done = subprocess.run(sys.argv[1:]); "
        "print('peak_kib', resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); sys.exit(done.returncode)")


def measured(command: list[str], cwd: Path) -> tuple[float, float]:
    """(seconds, peak MiB) of a command in a fresh process tree."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TF_CPP_MIN_LOG_LEVEL": "3", "PYTHONPATH": str(ROOT)}
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", PEAK, *command], cwd=cwd, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode:
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    peak = int(next(line for line in done.stdout.splitlines() if line.startswith("peak_kib")).split()[1])
    return seconds, peak / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=700)
    parser.add_argument("--checkpoint", default=None, help="a save_pretrained directory (default: the demo kit's)")
    parser.add_argument("--rate", type=float, default=None, help="Adam's rate (default: 3e-3 for the kit, 5e-5 else)")
    parser.add_argument("--data", default=str(DATA), help="SST-2 rows: a .jsonl of sentence/label (default: the "
                        "kit's) or GLUE's .tsv (real sentences: tests/data/sst2/train.tsv)")
    parser.add_argument("--stages", default=None, help="the stages the trace runs (default: all)")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from diagnostics.keras.loading import demo_checkpoint_dir

    checkpoint = str(Path(args.checkpoint).resolve()) if args.checkpoint else str(demo_checkpoint_dir())
    rate = args.rate or (3e-3 if args.checkpoint is None else 5e-5)
    with tempfile.TemporaryDirectory() as work:
        script = Path(work) / "recipe.py"
        script.write_text(RECIPE)
        script_args = [checkpoint, str(Path(args.data).resolve()), str(args.rows), str(rate)]
        plain_s, plain_mib = measured([sys.executable, str(script), *script_args], Path(work))
        stages = ["--stages", args.stages] if args.stages else []
        trace_s, trace_mib = measured([sys.executable, "-m", "diagnostics", "trace", str(script), *stages, "--json",
                                       str(Path(work) / "report.json"), "--", *script_args], Path(work))
    print(f"checkpoint = {Path(checkpoint).name}")
    print(f"data = {Path(args.data).name}")
    print(f"rows = {args.rows}")
    print(f"stages = {args.stages or 'all'}")
    print(f"plain_s = {plain_s:.1f}")
    print(f"trace_s = {trace_s:.1f}")
    print(f"plain_peak_mib = {plain_mib:.0f}")
    print(f"trace_peak_mib = {trace_mib:.0f}")
    print(f"trace_extra_mib = {trace_mib - plain_mib:.0f}")
    print(f"docs_recipe_ratio = {trace_s / plain_s:.2f}")


if __name__ == "__main__":
    main()
