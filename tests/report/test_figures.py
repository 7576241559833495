"""Every chart draws what its legend names, on an axis whose range holds it, and its marks agree with its sentence:
read from each figure's own data, on evidence recorded from the real checkpoint with real GLUE text
(tests/data/recorded, written by `python -m diagnostics run --json`; tests/data/recorded/README.md says how) and on
the cases a chart once drew wrong."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from diagnostics.core.result import CheckResult, Status
from diagnostics.report.plots import figures_of, sweep_final_figure


RECORDED = Path(__file__).resolve().parents[1] / "data" / "recorded"


def recorded_results() -> list[tuple[str, CheckResult]]:
    """(file:check, result) for every check with charts in every recorded report."""
    found = []
    for path in sorted(RECORDED.glob("*.json")):
        for check in json.loads(path.read_text())["checks"]:
            result = CheckResult.from_dict(check)
            if figures_of(result):
                found.append((f"{path.stem}:{result.id}", result))
    return found


def _axis(figure, trace, letter: str):
    """The layout axis a trace is drawn on ('x' or 'y')."""
    name = getattr(trace, f"{letter}axis") or letter
    return figure.layout[f"{letter}axis{name[1:]}"]


def _inside(value, axis) -> bool:
    """Whether a value is drawn inside an axis's fixed range (always, on an axis Plotly ranges itself)."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return False
    if axis.range is None:
        return True
    if axis.type == "log":
        if value <= 0:
            return False
        value = math.log10(value)
    low, high = sorted(axis.range)
    return low <= value <= high


def assert_drawn(figure) -> None:
    """Every trace the legend names has a point inside both its axes, and each drawn point's axis is of a scale that
    can show it (no loss on a log axis of drifts, no drift on a loss axis)."""
    for trace in figure.data:
        if trace.showlegend is False or not trace.name:
            continue
        x_axis, y_axis = _axis(figure, trace, "x"), _axis(figure, trace, "y")
        points = [(x, y) for x, y in zip(trace.x or (), trace.y or (), strict=False)]
        assert any(_inside(x, x_axis) and _inside(y, y_axis) for x, y in points), \
            f"{trace.name!r} is in the legend but none of its points is drawn (y range {y_axis.range}, {y_axis.type})"


@pytest.mark.parametrize("name, result", recorded_results(), ids=[name for name, _ in recorded_results()])
def test_every_recorded_chart_draws_each_legend_entry_inside_its_axis(name, result):
    for figure in figures_of(result):
        assert_drawn(figure)


def test_recorded_evidence_is_there_and_holds_a_real_sweep_on_a_pretrained_checkpoint():
    sweeps = [result for name, result in recorded_results() if result.id == "hparams.lr_sweep"]
    assert len(sweeps) >= 3 and all(result.evidence["pretrained"] for result in sweeps)
    assert {result.evidence["ranked_by"] for result in sweeps} >= {"held-out loss"}


def _sweep(held, drifts, ranked_by, best, *, diverged=None, start=0.692):
    rates = [1e-6, 1e-5, 5e-5, 1e-4, 5e-4, 2e-3, 1e-2][:len(held)]
    return CheckResult("hparams.lr_sweep", "hparams", Status.PASS, "", evidence={
        "learning_rates": rates, "held_out": [{"loss": value} for value in held], "held_out_start": {"loss": start},
        "diverged": diverged or [drift > 1e-3 for drift in drifts], "best_rate": best, "ranked_by": ranked_by,
        "configured_rate": 5e-5, "drift_per_step": drifts, "pretrained": True, "drift_limit": 1e-3,
        "steps": [1, 2], "losses": [[0.69, 0.68]] * len(held)})


def _held_out_marks(figure) -> list[str]:
    """The labels of the rate marks drawn on the held-out panel (the first row, or the whole figure)."""
    return [note.text for note in figure.layout.annotations
            if note.xref == "x" and note.yref in ("paper", "y domain") and "recommended" in (note.text or "")]


def test_the_drift_that_flags_rates_is_drawn_against_its_limit_on_a_log_panel_with_ticks():
    # The RTE case: held-out losses 0.689-0.721, drifts 8e-6 to 0.06 (the sweep's verdict rests on the drift).
    drifts = [8e-6, 8e-5, 3.8e-4, 7.3e-4, 2.8e-3, 1.3e-2, 6e-2]
    figure = sweep_final_figure(_sweep([0.692, 0.695, 0.718, 0.70, 0.69, 0.695, 0.72], drifts, "training loss",
                                       5e-5))
    assert_drawn(figure)
    drift = next(trace for trace in figure.data if trace.name == "weight drift a step")
    axis = _axis(figure, drift, "y")
    assert axis.type == "log" and axis.dtick == 1 and axis.tickformat == ".0e" and axis.showticklabels is not False
    assert axis.overlaying is None  # a panel of its own, not a second scale over the losses
    limit = next(trace for trace in figure.data if trace.name.startswith("drift limit"))
    assert limit.y[0] == 1e-3 and _inside(1e-3, axis)


def test_held_out_losses_that_cannot_rank_the_rates_say_so_and_mark_no_rate_on_them():
    figure = sweep_final_figure(_sweep([0.692, 0.695, 0.718, 0.70, 0.69, 0.695, 0.72],
                                       [8e-6, 8e-5, 3.8e-4, 7.3e-4, 2.8e-3, 1.3e-2, 6e-2], "training loss", 5e-5))
    assert _held_out_marks(figure) == []
    assert any("moved too little to rank" in (note.text or "") for note in figure.layout.annotations)
    # Drawn faint and named for what they are: the highest point sat at the recommended rate (shuffled labels) and
    # invited the comparison the note says they cannot make.
    held = next(trace for trace in figure.data if trace.name.startswith("held-out loss"))
    assert held.name == "held-out loss (too close to rank)" and held.line.dash == "dash" and held.opacity < 1
    assert figure.layout.showlegend is True  # Plotly hides a legend of one trace, and with it this name
    ranked = sweep_final_figure(_sweep([0.69, 0.60, 0.50, 0.45, 0.55, 0.70, 0.72], [1e-5] * 7, "held-out loss", 1e-4))
    assert [trace.name for trace in ranked.data][0] == "held-out loss"


def test_a_rate_the_held_out_losses_ranked_is_marked_where_its_loss_is_the_lowest_of_the_rates_not_flagged():
    held = [0.6926, 0.6915, 0.6822, 0.6847, 1.259, 0.7068, 1.628]
    drifts = [8e-6, 3.8e-5, 3.8e-4, 7.3e-4, 2.8e-3, 1.3e-2, 5.8e-2]
    result = _sweep(held, drifts, "held-out loss", 5e-5)
    figure = sweep_final_figure(result)
    assert_drawn(figure)
    assert _held_out_marks(figure) == ["recommended 5e-05"]
    kept = [value for value, bad in zip(held, result.evidence["diverged"], strict=True) if not bad]
    assert held[result.evidence["learning_rates"].index(5e-5)] == min(kept)


def test_a_sweep_on_random_weights_draws_no_drift_panel():
    result = _sweep([0.70, 0.69, 0.68], [1e-6, 1e-5, 1e-4], "held-out loss", 5e-5)
    result.evidence["pretrained"] = False
    figure = sweep_final_figure(result)
    assert_drawn(figure)
    assert not any(trace.name == "weight drift a step" for trace in figure.data)


def test_a_charts_note_is_on_lines_that_fit_the_chart_in_every_script():
    """The sweep's note ran past the chart's edge on one line ("... recommended by the training loss (the chart of"):
    it is folded between words, or between Chinese letters, each line at most 48 letters wide."""
    from diagnostics.report.plots import wrapped

    for note in ("held-out losses moved too little to rank the rates: 3e-03 is recommended by the training loss "
                 "(the chart of the loss at each step)",
                 "留出损失变化太小，无法对学习率排序：3e-03 由训练损失推荐（每一步损失的图表）",
                 "홀드아웃 손실이 너무 적게 움직여 학습률을 순위 매길 수 없습니다: 3e-03은 학습 손실이 추천합니다"):
        lines = wrapped(note).split("<br>")
        assert len(lines) > 1 and "".join(lines).replace(" ", "") == note.replace(" ", "")
        assert all(sum(2 if ord(char) > 0x2e80 else 1 for char in line) <= 48 for line in lines), lines
