"""The benches run in a small mode here, so that one a change breaks fails the suite instead of rotting unseen
(bench/split_scan.py once stopped starting for a whole release). Only that they run and print their figure is
checked: timings are never asserted in tests."""

import re
import subprocess
import sys

import pytest

from conftest import ROOT

pytestmark = pytest.mark.subprocess

# Every bench of bench/, each with the arguments of its small mode and the figure it prints last (run_all.py's
# own is --check: the performance table is the kept figures', each said beside its target).
SMALL = {
    "split_scan.py": (["--rows", "20000", "--repeats", "1"], "split_scan_ratio"),
    "startup.py": (["--repeats", "1"], "startup_ratio"),
    "page_switch.py": (["--rounds", "1"], "page_switch_s"),
    "overfit_ratio.py": (["--checkpoint", "demo", "--epochs", "3", "--repeats", "1"], "overfit_ratio"),
    "sweep_overhead.py": (["--checkpoint", "demo", "--rates", "2", "--steps", "2", "--repeats", "1",
                          "--by-hand-repeats", "1"],
                          "sweep_overhead_ratio"),
    "memory.py": (["--size", "tiny", "--sweep-rates", "2", "--sweep-steps", "2", "--range-steps", "5", "--epochs",
                   "2"], "memory_ratio"),
    "room.py": (["--sessions", "2", "--rates", "2", "--steps", "2", "--range-steps", "5"], "room_ratio"),
    "unit_times.py": (["--sweep-rates", "2", "--sweep-steps", "2", "--range-steps", "5", "--epochs", "2"], "walk_s"),
    "docs_recipe.py": (["--rows", "64", "--stages", "data,model"], "docs_recipe_ratio"),
    "repair_truth.py": (["--checkpoint", "demo", "--epochs", "1", "--trace-args=--stages data,model"],
                        "repair_truth_ratio"),
    "run_all.py": (["--check"], "room_ratio"),
}
# Those that start a streamlit server and drive Chromium (or its websocket).
BROWSER = {
    "costly_checkpoints.py": (["--tokenizers", "2", "--tokenizer-mib", "30", "--small", "--worker-gib", "1"],
                              "other_page_ratio"),
    "concurrent_pages.py": (["--epochs", "30"], "page_while_training_ratio"),
    "shared_server.py": (["--distinct", "1", "--same", "1", "--timeout", "120"], "answered_share"),
    "churn.py": (["--pages", "3", "--hosted"], "churn_slope_mib_per_100_pages"),
}
# The one that fine-tunes the real checkpoint for the truth it judges the debugger by.
REAL = {"lr_truth.py": (["--tasks", "mrpc", "--steps", "2", "--rates", "1e-05,0.001", "--truth-only", "--refresh"],
                        "truth_rates")}


def ran(bench: str, args: list[str], figure: str) -> None:
    done = subprocess.run([sys.executable, str(ROOT / "bench" / bench), *args], cwd=ROOT / "bench",
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:] + done.stdout[-2000:]
    assert re.search(rf"^{figure} = [0-9.]+", done.stdout, re.M), done.stdout[-2000:]


def test_every_bench_has_a_small_mode_here():
    benches = {path.name for path in (ROOT / "bench").glob("*.py")} - {"lr_truth_debugger.py"}  # lr_truth's helper
    assert sorted({**SMALL, **BROWSER, **REAL}) == sorted(benches)


@pytest.mark.slow
@pytest.mark.parametrize("bench", sorted(SMALL))
def test_a_bench_runs_in_its_small_mode_and_prints_its_figure(bench):
    ran(bench, *SMALL[bench])


@pytest.mark.slow
@pytest.mark.browser
@pytest.mark.parametrize("bench", sorted(BROWSER))
def test_a_bench_driving_a_browser_runs_in_its_small_mode(bench):
    ran(bench, *BROWSER[bench])


@pytest.mark.slow
@pytest.mark.real_checkpoint
def test_the_rate_truth_bench_runs_in_its_small_mode(real_checkpoint):
    ran("lr_truth.py", *REAL["lr_truth.py"])


def test_every_bench_imports_what_it_uses():
    """Every bench's imports resolve (bench/unit_times.py once imported the runner from where it no longer was);
    each file is run as a module, not as the main script, so nothing is measured."""
    benches = sorted(path.name for path in (ROOT / "bench").glob("*.py"))
    code = ("import runpy, sys; sys.path.insert(0, '.'); sys.path.insert(0, '..')\n"
            f"for name in {benches!r}:\n    runpy.run_path(name, run_name='bench_import')\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT / "bench", capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
