"""A session's run: every sidebar key's default, the language, the pages' own settings, and the validated
configuration the pages read."""

from __future__ import annotations

import streamlit as st

from diagnostics.keras import loading
from diagnostics.config.run import RunConfig, default_config
from diagnostics.config.training import DEFAULT_EPOCHS, SweepSettings
from diagnostics.i18n import DEFAULT_LANGUAGE, LANGUAGES, N_, _, language_from_locale, set_language
from diagnostics.config.settings import EPOCHS, SWEEP_SETTINGS
from diagnostics.config.forms import config_from_widgets, sweep_from_widgets, sweep_widget_values, widget_values
from ui.caches import hub_reachable
from ui.render import CHOICE_KEYS, shown
from ui.script import SCRIPT_DEFAULTS

CONFIG_KEY = "run.config"
NO_SCENARIO = N_("(none)")
CONFIG_ERROR_KEY = "run.config_error"
LINK_WRITTEN_KEY = "link.written"  # the query parameters this session last put in the URL
LINK_PROBLEMS_KEY = "link.problems"  # what the opened link asked for that could not be used
# The pages' own settings: kept in the session and the link while their page is not open (Streamlit forgets the
# value of a widget that a run does not draw).
SWEEP_KEYS = tuple(setting.key for setting in SWEEP_SETTINGS)
EPOCHS_KEY = EPOCHS.key
LANG_KEY = "ui.lang"
LANG_DRAWN_KEY = "ui.lang_drawn"  # the language the session's last run drew its widgets in


def init_state() -> None:
    """Every sidebar key gets its default once, in this one place."""
    defaults = default_config(hub_reachable())
    initial = {
        **widget_values(defaults),
        "run.scenario": NO_SCENARIO,
        "run.defaults_for": defaults.checkpoint,
        **sweep_widget_values(SweepSettings()),
        EPOCHS_KEY: DEFAULT_EPOCHS,
        LINK_PROBLEMS_KEY: [],
        LANG_KEY: browser_language(),
    }
    for key, value in {**initial, **SCRIPT_DEFAULTS}.items():
        st.session_state.setdefault(key, value)
    # Kept while their page is closed, or (the rate) while a string optimizer shows the rate it means instead.
    for key in (*SWEEP_KEYS, EPOCHS_KEY, *SCRIPT_DEFAULTS, "run.learning_rate"):
        st.session_state[key] = st.session_state[key]
    loading.tidy_cache_in_background()  # old uploads and Arrow copies: at the first run, then every ten minutes


def browser_language() -> str:
    """The app's language the reader's browser asks for (its locale, else its Accept-Language), else English."""
    try:
        return language_from_locale(st.context.locale or st.context.headers.get("Accept-Language"))
    except Exception:  # no browser behind this run (a bare script run)
        return DEFAULT_LANGUAGE


def apply_language() -> str:
    """Speak this session's language for the rest of the run (call before any text is drawn); on a run that changes
    it, every choice drawn with translated labels keeps its value (`render.CHOICE_KEYS`)."""
    state = st.session_state
    language = set_language(state.get(LANG_KEY))
    if state.get(LANG_DRAWN_KEY, language) != language:
        for key in CHOICE_KEYS & set(state.keys()):
            state[key] = state[key]  # read as the last run drew it; sent to the browser in the new labels
    state[LANG_DRAWN_KEY] = language
    return language



def language_picker() -> None:
    st.selectbox(_("Language"), list(LANGUAGES), key=LANG_KEY, format_func=LANGUAGES.get,
                 help=_("Every page, finding and fix in this language; code, column names and check ids stay as "
                        "they are."))


def sweep_from_state() -> SweepSettings:
    """The sweep settings of this session (the Hyperparameters page's inputs, or the link's)."""
    return sweep_from_widgets(st.session_state)


def config_from_state() -> RunConfig:
    return config_from_widgets(st.session_state)


def current_config() -> RunConfig | None:
    """The validated configuration; when invalid, the page shows why and stops."""
    config = st.session_state.get(CONFIG_KEY)
    if config is None:
        st.error(_("The run configuration cannot be used: {reason}").format(
            reason=shown(st.session_state.get(CONFIG_ERROR_KEY))))
        st.caption(_("Change it in the sidebar; everything else you entered is kept."))
        st.stop()
    return config
