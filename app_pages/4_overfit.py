"""Overfit page: train a copy on one batch holding every label, with a verdict and the predictions."""

import math

import streamlit as st

from diagnostics.errors import InputError
from diagnostics.i18n import _, message_of
from diagnostics.runner import validate_epochs
from diagnostics.plots import overfit_figure
from diagnostics.shared import overfit_job
from diagnostics.training import effective_rate
from ui.render import checklist, field_columns, field_frame, shown, traced_results
from ui.shared import best_rate, computed, freshness, kept, newest_overfit, under_way
from ui.session import current_config

st.title(_("4 · Overfit one batch"))
st.caption(_("A pipeline that works can memorise one batch: loss near zero and every row right within a few dozen "
             "epochs. The test trains a copy; the loaded model is never changed."))
CHOICE_KEY = "overfit.choice"  # the overfit job this session last asked for


def overfit_here() -> list:
    """The test run here on request, at the configured rate or the sweep's best."""
    config = current_config()
    epochs = st.number_input(_("Epochs"), step=1, key="overfit.epochs")
    try:
        epochs, epochs_error = validate_epochs(epochs), None
    except InputError as exc:
        epochs_error = shown(message_of(exc))
        st.error(epochs_error)
    best = best_rate(config)
    jobs = {"configured": overfit_job(config, epochs, None, best)}
    if best and math.isclose(best, effective_rate(config), rel_tol=1e-6):
        best = None  # the sweep recommends the rate already configured: nothing else to rerun at
    if best:
        jobs["best"] = overfit_job(config, epochs, best, best)
    left, right = st.columns([1, 2])
    pressed = jobs["configured"] if left.button(_("Run the overfit test"), type="primary", key="overfit.run",
                                                disabled=bool(epochs_error)) else None
    if best and right.button(_("Rerun at the sweep's recommended rate {rate:.1e}").format(rate=best),
                             key="overfit.rerun_best",
                             disabled=bool(epochs_error)):
        pressed = jobs["best"]
    if epochs_error:
        st.stop()
    if pressed:
        st.session_state[CHOICE_KEY] = pressed
    chosen = st.session_state.get(CHOICE_KEY)
    if pressed is None and not (chosen in jobs.values() and (kept(chosen) or under_way(chosen))):
        # Another session's test under way (watch it), else the newest kept one.
        chosen = next((job for job in jobs.values() if under_way(job)), None) or newest_overfit(config)
    job = pressed or chosen
    entry = computed(job, _("Overfit test:")) if job else None
    if entry is None:
        st.info(_("Press the button to train a copy of the model on one batch."))
        st.stop()
    freshness(entry, job)
    return entry.results


results = traced_results("overfit")
if results is None:
    results = overfit_here()
if not results:
    st.info(_("The trace did not run the overfit test."))
    st.stop()
result = results[0]
{"pass": st.success, "warn": st.warning, "skip": st.info}.get(result.status.value, st.error)(shown(result.summary))
if result.evidence.get("losses"):
    st.plotly_chart(overfit_figure(result), width="stretch")
    st.subheader(_("The batch, with the trained copy's predictions"))
    rows, fields = field_frame(result.evidence["rows"],
                               ["position", "label", "label_name", "predicted_name", "correct", "decoded"])
    st.dataframe(rows, hide_index=True, width="stretch", column_config={
        "position": "#", **field_columns(fields), "label": _("label id"), "label_name": _("label"),
        "predicted_name": _("predicted"), "correct": _("correct")})
    st.caption(_("The trained copy is thrown away: rebuild the model before real training, as the course advises."))
checklist(results)
