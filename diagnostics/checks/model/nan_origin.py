"""model.nan_origin: the first layer whose output turns NaN."""

from __future__ import annotations

from typing import Any, TypedDict

import numpy as np

from diagnostics.checks.model.common import AFTER_FORWARD, finite_share, first_losses, stats
from diagnostics.core.check import Cause, Check, Condition, Explains
from diagnostics.core.context import RunContext
from diagnostics.core.result import CheckResult, judge
from diagnostics.core.rules import Holds
from diagnostics.i18n import N_, msg
from diagnostics.keras.measurement import Forward, non_finite_weights
from diagnostics.keras.training import split_batch


def first_non_finite(trace: list[tuple[str, np.ndarray]], input_ids) -> dict[str, Any] | None:
    """The first stage of the forward trace whose output holds NaN or Inf, with its input and output statistics."""
    previous_name, previous = "input_ids", np.asarray(input_ids)
    for name, output in trace:
        if finite_share(output) < 1.0:
            return {"layer": name, "input_from": previous_name, "input": stats(previous), "output": stats(output)}
        previous_name, previous = name, output
    return None


def check_nan_origin(fresh: Forward, stepped: Forward | None, input_ids, broken_fresh: list[str],
                     broken_stepped: list[str], any_nan_loss: bool) -> CheckResult:
    """Where NaN starts: the first layer (in forward order) whose output is non-finite, on this one batch; a skip
    saying why there is nothing to trace when no layer output is."""
    found = {}
    for when, forward, broken in ((msg("in the freshly loaded model"), fresh, broken_fresh),
                                  (msg("after one optimizer step"), stepped, broken_stepped)):
        found = first_non_finite(forward.trace, input_ids) if forward is not None and forward.trace else None
        if found:
            found.update({"when": when, "after_step": forward is stepped, "non_finite_weights": broken[:20]})
            break
    return judge(CHECK, found or {}, any_nan_loss=any_nan_loss)


def measure(run: RunContext) -> CheckResult:
    step, losses = run.batch_step, first_losses(run)
    return check_nan_origin(run.forward, step.forward, split_batch(run.first_batch.tf_batch)[0]["input_ids"],
                            non_finite_weights(run.classifier[0]), step.broken,
                            bool(losses.size and not np.isfinite(losses).all()))


class Evidence(TypedDict, total=False):
    """What model.nan_origin puts in its evidence (the charts, tables and JSON report read it)."""

    layer: str  # the first layer whose output is non-finite
    input_from: str
    input: dict[str, Any]  # non-finite share of its input and of its output
    output: dict[str, Any]
    when: str
    after_step: bool  # found after one optimizer step (the fresh model's outputs were finite)
    non_finite_weights: list[str]


CHECK = Check("model.nan_origin", N_("the first layer whose output turns NaN"), trains=True,
              requires=AFTER_FORWARD, measure=measure, otherwise="skip", conditions=(
    # No layer crossing it: a skip that says why there is nothing to trace.
    Condition("non_finite_layer", None, "fail naming the first layer whose output holds NaN or Inf, fresh or after one "
                                        "step", Holds("layer"), status="fail", says=lambda e, f: (
                  msg("NaN/Inf first appears {when} at the output of {layer} ({output:.0%} non-finite; its input from "
                      "{source} has {input:.0%}){weights}.", when=e["when"], layer=e["layer"],
                      output=e["output"]["non_finite_share"], source=e["input_from"],
                      input=e["input"]["non_finite_share"],
                      weights=msg("; non-finite weights: {weights}", weights=", ".join(e["non_finite_weights"][:3]))
                      if e["non_finite_weights"] else ""),
                  msg("Reload the checkpoint (weights are broken) or lower the learning rate (the step broke "
                      "them)."))),),
              otherwise_says=lambda e, f: msg(
                  "Every layer's output is finite: the non-finite loss comes from the labels, not the network (see "
                  "model.nan_rows).") if f.any_nan_loss else
              msg("Nothing to trace: every layer output, loss, gradient and weight is finite."),
              evidence=Evidence)

# The causes this check owns, each with its precedence among every check's causes (`Cause.precedence`).
CAUSES = (
    Cause(
        "broken_weights",
        "model.nan_origin",
        ("non_finite_layer",),
        N_("a layer whose output is not finite"),
        (
            Explains("model.forward", ("min_finite_share",)),
            Explains("model.nan_rows", ("max_non_finite_rows",), Holds("logits_cause")),
            Explains("model.gradients", ("non_finite_gradient",)),
            Explains("model.weights_after_step", ("non_finite_weights",)),
        ),
        precedence=60,
    ),
)
