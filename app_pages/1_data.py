"""Data page: the first batch as model.fit sees it, decoded, with the label and split checks."""

import pandas as pd
import streamlit as st

from diagnostics.i18n import _
from diagnostics.walk.stages import LEARNABILITY
from diagnostics.report.plots import label_balance_figure, token_length_figure
from diagnostics.walk.registry import UNITS, units_of
from diagnostics.serve.store import Job
from ui.render import by_id, checklist, pending_badge, shown, status_line, traced_results
from ui.tables import field_columns, field_frame, row_in_full
from ui.shared import computed, explained_here, freshness, ran_for, wanted
from ui.start import start_panel
from ui.session import current_config

st.title(_("1 · Data"))
st.caption(_("The first batch exactly as `model.fit` gets it from `to_tf_dataset` with a padding collator, "
             "decoded back to text, and the labels of the whole split."))
start_panel()
traced = traced_results("data")
if traced is None:
    config = current_config()
    jobs = [Job(unit, config) for unit in units_of("data") if not UNITS[unit].copy]  # learnability trains: below
    entries = []
    for job in jobs:
        entries.append(computed(job, _("Building the first batch and scanning the split…")))
        if entries[-1] is None:
            st.stop()
    results = [result for entry in entries for result in entry.results]
else:
    results = [result for result in traced if result.id != LEARNABILITY]

summary = st.empty()  # the counts, filled once the learnability result below is known
if traced is None:
    freshness(entries[0], jobs[0], also=jobs[1:])
st.subheader(_("The first batch, decoded"))
decoded = by_id(results, "data.decoded_samples")
if decoded and decoded.evidence.get("rows"):
    table, fields = field_frame(decoded.evidence["rows"],
                                ["position", "index", "label", "label_name", "decoded", "tokens"])
    st.dataframe(table, hide_index=True, width="stretch", column_config={
        "position": st.column_config.NumberColumn("#", width=40),
        "index": st.column_config.NumberColumn(_("row in split"), width=90),
        "label": st.column_config.NumberColumn(_("label"), width=60),
        "label_name": st.column_config.TextColumn(_("label name"), width=120),
        **field_columns(fields),
        "tokens": st.column_config.NumberColumn(_("tokens"), width=60),
    })
    st.caption(_("A cell shows the start of a long text; read the whole row below."))
    with st.expander(_("Read a row in full")):
        # Labelled by position alone: a label that changed with the data (another task, another file) would come
        # back from the browser as a value no row has.
        if st.session_state.get("data.read_row") not in range(len(table)):  # a smaller batch than the row last read
            st.session_state["data.read_row"] = 0
        position = st.selectbox(_("Row of the batch"), range(len(table)), key="data.read_row",
                                format_func=lambda index: f"#{index}")
        row = decoded.evidence["rows"][position]
        st.caption(_("Row {index} of the split, labelled {label} ({name}).").format(
            index=row["index"], label=row["label"], name=shown(row["label_name"])))
        row_in_full(row)
else:
    st.warning(shown(decoded.summary) if decoded else _("No batch could be built."))

balance, truncation = by_id(results, "data.label_balance"), by_id(results, "data.truncation")
left, right = st.columns(2)
if balance and balance.evidence.get("labels") or balance and balance.evidence.get("regression"):
    left.plotly_chart(label_balance_figure(balance), width="stretch")
    left.caption(_("Split-wide checks scanned {rows:,} rows.").format(rows=balance.evidence["rows_scanned"]))
if truncation and truncation.evidence.get("lengths"):
    right.plotly_chart(token_length_figure(truncation), width="stretch")

batch = by_id(results, "data.batch")
if batch and batch.evidence.get("entries"):
    st.subheader(_("What the model receives"))
    st.dataframe(pd.DataFrame(batch.evidence["entries"]), hide_index=True, column_config={
        "key": _("key"), "shape": _("shape"), "dtype": "dtype", "in": _("in")})

st.subheader(_("Do the labels carry signal?"))
st.caption(_("Two short runs on copies of the model: one on the given labels, one on the same labels shuffled. "
             "If held-out rows are predicted no better with the given labels, the labels no longer match their "
             "texts."))
if traced is None:
    learnability_job = Job("learnability", config)
    asked = wanted(learnability_job) or st.button(_("Run the learnability check"), key="data.learnability_run")
    learnability_entry = computed(learnability_job, _("Training two copies: the given labels, then shuffled ones…")) \
        if asked else None
    learnability = learnability_entry.results if learnability_entry else []
else:
    learnability = [result for result in traced if result.id == LEARNABILITY]
if learnability:
    figures = learnability[0].evidence
    if figures.get("given"):
        metric = _("held-out error") if figures["regression"] else _("held-out accuracy")
        final = _("final train loss")
        scale = 1 if figures["regression"] else 100  # an accuracy in whole percent, as the finding says it
        st.dataframe(pd.DataFrame([
            {_("labels"): _("given"), metric: figures["given"]["score"] * scale,
             final: figures["given"]["final_train_loss"]},
            {_("labels"): _("shuffled"), metric: figures["shuffled"]["score"] * scale,
             final: figures["shuffled"]["final_train_loss"]},
        ]), hide_index=True, column_config={  # as the finding says them: an accuracy in percent, losses to 3 places
            metric: st.column_config.NumberColumn(format="%.3f" if figures["regression"] else "%.0f%%"),
            final: st.column_config.NumberColumn(format="%.3f")})
    if traced is None:
        freshness(learnability_entry, learnability_job)
elif traced is None:  # marked as the header counts it: one of its PENDING
    st.info(f"{pending_badge()} `{LEARNABILITY}`  \n"
            + _("Press the button to run it (it trains two copies; the loaded model is never changed)."))
else:
    st.info(_("The trace did not run it (see the Data stage's checks below)."))
results = results + learnability
ran = None
if traced is None:
    results, ran = explained_here(results, config), ran_for(results, config)
status_line(results, summary, waiting=(LEARNABILITY,) if traced is None else (), ran=ran)

st.subheader(_("Checks"))
checklist(results, ran)
