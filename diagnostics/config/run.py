"""The run under test: checkpoint, task, split and training setup, shared by the sidebar and the command line."""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields, replace
from typing import Any

from diagnostics.config import limits
from diagnostics.core.errors import InputError
from diagnostics.config.settings import (CODE_LOSSES, DATA_SOURCES, LABEL_PLACEMENTS, LOSSES, MAX_TRAIN_STEPS,
                                         CODE_OPTIMIZERS, OPTIMIZERS, SETTINGS)
from diagnostics.config.schedule import Schedule
from diagnostics.config.tasks import GlueTask, get_task
from diagnostics.i18n import N_, joined, msg

DEMO_CHECKPOINT = "demo"
HUB_DEFAULT_CHECKPOINT = "distilbert-base-uncased"
DEFAULT_TASK = "mnli"
@dataclass(frozen=True, eq=False)
class Recipe:
    """A user's own `to_tf_dataset` call, for a pipeline built by the user's code (`diagnose`, `trace`): batches are
    made by this call on the user's own tokenized columns instead of the debugger's tokenizing and padding.

    Attributes:
        columns / label_cols: as the user passed them.
        collate_fn / collate_fn_args: as the user passed them (None: `to_tf_dataset`'s stacking collator).
        origin: where the pipeline came from, in words (e.g. "train.py:21", "a tf.data.Dataset read back").
    """

    columns: tuple[str, ...] | None
    label_cols: tuple[str, ...] | None
    collate_fn: Any = None
    collate_fn_args: dict | None = None
    origin: str = ""

    def to_tf_dataset_kwargs(self) -> dict[str, Any]:
        label_cols = self.label_cols[0] if self.label_cols and len(self.label_cols) == 1 else self.label_cols
        return {"columns": list(self.columns) if self.columns else None,
                "label_cols": list(label_cols) if isinstance(label_cols, tuple) else label_cols,
                "collate_fn": self.collate_fn, "collate_fn_args": self.collate_fn_args}

    def describe(self) -> dict[str, Any]:
        return {"columns": list(self.columns) if self.columns else None,
                "label_cols": list(self.label_cols) if self.label_cols else None,
                "collate_fn": type(self.collate_fn).__name__ if self.collate_fn is not None else None,
                "origin": self.origin}


# Fields that only a user's own code fills (from what it built): no link, sidebar or command line sets them.
CODE_ONLY_FIELDS = ("recipe", "user_optimizer", "user_loss", "task_candidates", "label_names", "keras_name",
                    "truncation", "model_inputs", "stale_train_step")
# Fields derived from the others where the configuration is made: no link or setting carries them.
DERIVED_FIELDS = ("data_stamp",)


def task_title(task: str, candidates=()) -> Any:
    """The task as a heading shows it: its name, or the tasks that fit when it is not known."""
    return msg("{tasks}? (task not known)", tasks="/".join(candidates)) if candidates else task


@dataclass(frozen=True)
class RunConfig:
    """One run configuration. Frozen, so it can key caches.

    Attributes:
        checkpoint: a Hub name, a local `save_pretrained` directory, or "demo" for the offline kit.
        task: a GLUE task name.
        split: the split to check.
        data_source: "demo" (bundled samples), "hub" (`nyu-mll/glue`) or "files" (`data_files`).
        data_files: (split, path) pairs of local files in the task's GLUE schema.
        num_labels: the `num_labels` given to `from_pretrained`; None means the task's own count.
        batch_size: rows per batch, as given to `to_tf_dataset`.
        max_length: tokenizer truncation length.
        columns: the `columns=` given to `to_tf_dataset`; None means the model's inputs, plus the
            label when `labels_in` is "inputs".
        labels_in: "inputs" (labels inside the input dict) or "separate" (Keras `(x, y)`).
        shuffle: whether the training dataset is shuffled, as `to_tf_dataset(shuffle=True)`.
        seed: seeds every random choice (the shuffled batch, new head weights).
        loss: a key of LOSSES.
        optimizer: a key of OPTIMIZERS; for the user's own code also "other" (CODE_OPTIMIZERS: SGD, RMSprop...,
            with `user_optimizer` holding it).
        learning_rate: the rate of an optimizer object (a string optimizer ignores it, as Keras does).
        weight_decay: for AdamW and create_optimizer.
        train_steps / warmup_steps: the planned schedule, for create_optimizer (read as one value: `schedule`).
        shuffle_labels: permute the split's labels at random (the shuffled-labels workshop scenario).
        task_candidates: the tasks that fit a user's pipeline when its task is not known (`task` is the first);
            empty when it is known.
        label_names: the data's or the model's own label names, for a task that is not known.
        keras_name: how the user's code names Keras (`tf_keras`, `tf.keras`, an alias), so fixes are written in it.
        model_inputs: the inputs a Keras model with named inputs takes (a functional model's), where they are not
            the tokenizer's model_input_names.
        truncation: where `max_length` comes from for the user's code: "call" (their tokenizer call's max_length),
            "model" (truncation=True without one: the tokenizer's maximum), "none" (no truncation: the longest row),
            "unknown" (no tokenizer call seen: the longest row stored); "" for the debugger's own pipeline.
        stale_train_step: (the fit that built it, the weights it trains, the weights the layers mark trainable) when
            the traced script's fit reuses a train step Keras built before `trainable` changed (no compile since).
        data_stamp: each local data file's (path, size, modification time in ns) when the app's configuration was
            made: a file edited since makes another configuration, so nothing kept for the old contents is shown.
        recipe: the user's own `to_tf_dataset` call when the pipeline is the user's code (not part of equality).
        user_optimizer: the optimizer object the user's code compiled with: copies train with clones of it, every
            setting kept (never the object itself; not part of equality).
        user_loss: a loss of the user's own (a function or an object, `loss == "custom"`): copies train with it as
            Keras evaluates it (not part of equality).
    """

    checkpoint: str = DEMO_CHECKPOINT
    task: str = DEFAULT_TASK
    split: str = "train"
    data_source: str = "demo"
    data_files: tuple[tuple[str, str], ...] = ()
    num_labels: int | None = None
    batch_size: int = 16
    max_length: int = 128
    columns: tuple[str, ...] | None = None
    labels_in: str = "inputs"
    shuffle: bool = True
    seed: int = 0
    loss: str = "internal"
    optimizer: str = "Adam"
    learning_rate: float = 5e-5
    weight_decay: float = 0.0
    train_steps: int = 1000
    warmup_steps: int = 0
    shuffle_labels: bool = False
    task_candidates: tuple[str, ...] = ()
    label_names: tuple[str, ...] = ()
    keras_name: str = "tf_keras"
    truncation: str = ""
    model_inputs: tuple[str, ...] | None = None
    stale_train_step: tuple[int, int, int] | None = None
    data_stamp: tuple[tuple[str, int, int], ...] = ()
    recipe: Recipe | None = field(default=None, compare=False, repr=False)
    user_optimizer: Any = field(default=None, compare=False, repr=False)
    user_loss: Any = field(default=None, compare=False, repr=False)

    @property
    def optimizer_shown(self) -> str:
        """The optimizer as a sentence names it: its key, or the class of another optimizer of the user's own."""
        if self.optimizer == "other" and self.user_optimizer is not None:
            return type(getattr(self.user_optimizer, "inner_optimizer", self.user_optimizer)).__name__
        return self.optimizer

    @property
    def loss_shown(self) -> str:
        """The loss as a sentence names it: its key, or the name of a loss of the user's own ("focal_loss")."""
        if self.loss == "custom" and self.user_loss is not None:
            return getattr(self.user_loss, "__name__", None) or type(self.user_loss).__name__
        return self.loss

    @property
    def glue_task(self) -> GlueTask:
        """The task; for a pipeline whose task is not known, one that stands for every task that fits: their shared
        text columns, the data's or model's own label names, and `known` False."""
        if not self.task_candidates:
            return get_task(self.task)
        first = get_task(self.task_candidates[0])
        return GlueTask("/".join(self.task_candidates), first.text_columns, tuple(self.label_names), first.splits,
                        regression=first.regression, known=False)

    @property
    def schedule(self) -> Schedule:
        """The planned schedule (create_optimizer's steps, warmup and weight decay), the one value every reader of
        the schedule takes."""
        return Schedule.of(self)

    @property
    def task_known(self) -> bool:
        return not self.task_candidates

    @property
    def task_title(self) -> Any:
        return task_title(self.task, self.task_candidates)

    @property
    def effective_num_labels(self) -> int:
        """The `num_labels` the model is loaded with."""
        return self.num_labels if self.num_labels is not None else self.glue_task.num_labels

    def requested_columns(self, model_input_names: list[str]) -> list[str]:
        """The `columns=` passed to `to_tf_dataset`."""
        if self.columns is not None:
            return list(self.columns)
        columns = list(model_input_names)
        return columns + ["label"] if self.labels_in == "inputs" else columns

    def label_columns(self) -> list[str] | None:
        """The `label_cols=` passed to `to_tf_dataset` (None keeps labels inside the input dict)."""
        return ["label"] if self.labels_in == "separate" else None

    def validated(self) -> "RunConfig":
        """This configuration with the task name normalised, or an InputError naming the bad value."""
        task = get_task(self.task)
        problems = []
        if not self.checkpoint or not self.checkpoint.strip():
            problems.append(msg("the checkpoint is empty: give a Hub name, a local directory or 'demo'"))
        problems += [problem for setting in SETTINGS if setting.bounds is not None
                     and (problem := setting.bounds.problem(getattr(self, setting.field))) is not None]
        if self.data_source not in DATA_SOURCES:
            problems.append(msg("data source must be one of {choices}, got {value}", choices=", ".join(DATA_SOURCES),
                                value=repr(self.data_source)))
        if self.data_source == "files" and not self.data_files:
            problems.append(msg("data source 'files' needs at least one SPLIT=PATH data file"))
        given = [split for split, _ in self.data_files]
        for split in dict.fromkeys(split for split in given if given.count(split) > 1):
            paths = [path for name, path in self.data_files if name == split]
            problems.append(
                msg(
                    "split {split} is given {count} times ({paths}): give each split once",
                    split=repr(split),
                    count=len(paths),
                    paths=", ".join(paths),
                )
            )
        if self.labels_in not in LABEL_PLACEMENTS:
            problems.append(msg("labels_in must be 'inputs' or 'separate', got {value}", value=repr(self.labels_in)))
        if self.loss not in LOSSES and not (self.data_source == "code" and self.loss in CODE_LOSSES):
            problems.append(msg("loss must be one of {choices}, got {value}", choices=", ".join(LOSSES),
                                value=repr(self.loss)))
        if self.optimizer not in OPTIMIZERS and not (self.data_source == "code" and self.optimizer in CODE_OPTIMIZERS
                                                     and self.user_optimizer is not None):
            problems.append(msg("optimizer must be one of {choices}, got {value}", choices=", ".join(OPTIMIZERS),
                                value=repr(self.optimizer)))
        planned = self.schedule
        if planned.warmup_steps > planned.train_steps:
            problems.append(msg("need 0 <= warmup steps ({warmup}) <= train steps ({steps}), and 1 to {cap} train "
                                "steps", warmup=planned.warmup_steps, steps=planned.train_steps, cap=MAX_TRAIN_STEPS))
        if self.data_source != "files" and self.split not in task.splits:
            problems.append(msg("task {task} has no split {split}; its splits are {splits}", task=task.name,
                                split=repr(self.split), splits=", ".join(task.splits)))
        problems += hosted_problems(self)
        if problems:
            raise InputError(msg("{problems}.", problems=joined(problems, "; ")))
        return replace(self, task=task.name, checkpoint=self.checkpoint.strip())

    def to_dict(self) -> dict:
        data = {item.name: getattr(self, item.name) for item in fields(self)
                if item.name not in ("recipe", "user_optimizer", "user_loss", *DERIVED_FIELDS)}
        if self.recipe is not None:
            data["recipe"] = self.recipe.describe()
        if self.user_optimizer is not None:
            data["user_optimizer"] = type(self.user_optimizer).__name__
        if self.user_loss is not None:
            data["user_loss"] = self.loss_shown
        data["data_files"] = dict(self.data_files)
        data["columns"] = list(self.columns) if self.columns is not None else None
        data["effective_num_labels"] = self.effective_num_labels
        return data


# The demo checkpoint has random weights: its workable rate is far above a pretrained checkpoint's 5e-5
# (measured with the sweep and the overfit test on the bundled samples), so the demo configuration starts here.
DEMO_LEARNING_RATE = 3e-3


# A new head trained on a frozen pretrained encoder: Keras's Adam default, the rate of the head-only phase of
# freeze-then-fine-tune (the Keras transfer-learning guide's; a head of a few thousand weights learns slowly at 5e-5).
HEAD_ONLY_RATE = 1e-3


def usual_rate(pretrained: bool, head_only: bool = False) -> float:
    """The rate a fit trains well at: 5e-5 when it trains pretrained weights, 1e-3 when it trains a new head on a
    frozen pretrained encoder, the demo kit's 3e-3 for its random weights."""
    if head_only:
        return HEAD_ONLY_RATE
    return RunConfig.learning_rate if pretrained else DEMO_LEARNING_RATE


def default_config(hub_reachable: bool, **overrides) -> RunConfig:
    """The app's and the command line's starting configuration. The checkpoint defaults to the Hub's when it
    answers, else the demo kit's; the settings follow the checkpoint: the demo checkpoint gets the kit's samples
    and its own rate (3e-3, whether or not the Hub answers), a pretrained one Hub data when the Hub answers (the
    kit's samples when not) and 5e-5, a rate that fine-tunes a pretrained model without wrecking it."""
    checkpoint = overrides.get("checkpoint") or (HUB_DEFAULT_CHECKPOINT if hub_reachable else DEMO_CHECKPOINT)
    demo = checkpoint.strip() == DEMO_CHECKPOINT
    base = RunConfig(checkpoint=checkpoint, data_source="hub" if hub_reachable and not demo else "demo",
                     learning_rate=usual_rate(pretrained=not demo))
    return replace(base, **overrides)


def is_local_path(checkpoint: str) -> bool:
    """A checkpoint given as a filesystem path rather than a Hub name."""
    # Hub names are "name" or "org/name"; anything else with a path shape is a directory.
    return (
        checkpoint.startswith(("/", ".", "~"))
        or os.path.exists(os.path.expanduser(checkpoint))
        or checkpoint.count("/") >= 2
    )


def hosted_problems(config: "RunConfig") -> list[str]:
    """What a RunConfig asks for beyond the hosted limits (nothing when hosted mode is off)."""
    caps = limits.hosted()
    if caps is None:
        return []
    problems = limits.over_caps([(N_("the batch size at {cap}"), config.batch_size, caps.max_batch_size),
                                 (N_("max length at {cap}"), config.max_length, caps.max_length),
                                 (N_("num_labels at {cap}"), config.num_labels or 0, caps.max_num_labels)])
    if config.checkpoint.strip() != DEMO_CHECKPOINT and is_local_path(config.checkpoint.strip()):
        problems.append(msg("hosted mode refuses local checkpoint paths ({checkpoint}): give a Hub name or 'demo'",
                            checkpoint=repr(config.checkpoint)))
    if config.data_source == "files":
        problems.append(msg("hosted mode refuses local data files: use the Hub or the bundled samples"))
    return problems
