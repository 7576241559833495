"""model.gradients: one train step: every trainable weight gets a finite, non-zero gradient."""

from __future__ import annotations

import math
from typing import Any, TypedDict

from diagnostics.checks.common import NOTHING_LEARNS, out_of_range_of
from diagnostics.checks.model.common import AFTER_FORWARD, layer_group
from diagnostics.config.run import RunConfig
from diagnostics.core.check import Cause, Check, Condition
from diagnostics.core.context import RunContext
from diagnostics.core.evidence import Rows
from diagnostics.core.result import CheckResult, judge
from diagnostics.core.rules import All, Holds
from diagnostics.i18n import N_, msg, msgn
from diagnostics.keras.internals import variable_path
from diagnostics.keras.training import StepRecord


def gradient_figures(record: StepRecord) -> dict[str, Any]:
    """Global gradient norm, per-layer norms, and the variables with no or non-finite gradients."""
    unused = set(record.unused)
    gradients = [(name, grad) for name, grad in record.gradients if name not in unused]
    missing = [variable_path(name) for name, grad in gradients if grad is None]
    broken = [variable_path(name) for name, grad in record.gradients if grad is not None and not grad.finite]
    groups: dict[str, float] = {}
    for name, grad in gradients:
        if grad is not None:
            groups[layer_group(name)] = groups.get(layer_group(name), 0.0) + grad.sum_squares
    norms = [
        {"layer": layer, "norm": math.sqrt(total) if math.isfinite(total) else None} for layer, total in groups.items()
    ]
    total = sum(v for v in groups.values())
    sizes = dict(zip((name for name, _ in record.gradients), record.sizes or [0] * len(record.gradients), strict=True))
    sizes = {name: size for name, size in sizes.items() if name not in unused}
    zero = [name for name, grad in gradients if grad is not None and grad.finite and grad.zero]
    dead = [name for name, grad in gradients if grad is None or (grad.finite and grad.zero)]
    weights = sum(sizes.values())
    return {
        "variables": len(gradients),
        "unused_by_output": [variable_path(name) for name in record.unused],
        "no_gradient": missing,
        "zero_gradient": [variable_path(name) for name in zero],
        "dead_share": sum(sizes[name] for name in dead) / weights if weights else None,
        "non_finite": broken,
        "global_norm": math.sqrt(total) if math.isfinite(total) else None,
        "layer_norms": norms,
        "loss": record.loss,
        "error": record.error,
    }


LABELS_LOSS_MISMATCH = N_(
    "This is the course's \"No gradients provided\" error: the loss given to compile() never sees the model's "
    "output and labels together, e.g. labels inside the input dict with compile(loss=...) on a Transformers "
    "version that does not move them out, or no labels where the internal loss needs them."
)


def check_gradients(figures: dict[str, Any], config: RunConfig) -> CheckResult:
    """One real train step with the configured loss and label placement: every trainable variable gets a finite
    gradient."""
    return judge(CHECK, figures, loss=config.loss_shown, labels_in=config.labels_in)


def _step_raises(e, f) -> tuple:
    """(finding, fix) for a train step that raised: Keras's "No gradients provided" is the labels and the loss
    apart."""
    if "No gradients provided" in (e["error"] or ""):
        return (msg("model.fit's train step raised {error}. {mismatch}", error=e["error"],
                    mismatch=msg(LABELS_LOSS_MISMATCH)),
                msg("model.compile(optimizer=optimizer)  # no loss: the model uses the labels in the input dict"))
    return (msg("model.fit's train step raised {error}.", error=e["error"]),
            msg("Run one model.train_on_batch(...) on this batch with run_eagerly=True to see where it raises."))


def _zero_gradient(e, f) -> tuple:
    """(finding, fix) for variables whose gradient is all zero: every one of them (the loss does not change with any
    weight), or some."""
    zero, total = e["zero_gradient"], e["variables"]
    return (msg("Every gradient is exactly zero (global norm 0, all {total} trainable variables) with loss {loss}: the "
                "loss does not change with any weight, so no step can train the model.", total=total,
                loss=repr(f.loss)) if len(zero) == total else
            msg("{count} of {total} trainable variables get an all-zero gradient ({names}; {share:.1%} of the "
                "weights): training cannot change them.", count=len(zero), total=total,
                names=", ".join(zero[:5]) + (", ..." if len(zero) > 5 else ""), share=e["dead_share"] or 0.0),
            msg("The loss given to compile() stops the gradient (see hparams.loss): {code}",
                code="model.compile(optimizer=optimizer)  # no loss=: the model's own loss") if f.loss != "internal"
            else msg("Check what stands between these weights and the loss (a stop_gradient, a saturated activation, "
                     "an output the loss does not read)."))


def _every_gradient(e, f) -> Any:
    """What model.gradients says when no rule is crossed: every variable's gradient is finite, with the variables
    the model's output never uses."""
    placement = msg("inside the input dict") if f.labels_in == "inputs" else msg("separate (x, y)")
    return msg("All {count} trainable variables get a finite gradient (global norm {norm:.3g}) with loss {loss} and "
               "labels {placement}.", count=e["variables"], norm=e["global_norm"], loss=repr(f.loss),
               placement=placement) + _unused_text(e.get("unused_by_output") or [])


def _unused_text(unused: list[str]) -> Any:
    """What a step says of the variables the model's output never uses (measured: no gradient of the output)."""
    if not unused:
        return ""
    return " " + msgn("{count} more variable ({names}) is not used by the model's output at all, so it gets no "
                      "gradient whatever the loss (Keras warns of it; it is the architecture, not a fault).",
                      "{count} more variables ({names}) are not used by the model's output at all, so they get no "
                      "gradient whatever the loss (Keras warns of them; it is the architecture, not a fault).",
                      len(unused), names=", ".join(unused[:4]) + (", ..." if len(unused) > 4 else ""))


def measure(run: RunContext) -> CheckResult:
    return check_gradients({**gradient_figures(run.batch_step.record), "out_of_range_labels": out_of_range_of(run)},
                           run.config)


class Evidence(TypedDict, total=False):
    """What model.gradients puts in its evidence (the charts, tables and JSON report read it)."""

    layer_norms: Rows  # layer, norm
    global_norm: float
    loss: float
    no_gradient: list[str]
    zero_gradient: list[str]
    dead_share: float  # share of the weights held by variables with no or an all-zero gradient
    non_finite: list[str]
    variables: int
    error: str
    out_of_range_labels: int  # labels of the batch outside [0, num_labels) (the step raises on them on CPU)
    unused_by_output: list[str]  # variables the model's output never uses (no gradient whatever the loss)


CHECK = Check("model.gradients", N_("one train step: every trainable weight gets a finite, non-zero gradient"),
              trains=True, requires=AFTER_FORWARD, measure=measure, conditions=(
    Condition("step_raises", None, "fail when the train step raises", Holds("error"), status="fail",
              says=_step_raises),
    Condition("no_gradient", None, "fail when a trainable variable gets no gradient (not connected to the loss)",
              Holds("no_gradient"), status="fail", says=lambda e, f: (
                  msg("{count} of {total} trainable variables get no gradient ({names}): they are not connected to "
                      "the loss. {mismatch}", count=len(e["no_gradient"]), total=e["variables"],
                      names=", ".join(e["no_gradient"][:5]) + (", ..." if len(e["no_gradient"]) > 5 else ""),
                      mismatch=msg(LABELS_LOSS_MISMATCH)),
                  msg("Check that the loss uses the model's output; freeze unused layers with layer.trainable = "
                      "False."))),
    Condition("zero_gradient", None, "fail when a trainable variable gets an all-zero gradient and none a non-finite "
                                     "one", All((Holds("zero_gradient"), Holds("non_finite", False))), status="fail",
              says=_zero_gradient),
    Condition("non_finite_gradient", None, "fail when a variable gets a NaN or infinite gradient",
              Holds("non_finite"), status="fail", says=lambda e, f: (
                  msg("{count} of {total} variables get a NaN or Inf gradient, first {first}.",
                      count=len(e["non_finite"]), total=e["variables"], first=e["non_finite"][0]),
                  msg("Fix the non-finite loss first (model.nan_rows); then lower the learning rate or clip: {code}",
                      code="Adam(..., global_clipnorm=1.0)")))),
              otherwise_says=_every_gradient, evidence=Evidence)

# The causes this check owns, each with its precedence among every check's causes (`Cause.precedence`).
CAUSES = (
    Cause("no_gradient", "model.gradients", ("no_gradient", "zero_gradient"),
          N_("weights the loss's gradient never reaches"), NOTHING_LEARNS, precedence=50),
)
