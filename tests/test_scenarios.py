"""Each workshop scenario on the offline demo kit: the checks it names must warn or fail, and `fixed` has no fail.

These tests are the proof that the debugger catches what the course teaches.
"""

import pytest

from diagnostics.config import default_config
from diagnostics.hyperparams import SweepSettings
from diagnostics.context import RunContext
from diagnostics.pipeline import STAGES, run_stages
from diagnostics.result import Status
from diagnostics.scenarios import SCENARIOS, get_scenario

SWEEP = SweepSettings(rates=4, steps=8, range_steps=20)


def stages_for(scenario) -> tuple[str, ...]:
    needed = {check.split(".")[0] for check in scenario.expected_ids()} or set(STAGES)
    return tuple(stage for stage in STAGES if stage in needed)


def run_scenario(name, seed=0):
    scenario = get_scenario(name)
    config = scenario.apply(default_config(False, seed=seed)).validated()
    results = run_stages(RunContext.open(config), stages_for(scenario), sweep=SWEEP)
    return scenario, {result.id: result for result in results}


@pytest.mark.parametrize("name", [name for name in SCENARIOS if name != "fixed"])
def test_scenario_is_flagged_by_its_checks(name, seed):
    scenario, results = run_scenario(name, seed)
    caught = scenario.caught({check: result.status.value for check, result in results.items()})
    assert caught and all(caught.values()), caught
    assert not [r.id for r in results.values() if r.status is Status.ERROR]


def test_fixed_scenario_has_no_failure(seed):
    scenario, results = run_scenario("fixed", seed)
    assert set(stages_for(scenario)) == set(STAGES)
    assert [r.id for r in results.values() if r.status in (Status.FAIL, Status.ERROR)] == []
    assert results["overfit.one_batch"].status is Status.PASS


def test_unknown_scenario_is_a_clear_error():
    with pytest.raises(ValueError, match="Unknown scenario 'nope'"):
        get_scenario("nope")


def test_test_split_scenario_picks_the_task_test_split():
    assert get_scenario("test-split-labels").apply(default_config(False)).split == "test_matched"
    assert get_scenario("test-split-labels").apply(default_config(False, task="sst2")).split == "test"
