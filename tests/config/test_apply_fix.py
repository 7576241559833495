""""Apply the fix" as settings: each workshop scenario's causes, fixed through `config.apply_fix`, leave the
configuration the course's fixed script has (the sweep's own rate for a rate too high)."""

import pytest

from diagnostics.config.apply_fix import config_change, fixed, said
from diagnostics.config.run import RunConfig
from diagnostics.config.scenarios import SCENARIOS
from diagnostics.core.result import CheckResult, Status

SWEEP = CheckResult("hparams.lr_sweep", "hparams", Status.FAIL, "too high", evidence={"best_rate": 2e-3})


@pytest.mark.parametrize("name", [name for name in SCENARIOS if name != "fixed"])
def test_the_fix_of_each_cause_a_scenario_injects_undoes_what_it_set(name):
    scenario = SCENARIOS[name]
    config = scenario.apply(RunConfig(checkpoint="demo"))
    for owners in scenario.expected:
        owner = next(owner for owner in (owners if isinstance(owners, tuple) else (owners,))
                     if config_change(owner, config, [SWEEP]) is not None)
        config = fixed(config, config_change(owner, config, [SWEEP]))
    healthy = SCENARIOS["fixed"].apply(RunConfig(checkpoint="demo", task=config.task))
    for field in scenario.settings:
        if field == "learning_rate":
            assert config.learning_rate == 2e-3  # the sweep's measured rate, never a guess
        elif field == "split":
            assert config.split == "train"
        elif field != "task":
            assert getattr(config, field) == getattr(healthy, field), (field, getattr(config, field))


def test_no_setting_fixes_what_the_data_or_a_script_got_wrong_and_a_change_already_in_is_not_offered():
    config = RunConfig(checkpoint="demo")
    assert config_change("data.label_range", config) is None  # labels wrong in a file: the data's, not a setting
    assert config_change("model.weights_after_step", config) is None
    assert config_change("model.config", config) is None  # num_labels is already the task's
    assert config_change("hparams.lr_sweep", config, []) is None  # no measured rate, no guess
    assert said({"num_labels": None, "loss": "internal"}) == "num_labels=None, loss='internal'"
    # Once applied, a count left to the task is said as the count, as the cause's fix writes it (it once read
    # "Applied the fix of model.config (num_labels=None)" beside a fix of num_labels=3).
    mnli = RunConfig(task="mnli", num_labels=2)
    assert said({"num_labels": None}, fixed(mnli, {"num_labels": None})) == "num_labels=3"


def test_apply_sets_the_rate_the_card_shows_rounded_as_the_fix_writes_it():
    from diagnostics.core.fixes import RateFix

    grid = CheckResult("hparams.lr_sweep", "hparams", Status.FAIL, "too high",
                       evidence={"best_rate": 0.002154434690031882})
    assert config_change("hparams.lr_sweep", RunConfig(checkpoint="demo"), [grid]) == {"learning_rate": 2e-3}
    # The string 'adam': the Adam object at the rate its card names (the sweep's, once it ran), never the old one.
    card = CheckResult("hparams.optimizer", "hparams", Status.WARN, "adam", fix=RateFix(0.002154434690031882))
    assert config_change("hparams.optimizer", RunConfig(checkpoint="demo", optimizer="adam"), [card]) == {
        "optimizer": "Adam", "learning_rate": 2e-3}
    assert "2e-03" in str(card.fix)
