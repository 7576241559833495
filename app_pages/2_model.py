"""Model page: one batch through a freshly loaded model, the NaN-row drilldown, gradients and memory."""

import streamlit as st

from diagnostics.i18n import _
from diagnostics.report.plots import gradient_norm_figure, per_sample_loss_figure
from diagnostics.serve.store import Job
from ui.render import by_id, checklist, owner_link, shown, status_line, traced_results
from ui.tables import field_columns, field_frame
from ui.shared import computed, explained_here, freshness, ran_for
from ui.session import current_config

st.title(_("2 · Model"))
st.caption(_("The first batch through a freshly loaded model: logits, the loss of every row, one real train step "
             "(on a copy; the loaded model is never changed), and where NaN first appears."))
results, ran = traced_results("model"), None
if results is None:
    job = Job("model", current_config())
    entry = computed(job, _("Running the batch through the model and taking one train step on a copy…"))
    if entry is None:
        st.stop()
    results, ran = explained_here(entry.results, job.config), ran_for(entry.results, job.config)
    freshness(entry, job)

status_line(results, ran=ran)
nan_rows = by_id(results, "model.nan_rows")
if nan_rows and nan_rows.evidence.get("losses"):
    st.plotly_chart(per_sample_loss_figure(nan_rows), width="stretch")
    if nan_rows.evidence["rows"]:
        st.subheader(_("Rows with a NaN loss"))
        (st.warning if nan_rows.explained_by else st.error)(shown(nan_rows.summary), icon=":material/cancel:")
        if nan_rows.explained_by:
            owner_link(nan_rows.explained_by, page="model")
        table, fields = field_frame(nan_rows.evidence["rows"],
                                    ["position", "index", "label", "label_name", "logits", "decoded"])
        table["logits"] = table["logits"].map(
            lambda values: ", ".join("NaN" if v is None else f"{v:.3f}" for v in values)
        )
        st.dataframe(table, hide_index=True, width="stretch", column_config={
            "position": "#", **field_columns(fields), "index": _("row in split"), "label_name": _("label name")})

gradients = by_id(results, "model.gradients")
if gradients and gradients.evidence.get("layer_norms"):
    st.plotly_chart(gradient_norm_figure(gradients), width="stretch")

st.subheader(_("Checks"))
checklist(results, ran)
