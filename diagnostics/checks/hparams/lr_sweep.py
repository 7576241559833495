"""hparams.lr_sweep: a learning-rate sweep scored on held-out rows and weight drift."""

from __future__ import annotations

import math
from typing import Any, TypedDict

import numpy as np

from diagnostics.checks.common import FAIL_DRIFT, WARN_DRIFT
from diagnostics.config.run import usual_rate
from diagnostics.config.training import SweepSettings
from diagnostics.core import progress
from diagnostics.core.check import Cause, Check, Condition, Explains
from diagnostics.core.fixes import RateFix
from diagnostics.core.result import CheckResult, judge
from diagnostics.core.rules import Above, All, Holds, Not
from diagnostics.i18n import N_, Text, joined, msg
from diagnostics.keras.scoring import held_out_figures
from diagnostics.keras.training import Trainer, weight_drift
from diagnostics.core.curves import smoothed


def lr_sweep(trainer: Trainer, settings: SweepSettings, held, *, configured_rate: float | None = None,
             regression: bool = False) -> dict[str, Any]:
    """The same batches from the same initial weights, K steps at each rate of a log grid (and at the
    configured rate), each scored on held-out rows and by how far it moved the pretrained weights.

    A short run from the same start favours high rates (the loss on the batches trained on falls fastest at
    the highest rate that does not blow up), so a rate is judged on rows it did not train on, and by the
    drift of the pretrained kernels per step, which predicts what a long run at that rate does to them.

    Args:
        held: a batch of rows the sweep never trains on.
        configured_rate: added to the grid, so the rate under test is measured, not interpolated.

    Returns:
        learning_rates, steps, losses (one list per rate, None once non-finite), smoothed (the same,
        smoothed), held_out_start and held_out (loss, accuracy, commonest_share per rate), and
        drift_per_step (relative change of the pretrained kernels per step, per rate).
    """
    rates = sorted(set(settings.grid() + ([configured_rate] if configured_rate else [])))
    trainer.reset(rates[0])
    start = held_out_figures(trainer.model, held, regression, trainer.forward)
    curves, scores, drifts = [], [], []
    for index, rate in enumerate(rates):
        progress.doing(msg("Training at learning rate {rate:.0e} ({number} of {count})", rate=rate,
                           number=index + 1, count=len(rates)))
        trainer.reset(rate)
        curve = trainer.run(settings.steps)
        # Once a step is non-finite every later one is too; the running mean hides that, so say it.
        first_bad = next((i for i, loss in enumerate(curve) if not math.isfinite(loss)), len(curve))
        curves.append(curve[:first_bad] + [math.nan] * (len(curve) - first_bad))
        scores.append(held_out_figures(trainer.model, held, regression, trainer.forward))
        drifts.append(weight_drift(trainer.source, trainer.model) / settings.steps)
    trainer.reset(rates[0])
    return {
        "learning_rates": rates,
        "configured_rate": configured_rate,
        "steps": list(range(1, settings.steps + 1)),
        "losses": [[_finite_or_none(loss) for loss in curve] for curve in curves],
        "smoothed": [[_finite_or_none(loss) for loss in smoothed(curve, SWEEP_SMOOTHING)] for curve in curves],
        "held_out_rows": start["rows"],
        "held_out_start": start,
        "held_out": scores,
        "drift_per_step": [d if math.isfinite(d) else None for d in drifts],
    }


# A sweep curve has a few steps, so its smoothing forgets faster than a range test's (beta 0.98 over ~100 steps).
SWEEP_SMOOTHING = 0.6


def _finite_or_none(value: float) -> float | None:
    return float(value) if value is not None and math.isfinite(value) else None


def sweep_verdicts(figures: dict[str, Any], *, pretrained: bool, head_only: bool = False) -> dict[str, Any]:
    """Why each rate is bad (empty when it is not), the recommended rate and the highest rate pretrained
    weights tolerate.

    A rate is bad when its loss turned non-finite or blew up (smoothed, beyond `blowup_factor` times where it
    started), when its held-out loss rose more than `held_out_rise` above the untrained model's, or (on a
    pretrained checkpoint) when each step moved the pretrained kernels by more than `warn_drift` of their
    size. The recommended rate is the good rate with the lowest held-out loss; when no good rate lowered the
    held-out loss by `min_held_out_gain` of its start, the one with the lowest smoothed training loss.
    """
    blowup_factor = CHECK.value("blowup_factor")
    held_out_rise = CHECK.value("held_out_rise")
    warn_drift = CHECK.value("warn_drift")
    min_held_out_gain = CHECK.value("min_held_out_gain")
    start = figures["held_out_start"]["loss"]
    reasons, broke, rose = [], [], []
    for curve, score, drift in zip(figures["smoothed"], figures["held_out"], figures["drift_per_step"], strict=True):
        why = []
        broke.append(any(value is None for value in curve) or score["loss"] is None
                     or curve[-1] > blowup_factor * curve[0])
        if any(value is None for value in curve) or score["loss"] is None:
            why.append(msg("loss turned NaN"))
        elif curve[-1] > blowup_factor * curve[0]:
            why.append(msg("loss blew up ({first:.3f} to {last:.3f})", first=curve[0], last=curve[-1]))
        elif start is not None and score["loss"] > start * (1 + held_out_rise):
            why.append(msg("held-out loss rose ({first:.3f} to {last:.3f})", first=start, last=score["loss"]))
        if pretrained and drift is not None and drift > warn_drift:
            why.append(msg("moves pretrained weights {drift:.1e} of their size a step", drift=drift))
        rose.append(len(why) == 1 and not broke[-1] and not (pretrained and drift is not None and drift > warn_drift))
        reasons.append(why)
    # A held-out rise at a rate below one that passes every rule is not the rate being too high (a higher rate would
    # be worse): on so few steps and rows it is noise, and it flags nothing.
    for index in range(len(reasons)):
        if rose[index] and any(not why for why in reasons[index + 1:]):
            reasons[index] = []
    # A rate above one whose loss broke is no safer for having got through these few steps: it is flagged with it.
    rates = figures["learning_rates"]
    for index in range(len(reasons)):
        below = next((rates[lower] for lower in range(index) if broke[lower]), None)
        if below is not None and not reasons[index]:
            reasons[index] = [msg("above {rate:.0e}, whose loss blew up or turned NaN", rate=below)]
    good = [
        (score["loss"], curve[-1], rate, curve[0])
        for rate, score, curve, why in zip(
            figures["learning_rates"], figures["held_out"], figures["smoothed"], reasons, strict=True
        )
        if not why
    ]
    # After a few steps the held-out loss may not have moved at all (random weights learn nothing general that
    # soon); then its differences are noise, and the loss on the batches trained on ranks the good rates instead,
    # among those it fell for. When it fell for none either, the rates cannot be told apart in these steps: the good
    # rate nearest the checkpoint's usual one (a rate real fine-tuning calls good) stands for them.
    separates = bool(good) and start is not None and start - min(good)[0] >= min_held_out_gain * start
    falling = [entry for entry in good if entry[3] - entry[1] >= min_held_out_gain * entry[3]]
    usual = usual_rate(pretrained, head_only)
    if separates:
        ranked, ranked_by = sorted(good), "held-out loss"
        # A rate above the one the held-out loss ranks first whose predictions collapsed to one class on every held-out
        # row, where that one's did not, lost what it had learned (the run ends at chance, every row one class: what
        # real fine-tuning at a rate too high does), though its loss neither blew up nor rose past the rule.
        best_rate = ranked[0][2]
        best_score = figures["held_out"][figures["learning_rates"].index(best_rate)]
        for index, (rate, score) in enumerate(zip(figures["learning_rates"], figures["held_out"], strict=True)):
            if rate > best_rate and not reasons[index] and _collapsed(score, best_score):
                reasons[index] = [msg("every held-out row predicted as one class ({accuracy:.0%} right, against "
                                      "{best:.0%} at {rate:.0e})", accuracy=score["accuracy"],
                                      best=best_score["accuracy"], rate=best_rate)]
        good = [entry for entry in good if not reasons[figures["learning_rates"].index(entry[2])]]
        ranked = sorted(good)
    elif falling:
        ranked, ranked_by = sorted(falling, key=lambda entry: entry[1]), "training loss"
    else:
        ranked = sorted(good, key=lambda entry: abs(math.log(entry[2] / usual)))
        ranked_by = "usual rate"
    ratios = [
        drift / rate
        for rate, drift, broken in zip(figures["learning_rates"], figures["drift_per_step"], broke, strict=True)
        if drift and not broken
    ]
    return {
        "reasons": reasons,
        "diverged": [bool(why) for why in reasons],
        "broke": broke,
        "best_rate": ranked[0][2] if ranked else None,
        "ranked_by": ranked_by,
        "usual_rate": usual,
        "max_safe_rate": float(warn_drift / np.median(ratios)) if pretrained and ratios else None,
        "drift_limit": warn_drift,
    }


def _collapsed(score: dict, best: dict) -> bool:
    """Every held-out row predicted as one class, and fewer right than at the recommended rate, whose predictions
    did not collapse."""
    share, accuracy = score.get("commonest_share"), score.get("accuracy")
    if share is None or accuracy is None or best.get("commonest_share") is None or best.get("accuracy") is None:
        return False
    return share >= 1.0 and best["commonest_share"] < 1.0 and accuracy < best["accuracy"]


def check_lr_sweep(
    figures: dict[str, Any], configured_rate: float, *, pretrained: bool = True, head_only: bool = False
) -> CheckResult:
    """Judge the configured rate by what it did in the sweep; name the recommended rate as the fix.

    Fails when the configured rate diverged or moves pretrained weights by more than `fail_drift` a step;
    warns when it is merely too high, or more than `warn_decades` powers of ten below the recommended rate.
    """
    verdicts = sweep_verdicts(figures, pretrained=pretrained, head_only=head_only)
    rates, best = figures["learning_rates"], verdicts["best_rate"]
    index = min(range(len(rates)), key=lambda i: abs(math.log(rates[i] / configured_rate)))  # the configured rate's
    why, drift = verdicts["reasons"][index], figures["drift_per_step"][index]
    figures = {**figures, **verdicts, "configured_rate": configured_rate, "pretrained": pretrained,
               "no_good_rate": best is None, "configured_too_high": bool(why),
               "configured_broke": verdicts["broke"][index], "configured_drift": drift,
               "decades_below": math.log10(best / configured_rate) if best else None}
    # This run's verdict on a rate below the best, which the overfit test reads (a slow curve at a rate not called too
    # low is the epochs' shortfall): by the run's own warn_decades.
    figures["configured_too_low"] = figures["decades_below"] is not None \
        and figures["decades_below"] > CHECK.value("warn_decades")
    return judge(CHECK, figures, why=why)


def _summary(e) -> Text:
    """What the sweep found, whatever it says of the configured rate: the recommended rate, on what it rests, and the
    rates flagged."""
    rates, best, start = e["learning_rates"], e["best_rate"], e["held_out_start"]
    flagged = [f"{rate:.0e}" for rate, bad in zip(rates, e["diverged"], strict=True) if bad]
    if e["ranked_by"] == "usual rate":
        return msg("After {steps} steps from the same weights no rate lowered the held-out or the training loss by "
                   "1% of its start, too little to rank them: the recommendation is {best:.0e}, the rate nearest "
                   "this checkpoint's usual {usual:g} {among}; flagged: {flagged}.", steps=len(e["steps"]),
                   best=best, usual=e["usual_rate"], among=_safe(e, one=True),
                   flagged=", ".join(flagged) or msg("none"))
    kept = [
        (rate, score["loss"])
        for rate, score, bad in zip(rates, e["held_out"], e["diverged"], strict=True)
        if not bad and score.get("loss") is not None
    ]
    # What the ranking rule reads: how far the best of them lowered the held-out loss (a loss that rose by 3% once
    # read as "moved at most 3%... too little", against a rule of a 1% fall).
    lowest = min((loss for _, loss in kept), default=start.get("loss"))
    basis = msg("the lowest held-out loss ({best:.3f}, from {start:.3f} untrained)",
                best=e["held_out"][rates.index(best)]["loss"], start=start["loss"]) \
        if e["ranked_by"] == "held-out loss" else \
        msg("the lowest training loss; none of the rates not flagged ({rates}) lowered the held-out loss by "
            "{gain:.0%} of its start ({start:.3f}; its lowest was {lowest:.3f}), too little to rank them, so this "
            "rests on the rows trained on", rates=", ".join(f"{rate:.0e}" for rate, _ in kept),
            gain=CHECK.value("min_held_out_gain"), lowest=lowest, start=start["loss"])
    return msg("After {steps} steps from the same weights, {best:.0e} gives {basis}, among rates {among}; flagged: "
               "{flagged}.", steps=len(e["steps"]), best=best, basis=basis, among=_safe(e),
               flagged=", ".join(flagged) or msg("none"))


def _safe(e, one: bool = False) -> Text:
    """What the rates not flagged have in common: on random weights there are no pretrained weights to overwrite."""
    if e["pretrained"]:
        return msg("that neither diverges nor overwrites pretrained weights") if one else \
            msg("that neither diverge nor overwrite pretrained weights")
    return msg("that does not diverge") if one else msg("that do not diverge")


def _thin(e) -> Text | str:
    """The caveat of a sweep scored on few held-out rows ("" on enough)."""
    return (msg(" The held-out rows are few ({rows}), so held-out differences are rough.", rows=e["held_out_rows"])
            if e["held_out_rows"] < CHECK.value("thin_held_out_rows") else "")


def _too_high(e, f) -> tuple:
    """(finding, fix) for a configured rate the sweep flagged (`f.why`: its reasons), whatever the rule that found it
    (its loss broke, its drift, or a milder reason)."""
    drift = e["configured_drift"]
    consequence = (msg(" At that drift a few hundred steps overwrite what pretraining learned: real fine-tuning at "
                       "such rates ends at or near chance.")
                   if e["pretrained"] and drift and drift > e["drift_limit"] else "")
    return (msg("The configured rate {rate:g} is too high: {why}.{consequence} {summary}{thin}",
                rate=e["configured_rate"], why=joined(f.why, "; "), consequence=consequence, summary=_summary(e),
                thin=_thin(e)),
            RateFix(e["best_rate"]))


def _not_flagged(e, f) -> Text:
    """What the sweep says of a configured rate it neither flagged nor found too low."""
    drift = e["configured_drift"]
    if not e["pretrained"]:
        return msg("The configured rate {rate:g} does not diverge. {summary}{thin}", rate=e["configured_rate"],
                   summary=_summary(e), thin=_thin(e))
    return msg("The configured rate {rate:g} neither diverges nor overwrites pretrained weights{drift}. "
               "{summary}{thin}", rate=e["configured_rate"],
               drift=msg(" ({drift:.1e} of their size a step)", drift=drift) if e["pretrained"] and drift else "",
               summary=_summary(e), thin=_thin(e))


class HeldOut(TypedDict):
    loss: float | None
    accuracy: float | None
    commonest_share: float | None
    rows: int


class Evidence(TypedDict, total=False):
    """What hparams.lr_sweep puts in its evidence (the charts, tables and JSON report read it)."""

    learning_rates: list[float]
    steps: list[int]
    losses: list[list[float | None]]
    smoothed: list[list[float | None]]
    held_out_start: HeldOut
    held_out: list[HeldOut]
    held_out_rows: int
    drift_per_step: list[float]
    best_rate: float | None
    configured_rate: float | None
    max_safe_rate: float | None
    drift_limit: float  # the warn_drift this run judged by (a run's own threshold, else the condition's value)
    diverged: list[float]
    pretrained: bool
    # "held-out loss", "training loss", or "usual rate" (no rate moved either loss: the good one nearest it)
    ranked_by: str
    usual_rate: float  # the checkpoint's usual rate (config.usual_rate)
    reasons: dict[str, str]
    broke: list[bool]  # each rate's loss turned NaN or blew up
    # The configured rate's, read by the registry's rules (the runner reads configured_too_high too):
    no_good_rate: bool
    configured_broke: bool
    configured_drift: float | None
    configured_too_high: bool
    decades_below: float | None  # log10(recommended / configured)
    configured_too_low: bool  # more than warn_decades below the recommended rate (this run's threshold)


CHECK = Check("hparams.lr_sweep", N_("a learning-rate sweep scored on held-out rows and weight drift"),
              trains=True, unit="training", conditions=(
    Condition("blowup_factor", 2.0, "a rate blew up when its smoothed loss ends above this multiple of its start"),
    Condition("held_out_rise", 0.1, "a rate is bad when its held-out loss rises this share above the untrained one"),
    Condition("warn_drift", WARN_DRIFT, "a rate is bad when a step moves pretrained kernels by more than this"),
    Condition("min_held_out_gain", 0.01, "rank good rates by training loss when none lowers held-out loss by this"),
    # The configured rate's verdict, judged in this order (the sweep rate nearest it stands for it):
    Condition("no_good_rate", None, "fail when every rate is bad (the problem is not the rate)", Holds("no_good_rate"),
              status="fail", says=lambda e, f: (
                  msg("Every rate from {low:.0e} to {high:.0e} diverged, worsened the held-out loss or overwrote the "
                      "pretrained weights: the problem is not the rate; look at model.nan_rows and hparams.loss.",
                      low=e["learning_rates"][0], high=e["learning_rates"][-1]),
                  msg("Fix the failing Data and Model checks first, then sweep again."))),
    Condition("broke", None, "fail when the configured rate's loss turned NaN or blew up", Holds("configured_broke"),
              status="fail", says=_too_high),
    Condition("fail_drift", FAIL_DRIFT, "fail when a step at the configured rate moves pretrained kernels beyond this",
              All((Holds("pretrained"), Above("configured_drift"))), status="fail", says=_too_high),
    Condition("too_high", None, "warn when the configured rate is bad for a milder reason (held-out loss "
                                "rose, or drift above warn_drift)",
                                Holds("configured_too_high"), says=_too_high),
    Condition("warn_decades", 1.0, "warn when the configured rate is more than this many powers of ten below the "
                                   "recommended", Above("decades_below"), says=lambda e, f: (
                  msg("The configured rate {rate:g} is more than {decades:g} power of ten below the recommended "
                      "{best:.0e}, so training will crawl. {summary}{thin}", rate=e["configured_rate"],
                      decades=CHECK.value("warn_decades"), best=e["best_rate"], summary=_summary(e), thin=_thin(e)),
                  RateFix(e["best_rate"]))),
    Condition("thin_held_out_rows", 16, "say the evidence is thin with fewer held-out rows than this"),
    ), otherwise_says=_not_flagged, evidence=Evidence)

# The causes this check owns, each with its precedence among every check's causes (`Cause.precedence`).
CAUSES = (
    Cause(
        "rate",
        "hparams.lr_sweep",
        ("broke", "fail_drift", "too_high", "warn_decades"),
        N_("the learning rate"),
        (
            Explains("hparams.optimizer", ("warn_learning_rate",), measured=True),
            Explains("hparams.optimizer", ("string_adam",)),
            Explains("model.weights_after_step", ("non_finite_weights",)),
            Explains("model.nan_origin", ("non_finite_layer",), Holds("after_step")),
            Explains("overfit.one_batch", (), All((Holds("at_configured_rate"), Not(Holds("rate_swept_fine"))))),
        ),
        precedence=90,
    ),
)
