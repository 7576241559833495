"""The first thing a newcomer reads: the three ways in, and what each page of the walk answers. Shown on the Data
page (where the app opens) until a run is chosen: a workshop scenario (or its link), a traced script, or "Got it"."""

from __future__ import annotations

import streamlit as st

from diagnostics.i18n import _
from ui.render import ACTIVE_KEY
from ui.session import NO_SCENARIO

DISMISSED_KEY = "start.dismissed"


def wanted() -> bool:
    """Whether the start text still helps: nothing chosen yet in this session."""
    state = st.session_state
    return not (state.get(DISMISSED_KEY) or state.get("run.scenario", NO_SCENARIO) != NO_SCENARIO
                or state.get(ACTIVE_KEY))


def start_panel() -> None:
    """Three ways in, with links, and the question each page answers; a button puts it away."""
    if not wanted():
        return
    with st.container(border=True):
        st.markdown("**" + _("New here? Three ways in:") + "**")
        left, middle, right = st.columns(3)
        with left:
            st.page_link("app_pages/workshop.py", label=_("A workshop scenario"), icon=":material/school:")
            st.caption(_("One of the course's bugs, planted in a run: find it page by page."))
        with middle:
            st.page_link("app_pages/script.py", label=_("Your own script"), icon=":material/code:")
            st.caption(_("Trace your training script: the checks run on what it built, at its model.fit."))
        with right:
            st.page_link("app_pages/2_model.py", label=_("Walk the pages"), icon=":material/route:")
            st.caption(_("Set a run in the sidebar (checkpoint, task, data) and open pages 1 to 4 in order."))
        st.caption(_("Each page answers one question. 1 Data: is what fit gets right? 2 Model: does one step work? "
                     "3 Hyperparameters: which learning rate? 4 Overfit test: can the pipeline learn one batch?"))
        if st.button(_("Got it"), key="start.dismiss"):
            st.session_state[DISMISSED_KEY] = True
            st.rerun()
