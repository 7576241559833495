"""A scenario's settings against a configuration: which of them the configuration no longer holds (its fix)."""

from dataclasses import replace

from diagnostics.config.run import RunConfig
from diagnostics.config.scenarios import SCENARIOS


def test_a_configuration_with_the_scenario_applied_has_changed_nothing_and_its_fix_is_named():
    scenario = SCENARIOS["course-script"]
    applied = scenario.apply(RunConfig())
    assert scenario.changed(applied) == []
    fixed = replace(applied, num_labels=3, loss="internal")
    assert scenario.changed(fixed) == ["loss", "num_labels"]


def test_a_test_split_scenario_counts_the_tasks_own_test_split_as_applied():
    scenario = SCENARIOS["test-split-labels"]
    applied = scenario.apply(RunConfig(task="mnli"))
    assert applied.split.startswith("test") and scenario.changed(applied) == []
    assert scenario.changed(replace(applied, split="train")) == ["split"]
