"""A user's `tf.data.Dataset` (or arrays, or a `keras.utils.Sequence`) read back into rows the checks can
scan, with its label shape and how it batches."""

from __future__ import annotations


from dataclasses import dataclass
from typing import Any

import numpy as np



from diagnostics.i18n import msg
from diagnostics.keras.batches import COLLATOR_LABEL, LABEL, sentence_segments
from diagnostics.config.run import Recipe
from diagnostics.core.errors import InputError
from diagnostics.config.tasks import get_task
from diagnostics.keras.keras_model import class_ids, input_roles
from diagnostics.usercode.task_finding import find_task


# Rows read back from a `tf.data.Dataset` whose source split is unknown: enough for the split-level checks'
# counts to mean something, few enough to take seconds (each batch passes through the user's collator).
READ_BACK_ROWS = 2048


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
        if ids.ndim == 3 and ids.shape[1] == 1:  # huggingface/transformers#3727 (benchmarks/reported)
            raise InputError(msg("The dataset's input_ids are batches of rows of one row each (shape {shape}), where "
                                 "the model reads (rows, tokens): what a tokenizer called on one text at a time with "
                                 "return_tensors gives, stacked.", shape=list(ids.shape)),
                             fix="input_ids = np.concatenate(input_ids, axis=0)  # the same for attention_mask; or "
                                 "tokenizer(list_of_texts, padding=True, truncation=True, return_tensors='np') at once")
        if ids.ndim != 2:
            raise InputError(msg("The dataset's input_ids are not batches of rows (shape {shape}).",
                                 shape=list(ids.shape)))
        batch_rows = batch_rows or ids.shape[0]
        mask = np.asarray(inputs["attention_mask"]) if "attention_mask" in inputs else \
            (ids != tokenizer.pad_token_id) if tokenizer.pad_token_id is not None else np.ones_like(ids)
        lengths = mask.sum(axis=1).astype(int)
        widths.append((ids.shape[1], int(lengths.max()) if len(lengths) else 0))
        ys = shapes.read(y) if y is not None else None
        arrays = {key: np.asarray(value) for key, value in inputs.items()}
        for row in range(ids.shape[0]):
            length = int(lengths[row])
            for key, value in arrays.items():
                columns.setdefault(key, []).append(
                    value[row][:length].tolist() if value.ndim == 2 else value[row].item()
                )
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


def one_pass(dataset):
    """One pass of a `tf.data` dataset that repeats (`.repeat()` before or after its `batch`), batched as fit gets
    it: the data a repeated pipeline goes over each epoch, so its rows are not read as repeats of each other; None
    for a dataset that does not repeat, or whose one pass cannot be rebuilt (a batch size not known)."""
    import tensorflow as tf

    from diagnostics.keras.internals import repeated_input

    found = repeated_input(dataset) if hasattr(dataset, "element_spec") else None
    if found is None:
        return None
    inner, batch = found
    outer_rank = _rank(dataset.element_spec)
    inner_rank = _rank(inner.element_spec)
    if inner_rank == outer_rank:  # repeated after its batch: one pass is its batches
        one = inner
    elif inner_rank is not None and outer_rank == inner_rank + 1 and batch:  # rows repeated, then batched
        one = inner.batch(batch)
    else:
        return None
    cardinality = int(one.cardinality())
    return one if cardinality not in (int(tf.data.INFINITE_CARDINALITY), 0) else None


def _rank(spec) -> int | None:
    """The rank of a dataset element's first tensor (its inputs' token ids, first in Keras's order)."""
    import tensorflow as tf

    flat = tf.nest.flatten(spec)
    return flat[0].shape.rank if flat and hasattr(flat[0], "shape") else None


def arrays_as_dataset(x, y, batch_size=None):
    """`fit(x, y)` with in-memory arrays (or a dict of them) as the `tf.data.Dataset` Keras makes of them, batched
    as `fit` batches them (32 rows unless batch_size= was given)."""
    import tensorflow as tf

    # A list of arrays is the model's inputs in order, as Keras reads it; tf.data would stack a list into one tensor.
    inputs = dict(x) if hasattr(x, "keys") else tuple(x) if isinstance(x, list) else x
    return tf.data.Dataset.from_tensor_slices((inputs, np.asarray(y))).batch(int(batch_size or 32))


def batches_of(data):
    """The batches of what `fit` got, in order: a `tf.data.Dataset` or any iterable as it is, a
    `keras.utils.Sequence` by index."""
    if hasattr(data, "__getitem__") and hasattr(data, "__len__") and not isinstance(data, (dict, list, tuple)):
        return (data[index] for index in range(len(data)))
    return iter(data)


def _parts(element, input_names: list[str] | None) -> tuple[dict, Any, str]:
    """(the inputs as a dict of arrays, the labels or None, "separate" or "inputs") of one batch."""
    # As Keras unpacks what a dataset or Sequence yields (`unpack_x_y_sample_weight`): a tuple or list of two or
    # three is (x, y[, sample_weight]) whatever it holds, of one is (x,); anything else is x alone.
    if isinstance(element, (tuple, list)) and len(element) in (2, 3):
        inputs, y = element[0], element[1]
    elif isinstance(element, (tuple, list)) and len(element) == 1:
        inputs, y = element[0], None
    else:
        inputs, y = element, None
    roles = input_roles(input_names) or {}  # the model's own names read as the checks' keys (input_word_ids)
    if isinstance(inputs, (tuple, list)):
        names = [roles.get(name, name) for name in input_names] if input_names and len(input_names) == len(inputs) \
            else ["input_ids", "attention_mask", "token_type_ids"][:len(inputs)]
        inputs = dict(zip(names, inputs, strict=False))
    elif _is_array(inputs):
        inputs = {"input_ids": inputs}
    inputs = {roles.get(key, key): value for key, value in dict(inputs).items()}
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
        if (
            np.issubdtype(values.dtype, np.floating)
            and values.size
            and np.all(np.mod(values[np.isfinite(values)], 1) == 0)
        ):
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
    """Batches rows read back as the user's pipeline made them: each sequence column padded per batch or to the one
    length it was padded to, under the user's own names (a model's inputs named `attention_masks` are the user's to
    name; `DataCollatorWithPadding` pads only the names it knows), the labels written as they came (`LabelShape`)
    and renamed `labels` as `DataCollatorWithPadding` renames them. (`to_tf_dataset` gives every integer column as
    int64 whatever it was; Keras casts each input to its `Input`'s dtype.)"""

    def __init__(self, tokenizer, padded_to: int | None, labels: LabelShape | None):
        self.padded_to, self.labels = padded_to, labels
        self.fills = {"input_ids": tokenizer.pad_token_id or 0,
                      "token_type_ids": getattr(tokenizer, "pad_token_type_id", 0) or 0}
        self.left = getattr(tokenizer, "padding_side", "right") == "left"

    def __call__(self, features):
        batch = {}
        for key in features[0]:
            values = [feature[key] for feature in features]
            if isinstance(values[0], (list, tuple, np.ndarray)):
                width = self.padded_to or max(len(value) for value in values)
                fill = self.fills.get(key, 0)
                padded = [[fill] * (width - len(value)) + list(value) if self.left else
                          list(value) + [fill] * (width - len(value)) for value in values]
                batch[key] = np.asarray(padded)
            else:
                batch[key] = np.asarray(values)
        if LABEL in batch:
            labels = batch.pop(LABEL)
            batch[COLLATOR_LABEL] = self.labels.write(labels) if self.labels is not None else labels
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
