"""Whatever page of the walk opens first (a workshop link lands on any of them), no check names a cause the scenario
does not inject: a finding that is a later check's cause points at that check, pending, from the first page on
(`causes.explain`). Each stage alone on the kit, as its page runs it, with nothing else run."""

import pytest

from diagnostics.config.run import default_config
from diagnostics.config.scenarios import SCENARIOS
from diagnostics.core.context import RunContext
from diagnostics.core.result import Status
from diagnostics.walk import registry
from diagnostics.walk.causes import causes, explain
from diagnostics.walk.runner import run_units

# The pages that run without training a copy: the Data page's quick units, the Model page (the Hyperparameters and
# Overfit pages train; the scenarios' walk, tests/walk/test_scenarios.py, runs them after the others).
PAGES = {"data": [unit for unit in registry.units_of("data") if not registry.UNITS[unit].copy], "model": ["model"]}


@pytest.mark.parametrize("page", PAGES)
@pytest.mark.parametrize("name", SCENARIOS)
def test_a_page_opened_first_names_only_causes_the_scenario_injects_and_no_fix_of_another_checks(name, page):
    scenario = SCENARIOS[name]
    config = scenario.apply(default_config(False)).validated()
    shown = explain(run_units(RunContext.open(config), PAGES[page]))  # as the page shows them (ui.shared)
    found = causes(shown)
    named = {cause.owner for cause in found}
    assert scenario.unexpected(named) == [], [(cause.owner, str(cause.summary)) for cause in found]
    for result in shown:  # a finding another check owns carries no fix: the owner's is the one fix
        if result.explained_by is not None:
            assert result.fix is None and result.status in (Status.WARN, Status.FAIL), result
