"""model.weights_after_step: weights stay finite and move after one step."""

from __future__ import annotations

from typing import Any, TypedDict

from diagnostics.checks.model.common import AFTER_FORWARD
from diagnostics.config.run import RunConfig
from diagnostics.core.check import Cause, Check, Condition, Explains
from diagnostics.core.context import RunContext
from diagnostics.core.result import CheckResult, judge
from diagnostics.core.rules import Above, All, AtMost, Holds
from diagnostics.i18n import N_, Text, msg
from diagnostics.keras.internals import variable_path
from diagnostics.keras.training import StepRecord, effective_rate


def check_weights_after_step(record: StepRecord, broken: list[str], learning_rate_text: str,
                             moved: dict[str, Any] | None = None, *, stale: tuple[int, int, int] | None = None
                             ) -> CheckResult:
    """After one optimizer step on a copy (one that ran: the runner's "stepped" need), every weight is still finite
    and the step moved weights; and the traced fit's own train step trains what the layers mark trainable.

    Args:
        moved: `training.moved_variables` of the step (None when it was not measured).
        stale: `RunConfig.stale_train_step`: the fit reuses a train step built before `trainable` changed.
    """
    evidence = {"non_finite": broken, "loss": record.loss, "rate_at_step": record.rate,
                "stale_train_step": stale is not None,
                **({"train_step_built_at_fit": stale[0], "train_step_trains": stale[1], "marked_trainable": stale[2]}
                   if stale else {}),
                **({"moved": moved["moved"], "unmoved": [variable_path(name) for name in moved["unmoved"]][:50],
                    "max_change": moved["max_change"]} if moved else {})}
    if moved:
        evidence["variables"] = moved["variables"]
    return judge(CHECK, evidence, rate=learning_rate_text)


def learning_rate_text(config: RunConfig) -> Text:
    given = 'optimizer "adam"' if config.optimizer == "adam" else config.optimizer_shown
    return msg("{optimizer}, learning rate {rate:g}", optimizer=given, rate=effective_rate(config))


def measure(run: RunContext) -> CheckResult:
    step = run.batch_step
    return check_weights_after_step(step.record, step.broken, learning_rate_text(run.config), step.moved,
                                    stale=run.config.stale_train_step)


class Evidence(TypedDict, total=False):
    """What model.weights_after_step puts in its evidence (the charts, tables and JSON report read it)."""

    loss: float
    non_finite: list[str]
    rate_at_step: float | None
    moved: int
    unmoved: list[str]
    max_change: float
    variables: int  # trainable variables (when the moves were measured)
    stale_train_step: bool  # a traced fit reuses a train step built before trainable changed
    train_step_built_at_fit: int  # that step's fit, the weights it trains, the weights marked trainable now
    train_step_trains: int
    marked_trainable: int


CHECK = Check("model.weights_after_step", N_("weights stay finite and move after one step"), trains=True,
              requires=AFTER_FORWARD + ("stepped",), measure=measure, conditions=(
    # Judged in this order.
    Condition("stale_train_step", None, "fail when a traced fit reuses the train step Keras built at an earlier fit, "
                                        "before trainable changed (no compile since): the weights unfrozen since stay "
                                        "as they are", Holds("stale_train_step"), status="fail", says=lambda e, f: (
                  msg("This fit reuses the train step Keras built at fit {fit}, which updates {trained:,} weights, "
                      "while the layers now mark {marked:,} trainable: trainable was changed after that fit without "
                      "compiling again, so the weights it unfroze stay as they are.",
                      fit=e["train_step_built_at_fit"], trained=e["train_step_trains"], marked=e["marked_trainable"]),
                  "model.compile(optimizer=..., loss=...)  # again after changing trainable, before this fit")),
    Condition("non_finite_weights", None, "fail when a weight holds NaN or Inf after the step", Holds("non_finite"),
              status="fail", says=lambda e, f: (
                  msg("After one optimizer step ({rate}), {count} weights hold NaN or Inf, first: {first}.",
                      rate=f.rate, count=len(e["non_finite"]), first=", ".join(e["non_finite"][:3])),
                  msg("Lower the learning rate (hparams.lr_sweep measures which rates work) and fix non-finite losses "
                      "(model.nan_rows)."))),
    Condition("warmup_step", 0.0, "pass a step whose scheduled rate is at most this (warmup's first step moves nothing "
                                  "by design)", AtMost("rate_at_step"), status="pass", says=lambda e, f: (
                  msg("After one optimizer step ({rate}) on a copy, every weight is finite; the schedule's rate at "
                      "step 0 is 0 (warmup starts there), so this step moves nothing by design.", rate=f.rate), None)),
    Condition("min_moved", 0, "fail when the step moves no more than this many of the trainable variables",
              All((Above("variables"), AtMost("moved"))), status="fail", says=lambda e, f: (
                  msg("One optimizer step ({rate}) on a copy moved none of the {count} trainable variables (the "
                      "largest change is {change:.2g}): training leaves the model as it is.", rate=f.rate,
                      count=e["variables"], change=e["max_change"]),
                  msg("Make the gradients flow first (see model.gradients).")))),
              # Whole sentences: a clause added to another read "every weight is finite and moved 40 of 40
              # trainable variables", and translated as two sentences run together.
              otherwise_says=lambda e, f: msg(
                  "After one optimizer step ({rate}) on a copy, every weight is finite and {moved} of the {count} "
                  "trainable variables changed.", rate=f.rate, moved=e["moved"], count=e["variables"])
              if "moved" in e else msg("After one optimizer step ({rate}) on a copy, every weight is finite.",
                                       rate=f.rate),
              evidence=Evidence)

# The causes this check owns, each with its precedence among every check's causes (`Cause.precedence`).
CAUSES = (
    # A fit that reuses the train step of an earlier fit trains what that step trained, with that step's optimizer:
    # what the rate rules read into the rate for the weights unfrozen since is for after the compile that fixes it.
    Cause("stale_train_step", "model.weights_after_step", ("stale_train_step",),
          N_("trainable changed without compiling again"),
          (Explains("hparams.optimizer", ("warn_learning_rate", "string_adam")), Explains("hparams.lr_sweep"),
           Explains("hparams.lr_range_test"), Explains("overfit.one_batch")), precedence=80),
)
