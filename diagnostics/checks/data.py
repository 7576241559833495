"""Data stage: the first batch exactly as `model.fit` would get it, and checks on the batch and the split."""

from __future__ import annotations

import math
import threading
from collections import Counter, OrderedDict
from typing import Any

import numpy as np
import pyarrow.compute as pc

from diagnostics.core.chance import chance_of_at_least, chance_of_none
from diagnostics.keras.batches import (COLLATOR_LABEL, LABEL, UNUSABLE_LABEL, FirstBatch, invalid_labels, label_names_for,
                                 plain_label, tokenize)
from diagnostics.config.tasks import STSB_RANGE, GlueTask
from diagnostics.i18n import N_, Text, joined, msg, msgn
from diagnostics.keras.internals import split_fingerprint
from diagnostics.core.registry import threshold
from diagnostics.core.result import CheckResult, judge

STAGE = "data"
# ---------------------------------------------------------------- data.columns


def check_columns(
    split_columns: list[str], task: GlueTask, batch: FirstBatch, model_input_names: list[str], *,
    read_back: bool = False
) -> CheckResult:
    """The task's text and label columns exist, and every column requested from `to_tf_dataset` does.

    Args:
        read_back: the batches are those of data given to fit, read back (no `to_tf_dataset` call to fix).
    """
    needed = list(task.text_columns) + [LABEL]
    missing_in_split = [column for column in needed if column not in split_columns]
    available = batch.available_columns
    requested = batch.requested_columns + (batch.label_columns or [])
    missing_requested = [column for column in requested if column not in available]
    # What leaving an input out costs: no attention mask, attention to padding; no segment ids, a sentence pair read
    # as one segment (a single sentence is segment 0 anyway). Other inputs default to what the model would build.
    costly = ["attention_mask"] + (["token_type_ids"] if len(task.text_columns) > 1 else [])
    left_out = [name for name in model_input_names if name not in batch.requested_columns and name in costly]
    evidence = {
        "split_columns": split_columns,
        "needed": needed,
        "requested": requested,
        "available_after_tokenizing": available,
        "missing": missing_in_split + missing_requested,
        "missing_in_split": missing_in_split,
        "missing_requested": missing_requested,
        "model_inputs_left_out": left_out,
    }
    suggested = list(model_input_names) + [LABEL]
    return judge("data.columns", evidence, {
        "missing_columns": lambda: (
            msg("The split lacks {missing}: {task} needs {needed}; it has: {found}.", missing=", ".join(missing_in_split),
                task=task.name, needed=", ".join(needed), found=", ".join(split_columns)),
            f"dataset = dataset.rename_column('<your column>', '{missing_in_split[0]}')"),
        "missing_requested": (
            msg("to_tf_dataset asks for {missing}, which does not exist; the tokenized split has: {found}.",
                missing=", ".join(missing_requested), found=", ".join(available)),
            f"to_tf_dataset(columns={suggested!r}, collate_fn=DataCollatorWithPadding(tokenizer, return_tensors='np'), "
            "...)"),
        "inputs_left_out": lambda: (
            msg("{what} leaves out {costs}.", what=msg("columns=") if not read_back else msg("The data given to fit"),
                costs=joined([msg("attention_mask, so the model attends to padding") if name == "attention_mask" else
                              msg("token_type_ids, so both sentences of each pair read as the first segment")
                              for name in left_out], "; ")),
            f"to_tf_dataset(columns={suggested!r}, ...)" if not read_back else
            msg("Give the model every input the tokenizer returns for it: {names}.", names=", ".join(model_input_names))),
    }, msg("All {count} requested columns exist ({columns}), and the split has every column {task} needs.",
           count=len(requested), columns=", ".join(requested), task=task.name))


def missing_columns_result(split_columns: list[str], task: GlueTask, missing: list[str]) -> CheckResult:
    """data.columns when the split lacks some of the task's columns, with what the file's shape suggests: another
    delimiter (one column whose name holds the others), or no header row (the first row read as names)."""
    needed = list(task.text_columns) + [LABEL]
    hint: Any = ""
    joined = next(((name, mark) for name in split_columns for mark in (";", ",", "\t", "|")
                   if sum(column in name for column in needed) >= 2 and mark in name), None)
    if joined:
        hint = msg(" The file was read as if its columns were not split: the column {column} holds the names, so it "
                   "separates them with {mark}; write it as csv (commas) or tsv (tabs).", column=repr(joined[0]),
                   mark=repr(joined[1]))
    elif not set(needed) & set(split_columns) and any(" " in name or name.strip().lstrip("-").replace(".", "").isdigit()
                                                       for name in split_columns):
        hint = msg(" Its first row looks like data, not a header: the file needs a header row naming {needed}.",
                   needed=", ".join(needed))
    return judge("data.columns", {"split_columns": split_columns, "needed": needed, "missing_in_split": missing}, {
        "missing_columns": (
            msg("The split lacks {missing}: {task} needs {needed}; it has: {found}.{hint}", missing=", ".join(missing),
                task=task.name, needed=", ".join(needed), found=", ".join(split_columns), hint=hint),
            f"dataset = dataset.rename_column('<your column>', '{missing[0]}')")}, "")


def check_text_cells(problems: dict[str, dict[str, list]], task: GlueTask, rows: int) -> CheckResult:
    """data.columns when the task's text columns exist but some cells are empty or not text (the tokenizer would
    stop on the first of them), naming the rows."""
    parts = []
    for column, found in problems.items():
        if found["empty"]:
            parts.append(msgn("{column} is empty in {count:,} row (row {rows})",
                              "{column} is empty in {count:,} rows (rows {rows})", len(found["empty"]), column=column,
                              rows=_rows(found["empty"])))
        if found["not_text"]:
            parts.append(msgn("{column} holds a value that is not text in {count:,} row (row {rows}, e.g. {examples})",
                              "{column} holds values that are not text in {count:,} rows (rows {rows}, e.g. "
                              "{examples})", len(found["not_text"]), column=column, rows=_rows(found["not_text"]),
                              examples=", ".join(found["examples"])))
    columns = list(task.text_columns)
    return judge("data.columns", {"text_cells": problems, "rows_scanned": rows}, {"bad_text_cells": (
        msg("{problems}, of {total:,} rows: the tokenizer needs text in every row's {columns}.",
            problems=joined(parts, "; "), total=rows, columns=", ".join(columns)),
        f"dataset = dataset.filter(lambda row: all(isinstance(row[c], str) and row[c].strip() for c in {columns!r}))")},
        "")


# ---------------------------------------------------------------- data.batch


def describe_batch(tf_batch) -> dict[str, Any]:
    """Keys, shapes and dtypes of a batch, and where its labels are."""
    if isinstance(tf_batch, tuple):
        inputs, labels = tf_batch
        entries = [_entry(key, value, "inputs") for key, value in inputs.items()]
        if isinstance(labels, dict):
            entries += [_entry(key, value, "y") for key, value in labels.items()]
        else:
            entries.append(_entry(LABEL, labels, "y"))
        return {"entries": entries, "labels_at": "separate", "rows": int(entries[0]["shape"][0])}
    entries = [_entry(key, value, "inputs") for key, value in tf_batch.items()]
    labels_at = "inputs" if COLLATOR_LABEL in tf_batch or LABEL in tf_batch else "none"
    return {"entries": entries, "labels_at": labels_at, "rows": int(entries[0]["shape"][0])}


def _entry(key: str, value, where: str) -> dict[str, Any]:
    return {"key": key, "shape": list(value.shape), "dtype": value.dtype.name, "in": where}


LABELS_AT_TEXT = {
    "inputs": N_("labels are inside the input dict (the model's internal loss will use them)"),
    "separate": N_("labels are separate, as Keras (x, y) (compile(loss=...) will use them)"),
    "none": N_("the batch has no labels at all"),
}


def check_batch(batch: FirstBatch, batch_size: int) -> CheckResult:
    """Keys, shapes and dtypes of the first batch, and where the labels are."""
    if batch.error:
        return judge("data.batch", {"error": batch.error, "requested": batch.requested_columns,
                                    "label_cols": batch.label_columns}, {"batch_raises": (
            msg("to_tf_dataset could not produce a batch: {error}.", error=batch.error.rstrip(".!")),
            batch.error_fix or "to_tf_dataset(columns=[...existing columns...], "
            "collate_fn=DataCollatorWithPadding(tokenizer, return_tensors='np'), batch_size=...)")}, "")
    described = describe_batch(batch.tf_batch)
    shapes = ", ".join(f"{e['key']} {tuple(e['shape'])} {e['dtype']}" for e in described["entries"])
    labels_at = LABELS_AT_TEXT[described["labels_at"]]
    summary = msg("The first batch holds {rows} rows: {shapes}; {labels}.", rows=described["rows"], shapes=shapes,
                  labels=msg(labels_at))
    evidence = {**described, "no_labels": described["labels_at"] == "none",
                "batch_fill": described["rows"] / batch_size if batch_size else 1.0}
    return judge("data.batch", evidence, {
        "no_labels": (summary, "to_tf_dataset(columns=[..., 'label'], ...)  # or label_cols=['label'] for Keras (x, y)"),
        "min_batch_fill": (msg("{summary} The split has fewer rows than the batch size {batch_size}.", summary=summary,
                               batch_size=batch_size), f"batch_size={described['rows']}  # or use a larger split"),
    }, summary)


# ---------------------------------------------------------------- data.decoded_samples


def check_decoded_samples(rows: list[dict[str, Any]], not_prose: dict[str, dict] | None = None, *,
                          warn_unknown_share: float = threshold("data.decoded_samples", "warn_unknown_share"),
                          warn_not_prose_share: float = threshold("data.decoded_samples", "warn_not_prose_share")
                          ) -> CheckResult:
    """The decoded batch reads as text: few unknown tokens; and the split's text columns hold words.

    Args:
        rows: from `decoded_rows`.
        not_prose: `batches.not_prose` of the split (per text column, the cells with no words).
        warn_unknown_share: share of [UNK] tokens above which the tokenizer does not fit the text.
        warn_not_prose_share: share of a text column's cells with no words (digits or punctuation only, one word
            repeated) above which the column is not the text the task reads.
    """
    tokens = sum(row["tokens"] for row in rows)
    unknown = sum(row["unknown_tokens"] for row in rows)
    share = unknown / tokens if tokens else 0.0
    not_prose = not_prose or {}
    worst = max(not_prose, key=lambda column: not_prose[column]["share"], default=None)
    evidence = {"rows": rows, "unknown_share": share, "not_prose": not_prose,
                "not_prose_share": not_prose[worst]["share"] if worst else 0.0}
    return judge("data.decoded_samples", evidence, {
        "warn_not_prose_share": lambda: (
            msg("{share:.0%} of {column}'s cells hold no words ({count:,} of the {scanned:,} rows scanned, e.g. rows "
                "{rows}: {examples}): digits or punctuation only, or one word repeated. The model reads this column "
                "as the task's text.", share=not_prose[worst]["share"], column=worst, count=not_prose[worst]["count"],
                scanned=not_prose[worst]["scanned"], rows=_rows(not_prose[worst]["rows"], 5),
                examples=", ".join(repr(example) for example in not_prose[worst]["examples"])),
            f"dataset = dataset.rename_column('<the column with the sentences>', '{worst}')  # after dropping the "
            f"wrong '{worst}'"),
        "warn_unknown_share": (
            msg("{share:.0%} of the batch's tokens are unknown ({unknown} of {tokens}): the tokenizer does not fit "
                "this text.", share=share, unknown=unknown, tokens=tokens),
            msg("Load the tokenizer from the same checkpoint as the model: {code}",
                code="AutoTokenizer.from_pretrained(checkpoint)")),
    }, msg("{rows} rows decode to readable text; {unknown} of {tokens} tokens are unknown. Read them beside their "
           "labels.", rows=len(rows), unknown=unknown, tokens=tokens),
        thresholds={"warn_unknown_share": warn_unknown_share, "warn_not_prose_share": warn_not_prose_share})


# ---------------------------------------------------------------- data.label_range


def _rows(indices, shown: int = 10) -> str:
    """'3, 17 and 4 more' for row indices of the split."""
    listed = ", ".join(str(int(index)) for index in indices[:shown])
    return msg("{listed} and {count:,} more", listed=listed, count=len(indices) - shown) if len(indices) > shown \
        else listed


def check_label_range(
    split_labels_: np.ndarray, batch_labels: list, task: GlueTask, num_labels: int, split_name: str,
    written: list | None = None, *,
    warn_rare_share: float = threshold("data.label_range", "warn_rare_share"),
) -> CheckResult:
    """Every label lies among the task's classes when the task is known (regression: in 0..5), else in
    [0, num_labels). Labels the task has but a head built with fewer outputs cannot take are a finding of their own,
    which model.config's cause explains (the head, not the data). With the task not known, a label value far rarer
    than the others, which are balanced, is a warning.

    Args:
        written: each row's label as the file wrote it (where some could not be read as the task's labels), so
            the finding quotes the user's own values rather than the -2 the checks read.
        warn_rare_share: with the task not known, a value whose share is below this fraction of the other values'
            mean share (theirs within 2x of each other) is called stray.
    """
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
    }
    evidence["invalid_labels"] = sum(in_split.values()) + sum(in_batch.values())
    stray = None if evidence["invalid_labels"] or task.known or task.regression else \
        _stray_value(labels, warn_rare_share)
    if stray is not None:
        evidence["stray_rows"] = stray[1][:50].tolist()
    values = sorted({int(labels[row]) for row in beyond})
    return judge("data.label_range", evidence, {
        "max_invalid_labels": lambda: _out_of_range(split_labels_, in_split, task, num_labels, classes, split_name,
                                                    valid, written, evidence),
        "labels_beyond_head": lambda: (
            msg("All {count:,} labels of split {split} are {task} labels, but {beyond:,} rows are labelled {values}, "
                "beyond the head's num_labels={num_labels} outputs (rows {rows}): the model has no output for them, "
                "so they get a NaN loss on GPU and an error on CPU.", count=len(labels), split=repr(split_name),
                task=task.name, beyond=len(beyond), values=", ".join(f"{value} {task.label_name(value)}"
                                                                    for value in values),
                num_labels=num_labels, rows=_rows(beyond)),
            task.head_fix()),
        "warn_rare_share": lambda: (
            msg("All {count:,} labels lie in {valid}, but label {value} is on only {rows_count:,} rows ({share:.1%}; "
                "rows {rows}) while the others are balanced ({shares}): a stray value, or a class of its own? The "
                "task is not known, so this cannot be judged against its classes.", count=len(split_labels_),
                valid=valid, value=stray[0], rows_count=len(stray[1]), share=len(stray[1]) / len(split_labels_),
                rows=_rows(stray[1]), shares=stray[2]),
            msg("Give the task (--task, task=) to check the labels against its classes, or drop or relabel "
                "these rows.")),
    }, msg("All {count:,} labels of the split lie in {valid}.", count=len(split_labels_), valid=valid),
        thresholds={"warn_rare_share": warn_rare_share})


def _out_of_range(split_labels_: np.ndarray, in_split: dict, task: GlueTask, num_labels: int, limit: int,
                  split_name: str, valid: str, written: list | None, evidence: dict[str, Any]) -> tuple[Text, Any]:
    """(finding, fix) of data.label_range for labels outside the range, naming what they are (a test split's -1,
    values that are not the task's labels, missing scores, a head wider than the task, or too few outputs)."""
    listing = ", ".join(f"{label} x{count:,}" for label, count in in_split.items())
    bad_total = sum(in_split.values())
    labels = np.asarray(split_labels_)
    headline = msg("{bad:,} of {total:,} labels in split {split} lie outside {valid} ({listing})", bad=bad_total,
                   total=len(split_labels_), split=repr(split_name), valid=valid, listing=listing)
    if -1 in in_split:
        fix = msg("Train and validate on splits with labels ('train', 'validation'): GLUE's test splits carry label -1.")
        cause = msg("label -1 means the split has no labels (a GLUE test split)")
    elif UNUSABLE_LABEL in in_split and not task.regression:
        headline, cause, fix = _unusable_labels(labels, task, split_name, valid, bad_total, written, evidence)
    elif task.regression and np.isnan(labels.astype(float)).any():
        rows = np.flatnonzero(np.isnan(labels.astype(float)))
        evidence["unusable_rows"] = rows[:50].tolist()
        fix = msg("Give every row a number from 0 to 5 as its score, or drop the rows without one.")
        headline = msg("{bad:,} of {total:,} scores in split {split} are empty or not numbers", bad=len(rows),
                       total=len(split_labels_), split=repr(split_name))
        cause = msg("each reads as NaN, which makes every loss NaN (rows {rows})", rows=_rows(rows))
    elif task.regression:
        fix = msg("Clip or drop scores outside {valid}, and load with num_labels=1.", valid=valid)
        cause = msg("scores outside STS-B's range")
    elif task.known and limit < num_labels and all(isinstance(label, int) and task.num_labels <= label < num_labels
                                                     for label in in_split):
        rows = np.flatnonzero((labels >= task.num_labels) & (labels < num_labels))
        evidence["rows"] = rows[:50].tolist()
        names = ", ".join(f"{index} {name}" for index, name in enumerate(task.label_names))
        fix = msg("Drop or relabel these rows ({task}'s labels: {names}); then build the model with num_labels={count}.",
                  task=task.name, names=names, count=task.num_labels)
        cause = msg("{task} has {count} classes ({names}), but the model was built with num_labels={num_labels}, so it "
                    "trains them as a class of their own (rows {rows})", task=task.name, count=task.num_labels,
                    names=names, num_labels=num_labels, rows=_rows(rows))
    elif task.known:
        names = ", ".join(f"{index} {name}" for index, name in enumerate(task.label_names))
        rows = np.flatnonzero(np.isin(labels, [label for label in in_split if isinstance(label, (int, np.integer))]))
        evidence["rows"] = rows[:50].tolist()
        fix = msg("Drop or relabel these rows ({task}'s labels: {names}).", task=task.name, names=names)
        cause = msg("{task} has {count} classes ({names}), so these rows get a NaN loss on GPU and an error on CPU "
                    "(rows {rows})", task=task.name, count=task.num_labels, names=names, rows=_rows(rows))
    else:
        needed = max(int(label) for label in in_split if isinstance(label, int)) + 1 if in_split else num_labels
        fix = (f"TFAutoModelForSequenceClassification.from_pretrained(checkpoint, num_labels={needed})"
               if needed > num_labels else msg("Map the labels to 0..num_labels-1 before training."))
        cause = msg("the model has num_labels={num_labels}, so these rows get a NaN loss on GPU and an error on CPU",
                    num_labels=num_labels)
    return msg("{headline}: {cause}.", headline=headline, cause=cause), fix


def _unusable_labels(labels: np.ndarray, task: GlueTask, split_name: str, valid: str, bad_total: int,
                     written: list | None, evidence: dict[str, Any]) -> tuple[Text, Text, Text]:
    """(headline, cause, fix) of data.label_range for labels that could not be read as the task's, quoting the
    file's own values when they are known."""
    rows = np.flatnonzero(labels == UNUSABLE_LABEL)
    evidence["unusable_rows"] = rows[:50].tolist()
    names = ", ".join(task.label_names)
    fix = msg("Write each label as an id 0..{last} or one of {task}'s names ({names}), and drop rows without one.",
              last=task.num_labels - 1, task=task.name, names=names)
    headline = msg("{bad:,} of {total:,} labels in split {split} are not {task} labels{more}", bad=len(rows),
                   total=len(labels), split=repr(split_name), task=task.name,
                   more=msg(" and {count:,} more lie outside {valid}", count=bad_total - len(rows), valid=valid)
                   if bad_total > len(rows) else "")
    if written is None:
        return headline, msg("each is empty, not a whole number, or text that is not one of {task}'s names ({names}) "
                             "(rows {rows}; the checks show them as {shown})", task=task.name, names=names,
                             rows=_rows(rows), shown=UNUSABLE_LABEL), fix
    values = Counter((written[row] or "").strip() for row in rows)
    evidence["unusable_values"] = [{"value": value, "count": count} for value, count in values.most_common(20)]
    quoted = joined([msg("{value} x{count:,}", value=repr(value), count=count) if value else
                     msg("(empty) x{count:,}", count=count) for value, count in values.most_common(6)], ", ")
    more = msg(" and {count:,} other values", count=len(values) - 6) if len(values) > 6 else ""
    return headline, msg("the file has {quoted}{more}, where {task} takes an id 0..{last} or one of its names "
                         "({names}) (rows {rows})", quoted=quoted, more=more, task=task.name,
                         last=task.num_labels - 1, names=names, rows=_rows(rows)), fix


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
    shares = ", ".join(f"{plain_label(value)} {count / len(values):.0%}" for value, count in zip(found, counts))
    return plain_label(found[rarest]), np.flatnonzero(labels == found[rarest]), shares


# ---------------------------------------------------------------- data.label_balance


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


def check_label_balance(split_labels_: np.ndarray, batch_labels: list, task: GlueTask, num_labels: int, *,
                        warn_dominant_share: float = threshold("data.label_balance", "warn_dominant_share"),
                        max_chance: float = threshold("data.label_balance", "max_chance")) -> CheckResult:
    """Label distribution of the batch and of the split; warn when one label dominates the split, or when the first
    batch's mix (a label missing, one label crowding it) is one a shuffled batch would rarely show. Some label of
    the split lies in range (the runner's "counted" need: data.label_range names the others).

    Args:
        warn_dominant_share: share of the split above which one label dominates.
        max_chance: how rare the batch's mix must be, drawn at random from the split's shares, to be a warning.
    """
    if task.regression:
        return _score_balance(split_labels_, batch_labels, warn_dominant_share)
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
    shares = ", ".join(f"{name} {count / split_total:.0%}" for name, count in zip(names, split_counts))
    absent_share = sum(split_counts[i] for i, count in enumerate(batch_counts) if count == 0) / split_total
    chance_absent = chance_of_none(batch_total, absent_share) if absent else 1.0
    chance_crowded = chance_of_at_least(batch_counts[batch_top], batch_total, split_counts[batch_top] / split_total) \
        if batch_total else 1.0
    evidence["chance_absent"], evidence["chance_crowded"] = chance_absent, chance_crowded
    evidence.update(top_share=top_share, absent=absent,
                    mix_chance=min(chance_absent if absent else 1.0, chance_crowded))
    reshuffle = "to_tf_dataset(..., shuffle=True)  # or prepare_tf_dataset(..., shuffle=True)"
    mix = (msg("The first batch of {rows} rows has no {absent} although the split has them ({shares}); a shuffled "
               "batch of that size misses them about once in {odds}: is the data shuffled?",
               rows=batch_total, absent=", ".join(absent), shares=shares, odds=_odds(chance_absent))
           if absent and chance_absent < max_chance else
           msg("{label} makes up {share:.0%} of the first batch ({count} of {rows} rows) while the split has {split:.0%} "
               "({shares}); a shuffled batch of that size holds that many about once in {odds}: is the data shuffled?",
               label=names[batch_top], share=batch_top_share, count=batch_counts[batch_top], rows=batch_total,
               split=split_counts[batch_top] / split_total, shares=shares, odds=_odds(chance_crowded)))
    return judge("data.label_balance", evidence, {
        "warn_dominant_share": (
            msg("{label} makes up {share:.0%} of the split ({shares}): a model can score well by always predicting it.",
                label=names[top], share=top_share, shares=shares),
            msg("Weight the loss by class (class_weight=...) or resample, and watch F1 rather than accuracy.")),
        "max_chance": (mix, reshuffle),
    }, msg("No label dominates the split ({shares}); the first batch holds {held} of {classes} labels, a mix a "
           "shuffled batch shows often enough.", shares=shares, held=classes - len(absent), classes=classes)
       if batch_total else msg("No label dominates the split ({shares}); there is no first batch to compare with it "
                               "(see data.batch).", shares=shares),
       thresholds={"warn_dominant_share": warn_dominant_share, "max_chance": max_chance})


def _odds(chance: float) -> str:
    """1 / chance, to two significant figures, for a sentence ("1,200", "3,400,000")."""
    times = min(1.0 / max(chance, 1e-300), 1e15)
    return f"{float(f'{times:.2g}'):,.0f}"


def _score_balance(split_labels_: np.ndarray, batch_labels: list, warn_dominant_share: float) -> CheckResult:
    """data.label_balance on regression scores: histograms of the split and the batch."""
    split_hist, batch_hist = score_histogram(split_labels_), score_histogram(np.asarray(batch_labels))
    evidence = {"regression": True, "split": split_hist, "batch": batch_hist, "rows_scanned": len(split_labels_)}
    total = sum(split_hist["counts"])
    top = int(np.argmax(split_hist["counts"])) if total else 0
    share = split_hist["counts"][top] / total if total else 0.0
    edges = split_hist["edges"]
    summary = msg("Regression scores: split mean {split:.2f}, batch mean {batch:.2f} (see the histogram)",
                  split=np.nanmean(np.asarray(split_labels_, float)), batch=np.nanmean(np.asarray(batch_labels, float)))
    evidence["top_share"] = share
    return judge("data.label_balance", evidence, {"warn_dominant_share": (
        msg("{summary}; {share:.0%} of the scores lie between {low:.1f} and {high:.1f}, so predicting that range "
            "alone scores well.", summary=summary, share=share, low=edges[top], high=edges[top + 1]),
        msg("Resample or weight rows across the score range."))},
        msg("{summary}.", summary=summary), thresholds={"warn_dominant_share": warn_dominant_share})


# ---------------------------------------------------------------- data.baselines


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


def check_baselines(labels: np.ndarray, task: GlueTask, num_labels: int, *,
                    warn_majority_accuracy: float = threshold("data.baselines", "warn_majority_accuracy")) -> CheckResult:
    """What a model that learned nothing scores, to read the training curves against (some label of the split lies
    in range: the runner's "counted" need).

    Args:
        warn_majority_accuracy: majority-label accuracy above which accuracy is a misleading metric.
    """
    figures = baseline_figures(labels, task, num_labels)
    thresholds = {"warn_majority_accuracy": warn_majority_accuracy}
    if task.regression:
        return judge("data.baselines", figures, {"constant_scores": (
            msg("Every score is {mean:.2f}: there is nothing to learn, and any model that outputs it is perfect.",
                mean=figures["mean"]),
            msg("Check that the label column was read correctly (e.g. not filled with a default)."))},
            msg("Always predicting the mean score {mean:.2f} gives a mean squared error of {mse:.3f}; a model that "
                "learns must go below it.", mean=figures["mean"], mse=figures["mean_predictor_mse"]),
            thresholds=thresholds)
    majority = task.label_name(figures["majority_label"])
    summary = msg("Random guessing among the {classes} classes gives loss ln({classes}) = {loss:.3f} and accuracy "
                  "{accuracy:.0%}; always predicting {majority} gives accuracy {majority_accuracy:.0%} (loss "
                  "{prior_loss:.3f} with the label frequencies).", classes=figures["classes"], loss=figures["uniform_loss"],
                  accuracy=figures["uniform_accuracy"], majority=majority,
                  majority_accuracy=figures["majority_accuracy"], prior_loss=figures["prior_loss"])
    return judge("data.baselines", figures, {"warn_majority_accuracy": (
        msg("{summary} High accuracy alone will not show that the model learned anything.", summary=summary),
        msg("Track loss and F1 (or per-class recall) instead of accuracy alone."))}, summary, thresholds=thresholds)


# ---------------------------------------------------------------- data.truncation


# Rows of a user's split re-tokenized to see what their truncation cut (a tokenizer pass over this many takes a second).
TRUNCATION_ROWS = 5000


def users_truncation(split, tokenizer, task: GlueTask, limit: int = TRUNCATION_ROWS, *,
                     max_length: int | None = None, source: str = "unknown") -> dict[str, Any] | None:
    """What the user's own tokenization cut: the split's raw text re-tokenized without truncation against the token ids
    the user's code stored (its first `limit` rows); None when the split lacks either.

    Args:
        max_length / source: the length the user's tokenizer call truncates at and where it comes from
            (`RunConfig.truncation`: "call", "model"); for "none" or "unknown", the longest row stored stands for it.
    """
    if "input_ids" not in split.column_names or not all(column in split.column_names for column in task.text_columns):
        return None
    rows = split.select(range(min(len(split), limit))).to_dict()
    stored = np.asarray([len(ids) for ids in rows["input_ids"]])
    full = np.asarray([len(ids) for ids in tokenize(tokenizer, task, rows, None)["input_ids"]])
    cut = np.flatnonzero(full > stored)
    measured = source in ("call", "model") and max_length
    return {"rows": int(len(stored)), "truncated": int(len(cut)), "truncated_rows": cut[:50].tolist(),
            "cut_at": int(max_length) if measured else int(stored.max()) if len(stored) else 0,
            "cut_source": source if measured else "unknown" if len(cut) else source,
            "longest": int(full.max()) if len(full) else 0}


def truncation_figures(batch: FirstBatch, max_length: int, split_cut: dict[str, Any] | None = None, *,
                       unmeasured: bool = False) -> dict[str, Any]:
    """Share of rows cut at max_length and share of padding in the padded batch; with `split_cut`
    (`users_truncation`), the rows the user's own tokenization cut across the split decide; `unmeasured`: the
    user's rows have no raw text to re-tokenize, so only the padding is measured."""
    lengths = np.asarray(batch.full_lengths)
    kept = np.asarray([len(ids) for ids in batch.input_ids])
    longest = int(kept.max()) if len(kept) else 0
    width = max(_batch_width(batch) or longest, longest)  # the batch as the pipeline builds it, padding included
    padded = width * len(kept)
    padding = {"padding_share": float(1 - kept.sum() / padded) if padded else 0.0, "padded_length": width,
               "fixed_padding": width > longest}
    if unmeasured:
        return {"max_length": max_length, "rows": int(len(lengths)), "truncated_rows": None, "truncated_share": None,
                "lengths": lengths.tolist(), "scope": "unmeasured", **padding}
    if split_cut is not None:
        return {"max_length": split_cut["cut_at"], "rows": split_cut["rows"], "truncated_rows": split_cut["truncated"],
                "truncated_share": split_cut["truncated"] / split_cut["rows"] if split_cut["rows"] else 0.0,
                "lengths": lengths.tolist(), "scope": "split", **padding,
                "cut_rows": split_cut["truncated_rows"], "longest": split_cut["longest"],
                "cut_source": split_cut["cut_source"]}
    return {
        "max_length": max_length,
        "rows": int(len(lengths)),
        "truncated_rows": int((lengths > max_length).sum()),
        "truncated_share": float((lengths > max_length).mean()) if len(lengths) else 0.0,
        "lengths": lengths.tolist(),
        **padding,
    }


def _batch_width(batch: FirstBatch) -> int | None:
    """The token width of the batch `fit` gets (its input_ids' second dimension), when it was built."""
    if batch.tf_batch is None:
        return None
    inputs = batch.tf_batch[0] if isinstance(batch.tf_batch, tuple) else batch.tf_batch
    ids = inputs.get("input_ids") if hasattr(inputs, "get") else None
    shape = getattr(ids, "shape", None)
    return int(shape[1]) if shape is not None and len(shape) == 2 else None


def check_truncation(figures: dict[str, Any], *,
                     warn_truncated_share: float = threshold("data.truncation", "warn_truncated_share"),
                     warn_padding_share: float = threshold("data.truncation", "warn_padding_share")) -> CheckResult:
    """Too many rows cut at max_length loses the text; too much padding wastes compute.

    Args:
        figures: from `truncation_figures`.
        warn_truncated_share: share of rows cut above which information is lost.
        warn_padding_share: share of padding tokens above which compute is wasted.
    """
    if figures.get("scope") == "split":
        # What the tokenization truncates at, as far as it was seen: the call's max_length, the tokenizer's maximum,
        # no truncation at all, or (no call seen) only the longest row it stored.
        at = {"call": msg(", which truncates at max_length={max_length} (your tokenizer call's)",
                          max_length=figures["max_length"]),
              "model": msg(", which truncates at {max_length} tokens (the tokenizer's maximum: truncation=True "
                           "without max_length)", max_length=figures["max_length"]),
              "none": msg(", which does not truncate (its longest row has {max_length} tokens)",
                          max_length=figures["max_length"])}.get(
            figures.get("cut_source"), msg(" (its tokenizer call was not seen; its longest stored row has {max_length} "
                                           "tokens)", max_length=figures["max_length"]))
        summary = msg("{cut:,} of {rows:,} rows of the split ({share:.0%}) lose tokens to your tokenization{at}, "
                      "measured by re-tokenizing their text without truncation{where}; padding is {padding:.0%} of "
                      "the padded batch ({length} tokens a row).", cut=figures["truncated_rows"],
                      rows=figures["rows"], share=figures["truncated_share"], at=at,
                      where=msg(" (first rows {rows})", rows=", ".join(map(str, figures["cut_rows"][:8])))
                      if figures["cut_rows"] else "",
                      padding=figures["padding_share"], length=figures["padded_length"])
    elif figures.get("scope") == "unmeasured":
        summary = msg("The split's raw text is not at hand (the rows were read back from the dataset given to fit), "
                      "so what truncation cut cannot be counted; padding is {padding:.0%} of the padded batch "
                      "({length} tokens a row).", padding=figures["padding_share"], length=figures["padded_length"])
    else:
        summary = msg("{cut} of {rows} rows ({share:.0%}) are cut at max_length={max_length}; padding is "
                      "{padding:.0%} of the padded batch ({length} tokens a row).", cut=figures["truncated_rows"],
                      rows=figures["rows"], share=figures["truncated_share"], max_length=figures["max_length"],
                      padding=figures["padding_share"], length=figures["padded_length"])
    longest = figures.get("longest") or (max(figures["lengths"]) if figures["lengths"] else 0)
    return judge("data.truncation", figures, {
        "warn_truncated_share": (msg("{summary} The model never sees the end of those rows.", summary=summary),
                                 f"tokenizer(..., truncation=True, max_length={min(longest, 512)})"),
        "warn_padding_share": (msg("{summary} Most of the compute goes to padding.", summary=summary),
                               msg("Pad per batch with DataCollatorWithPadding, not padding='max_length'; or group "
                                   "rows by length.")),
    }, summary, thresholds={"warn_truncated_share": warn_truncated_share, "warn_padding_share": warn_padding_share})


# ---------------------------------------------------------------- data.duplicates


_DUPLICATES_MEMO: "OrderedDict[tuple, dict[str, Any]]" = OrderedDict()
_DUPLICATES_LOCK = threading.Lock()


def duplicate_figures(split, task: GlueTask, *, examples: int = 5, cached: bool = True) -> dict[str, Any]:
    """Rows whose text repeats, and repeated texts that carry different labels.

    One hash group-by in Arrow over the text columns (no Python loop over rows). The figures depend
    only on the split, so they are kept per split fingerprint: changing num_labels, the batch size or
    anything else in the configuration never rescans the texts.

    Args:
        cached: False scans the texts even when this split was scanned before (a first scan, for the bench).
    """
    key = (split_fingerprint(split) or id(split), tuple(task.text_columns), examples)
    with _DUPLICATES_LOCK:  # sessions of the app scan in threads of their own
        if cached and key in _DUPLICATES_MEMO:
            _DUPLICATES_MEMO.move_to_end(key)
            return dict(_DUPLICATES_MEMO[key])
    keys = list(task.text_columns)
    table = split.data.table.select(keys + [LABEL])
    groups = table.group_by(keys, use_threads=True).aggregate([(LABEL, "count"), (LABEL, "count_distinct")])
    counts = groups.column(f"{LABEL}_count").to_numpy()
    distinct = groups.column(f"{LABEL}_count_distinct").to_numpy()
    conflicting_groups = groups.filter(pc.greater(groups.column(f"{LABEL}_count_distinct"), 1))
    shown = conflicting_groups.sort_by([(column, "ascending") for column in keys]).slice(0, examples).select(keys)
    sample = table.join(shown, keys=keys, join_type="inner").sort_by([(column, "ascending") for column in keys])
    figures = {
        "rows_scanned": int(table.num_rows),
        "duplicate_rows": int((counts - 1).sum()),
        "conflicting_rows": int(counts[distinct > 1].sum()),
        "conflict_examples": sample.slice(0, examples * 2).to_pylist(),
    }
    with _DUPLICATES_LOCK:
        _DUPLICATES_MEMO[key] = figures
        while len(_DUPLICATES_MEMO) > 16:
            _DUPLICATES_MEMO.popitem(last=False)
    return dict(figures)


def check_duplicates(figures: dict[str, Any], *,
                     max_conflicting_rows: int = threshold("data.duplicates", "max_conflicting_rows"),
                     warn_duplicate_share: float = threshold("data.duplicates", "warn_duplicate_share")) -> CheckResult:
    """The same text should not appear many times, nor with different labels.

    Args:
        figures: from `duplicate_figures`.
        max_conflicting_rows: rows sharing a text with a different label above which the split is warned about.
        warn_duplicate_share: share of repeated rows above which the split is warned about.
    """
    rows = figures["rows_scanned"]
    share = figures["duplicate_rows"] / rows if rows else 0.0
    summary = msg("{repeated:,} of {rows:,} rows repeat an earlier row's text ({share:.1%}); {conflicting:,} rows share "
                  "a text with a different label.", repeated=figures["duplicate_rows"], rows=rows, share=share,
                  conflicting=figures["conflicting_rows"])
    return judge("data.duplicates", figures, {
        "max_conflicting_rows": (msg("{summary} The model cannot fit both labels of the same text.", summary=summary),
                                 "dataset = dataset.filter(...)  # drop or relabel the conflicting rows shown"),
        "warn_duplicate_share": (msg("{summary} Repeats inflate some examples' weight.", summary=summary),
                                 msg("Drop duplicates before tokenizing (e.g. with pandas drop_duplicates on the text "
                                     "columns).")),
    }, summary, thresholds={"max_conflicting_rows": max_conflicting_rows, "warn_duplicate_share": warn_duplicate_share})


# ---------------------------------------------------------------- the stage


def check_tokenizing(exc: Exception) -> CheckResult:
    """data.batch when tokenizing the first batch raised (the tokenizer's or the user's recipe's own error)."""
    return judge("data.batch", {"error": f"{type(exc).__name__}: {exc}"}, {"batch_raises": (
        msg("Tokenizing the first batch failed: {error}: {message}.", error=type(exc).__name__,
            message=str(exc).strip().splitlines()[0] if str(exc).strip() else ""), None)}, "")
