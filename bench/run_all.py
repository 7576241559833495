"""Runs every bench and rewrites the performance table of docs/performance.md from what they print.

    python bench/run_all.py                    run every bench, keep their output, rewrite the table
    python bench/run_all.py --only sweep_overhead split_scan    run these, keep the others' last output
    python bench/run_all.py --table-only       rewrite the table from the kept output alone
    python bench/run_all.py --check            say each kept figure beside its target; exit 1 when the table in
                                               docs/performance.md is not the kept output's

Each bench prints `name = value` lines, its figure last. The output of each run is kept in
`bench/results.json` with the machine it ran on, so a partial run keeps the other rows' figures.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from scripts.readme_tables import replace_between  # noqa: E402

RESULTS = ROOT / "bench" / "results.json"
PERFORMANCE_DOC = ROOT / "docs" / "performance.md"


@dataclass(frozen=True)
class Bench:
    name: str
    figure: str
    what: str
    shown: tuple[str, ...]  # the other printed figures the table's "measured" column gives
    target: str

    def meets(self, value: str) -> bool | None:
        """Whether a measured figure meets the target ("at most 1.5", "below 1", "under 0.5 s"); None for a target
        without a number, or a figure not measured."""
        found = re.match(r"(at most|below|under) ([0-9.]+)", self.target)
        try:
            measured = float(value)
        except ValueError:
            return None
        if found is None:
            return None
        limit = float(found.group(2))
        return measured <= limit if found.group(1) == "at most" else measured < limit


BENCHES = (
    Bench("startup", "startup_ratio", "a fresh process rendering the Data page on the demo kit (AppTest, first batch "
          "and split checks included) against a fresh process running `import tensorflow, transformers` (beyond it: "
          "importing Streamlit, pandas and `datasets`, Transformers listing its models for `AutoTokenizer`, the first "
          "batch's `to_tf_dataset`; `--profile`)",
          ("first_page_s", "import_tf_transformers_s", "second_session_first_page_s"), "at most 1.5"),
    Bench("page_switch", "page_switch_s", "median seconds to switch to a page whose results are already computed "
          "(AppTest; the slowest of the five pages)", (), "under 0.5 s"),
    Bench("concurrent_pages", "page_while_training_ratio", "a new session opening the Data page for a new task while "
          "another session runs a 1000-epoch overfit test, against the same with nothing else running (one "
          "`streamlit run` server, Chromium)", ("data_page_while_training_s", "data_page_alone_s"),
          "no target; heavy checks must not block other sessions"),
    Bench("split_scan", "split_scan_ratio", "label range, label balance and duplicates over a 400,000-row "
          "MNLI-schema split, first scan, against Arrow's `value_counts` of the labels plus one hash group-by of "
          "the texts on the same in-memory table", ("split_checks_first_scan_s", "arrow_floor_s",
                                                     "split_scan_ratio_rescan"), "at most 3"),
    Bench("sweep_overhead", "sweep_overhead_ratio", "the sweep over 7 rates x 8 steps on the real checkpoint (batch "
          "8), warm, against 7 x 8 calls of the same traced train function on the same tensors (what is left: "
          "scoring each rate on held-out rows through the copy's traced forward pass, and each rate's reset and "
          "drift; `--profile`)", ("sweep_s", "floor_s", "sweep_setup_s"),
          "at most 1.3"),
    Bench("sweep_overhead", "sweep_vs_by_hand_ratio", "the same sweep from cold (copy and trace included) against "
          "writing it by hand: `from_pretrained`, `compile`, `fit` for 8 steps and `evaluate` at each of the 7 "
          "rates", ("sweep_cold_s", "by_hand_s"), "below 1"),
    Bench("overfit_ratio", "overfit_ratio", "the overfit test against plain `model.fit(batch, epochs=20)` on a fresh "
          "copy of the real checkpoint, both including copy, compile and trace", ("overfit_test_s", "plain_fit_s"),
          "at most 1.2"),
    Bench("memory", "memory_ratio", "peak resident memory of a four-stage command-line run on a DistilBERT-base-size "
          "model (67M parameters, random weights, built locally) against weights + gradients + Adam's two slots "
          "in float32 plus the TensorFlow runtime alone", ("four_stage_peak_mib", "floor_mib"), "at most 2.0"),
    Bench("room", "room_ratio", "10 sessions asking at once for the same sweep (7 rates x 8 steps and the range "
          "test, the string-\"adam\" scenario on the demo kit; threads making the pages' own calls on the shared "
          "results) until all have it, against one session alone", ("room_s", "one_session_s", "sweeps_trained"),
          "at most 1.2"),
    Bench("docs_recipe", "docs_recipe_ratio",
          "`trace` of the Transformers docs' TensorFlow recipe (a numpy dict padded "
          "to the longest row, `fit(tokenized, labels)` with no loss, then `prepare_tf_dataset` and a second fit; 700 "
          "rows, the demo kit) against the same script run plainly, each in fresh processes",
          ("plain_s", "trace_s", "plain_peak_mib", "trace_peak_mib", "trace_extra_mib"), "at most 2"),
    Bench("unit_times", "walk_s", "the whole walk through the one runner on the demo kit (MNLI, batch 16), with "
          "the training steps it takes; `--checkpoint` and `--data-files` time it on the real checkpoint",
          ("training_steps",), "no target; where the walk's time goes, unit by unit"),
)
SCRIPTS = tuple(dict.fromkeys(bench.name for bench in BENCHES))


def figures(output: str) -> dict[str, str]:
    """The `name = value` lines a bench printed."""
    return dict(re.findall(r"^(\w+) = (\S+)\s*$", output, re.M))


def run(name: str) -> dict:
    start = time.perf_counter()
    done = subprocess.run([sys.executable, str(ROOT / "bench" / f"{name}.py")], cwd=ROOT, capture_output=True,
                          text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    if done.returncode:
        raise SystemExit(f"bench/{name}.py failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return {"figures": figures(done.stdout), "seconds": round(time.perf_counter() - start, 1),
            "machine": f"{os.cpu_count()} CPU cores, {platform.machine()}", "date": time.strftime("%Y-%m-%d")}


def table(results: dict) -> str:
    lines = ["| figure | what it compares | command | measured | target | met |", "|---|---|---|---|---|---|"]
    for bench in BENCHES:
        kept = results.get(bench.name, {}).get("figures", {})
        value = kept.get(bench.figure, "not run yet")
        others = ", ".join(f"{name} {kept[name]}" for name in bench.shown if name in kept)
        met = {True: "yes", False: "**no**", None: ""}[bench.meets(value)]
        lines.append(f"| `{bench.figure}` | {bench.what} | `python bench/{bench.name}.py` | "
                     f"{value}{f' ({others})' if others else ''} | {bench.target} | {met} |")
    machines = sorted({kept["machine"] for kept in results.values() if "machine" in kept})
    dates = sorted({kept["date"] for kept in results.values() if "date" in kept})
    if machines:
        lines += ["", f"Measured by `python bench/run_all.py` on {', '.join(machines)}, "
                  f"{dates[0] if len(dates) == 1 else f'{dates[0]} to {dates[-1]}'}."]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="+", choices=SCRIPTS, help="run only these benches")
    parser.add_argument("--table-only", action="store_true", help="rewrite the table from bench/results.json")
    parser.add_argument("--check", action="store_true", help="say each kept figure beside its target; fail when "
                        "docs/performance.md's table is not bench/results.json's")
    args = parser.parse_args()
    results = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    if args.check:
        for bench in BENCHES:
            value = results.get(bench.name, {}).get("figures", {}).get(bench.figure, "not run yet")
            verdict = {True: "meets", False: "OVER", None: "-"}[bench.meets(value)]
            print(f"{bench.figure} = {value}  (target: {bench.target}; {verdict})")
        written = PERFORMANCE_DOC.read_text()
        if replace_between(written, "performance", table(results)) != written:
            print("docs/performance.md's table is not bench/results.json's: run python bench/run_all.py --table-only")
            return 1
        return 0
    if not args.table_only:
        for name in args.only or SCRIPTS:
            print(f"running bench/{name}.py", flush=True)
            results[name] = run(name)
            print("  " + ", ".join(f"{k} = {v}" for k, v in results[name]["figures"].items()), flush=True)
            RESULTS.write_text(json.dumps(results, indent=2, sort_keys=True) + "\n")
    PERFORMANCE_DOC.write_text(replace_between(PERFORMANCE_DOC.read_text(), "performance", table(results)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
