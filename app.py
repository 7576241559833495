"""Training Pipeline Debugger: the entry file. Page setup, the shared sidebar, and navigation over the stages."""

import diagnostics

diagnostics.own_process()  # Keras 2 for tf.keras and quiet libraries, before any page imports TensorFlow

import streamlit as st  # noqa: E402

from diagnostics.config import limits
from diagnostics.config.limits import environment_problem
from diagnostics.core.libraries import libraries_imported
from diagnostics.core.environment import stack_problems
from diagnostics.i18n import _, localize
from ui.address import load_link
from ui.origins import foreign_origin
from ui.render import markdown_text
from ui.scenario_panel import scenario_panel
from ui.session import apply_language, init_state
from ui.sidebar import sidebar
from ui.reruns import bound_reruns
from ui.uploads import bound_uploads

st.set_page_config(page_title="Training Pipeline Debugger", layout="wide")
bound_uploads()  # once per process; the Space's command (python -m ui.serve) installs it before the first request
bound_reruns()  # the same

init_state()
load_link()
apply_language()
stack = stack_problems()  # before any page imports TensorFlow or Transformers
if stack:
    st.error(localize(stack[0].finding))
    st.code(stack[0].fix, language="bash")
    st.stop()
unusable = environment_problem()  # a limit set in the environment that does not read: said once, never a traceback
if unusable is not None:
    st.error(localize(unusable))
    st.stop()
foreign = foreign_origin(st.context.headers or {}, limits.hosted() is not None,
                         st.get_option("server.corsAllowedOrigins") or ())
if foreign is not None:  # a page of another site or port opened this session: nothing runs for it
    st.error(_("This app answers its own pages only, and this one came from {origin}. Open the app at its own "
               "address, or, behind a proxy, list that origin in Streamlit's server.corsAllowedOrigins.").format(
        origin=markdown_text(foreign)))
    st.stop()
navigation = st.navigation(
    {
        _("The walk"): [
            st.Page("app_pages/1_data.py", title=_("1 · Data"), default=True),
            st.Page("app_pages/2_model.py", title=_("2 · Model"), url_path="model"),
            st.Page("app_pages/3_hyperparameters.py", title=_("3 · Hyperparameters"), url_path="hyperparameters"),
            st.Page("app_pages/4_overfit.py", title=_("4 · Overfit test"), url_path="overfit"),
        ],
        _("Summary"): [st.Page("app_pages/report.py", title=_("Report"), url_path="report")],
        _("Your code"): [st.Page("app_pages/script.py", title=_("Your script"), url_path="script")],
        _("For presenters"): [st.Page("app_pages/workshop.py", title=_("Workshop"), url_path="workshop")],
    }
)
# The first page of a fresh server waits seconds on TensorFlow's import (a page imports it before its title): the
# main area says so instead of staying blank, until the page has run.
starting = None if libraries_imported() else st.empty()
if starting is not None:
    starting.info(_("Starting: the first page of this server imports TensorFlow and Transformers, once…"),
                  icon=":material/hourglass_top:")
slot = sidebar(navigation.url_path)
try:
    navigation.run()
finally:
    if starting is not None:
        starting.empty()
    # After the page, so the panel can say which of the scenario's checks the page just ran caught it.
    scenario_panel(slot)
