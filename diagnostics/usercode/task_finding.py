"""Which GLUE task a user's own data is, from its columns, labels and the model's label names (or what the
user said)."""

from __future__ import annotations


from dataclasses import dataclass
from typing import Any

import numpy as np



from diagnostics.i18n import joined, msg
from diagnostics.config.tasks import TASKS, get_task


@dataclass(frozen=True)
class TaskFinding:
    """The GLUE task of a user's pipeline, or the tasks that fit it when the evidence does not single one out.

    Attributes:
        name: the task (the first that fits, when several do: its text columns are what they share).
        candidates: every task that fits, when more than one does (empty when the task is known).
        how: how it was found, in words ("given" when the user named it).
        label_names: the data's or the model's own label names, for a task that is not known (never a candidate's),
            else "label 0", "label 1"... (`named` False).
    """

    name: str
    candidates: tuple[str, ...] = ()
    how: Any = "given"
    label_names: tuple[str, ...] = ()
    named: bool = False


def find_task(given: str | None, *, columns: list[str] | None, labels: np.ndarray | None,
              class_names: list[str] | None = None, model_config=None, segments: int = 0) -> TaskFinding:
    """The task, taken in order from the user, the split's text columns and its labels' names and values, then the
    model's `finetuning_task` and `id2label`; never a guess: when several tasks still fit, all are returned.

    Args:
        columns: the split's columns (None when the rows were read back from a dataset with no link to a split).
        labels: the split's label values; class_names: a `ClassLabel`'s names for them.
        segments: sentences a row holds (1 or 2), for rows read back with no columns.
    """
    if given:
        return TaskFinding(get_task(given).name)
    tasks = [task for task in TASKS.values() if "test" not in task.splits[0]]
    if columns is not None:
        fit = [task for task in tasks if all(column in columns for column in task.text_columns)]
        widest = max((len(task.text_columns) for task in fit), default=0)
        candidates = [task for task in fit if len(task.text_columns) == widest]
        reasons = [msg("its text columns ({columns})", columns=", ".join(candidates[0].text_columns))] \
            if candidates else []
    else:
        pair = segments >= 2
        candidates = [task for task in tasks if len(task.text_columns) == (2 if pair else 1)]
        reasons = [msg("its rows of sentence pairs") if pair else msg("its rows of single sentences")]
    if not candidates:
        return TaskFinding(TASKS["sst2" if segments < 2 else "mrpc"].name, ("sst2", "cola") if segments < 2 else
                           tuple(task.name for task in tasks if len(task.text_columns) == 2),
                           msg("no task's text columns are in the split"))

    def narrow(keep, reason) -> None:
        kept = [task for task in candidates if keep(task)]
        if kept and len(kept) < len(candidates):
            candidates[:] = kept
            reasons.append(reason)

    values = _label_values(labels)
    if class_names:
        narrow(lambda task: list(task.label_names) == list(class_names),
               msg("its label names ({names})", names=", ".join(class_names)))
    if values is not None and values.size:
        whole = bool(np.all(np.mod(values, 1) == 0))
        narrow(lambda task: task.regression != whole, msg("whole-number labels") if whole else msg("scores"))
        if whole:
            classes = len(np.unique(values))
            narrow(lambda task: task.num_labels == classes, msg("{count} label values", count=classes))
    if model_config is not None:
        trained_for = str(getattr(model_config, "finetuning_task", None) or "").strip().lower()
        narrow(lambda task: task.name == trained_for, msg("the model's finetuning_task ({task})", task=trained_for))
        names = _own_names(model_config)
        if names:
            narrow(lambda task: list(task.label_names) == names,
                   msg("the model's id2label ({names})", names=", ".join(names)))
    how = joined(reasons)
    if len(candidates) == 1:
        return TaskFinding(candidates[0].name, (), how)
    names = tuple(class_names or _own_names(model_config) or ())
    if names:
        return TaskFinding(candidates[0].name, tuple(task.name for task in candidates), how, names, named=True)
    count = max(int(np.max(values)) + 1 if values is not None and values.size and np.all(np.mod(values, 1) == 0)
                else 0, int(getattr(model_config, "num_labels", 0) or 0))
    return TaskFinding(candidates[0].name, tuple(task.name for task in candidates), how,
                       tuple(f"label {index}" for index in range(count)))


def _label_values(labels) -> np.ndarray | None:
    """The labels as numbers, GLUE's -1 (no label) left out; None for labels written as text."""
    if labels is None:
        return None
    values = np.asarray(labels)
    if not np.issubdtype(values.dtype, np.number):
        return None
    values = values.astype(float)
    return values[np.isfinite(values) & (values != -1)]


def _own_names(model_config) -> list[str]:
    """The model's id2label names, unless they are the generic LABEL_0, LABEL_1... (empty then)."""
    id2label = {int(k): str(v) for k, v in (getattr(model_config, "id2label", None) or {}).items()}
    names = [id2label.get(index, "") for index in range(len(id2label))]
    return [] if not names or all(name == f"LABEL_{index}" for index, name in enumerate(names)) else names


def task_choice_text(finding: TaskFinding) -> Any:
    """What to tell the user about an unknown task: which fit, and how to choose."""
    return msg("The task is not known: {tasks} all fit ({how}). Give it to set it (--task, task=, or the task "
               "choice on the Your script page); until then labels are shown by {names} and no check judges them "
               "against a task.", tasks=", ".join(finding.candidates), how=finding.how,
               names=msg("the data's or the model's own names") if finding.named else msg("their values"))
