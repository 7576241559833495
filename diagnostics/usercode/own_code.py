"""The user's own pipeline: what their code built (a model, the `tf.data.Dataset` given to `fit`, a tokenizer,
the compile settings, the `to_tf_dataset` call that made the dataset), read into the run configuration and run
context every check already runs on. Nothing here changes the user's objects."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from diagnostics.usercode import hooks

from diagnostics.keras import keras_model

from diagnostics.keras import loading
from diagnostics.i18n import joined, msg
from diagnostics.keras.batches import COLLATOR_LABEL, LABEL, sentence_segments
from diagnostics.config.run import Recipe, RunConfig
from diagnostics.core.context import RunContext
from diagnostics.core.errors import InputError
from diagnostics.core.fixes import keras_name_in
from diagnostics.config.tasks import TASKS, get_task
from diagnostics.keras.keras_model import class_ids, describe_model, head_of, input_names, is_transformers_classifier
from diagnostics.keras.internals import checkpoint_path, is_dummy_loss, optimizer_rate, uses_internal_loss
from diagnostics.keras.optimizers import clone_optimizer, plain_rate

# Rows read back from a `tf.data.Dataset` whose source split is unknown: enough for the split-level checks'
# counts to mean something, few enough to take seconds (each batch passes through the user's collator).
READ_BACK_ROWS = 2048
# When the model is not compiled, the checks assume the course's fixed setup, and say so.
UNCOMPILED_RATE = 5e-5
LOSS_STRINGS = {"sparse_categorical_crossentropy": "sparse_categorical_crossentropy", "mse": "mse",
                "mean_squared_error": "mse", "categorical_crossentropy": "categorical_crossentropy",
                "binary_crossentropy": "binary_crossentropy"}
# Keras loss classes (and their functions) read as `config.LOSSES`/`CODE_LOSSES` keys.
LOSS_CLASSES = {"SparseCategoricalCrossentropy": "sparse_categorical_crossentropy",
                "CategoricalCrossentropy": "categorical_crossentropy", "BinaryCrossentropy": "binary_crossentropy"}


@dataclass
class Captured:
    """What the user's code built, as found (`diagnose` arguments, or `trace` at the first `fit`).

    Attributes:
        dataset: what `fit` got (a `tf.data.Dataset`), or None when the code stopped before making it.
        source: the `datasets.Dataset` the user's `to_tf_dataset` was called on, when that call was seen.
        to_tf_dataset: that call's keyword arguments (columns, label_cols, batch_size, shuffle, collate_fn...).
        compile_args: `{"optimizer": ..., "loss": ...}` exactly as given to `compile`, when that call was seen.
        source_hint: the split behind a dataset whose batches were changed after `to_tf_dataset` (a `map` or a
            `batch`): the rows are read back, the task and label names still come from it.
        origin: where it came from, in words ("train.py", "diagnose()").
        namespace: the global names of the code that built them (how it names Keras, for the fixes).
        tokenization: the truncation, max_length and padding of the code's last tokenizer call on text, when seen.
    """

    model: Any = None
    dataset: Any = None
    tokenizer: Any = None
    task: str | None = None
    source: Any = None
    to_tf_dataset: dict | None = None
    compile_args: dict | None = None
    source_hint: Any = None
    origin: str = "your code"
    notes: list[str] = field(default_factory=list)
    namespace: dict | None = None  # the code's global names, to write fixes in its names (default: __main__'s)
    tokenization: dict | None = None  # the code's last tokenizer call on text (`hooks.tokenization`)
    stale_train_step: tuple[int, int, int] | None = None  # `RunConfig.stale_train_step`, seen by the trace


# ---------------------------------------------------------------- compile settings


def read_loss(model, given: Any = None, *, seen: bool = False) -> str:
    """The `config.LOSSES` key of the model's loss, from what `compile` got (`given`, when `seen`) or the model.

    Raises:
        InputError: a loss the checks do not model (they would judge it wrongly).
    """
    if not seen:
        if getattr(model, "optimizer", None) is None:
            return "internal"
        if uses_internal_loss(model):
            return "internal"
        given = getattr(model, "loss", None)
    if given is None or (isinstance(given, str) and given in ("auto", "auto_with_warning", "passthrough")):
        return "internal"
    if is_dummy_loss(given):
        return "internal"
    if isinstance(given, str):
        if given in LOSS_STRINGS:
            return LOSS_STRINGS[given]
    else:
        name = type(given).__name__ if not callable(given) or hasattr(given, "get_config") else given.__name__
        if name in LOSS_CLASSES:
            from_logits = bool(given.get_config().get("from_logits"))
            return f"{name}(from_logits={from_logits})"
        if name in LOSS_STRINGS:
            return LOSS_STRINGS[name]
        if name in ("MeanSquaredError", "mean_squared_error"):
            return "mse"
    raise InputError(msg("compile(loss={loss}) is not a loss the debugger can judge: it reads the model's internal "
                         "loss, sparse, categorical and binary cross-entropy (a string or an object, from logits or "
                         "not) and mean squared error.", loss=repr(given)))


def read_optimizer(model, given: Any = None, *, seen: bool = False) -> dict[str, Any]:
    """The configuration's optimizer fields (optimizer, learning_rate, weight_decay, train_steps, warmup_steps)
    for the optimizer the user compiled with.

    Raises:
        InputError: an optimizer the checks do not model.
    """
    if seen and isinstance(given, str):
        if given.lower() == "adam":
            return {"optimizer": "adam"}
        raise InputError(msg("compile(optimizer={optimizer}): the debugger models Adam ('adam', Adam, AdamW or "
                             "transformers.create_optimizer); other optimizers are not judged.", optimizer=repr(given)))
    optimizer = _optimizer_of(model, given)
    if optimizer is None:
        return {"optimizer": "Adam", "learning_rate": UNCOMPILED_RATE}
    name = type(optimizer).__name__
    rate = optimizer_rate(optimizer)
    schedule = _schedule(rate)
    if schedule is not None:
        weight_decay = float(getattr(optimizer, "weight_decay_rate", 0.0) or 0.0)
        return {"optimizer": "create_optimizer", "weight_decay": weight_decay, **schedule}
    value = plain_rate(rate)
    if name == "AdamWeightDecay":
        return {"optimizer": "create_optimizer", "learning_rate": value, "train_steps": 1, "warmup_steps": 0,
                "weight_decay": float(optimizer.weight_decay_rate or 0.0)}
    if name == "AdamW":
        return {"optimizer": "AdamW", "learning_rate": value, "weight_decay": float(optimizer.weight_decay or 0.0)}
    if name == "Adam":
        return {"optimizer": "Adam", "learning_rate": value}
    raise InputError(msg("compile(optimizer={optimizer}): the debugger models Adam ('adam', Adam, AdamW or "
                         "transformers.create_optimizer); other optimizers are not judged.", optimizer=f"{name}(...)"))


def _optimizer_of(model, given: Any = None):
    """The optimizer the model trains with: the one it was compiled with, else one given as an object (a custom
    loop's, given to `diagnose(optimizer=)` or seen at its first `apply_gradients`)."""
    optimizer = getattr(model, "optimizer", None) if model is not None else None
    if optimizer is None and given is not None and not isinstance(given, str):
        return given
    return optimizer


def _schedule(rate) -> dict[str, Any] | None:
    """create_optimizer's schedule (a linear decay, after a warmup or not) as configuration fields."""
    kind = type(rate).__name__
    if kind == "WarmUp":
        decay = rate.decay_schedule_fn
        warmup = int(rate.warmup_steps)
        return {"learning_rate": plain_rate(rate.initial_learning_rate), "warmup_steps": warmup,
                "train_steps": warmup + int(getattr(decay, "decay_steps", 0))}
    if kind == "PolynomialDecay":
        return {"learning_rate": plain_rate(rate.initial_learning_rate), "warmup_steps": 0,
                "train_steps": int(rate.decay_steps)}
    if hasattr(rate, "get_config") and not hasattr(rate, "numpy"):
        raise InputError(msg("a {kind} learning-rate schedule is not one the debugger models (create_optimizer's "
                             "warmup and linear decay are).", kind=kind))
    return None


# ---------------------------------------------------------------- the task


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
        reasons = [msg("the rows (sentence pairs)") if pair else msg("the rows (single sentences)")]
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


# ---------------------------------------------------------------- a dataset read back


def read_back(dataset, tokenizer, *, task: str | None, model_config=None, hint=None, limit: int = READ_BACK_ROWS,
              input_names: list[str] | None = None):
    """A `datasets.Dataset` of the rows a dataset yields (its first `limit` rows, padding removed, the texts decoded
    into the task's columns), and the recipe that batches them as the user's dataset did: padded per batch or to
    one length, the labels sparse, one-hot or a column, as they came.

    Args:
        dataset: what `fit` got: a `tf.data.Dataset`, a `keras.utils.Sequence`, or any iterable of batches (each
            `(inputs, labels[, weights])` or a dict holding the labels), the inputs a dict of token ids or a list in
            the model's input order (`input_names`).
        hint: the split the dataset was made from, when known but its batches were changed since (its columns and
            label names still tell the task).

    Returns:
        (split, recipe, TaskFinding, rows read, rows in the dataset or None, rows a batch)
    """
    from datasets import Dataset

    columns: dict[str, list] = {}
    labels: list = []
    layout, read, batch_rows = None, 0, 0
    shapes = LabelShape()
    widths: list[tuple[int, int]] = []  # (a batch's padded width, its longest row)
    for element in batches_of(dataset):
        inputs, y, layout = _parts(element, input_names)
        if "input_ids" not in inputs:
            raise InputError(msg("The dataset's batches have no input_ids (they hold {inputs}): the checks need the "
                                 "token ids the model reads.", inputs=", ".join(inputs)))
        ids = np.asarray(inputs["input_ids"])
        if ids.ndim != 2:
            raise InputError(msg("The dataset's input_ids are not batches of rows (shape {shape}).",
                                 shape=list(ids.shape)))
        batch_rows = batch_rows or ids.shape[0]
        mask = np.asarray(inputs["attention_mask"]) if "attention_mask" in inputs else \
            (ids != tokenizer.pad_token_id) if tokenizer.pad_token_id is not None else np.ones_like(ids)
        lengths = mask.sum(axis=1).astype(int)
        widths.append((ids.shape[1], int(lengths.max()) if len(lengths) else 0))
        ys = shapes.read(y) if y is not None else None
        for row in range(ids.shape[0]):
            length = int(lengths[row])
            for key, value in inputs.items():
                value = np.asarray(value)
                columns.setdefault(key, []).append(value[row][:length].tolist() if value.ndim == 2 else value[row].item())
            if ys is not None:
                labels.append(ys[row])
            read += 1
        if read >= limit:
            break
    if not read:
        raise InputError(msg("The dataset yields no rows."))
    label_array = np.asarray(labels) if labels else None
    segments = [sentence_segments(ids, tokenizer) for ids in columns["input_ids"]]
    pair = max(len(parts) for parts in segments)
    finding = find_task(task, columns=list(hint.column_names) if hint is not None else None,
                        labels=_labels(hint) if hint is not None else label_array,
                        class_names=_class_names(hint) if hint is not None else None, model_config=model_config,
                        segments=pair)
    text_columns = get_task(finding.name).text_columns
    with_texts = {column: [tokenizer.decode(parts[i], skip_special_tokens=True) if i < len(parts) else ""
                           for parts in segments] for i, column in enumerate(text_columns)}
    data = {**with_texts, **columns}
    if labels:
        data[LABEL] = labels
    split = Dataset.from_dict(data)
    wanted = [key for key in columns] + ([LABEL] if labels and layout == "inputs" else [])
    padded_to = fixed_width(widths)
    recipe = Recipe(columns=tuple(wanted), label_cols=(LABEL,) if labels and layout == "separate" else None,
                    collate_fn=ReadBackCollator(tokenizer, padded_to, shapes if labels else None),
                    origin="the dataset given to fit, read back")
    return split, recipe, finding, read, _rows_in(dataset, read, batch_rows), batch_rows


def arrays_as_dataset(x, y, batch_size=None):
    """`fit(x, y)` with in-memory arrays (or a dict of them) as the `tf.data.Dataset` Keras makes of them, batched
    as `fit` batches them (32 rows unless batch_size= was given)."""
    import tensorflow as tf

    inputs = dict(x) if hasattr(x, "keys") else x
    return tf.data.Dataset.from_tensor_slices((inputs, np.asarray(y))).batch(int(batch_size or 32))


def batches_of(data):
    """The batches of what `fit` got, in order: a `tf.data.Dataset` or any iterable as it is, a
    `keras.utils.Sequence` by index."""
    if hasattr(data, "__getitem__") and hasattr(data, "__len__") and not isinstance(data, (dict, list, tuple)):
        return (data[index] for index in range(len(data)))
    return iter(data)


def _parts(element, input_names: list[str] | None) -> tuple[dict, Any, str]:
    """(the inputs as a dict of arrays, the labels or None, "separate" or "inputs") of one batch."""
    if isinstance(element, (tuple, list)) and len(element) in (2, 3) and not _is_array(element[0]):
        inputs, y = element[0], element[1]
    elif isinstance(element, (tuple, list)) and len(element) in (2, 3) and input_names and len(input_names) == 1:
        inputs, y = element[0], element[1]
    else:
        inputs, y = element, None
    if isinstance(inputs, (tuple, list)):
        names = input_names if input_names and len(input_names) == len(inputs) else \
            ["input_ids", "attention_mask", "token_type_ids"][:len(inputs)]
        inputs = dict(zip(names, inputs))
    elif _is_array(inputs):
        inputs = {"input_ids": inputs}
    inputs = dict(inputs)
    layout = "separate" if y is not None else "inputs"
    if y is None:
        label_key = next((key for key in (COLLATOR_LABEL, LABEL) if key in inputs), None)
        y = inputs.pop(label_key) if label_key else None
    return inputs, y, layout


def _is_array(value) -> bool:
    return hasattr(value, "shape") and hasattr(value, "dtype")


@dataclass
class LabelShape:
    """How a pipeline's labels come: "ids" (one class id or score a row), "one_hot" (a row of K), or "column"
    (an (n, 1) column), with their dtype; read back as class ids and written again the same way."""

    kind: str = "ids"
    width: int = 0
    dtype: str = ""

    def read(self, y) -> list:
        """A batch's labels as ids (one-hot rows by their one), remembering how they came."""
        values = np.asarray(y)
        self.dtype = self.dtype or str(values.dtype)
        if values.ndim == 2:
            self.kind, self.width = ("one_hot", int(values.shape[1])) if values.shape[1] > 1 else ("column", 0)
            if self.kind == "one_hot":
                return class_ids(values).tolist()
        values = class_ids(values)
        if np.issubdtype(values.dtype, np.floating) and values.size and np.all(np.mod(values[np.isfinite(values)], 1) == 0):
            return [int(value) if np.isfinite(value) else float(value) for value in values]
        return values.tolist()

    def write(self, ids) -> np.ndarray:
        """Class ids as the pipeline gave them."""
        values = np.asarray(ids)
        if self.kind == "one_hot":
            return np.eye(self.width, dtype=self.dtype)[values.astype(int)]
        values = values.astype(self.dtype) if self.dtype else values
        return values[:, None] if self.kind == "column" else values


def fixed_width(widths: list[tuple[int, int]]) -> int | None:
    """The one length every batch was padded to, when the pipeline pads to a length (padding="max_length") rather
    than to each batch's longest row; None for padding per batch."""
    if not widths or len({width for width, _ in widths}) > 1:
        return None
    width = widths[0][0]
    return width if any(longest < width for _, longest in widths) else None


class ReadBackCollator:
    """Batches rows read back as the user's pipeline made them: `DataCollatorWithPadding` per batch or to the one
    length it padded to, and the labels written as it gave them (`LabelShape`)."""

    def __init__(self, tokenizer, padded_to: int | None, labels: LabelShape | None):
        from transformers import DataCollatorWithPadding

        self.padded_to, self.labels = padded_to, labels
        self.pad = DataCollatorWithPadding(tokenizer, return_tensors="np",
                                           **({"padding": "max_length", "max_length": padded_to} if padded_to else {}))

    def __call__(self, features):
        batch = dict(self.pad(features))
        if self.labels is not None and self.labels.kind != "ids":
            for key in (COLLATOR_LABEL, LABEL):
                if key in batch:
                    batch[key] = self.labels.write(batch[key])
        return batch


def _rows_in(dataset, read: int, batch_rows: int) -> int | None:
    """Rows in a batched `tf.data.Dataset` where its cardinality is known, or a `keras.utils.Sequence`."""
    import tensorflow as tf

    if not hasattr(dataset, "cardinality"):
        if not hasattr(dataset, "__len__"):
            return None
        batches = len(dataset)
    else:
        batches = int(dataset.cardinality())
        if batches in (int(tf.data.INFINITE_CARDINALITY), int(tf.data.UNKNOWN_CARDINALITY)):
            return None
    # More rows read than all batches but the last hold: every batch was read, the last one short.
    return read if read > (batches - 1) * batch_rows else batches * batch_rows


# ---------------------------------------------------------------- the run


def load_tokenizer_for(model):
    """The tokenizer saved with the model's checkpoint, for `diagnose(tokenizer=None)`."""
    name = checkpoint_path(model)
    try:
        return loading.load_tokenizer(name)
    except Exception as exc:
        raise InputError(msg("No tokenizer was given and none loads from {source} ({reason}): pass "
                             "tokenizer=AutoTokenizer.from_pretrained(...).", source=name or msg("the model"),
                             reason=exc)) from None


def build_run(captured: Captured) -> RunContext:
    """The run context the checks run on for the user's own objects.

    Raises:
        InputError: nothing to check, or settings the checks cannot judge.
    """
    model, tokenizer = captured.model, captured.tokenizer
    if tokenizer is None:
        if model is None:
            raise InputError(msg("Nothing to check: neither a model nor a tokenizer was found."))
        tokenizer = captured.tokenizer = load_tokenizer_for(model)
    if tokenizer.pad_token is None and tokenizer.eos_token is not None:
        captured.notes.append(msg("The tokenizer has no padding token (see data.batch)."))
    compiled = _compile_fields(captured)
    if model is not None:
        _keras_model_fits(model, compiled["loss"])
    num_labels = head_of(model, compiled["loss"]).num_labels if model is not None else None
    source, kwargs = captured.source, dict(captured.to_tf_dataset or {})
    model_config = keras_model.model_config(model) if model is not None else None
    if source is not None:
        finding = find_task(captured.task, columns=list(source.column_names), labels=_labels(source),
                            class_names=_class_names(source), model_config=model_config)
        recipe = Recipe(columns=_names(kwargs.get("columns")), label_cols=_names(kwargs.get("label_cols")),
                        collate_fn=kwargs.get("collate_fn"), collate_fn_args=kwargs.get("collate_fn_args"),
                        origin=captured.origin)
        batch_size, shuffle = int(kwargs.get("batch_size") or 8), bool(kwargs.get("shuffle", False))
    elif captured.dataset is not None:
        with hooks.watch():  # a pipeline that tokenizes as it yields (a Sequence, a generator) does so now
            calls = hooks.seen_calls["count"]
            source, recipe, finding, read, total, batch_size = read_back(
                captured.dataset, tokenizer, task=captured.task, model_config=model_config,
                hint=captured.source_hint, input_names=input_names(model) if model is not None else None)
            if captured.tokenization is None and hooks.seen_calls["count"] > calls:
                captured.tokenization = hooks.tokenization()
        shuffle = False  # the rows as read, in the dataset's order
        if total is None or read < total:
            captured.notes.append(
                msg("Read back the first {read:,} rows of the dataset (of {total:,}): the split-level checks count "
                    "those.", read=read, total=total) if total else
                msg("Read back the first {read:,} rows of the dataset: the split-level checks count those.", read=read))
    else:
        raise InputError(msg("Nothing to check: no dataset was found."))
    if finding.candidates:
        captured.notes.append(task_choice_text(finding))
    elif finding.how != "given":
        captured.notes.append(msg("Task {task}, found from {how}; pass the task to set it.", task=finding.name,
                                  how=finding.how))
    config = RunConfig(
        user_optimizer=_user_optimizer(model, captured), task_candidates=finding.candidates,
        label_names=finding.label_names,
        checkpoint=_checkpoint_name(model, tokenizer), task=finding.name, split=str(getattr(source, "split", None) or "train"),
        data_source="code", num_labels=num_labels, batch_size=batch_size,
        **dict(zip(("max_length", "truncation"), _truncation(captured.tokenization, tokenizer, source))),
        columns=recipe.columns, labels_in="separate" if recipe.label_cols else "inputs", shuffle=shuffle,
        recipe=recipe, model_inputs=tuple((input_names(model) if model is not None else None) or ()) or None,
        keras_name=keras_name_in(captured.namespace if captured.namespace is not None else vars(sys.modules["__main__"])),
        stale_train_step=captured.stale_train_step,
        **compiled,
    )
    if model is not None and not is_transformers_classifier(model):
        captured.notes.append(msg("The model is a Keras model with its own head ({model}): the checks read its output "
                                  "layer and train copies of it.", model=describe_model(model)))
    if model is not None and getattr(model, "optimizer", None) is None and not captured.compile_args:
        captured.notes.append(msg("The model is not compiled (fit would raise): checked as {code} with the model's "
                                  "internal loss.", code=f"compile(optimizer=Adam({UNCOMPILED_RATE:g}))"))
    return RunContext(config, tokenizer, source, _loader(model))


def _keras_model_fits(model, loss: str) -> None:
    """Refuse, with what to do, a Keras model the checks cannot read: no known output width, or no loss to train it
    with (only a Transformers model computes its own).

    Raises:
        InputError: as said.
    """
    if is_transformers_classifier(model):
        return
    try:
        head_of(model, loss)
    except ValueError as exc:
        raise InputError(msg("The model's output cannot be read: {reason}.", reason=exc)) from None
    if loss == "internal":
        raise InputError(msg("{model} has no loss of its own (only a Transformers model computes one): compile it "
                             "with a loss, e.g. {code}.", model=describe_model(model),
                             code='compile(optimizer=..., loss="sparse_categorical_crossentropy")'))


def _compile_fields(captured: Captured) -> dict[str, Any]:
    model, given = captured.model, captured.compile_args
    seen = given is not None
    if model is None and not seen:
        return {"loss": "internal", "optimizer": "Adam"}
    fields_ = read_optimizer(model, (given or {}).get("optimizer"), seen=seen)
    fields_["loss"] = read_loss(model, (given or {}).get("loss"), seen=seen)
    return fields_


def _user_optimizer(model, captured: Captured):
    """The optimizer object the user compiled with, for copies to clone (None for a string, which Keras builds with
    its defaults as the configuration does, or for no optimizer)."""
    given = (captured.compile_args or {}).get("optimizer")
    optimizer = _optimizer_of(model, given)
    if optimizer is None or isinstance(given, str):
        return None
    clone_optimizer(optimizer)  # one that cannot be rebuilt is said now, before any check trains
    return optimizer


def _loader(model):
    """A model loader for the run context that hands out the user's model (checks train copies, never it)."""
    def load(checkpoint: str, num_labels: int, seed: int = 0):
        if model is None:
            raise InputError(msg("The code stopped before it built a model."))
        return model
    return load


def _names(value) -> tuple[str, ...] | None:
    if value is None:
        return None
    return (value,) if isinstance(value, str) else tuple(value)


def _labels(source) -> np.ndarray | None:
    return np.asarray(source.data.column(LABEL).to_numpy()) if LABEL in source.column_names else None


def _class_names(source) -> list[str] | None:
    """The names of a split's `ClassLabel` label column (None for plain numbers or text)."""
    feature = getattr(source, "features", {}).get(LABEL) if LABEL in source.column_names else None
    return list(feature.names) if getattr(feature, "names", None) else None


def _truncation(call: dict | None, tokenizer, source) -> tuple[int, str]:
    """(the length the user's tokenization truncates at, where it comes from: `RunConfig.truncation`), from the
    code's own tokenizer call: its max_length ("call"; Transformers truncates at it even without truncation=True),
    the tokenizer's maximum for truncation=True without one ("model"), else the split's longest row ("none": the
    call does not truncate; "unknown": no call was seen)."""
    from diagnostics.config.run import MAX_LENGTH

    longest = _longest(source)
    if call is None:
        return longest, "unknown"
    truncating = call.get("truncation") not in (False, "do_not_truncate")
    if truncating and call.get("max_length"):
        return min(int(call["max_length"]), MAX_LENGTH), "call"
    maximum = call.get("model_max_length") or getattr(tokenizer, "model_max_length", None)
    if call.get("truncation") not in (None, False, "do_not_truncate") and maximum and maximum <= MAX_LENGTH:
        return int(maximum), "model"
    return longest, "none"  # no truncation, or at a maximum no text reaches


def _longest(source) -> int:
    """The longest tokenized row of the split: the user's truncation length, or the longest text when none cut."""
    import pyarrow.compute as pc

    if "input_ids" not in source.column_names or not len(source):
        return 128
    return max(1, int(pc.max(pc.list_value_length(source.data.column("input_ids"))).as_py() or 1))


def _checkpoint_name(model, tokenizer) -> str:
    """Where the model was loaded from (else the tokenizer), for the report."""
    name = checkpoint_path(model) or getattr(tokenizer, "name_or_path", "")
    return str(name) if name else (type(model).__name__ if model is not None else "your model")

