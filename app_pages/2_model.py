"""Model page: one batch through a freshly loaded model, the NaN-row drilldown, gradients and memory."""

import pandas as pd
import streamlit as st

from diagnostics.pipeline import model_stage
from diagnostics.plots import gradient_norm_figure, per_sample_loss_figure
from ui.render import by_id, checklist, remember, run_stage, status_line, traced_results
from ui.state import current_config, open_run


@st.cache_data(show_spinner="Running the batch through the model and taking one train step on a copy…", max_entries=32)
def model_results(config):
    return model_stage(open_run(config))


st.title("2 · Model")
st.caption("The first batch through a freshly loaded model: logits, the loss of every row, one real train step "
           "(on a copy; the loaded model is never changed), and where NaN first appears.")
results = traced_results("model")
if results is None:
    config = current_config()
    results = run_stage("model", lambda: model_results(config))
    if results is None:
        st.stop()
    remember("model", config, results)

status_line(results)
nan_rows = by_id(results, "model.nan_rows")
if nan_rows and nan_rows.evidence.get("losses"):
    st.plotly_chart(per_sample_loss_figure(nan_rows), width="stretch")
    if nan_rows.evidence["rows"]:
        st.subheader("Rows with a NaN loss")
        st.error(nan_rows.summary, icon=":material/cancel:")
        table = pd.DataFrame(nan_rows.evidence["rows"])
        table["logits"] = table["logits"].map(lambda values: ", ".join("NaN" if v is None else f"{v:.3f}" for v in values))
        st.dataframe(table[["position", "index", "label", "label_name", "logits", "decoded"]], hide_index=True,
                     width="stretch", column_config={"decoded": st.column_config.TextColumn("decoded", width=700),
                                                     "index": "row in split", "label_name": "label name"})

gradients = by_id(results, "model.gradients")
if gradients and gradients.evidence.get("layer_norms"):
    st.plotly_chart(gradient_norm_figure(gradients), width="stretch")

st.subheader("Checks")
checklist(results)
