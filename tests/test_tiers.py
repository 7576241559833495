"""The default tier keeps to its budget: the README's test command, run just before in CI's way (`.ci/run` runs the
default tier, then this file with the full tier), took at most its ten minutes of wall time on two workers, and no
file of it took more of a worker's time than its budget in tests/tiers.py. The figures are pytest's own (each test's
setup, call and teardown), written by that run (`tests/tiers.py`); nothing here times anything itself."""

import json
import os

import pytest

import tiers

@pytest.mark.slow
def test_the_default_tier_kept_to_its_budget_wall_time_and_each_files():
    path = tiers.times_dir() / "default.json"
    if not path.exists():
        assert not os.environ.get("CI"), f"CI runs the default tier first and it writes {path} (.ci/run)"
        pytest.skip(f"no run of the whole default tier is recorded in {path}: run `python -m pytest` first")
    record = json.loads(path.read_text())
    assert record["tests"] > 500, record["tests"]  # the whole tier, not a part of it
    assert tiers.over_budget(record) == []


def test_a_record_over_its_budget_is_named_file_by_file():
    """The judgement on records made up for it: a file over its own budget, one over the default, the wall time; and
    the same files on a machine twice as slow, whose every file took twice as long, within their budgets."""
    named = next(iter(tiers.FILE_BUDGETS))
    files = {named: tiers.FILE_BUDGETS[named] + 1, "tests/test_other.py": tiers.FILE_BUDGET + 1,
             "tests/test_quick.py": 1.0}
    found = tiers.over_budget({"wall": tiers.WALL_BUDGET + 1, "tests": 900, "files": files})
    assert len(found) == 3 and "10:01 wall" in found[0], found
    assert {line.split(" took ")[0] for line in found[1:]} == {named, "tests/test_other.py"}
    assert f"tests/test_other.py took 16 s of a worker's time, over its budget of {tiers.FILE_BUDGET:.0f} s x 1.00" \
        in found[1]
    within = {path: tiers.FILE_BUDGETS.get(path, tiers.FILE_BUDGET) * 0.9 for path in files}
    rest = tiers.REFERENCE_WORKER_SECONDS - sum(within.values())  # the tier's other files, each within its budget
    many = int(rest // (tiers.FILE_BUDGET * 0.9)) + 1
    slow_day = {**{path: 2 * seconds for path, seconds in within.items()},
                **{f"tests/test_rest_{i}.py": 2 * rest / many for i in range(many)}}
    assert tiers.over_budget({"wall": 500, "tests": 900, "files": slow_day}) == []
