"""Hyperparameters page: what the strings hid, the learning-rate sweep, the range test and the schedule."""

import pandas as pd
import streamlit as st

from diagnostics.errors import InputError
from diagnostics.hyperparams import SweepSettings
from diagnostics.pipeline import hparams_stage
from diagnostics.plots import range_test_figure, schedule_figure, sweep_curves_figure, sweep_final_figure
from ui.render import by_id, checklist, remember, run_stage, status_line, traced_results
from ui.state import current_config, open_run


@st.cache_data(show_spinner="Reading the optimizer and loss, and taking one train step on a copy…", max_entries=32)
def setup_results(config):
    return hparams_stage(open_run(config), parts=("setup",))


def sweep_settings() -> SweepSettings:
    left, middle, right = st.columns(3)
    low = left.number_input("Lowest rate", value=1e-6, format="%.0e", key="hparams.min_rate")
    high = middle.number_input("Highest rate", value=1e-2, format="%.0e", key="hparams.max_rate")
    rates = right.number_input("Rates in the grid", value=7, step=1, key="hparams.rates")
    left, middle, right = st.columns(3)
    steps = left.number_input("Steps at each rate", value=8, step=1, key="hparams.steps")
    range_steps = middle.number_input("Range-test steps", value=40, step=1, key="hparams.range_steps")
    return SweepSettings(min_rate=low, max_rate=high, rates=int(rates), steps=int(steps), range_steps=int(range_steps))


st.title("3 · Hyperparameters")
st.caption("What a string optimizer or loss silently set, and how the loss moves at each learning rate: the same "
           "batches from the same starting weights, on a copy of the model.")
traced = traced_results("hparams")
if traced is None:
    config = current_config()
    setup = run_stage("hparams", lambda: setup_results(config))
    if setup is None:
        st.stop()
else:
    setup = [result for result in traced if result.id in ("hparams.optimizer", "hparams.loss", "hparams.schedule")]

optimizer = by_id(setup, "hparams.optimizer")
if optimizer and optimizer.evidence.get("settings"):
    left, right = st.columns([2, 3])
    left.subheader("The optimizer Keras builds")
    left.dataframe(pd.DataFrame(optimizer.evidence["settings"]), hide_index=True, width="stretch")
    schedule = by_id(setup, "hparams.schedule")
    if schedule and schedule.evidence.get("steps"):
        right.plotly_chart(schedule_figure(schedule), width="stretch")

st.subheader("Learning-rate sweep and range test")


def training_results() -> list:
    """The sweep and the range test run here on request (the traced script's come with its report)."""
    settings = sweep_settings()
    key = (config, settings)
    store = st.session_state.setdefault("hparams.training_results", {})
    settings_error = None
    try:
        settings.validated()
    except InputError as exc:
        settings_error = str(exc)
        st.error(f"Sweep settings: {settings_error}")
    if st.button("Run the sweep and the range test", type="primary", key="hparams.run", disabled=bool(settings_error)):
        bar = st.progress(0.0, text="Starting")
        store[key] = run_stage("hparams", lambda: hparams_stage(
            open_run(config), sweep=settings, parts=("training",),
            progress=lambda fraction, text: bar.progress(min(max(fraction, 0.0), 1.0), text=text)))
        bar.empty()
    training = store.get(key) or []
    if not training:
        st.info("Press the button to train a copy of the model at each rate. The loaded model is never changed.")
    return training


training = training_results() if traced is None else [
    result for result in traced if result.id not in {r.id for r in setup}]
results = setup + training
if traced is None:
    remember("hparams", config, results)
sweep, range_test = by_id(training, "hparams.lr_sweep"), by_id(training, "hparams.lr_range_test")
if sweep and sweep.evidence.get("losses"):
    left, right = st.columns(2)
    left.plotly_chart(sweep_curves_figure(sweep), width="stretch")
    right.plotly_chart(sweep_final_figure(sweep), width="stretch")
if range_test and range_test.evidence.get("losses"):
    st.plotly_chart(range_test_figure(range_test), width="stretch")

st.subheader("Checks")
status_line(results)
checklist(results)
