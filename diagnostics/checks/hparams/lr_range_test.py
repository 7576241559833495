"""hparams.lr_range_test: a range test on the smoothed loss, with its suggested rates."""

from __future__ import annotations

import math
from typing import Any, Callable, TypedDict

import numpy as np

from diagnostics.checks.hparams.lr_sweep import _finite_or_none
from diagnostics.config.training import SweepSettings
from diagnostics.core import progress
from diagnostics.core.check import Check, Condition
from diagnostics.core.result import CheckResult, judge
from diagnostics.core.rules import Above, AtMost
from diagnostics.i18n import N_, Text, joined, msg
from diagnostics.keras.training import Trainer
from diagnostics.core.curves import round_down_rate, smoothed


RANGE_SMOOTHING = 0.98


def lr_range_test(trainer: Trainer, settings: SweepSettings, *,
                  stop_factor: float = 4.0) -> dict[str, Any]:
    """One run with the rate rising exponentially each step (fastai's lr_find); weights restored afterwards.

    Stops once the smoothed loss (exponential moving average with bias correction, as Lightning's finder)
    exceeds `stop_factor` times its lowest value, or a loss turns non-finite: one noisy batch never ends it.
    """
    rates = np.geomspace(settings.range_start, settings.range_end, settings.range_steps).tolist()
    trainer.reset(rates[0])
    tried, losses = [], []
    chunk = 10  # steps run back to back between checks for a blow-up
    try:
        for start in range(0, len(rates), chunk):
            progress.doing(msg("Range test: learning rate {rate:.1e}", rate=rates[start]))
            block = rates[start:start + chunk]
            tried += block
            losses += trainer.run(len(block), block)
            stop = _range_stop(losses, stop_factor)
            if stop is not None:
                tried, losses = tried[:stop + 1], losses[:stop + 1]
                break
    finally:
        trainer.reset(settings.range_start)
        progress.plan(-(len(rates) - len(tried)))  # the steps a stop spared are no longer to come
    return {"learning_rates": tried, "losses": [_finite_or_none(v) for v in losses],
            "smoothed": [_finite_or_none(v) for v in smoothed(losses, RANGE_SMOOTHING)]}


def _range_stop(losses: list[float], stop_factor: float) -> int | None:
    """The index of the first step whose loss is non-finite or whose smoothed loss blew up, if any."""
    lowest = math.inf
    for index, value in enumerate(smoothed(losses, RANGE_SMOOTHING)):
        if not math.isfinite(losses[index]) or not math.isfinite(value):
            return index
        if index > 0 and value > stop_factor * lowest:
            return index
        lowest = min(lowest, value)
    return None


def _finite(lrs: list[float], losses: list[float | None]) -> tuple[np.ndarray, np.ndarray]:
    pairs = [(lr, loss) for lr, loss in zip(lrs, losses, strict=True) if loss is not None and math.isfinite(loss)]
    return np.array([p[0] for p in pairs]), np.array([p[1] for p in pairs])


def suggest_steepest(lrs: np.ndarray, losses: np.ndarray) -> float:
    """The rate where the loss falls fastest against log(rate)."""
    slopes = np.gradient(losses, np.log(lrs))
    return float(lrs[int(np.argmin(slopes))])


def suggest_minimum(lrs: np.ndarray, losses: np.ndarray) -> float:
    """The rate of the lowest loss, divided by 10."""
    return float(lrs[int(np.argmin(losses))] / 10)


def suggest_valley(lrs: np.ndarray, losses: np.ndarray) -> float:
    """fastai's valley: the middle of the longest stretch where the loss keeps falling."""
    count = len(losses)
    lengths = [1] * count
    start = end = 0
    for i in range(1, count):
        for j in range(i):
            if losses[i] < losses[j] and lengths[i] < lengths[j] + 1:
                lengths[i] = lengths[j] + 1
        if lengths[end] < lengths[i]:
            end, start = i, i - lengths[i]
    sections = (end - start) / 3
    return float(lrs[min(count - 1, start + int(sections) + int(sections / 2))])


SUGGESTIONS: dict[str, Callable[[np.ndarray, np.ndarray], float]] = {
    "steepest": suggest_steepest,
    "minimum / 10": suggest_minimum,
    "valley": suggest_valley,
}
# The rules' names as a finding says them (the evidence keeps the keys above).
RULE_NAMES = {"steepest": N_("steepest"), "minimum / 10": N_("minimum / 10"), "valley": N_("valley")}


def check_lr_range_test(figures: dict[str, Any], *, max_safe_rate: float | None = None,
                        drift_limit: float | None = None, sweep_rate: float | None = None) -> CheckResult:
    """Suggest a rate from the smoothed range-test curve (first and last `trim` points left out), each rule side
    by side; say when the rules disagree. On a pretrained checkpoint the suggestion is capped at the highest
    rate its weights tolerate (`max_safe_rate`, from the sweep's drift), since the loss of a few steps cannot
    show what a long run at a high rate does to them. With the sweep's recommended rate (`sweep_rate`) the range test
    proposes no rate of its own: its curve's pick is evidence beside the sweep's, which is the one rate to use."""
    disagree_factor = CHECK.value("disagree_factor")
    min_points = CHECK.value("min_points")
    trim = CHECK.value("trim")
    curve = figures.get("smoothed") or figures["losses"]
    lrs, losses = _finite(figures["learning_rates"], curve)
    dropped = len(figures["losses"]) - len(_finite(figures["learning_rates"], figures["losses"])[1])
    lrs, losses = (lrs[trim:len(lrs) - trim], losses[trim:len(losses) - trim]) if len(lrs) > 2 * trim + min_points \
        else (lrs, losses)
    if len(losses) < min_points:
        return judge(CHECK, {**figures, "suggestions": {}, "dropped_points": dropped,
                             "finite_points": int(len(losses))})
    suggestions = {name: rule(lrs, losses) for name, rule in SUGGESTIONS.items()}
    spread = max(suggestions.values()) / min(suggestions.values())
    chosen = suggestions["valley"]
    capped = max_safe_rate is not None and chosen > max_safe_rate
    if capped:
        chosen = round_down_rate(max_safe_rate)
    evidence = {**figures, "suggestions": suggestions, "suggested": chosen, "dropped_points": dropped, "spread": spread,
                "finite_points": int(len(losses)), "max_safe_rate": max_safe_rate,
                "drift_limit": drift_limit,  # the sweep's, by which it measured max_safe_rate
                "uninformative": spread > disagree_factor}
    # A flat or noisy curve (a random-weight checkpoint's, a pretrained one's over few steps) says nothing about the
    # rate: no verdict (a skip with its reason, never a pass), nothing to fix, and the sweep's measured verdict stands.
    return judge(CHECK, evidence, capped=capped, sweep_rate=sweep_rate)


def _side_by_side(suggestions: dict[str, float]) -> Text:
    """Each rule's suggested rate, side by side."""
    return joined([msg("{rule} {rate:.1e}", rule=msg(RULE_NAMES[name]), rate=rate)
                   for name, rate in suggestions.items()])


def _suggested(e, f) -> Text:
    """What a curve whose rules agree points at (capped where the sweep measured the weights' limit), and, once the
    sweep has recommended a rate, that the sweep's is the one to use."""
    cap_text = (msg(" Capped at {chosen:.0e}: above {safe:.1e} each step moves the pretrained weights by more than "
                    "{limit:g} of their size (hparams.lr_sweep).", chosen=e["suggested"], safe=e["max_safe_rate"],
                    limit=e["drift_limit"])
                if f.capped else "")
    if f.sweep_rate:
        return msg("The curve points at {chosen:.1e} from {points} smoothed points (its rules agree within "
                   "{spread:.1f}x: {rules}).{cap} The rate to use is the sweep's {best:.0e}, measured on held-out rows "
                   "(hparams.lr_sweep).", chosen=e["suggested"], points=e["finite_points"], spread=e["spread"],
                   rules=_side_by_side(e["suggestions"]), cap=cap_text, best=f.sweep_rate)
    return msg("Suggested rate {chosen:.1e} from {points} smoothed points; the rules agree within {spread:.1f}x: "
               "{rules}.{cap}", chosen=e["suggested"], points=e["finite_points"], spread=e["spread"],
               rules=_side_by_side(e["suggestions"]), cap=cap_text)


class Evidence(TypedDict, total=False):
    """What hparams.lr_range_test puts in its evidence (the charts, tables and JSON report read it)."""

    learning_rates: list[float]
    losses: list[float | None]
    smoothed: list[float | None]
    suggested: float | None
    suggestions: dict[str, float]
    max_safe_rate: float | None
    drift_limit: float | None  # the sweep's warn_drift, by which max_safe_rate was measured
    finite_points: int
    dropped_points: int
    spread: float
    uninformative: bool  # the rules disagree: the curve proposes no rate ("suggested" is only the valley rule's)


CHECK = Check("hparams.lr_range_test", N_("a range test on the smoothed loss, with its suggested rates"),
              trains=True, unit="training", conditions=(
    # Judged in this order.
    Condition("min_points", 5, "warn when fewer finite points than this came before the loss blew up",
              AtMost("finite_points", below=True), says=lambda e, f: (
                  msg("Only {points} finite points before the loss blew up, too few to suggest a rate: start the "
                      "range test lower.", points=e["finite_points"]),
                  msg("Lower the range test's start rate."))),
    Condition("disagree_factor", 30.0, "skip the curve as uninformative (no verdict, no rate proposed) when its "
                                       "suggestion rules are more than this factor apart", Above("spread"),
              status="skip", says=lambda e, f: (
                  msg("Uninformative: the curve is too flat or noisy to suggest a rate (its rules disagree by "
                      "{spread:.0f}x on {points} smoothed points: {rules}; {dropped} non-finite points dropped). The "
                      "sweep's measured verdict on the rate stands (hparams.lr_sweep).", spread=e["spread"],
                      points=e["finite_points"], rules=_side_by_side(e["suggestions"]), dropped=e["dropped_points"]),
                  None)),
    Condition("trim", 1, "points left out at each end before any rule runs"),
    ), otherwise_says=_suggested, evidence=Evidence)
