"""model.initial_loss: the untrained loss against ln K and against the loss from its logits."""

from __future__ import annotations

import math
from typing import Any, TypedDict

import numpy as np

from diagnostics.checks.common import num_labels_of, own_loss_reason
from diagnostics.checks.model.common import AFTER_FORWARD
from diagnostics.config.tasks import GlueTask
from diagnostics.core.check import Check, Condition
from diagnostics.core.context import RunContext
from diagnostics.core.result import CheckResult, judge, skipped
from diagnostics.core.rules import Above
from diagnostics.i18n import N_, msg
from diagnostics.keras import keras_model
from diagnostics.keras.measurement import configured_loss_value


def check_initial_loss(value: float, expected: float, reference: float, loss_name: str, regression: bool, *,
                       own_head: bool = False) -> CheckResult:
    """The fresh model's loss should sit near the random-guess loss ln K (regression: mean of label squared),
    and the configured loss should agree with the loss computed properly on the same logits.

    Args:
        value: mean loss of the batch under the configured loss, finite (the runner's "scored" need: some row has a
            valid label).
        expected: ln K, or mean(label²) for regression.
        reference: the same batch's loss computed properly from the logits (cross-entropy or squared error).
        own_head: the output layer is the user's own Keras layer: it starts where its initializer puts it (Keras's
            Glorot init on an encoder's hidden states gives logits of a unit or more, a loss well away from ln K,
            and trains as well), so the gap is measured but not judged; a Transformers head starts near ln K by
            design (its initializer's 0.02 spread), where a gap means something.
    """
    evidence = {"loss": value, "expected": expected, "reference": reference, "loss_name": loss_name}
    gap = abs(value - expected) / expected if expected else 0.0
    disagreement = abs(value - reference) / reference if reference else 0.0
    evidence.update({"relative_gap": None if own_head else gap, "gap_from_chance": gap, "disagreement": disagreement})
    return judge(CHECK, evidence, regression=regression, own_head=own_head)


def _chance(e, f) -> Any:
    """The loss the untrained model's is compared with, in words: ln K, or a regression head's mean(label²)."""
    return msg("mean(label²), the error of a head that outputs about 0") if f.regression else \
        f"ln(K) = {e['expected']:.3f}"


def _compile_fix(e, f) -> Any:
    """The fix of a loss that disagrees with the model's own: compile with the model's internal loss."""
    return msg("model.compile(optimizer=...)  # the model's internal loss; or "
               "loss=SparseCategoricalCrossentropy(from_logits=True)") if not f.regression else \
        msg("model.compile(optimizer=...)  # the internal mean squared error")


def _near_chance(e, f) -> Any:
    """What model.initial_loss says when no rule is crossed: the loss near chance, or, for the user's own output
    layer, the gap measured but not judged."""
    if f.own_head:
        return msg("The untrained model's loss is {value:.3f}, {gap:.0%} from {what}: your own output layer starts "
                   "where its initializer puts it, so the gap is not judged; the configured loss agrees with the loss "
                   "from its outputs.", value=e["loss"], gap=e["gap_from_chance"], what=_chance(e, f))
    # Said to a tenth of a percent, at least 0.1%: a gap of 0.3% once read "within 0% of".
    return msg("The untrained model's loss is {value:.3f}, within {gap:.1%} of {what}, as a fresh head should be.",
               value=e["loss"], gap=max(e["gap_from_chance"], 0.001), what=_chance(e, f))


def expected_loss(labels: np.ndarray, task: GlueTask, num_labels: int) -> float:
    """The untrained loss to expect: ln K for a classifier, mean(label²) for a regression head that outputs about 0."""
    if task.regression:
        return float(np.mean(labels[np.isfinite(labels.astype(float))].astype(float) ** 2))
    return math.log(num_labels)


def measure(run: RunContext) -> CheckResult:
    config, logits, labels = run.config, run.forward.logits, run.first_labels
    if config.loss == "custom":
        return skipped(CHECK.id, "model", own_loss_reason(config))
    if run.beyond_head_labels:  # a PASS "within 0.1% of ln(K) = 0.693" beside NaN rows read as a head that fits
        return skipped(CHECK.id, "model", msg(
            "{count:,} rows hold labels the head has no output for (num_labels={num_labels}, while {task} has "
            "{classes}; see model.config): a loss over the other rows, against ln({num_labels}), would say nothing "
            "of this head, so it is not measured.", count=run.beyond_head_labels,
            num_labels=config.effective_num_labels, task=config.glue_task.name, classes=config.glue_task.num_labels))
    regression = config.glue_task.regression
    head = keras_model.head_of(run.classifier[0])
    return check_initial_loss(configured_loss_value(config.loss, logits, labels, regression, head),
                              expected_loss(labels, config.glue_task, num_labels_of(run)),
                              configured_loss_value("internal", logits, labels, regression), config.loss, regression,
                              own_head=not keras_model.is_transformers_classifier(run.classifier[0]))


class Evidence(TypedDict, total=False):
    """What model.initial_loss puts in its evidence (the charts, tables and JSON report read it)."""

    disagreement: float
    expected: float
    gap_from_chance: float
    loss: float
    loss_name: str
    reference: float
    relative_gap: float


CHECK = Check("model.initial_loss", N_("the untrained loss against ln K and against the loss from its logits"),
              requires=AFTER_FORWARD + ("scored",), measure=measure, conditions=(
    Condition("warn_loss_disagreement", 0.1, "warn when the model's loss and the loss from its logits differ by this",
              Above("disagreement"), says=lambda e, f: (
                  msg("The configured loss {loss} gives {value:.3f} on the untrained model, but cross-entropy computed "
                      "from its logits gives {reference:.3f} ({what}): the loss treats the logits as probabilities "
                      "(from_logits=False).", loss=repr(e["loss_name"]), value=e["loss"], reference=e["reference"],
                      what=_chance(e, f)),
                  _compile_fix(e, f))),
    Condition("warn_relative_gap", 0.3, "warn when the untrained loss is this far (relatively) from ln K",
              Above("relative_gap"), says=lambda e, f: (
                  msg("The untrained model's loss is {value:.3f}, {gap:.0%} away from {what}: the head may not fit the "
                      "task, the checkpoint may already be trained on other labels, or a custom loss has a bug.",
                      value=e["loss"], gap=e["relative_gap"], what=_chance(e, f)),
                  _compile_fix(e, f)))),
              otherwise_says=_near_chance, evidence=Evidence)
