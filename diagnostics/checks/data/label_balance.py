"""data.label_balance: the label balance of the batch and the split."""

from __future__ import annotations

from typing import Any, TypedDict

import numpy as np

from diagnostics.checks.data.label_range import batch_labels
from diagnostics.config.tasks import GlueTask, STSB_RANGE
from diagnostics.core.chance import chance_of_at_least, chance_of_none
from diagnostics.core.check import Check, Condition
from diagnostics.core.context import RunContext
from diagnostics.core.result import CheckResult, judge
from diagnostics.core.rules import Above, AtMost
from diagnostics.i18n import N_, msg
from diagnostics.keras.batches import label_names_for, split_labels


def label_counts(labels: np.ndarray, num_labels: int) -> list[int]:
    """Count of each label id 0..num_labels-1 (values outside are left to data.label_range)."""
    values = np.asarray(labels).astype(np.int64)
    values = values[(values >= 0) & (values < num_labels)]
    return np.bincount(values, minlength=num_labels).tolist()


def score_histogram(labels: np.ndarray, bins: int = 10) -> dict[str, list]:
    """Histogram of regression scores over STS-B's 0..5."""
    values = np.asarray(labels, dtype=float)
    values = values[np.isfinite(values)]
    counts, edges = np.histogram(values, bins=bins, range=STSB_RANGE)
    return {"edges": edges.tolist(), "counts": counts.tolist()}


def check_label_balance(split_labels_: np.ndarray, batch_labels: list, task: GlueTask, num_labels: int) -> CheckResult:
    """Label distribution of the batch and of the split; warn when one label dominates the split, or when the first
    batch's mix (a label missing, one label crowding it) is one a shuffled batch would rarely show. Some label of
    the split lies in range (the runner's "counted" need: data.label_range names the others).
    """
    max_chance = CHECK.value("max_chance")
    if task.regression:
        return _score_balance(split_labels_, batch_labels)
    classes = max(num_labels, task.num_labels)
    names = label_names_for(task, classes)
    split_counts = label_counts(split_labels_, classes)
    batch_counts = label_counts(np.asarray(batch_labels), classes)
    evidence = {"regression": False, "labels": names, "split_counts": split_counts, "batch_counts": batch_counts,
                "rows_scanned": int(len(split_labels_))}
    split_total, batch_total = sum(split_counts), sum(batch_counts)
    top = int(np.argmax(split_counts))
    top_share = split_counts[top] / split_total
    batch_top = int(np.argmax(batch_counts)) if batch_total else top
    batch_top_share = batch_counts[batch_top] / batch_total if batch_total else 0.0
    absent = [names[i] for i, count in enumerate(batch_counts) if count == 0 and split_counts[i] > 0]
    shares = ", ".join(f"{name} {count / split_total:.0%}" for name, count in zip(names, split_counts, strict=True))
    absent_share = sum(split_counts[i] for i, count in enumerate(batch_counts) if count == 0) / split_total
    chance_absent = chance_of_none(batch_total, absent_share) if absent else 1.0
    chance_crowded = chance_of_at_least(batch_counts[batch_top], batch_total, split_counts[batch_top] / split_total) \
        if batch_total else 1.0
    evidence["chance_absent"], evidence["chance_crowded"] = chance_absent, chance_crowded
    evidence.update(top_share=top_share, absent=absent,
                    mix_chance=min(chance_absent if absent else 1.0, chance_crowded))
    return judge(CHECK, evidence, top=top, batch_top=batch_top, batch_top_share=batch_top_share, shares=shares,
                 classes=classes, lacks_labels=bool(absent) and chance_absent < max_chance)


def _odds(chance: float) -> str:
    """1 / chance, to two significant figures, for a sentence ("1,200", "3,400,000")."""
    times = min(1.0 / max(chance, 1e-300), 1e15)
    return f"{float(f'{times:.2g}'):,.0f}"


def _score_balance(split_labels_: np.ndarray, batch_labels: list) -> CheckResult:
    """data.label_balance on regression scores: histograms of the split and the batch."""
    split_hist, batch_hist = score_histogram(split_labels_), score_histogram(np.asarray(batch_labels))
    evidence = {"regression": True, "split": split_hist, "batch": batch_hist, "rows_scanned": len(split_labels_)}
    total = sum(split_hist["counts"])
    top = int(np.argmax(split_hist["counts"])) if total else 0
    share = split_hist["counts"][top] / total if total else 0.0
    evidence["top_share"] = share
    return judge(CHECK, evidence, top=top, split_mean=np.nanmean(np.asarray(split_labels_, float)),
                 batch_mean=np.nanmean(np.asarray(batch_labels, float)))


def _scores(f) -> Any:
    """What data.label_balance says first of regression scores: the split's and the batch's mean."""
    return msg("Regression scores: split mean {split:.2f}, batch mean {batch:.2f} (see the histogram)",
               split=f.split_mean, batch=f.batch_mean)


def _dominant(e, f) -> tuple:
    """(finding, fix) for one label (or one bin of scores) that holds most of the split."""
    if e["regression"]:
        edges = e["split"]["edges"]
        return (msg("{summary}; {share:.0%} of the scores lie between {low:.1f} and {high:.1f}, so predicting that "
                    "range alone scores well.", summary=_scores(f), share=e["top_share"], low=edges[f.top],
                    high=edges[f.top + 1]),
                msg("Resample or weight rows across the score range."))
    return (msg("{label} makes up {share:.0%} of the split ({shares}): a model can score well by always predicting it.",
                label=e["labels"][f.top], share=e["top_share"], shares=f.shares),
            msg("Weight the loss by class (class_weight=...) or resample, and watch F1 rather than accuracy."))


def _mix(e, f) -> tuple:
    """(finding, fix) for a first batch whose label mix a shuffled batch would rarely show: labels of the split it
    lacks (`lacks_labels`), else its commonest label crowding it."""
    names, split_counts, batch_counts = e["labels"], e["split_counts"], e["batch_counts"]
    split_total, batch_total = sum(split_counts), sum(batch_counts)
    if f.lacks_labels:
        finding = msg("The first batch of {rows} rows has no {absent} although the split has them ({shares}); a "
                      "shuffled batch of that size misses them about once in {odds}: is the data shuffled?",
                      rows=batch_total, absent=", ".join(e["absent"]), shares=f.shares, odds=_odds(e["chance_absent"]))
    else:
        finding = msg("{label} makes up {share:.0%} of the first batch ({count} of {rows} rows) while the "
                      "split has {split:.0%} ({shares}); a shuffled batch of that size holds that many about "
                      "once in {odds}: is the data shuffled?",
                      label=names[f.batch_top], share=f.batch_top_share, count=batch_counts[f.batch_top],
                      rows=batch_total, split=split_counts[f.batch_top] / split_total, shares=f.shares,
                      odds=_odds(e["chance_crowded"]))
    return finding, "to_tf_dataset(..., shuffle=True)  # or prepare_tf_dataset(..., shuffle=True)"


def _balanced(e, f) -> Any:
    """What data.label_balance says when no label dominates and the batch's mix is a usual one."""
    if e["regression"]:
        return msg("{summary}.", summary=_scores(f))
    if sum(e["batch_counts"]):
        return msg("No label dominates the split ({shares}); the first batch holds {held} of {classes} labels, a mix "
                   "a shuffled batch shows often enough.", shares=f.shares, held=f.classes - len(e["absent"]),
                   classes=f.classes)
    return msg("No label dominates the split ({shares}); there is no first batch to compare with it (see data.batch).",
               shares=f.shares)


def measure(run: RunContext) -> CheckResult:
    return check_label_balance(split_labels(run.split), batch_labels(run), run.config.glue_task,
                               run.config.effective_num_labels)


class Evidence(TypedDict, total=False):
    """What data.label_balance puts in its evidence (the charts, tables and JSON report read it)."""

    labels: list[str]
    split_counts: list[int]
    batch_counts: list[int]
    regression: bool
    split: dict[str, list[float]]  # regression: histogram edges and counts
    batch: dict[str, list[float]]
    rows_scanned: int
    chance_absent: float  # how often a shuffled batch of this size lacks the labels this one lacks
    chance_crowded: float  # how often it holds as many of its commonest label
    mix_chance: float  # the rarer of the two that the batch shows (a label missing counts only when one is)
    absent: list[str]  # the labels the split has and the first batch lacks
    top_share: float  # the commonest label's (or score bin's) share of the split


CHECK = Check("data.label_balance", N_("the label balance of the batch and the split"), unit="labels",
              requires=("counted",), measure=measure, conditions=(
    Condition("warn_dominant_share", 0.8, "warn when one label (or one bin of scores) holds more "
                                          "than this share of the split", Above("top_share"), says=_dominant),
    Condition("max_chance", 1e-3, "warn when a shuffled batch of the first batch's size shows its label mix (a label "
                                  "missing, or one crowding it) less often than this (the exact binomial tail against "
                                  "the split's shares)", AtMost("mix_chance", below=True), says=_mix)),
              otherwise_says=_balanced, evidence=Evidence)
