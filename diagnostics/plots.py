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


NAN_COLOUR = "#D62728"


def per_sample_loss_figure(result: CheckResult) -> go.Figure:
    """Loss of every row of the batch; rows whose loss is NaN or Inf are marked at the top in red."""
    losses = result.evidence["losses"]
    labels = result.evidence["labels"]
    finite = [loss for loss in losses if loss is not None]
    top = max(finite) * 1.15 if finite else 1.0
    figure = go.Figure()
    figure.add_bar(x=list(range(len(losses))), y=[loss if loss is not None else 0 for loss in losses],
                   name="loss", marker_color=SPLIT_COLOUR,
                   hovertext=[f"label {label}" for label in labels])
    bad = [i for i, loss in enumerate(losses) if loss is None]
    if bad:
        figure.add_scatter(x=bad, y=[top] * len(bad), mode="markers+text", name="NaN / Inf loss",
                           marker=dict(color=NAN_COLOUR, symbol="x", size=12),
                           text=[f"label {labels[i]}" for i in bad], textposition="top center")
    return _layout(figure, "Loss of each row of the batch", "row of the batch", "loss")


def gradient_norm_figure(result: CheckResult) -> go.Figure:
    """Gradient norm of each layer after one train step (log scale)."""
    norms = result.evidence.get("layer_norms", [])
    figure = go.Figure()
    figure.add_bar(y=[row["layer"] for row in norms], x=[row["norm"] or 0 for row in norms], orientation="h",
                   marker_color=[SPLIT_COLOUR if row["norm"] else NAN_COLOUR for row in norms])
    figure.update_xaxes(type="log")
    figure.update_yaxes(autorange="reversed")
    _layout(figure, "Gradient norm per layer (one train step)", "gradient norm (log)", "")
    figure.update_layout(height=max(300, 22 * len(norms) + 100))
    return figure
