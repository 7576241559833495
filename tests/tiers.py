"""The suite's two tiers and their times (docs/testing.md says which tier holds each kind of proof).

- The default tier, `python -m pytest` (the README's test command): every test not marked `slow`. A test that drives
  a browser or runs the real checkpoint is marked `slow` whatever it declares (tests/conftest.py), and so are the
  second and third seed of the `seed` fixture.
- The full tier, `RUN_SLOW=1 python -m pytest -m slow`: only the tests the default tier leaves out (`.ci/run` runs it
  after the default tier). `RUN_SLOW=1 python -m pytest` runs both tiers in one go.

Each run prints its wall time and its ten slowest files, and a run of a whole tier writes them to
`$TEST_TIMES_DIR/<tier>.json` (`.test-times/` in the clone by default), which `tests/test_tiers.py` holds to the
budgets below, so the default tier cannot grow back past its ten minutes unseen.
"""

from __future__ import annotations

import json
import os
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FULL = os.environ.get("RUN_SLOW", "").strip().lower() not in ("", "0", "false", "no")

# The default tier's budget, from the README's command on a fresh clone on 2 cores: its wall time (ten
# minutes, whatever the machine), and each file's seconds of a worker's time (setup, call and teardown of its tests,
# as pytest measures them). A file not named here has FILE_BUDGET. Each named budget is about 1.5 times what the file
# took on 2026-11-28, when the whole tier took REFERENCE_WORKER_SECONDS of the workers' time; on a machine slower
# than that one (the same tree has taken twice as long on another day) every file's budget grows by the run's own
# ratio to it, so a file that grows half again past its share fails on any machine and a slow day alone does not.
WALL_BUDGET = 600.0
REFERENCE_WORKER_SECONDS = 530.0
FILE_BUDGET = 15.0
FILE_BUDGETS = {
    "tests/walk/test_first_page.py": 20.0,  # 18 kit stages, each page opened first (8 s measured alone)
    "tests/usercode/test_own_code.py": 90.0,
    "tests/usercode/matrix/test_matrix_healthy.py": 70.0,
    "tests/app/test_bad_input.py": 70.0,
    "tests/usercode/test_foreign_code.py": 62.0,
    "tests/app/test_pages.py": 60.0,
    "tests/keras/test_data_files.py": 45.0,
    "tests/i18n/test_i18n.py": 38.0,
    "tests/walk/test_registry.py": 50.0,  # or test_cli.py: the first to ask runs the shared full_demo_run
    "tests/test_package.py": 32.0,
    "tests/usercode/test_every_fit.py": 31.0,
    "tests/checks/test_hyperparams.py": 30.0,
    "tests/usercode/matrix/test_matrix_bugs.py": 30.0,
    "tests/walk/test_runner.py": 26.0,
    "tests/checks/test_model.py": 25.0,
    "tests/test_cli.py": 40.0,
    "tests/app/test_script_page.py": 28.0,
    "tests/usercode/test_taken_as_built.py": 30.0,  # diagnose() of the Model and Hyperparameters stages, and of Data
    "tests/usercode/test_unknowns.py": 20.0,  # two diagnose() runs of every stage
    "tests/usercode/test_notebook_shapes.py": 40.0,  # 13 traces of notebooks with the short checks (28 s in CI)
    "tests/usercode/test_own_environment.py": 30.0,  # a traced probe twice, and a fresh notebook process
    "tests/serve/test_worker.py": 80.0,  # six worker processes (TensorFlow imported in each), two ended (55 s in CI)
}


def tier_of(config) -> str | None:
    """The tier this run is, when it runs one whole ("default", "full" or "both"), or None for a part of one (a
    path, `-k`, or a marker expression other than the full tier's)."""
    whole = not config.option.keyword and [str(arg) for arg in config.args] in ([], *([path] for path in
                                                                                     config.getini("testpaths")))
    marks = config.option.markexpr.strip()
    if not whole:
        return None
    if not FULL:
        return "default" if not marks else None
    return {"": "both", "slow": "full"}.get(marks)


def select(config, items) -> None:
    """Leave the full tier's tests out of a run without RUN_SLOW (reported as deselected, with a line that says so)."""
    if FULL:
        return
    left = [item for item in items if item.get_closest_marker("slow")]
    if left:
        config.hook.pytest_deselected(items=left)
        items[:] = [item for item in items if not item.get_closest_marker("slow")]
    config._tiers_left_out = len(left)


class Times:
    """Each file's seconds, added up from the reports the controller receives (one per phase of each test)."""

    def __init__(self):
        self.started = time.monotonic()
        self.files: Counter[str] = Counter()
        self.tests: Counter[str] = Counter()

    def add(self, report) -> None:
        path = report.nodeid.split("::", 1)[0]
        self.files[path] += report.duration
        if report.when == "call":
            self.tests[path] += 1

    def summary(self, config, terminalreporter) -> None:
        wall = time.monotonic() - self.started
        tier = tier_of(config)
        name = tier or ("full tier, a part" if FULL else "default tier, a part")
        write = terminalreporter.write_line
        terminalreporter.section(f"times: {name}")
        write(f"{sum(self.tests.values())} tests in {minutes(wall)} wall, {minutes(sum(self.files.values()))} of "
              "the workers' time")
        left = getattr(config, "_tiers_left_out", 0)
        if left:
            write(f"{left} tests of the full tier left out (RUN_SLOW=1 runs them; docs/testing.md)")
        write("the ten slowest files (seconds of a worker's time, tests):")
        for path, seconds in self.files.most_common(10):
            write(f"  {seconds:7.1f}  {self.tests[path]:4d}  {path}")
        if tier is not None and not config.option.collectonly and self.tests:
            folder = times_dir()
            folder.mkdir(parents=True, exist_ok=True)
            (folder / f"{tier}.json").write_text(json.dumps(
                {"tier": tier, "wall": round(wall, 1), "tests": sum(self.tests.values()),
                 "workers": str(getattr(config.option, "numprocesses", None) or 0),
                 "files": {path: round(seconds, 2) for path, seconds in sorted(self.files.items())}}, indent=1))


def times_dir() -> Path:
    return Path(os.environ.get("TEST_TIMES_DIR") or ROOT / ".test-times")


def minutes(seconds: float) -> str:
    return f"{int(seconds // 60)}:{int(seconds % 60):02d}"


def over_budget(record: dict) -> list[str]:
    """What of a default-tier record is over its budget, one line each: the wall time, then each file over its
    budget grown by the machine's speed (the run's workers' time against REFERENCE_WORKER_SECONDS, never below 1)."""
    slower = max(1.0, sum(record["files"].values()) / REFERENCE_WORKER_SECONDS)
    found = [f"the default tier took {minutes(record['wall'])} wall, over its {minutes(WALL_BUDGET)}"
             for _ in [0] if record["wall"] > WALL_BUDGET]
    return found + [f"{path} took {seconds:.0f} s of a worker's time, over its budget of "
                    f"{FILE_BUDGETS.get(path, FILE_BUDGET):.0f} s x {slower:.2f} for this machine (tests/tiers.py)"
                    for path, seconds in sorted(record["files"].items())
                    if seconds > FILE_BUDGETS.get(path, FILE_BUDGET) * slower]
