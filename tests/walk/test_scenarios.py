"""Each workshop scenario on the offline demo kit, every stage run: the report names exactly the causes the scenario
injects, owned by the checks it lists, and every other finding points at one of them; `fixed` names none.

These tests are the proof that the debugger catches what the course teaches, once, in one voice.
"""

import functools

import pytest

from diagnostics.walk.causes import causes, owners
from diagnostics.config.run import default_config
from diagnostics.config.training import SweepSettings
from diagnostics.core.context import RunContext
from diagnostics.walk.stages import run_stages
from diagnostics.core.result import Status
from diagnostics.config.scenarios import SCENARIOS, get_scenario

pytestmark = [pytest.mark.slow]

SWEEP = SweepSettings(rates=4, steps=8, range_steps=20)


@functools.lru_cache(maxsize=None)  # a scenario's run is read by several tests; none changes it
def run_scenario(name, seed=0):
    """Every stage of the scenario; under the other seeds learnability (half a kit walk's time: two runs of 36
    steps) runs only where it owns one of the scenario's causes, as seed 0 holds it to no false finding anywhere."""
    scenario = get_scenario(name)
    config = scenario.apply(default_config(False, seed=seed)).validated()
    skip = () if seed == 0 or "data.learnability" in scenario.expected_ids() else ("learnability",)
    return scenario, run_stages(RunContext.open(config), sweep=SWEEP, skip=skip)


def assert_one_voice(scenario, results):
    named = owners(results)
    assert all(scenario.caught(named).values()), (
        scenario.caught(named),
        [(c.owner, c.summary) for c in causes(results)],
    )
    assert scenario.unexpected(named) == [], [(c.owner, c.summary) for c in causes(results)]
    assert not [result.id for result in results if result.status is Status.ERROR]
    for result in results:  # every other finding points at the owner of a cause the scenario injects
        if result.status in (Status.WARN, Status.FAIL) and result.id not in named:
            assert result.explained_by in named and result.fix is None, result


# Scenarios whose causes are found before any training (the labels stop it): one seed decides nothing more.
UNTRAINED = ("course-script", "num-labels-too-small", "test-split-labels")


@pytest.mark.parametrize("name", UNTRAINED)
def test_a_scenario_stopped_by_its_labels_names_exactly_its_causes(name):
    assert_one_voice(*run_scenario(name))


@pytest.mark.parametrize("name", [name for name in SCENARIOS if name not in UNTRAINED])
def test_a_scenario_names_exactly_its_causes_under_each_seed(name, seed):
    assert_one_voice(*run_scenario(name, seed))


def test_the_course_script_names_two_failing_causes_and_two_warnings():
    scenario, results = run_scenario("course-script")
    found = {cause.owner: cause for cause in causes(results)}
    assert {owner: cause.status for owner, cause in found.items()} == {
        "model.config": Status.FAIL, "hparams.loss": Status.FAIL, "data.columns": Status.WARN,
        "hparams.optimizer": Status.WARN}
    # The head owns the labels it cannot take: the data's view of them, the fit call, the NaN rows and the step.
    assert set(found["model.config"].explains) == {"data.label_range", "model.forward", "model.nan_rows",
                                                   "model.gradients"}
    by_id = {result.id: result for result in results}
    # A blocked measurement states the blocker's measured result, and names its owner.
    assert by_id["overfit.one_batch"].status is Status.SKIP and "model.config" in by_id["overfit.one_batch"].summary
    assert "gradient is zero" not in by_id["overfit.one_batch"].summary


def test_a_rate_the_sweep_measured_broken_is_never_trained_by_the_other_measurements():
    _, results = run_scenario("lr-too-high")
    by_id = {result.id: result for result in results}
    assert by_id["hparams.lr_sweep"].evidence["configured_broke"]
    overfit, learnability = by_id["overfit.one_batch"], by_id["data.learnability"]
    assert overfit.evidence["rate_source"] == "usual" and overfit.evidence["learning_rate"] == 3e-3
    assert "0.1" in overfit.summary and "hparams.lr_sweep" in overfit.summary  # it says at which rate, and why
    assert learnability.evidence["learning_rate"] == 3e-3 and "usual rate" in learnability.summary


def test_fixed_scenario_has_no_cause(seed):
    _, results = run_scenario("fixed", seed)
    assert causes(results) == []
    assert {result.id: result for result in results}["overfit.one_batch"].status is Status.PASS


def test_unknown_scenario_is_a_clear_error():
    with pytest.raises(ValueError, match="Unknown scenario 'nope'"):
        get_scenario("nope")


def test_test_split_scenario_picks_the_task_test_split():
    assert get_scenario("test-split-labels").apply(default_config(False)).split == "test_matched"
    assert get_scenario("test-split-labels").apply(default_config(False, task="sst2")).split == "test"
