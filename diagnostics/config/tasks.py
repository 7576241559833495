"""The GLUE benchmark's schema: text columns, label names and splits of every task."""

from __future__ import annotations

import math
from dataclasses import dataclass

from diagnostics.core.errors import InputError
from diagnostics.i18n import msg


@dataclass(frozen=True)
class GlueTask:
    """One GLUE task as the Hub dataset `nyu-mll/glue` lays it out."""

    name: str
    text_columns: tuple[str, ...]
    label_names: tuple[str, ...]
    splits: tuple[str, ...]
    regression: bool = False
    known: bool = True  # False: a stand-in for several tasks that fit (RunConfig.glue_task), named by the data

    @property
    def num_labels(self) -> int:
        """The `num_labels` a classification head for this task needs (1 for regression)."""
        return 1 if self.regression else len(self.label_names)

    @property
    def train_split(self) -> str:
        return "train" if "train" in self.splits else self.splits[0]

    def label_name(self, label) -> str:  # a Text for values that are not one of the names
        """A readable name for a label value; out-of-range values say so."""
        if label is None or (isinstance(label, float) and math.isnan(label)):
            return msg("(missing)")
        if self.regression:
            return msg("(test: no label)") if label == -1 else msg("score {score:.2f}", score=float(label))
        label = int(label)
        if label == -1:
            return msg("(test: no label)")
        if 0 <= label < len(self.label_names):
            return self.label_names[label]
        if not self.known:
            return f"label {label}"
        return msg("(out of range: {label})", label=label)

    def head_fix(self) -> str:
        """The model built with this task's head: its num_labels and, for a classifier, its label names (the one
        fix of a head that does not fit the task, whichever check shows it)."""
        names = ", ".join(f"{i}: {name!r}" for i, name in enumerate(self.label_names))
        return (f"TFAutoModelForSequenceClassification.from_pretrained(checkpoint, num_labels={self.num_labels}"
                + (f", id2label={{{names}}}, label2id={{...}})" if self.label_names else ")"))


_STANDARD_SPLITS = ("train", "validation", "test")

TASKS: dict[str, GlueTask] = {
    task.name: task
    for task in (
        GlueTask("cola", ("sentence",), ("unacceptable", "acceptable"), _STANDARD_SPLITS),
        GlueTask("sst2", ("sentence",), ("negative", "positive"), _STANDARD_SPLITS),
        GlueTask("mrpc", ("sentence1", "sentence2"), ("not_equivalent", "equivalent"), _STANDARD_SPLITS),
        GlueTask("qqp", ("question1", "question2"), ("not_duplicate", "duplicate"), _STANDARD_SPLITS),
        GlueTask("stsb", ("sentence1", "sentence2"), (), _STANDARD_SPLITS, regression=True),
        GlueTask(
            "mnli",
            ("premise", "hypothesis"),
            ("entailment", "neutral", "contradiction"),
            ("train", "validation_matched", "validation_mismatched", "test_matched", "test_mismatched"),
        ),
        GlueTask("qnli", ("question", "sentence"), ("entailment", "not_entailment"), _STANDARD_SPLITS),
        GlueTask("rte", ("sentence1", "sentence2"), ("entailment", "not_entailment"), _STANDARD_SPLITS),
        GlueTask("wnli", ("sentence1", "sentence2"), ("not_entailment", "entailment"), _STANDARD_SPLITS),
        GlueTask("ax", ("premise", "hypothesis"), ("entailment", "neutral", "contradiction"), ("test",)),
    )
}

# STS-B scores run from 0 (unrelated) to 5 (same meaning).
STSB_RANGE = (0.0, 5.0)


def get_task(name: str) -> GlueTask:
    """Look a task up by name, with an error that lists the valid names."""
    key = (name or "").strip().lower()
    if key not in TASKS:
        raise InputError(
            msg("Unknown GLUE task {name}; choose one of: {tasks}.", name=repr(name), tasks=", ".join(TASKS))
        )
    return TASKS[key]
