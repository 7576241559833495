"""Plotly figures built from check results (no Streamlit here)."""

from __future__ import annotations

import plotly.graph_objects as go

from diagnostics.result import CheckResult

SPLIT_COLOUR, BATCH_COLOUR, LIMIT_COLOUR = "#4C78A8", "#F58518", "#E45756"


def _layout(figure: go.Figure, title: str, x: str, y: str) -> go.Figure:
    figure.update_layout(
        title=title, xaxis_title=x, yaxis_title=y, height=340, margin=dict(l=50, r=20, t=50, b=50),
        legend=dict(orientation="h", yanchor="bottom", y=1.0, xanchor="right", x=1.0), template="plotly_white",
    )
    return figure


def label_balance_figure(result: CheckResult) -> go.Figure:
    """Share of each label in the split and in the first batch (regression: score histograms)."""
    evidence = result.evidence
    figure = go.Figure()
    if evidence.get("regression"):
        for name, colour in (("split", SPLIT_COLOUR), ("batch", BATCH_COLOUR)):
            edges, counts = evidence[name]["edges"], evidence[name]["counts"]
            total = sum(counts) or 1
            centres = [(a + b) / 2 for a, b in zip(edges[:-1], edges[1:])]
            figure.add_bar(x=centres, y=[c / total for c in counts], name=name, marker_color=colour)
        return _layout(figure, "Score distribution", "similarity score", "share of rows")
    for name, key, colour in (("split", "split_counts", SPLIT_COLOUR), ("first batch", "batch_counts", BATCH_COLOUR)):
        counts = evidence[key]
        total = sum(counts) or 1
        figure.add_bar(x=evidence["labels"], y=[c / total for c in counts], name=name, marker_color=colour,
                       text=[str(c) for c in counts], textposition="outside")
    figure.update_yaxes(tickformat=".0%")
    return _layout(figure, "Label distribution", "label", "share of rows")


def token_length_figure(result: CheckResult) -> go.Figure:
    """Token count of each batch row before truncation, with the max_length line."""
    evidence = result.evidence
    lengths = evidence["lengths"]
    figure = go.Figure()
    figure.add_bar(x=list(range(len(lengths))), y=lengths, name="tokens before truncation", marker_color=SPLIT_COLOUR)
    figure.add_hline(y=evidence["max_length"], line_dash="dash", line_color=LIMIT_COLOUR,
                     annotation_text=f"max_length {evidence['max_length']}")
    return _layout(figure, "Tokens per row of the first batch", "row of the batch", "tokens")
