"""data.baselines: the accuracy of a random and of a constant predictor."""

from __future__ import annotations

import math
from typing import Any, TypedDict

import numpy as np

from diagnostics.checks.data.label_balance import label_counts
from diagnostics.config.tasks import GlueTask, STSB_RANGE
from diagnostics.core.check import Check, Condition
from diagnostics.core.context import RunContext
from diagnostics.core.result import CheckResult, judge
from diagnostics.core.rules import Above, AtMost
from diagnostics.i18n import N_, msg
from diagnostics.keras.batches import split_labels


def baseline_figures(labels: np.ndarray, task: GlueTask, num_labels: int) -> dict[str, Any]:
    """Loss and accuracy of a uniform random predictor and of a constant (majority or mean) predictor."""
    if task.regression:
        values = np.asarray(labels, dtype=float)
        values = values[np.isfinite(values) & (values >= STSB_RANGE[0]) & (values <= STSB_RANGE[1])]
        if values.size == 0:
            return {"valid_rows": 0}
        return {"valid_rows": int(values.size), "mean_predictor_mse": float(values.var()), "mean": float(values.mean())}
    counts = np.asarray(label_counts(labels, max(num_labels, task.num_labels)), dtype=float)
    total = counts.sum()
    if total == 0:
        return {"valid_rows": 0}
    prior = counts / total
    nonzero = prior[prior > 0]
    # Guessing among the task's classes (whatever the head's num_labels); for a task not known, among the label
    # values the split holds.
    classes = task.num_labels if task.known else max(2, int((counts > 0).sum()))
    return {
        "valid_rows": int(total),
        "classes": classes,
        "uniform_loss": math.log(classes),
        "uniform_accuracy": 1.0 / classes,
        "majority_label": int(np.argmax(counts)),
        "majority_accuracy": float(prior.max()),
        "prior_loss": float(-(nonzero * np.log(nonzero)).sum()),
    }


def check_baselines(labels: np.ndarray, task: GlueTask, num_labels: int) -> CheckResult:
    """What a model that learned nothing scores, to read the training curves against (some label of the split lies
    in range: the runner's "counted" need).
    """
    return judge(CHECK, baseline_figures(labels, task, num_labels), task=task)


def _guessing(e, f) -> Any:
    """What a model that learned nothing scores: the mean score's error (regression), else random guessing's and
    the commonest label's loss and accuracy."""
    if f.task.regression:
        return msg("Always predicting the mean score {mean:.2f} gives a mean squared error of {mse:.3f}; a model that "
                   "learns must go below it.", mean=e["mean"], mse=e["mean_predictor_mse"])
    majority = f.task.label_name(e["majority_label"])
    return msg("Random guessing among the {classes} classes gives loss ln({classes}) = {loss:.3f} and accuracy "
               "{accuracy:.0%}; always predicting {majority} gives accuracy {majority_accuracy:.0%} (loss "
               "{prior_loss:.3f} with the label frequencies).",
               classes=e["classes"], loss=e["uniform_loss"], accuracy=e["uniform_accuracy"], majority=majority,
               majority_accuracy=e["majority_accuracy"], prior_loss=e["prior_loss"])


def measure(run: RunContext) -> CheckResult:
    return check_baselines(split_labels(run.split), run.config.glue_task, run.config.effective_num_labels)


class Evidence(TypedDict, total=False):
    """What data.baselines puts in its evidence (the charts, tables and JSON report read it)."""

    classes: int  # the task's classes (for a task not known, the label values the split holds)
    majority_accuracy: float
    majority_label: str
    prior_loss: float
    uniform_accuracy: float
    uniform_loss: float
    valid_rows: int
    mean: float
    mean_predictor_mse: float


CHECK = Check("data.baselines", N_("the accuracy of a random and of a constant predictor"), unit="labels",
              requires=("counted",), measure=measure, conditions=(
    Condition("constant_scores", 0.0, "regression: warn when always predicting the mean score has an error of at most "
                                      "this (every score the same: nothing to learn)", AtMost("mean_predictor_mse"),
              says=lambda e, f: (
                  msg("Every score is {mean:.2f}: there is nothing to learn, and any model that outputs it is perfect.",
                      mean=e["mean"]),
                  msg("Check that the label column was read correctly (e.g. not filled with a default)."))),
    Condition("warn_majority_accuracy", 0.9, "warn when always predicting the commonest label scores above this",
              Above("majority_accuracy"), says=lambda e, f: (
                  msg("{summary} High accuracy alone will not show that the model learned anything.",
                      summary=_guessing(e, f)),
                  msg("Track loss and F1 (or per-class recall) instead of accuracy alone.")))),
              otherwise_says=_guessing, evidence=Evidence)
