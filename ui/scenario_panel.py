"""The workshop's scenarios on the sidebar: the picker that fills the settings, and the panel saying which of
the scenario's checks have caught it."""

from __future__ import annotations

from dataclasses import replace

import streamlit as st

from diagnostics.config import limits
from diagnostics.config.run import default_config
from diagnostics.i18n import _
from diagnostics.config.scenarios import SCENARIOS
from diagnostics.config.settings import BY_FIELD
from ui.caches import hub_reachable
from ui.render import choice, shown
from ui.session import CONFIG_KEY, NO_SCENARIO
from diagnostics.walk.causes import causes
from ui.shared import recalled_all
from ui.widgets import shows_cut

# The settings a scenario may set (its data source only when it is not the user's own files).
SCENARIO_FIELDS = ("task", "split", "num_labels", "columns", "labels_in", "loss", "optimizer", "learning_rate",
                   "shuffle_labels")


def apply_scenario() -> None:
    """Fill the sidebar with the chosen scenario's settings (a widget callback, so it runs before the widgets)."""
    name = st.session_state["run.scenario"]
    if name not in SCENARIOS:
        return
    defaults = default_config(hub_reachable(), checkpoint=st.session_state["run.checkpoint"])
    config = SCENARIOS[name].apply(replace(defaults, task=st.session_state["run.task"]))
    state = st.session_state
    for field in SCENARIO_FIELDS:
        state[BY_FIELD[field].key] = BY_FIELD[field].widget(getattr(config, field))
    if config.data_source != "files":
        state["run.data_source"] = (
            state["run.data_source"] if state["run.data_source"] != "files" else defaults.data_source
        )


def scenario_picker() -> None:
    """The workshop picker and the chosen scenario's symptom (before the page, so the choice is never lost)."""
    st.selectbox(
        _("Workshop scenario"),
        [NO_SCENARIO, *SCENARIOS],
        key=choice("run.scenario"),
        on_change=apply_scenario,
        format_func={
            NO_SCENARIO: _(NO_SCENARIO),
            **{name: f"{name}: {_(scenario.title)}" for name, scenario in SCENARIOS.items()},
        }.get,
        help=_("Each preset injects one known bug into the configuration above."),
    )
    name = st.session_state["run.scenario"]
    if name in SCENARIOS:
        title = f"{name}: {_(SCENARIOS[name].title)}"
        if shows_cut(title):  # the select shows one line of the sidebar's width: its choice is said whole here
            st.caption(shown(title))
        st.caption(_("**Symptom:** {symptom}").format(symptom=_(SCENARIOS[name].symptom)))


def scenario_panel(slot) -> None:
    """Which of the chosen scenario's causes have been named so far, by the checks that own them (after the page has
    run), and any cause it does not inject."""
    name = st.session_state.get("run.scenario", NO_SCENARIO)
    if name not in SCENARIOS:
        return
    scenario = SCENARIOS[name]
    config = st.session_state.get(CONFIG_KEY)
    results = recalled_all(config) if config is not None else []
    found = causes(results)
    ran, named = {result.id for result in results}, {cause.owner for cause in found}
    waiting = {cause.owner: cause.explains for cause in found if cause.pending}
    changed = ", ".join(scenario.changed(config)) if config is not None else ""
    lines = []
    for checks, caught in scenario.caught(named).items():
        # A check that ran and names nothing on settings that no longer hold the scenario's is its fix at work.
        looked = any(check in ran for check in checks.split(" or "))
        pending_at = next((waiting[check] for check in checks.split(" or ") if check in waiting), None)
        mark = _(":blue[pending: found by {checks}, not run yet]").format(checks=", ".join(pending_at)) \
            if pending_at else _(":green[caught]") if caught else (
            _(":green[fixed: passes with {settings} changed]").format(settings=changed) if looked and changed else
            _(":red[missed]") if looked else _(":gray[not run yet]"))
        lines.append(f"- `{checks}`: {mark}")
    lines += [f"- `{check}`: " + _(":orange[names a cause the scenario does not inject]")
              for check in scenario.unexpected(named)]
    slot.markdown(_("**Causes it injects, and the checks that own them:**") + "\n" + (
        "\n".join(lines) if lines else "- " + _("none: no check may fail")))
    if name in ("course-script", "fixed") and not limits.hosted():
        slot.page_link("app_pages/script.py", label=_("Trace the course's own script"), icon=":material/code:")
