"""Overfit page: train a copy on one batch holding every label, with a verdict and the predictions."""

import pandas as pd
import streamlit as st

from diagnostics.errors import InputError
from diagnostics.pipeline import overfit_stage, validate_epochs
from diagnostics.plots import overfit_figure
from ui.render import by_id, checklist, recalled, remember, run_stage, traced_results
from ui.state import current_config, open_run

st.title("4 · Overfit one batch")
st.caption("A pipeline that works can memorise one batch: loss near zero and every row right within a few dozen "
           "epochs. The test trains a copy; the loaded model is never changed.")


def overfit_here() -> list:
    """The test run here on request, at the configured rate or the sweep's best."""
    config = current_config()
    epochs = st.number_input("Epochs", value=20, step=1, key="overfit.epochs")
    try:
        epochs, epochs_error = validate_epochs(epochs), None
    except InputError as exc:
        epochs_error = str(exc)
        st.error(epochs_error)
    sweep = by_id(recalled("hparams", config), "hparams.lr_sweep")
    best_rate = sweep.evidence.get("best_rate") if sweep else None
    store = st.session_state.setdefault("overfit.results", {})

    def run(rate=None):
        bar = st.progress(0.0, text="Copying the model")
        results = run_stage("overfit", lambda: overfit_stage(
            open_run(config), epochs=epochs, rate=rate, best_rate=best_rate,
            progress=lambda f, text: bar.progress(min(f, 1.0), text=text)))
        bar.empty()
        if results:
            store[(config, epochs, rate)] = results
            st.session_state["overfit.last"] = (config, epochs, rate)

    left, right = st.columns([1, 2])
    if left.button("Run the overfit test", type="primary", key="overfit.run", disabled=bool(epochs_error)):
        run()
    if best_rate and right.button(f"Rerun at the sweep's recommended rate {best_rate:.1e}", key="overfit.rerun_best",
                                  disabled=bool(epochs_error)):
        run(best_rate)

    last = st.session_state.get("overfit.last")
    results = store.get(last) if last and last[0] == config and last[1] == epochs else None
    if not results:
        st.info("Press the button to train a copy of the model on one batch.")
        st.stop()
    remember("overfit", config, results)
    return results


results = traced_results("overfit")
if results is None:
    results = overfit_here()
if not results:
    st.info("The trace did not run the overfit test.")
    st.stop()
result = results[0]
{"pass": st.success, "warn": st.warning, "skip": st.info}.get(result.status.value, st.error)(result.summary)
if result.evidence.get("losses"):
    st.plotly_chart(overfit_figure(result), width="stretch")
    st.subheader("The batch, with the trained copy's predictions")
    rows = pd.DataFrame(result.evidence["rows"])
    st.dataframe(rows[["position", "label", "label_name", "predicted_name", "correct", "decoded"]], hide_index=True,
                 width="stretch", column_config={"decoded": st.column_config.TextColumn("decoded", width=700),
                                                 "label": "label id", "label_name": "label", "predicted_name": "predicted"})
    st.caption("The trained copy is thrown away: rebuild the model before real training, as the course advises.")
checklist(results)
