"""hparams.schedule: the create_optimizer schedule: warmup and decay."""

from __future__ import annotations

from typing import Any, TypedDict

import numpy as np

from diagnostics.config.run import RunConfig
from diagnostics.core.check import Check, Condition
from diagnostics.core.context import RunContext
from diagnostics.core.result import CheckResult, judge
from diagnostics.core.rules import All, Holds, ShareAbove
from diagnostics.i18n import N_, Text, msg
from diagnostics.keras.training import effective_rate


def schedule_figures(config: RunConfig, *, points: int = 200) -> dict[str, Any]:
    """The learning rate at each planned training step: create_optimizer's warmup and decay, or the constant rate."""
    planned = config.schedule
    steps = np.unique(np.linspace(0, planned.train_steps, min(points, planned.train_steps + 1)).astype(int)).tolist()
    if config.optimizer == "create_optimizer":
        _, schedule = planned.build(config.learning_rate)
        rates = [float(schedule(step)) for step in steps]
    else:
        rates = [effective_rate(config)] * len(steps)
    return {"optimizer": config.optimizer, "steps": steps, "learning_rates": rates,
            "train_steps": planned.train_steps, "warmup_steps": planned.warmup_steps}


def check_schedule(figures: dict[str, Any]) -> CheckResult:
    """The planned schedule; warn when warmup takes most of training."""
    return judge(CHECK, {**figures, "warms_up": figures["optimizer"] == "create_optimizer"})


def _planned(figures: dict[str, Any]) -> Text:
    """What every verdict of hparams.schedule says first: the planned schedule, warmup and decay or a constant rate."""
    peak = max(figures["learning_rates"])
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


CHECK = Check("hparams.schedule", N_("the create_optimizer schedule: warmup and decay"),
              unit="setup", measure=measure, conditions=(
    Condition("warn_warmup_share", 0.5, "warn when create_optimizer's warmup takes more than this share of the steps",
              All((Holds("warms_up"), ShareAbove("warmup_steps", "train_steps"))), says=lambda e, f: (
                  msg("{summary} Warmup is {share:.0%} of training, so most steps run below the peak rate.",
                      summary=_planned(e), share=e["warmup_steps"] / e["train_steps"]),
                  f"create_optimizer(..., num_warmup_steps={max(1, e['train_steps'] // 10)})")),
    ), otherwise_says=lambda e, f: _planned(e), evidence=Evidence)
