"""The run in the URL: a session filled from a link, its run written back as one, and the link to copy."""

from __future__ import annotations

from urllib.parse import urlencode

import streamlit as st

from diagnostics.config.training import SweepSettings
from diagnostics.i18n import _
from diagnostics.config.forms import sweep_widget_values, widget_values
from ui.caches import hub_reachable
from ui.links import Link, link_params, parse_link
from ui.render import shown
from ui.session import (CONFIG_KEY, EPOCHS_KEY, LANG_KEY, LINK_PROBLEMS_KEY, LINK_WRITTEN_KEY, NO_SCENARIO,
                        sweep_from_state)

PAGE_PATHS = ("model", "hyperparameters", "overfit", "report", "script", "workshop")  # app.py's url_paths


def load_link() -> None:
    """Fill the session from the URL's query parameters on the session's first run, and whenever a link inside the
    app opens other parameters. (Moving between pages empties the URL's parameters; the sidebar writes them back.)"""
    state = st.session_state
    params = st.query_params.to_dict()
    written = state.get(LINK_WRITTEN_KEY)
    if written is not None and (not params or params == written):
        return
    link, problems = parse_link(params, hub_reachable())
    state[LINK_PROBLEMS_KEY] = problems
    state[LINK_WRITTEN_KEY] = params
    if written is None and not params:
        return  # a first visit without a link: the defaults
    config = link.config
    state.update({
        **widget_values(config),
        "run.scenario": link.scenario or NO_SCENARIO, "run.defaults_for": config.checkpoint,
        **sweep_widget_values(link.sweep), EPOCHS_KEY: link.epochs,
    })
    if link.lang:
        state[LANG_KEY] = link.lang


def current_link() -> Link | None:
    """This session's run as a link (None while the configuration is invalid)."""
    config = st.session_state.get(CONFIG_KEY)
    if config is None:
        return None
    scenario = st.session_state["run.scenario"]
    try:
        sweep = sweep_from_state()
    except (TypeError, ValueError):
        sweep = SweepSettings()
    return Link(config, None if scenario == NO_SCENARIO else scenario, sweep, int(st.session_state[EPOCHS_KEY]),
                st.session_state.get(LANG_KEY))


def write_link() -> dict[str, str] | None:
    """Put this session's run in the URL (a valid one only: a typo being fixed leaves the last good link)."""
    link = current_link()
    if link is None:
        return None
    params = link_params(link, hub_reachable())
    if params != st.query_params.to_dict():
        st.query_params.from_dict(params)
    st.session_state[LINK_WRITTEN_KEY] = params
    return params


def app_url(path: str, params: dict[str, str]) -> str:
    """The full address of one of the app's pages (its url_path; "" for the Data page) with `params`."""
    root = (st.context.url or "http://localhost:8501").rstrip("/")
    # Streamlit trims the open page's path once; a session opened at a page's address can report it twice.
    while root.rsplit("/", 1)[-1] in PAGE_PATHS:
        root = root.rsplit("/", 1)[0]
    return f"{root}/{path}" + ("?" + urlencode(params) if params else "")


def link_problems() -> None:
    """What the opened link asked for that could not be used, until dismissed."""
    problems = st.session_state.get(LINK_PROBLEMS_KEY) or []
    if problems:
        st.warning("\n\n".join(shown(problem) for problem in problems), icon=":material/link_off:")
        st.button(_("Dismiss"), key="link.dismiss", on_click=lambda: st.session_state.update({LINK_PROBLEMS_KEY: []}))


def link_copy(page_path: str) -> None:
    """Write the run into the URL, and offer the link to this page to copy."""
    params = write_link()
    with st.popover(_("Copy link to this run"), icon=":material/link:", width="stretch"):
        if params is None:
            st.caption(_("The configuration above cannot be used yet, so there is no link to it."))
        else:
            st.code(app_url(page_path, params), language=None, wrap_lines=True)
            st.caption(_("The copy button is at the code block's right. Whoever opens the link gets this "
                         "configuration, scenario and page settings, and the results already computed for them."))
