"""model.config: the checkpoint's head, num_labels and label names fit the task."""

from __future__ import annotations

from typing import TypedDict

import numpy as np

from diagnostics.checks.common import LABELS_STOP
from diagnostics.config.tasks import GlueTask
from diagnostics.core.check import Cause, Check, Condition, Explains
from diagnostics.core.context import RunContext
from diagnostics.core.result import CheckResult, judge
from diagnostics.core.rules import Above, Holds
from diagnostics.i18n import N_, Text, msg, msgn
from diagnostics.keras import keras_model
from diagnostics.keras.batches import LABEL, split_labels


def check_config(model_config, model_class: str, task: GlueTask, tokenizer,
                 present: dict[int, int] | None = None) -> CheckResult:
    """Architecture, num_labels, label names and problem type against the task's labels and the labels present.

    Args:
        present: how many rows of the split hold each label value (None when the split's labels are not known); every
            statement about outputs and their examples is counted from it.
    """
    num_labels = int(model_config.num_labels)
    id2label = {int(k): v for k, v in (model_config.id2label or {}).items()}
    generic = all(name == f"LABEL_{i}" for i, name in id2label.items())
    evidence = {
        "model_class": model_class,
        "architectures": list(model_config.architectures or []),
        "model_type": model_config.model_type,
        "num_labels": num_labels,
        "task_num_labels": task.num_labels,
        "id2label": {str(k): v for k, v in id2label.items()},
        "label2id": dict(model_config.label2id or {}),
        "problem_type": model_config.problem_type,
        "task_labels": list(task.label_names),
        "pad_token": tokenizer.pad_token,
    }
    own = [str(id2label.get(i)) for i in range(num_labels)]
    # Names are compared as names: the task's names in another order is a wrong order; other words for the classes
    # (Invalid/Valid for CoLA's unacceptable/acceptable) are read in the model's order, which is the ids' own.
    same_words = sorted(name.strip().lower() for name in own) == sorted(name.lower() for name in task.label_names)
    evidence["labels_present"] = {str(value): count for value, count in sorted(present.items())} \
        if present is not None else None
    regression = bool(task.regression)
    evidence.update(no_pad_token=tokenizer.pad_token is None, regression=regression,
                    wrong_regression_head=regression and (num_labels != 1 or model_config.problem_type
                                                          not in (None, "regression")),
                    head_short=not regression and (model_config.problem_type == "regression"
                                                   or num_labels < task.num_labels),
                    names_out_of_order=not regression and not generic and same_words
                    and [name.strip().lower() for name in own] != [name.lower() for name in task.label_names])
    if not task.known and not regression:  # the head against the labels the data holds, nothing else
        return _config_against_data(num_labels, present, task, evidence)
    evidence["unused_outputs"] = len(range(task.num_labels, num_labels)) if not regression else 0
    return judge(CHECK, evidence, task=task, present=present, own=own, generic=generic)


def _config_against_data(num_labels: int, present: dict[int, int] | None, task: GlueTask, evidence: dict
                         ) -> CheckResult:
    """model.config for a task that is not known: the head against the labels the data holds, nothing else (the
    task's own labels and names are not known, so only the padding token and the unused outputs are judged)."""
    evidence.update(head_short=False, names_out_of_order=False)
    unused = [output for output in range(num_labels) if not (present or {}).get(output)]
    evidence["unused_outputs"] = len(unused) if present and max(present) < num_labels else 0
    return judge(CHECK, evidence, task=task, present=present)


def _label_span(first: int, end: int) -> Text:
    return msg("label {first} has", first=first) if end - first == 1 else \
        msg("labels {first} to {last} have", first=first, last=end - 1)


def _described(e) -> Text:
    """What every sentence of model.config names first: the model class, its type and its num_labels."""
    return msg("{model_class} ({model_type}) with num_labels={num_labels}", model_class=e["model_class"],
               model_type=e["model_type"], num_labels=e["num_labels"])


def _against_data(e, f) -> bool:
    """Whether the head was judged against the labels the data holds (a classification task that is not known)."""
    return not f.task.known and not e["regression"]


def _present_values(present: dict[int, int] | None) -> str:
    """The labels present, each with its rows: "0 x1,200, 1 x800"."""
    return ", ".join(f"{value} x{count:,}" for value, count in sorted((present or {}).items()))


def _unused_outputs(e, f) -> tuple:
    """(finding, fix) for outputs that never get a positive example: beyond the task's labels, or, for a task not
    known, no row of the split labelled with them."""
    described, present, num_labels = _described(e), f.present, e["num_labels"]
    if _against_data(e, f):
        unused = [output for output in range(num_labels) if not (present or {}).get(output)]
        return (msgn("{described}, but no row of the split is labelled {unused} ({values}): output {unused} never "
                     "gets a positive example.", "{described}, but no row of the split is labelled {unused} "
                     "({values}): outputs {unused} never get a positive example.", len(unused), described=described,
                     unused=", ".join(map(str, unused)), values=_present_values(present)),
                f"TFAutoModelForSequenceClassification.from_pretrained(checkpoint, num_labels="
                f"{max(present or [0]) + 1})")
    task = f.task
    extra = list(range(task.num_labels, num_labels)) if not e["regression"] else []
    fed = {output: (present or {}).get(output) for output in extra if (present or {}).get(output)}
    if fed:
        return (msg("{described}, but {task} has only {count} labels: output {outputs} learns only from the {rows:,} "
                    "rows labelled {outputs}, which are not {task} labels (see data.label_range).",
                    described=described, task=task.name, count=task.num_labels,
                    outputs=", ".join(str(output) for output in fed), rows=sum(fed.values())),
                task.head_fix())
    return (msgn("{described}, but {task} has only {labels} labels: output {outputs} never gets a positive example (no "
                 "row{of_split} is labelled {outputs}).", "{described}, but {task} has only {labels} labels: outputs "
                 "{outputs} never get a positive example (no row{of_split} is labelled {outputs}).", len(extra),
                 described=described, task=task.name, labels=task.num_labels,
                 outputs=", ".join(str(output) for output in extra),
                 of_split=msg(" of the split") if present is not None else ""),
            task.head_fix())


def _head_fits(e, f) -> Text:
    """What model.config says when no rule finds fault with the head: it matches the task's labels (a known task),
    or what it was compared with (a task not known)."""
    if "error" in e:  # not a classifier, with no message to say why (the rule reads the message)
        return ""
    described = _described(e)
    if _against_data(e, f):
        return msg("{described}; the task is not known ({tasks} fit), so the head is compared with the labels present "
                   "({values}).", described=described, tasks=f.task.name, values=_present_values(f.present)) \
            if f.present else \
            msg("{described}; the task is not known ({tasks} fit) and the labels are not read, so the head is not "
                "judged.", described=described, tasks=f.task.name)
    task = f.task
    naming = msg("generic names LABEL_0..") if f.generic else msg("the task's label names") \
        if f.own == list(task.label_names) else msg("its own names ({names}) for {task}'s ({task_names}), by id",
                                                    names=", ".join(f.own), task=task.name,
                                                    task_names=", ".join(task.label_names))
    return msg("{described} matches {task}'s {count} labels; id2label uses {naming}.", described=described,
               task=task.name, count=task.num_labels, naming=naming)


def not_a_classifier(checkpoint: str, message: str) -> CheckResult:
    """model.config when the checkpoint has no sequence-classification model: a clear fail (the runner skips the
    Model checks that need the model, naming this one)."""
    return judge(CHECK, {"error": message}, checkpoint=checkpoint)


def labels_present(labels: np.ndarray | None, task: GlueTask) -> dict[int, int] | None:
    """How many rows hold each label value of the split (for a classification task with numeric labels)."""
    if labels is None or task.regression or not np.issubdtype(np.asarray(labels).dtype, np.number):
        return None
    values, counts = np.unique(np.asarray(labels)[np.asarray(labels) >= 0], return_counts=True)
    return {int(value): int(count) for value, count in zip(values, counts, strict=True)}


def measure(run: RunContext) -> CheckResult:
    """With no classifier, a fail (the runner skips the other Model checks, naming this one)."""
    model, problem = run.classifier
    if model is None:
        return not_a_classifier(run.config.checkpoint, problem)
    task = run.config.glue_task
    labels = split_labels(run.split) if LABEL in run.split.column_names else None
    return check_config(
        keras_model.model_config(model),
        keras_model.describe_model(model),
        task,
        run.tokenizer,
        labels_present(labels, task),
    )


class Evidence(TypedDict, total=False):
    """What model.config puts in its evidence (the charts, tables and JSON report read it)."""

    architectures: list[str]
    id2label: dict[str, str]
    label2id: dict[str, int]
    model_class: str
    model_type: str
    num_labels: int
    pad_token: str
    problem_type: str
    task_labels: list[str]
    task_num_labels: int
    labels_present: dict[str, int] | None  # rows of the split holding each label value
    error: str
    # What the registry's rules read:
    no_pad_token: bool
    regression: bool  # the task is regression
    wrong_regression_head: bool  # regression, but not one output or a classification problem_type
    head_short: bool  # classification, but some of the task's labels have no output (or the head regresses)
    unused_outputs: int  # outputs that never get a positive example
    names_out_of_order: bool  # id2label names the task's labels in another order


CHECK = Check("model.config", N_("the checkpoint's head, num_labels and label names fit the task"),
              measure=measure, conditions=(
    # Judged in this order; a head no rule finds fault with passes.
    Condition("not_a_classifier", None, "fail when the checkpoint cannot be loaded as a sequence classifier",
              Holds("error"), status="fail", says=lambda e, f: (
                  msg("{checkpoint} cannot be loaded as a TensorFlow sequence classifier: {message}",
                      checkpoint=f.checkpoint, message=e["error"]),
                  'TFAutoModelForSequenceClassification.from_pretrained("distilbert-base-uncased", num_labels=...)  '
                  "# an encoder checkpoint with a classification head class")),
    Condition("no_pad_token", None, "fail when the tokenizer has no padding token (batches cannot be padded)",
              Holds("no_pad_token"), status="fail", says=lambda e, f: (
                  msg("{described}, but its tokenizer has no padding token, so batches of more than one row cannot be "
                      "padded.", described=_described(e)),
                  "tokenizer.pad_token = tokenizer.eos_token\nmodel.config.pad_token_id = tokenizer.pad_token_id")),
    Condition("regression_head", None, "fail when a regression task's head has more than one output or a "
                                       "classification problem_type", Holds("wrong_regression_head"), status="fail",
              says=lambda e, f: (
                  msg("{described} and problem_type={problem_type}, but {task} is regression: it needs one output and "
                      "a mean squared error loss.", described=_described(e), problem_type=repr(e["problem_type"]),
                      task=f.task.name),
                  "TFAutoModelForSequenceClassification.from_pretrained(checkpoint, num_labels=1)")),
    Condition("regression_fits", None, "pass a regression task's head with one output", Holds("regression"),
              status="pass", says=lambda e, f: (
                  msg("{described}: one output, as regression on {task} needs.", described=_described(e),
                      task=f.task.name), None)),
    Condition("missing_outputs", None, "fail when some of the task's labels have no output (or the head regresses)",
              Holds("head_short"), status="fail", says=lambda e, f: (
                  msg("{described}, but {task} has {count} labels ({names}): {span} no output, so rows with them get a "
                      "NaN loss (GPU) or an error (CPU).", described=_described(e), task=f.task.name,
                      count=f.task.num_labels, names=", ".join(f.task.label_names),
                      span=_label_span(e["num_labels"], f.task.num_labels)),
                  f.task.head_fix())),
    Condition("max_unused_outputs", 0, "warn when more outputs than this never get a positive example (beyond the "
                                       "task's labels, or, for a task not known, no row of the split holds them)",
              Above("unused_outputs"), says=_unused_outputs),
    Condition("label_order", None, "warn when id2label names the task's labels in another order",
              Holds("names_out_of_order"), says=lambda e, f: (
                  msg("{described}, but its id2label {id2label} differs from {task}'s label order ({names}): "
                      "predictions would be read with the wrong names.", described=_described(e),
                      id2label={int(k): v for k, v in e["id2label"].items()}, task=f.task.name,
                      names=", ".join(f.task.label_names)),
                  f.task.head_fix()))),
              otherwise_says=_head_fits, evidence=Evidence)

# The causes this check owns, each with its precedence among every check's causes (`Cause.precedence`).
CAUSES = (
    Cause("head_short", "model.config", ("missing_outputs",),
          N_("a head with fewer outputs than the task has labels"),
          (Explains("data.label_range", ("labels_beyond_head",), before_owner=True),) + LABELS_STOP, precedence=30),
)
