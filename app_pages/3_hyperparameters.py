"""Hyperparameters page: what the strings hid, the learning-rate sweep, the range test and the schedule."""

import streamlit as st

from diagnostics.core.errors import InputError
from diagnostics.config.training import SweepSettings
from diagnostics.i18n import _, message_of
from diagnostics.report.plots import range_test_figure, schedule_figure, sweep_curves_figure, sweep_final_figure
from diagnostics.serve.store import Job, training_job
from ui.render import by_id, checklist, shown, status_line, traced_results
from ui.tables import frame
from ui.shared import computed, explained_here, freshness, ran_for, wanted
from ui.session import current_config


def sweep_settings() -> SweepSettings:
    left, middle, right = st.columns(3)
    low = left.number_input(_("Lowest rate"), format="%.0e", key="hparams.min_rate")
    high = middle.number_input(_("Highest rate"), format="%.0e", key="hparams.max_rate")
    rates = right.number_input(_("Rates in the grid"), step=1, key="hparams.rates")
    left, middle, right = st.columns(3)
    steps = left.number_input(_("Steps at each rate"), step=1, key="hparams.steps")
    range_steps = middle.number_input(_("Range-test steps"), step=1, key="hparams.range_steps")
    return SweepSettings(min_rate=low, max_rate=high, rates=int(rates), steps=int(steps), range_steps=int(range_steps))


st.title(_("3 · Hyperparameters"))
st.caption(_("What a string optimizer or loss silently set, and how the loss moves at each learning rate: the same "
             "batches from the same starting weights, on a copy of the model."))
# The verdict first, filled once every result below is known: the charts and settings are its evidence.
verdict = st.container()
traced = traced_results("hparams")
if traced is None:
    config = current_config()
    setup_job = Job("setup", config)
    setup_entry = computed(setup_job, _("Reading the optimizer and loss, and taking one train step on a copy…"))
    if setup_entry is None:
        st.stop()
    setup = setup_entry.results
    freshness(setup_entry, setup_job)
else:
    setup = [result for result in traced if result.id in ("hparams.optimizer", "hparams.loss", "hparams.schedule")]

optimizer = by_id(setup, "hparams.optimizer")
if optimizer and optimizer.evidence.get("settings"):
    # The table, then the schedule under it: beside each other, a laptop's width cut the table's source column.
    st.subheader(_("The optimizer Keras builds"))
    st.dataframe(frame(optimizer.evidence["settings"]), hide_index=True, width="stretch",
                 column_config={"setting": _("setting"), "value": _("value"), "source": _("source")})
    schedule = by_id(setup, "hparams.schedule")
    if schedule and schedule.evidence.get("steps"):
        st.plotly_chart(schedule_figure(schedule), width="stretch")

st.subheader(_("Learning-rate sweep and range test"))


def training_results() -> list:
    """The sweep and the range test run here on request (the traced script's come with its report)."""
    settings = sweep_settings()
    try:
        job = training_job(config, settings.validated())
    except InputError as exc:
        st.error(_("Sweep settings: {problem}").format(problem=shown(message_of(exc))))
        job = None
    showing = job is not None and wanted(job)  # kept, or under way in some session
    pressed = not showing and st.button(_("Run the sweep and the range test"), type="primary", key="hparams.run",
                                      disabled=job is None)
    entry = computed(job, _("Sweep and range test:")) if showing or pressed else None
    if pressed and entry is not None:
        st.rerun()  # drawn again from the kept result, without the button that asked for it
    if entry is None:
        st.info(_("Press the button to train a copy of the model at each rate. The loaded model is never changed."))
        return []
    freshness(entry, job)
    return entry.results


training = training_results() if traced is None else [
    result for result in traced if result.id not in {r.id for r in setup}]
results = setup + training if traced is not None else explained_here(setup + training, config)
ran = None if traced is not None else ran_for(results, config)
sweep, range_test = by_id(training, "hparams.lr_sweep"), by_id(training, "hparams.lr_range_test")
if sweep and sweep.evidence.get("losses"):
    # One above the other: side by side, a laptop's width left each too narrow for its title and legend.
    st.plotly_chart(sweep_final_figure(sweep), width="stretch")
    st.plotly_chart(sweep_curves_figure(sweep), width="stretch")
if range_test and range_test.evidence.get("losses"):
    st.plotly_chart(range_test_figure(range_test), width="stretch")

with verdict:
    st.subheader(_("Checks"))
    status_line(results, ran=ran)
    if traced is None and not training:  # the setup checks passing is not the page's verdict: the sweep owns rates
        st.info(_("Not run yet: hparams.lr_sweep and hparams.lr_range_test, which measure the learning rate; the "
                  "page's verdict is not known until they have. Run them with the button below."),
                icon=":material/pending:")
    checklist(results, ran)
