"""The benches run in a small mode here, so that one a change breaks fails the suite instead of rotting unseen
(bench/split_scan.py once stopped starting for a whole release). Only that they run and print their figure is
checked: timings are never asserted in tests."""

import re
import subprocess
import sys

import pytest

from conftest import ROOT

pytestmark = pytest.mark.subprocess

SMALL = {"split_scan.py": (["--rows", "20000", "--repeats", "1"], "split_scan_ratio")}


@pytest.mark.parametrize("bench", sorted(SMALL))
def test_a_bench_runs_in_its_small_mode_and_prints_its_figure(bench):
    args, figure = SMALL[bench]
    done = subprocess.run([sys.executable, str(ROOT / "bench" / bench), *args], cwd=ROOT / "bench",
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert re.search(rf"^{figure} = [0-9.]+$", done.stdout, re.M), done.stdout[-2000:]


def test_every_bench_imports_what_it_uses():
    """Every bench's imports resolve (bench/unit_times.py once imported the runner from where it no longer was);
    each file is run as a module, not as the main script, so nothing is measured."""
    benches = sorted(path.name for path in (ROOT / "bench").glob("*.py"))
    code = ("import runpy, sys; sys.path.insert(0, '.'); sys.path.insert(0, '..')\n"
            f"for name in {benches!r}:\n    runpy.run_path(name, run_name='bench_import')\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT / "bench", capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
