"""One run's shared inputs: the configuration, tokenizer, split, first batch, training batches and model, each
built once and handed to every stage."""

from __future__ import annotations

import contextlib
import functools
import threading
from dataclasses import dataclass, field
from diagnostics.core.lazy import once
from typing import Any, Callable

import numpy as np

from diagnostics.keras import data_files, loading
from diagnostics.keras.batches import (
    LABEL,
    UNUSABLE_LABEL,
    FirstBatch,
    build_batch,
    build_first_batch,
    held_out_indices,
    invalid_labels,
    not_prose,
    split_labels,
    text_cell_problems,
    training_batches,
)
from diagnostics.config.run import RunConfig
from diagnostics.core.errors import NotClassifierError
from diagnostics.keras.keras_model import head_of


@dataclass(eq=False)
class RunContext:
    """What the checks of one configuration run on. Built lazily: a stage that never needs the model never loads it.

    Attributes:
        model_loader: `(checkpoint, num_labels, seed) -> model`, asked each time a stage needs the model, so a
            context never holds a model its loader's cache has let go: the app passes its cache shared by every
            session (whose model is never trained or changed: training checks work on copies); `open` keeps the
            loaded model for the run.
    """

    config: RunConfig
    tokenizer: Any
    split: Any
    model_loader: Callable = loading.load_model
    _training: dict = field(default_factory=dict, repr=False)
    _stepper: list = field(default_factory=list, repr=False)  # [(model, its copy)] while a one-step copy is held
    _stepper_lock: Any = field(default_factory=threading.Lock, repr=False)

    @classmethod
    def open(cls, config: RunConfig, *, tokenizer=None, split=None,
             model_loader: Callable = loading.load_model) -> "RunContext":
        """Validate the configuration and load what is not given.

        Raises:
            InputError: the configuration, checkpoint or data cannot be used.
        """
        config = config.validated()
        tokenizer = tokenizer if tokenizer is not None else loading.load_tokenizer(config.checkpoint)
        split = split if split is not None else data_files.load_split(config)
        loading.validate_for_tokenizer(config, tokenizer)
        return cls(config, tokenizer, split, functools.lru_cache(maxsize=1)(model_loader))

    @once
    def first_batch(self) -> FirstBatch:
        """The first batch as `model.fit` gets it (raises what the tokenizer raises: see `batch_exception`)."""
        return build_first_batch(self.split, self.tokenizer, self.config)

    @once
    def batch_exception(self) -> Exception | None:
        """What tokenizing the first batch raised (data.batch's finding), or None when it built."""
        try:
            _ = self.first_batch
        except Exception as exc:  # the tokenizer's or the user's recipe's own error, whatever its type
            return exc
        return None

    @property
    def classifier(self) -> tuple[Any, str | None]:
        """(the model under test, None), or (None, why it cannot be loaded as a sequence classifier)."""
        config = self.config
        try:
            return self.model_loader(config.checkpoint, config.effective_num_labels, config.seed), None
        except NotClassifierError as exc:
            return None, str(exc)

    @once
    def missing_columns(self) -> list[str]:
        """The task's text and label columns the split lacks."""
        expected = list(self.config.glue_task.text_columns) + [LABEL]
        return [column for column in expected if column not in self.split.column_names]

    @once
    def text_problems(self) -> dict:
        """The task's text cells that are empty or not text, by column (see batches.text_cell_problems)."""
        return text_cell_problems(self.split, self.config.glue_task)

    @once
    def not_prose(self) -> dict:
        """The task's text columns with cells that hold no words, by column (see batches.not_prose)."""
        return not_prose(self.split, self.config.glue_task)

    @once
    def unreadable_scores(self) -> int:
        """How many STS-B scores are NaN (empty or not a number in the file)."""
        if not self.config.glue_task.regression or LABEL not in self.split.column_names:
            return 0
        return int(np.isnan(split_labels(self.split).astype(float)).sum())

    @once
    def unusable_labels(self) -> int:
        """How many classification labels could not be read as the task's (empty, not whole, unknown names)."""
        if self.config.glue_task.regression or LABEL not in self.split.column_names:
            return 0
        return int((split_labels(self.split) == UNUSABLE_LABEL).sum())

    @once
    def out_of_range_labels(self) -> int:
        """How many labels of the split the model's head cannot take (training stops at the first one on CPU)."""
        if self.config.glue_task.regression or LABEL not in self.split.column_names:
            return 0
        return sum(invalid_labels(split_labels(self.split), self.config.glue_task,
                                  self.config.effective_num_labels).values())

    @once
    def beyond_head_labels(self) -> int:
        """How many of those are labels of the (known) task that a head built with fewer outputs cannot take:
        model.config's cause, not the data's."""
        task, num_labels = self.config.glue_task, self.config.effective_num_labels
        if task.regression or not task.known or LABEL not in self.split.column_names or num_labels >= task.num_labels:
            return 0
        labels = split_labels(self.split)
        return int(((labels >= num_labels) & (labels < task.num_labels)).sum())

    @once
    def countable_labels(self) -> int:
        """How many labels of the split the label checks can count: ids in [0, K) for the wider of the head and the
        task (a class beyond either is data.label_range's to name), or STS-B scores from 0 to 5."""
        if LABEL not in self.split.column_names:
            return 0
        labels, task = split_labels(self.split), self.config.glue_task
        width = max(self.config.effective_num_labels, task.num_labels)
        return len(labels) - sum(invalid_labels(labels, task, width).values())

    @once
    def has_labels(self) -> bool:
        """False for a split whose labels are all -1 (a GLUE test split)."""
        return bool(self.config.glue_task.regression or (split_labels(self.split) >= 0).any())

    @once
    def forward(self):
        """The first batch through the model under test, eagerly, once: model.forward's measurement, which the Model
        checks of the batch read (its layer outputs are kept only when some are not finite: model.nan_origin traces
        them). Needs the model and the batch (the runner's "model" and "batch" needs)."""
        from diagnostics.keras.measurement import kept, run_forward

        return kept(run_forward(self.classifier[0], self.first_batch.tf_batch))

    @once
    def batch_step(self):
        """One real train step on a copy of the model, on the first batch as `model.fit` gets it (its labels as they
        are), taken once for the Model checks that read it (`measurement.ModelStep`)."""
        from diagnostics.keras.measurement import take_step

        model, batch = self.classifier[0], self.first_batch.tf_batch
        with self._step_copy(model, batch, other="in_range_step") as copy:
            return take_step(model, batch, self.config, copy=copy)

    @once
    def in_range_step(self):
        """One real train step on a copy of the model, on the first batch with its labels drawn in range (so an
        out-of-range label, data.label_range's finding, hides nothing else): taken once, read by hparams.loss and by
        `gradients_stopped`. None without a model or a batch."""
        from diagnostics.keras.training import labels_in_range, one_train_step

        model, _ = self.classifier
        batch = self.first_batch.tf_batch
        if model is None or batch is None:
            return None
        if not self.config.glue_task.regression:
            batch, _ = labels_in_range(batch, head_of(model).num_labels, self.config.seed)
        with self._step_copy(model, batch, other="batch_step") as copy:
            return one_train_step(copy, batch, self.config)

    @contextlib.contextmanager
    def _step_copy(self, model, batch, *, other: str):
        """A copy of `model` holding its weights, for one train step: the two single steps (`batch_step`,
        `in_range_step`) share one copy, each from the model's own weights, instead of copying a model twice (3 to
        4 s each for a six-layer functional model on a CPU) within one call of the runner; let go once `other` has
        been taken too, or when the call ends (`let_go_of_step_copy`). One step at a time: two threads never train
        the same copy."""
        from diagnostics.keras.keras_model import copy_weights, fresh_copy
        from diagnostics.keras.training import split_batch

        with self._stepper_lock:
            if self._stepper and self._stepper[0][0] is model:
                copy = self._stepper[0][1]
                copy_weights(model, copy)
            else:
                self._stepper.clear()
                copy = fresh_copy(model, split_batch(batch)[0])
                self._stepper.append((model, copy))
            try:
                yield copy
            finally:
                if other in self.__dict__:  # both steps taken: nothing else trains this copy
                    self._stepper.clear()

    def let_go_of_step_copy(self) -> None:
        """Drop the single steps' copy (the runner does at the end of each call, so a context kept for every session
        holds no copy when only one of the two steps was taken)."""
        with self._stepper_lock:
            self._stepper.clear()

    @property
    def gradients_stopped(self) -> bool:
        """True when that step gives every trainable variable no gradient or an all-zero one: then no training
        measurement can show anything but that."""
        record = self.in_range_step
        return record is not None and bool(record.gradients) and not record.error and all(
            grad is None or (grad.finite and grad.zero) for _, grad in record.gradients)

    def training_batches(self, count: int) -> tuple[list, Any]:
        """(the first `count` batches `model.fit` sees, with the first batch first; a batch of rows after them).

        Raises:
            ValueError: the configured columns or tokenizer cannot produce batches (see data.batch).
        """
        if count not in self._training:
            batches = training_batches(self.split, self.tokenizer, self.config, count=count, skip=1)
            held = build_batch(self.split, self.tokenizer, self.config,
                               held_out_indices(len(self.split), self.config, count * self.config.batch_size))
            self._training[count] = ([self.first_batch.tf_batch] + batches, held.tf_batch)
        return self._training[count]

    @property
    def first_labels(self) -> np.ndarray:
        return np.asarray(self.first_batch.rows[LABEL])
