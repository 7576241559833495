"""data.columns: the task's columns and the columns given to to_tf_dataset exist."""

from __future__ import annotations

from typing import Any, TypedDict

from diagnostics.checks.common import row_numbers
from diagnostics.config.tasks import GlueTask
from diagnostics.core.check import Cause, Check, Condition, Explains
from diagnostics.core.context import RunContext
from diagnostics.core.result import CheckResult, judge
from diagnostics.core.rules import Holds
from diagnostics.i18n import N_, joined, msg, msgn
from diagnostics.keras.batches import FirstBatch, LABEL, text_columns_of


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
    return judge(CHECK, evidence, task=task, inputs=list(model_input_names), read_back=read_back, spare=())


def rename_fix(missing: list[str], spare: list[str]) -> str:
    """The fix for text columns the task names otherwise: the split's own text columns renamed, when it has as many
    as are missing (else a placeholder for the column to rename)."""
    if spare and len(spare) == len(missing):
        return f"dataset = dataset.rename_columns({dict(zip(spare, missing, strict=False))!r})"
    return f"dataset = dataset.rename_column('<your column>', '{missing[0]}')"


def missing_columns_result(split_columns: list[str], task: GlueTask, missing: list[str],
                           spare: list[str] = ()) -> CheckResult:
    """data.columns when the split lacks some of the task's columns, with what the file's shape suggests (`_hint`)
    and the split's own text columns to rename (`spare`)."""
    return judge(CHECK, {"split_columns": split_columns, "needed": list(task.text_columns) + [LABEL],
                         "missing_in_split": missing}, task=task, spare=list(spare))


def _hint(split_columns: list[str], needed: list[str]) -> Any:
    """What a split lacking the task's columns suggests of its file: another delimiter (one column whose name holds
    the others), or no header row (the first row read as names); "" when neither."""
    joined_by = next(((name, mark) for name in split_columns for mark in (";", ",", "\t", "|")
                      if sum(column in name for column in needed) >= 2 and mark in name), None)
    if joined_by:
        return msg(" The file was read as if its columns were not split: the column {column} holds the names, so it "
                   "separates them with {mark}; write it as csv (commas) or tsv (tabs).", column=repr(joined_by[0]),
                   mark=repr(joined_by[1]))
    if not set(needed) & set(split_columns) and any(" " in name or name.strip().lstrip("-").replace(".", "").isdigit()
                                                    for name in split_columns):
        return msg(" Its first row looks like data, not a header: the file needs a header row naming {needed}.",
                   needed=", ".join(needed))
    return ""


def check_text_cells(problems: dict[str, dict[str, list]], task: GlueTask, rows: int) -> CheckResult:
    """data.columns when the task's text columns exist but some cells are empty or not text (the tokenizer would
    stop on the first of them), naming the rows."""
    return judge(CHECK, {"text_cells": problems, "rows_scanned": rows}, task=task)


def _text_cells(problems: dict[str, dict[str, list]]) -> Any:
    """Each text column's empty cells and cells that are not text, with their rows."""
    parts = []
    for column, found in problems.items():
        if found["empty"]:
            parts.append(msgn("{column} is empty in {count:,} row (row {rows})",
                              "{column} is empty in {count:,} rows (rows {rows})", len(found["empty"]), column=column,
                              rows=row_numbers(found["empty"])))
        if found["not_text"]:
            parts.append(msgn("{column} holds a value that is not text in {count:,} row (row {rows}, e.g. {examples})",
                              "{column} holds values that are not text in {count:,} rows (rows {rows}, e.g. "
                              "{examples})", len(found["not_text"]), column=column,
                              rows=row_numbers(found["not_text"]), examples=", ".join(found["examples"])))
    return joined(parts, "; ")


def _left_out(e, f) -> tuple:
    """(finding, fix) for inputs of the model the batches leave out."""
    costs = joined([msg("attention_mask, so the model attends to padding") if name == "attention_mask" else
                    msg("token_type_ids, so both sentences of each pair read as the first segment")
                    for name in e["model_inputs_left_out"]], "; ")
    if f.read_back:
        return (msg("{what} leaves out {costs}.", what=msg("The data given to fit"), costs=costs),
                msg("Give the model every input the tokenizer returns for it: {names}.", names=", ".join(f.inputs)))
    return (msg("{what} leaves out {costs}.", what=msg("columns="), costs=costs),
            f"to_tf_dataset(columns={f.inputs + [LABEL]!r}, ...)")


def measure(run: RunContext) -> CheckResult:
    task, columns = run.config.glue_task, list(run.split.column_names)
    if any(column in run.missing_columns for column in task.text_columns):
        return missing_columns_result(columns, task, run.missing_columns,
                                      text_columns_of(run.split, task.text_columns))
    if run.text_problems:
        return check_text_cells(run.text_problems, task, len(run.split))
    inputs = run.config.model_inputs or run.tokenizer.model_input_names
    recipe = run.config.recipe
    return check_columns(columns, task, run.first_batch, list(inputs),
                         read_back=recipe is not None and type(recipe.collate_fn).__name__ == "ReadBackCollator")


class Evidence(TypedDict, total=False):
    """What data.columns puts in its evidence (the charts, tables and JSON report read it)."""

    available_after_tokenizing: list[str]
    missing: list[str]
    model_inputs_left_out: list[str]
    missing_in_split: list[str]  # the task's columns the split lacks
    missing_requested: list[str]  # columns to_tf_dataset asks for that the tokenized split lacks
    needed: list[str]
    requested: list[str]
    split_columns: list[str]
    error: str
    text_cells: dict[str, dict[str, list]]  # each text column's empty and not-text rows, with examples
    rows_scanned: int


CHECK = Check("data.columns", N_("the task's columns and the columns given to to_tf_dataset exist"),
              requires=("tokenizes",), measure=measure, conditions=(
    # Judged in this order.
    Condition("missing_columns", None, "fail when the split lacks a column the task needs",
              Holds("missing_in_split"), status="fail", says=lambda e, f: (
                  msg("The split lacks {missing}: {task} needs {needed}; it has: {found}.{hint}",
                      missing=", ".join(e["missing_in_split"]), task=f.task.name, needed=", ".join(e["needed"]),
                      found=", ".join(e["split_columns"]), hint=_hint(e["split_columns"], e["needed"])),
                  rename_fix(e["missing_in_split"], f.spare))),
    Condition("bad_text_cells", None, "fail when a text cell is empty or not text (the tokenizer stops on it)",
              Holds("text_cells"), status="fail", says=lambda e, f: (
                  msg("{problems}, of {total:,} rows: the tokenizer needs text in every row's {columns}.",
                      problems=_text_cells(e["text_cells"]), total=e["rows_scanned"],
                      columns=", ".join(f.task.text_columns)),
                  "dataset = dataset.filter(lambda row: all(isinstance(row[c], str) and row[c].strip() for c in "
                  f"{list(f.task.text_columns)!r}))")),
    Condition("missing_requested", None, "fail when to_tf_dataset asks for a column the tokenized split lacks",
              Holds("missing_requested"), status="fail", says=lambda e, f: (
                  msg("to_tf_dataset asks for {missing}, which does not exist; the tokenized split has: {found}.",
                      missing=", ".join(e["missing_requested"]), found=", ".join(e["available_after_tokenizing"])),
                  f"to_tf_dataset(columns={f.inputs + [LABEL]!r}, collate_fn=DataCollatorWithPadding(tokenizer, "
                  "return_tensors='np'), ...)")),
    Condition("inputs_left_out", None, "warn when the batches leave out an input the model takes that changes what it "
                                       "computes (attention_mask; token_type_ids for sentence pairs)",
              Holds("model_inputs_left_out"), says=_left_out)),
              otherwise_says=lambda e, f: msg(
                  "All {count} requested columns exist ({columns}), and the split has every column {task} needs.",
                  count=len(e["requested"]), columns=", ".join(e["requested"]), task=f.task.name),
              evidence=Evidence)

# The causes this check owns, each with its precedence among every check's causes (`Cause.precedence`): a
# column the batches ask for that the split lacks stops to_tf_dataset, so the first batch's error is this cause's,
# not one more.
CAUSES = (
    Cause("absent_columns", "data.columns", ("missing_columns", "missing_requested"),
          N_("columns the batches ask for that the split lacks"), (Explains("data.batch", ("batch_raises",)),),
          precedence=10),
)
