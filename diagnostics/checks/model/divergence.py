"""model.divergence: during model.fit (DiagnoseCallback): the loss and the weights' size stay bounded."""

from __future__ import annotations

import math
from typing import Any, TypedDict

import numpy as np

from diagnostics.core.check import Check, Condition, FIT
from diagnostics.core.evidence import Rows
from diagnostics.core.fixes import RateFix
from diagnostics.core.result import CheckResult, crossed, judge
from diagnostics.core.rules import Above, All
from diagnostics.i18n import N_, msg


def divergence_seen(losses: list[float], weight_norms: list[float], chance_loss: float | None) -> dict[str, Any] | None:
    """Whether a run diverges, judged on its per-step losses and weight norms, and by which rule.

    The loss rule: the median loss of the last `window` steps is above `rise_factor` times the first step's loss
    (Lightning's range test stops at 4x) and, for a classifier, above `chance_multiple` times ln K, a loss worse
    than guessing. The weights rule: the weights' global norm grew past `weight_growth` times its start while the
    loss is no lower than at the start (Adam's bounded steps can blow the weights up while the loss stays finite,
    near ln K). A median, so one noisy step never counts.

    Args:
        losses: each step's own loss from the run's first step (all finite).
        weight_norms: the trainable weights' global norm before the first step, then after each step.
        chance_loss: ln K for a classifier; None for regression.

    Returns:
        None while the run looks sane (or has too few steps to say); else what the rule saw: "rule" ("loss" or
        "weights"), "start", "recent", "limit", "growth", and the ratios the registry's rules read ("loss_rise":
        recent / start, "chance_rise": recent / ln K, None for regression).
    """
    seen = divergence_measured(losses, weight_norms, chance_loss)
    if seen is None:
        return None
    rule = next(iter(crossed(CHECK, seen)), None)
    return {"rule": {"rise_factor": "loss", "weight_growth": "weights"}[rule], **seen} if rule else None


def divergence_measured(losses: list[float], weight_norms: list[float], chance_loss: float | None
                        ) -> dict[str, float] | None:
    """The figures model.divergence's rules judge: the first step's loss, the median of the last `window` steps,
    their ratio, the ratio to ln K, the loss limit they give and the weights' growth; None with too few steps."""
    window, rise_factor, chance_multiple = (CHECK.value(name) for name in ("window", "rise_factor", "chance_multiple"))
    window = int(window)
    if len(losses) <= window or not weight_norms:
        return None
    start, recent = float(losses[0]), float(np.median(losses[-window:]))
    limit = rise_factor * start
    if chance_loss is not None:
        limit = max(limit, chance_multiple * chance_loss)
    return {"start": start, "recent": recent, "limit": limit,
            "growth": float(weight_norms[-1] / weight_norms[0]) if weight_norms[0] > 0 else 1.0,
            "loss_rise": recent / start if start > 0 else math.inf if recent > 0 else 1.0,
            "chance_rise": recent / chance_loss if chance_loss else None}


def _times(ratio: float) -> str:
    """A multiple for a sentence: "4.2", "4481", or "3.9e+29" for a run whose loss left float range behind."""
    if not math.isfinite(ratio):
        return "∞"
    return f"{ratio:.1f}" if ratio < 10 else f"{ratio:.0f}" if ratio < 1e6 else f"{ratio:.1e}"


def rate_to_suggest(rate: float | None, usual: float) -> float:
    """A rate to try after a run diverged: the checkpoint's usual rate, or a tenth of the rate that diverged when
    that was already at or below it."""
    return usual if rate is None or rate > usual else rate / 10


def check_divergence(figures: dict[str, Any]) -> CheckResult:
    """A run watched during the user's own fit: fail when it diverges, saying whether the rows or the weights
    make the loss high.

    Args:
        figures: "losses" (each step's own loss), "weight_norms" (before the first step, then after each),
            "chance_loss" (ln K, None for regression), "learning_rate" (None when it could not be read),
            "usual_rate" (the checkpoint's), and once a divergence is seen "rows_loss_at_start" (the mean loss of
            the batch's rows on the weights the run started from; None when they could not be examined),
            "weights_moved" (|W - W0| / |W0|) and "rows".
    """
    seen = divergence_seen(figures["losses"], figures["weight_norms"], figures["chance_loss"])
    steps = len(figures["losses"])
    evidence = {**figures, "steps": steps, "seen": seen, **{key: (seen or {}).get(key) for key in
                                                            ("loss_rise", "chance_rise", "growth")}}
    if seen is not None:
        evidence["suggested_rate"] = rate_to_suggest(figures.get("learning_rate"), figures["usual_rate"])
    return judge(CHECK, evidence)


def _figures(e) -> dict[str, Any]:
    """The figures a divergence's sentences fill in, from its evidence: the step, the losses, the weights' growth and
    move, the rate and the rows' own loss on the starting weights."""
    seen, moved, rate, at_start = e["seen"], e.get("weights_moved"), e.get("learning_rate"), e.get("rows_loss_at_start")
    return {"step": e["steps"], "recent": seen["recent"], "start": seen["start"], "growth": _times(seen["growth"]),
            "ratio": _times(seen["recent"] / seen["start"] if seen["start"] > 0 else math.inf),
            "moved": ("?" if moved is None or not math.isfinite(moved) else
                      msg("{share:.0%} of their size", share=moved) if moved < 1 else
                      msg("{times}x their size", times=_times(moved))),
            "rate": f"{rate:g}" if rate is not None else "?",
            "rows": f"{at_start:.3g}" if at_start is not None else "?"}


def _rows_drive_it(e) -> tuple | None:
    """(finding, fix) when the batch's rows already give a loss past the limit on the weights the run started from
    (these rows, not the training, make the loss high, whichever rule saw it); None when they do not."""
    at_start = e.get("rows_loss_at_start")
    if at_start is None or not math.isfinite(at_start) or at_start <= e["seen"]["limit"]:
        return None
    return (msg("At step {step} the loss is {recent:.3g}, {ratio}x its start ({start:.3g}), but the same rows already "
                "give {rows} on the weights training started from: these rows, not the training, make the loss high.",
                **_figures(e)),
            msg("Drop or fix the rows listed (a label far outside the task's range, or broken text), then rerun."))


def _rate_fix(e) -> RateFix:
    """The fix of weights that diverged: the checkpoint's usual rate, or a tenth of the rate when that was already at
    or below it."""
    suggested = e["suggested_rate"]
    return RateFix(suggested, N_("{code}  # the checkpoint's usual rate; or the sweep's: python -m diagnostics run "
                                 "--stages hparams") if suggested == e["usual_rate"] else
                   N_("{code}  # a tenth of the rate; or the sweep's: python -m diagnostics run --stages hparams"))


def _loss_rose(e, f) -> tuple:
    """(finding, fix) for a recent loss past the limit: the rows' fault, or the weights diverged."""
    return _rows_drive_it(e) or (msg(
        "By step {step} the loss rose to {recent:.3g}, {ratio}x its start ({start:.3g}), while the rows themselves "
        "give {rows} on the weights training started from: the weights diverged (their norm grew {growth}x and they "
        "moved {moved}), so the learning rate {rate} is too high for this model.", **_figures(e)), _rate_fix(e))


def _weights_grew(e, f) -> tuple:
    """(finding, fix) for weights that grew past their limit while the loss did not fall: the rows' fault, or the
    weights diverged."""
    return _rows_drive_it(e) or (msg(
        "By step {step} the weights' norm grew {growth}x (they moved {moved}) while the loss, {recent:.3g}, is no "
        "lower than at the start ({start:.3g}): the weights diverged and the model stopped learning, so the learning "
        "rate {rate} is too high for this model.", **_figures(e)), _rate_fix(e))


class Evidence(TypedDict, total=False):
    """What model.divergence puts in its evidence (the charts, tables and JSON report read it)."""

    losses: list[float]  # each step's own loss
    weight_norms: list[float]  # before the first step, then after each
    steps: int
    chance_loss: float | None
    learning_rate: float | None
    usual_rate: float
    suggested_rate: float
    weights_moved: float | None  # |W - W0| / |W0| over the trainable weights
    seen: dict[str, Any] | None  # rule, start, recent, limit, growth, loss_rise, chance_rise
    loss_rise: float | None  # the median loss of the last steps over the first step's (None: too few steps)
    chance_rise: float | None  # and over ln K (None also for regression)
    growth: float | None  # the weights' global norm now over its start
    rows: Rows  # position, index, label, label_name, decoded, loss_at_start, loss_now
    rows_loss_at_start: float | None
    rows_loss_now: float | None


CHECK = Check("model.divergence",
              N_("during model.fit (DiagnoseCallback): the loss and the weights' size stay bounded"),
              unit=FIT, conditions=(
    # Judged in this order on the median loss of the last `window` steps ("recent"); either is a divergence.
    Condition("rise_factor", 4.0, "diverging when the recent loss is above this multiple of the first step's",
              All((Above("loss_rise"), Above("chance_rise", of="chance_multiple", unmeasured=True))), status="fail",
              says=_loss_rose),
    Condition("chance_multiple", 1.5, "and, for a classifier, above this multiple of ln K (its loss when it guesses)"),
    Condition("window", 5, "the steps whose median loss is judged, so that one noisy step never counts"),
    Condition("weight_growth", 5.0, "diverging when the weights' global norm grows past this multiple of its start",
              All((Above("growth"), Above("loss_rise", or_equal=True, of="stalled_share"))), status="fail",
              says=_weights_grew),
    Condition("stalled_share", 0.9, "while the recent loss is at least this share of the first step's")),
              otherwise_says=lambda e, f: msg(
                  "Over {steps} steps the loss and the weights' size stayed bounded: no sign of divergence.",
                  steps=e["steps"]),
              evidence=Evidence)
