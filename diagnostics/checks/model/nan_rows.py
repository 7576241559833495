"""model.nan_rows: the loss of every row, and the shared cause of NaN rows."""

from __future__ import annotations

import math
from typing import Any, TypedDict

import numpy as np

from diagnostics.checks.common import num_labels_of
from diagnostics.checks.model.common import AFTER_FORWARD, first_losses
from diagnostics.checks.model.divergence import rate_to_suggest
from diagnostics.core.check import Check, Condition
from diagnostics.core.context import RunContext
from diagnostics.core.evidence import Rows
from diagnostics.core.fixes import RateFix
from diagnostics.core.result import CheckResult, judge
from diagnostics.core.rules import Above, Holds
from diagnostics.i18n import N_, Text, msg
from diagnostics.keras.batches import decoded_rows


def nan_reason(rows: list[dict[str, Any]], num_labels: int, regression: bool) -> str:
    """What the non-finite rows share, measured: "logits" (their logits are already non-finite), "test_split" (every
    label is -1), "beyond_head" (every label is num_labels or more), "out_of_range" (every label lies outside
    [0, num_labels)), "missing_score" (every score is NaN), else "mixed"."""
    labels = [row["label"] for row in rows]
    if rows and all(not all(v is not None and math.isfinite(v) for v in row["logits"]) for row in rows):
        return "logits"
    if not regression and labels and all(label == -1 for label in labels):
        return "test_split"
    if not regression and labels and all(label >= num_labels for label in labels):
        return "beyond_head"
    if not regression and labels and all(label < 0 or label >= num_labels for label in labels):
        return "out_of_range"
    if regression and labels and all(not math.isfinite(float(label)) for label in labels):
        return "missing_score"
    return "mixed"


def nan_cause(rows: list[dict[str, Any]], num_labels: int, regression: bool) -> Text:
    """The cause the non-finite rows share, in one phrase."""
    reason = nan_reason(rows, num_labels, regression)
    labels = [row["label"] for row in rows]
    if reason == "logits":
        return msg("their logits are already non-finite, so the weights or the inputs are the cause (see "
                   "model.nan_origin)")
    if reason == "test_split":
        return msg("every one has label -1: the split has no labels (a GLUE test split)")
    if reason == "beyond_head":
        return msg("every one has a label >= num_labels ({values}) while config.num_labels == {num_labels}",
                   values=", ".join(map(str, sorted(set(labels)))), num_labels=num_labels)
    if reason == "out_of_range":
        return msg("every one has a label outside [0, {num_labels})", num_labels=num_labels)
    if reason == "missing_score":
        return msg("every one has a missing (NaN) score")
    logits_broken = [row for row in rows if not all(v is not None and math.isfinite(v) for v in row["logits"])]
    return msg("no single cause: {broken} have non-finite logits, the rest labels {labels}",
               broken=len(logits_broken), labels=sorted(set(labels)))


def check_nan_rows(losses: np.ndarray, logits: np.ndarray, decoded: list[dict[str, Any]], num_labels: int,
                   regression: bool) -> CheckResult:
    """A per-sample loss for every row; fail when any row's loss is NaN or Inf, naming the shared cause."""
    bad = [i for i, loss in enumerate(losses) if not math.isfinite(loss)]
    series = {"losses": [float(v) if math.isfinite(v) else None for v in losses],
              "labels": [row["label"] for row in decoded]}
    if not bad:
        return judge(CHECK, {**series, "rows": [], "non_finite_rows": 0})
    rows = [{
        "position": i,
        "index": decoded[i]["index"],
        "decoded": decoded[i]["decoded"],
        "fields": decoded[i].get("fields") or {},
        **({"raw": decoded[i]["raw"]} if "raw" in decoded[i] else {}),
        "label": decoded[i]["label"],
        "label_name": decoded[i]["label_name"],
        "loss": None,
        "logits": [float(v) if math.isfinite(v) else None for v in np.asarray(logits[i]).ravel()],
    } for i in bad]
    reason = nan_reason(rows, num_labels, regression)
    evidence = {**series, "rows": rows, "cause": nan_cause(rows, num_labels, regression), "non_finite_rows": len(bad),
                "labels_cause": reason in ("test_split", "beyond_head", "out_of_range", "missing_score"),
                "logits_cause": reason == "logits"}
    return judge(CHECK, evidence, reason=reason)


def _rows_fix(rows: list[dict[str, Any]], reason: str) -> Any:
    """The fix of the non-finite rows' shared cause (`nan_reason`)."""
    if reason == "test_split":
        return msg("Use a split with labels ('train' or 'validation'): GLUE's test splits carry label -1.")
    if reason == "beyond_head":
        return ("TFAutoModelForSequenceClassification.from_pretrained(checkpoint, "
                f"num_labels={max(row['label'] for row in rows) + 1})")
    if reason == "logits":
        return msg("Reload the checkpoint and look at model.nan_origin for the first broken layer.")
    return msg("Drop or fix the rows listed, then rerun.")


def in_fit(result: CheckResult, step: int, losses_before: list[float], broken: list[str], watched: dict
           ) -> CheckResult:
    """model.nan_rows at the first non-finite loss of a user's own fit (DiagnoseCallback), from `result` (the
    batch's rows judged on the weights training started from: the weights of the step that gave it are gone, the
    step applied NaN gradients). A row non-finite there is the data's fault; when none is, the weights diverged.

    Args:
        step: the step (from 0) whose loss was the first non-finite one.
        losses_before: the fit's losses before it.
        broken: the weights non-finite now.
        watched: what the callback watched: "losses", "weight_norms", "learning_rate", "usual_rate".
    """
    finite = [loss for loss in losses_before if math.isfinite(loss)]
    rate = watched["learning_rate"]
    suggested = rate_to_suggest(rate, watched["usual_rate"])
    evidence = {
        **result.evidence,
        "step": step + 1,
        "losses_before": finite[-10:],
        "weights_now_non_finite": broken[:20],
        "curve": watched["losses"],
        "weight_norms": watched["weight_norms"],
        "learning_rate": rate,
        "non_finite_in_fit": True,
        "weights_diverged": not result.evidence.get("non_finite_rows"),
        "suggested_rate": suggested,
    }
    return judge(CHECK, evidence, batch=result, broken=broken)


def _non_finite_rows(e, f) -> tuple:
    """(finding, fix) for rows of the batch with a non-finite loss, naming their shared cause; in a user's fit
    (DiagnoseCallback), at the step whose loss was the first non-finite one (`f.batch`: the batch's rows judged)."""
    rows = msg("{bad} of {rows} rows have a non-finite loss, and {cause}.", bad=e["non_finite_rows"],
               rows=len(e["losses"]), cause=e["cause"])
    if e.get("non_finite_in_fit"):
        return msg("At step {step}, the first non-finite loss. {finding}", step=e["step"], finding=rows), f.batch.fix
    return rows, _rows_fix(e["rows"], f.reason)


def _diverged_in_fit(e, f) -> tuple:
    """(finding, fix) for a loss that turned non-finite in a user's fit while every row of its batch has a finite
    loss on the starting weights: the weights diverged (`f.broken`: every weight non-finite now)."""
    rate = e["learning_rate"]
    return (msg("The loss became non-finite at step {step} (after {before}) although every row of that batch has a "
                "finite loss on the weights training started from: the weights diverged ({broken} weight tensors "
                "are now non-finite, e.g. {examples}), so the learning rate {rate} is too high for this model.",
                step=e["step"], before=", ".join(f"{v:.3g}" for v in e["losses_before"][-3:]) or "-",
                broken=len(f.broken), examples=", ".join(f.broken[:2]) or "-",
                rate=f"{rate:g}" if rate is not None else "?"),
            RateFix(e["suggested_rate"], N_("{code}  # or the sweep's: python -m diagnostics run --stages hparams")))


def _all_finite(e, f) -> Any:
    """What model.nan_rows says when no rule is crossed: every row's loss is finite, from the lowest to the highest
    (rows a threshold set for this run allows are said by `judge`)."""
    return msg("All {rows} rows have a finite loss (from {low:.3f} to {high:.3f}).", rows=len(e["losses"]),
               low=np.min(e["losses"]), high=np.max(e["losses"]))


def measure(run: RunContext) -> CheckResult:
    task = run.config.glue_task
    return check_nan_rows(first_losses(run), run.forward.logits, decoded_rows(run.first_batch, run.tokenizer, task),
                          num_labels_of(run), task.regression)


class Evidence(TypedDict, total=False):
    """What model.nan_rows puts in its evidence (the charts, tables and JSON report read it)."""

    losses: list[float]
    labels: list
    rows: Rows  # position, index, label, label_name, logits, loss, decoded
    cause: str
    non_finite_rows: int  # rows of the batch with a NaN or infinite loss
    labels_cause: bool  # every such row has a label outside [0, num_labels) (or a missing score)
    logits_cause: bool  # every such row has non-finite logits
    # Found by DiagnoseCallback during the user's fit:
    step: int
    losses_before: list[float]
    weights_now_non_finite: list[str]
    curve: list[float | None]  # each step's own loss
    weight_norms: list[float | None]  # before the first step, then after each
    learning_rate: float | None
    suggested_rate: float
    non_finite_in_fit: bool  # the loss turned non-finite during the user's fit
    weights_diverged: bool  # ... while every row of its batch has a finite loss on the starting weights


CHECK = Check("model.nan_rows", N_("the loss of every row, and the shared cause of NaN rows"), requires=AFTER_FORWARD,
              measure=measure, conditions=(
    Condition("max_non_finite_rows", 0, "fail when more rows than this have a NaN or infinite loss",
              Above("non_finite_rows"), status="fail", says=_non_finite_rows),
    Condition("non_finite_in_fit", None, "DiagnoseCallback: fail when the loss turned non-finite during fit "
                                         "though every row of that batch has a finite loss on the starting "
                                         "weights (the weights diverged)",
                                         Holds("weights_diverged"), status="fail", says=_diverged_in_fit)),
              otherwise_says=_all_finite, evidence=Evidence)
