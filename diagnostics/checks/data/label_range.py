"""data.label_range: labels lie in [0, num_labels) and among the task's classes (or the regression range)."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from typing import Any, TypedDict

import numpy as np

from diagnostics.checks.common import LABELS_STOP, row_numbers
from diagnostics.config.tasks import GlueTask, STSB_RANGE
from diagnostics.core.check import Cause, Check, Condition
from diagnostics.core.context import RunContext
from diagnostics.core.errors import InputError
from diagnostics.core.result import CheckResult, judge
from diagnostics.core.rules import Above, Holds
from diagnostics.i18n import N_, Text, joined, msg
from diagnostics.keras.batches import LABEL, LABEL_AS_WRITTEN, UNUSABLE_LABEL, invalid_labels, plain_label, split_labels


def _rows(indices) -> Text:
    """'row 8', 'rows 3, 17 and 4 more' for row indices of the split."""
    listed = row_numbers(indices)
    return msg("row {listed}", listed=listed) if len(indices) == 1 else msg("rows {listed}", listed=listed)


def check_label_range(
    split_labels_: np.ndarray, batch_labels: list, task: GlueTask, num_labels: int, split_name: str,
    written: list | None = None, *, loss: str = "internal", own_head: bool = False) -> CheckResult:
    """Every label lies among the task's classes when the task is known (regression: in 0..5), else in
    [0, num_labels). Labels the task has but a head built with fewer outputs cannot take are a finding of their own,
    which model.config's cause explains (the head, not the data). With the task not known, a label value far rarer
    than the others, which are balanced, is a warning.

    Args:
        written: each row's label as the file wrote it (where some could not be read as the task's labels), so
            the finding quotes the user's own values rather than the -2 the checks read.
        loss: the loss training computes (`RunConfig.loss`): what a label outside the range does depends on it
            (binary cross-entropy takes it as a target; a sparse cross-entropy has no output for it).
        own_head: the model is a Keras model with its own output layer, not a Transformers classifier: a fix
            grows that layer, not `num_labels`.
    """
    warn_rare_share = CHECK.value("warn_rare_share")
    classified = task.known and not task.regression
    classes = task.num_labels if classified else num_labels
    in_split = invalid_labels(split_labels_, task, classes)
    in_batch = invalid_labels(np.asarray(batch_labels), task, classes)
    valid = f"0..{STSB_RANGE[1]:g}" if task.regression else f"[0, {classes})"
    labels = np.asarray(split_labels_)
    beyond = np.flatnonzero((labels >= num_labels) & (labels < classes)) if classified and num_labels < classes \
        else np.asarray([], dtype=int)
    evidence = {
        "valid_range": valid,
        "num_labels": num_labels,
        "rows_scanned": int(len(split_labels_)),
        "split_invalid": [{"label": label, "count": count} for label, count in in_split.items()],
        "batch_invalid": [{"label": label, "count": count} for label, count in in_batch.items()],
        "batch_positions": [i for i, label in enumerate(batch_labels)
                            if (value := plain_label(np.asarray(label))) in in_batch
                            or (classified and isinstance(value, int) and num_labels <= value < classes)],
        "beyond_head": bool(len(beyond)),
        "beyond_head_rows": beyond[:50].tolist(),
        "binary_targets": loss == "binary_crossentropy",
        "own_head": own_head,
    }
    evidence["invalid_labels"] = sum(in_split.values()) + sum(in_batch.values())
    stray = None if evidence["invalid_labels"] or task.known or task.regression else \
        _stray_value(labels, warn_rare_share)
    if stray is not None:
        evidence["stray_rows"] = stray[1][:50].tolist()
    # What the labels outside the range are, found only when there are some (their first rows go into the evidence).
    outside = _outside(labels, in_split, task, num_labels, classes, written, evidence) \
        if evidence["invalid_labels"] else None
    return judge(CHECK, evidence, task=task, split=split_name, labels=labels, in_split=in_split, outside=outside,
                 beyond=beyond, stray=stray)


def _outside(labels: np.ndarray, in_split: dict, task: GlueTask, num_labels: int, limit: int, written: list | None,
             evidence: dict[str, Any]) -> dict[str, Any]:
    """What data.label_range's labels outside the range are: their `case` ("test_split": a test split's -1;
    "unusable": values that could not be read as the task's labels; "nan": missing scores; "scores": scores outside
    the range; "wider_head": labels of a head wider than the task; "not_the_tasks": labels the task lacks;
    "outputs": a head of too few outputs), their `rows` (the first 50 put in the evidence), the file's own `values`
    of unusable rows where they are known, and a `stray` value far rarer than the others the head lacks."""
    if set(in_split) == {-1} and in_split[-1] == len(labels):  # every row: a split without labels
        return {"case": "test_split"}
    if UNUSABLE_LABEL in in_split and not task.regression:
        rows = np.flatnonzero(labels == UNUSABLE_LABEL)
        evidence["unusable_rows"] = rows[:50].tolist()
        # Every row outside the range is named, the unusable ones and those holding a number the task lacks.
        others = [label for label in in_split if isinstance(label, (int, np.integer)) and label != UNUSABLE_LABEL]
        listed = np.flatnonzero((labels == UNUSABLE_LABEL) | np.isin(labels, others)) if others else rows
        if written is None:
            return {"case": "unusable", "rows": rows, "listed": listed, "values": None}
        values = Counter((written[row] or "").strip() for row in rows)
        evidence["unusable_values"] = [{"value": value, "count": count} for value, count in values.most_common(20)]
        return {"case": "unusable", "rows": rows, "listed": listed, "values": values}
    if task.regression and np.isnan(labels.astype(float)).any():
        rows = np.flatnonzero(np.isnan(labels.astype(float)))
        evidence["unusable_rows"] = rows[:50].tolist()
        return {"case": "nan", "rows": rows}
    if task.regression:
        return {"case": "scores"}
    if task.known and limit < num_labels and all(isinstance(label, int) and task.num_labels <= label < num_labels
                                                 for label in in_split):
        rows = np.flatnonzero((labels >= task.num_labels) & (labels < num_labels))
        evidence["rows"] = rows[:50].tolist()
        return {"case": "wider_head", "rows": rows}
    if task.known:
        rows = np.flatnonzero(np.isin(labels, [label for label in in_split if isinstance(label, (int, np.integer))]))
        evidence["rows"] = rows[:50].tolist()
        return {"case": "not_the_tasks", "rows": rows}
    needed = max(int(label) for label in in_split if isinstance(label, int)) + 1 if in_split else num_labels
    stray = _stray_value(labels, CHECK.value("warn_rare_share"))
    if needed > num_labels and stray is not None and stray[0] in in_split:
        # A value far rarer than the balanced classes the head has is more likely a stray than a class: a head
        # grown to take it would learn it as one from a handful of rows. Name the rows; the wider head is the
        # alternative for a value that is a real class.
        evidence["rows"] = stray[1][:50].tolist()
        return {"case": "outputs", "needed": needed, "stray": stray}
    return {"case": "outputs", "needed": needed, "stray": None}


def _out_of_range(e, f) -> tuple:
    """(finding, fix) of data.label_range for labels outside the range, naming what they are (`_outside`: a test
    split's -1, values that are not the task's labels, missing scores, a head wider than the task, or too few
    outputs)."""
    task, labels, in_split, num_labels, valid = f.task, f.labels, f.in_split, e["num_labels"], e["valid_range"]
    case, rows = f.outside["case"], f.outside.get("rows")
    listing = ", ".join(f"{label} x{count:,}" for label, count in in_split.items())
    bad_total = sum(in_split.values())
    headline = msg("{bad:,} of {total:,} labels in split {split} lie outside {valid} ({listing})", bad=bad_total,
                   total=len(labels), split=repr(f.split), valid=valid, listing=listing)
    if case == "test_split":
        fix = msg(
            "Train and validate on splits with labels ('train', 'validation'): GLUE's test splits carry label -1."
        )
        cause = msg("label -1 means the split has no labels (a GLUE test split)")
    elif case == "unusable":
        headline, cause, fix = _unusable_labels(labels, task, f.split, valid, bad_total, rows, f.outside["values"],
                                                f.outside["listed"])
    elif case == "nan":
        fix = msg("Give every row a number from 0 to 5 as its score, or drop the rows without one.")
        headline = msg("{bad:,} of {total:,} scores in split {split} are empty or not numbers", bad=len(rows),
                       total=len(labels), split=repr(f.split))
        cause = msg("each reads as NaN, which makes every loss NaN ({rows})", rows=_rows(rows))
    elif case == "scores":
        fix = msg("Clip or drop scores outside {valid}, and load with num_labels=1.", valid=valid)
        cause = msg("scores outside STS-B's range")
    elif case == "wider_head":
        names = ", ".join(f"{index} {name}" for index, name in enumerate(task.label_names))
        fix = msg(
            "Drop or relabel these rows ({task}'s labels: {names}); then build the model with num_labels={count}.",
            task=task.name,
            names=names,
            count=task.num_labels,
        )
        cause = msg("{task} has {count} classes ({names}), but the model was built with num_labels={num_labels}, so it "
                    "trains them as a class of their own ({rows})", task=task.name, count=task.num_labels,
                    names=names, num_labels=num_labels, rows=_rows(rows))
    elif case == "not_the_tasks":
        names = ", ".join(f"{index} {name}" for index, name in enumerate(task.label_names))
        fix = msg("Drop or relabel these rows ({task}'s labels: {names}).", task=task.name, names=names)
        cause = msg("{task} has {count} classes ({names}), so {what} ({rows})", task=task.name,
                    count=task.num_labels, names=names, what=_what_they_do(e), rows=_rows(rows))
    else:
        needed, stray = f.outside["needed"], f.outside["stray"]
        head = f"TFAutoModelForSequenceClassification.from_pretrained(checkpoint, num_labels={needed})"
        fix = head if needed > num_labels else msg("Map the labels to 0..num_labels-1 before training.")
        cause = msg("the model has num_labels={num_labels}, so {what}", num_labels=num_labels, what=_what_they_do(e))
        if stray is not None:
            cause = msg("{cause}; label {value} is on only {count:,} rows ({share:.1%}; {rows}) while the "
                        "others are balanced ({shares})", cause=cause, value=stray[0], count=len(stray[1]),
                        share=len(stray[1]) / len(labels), rows=_rows(stray[1]), shares=stray[2])
            fix = msg("Drop or relabel these rows: {code}; if {value} is a real class, build the head for it "
                      "instead: {head}", code=f"dataset = dataset.filter(lambda row: row['label'] != {stray[0]})",
                      value=stray[0], head=head)
        if e["own_head"]:
            fix = _own_head_fix(e, in_split, needed, stray)
    return msg("{headline}: {cause}.", headline=headline, cause=cause), fix


def _own_head_fix(e, in_split: dict, needed: int, stray) -> Text:
    """The fix for labels beyond a Keras model's own output layer, in the objects the script has: rows to drop where
    it reads its labels (the checks read its batches back: no datasets split to filter), or that layer grown; a
    sigmoid output, which takes labels 0 and 1, is not told to grow first."""
    grow = msg("give the output layer {needed} units (Dense({needed}) with a softmax) and compile with "
               "sparse_categorical_crossentropy", needed=needed)
    values = ", ".join(str(label) for label in in_split)
    if e["binary_targets"]:
        return msg("Drop or relabel the rows labelled {values} where the script reads its labels: one sigmoid output "
                   "takes labels 0 and 1; if {values} is a real class, {grow}.", values=values, grow=grow)
    if stray is not None:
        return msg("Drop or relabel these rows where the script reads its labels; if {value} is a real class, "
                   "{grow}.", value=stray[0], grow=grow)
    return msg("Map the labels to 0..{last} where the script reads them, or {grow}.", last=e["num_labels"] - 1,
               grow=grow)


def _what_they_do(e) -> Text:
    """What training does with a label outside the range, under the loss it computes."""
    if e.get("binary_targets"):
        return msg("binary cross-entropy takes each as a target above 1: their loss stays finite (it can go below 0) "
                   "and pulls the output toward a value no probability reaches, with no error")
    return msg("these rows get a NaN loss on GPU and an error on CPU")


def _unusable_labels(labels: np.ndarray, task: GlueTask, split_name: str, valid: str, bad_total: int,
                     rows: np.ndarray, values: Counter | None, listed: np.ndarray) -> tuple[Text, Text, Text]:
    """(headline, cause, fix) of data.label_range for labels that could not be read as the task's (`rows`; `listed`:
    every row outside the range), quoting the file's own values when they are known."""
    names = ", ".join(task.label_names)
    fix = msg("Write each label as an id 0..{last} or one of {task}'s names ({names}), and drop rows without one.",
              last=task.num_labels - 1, task=task.name, names=names)
    headline = msg("{bad:,} of {total:,} labels in split {split} are not {task} labels{more}", bad=len(rows),
                   total=len(labels), split=repr(split_name), task=task.name,
                   more=msg(" and {count:,} more lie outside {valid}", count=bad_total - len(rows), valid=valid)
                   if bad_total > len(rows) else "")
    if values is None:
        return headline, msg("each is empty, not a whole number, or text that is not one of {task}'s names ({names}) "
                             "({rows}; the checks show them as {shown})", task=task.name, names=names,
                             rows=_rows(listed), shown=UNUSABLE_LABEL), fix
    quoted = joined([msg("{value} x{count:,}", value=repr(value), count=count) if value else
                     msg("(empty) x{count:,}", count=count) for value, count in values.most_common(6)], ", ")
    more = msg(" and {count:,} other values", count=len(values) - 6) if len(values) > 6 else ""
    return headline, msg("the file has {quoted}{more}, where {task} takes an id 0..{last} or one of its names "
                         "({names}) ({rows})", quoted=quoted, more=more, task=task.name,
                         last=task.num_labels - 1, names=names, rows=_rows(listed)), fix


def _beyond_head(e, f) -> tuple:
    """(finding, fix) for rows labelled with the task's classes that the head has no output for."""
    values = sorted({int(f.labels[row]) for row in f.beyond})
    return (msg("All {count:,} labels of split {split} are {task} labels, but {beyond:,} rows are labelled {values}, "
                "beyond the head's num_labels={num_labels} outputs ({rows}): the model has no output for them, "
                "so they get a NaN loss on GPU and an error on CPU.", count=len(f.labels), split=repr(f.split),
                task=f.task.name, beyond=len(f.beyond), values=", ".join(f"{value} {f.task.label_name(value)}"
                                                                         for value in values),
                num_labels=e["num_labels"], rows=_rows(f.beyond)),
            f.task.head_fix())


def _rare(e, f) -> tuple:
    """(finding, fix) for a label value far rarer than the others, which are balanced, on a task not known."""
    value, rows, shares = f.stray
    return (msg("All {count:,} labels lie in {valid}, but label {value} is on only {rows_count:,} rows ({share:.1%}; "
                "{rows}) while the others are balanced ({shares}): a stray value, or a class of its own? The "
                "task is not known, so this cannot be judged against its classes.", count=len(f.labels),
                valid=e["valid_range"], value=value, rows_count=len(rows), share=len(rows) / len(f.labels),
                rows=_rows(rows), shares=shares),
            msg("Give the task (--task, task=) to check the labels against its classes, or drop or relabel "
                "these rows."))


def _stray_value(labels: np.ndarray, rare_share: float):
    """(value, its rows, the shares in words) for one label value far rarer than the others while those are balanced
    (within 2x of each other); None otherwise."""
    values = labels[labels >= 0] if np.issubdtype(labels.dtype, np.number) else labels
    found, counts = np.unique(values, return_counts=True)
    if len(found) < 3:
        return None
    order = np.argsort(counts)
    rarest, others = order[0], counts[order[1:]]
    if counts[rarest] >= rare_share * others.mean() or others.min() * 2 < others.max():
        return None
    shares = ", ".join(
        f"{plain_label(value)} {count / len(values):.0%}" for value, count in zip(found, counts, strict=True)
    )
    return plain_label(found[rarest]), np.flatnonzero(labels == found[rarest]), shares


def batch_labels(run: RunContext) -> list:
    """The first batch's labels when it builds, else none (its problems are data.batch's finding)."""
    built = not run.missing_columns and not run.text_problems and run.batch_exception is None
    return run.first_batch.rows[LABEL] if built else []


def measure(run: RunContext) -> CheckResult:
    config, split = run.config, run.split
    written = split[LABEL_AS_WRITTEN] if LABEL_AS_WRITTEN in split.column_names else None
    from diagnostics.keras.keras_model import is_transformers_classifier

    model = None
    if config.data_source == "code":  # the user's own model, already built (nothing is loaded for it)
        try:
            model = run.classifier[0]
        except InputError:  # the code stopped before it built one
            model = None
    return check_label_range(split_labels(split), batch_labels(run), config.glue_task, config.effective_num_labels,
                             config.split, written, loss=config.loss,
                             own_head=model is not None and not is_transformers_classifier(model))


class Evidence(TypedDict, total=False):
    """What data.label_range puts in its evidence (the charts, tables and JSON report read it)."""

    batch_invalid: dict[str, int]
    batch_positions: list[int]
    num_labels: int
    rows_scanned: int
    split_invalid: dict[str, int]
    valid_range: list[float]
    count: int
    label: Any
    rows: list[int]  # rows whose label is not one of the known task's classes (the first 50)
    stray_rows: list[int]  # task not known: the rows of a label value far rarer than the others
    invalid_labels: int  # labels outside the range, in the split and in the first batch
    beyond_head: bool  # rows hold labels of the task that the head has no output for (num_labels below its classes)
    beyond_head_rows: list[int]  # those rows (the first 50)
    binary_targets: bool  # the loss is binary cross-entropy, which takes a label outside the range as its target
    own_head: bool  # a Keras model with its own output layer (a fix grows that layer, not num_labels)


CHECK = Check("data.label_range", N_("labels lie in [0, num_labels) and among the task's classes (or the regression "
                                     "range)"), unit="labels", measure=measure, conditions=(
    Condition("max_invalid_labels", 0, "fail when more labels than this, of the split or the first batch, lie outside "
                                       "the task's classes (the range, for a task not known)", Above("invalid_labels"),
              status="fail", says=_out_of_range),
    Condition("labels_beyond_head", None, "fail when rows hold labels of the task that the head has no output for "
                                          "(num_labels below the task's classes: model.config's cause)",
              Holds("beyond_head"), status="fail", says=_beyond_head),
    Condition("warn_rare_share", 0.25, "task not known: warn when a label value's share is below this fraction of the "
                                       "other values' mean share, those being within 2x of each other (its rows are "
                                       "the stray rows)", Holds("stray_rows"), says=_rare)),
              otherwise_says=lambda e, f: msg("All {count:,} labels of the split lie in {valid}.",
                                              count=len(f.labels), valid=e["valid_range"]),
              evidence=Evidence)

# The causes this check owns, each with its precedence among every check's causes (`Cause.precedence`).
CAUSES = (
    # Labels the head cannot take stop what trains: on a page opened before the Data page, what stopped points here.
    Cause("stray_labels", "data.label_range", ("max_invalid_labels",), N_("labels outside the task's classes"),
          tuple(replace(explains, before_owner=True) for explains in LABELS_STOP), precedence=20),
)
