"""Overfit page: train a copy on one batch holding every label, with a verdict and the predictions."""

import streamlit as st

from diagnostics.core.errors import InputError
from diagnostics.i18n import _, message_of
from diagnostics.walk.runner import validate_epochs
from diagnostics.report.plots import overfit_figure
from ui.render import checklist, owner_link, shown, traced_results
from ui.tables import field_columns, field_frame
from ui.shared import computed, explained_here, freshness, overfit_jobs, wanted
from ui.session import current_config

st.title(_("4 · Overfit test"))
st.caption(_("A pipeline that works can memorise one batch: within a few dozen epochs its loss falls steadily towards "
             "zero and every row comes out right. The test trains a copy; the loaded model is never changed."))


def overfit_here() -> tuple[list, list]:
    """The test run here on request: the walk's (at the configured rate, or at the sweep's recommended one when the
    sweep measured the configured rate as too high), and a rerun at the sweep's recommended rate kept beside it."""
    config = current_config()
    epochs = st.number_input(_("Epochs"), step=1, key="overfit.epochs")
    try:
        validate_epochs(epochs)
        epochs_error = None
    except InputError as exc:
        epochs_error = shown(message_of(exc))
        st.error(epochs_error)
    jobs = overfit_jobs(config)
    # A run kept (or under way, or asked for again) is drawn without the button that asked for it, as on
    # Hyperparameters (`wanted`); a new number of epochs is a new run, and its button comes back.
    showing = {name: job is not None and wanted(job) for name, job in jobs.items()}
    buttons = st.container(horizontal=True, wrap=True)  # each button keeps its whole label, at any width and language
    walk = not showing["walk"] and buttons.button(_("Run the overfit test"), type="primary", key="overfit.run",
                                                      disabled=bool(epochs_error))
    rerun = "rerun" in jobs and not showing["rerun"] and buttons.button(
        _("Rerun at the sweep's recommended rate {rate:.0e}").format(rate=jobs["rerun"].settings.rate),
        key="overfit.rerun_best", disabled=bool(epochs_error))
    if epochs_error:
        st.stop()
    entries = {}
    for name, pressed in (("walk", walk), ("rerun", rerun)):
        job = jobs.get(name)
        if job is not None and (pressed or showing[name]):
            entries[name] = computed(job, _("Overfit test:"))
    if (walk or rerun) and any(entry is not None for entry in entries.values()):
        st.rerun()  # drawn again from the kept result, without the button that asked for it
    if entries.get("walk") is None and entries.get("rerun") is None:
        st.info(_("Press the button to train a copy of the model on one batch."))
        st.stop()
    if entries.get("walk") is not None:
        freshness(entries["walk"], jobs["walk"])
    walk_results = explained_here(entries["walk"].results, config) if entries.get("walk") else []
    return walk_results, entries["rerun"].results if entries.get("rerun") else []


def verdict(results: list) -> None:
    """The test's verdict, its curve and the batch with the trained copy's predictions."""
    result = results[0]
    if result.explained_by:
        st.warning(shown(result.summary))
        owner_link(result.explained_by, page="overfit")
    else:
        {"pass": st.success, "warn": st.warning, "skip": st.info}.get(result.status.value, st.error)(
            shown(result.summary))
    if result.evidence.get("losses"):
        st.plotly_chart(
            overfit_figure(result), width="stretch", key=f"overfit.curve.{result.evidence.get('learning_rate')}"
        )
        rows, fields = field_frame(result.evidence["rows"],
                                   ["position", "label", "label_name", "predicted_name", "correct", "decoded"])
        with st.expander(_("The batch, with the trained copy's predictions"), expanded=True):
            st.dataframe(rows, hide_index=True, width="stretch", column_config={
                "position": "#", **field_columns(fields), "label": _("label id"), "label_name": _("label"),
                "predicted_name": _("predicted"), "correct": _("correct")})


traced = traced_results("overfit")
results, reruns = (traced, []) if traced is not None else overfit_here()
if not results and not reruns:
    st.info(_("The trace did not run the overfit test."))
    st.stop()
if results:
    verdict(results)
if reruns:
    st.subheader(_("Rerun at the sweep's recommended rate {rate:.0e}").format(rate=reruns[0].evidence["learning_rate"]))
    st.caption(_("A second run beside the walk's: the checklist and the Report keep the verdict above."))
    verdict(reruns)
if results and results[0].evidence.get("losses"):
    st.caption(_("The trained copy is thrown away: rebuild the model before real training, as the course advises."))
if results:
    checklist(results)
