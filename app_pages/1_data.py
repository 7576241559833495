"""Data page: the first batch as model.fit sees it, decoded, with the label and split checks."""

import pandas as pd
import streamlit as st

from diagnostics.pipeline import LEARNABILITY
from diagnostics.plots import label_balance_figure, token_length_figure
from diagnostics.shared import Job
from ui.render import by_id, checklist, status_line, traced_results
from ui.shared import computed, freshness, wanted
from ui.state import current_config

st.title("1 · Data")
st.caption("The first batch exactly as `model.fit` gets it from `to_tf_dataset` with a padding collator, "
           "decoded back to text, and the labels of the whole split.")
traced = traced_results("data")
if traced is None:
    config = current_config()
    job = Job("data", config)
    entry = computed(job, "Building the first batch and scanning the split…")
    if entry is None:
        st.stop()
    results = entry.results
else:
    results = [result for result in traced if result.id != LEARNABILITY]

summary = st.empty()  # the counts, filled once the learnability result below is known
if traced is None:
    freshness(entry, job)
st.subheader("The first batch, decoded")
decoded = by_id(results, "data.decoded_samples")
if decoded and decoded.evidence.get("rows"):
    st.dataframe(
        pd.DataFrame(decoded.evidence["rows"])[["position", "index", "label", "label_name", "decoded", "tokens"]],
        hide_index=True, width="stretch",
        column_config={
            "position": st.column_config.NumberColumn("#", width=40),
            "index": st.column_config.NumberColumn("row in split", width=90),
            "label": st.column_config.NumberColumn("label", width=60),
            "label_name": st.column_config.TextColumn("label name", width=120),
            "decoded": st.column_config.TextColumn("decoded (tokenizer.decode)", width=900),
            "tokens": st.column_config.NumberColumn("tokens", width=60),
        },
    )
else:
    st.warning(decoded.summary if decoded else "No batch could be built.")

balance, truncation = by_id(results, "data.label_balance"), by_id(results, "data.truncation")
left, right = st.columns(2)
if balance and balance.evidence.get("labels") or balance and balance.evidence.get("regression"):
    left.plotly_chart(label_balance_figure(balance), width="stretch")
    left.caption(f"Split-wide checks scanned {balance.evidence['rows_scanned']:,} rows.")
if truncation and truncation.evidence.get("lengths"):
    right.plotly_chart(token_length_figure(truncation), width="stretch")

batch = by_id(results, "data.batch")
if batch and batch.evidence.get("entries"):
    st.subheader("What the model receives")
    st.dataframe(pd.DataFrame(batch.evidence["entries"]), hide_index=True)

st.subheader("Do the labels carry signal?")
st.caption("Two short runs on copies of the model: one on the given labels, one on the same labels shuffled. "
           "If held-out rows are predicted no better with the given labels, the labels no longer match their texts.")
if traced is None:
    learnability_job = Job("learnability", config)
    asked = wanted(learnability_job) or st.button("Run the learnability check", key="data.learnability_run")
    learnability_entry = computed(learnability_job, "Training two copies: the given labels, then shuffled ones…") \
        if asked else None
    learnability = learnability_entry.results if learnability_entry else []
else:
    learnability = [result for result in traced if result.id == LEARNABILITY]
if learnability:
    figures = learnability[0].evidence
    if figures.get("given"):
        metric = "held-out error" if figures["regression"] else "held-out accuracy"
        st.dataframe(pd.DataFrame([
            {"labels": "given", metric: figures["given"]["score"], "final train loss": figures["given"]["final_train_loss"]},
            {"labels": "shuffled", metric: figures["shuffled"]["score"],
             "final train loss": figures["shuffled"]["final_train_loss"]},
        ]), hide_index=True)
    if traced is None:
        freshness(learnability_entry, learnability_job)
elif traced is None:
    st.info("Press the button to run it (it trains two copies; the loaded model is never changed).")
else:
    st.info("The trace did not run it (see the Data stage's checks below).")
results = results + learnability
status_line(results, summary)

st.subheader("Checks")
checklist(results)
