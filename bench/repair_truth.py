"""Does a repaired script train better? `trace --repair` on a script the debugger did not shape, then both scripts
trained in full on real text and scored on held-out rows.

The script is tests/scripts/sentiment_string_adam.py: the Transformers docs' TensorFlow recipe on SST-2 sentences
(tests/data/sst2/train.tsv) with the optimizer given as the string "adam" (a rate of 1e-3). The bench copies it to a
scratch folder, traces it with `--repair` (which writes the sweep's measured rate into its `compile` and traces the
repaired copy again), then runs the original and the repaired script as a user would, each for `--epochs` epochs,
and reads the accuracy each prints on the held-out rows.

Prints:
  original_accuracy   held-out accuracy of the script as written
  repaired_accuracy   held-out accuracy of the script `--repair` wrote
  majority            the share of the held-out rows' commonest label (what a model that learned nothing scores)
  repair              each cause's verdict and the lines it changed
  repair_truth_ratio  repaired_accuracy / original_accuracy

    python bench/repair_truth.py [--checkpoint DIR] [--epochs 10]
    (default checkpoint: all-MiniLM-L6-v2, fetched by scripts/real_checkpoint.py; about 15 minutes on 2 cores)
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "tests" / "scripts" / "sentiment_string_adam.py"
DATA = ROOT / "tests" / "data" / "sst2" / "train.tsv"
SCORE = re.compile(r"held-out accuracy ([0-9.]+) on (\d+) rows; majority class ([0-9.]+)")


def run(command: list[str], timeout: float) -> str:
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0 and "trace" not in command:
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stderr[-3000:]}")
    return done.stdout


def score(script: Path, arguments: list[str]) -> tuple[float, int, float]:
    found = SCORE.search(run([sys.executable, str(script), *arguments], timeout=3600))
    if found is None:
        raise SystemExit(f"{script.name} printed no held-out accuracy")
    return float(found.group(1)), int(found.group(2)), float(found.group(3))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", help="a save_pretrained directory, or demo (default: the real checkpoint)")
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--held-out", type=int, default=150)
    parser.add_argument("--trace-args", default="", help="more options for trace, e.g. '--stages data,model'")
    args = parser.parse_args()

    sys.path.insert(0, str(ROOT))
    if args.checkpoint in (None, "real"):
        sys.path.insert(0, str(ROOT / "scripts"))
        from real_checkpoint import real_checkpoint_dir

        checkpoint = str(real_checkpoint_dir())
    elif args.checkpoint == "demo":
        from diagnostics.keras.loading import demo_checkpoint_dir

        checkpoint = str(demo_checkpoint_dir())
    else:
        checkpoint = args.checkpoint

    folder = Path(tempfile.mkdtemp(prefix="repair-truth-"))
    try:
        original, repaired, report = folder / "train.py", folder / "train.repaired.py", folder / "report.json"
        shutil.copy(SCRIPT, original)
        script_args = ["--checkpoint", checkpoint, "--data", str(DATA), "--epochs", str(args.epochs),
                       "--held_out", str(args.held_out)]
        run([sys.executable, "-m", "diagnostics", "trace", str(original), "--repair", str(repaired), "--json",
             str(report), *args.trace_args.split(), "--", *script_args], timeout=3600)
        repair = json.loads(report.read_text()).get("repair") or {}
        for cause in repair.get("causes", []):
            print(f"repair: {cause['owner']} {cause['state']}")
        for edit in repair.get("edits", []):
            print(f"  line {edit.get('line')}: {str(edit.get('before')).strip()}  ->  {str(edit.get('after')).strip()}")
        before = score(original, script_args)
        after = score(repaired, script_args) if repaired.exists() else before
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    print(f"held-out rows = {before[1]}, epochs = {args.epochs}, checkpoint = {Path(checkpoint).name}")
    print(f"majority = {before[2]:.3f}")
    print(f"original_accuracy = {before[0]:.3f}")
    print(f"repaired_accuracy = {after[0]:.3f}")
    print(f"repair_truth_ratio = {after[0] / max(before[0], 1e-9):.2f}")


if __name__ == "__main__":
    main()
