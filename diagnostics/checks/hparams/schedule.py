"""hparams.schedule: the create_optimizer schedule: warmup and decay."""

from __future__ import annotations

from typing import Any, TypedDict

from diagnostics.config.run import RunConfig
from diagnostics.core.check import Check, Condition
from diagnostics.core.context import RunContext
from diagnostics.core.result import CheckResult, judge
from diagnostics.core.rules import All, Holds, ShareAbove
from diagnostics.i18n import N_, Text, msg
from diagnostics.keras.internals import optimizer_rate
from diagnostics.keras.optimizers import is_schedule, schedule_rates, schedule_steps
from diagnostics.keras.training import effective_rate


def schedule_figures(config: RunConfig, *, points: int = 200) -> dict[str, Any]:
    """The learning rate at each planned training step: create_optimizer's warmup and decay, the user's own schedule
    called at each step, or the constant rate."""
    planned = config.schedule
    steps = schedule_steps(planned.train_steps, points)
    own = _own_schedule(config)
    if config.optimizer == "create_optimizer":
        _, schedule = planned.build(config.learning_rate)
        rates = [float(schedule(step)) for step in steps]
    elif own is not None:
        rates = schedule_rates(own, steps)
    else:
        rates = [effective_rate(config)] * len(steps)
    figures = {"optimizer": config.optimizer, "steps": steps, "learning_rates": rates,
               "train_steps": planned.train_steps, "warmup_steps": planned.warmup_steps}
    return {**figures, "schedule": type(own).__name__} if own is not None and is_schedule(own) else figures


def _own_schedule(config: RunConfig):
    """The learning-rate schedule of the user's own optimizer, when it has one create_optimizer did not make (a
    class of the script's, a Keras schedule); None otherwise."""
    if config.user_optimizer is None or config.optimizer == "create_optimizer":
        return None
    rate = optimizer_rate(getattr(config.user_optimizer, "inner_optimizer", config.user_optimizer))
    return rate if is_schedule(rate) else None


def check_schedule(figures: dict[str, Any]) -> CheckResult:
    """The planned schedule; warn when warmup takes most of training."""
    return judge(CHECK, {**figures, "warms_up": figures["optimizer"] == "create_optimizer"})


def _planned(figures: dict[str, Any]) -> Text:
    """What every verdict of hparams.schedule says first: the planned schedule, warmup and decay or a constant rate."""
    peak = max(figures["learning_rates"])
    if figures.get("schedule"):
        rates = figures["learning_rates"]
        return msg("The optimizer's own {schedule} schedule, read at the {steps} planned steps: {first:.1e} at step 0, "
                   "highest {peak:.1e} at step {at}, {last:.1e} at the last step.", schedule=figures["schedule"],
                   steps=figures["train_steps"], first=rates[0], peak=peak, at=figures["steps"][rates.index(peak)],
                   last=rates[-1])
    if figures["warms_up"]:
        return msg("create_optimizer warms up over {warmup} steps to {peak:.1e}, then decays linearly to {last:.1e} at "
                   "step {steps}.", warmup=figures["warmup_steps"], peak=peak, last=figures["learning_rates"][-1],
                   steps=figures["train_steps"])
    return msg("A constant rate of {rate:g} for all {steps} planned steps (no warmup or decay; create_optimizer adds "
               "both).", rate=peak, steps=figures["train_steps"])


def measure(run: RunContext) -> CheckResult:
    return check_schedule(schedule_figures(run.config))


class Evidence(TypedDict, total=False):
    """What hparams.schedule puts in its evidence (the charts, tables and JSON report read it)."""

    learning_rates: list[float]
    optimizer: str
    warms_up: bool  # create_optimizer's schedule (a constant rate has no warmup)
    steps: list[int]
    train_steps: int
    warmup_steps: int
    schedule: str  # the class of a schedule of the user's own, read by calling it at the planned steps


CHECK = Check("hparams.schedule", N_("the create_optimizer schedule: warmup and decay"),
              unit="setup", measure=measure, conditions=(
    Condition("warn_warmup_share", 0.5, "warn when create_optimizer's warmup takes more than this share of the steps",
              All((Holds("warms_up"), ShareAbove("warmup_steps", "train_steps"))), says=lambda e, f: (
                  msg("{summary} Warmup is {share:.0%} of training, so most steps run below the peak rate.",
                      summary=_planned(e), share=e["warmup_steps"] / e["train_steps"]),
                  f"create_optimizer(..., num_warmup_steps={max(1, e['train_steps'] // 10)})")),
    ), otherwise_says=lambda e, f: _planned(e), evidence=Evidence)
