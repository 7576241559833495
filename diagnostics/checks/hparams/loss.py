"""hparams.loss: the loss matches what the model outputs (logits or probabilities)."""

from __future__ import annotations

import math
from typing import Any, Callable, TypedDict

import numpy as np

from diagnostics.checks.common import NOTHING_LEARNS, out_of_range_of, own_loss_reason
from diagnostics.config.run import RunConfig
from diagnostics.config.tasks import GlueTask
from diagnostics.core.check import Cause, Check, Condition, Explains
from diagnostics.core.context import RunContext
from diagnostics.core.fixes import keras_name
from diagnostics.core.result import CheckResult, judge, skipped
from diagnostics.core.rules import Above, All, Holds
from diagnostics.i18n import N_, Text, msg
from diagnostics.keras.keras_model import head_of
from diagnostics.keras.measurement import Forward, configured_loss_value
from diagnostics.keras.training import StepRecord, labels_in_range


def loss_figures(model, tf_batch, labels: np.ndarray, config: RunConfig, task: GlueTask, *, forward: Forward,
                 step: Callable[[], StepRecord]) -> dict[str, Any]:
    """How the configured loss treats what the model outputs, measured on the batch, and what one real train step
    minimises.

    Args:
        forward: the batch's forward pass, which ran (the runner's "forward" need: model.forward owns one that
            raises).
        step: the run's one train step with its labels drawn in range (`RunContext.in_range_step`).
    """
    logits, head = forward.logits, head_of(model)
    figures: dict[str, Any] = {"loss": config.loss, "labels_in": config.labels_in, "regression": task.regression,
                               "head": None if head.transformers else head.describe()}
    raw = forward.raw if forward.raw is not None else logits
    raw = raw.reshape(len(raw), -1)
    sums = raw.sum(axis=1)
    figures["outputs_are_probabilities"] = bool(head.probabilities or (
        (raw >= 0).all() and (np.allclose(sums, 1.0, atol=1e-3) if raw.shape[1] > 1 else (raw <= 1).all())))
    figures["configured_value"] = configured_loss_value(config.loss, logits, labels, task.regression, head)
    figures["cross_entropy_from_logits"] = configured_loss_value("internal", logits, labels, task.regression)
    if not task.regression and logits.shape[1] > 1:
        # A fresh head's logits sit near zero, where a loss that reads them as probabilities can happen to agree
        # with cross-entropy. Logits of 0.5 on each row's label and -1 elsewhere tell the two apart whatever the
        # head's start: cross-entropy from logits gives a modest loss, a probability reading a near-zero one.
        probe = np.where(
            np.arange(logits.shape[1])[None, :] == np.clip(labels.astype(int), 0, logits.shape[1] - 1)[:, None],
            0.5,
            -1.0,
        )
        figures["probe_configured_value"] = configured_loss_value(config.loss, probe, labels, task.regression, head)
        figures["probe_cross_entropy"] = configured_loss_value("internal", probe, labels, task.regression)
    if not task.regression:
        num_labels = head_of(model).num_labels
        _, figures["labels_drawn_in_range"] = labels_in_range(tf_batch, num_labels, config.seed)
        # Who owns those labels: a head narrower than the task's classes (model.config), else the data.
        figures["labels_owner"] = "model.config" if task.known and num_labels < task.num_labels and bool(
            ((labels >= num_labels) & (labels < task.num_labels)).any()) and not bool(
            ((labels < 0) | (labels >= task.num_labels)).any()) else "data.label_range"
    record = step()
    figures["train_step_loss"] = record.loss
    figures["train_step_error"] = record.error
    figures["variables_without_gradient"] = sum(grad is None for _, grad in record.gradients)
    return figures


def _installed_transformers() -> str:
    from importlib.metadata import version

    return version("transformers")


def check_loss(figures: dict[str, Any]) -> CheckResult:
    """Whether the loss matches what the model outputs (found by behaviour, not by the loss's name), judged on
    labels in range so that out-of-range labels (another check's finding) never hide a wrong loss.
    """
    result = _judge_loss(figures)
    drawn = figures.get("labels_drawn_in_range") or 0
    if drawn:
        result.summary = msg("{summary} (Judged with the batch's {count} labels the head has no output for replaced "
                             "by labels it has: those are {owner}'s finding.)", summary=result.summary, count=drawn,
                             owner=figures.get("labels_owner") or "data.label_range")
    return result


def _loss_class(name: str) -> str:
    """The Keras loss class of a configured loss ("categorical_crossentropy" -> CategoricalCrossentropy)."""
    base = name.split("(")[0]
    return {"categorical_crossentropy": "CategoricalCrossentropy", "binary_crossentropy": "BinaryCrossentropy"}.get(
        base, base if base[:1].isupper() else "SparseCategoricalCrossentropy")


def _compile_with(name: str, *, from_logits: bool, alternative: str | None = None):
    """The fix that compiles with the same Keras loss class and the given from_logits, in the code's own Keras name;
    `alternative` (a template with {code}, marked with N_) adds what else would do."""
    code = (
        f"model.compile(optimizer=optimizer, loss={keras_name()}.losses.{_loss_class(name)}(from_logits={from_logits}))"
    )
    return code if alternative is None else msg(alternative, code=code)


def _judge_loss(figures: dict[str, Any]) -> CheckResult:
    """hparams.loss's verdict: the findings its rules read, added to `figures` (the evidence), judged."""
    warn_disagreement = CHECK.value("warn_disagreement")
    name, labels_in, regression = figures["loss"], figures["labels_in"], figures["regression"]
    configured, reference = figures["configured_value"], figures["cross_entropy_from_logits"]
    figures["disagreement"] = max(_gap(configured, reference),
                                  _gap(figures.get("probe_configured_value"), figures.get("probe_cross_entropy")))
    figures["classification_loss"] = regression and name not in ("internal", "mse")
    figures["regression_loss"] = not regression and name == "mse"
    figures["keras_loss_on_input_labels"] = name != "internal" and labels_in == "inputs"
    figures["reads_probabilities_as_logits"] = bool(figures["outputs_are_probabilities"] and "from_logits=True" in name
                                                    and figures["disagreement"] > warn_disagreement)
    return judge(CHECK, figures, version=_installed_transformers())


def _gap(value, against) -> float:
    """How far a loss value lies from another, as a share of it (0 where either cannot tell)."""
    return abs(value - against) / against if against and value is not None and math.isfinite(value) else 0.0


def _shown(e) -> Text:
    """How the configured loss misreads the logits: on the batch, or (a fresh head's logits near zero agreeing by
    chance) on the probe logits."""
    configured, reference = e["configured_value"], e["cross_entropy_from_logits"]
    if _gap(configured, reference) > CHECK.value("warn_disagreement"):
        return msg("it gives {configured:.3f} where cross-entropy from the logits gives {reference:.3f}",
                   configured=configured, reference=reference)
    return msg("on this batch it gives {configured:.3f}, near cross-entropy from the logits ({reference:.3f}) "
               "only because a fresh head's logits sit near zero; on logits of 0.5 for each row's label and -1 "
               "elsewhere it gives {probe:.3g} where cross-entropy gives {probe_reference:.3f}",
               configured=configured, reference=reference, probe=e.get("probe_configured_value"),
               probe_reference=e.get("probe_cross_entropy"))


def _reads_logits_as_probabilities(e, f) -> tuple:
    """(finding, fix) for a from_logits=False loss on a model that outputs logits."""
    name = e["loss"]
    # Labels in the input dict: a Keras loss object would still be keras_loss_on_input_labels' finding, so the one
    # fix is the model's own loss.
    fix = msg("model.compile(optimizer=optimizer)  # no loss= : the model's internal loss reads the labels itself") \
        if e["labels_in"] == "inputs" and e.get("head") is None else \
        _compile_with(name, from_logits=True, alternative=N_("{code}  # or no loss= at all")
                      if e.get("head") is None else None)
    return (msg("The model outputs logits (rows do not sum to 1), but loss {loss} reads them as probabilities "
                "(from_logits=False): {shown}, so training follows a distorted loss and learns slowly.",
                loss=repr(name), shown=_shown(e)),
            fix)


def _keras_loss_on_input_labels(e, f) -> tuple:
    """(finding, fix) for a Keras loss given with the labels inside the input dict."""
    return (msg("Loss {loss} matches the model's output ({configured:.3f} on the batch), but the labels sit inside the "
                "input dict with a Keras loss: Transformers {version}'s train_step moves them out and gives them to "
                "the Keras loss, so this trains here, while other versions raised \"No gradients provided for any "
                "variable\" and the model also computes its own loss on every step.", loss=repr(e["loss"]),
                configured=e["configured_value"], version=f.version),
            msg("to_tf_dataset(columns=[...inputs...], label_cols='label')  # labels apart for a Keras loss;\n"
                "# or keep them in the dict and compile(optimizer=...) with no loss"))


def _matches(e, f) -> Text:
    """What a loss no rule finds fault with does: its value beside cross-entropy from the logits, and how it reads
    the labels."""
    name, labels_in = e["loss"], e["labels_in"]
    if name == "internal" and labels_in == "separate":
        note = msg("labels are separate (x, y) with the model's internal loss: Transformers {version}'s train_step "
                   "copies y into the input dict as labels, so the internal loss is used.", version=f.version)
    elif name == "internal":
        note = msg("the model's internal loss reads the labels from the input dict, as the course's fixed script does.")
    elif e.get("head") and e.get("outputs_are_probabilities"):
        note = msg("the Keras loss reads the probabilities of the model's {head} output and the separate labels.",
                   head=e["head"])
    else:
        note = msg("the Keras loss reads logits (from_logits=True) and the separate labels.")
    return msg("Loss {loss} matches the model's output ({configured:.3f} on the batch, cross-entropy from logits "
               "{reference:.3f}); {note}", loss=repr(name), configured=e["configured_value"],
               reference=e["cross_entropy_from_logits"], note=note)


def measure(run: RunContext) -> CheckResult:
    config = run.config
    if config.loss == "custom":
        return skipped(CHECK.id, "hparams", own_loss_reason(config))
    figures = loss_figures(run.classifier[0], run.first_batch.tf_batch, run.first_labels, config, config.glue_task,
                           step=lambda: run.in_range_step, forward=run.forward)
    return check_loss({**figures, "out_of_range_labels": out_of_range_of(run)})


class Evidence(TypedDict, total=False):
    """What hparams.loss puts in its evidence (the charts, tables and JSON report read it)."""

    configured_value: float
    probe_configured_value: float
    probe_cross_entropy: float
    cross_entropy_from_logits: float
    disagreement: float
    labels_drawn_in_range: bool
    labels_owner: str  # the check owning the labels drawn in range: model.config (a head too small) or data.label_range
    labels_in: str
    loss: str
    outputs_are_probabilities: bool
    regression: bool
    train_step_error: str
    train_step_loss: float
    variables_without_gradient: list[str]
    classification_loss: bool  # a classification loss on a regression task
    regression_loss: bool  # mean squared error on class ids
    keras_loss_on_input_labels: bool  # a Keras loss with the labels inside the input dict
    out_of_range_labels: int  # labels of the batch the head has no output for (one-hot rows wider than it raise)
    reads_probabilities_as_logits: bool  # a from_logits=True loss on a softmax or sigmoid output that it distorts
    head: str | None  # a Keras model's own output layer ("Dense(2, softmax)"); None for a Transformers classifier


CHECK = Check("hparams.loss", N_("the loss matches what the model outputs (logits or probabilities)"),
              unit="setup", requires=("forward",), measure=measure, conditions=(
    # Judged in this order; a loss no rule finds fault with passes.
    Condition("step_raises", None, "fail when a real train step with this loss and these labels raises",
              Holds("train_step_error"), status="fail", says=lambda e, f: (
                  msg("With loss {loss} and labels {placement}, Transformers {version}'s train step raises {error}.",
                      loss=repr(e["loss"]), placement=msg("inside the input dict") if e["labels_in"] == "inputs"
                      else msg("separate"), version=f.version, error=e["train_step_error"]),
                  msg("model.compile(optimizer=optimizer)  # no loss= : the model's internal loss reads the labels "
                      "itself"))),
    Condition("classification_loss", None, "fail when a regression task is given a classification loss",
              Holds("classification_loss"), status="fail", says=lambda e, f: (
                  msg("{loss} is a classification loss, but stsb is regression with one output.", loss=repr(e["loss"])),
                  msg('model.compile(optimizer=optimizer)  # internal MSE; or loss="mse"'))),
    Condition("regression_loss", None, "fail when a classification task is given mean squared error",
              Holds("regression_loss"), status="fail", says=lambda e, f: (
                  msg("Mean squared error on class ids treats labels as numbers to regress, not classes."),
                  msg("model.compile(optimizer=optimizer)  # the internal cross-entropy"))),
    Condition("warn_disagreement", 0.1, "fail when the model outputs logits and the configured loss and the loss from "
                                        "logits differ by more than this share (on the batch, or on probe logits)",
              All((Holds("outputs_are_probabilities", False), Above("disagreement"))), status="fail",
              says=_reads_logits_as_probabilities),
    Condition("probabilities_as_logits", None, "fail when the model outputs probabilities (its final activation) and "
                                               "a from_logits=True loss differs from cross-entropy by more than "
                                               "warn_disagreement's share",
              Holds("reads_probabilities_as_logits"), status="fail", says=lambda e, f: (
                  msg("The model outputs probabilities ({head}: its final activation), but loss {loss} reads them as "
                      "logits (from_logits=True): {shown}, so training follows a distorted loss and learns slowly.",
                      head=e.get("head") or msg("rows sum to 1"), loss=repr(e["loss"]), shown=_shown(e)),
                  _compile_with(e["loss"], from_logits=False,
                                alternative=N_("{code}  # or drop the activation and keep from_logits=True")))),
    Condition("keras_loss_on_input_labels", None, "warn when a Keras loss is given with the labels inside the input "
                                                  "dict (it trains on this Transformers version only)",
              Holds("keras_loss_on_input_labels"), says=_keras_loss_on_input_labels),
    ), otherwise_says=_matches, evidence=Evidence)

# The causes this check owns, each with its precedence among every check's causes (`Cause.precedence`).
CAUSES = (
    Cause("loss_mismatch", "hparams.loss", ("step_raises", "classification_loss", "regression_loss",
                                            "warn_disagreement", "probabilities_as_logits"),
          N_("a loss that does not match what the model outputs"),
          # The untrained loss disagreeing with the loss from the logits is this cause as measured: the Model page,
          # opened first, points here.
          (Explains("model.initial_loss", ("warn_loss_disagreement",), before_owner=True),
           Explains("model.initial_loss"),
           Explains("model.gradients", ("step_raises", "no_gradient", "zero_gradient")),
           Explains("hparams.lr_sweep")) + NOTHING_LEARNS, precedence=40),
)
