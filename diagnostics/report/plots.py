"""Plotly figures built from check results (no Streamlit here)."""

from __future__ import annotations

import math
import re
from typing import cast

import plotly.graph_objects as go

from diagnostics.checks.common import WARN_DRIFT
from diagnostics.checks.data.label_balance import Evidence as LabelBalance
from diagnostics.checks.data.truncation import Evidence as Truncation
from diagnostics.checks.hparams.lr_range_test import RULE_NAMES, Evidence as RangeTest
from diagnostics.checks.hparams.lr_sweep import CHECK as SWEEP_CHECK, Evidence as Sweep
from diagnostics.checks.hparams.schedule import Evidence as Schedule
from diagnostics.checks.model.gradients import Evidence as Gradients
from diagnostics.checks.model.nan_rows import Evidence as NanRows
from diagnostics.checks.overfit.one_batch import Evidence as Overfit
from diagnostics.core.result import CheckResult
from diagnostics.i18n import _, display_width, localize, msg


SPLIT_COLOUR, BATCH_COLOUR, LIMIT_COLOUR = "#4C78A8", "#F58518", "#E45756"
# One colour a rate of the sweep, so that its line and its dots read as one (Plotly's own qualitative colours).
RATE_COLOURS = ("#636EFA", "#EF553B", "#00CC96", "#AB63FA", "#FFA15A", "#19D3F3", "#FF6692", "#B6E880", "#FF97FF",
                "#FECB52")


# A chart note's pieces: each Chinese or Japanese letter on its own (a line may end after any), else a word with
# the spaces after it (Korean, like English, breaks between words).
_CJK = "\u2e80-\ua4cf\uf900-\ufaff\uff00-\uffef"
_PIECES = re.compile(f"[{_CJK}]\\s*|[^\\s{_CJK}]+\\s*|\\s+")


def wrapped(text: str, width: int = 48) -> str:
    """`text` on lines of at most `width` letters (a Chinese or Korean one counts two) for a chart's note, joined
    with Plotly's <br>: a note is one line otherwise, and ran past the chart's edge."""
    lines, line, used = [], "", 0
    for piece in _PIECES.findall(text):
        size = display_width(piece)
        if line and used + size > width:
            lines.append(line.rstrip())
            line, used = "", 0
        line, used = line + piece, used + size
    return "<br>".join([*lines, line.rstrip()])


def _layout(figure: go.Figure, title: str, x: str, y: str) -> go.Figure:
    figure.update_layout(
        # The title on a line of its own above the legend's: side by side, a long title (Russian's) ran under it.
        title=dict(text=title, y=0.98, yanchor="top"), xaxis_title=x, yaxis_title=y, height=360,
        margin=dict(l=50, r=20, t=80, b=50),
        legend=dict(orientation="h", yanchor="bottom", y=1.0, xanchor="right", x=1.0), template="plotly_white",
    )
    return figure


def label_balance_figure(result: CheckResult) -> go.Figure:
    """Share of each label in the split and in the first batch (regression: score histograms)."""
    evidence = cast(LabelBalance, result.evidence)
    figure = go.Figure()
    if evidence.get("regression"):
        for key, name, colour in (("split", _("split"), SPLIT_COLOUR), ("batch", _("batch"), BATCH_COLOUR)):
            edges, counts = evidence[key]["edges"], evidence[key]["counts"]
            total = sum(counts) or 1
            centres = [(a + b) / 2 for a, b in zip(edges[:-1], edges[1:], strict=False)]
            figure.add_bar(x=centres, y=[c / total for c in counts], name=name, marker_color=colour)
        return _layout(figure, _("Score distribution"), _("similarity score"), _("share of rows"))
    for name, key, colour in ((_("split"), "split_counts", SPLIT_COLOUR),
                              (_("first batch"), "batch_counts", BATCH_COLOUR)):
        counts = evidence[key]
        if key == "batch_counts" and not sum(counts):
            continue  # no first batch was built (data.batch says why): no bars of zero for it
        total = sum(counts) or 1
        figure.add_bar(x=evidence["labels"], y=[c / total for c in counts], name=name, marker_color=colour,
                       text=[str(c) for c in counts], textposition="outside")
    figure.update_yaxes(tickformat=".0%")
    return _layout(figure, _("Label distribution"), _("label"), _("share of rows"))


def token_length_figure(result: CheckResult) -> go.Figure:
    """Token count of each batch row before truncation, with the max_length line."""
    evidence = cast(Truncation, result.evidence)
    lengths = evidence["lengths"]
    figure = go.Figure()
    figure.add_bar(
        x=list(range(len(lengths))), y=lengths, name=_("tokens before truncation"), marker_color=SPLIT_COLOUR
    )
    if evidence.get("cut_source") not in ("none", "unknown") and evidence.get("scope") != "unmeasured":
        figure.add_hline(y=evidence["max_length"], line_dash="dash", line_color=LIMIT_COLOUR,
                         annotation_text=f"max_length {evidence['max_length']}")
    return _layout(figure, _("Tokens per row of the first batch"), _("row of the batch"), _("tokens"))


NAN_COLOUR = "#D62728"


def per_sample_loss_figure(result: CheckResult) -> go.Figure:
    """Loss of every row of the batch; rows whose loss is NaN or Inf are marked at the top in red."""
    evidence = cast(NanRows, result.evidence)
    losses, labels = evidence["losses"], evidence["labels"]
    finite = [loss for loss in losses if loss is not None]
    top = max(finite) * 1.15 if finite else 1.0
    figure = go.Figure()
    figure.add_bar(x=list(range(len(losses))), y=[loss if loss is not None else 0 for loss in losses],
                   name=_("loss"), marker_color=SPLIT_COLOUR,
                   hovertext=[_("label {label}").format(label=label) for label in labels])
    bad = [i for i, loss in enumerate(losses) if loss is None]
    if bad:
        # Each mark carries its row's label alone ("label 2" beside "label 2" on rows 6 and 7 ran into each other).
        figure.add_scatter(x=bad, y=[top] * len(bad), mode="markers+text", name=_("NaN / Inf loss (its label above)"),
                           marker=dict(color=NAN_COLOUR, symbol="x", size=12), text=[str(labels[i]) for i in bad],
                           hovertext=[_("label {label}").format(label=labels[i]) for i in bad],
                           textposition="top center", cliponaxis=False)
        figure.update_yaxes(range=[0, top * 1.2])
    return _layout(figure, _("Loss of each row of the batch"), _("row of the batch"), _("loss"))


def gradient_norm_figure(result: CheckResult) -> go.Figure:
    """Gradient norm of each layer after one train step (log scale)."""
    norms = cast(Gradients, result.evidence).get("layer_norms", [])
    figure = go.Figure()
    figure.add_bar(y=[row["layer"] for row in norms], x=[row["norm"] or 0 for row in norms], orientation="h",
                   marker_color=[SPLIT_COLOUR if row["norm"] else NAN_COLOUR for row in norms])
    figure.update_xaxes(type="log", dtick=1, tickformat=".0e")  # a tick a decade: no bare "5" beside 0.01
    figure.update_yaxes(autorange="reversed")
    _layout(figure, _("Gradient norm per layer (one train step)"), _("gradient norm (log)"), "")
    figure.update_layout(height=max(300, 22 * len(norms) + 100))
    return figure


def _mark_rate(figure: go.Figure, rate: float, text: str, colour: str, dash: str, top: bool = True,
               row: int | None = None) -> None:
    """A vertical line at a rate on a log x axis, labelled beside it (`row`: in that row of a figure of subplots only,
    labelled there; None: across the figure, labelled at its top or bottom).

    `add_vline(annotation_text=...)` places its label at the raw value, which a log axis reads as log10(x): a
    label for 1e-4 lands near 1 (and stretches the axis to reach it). The label is placed at log10(rate) instead.
    """
    where = {} if row is None else {"row": row, "col": 1}
    figure.add_vline(x=rate, line_dash=dash, line_color=colour, **where)
    axis = "" if row in (None, 1) else str(row)
    figure.add_annotation(x=math.log10(rate), y=1.0 if top else 0.0, xref=f"x{axis}",
                          yref="paper" if row is None else f"y{axis} domain", text=text,
                          showarrow=False, xanchor="left", yanchor="top" if top else "bottom",
                          font=dict(color=colour, size=11), bgcolor="rgba(255,255,255,0.8)")


def sweep_curves_figure(result: CheckResult) -> go.Figure:
    """Loss against step, one line per learning rate of the sweep: the smoothed loss the sweep judges and ranks by
    as the line, each step's own loss as faint dots in the same colour (a noisy last step drawn as the line once made
    another rate look lowest than the one recommended); the recommended rate says so in the legend."""
    evidence = cast(Sweep, result.evidence)
    figure = go.Figure()
    rates = evidence["learning_rates"]
    diverged = evidence.get("diverged", [False] * len(rates))
    smoothed = evidence.get("smoothed") or evidence["losses"]
    best = evidence.get("best_rate")
    for index, (rate, raw, curve, bad) in enumerate(zip(rates, evidence["losses"], smoothed, diverged, strict=True)):
        colour = RATE_COLOURS[index % len(RATE_COLOURS)]
        name = f"{rate:.0e}" + (" " + _("(flagged)") if bad else " " + _("(recommended)") if rate == best else "")
        figure.add_scatter(x=evidence["steps"], y=curve, mode="lines", name=name, legendgroup=name,
                           line=dict(color=colour, dash="dot" if bad else "solid", width=3 if rate == best else 2))
        if curve is not raw:
            figure.add_scatter(x=evidence["steps"], y=raw, mode="markers", name=name, legendgroup=name,
                               showlegend=False, marker=dict(color=colour, size=5, opacity=0.35))
    # The title on two lines (the second smaller): one line ran past the chart's right edge in Russian.
    _layout(figure, _("Smoothed loss at each step, one line per learning rate") + "<br><sup>"
            + _("dots: each step's own loss") + "</sup>", _("step"), _("loss"))
    # Tall enough for a legend of a dozen rates beside the axis without a scroll bar.
    figure.update_layout(legend=dict(orientation="v", x=1.02, xanchor="left", y=1, yanchor="top"),
                         height=max(360, 140 + 36 * len(rates)), margin=dict(l=50, r=20, t=100, b=50),
                         title=dict(y=1, yanchor="top", pad=dict(t=28)))  # Plotly anchors a two-line title by its first
    drawn = [[*raw, *curve] for raw, curve in zip(evidence["losses"], smoothed, strict=True)]
    kept = [value for values, bad in zip(drawn, diverged, strict=True) if not bad for value in values
            if value is not None and math.isfinite(value)]
    _clip_to(figure, kept, [value for values in drawn for value in values
                            if value is not None and math.isfinite(value)])
    return figure


def _clipped(kept: list[float], every: list[float]) -> tuple[float, float] | None:
    """A loss axis's range scaled to the rates not flagged, when a flagged rate's losses (in the hundreds, once it
    diverged) would flatten the others into one line; None when every value fits."""
    if not kept or not every or max(every) <= max(kept) * 1.5:
        return None
    low, high = min(kept), max(kept)
    pad = 0.1 * (high - low) or 0.1 * abs(high) or 0.1
    return low - pad, high + pad


def _clip_to(figure: go.Figure, kept: list[float], every: list[float]) -> None:
    """Scale the loss axis to the rates not flagged (`_clipped`); the flagged lines leave the top, which a note
    says."""
    bounds = _clipped(kept, every)
    if bounds is None:
        return
    figure.update_yaxes(range=list(bounds))
    figure.add_annotation(text=localize(msg("flagged rates leave the top (up to {top:.3g})", top=max(every))),
                          xref="paper", yref="paper", x=0, y=1, xanchor="left", yanchor="bottom", showarrow=False,
                          font=dict(size=11, color=NAN_COLOUR))


def sweep_final_figure(result: CheckResult) -> go.Figure:
    """Held-out loss after the sweep's steps against learning rate (log axis), the untrained model's held-out loss
    as a line, flagged rates crossed, the recommended and configured rates marked; on a pretrained checkpoint, below
    it on a panel of its own (log axis, with ticks), the drift of its weights per step against the limit the sweep
    tolerates, which flags the rates above it.

    The recommended rate is marked on the held-out panel only when the held-out losses ranked it; when they moved
    too little to rank (`ranked_by`), the panel says so and the mark stays off it: a mark at a held-out loss above
    the others' once read as the sweep recommending the worst rate."""
    from plotly.subplots import make_subplots

    evidence = cast(Sweep, result.evidence)
    rates = evidence["learning_rates"]
    held = [score["loss"] for score in evidence["held_out"]]
    flagged = evidence.get("diverged", [False] * len(rates))
    finite = [v for v in held if v is not None]
    start = evidence["held_out_start"]["loss"]
    kept = [v for v, bad in zip(held, flagged, strict=True) if v is not None and not bad] + (
        [start] if start is not None else []
    )
    drifts = evidence.get("drift_per_step") or []
    with_drift = bool(evidence.get("pretrained") and any(drifts))
    figure = make_subplots(rows=2 if with_drift else 1, cols=1, shared_xaxes=True, vertical_spacing=0.1,
                           row_heights=[0.58, 0.42] if with_drift else None)
    view = _held_out_view(kept, finite, start)
    # A flagged rate without a finite loss is drawn at the top of what the axis shows.
    ceiling = view[1] - 0.04 * (view[1] - view[0]) if view else max(finite) * 1.1 if finite else 1.0  # whole, not cut
    ranked = evidence.get("ranked_by", "held-out loss") == "held-out loss"
    # Losses that moved too little to rank the rates are drawn faint, under a name that says so: the highest point at
    # the recommended rate (shuffled labels, by the training loss) read as the sweep recommending the worst.
    figure.add_scatter(x=rates, y=held, mode="lines+markers", row=1, col=1, opacity=1.0 if ranked else 0.45,
                       name=_("held-out loss") if ranked else _("held-out loss (too close to rank)"),
                       marker_color=SPLIT_COLOUR, line=dict(width=2 if ranked else 1.5,
                                                            dash="solid" if ranked else "dash"))
    # A flagged rate is crossed where its loss is, or at the top of the panel when its loss is not finite or leaves the
    # top (its value in the hover text): the legend's "flagged" always names marks that are drawn.
    bad = [(r, v, min(v, ceiling) if v is not None else ceiling)
           for r, v, d in zip(rates, held, flagged, strict=True) if d]
    if bad:
        figure.add_scatter(x=[r for r, _, _ in bad], y=[y for _, _, y in bad], mode="markers", name=_("flagged"),
                           marker=dict(color=NAN_COLOUR, symbol="x", size=13), row=1, col=1,
                           hovertext=[f"{r:.0e}: {v:.3g}" if v is not None else f"{r:.0e}: NaN" for r, v, _ in bad],
                           hoverinfo="text")
    if start is not None:
        figure.add_hline(y=start, line_dash="dot", line_color="#7F7F7F", annotation_text=_("untrained"),
                         annotation_position="bottom left", row=1, col=1)
    best = evidence.get("best_rate")
    if with_drift:
        limit = evidence.get("drift_limit") or WARN_DRIFT
        figure.add_scatter(x=rates, y=[d if d else None for d in drifts], mode="lines+markers",
                           name=_("weight drift a step"), line=dict(color="#9467BD", dash="dash"), row=2, col=1)
        figure.add_scatter(x=[rates[0], rates[-1]], y=[limit] * 2, mode="lines", row=2, col=1, line=dict(
            color=LIMIT_COLOUR, dash="dot", width=1.5), name=localize(msg("drift limit {limit:g}", limit=limit)))
        values = [d for d in drifts if d and d > 0] + [limit]
        low, high = math.floor(math.log10(min(values))), math.ceil(math.log10(max(values)))
        figure.update_yaxes(type="log", range=[low - 0.1, high + 0.1], dtick=1, tickformat=".0e", showgrid=True,
                            title_text=_("drift a step (log)"), row=2, col=1)
        if best and not ranked:
            _mark_rate(figure, best, _("recommended {rate:.0e}").format(rate=best), "#2CA02C", "dash", row=2)
    if best and ranked:
        _mark_rate(figure, best, _("recommended {rate:.0e}").format(rate=best), "#2CA02C", "dash")
    elif best:
        figure.add_annotation(
            text=wrapped(_("held-out losses moved too little to rank the rates: {rate:.0e} is recommended by {basis}"
                           ).format(rate=best, basis=_("the training loss (the chart of the loss at each step)")
                                    if evidence.get("ranked_by") == "training loss" else
                                    _("the checkpoint's usual rate"))),  # on lines: one line ran past the chart
            xref="x domain", yref="y domain", x=0, y=1, xanchor="left", yanchor="top", showarrow=False,
            font=dict(size=11, color="#2CA02C"), bgcolor="rgba(255,255,255,0.8)")
    if evidence.get("configured_rate"):
        _mark_rate(figure, evidence["configured_rate"],
                   _("configured {rate:.0e}").format(rate=evidence["configured_rate"]), BATCH_COLOUR, "dot",
                   top=False)
    figure.update_xaxes(type="log", tickformat=".0e", dtick=1)
    figure = _layout(figure, _("Held-out loss against learning rate"), "", _("held-out loss"))
    figure.update_xaxes(title_text=_("learning rate (log)"), row=2 if with_drift else 1, col=1)
    if view is not None:
        figure.update_yaxes(range=list(view), row=1, col=1)
    if _clipped(kept, finite) is not None:
        figure.add_annotation(text=localize(msg("flagged rates leave the top (up to {top:.3g})", top=max(finite))),
                              xref="paper", yref="paper", x=0, y=1, xanchor="left", yanchor="bottom",
                              showarrow=False, font=dict(size=11, color=NAN_COLOUR))
    # The legend below the axis title, anchored by its top so that a long one grows downwards, never over it.
    # Shown even for one trace (Plotly hides a legend of one): its name says whether the losses could rank the rates.
    figure.update_layout(showlegend=True, legend=dict(orientation="h", yanchor="top", y=-0.14 if with_drift else -0.28,
                                                      xanchor="left", x=0), margin=dict(l=60, r=30, t=50, b=130),
                         height=570 if with_drift else 480)
    return figure


def _held_out_view(kept: list[float], finite: list[float], start: float | None) -> tuple[float, float] | None:
    """The held-out panel's loss range: the rates not flagged (and the untrained loss) when a flagged rate's loss
    would flatten them (`_clipped`); at least 3% either side of the untrained loss when the losses differ by less than
    the sweep ranks by, drawn as small as they are (an axis zoomed to 1.099-1.104 made the recommended rate look like
    the worst); None: Plotly's own range."""
    bounds = _clipped(kept, finite)
    if bounds is None and start and kept and max(kept) - min(kept) < SWEEP_CHECK.value("min_held_out_gain") * start:
        return min(start * 0.97, min(kept)), max(start * 1.03, max(kept))
    return bounds


def _rate_axis(figure: go.Figure) -> None:
    """A learning-rate x axis: log scale, one tick a decade, written 1e-05 (never 10μ)."""
    figure.update_xaxes(type="log", tickformat=".0e", dtick=1)


def range_test_figure(result: CheckResult) -> go.Figure:
    """Loss against a rising learning rate, with each rule's suggested rate."""
    evidence = cast(RangeTest, result.evidence)
    figure = go.Figure()
    figure.add_scatter(x=evidence["learning_rates"], y=evidence["losses"], mode="lines", name=_("loss"),
                       line=dict(color=SPLIT_COLOUR, width=1), opacity=0.5)
    if evidence.get("smoothed"):
        figure.add_scatter(x=evidence["learning_rates"], y=evidence["smoothed"], mode="lines", name=_("smoothed"),
                           line_color=SPLIT_COLOUR)
    colours = ["#2CA02C", BATCH_COLOUR, "#9467BD"]
    for index, ((name, rate), colour) in enumerate(zip(evidence.get("suggestions", {}).items(), colours, strict=False)):
        _mark_rate(figure, rate, f"{_(RULE_NAMES.get(name, name))} {rate:.0e}", colour, "dash", top=index != 1)
    if evidence.get("uninformative"):  # the rules' rates are its evidence, not suggestions: said above them
        figure.add_annotation(text=_("the rules' rates disagree, so this test suggests none (see its card)"),
                              xref="paper", yref="paper", x=0, y=1, xanchor="left", yanchor="bottom",
                              showarrow=False, font=dict(size=11, color="#7F7F7F"))
    if not evidence.get("uninformative") and evidence.get("suggested") and evidence.get("max_safe_rate") \
            and evidence["suggested"] <= evidence["max_safe_rate"] \
            and evidence["suggested"] not in evidence.get("suggestions", {}).values():
        _mark_rate(
            figure,
            evidence["suggested"],
            _("suggested {rate:.0e} (capped)").format(rate=evidence["suggested"]),
            "#D62728",
            "solid",
            top=False,
        )
    _rate_axis(figure)
    finite = [v for v in evidence.get("smoothed") or evidence["losses"] if v is not None and math.isfinite(v)]
    if finite:  # zoomed on the smoothed curve: a raw loss's dip past it (one noisy step) would flatten it
        figure.update_yaxes(range=list(_range_view(finite)))
    return _layout(figure, _("Learning-rate range test"), _("learning rate (log)"), _("loss"))


def _range_view(losses: list[float]) -> tuple[float, float]:
    """The loss axis of a range test: the fall from the first loss to the lowest, and as much again above the first,
    so that a curve that barely falls before it blows up is not drawn as a flat line under the blow-up (an axis to
    2.5 times the first loss once showed a curve at 1.10 flat, its suggestions pointing at nothing visible)."""
    first, low = losses[0], min(losses)
    fall = max(first - low, 0.02 * abs(first), 1e-3)
    top = min(max(losses), first + 1.5 * fall)
    return low - 0.15 * (top - low), top + 0.05 * (top - low)


def schedule_figure(result: CheckResult) -> go.Figure:
    """The learning rate over the planned training steps."""
    evidence = cast(Schedule, result.evidence)
    figure = go.Figure()
    figure.add_scatter(x=evidence["steps"], y=evidence["learning_rates"], mode="lines", name=_("learning rate"),
                       line_color=SPLIT_COLOUR, fill="tozeroy")
    if evidence.get("warmup_steps"):
        figure.add_vline(x=evidence["warmup_steps"], line_dash="dot", annotation_text=_("end of warmup"))
    figure.update_yaxes(tickformat=".1e")  # rates in one notation everywhere (1e-05, never 10μ)
    return _layout(figure, _("Learning-rate schedule ({optimizer})").format(optimizer=evidence["optimizer"]),
                   _("training step"), _("learning rate"))


def overfit_figure(result: CheckResult) -> go.Figure:
    """Loss and accuracy after every epoch of the overfit test, with the ln K random-guess line."""
    from plotly.subplots import make_subplots

    evidence = cast(Overfit, result.evidence)
    epochs = list(range(1, len(evidence["losses"]) + 1))
    figure = make_subplots(specs=[[{"secondary_y": True}]])
    figure.add_scatter(x=epochs, y=evidence["losses"], mode="lines+markers", name=_("loss"), line_color=SPLIT_COLOUR)
    finite = [loss for loss in evidence["losses"] if loss is not None and math.isfinite(loss)]
    # The loss axis reaches a third above its highest value and ln K, so ln K never sits on the accuracy axis's 100%
    # line (both axes once ended at the same height, and a reader took the one line for the other).
    top = max(finite + [evidence.get("ln_k") or 0.0]) * 4 / 3 if finite else None
    figure.update_yaxes(tickformat=".3~g", secondary_y=False, **({"range": [0, top]} if top else {}))
    if evidence.get("accuracies"):
        figure.add_scatter(x=epochs, y=evidence["accuracies"], mode="lines+markers", name=_("accuracy"),
                           line_color=BATCH_COLOUR, secondary_y=True)
        figure.update_yaxes(title_text=_("accuracy"), tickformat=".0%", range=[0, 1.05], dtick=0.25, secondary_y=True,
                            showgrid=False)
    if evidence.get("ln_k"):
        figure.add_hline(y=evidence["ln_k"], line_dash="dash", line_color=LIMIT_COLOUR,
                         annotation_text=localize(msg("ln K = {value:.3f} (random guess)", value=evidence["ln_k"])),
                         annotation_position="top right")  # at the left the loss starts on it and crosses the label
    _layout(figure, _("Training on one batch"), _("epoch"), _("loss"))
    return figure


# Each check's charts as its page draws them: (the evidence keys of which one must be there, the figures in order).
FIGURES = {
    "data.label_balance": (("labels", "regression"), (label_balance_figure,)),
    "data.truncation": (("lengths",), (token_length_figure,)),
    "model.nan_rows": (("losses",), (per_sample_loss_figure,)),
    "model.gradients": (("layer_norms",), (gradient_norm_figure,)),
    "hparams.schedule": (("steps",), (schedule_figure,)),
    "hparams.lr_sweep": (("losses",), (sweep_curves_figure, sweep_final_figure)),
    "hparams.lr_range_test": (("losses",), (range_test_figure,)),
    "overfit.one_batch": (("losses",), (overfit_figure,)),
}


def figures_of(result: CheckResult) -> list[go.Figure]:
    """The charts of one check's result (none for a check without charts, or one whose evidence has no curve)."""
    needs, builders = FIGURES.get(result.id, ((), ()))
    if not any((result.evidence or {}).get(key) for key in needs):
        return []
    return [build(result) for build in builders]
