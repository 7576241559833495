"""The Report's "Apply the fix": a cause's fix set in the sidebar (`config.apply_fix`), every stage run again for
the fixed configuration, and what the causes were before and are now, side by side."""

from __future__ import annotations

import streamlit as st

from diagnostics.config.apply_fix import config_change, fixed, said
from diagnostics.config.forms import widget_values
from diagnostics.i18n import _

APPLIED_KEY = "report.applied"  # the fix last applied: its owner, change, the causes before, the fixed configuration
RUN_NOW_KEY = "report.run_now"  # run every stage on the next run of the Report (the fix's one click)


def offer(config, results, found):
    """The card action for `ui.render.causes_block`: a button on each cause a setting fixes."""
    def action(cause) -> None:
        change = config_change(cause.owner, config, results)
        if change is None:
            return
        before = [(item.owner, item.status.value) for item in found]
        st.button(_("Apply the fix"), key=f"report.apply.{cause.owner}", icon=":material/build:",
                  help=_("Sets the sidebar to {change} and runs every stage again.").format(
                      change=said(change, fixed(config, change))),
                  on_click=_apply, args=(cause.owner, change, config, before))
    return action


def _apply(owner: str, change: dict, config, before: list) -> None:
    state = st.session_state
    after = fixed(config, change)
    state.update(widget_values(after))
    state[APPLIED_KEY] = {"owner": owner, "change": said(change, after), "before": before, "config": after}
    state[RUN_NOW_KEY] = True


def run_now() -> bool:
    """Whether a fix was just applied, so the page runs every stage now (once)."""
    return bool(st.session_state.pop(RUN_NOW_KEY, False))


def before_and_after(config, found) -> None:
    """The last fix applied, with the causes before it and now, while the sidebar still holds its configuration."""
    applied = st.session_state.get(APPLIED_KEY)
    if not applied or applied["config"] != config:
        return
    def listed(causes) -> str:
        return ", ".join(f"`{owner}` {_(status.upper())}" for owner, status in causes) or _("no cause")

    now = [(cause.owner, cause.status.value) for cause in found]
    (st.success if not now else st.info)(
        _("Applied the fix of {owner} ({change}) and ran every stage again. Before: {before}. Now: {after}.").format(
            owner=f"`{applied['owner']}`", change=f"`{applied['change']}`", before=listed(applied["before"]),
            after=listed(now)), icon=":material/compare_arrows:")
