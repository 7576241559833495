"""Batches as `model.fit` gets them: the first batch, training batches and held-out rows, built through the real
`to_tf_dataset` + `DataCollatorWithPadding` path; shared by every stage."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from diagnostics.config.run import RunConfig
from diagnostics.config.tasks import STSB_RANGE, GlueTask
from diagnostics.i18n import Text, msg
from diagnostics.keras.tokenizer_locks import locked_collator, tokenizer_lock

LABEL = "label"
# DataCollatorWithPadding renames `label` to `labels`, so `to_tf_dataset` accepts either name.
COLLATOR_LABEL = "labels"


@dataclass
class FirstBatch:
    """The first training batch and what it was built from.

    Attributes:
        indices: the split rows in the batch, in batch order.
        rows: the raw columns of those rows (texts, label, idx).
        input_ids: token ids per row after truncation at max_length.
        full_lengths: token count per row without truncation.
        requested_columns / label_columns: what was passed to `to_tf_dataset`.
        tf_batch: the first element of that `tf.data.Dataset` (a dict, or `(dict, labels)`).
        error: "Type: message" when `to_tf_dataset` could not produce a batch.
    """

    indices: list[int]
    rows: dict[str, list]
    input_ids: list[list[int]]
    full_lengths: list[int]
    requested_columns: list[str]
    label_columns: list[str] | None
    tf_batch: Any = None
    error: str | None = None
    error_fix: str | None = None
    tokenized_columns: list[str] = field(default_factory=list)
    label_renamed: bool = True

    @property
    def available_columns(self) -> list[str]:
        """What `to_tf_dataset` can give: the tokenized columns, and `labels` where the collator renames `label`
        (`to_tf_dataset` always hands the collator the `label` column)."""
        columns = self.tokenized_columns
        renamed = self.label_renamed and LABEL in columns and COLLATOR_LABEL not in columns
        return list(self.tokenized_columns) + ([COLLATOR_LABEL] if renamed else [])


UNUSABLE_LABEL = -2  # a classification label that is empty, not a whole number, or not one of the task's names
LABEL_AS_WRITTEN = "label_as_written"  # the file's own text of each label, kept where some are UNUSABLE_LABEL

# Each random label shuffle draws from a stream of its own, so the learnability check's control never redraws
# the permutation the shuffled-labels bug injected (which would hand the control the texts' own labels back).
SHUFFLED_LABELS_BUG, LEARNABILITY_CONTROL = 7919, 1


def shuffled_labels(dataset, seed: int, stream: int):
    """The split with its label column permuted at random: every text keeps a label, but not its own.

    Args:
        stream: SHUFFLED_LABELS_BUG or LEARNABILITY_CONTROL, added to the seed.
    """
    permuted = np.random.default_rng(seed + stream).permutation(dataset.data.column(LABEL).to_numpy())
    return dataset.remove_columns(LABEL).add_column(LABEL, permuted)


def batch_indices(num_rows: int, config: RunConfig) -> list[int]:
    """The rows of the first batch: the first of the training order (seeded like `to_tf_dataset(shuffle=True)`)."""
    return training_order(num_rows, config)[:config.batch_size].tolist()


def tokenize(tokenizer, task: GlueTask, rows: dict[str, list], max_length: int | None, *, special: bool = True):
    """Tokenize rows as the course does: the task's text columns as a (pair of) sequence(s); `special=False` without
    the special tokens the tokenizer adds (rows a tokenizer of another library made, as KerasHub's WordPiece does)."""
    texts = [rows[column] for column in task.text_columns]
    with tokenizer_lock(tokenizer):
        if max_length is None:
            return tokenizer(*texts, truncation=False, add_special_tokens=special)
        return tokenizer(*texts, truncation=True, max_length=max_length, add_special_tokens=special)


def build_first_batch(split, tokenizer, config: RunConfig) -> FirstBatch:
    """Build the first batch through the real `to_tf_dataset` + `DataCollatorWithPadding` path.

    Only the batch's rows are tokenized, never the whole split.
    """
    return build_batch(split, tokenizer, config, batch_indices(len(split), config))


def build_batch(split, tokenizer, config: RunConfig, indices: list[int]) -> FirstBatch:
    """A batch of the given split rows, built as `model.fit` would get it."""
    batch, dataset = batched(split, tokenizer, config, indices, len(indices))
    if dataset is not None:
        try:
            batch.tf_batch = next(iter(dataset))
        except Exception as exc:
            batch.error = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0]}"
    return batch


def batched(split, tokenizer, config: RunConfig, indices: list[int], batch_size: int, *, lengths: bool = True):
    """The given split rows through the real `to_tf_dataset` + collator path, `batch_size` rows a batch in their
    order: (what the rows were built from, the `tf.data.Dataset`, or None when it could not be made: see `error`).

    Args:
        lengths: also tokenize the rows untruncated (`full_lengths`, what data.truncation reads).
    """
    from datasets import Dataset
    from transformers import DataCollatorWithPadding

    if config.recipe is not None:
        return user_batch(split, tokenizer, config, indices, batch_size, lengths=lengths)
    task = config.glue_task
    rows = split.select(indices).to_dict()
    missing = [column for column in task.text_columns if column not in rows]
    if missing:
        return FirstBatch(indices=indices, rows=rows, input_ids=[], full_lengths=[],
                          requested_columns=config.requested_columns(list(tokenizer.model_input_names)),
                          label_columns=config.label_columns(), tokenized_columns=list(rows),
                          error=f"KeyError: the split has no {', '.join(missing)} column, which {task.name} "
                                "needs"), None
    encoded = tokenize(tokenizer, task, rows, config.max_length)
    full = tokenize(tokenizer, task, rows, None)["input_ids"] if lengths else []
    tokenized = Dataset.from_dict({**rows, **{key: list(value) for key, value in encoded.items()}})
    batch = FirstBatch(
        indices=indices,
        rows=rows,
        input_ids=list(encoded["input_ids"]),
        full_lengths=[len(ids) for ids in full],
        requested_columns=config.requested_columns(list(tokenizer.model_input_names)),
        label_columns=config.label_columns(),
        tokenized_columns=tokenized.column_names,
    )
    if tokenizer.pad_token is None:
        batch.error = "ValueError: the tokenizer has no padding token, so DataCollatorWithPadding cannot pad the batch"
        batch.error_fix = ("tokenizer.pad_token = tokenizer.eos_token  "
                           "# and model.config.pad_token_id = tokenizer.pad_token_id")
        return batch, None
    collator = locked_collator(DataCollatorWithPadding(tokenizer, return_tensors="np"), tokenizer)
    try:
        return batch, tokenized.to_tf_dataset(
            columns=batch.requested_columns,
            # A one-element list triggers a FutureWarning about the output structure; a string gives (x, y).
            label_cols=batch.label_columns[0] if batch.label_columns and len(batch.label_columns) == 1
            else batch.label_columns,
            batch_size=batch_size,
            shuffle=False,
            collate_fn=collator,
            num_test_batches=shape_probes([len(ids) for ids in encoded["input_ids"]], len(indices)),
        )
    except Exception as exc:
        batch.error = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0]}"
        return batch, None


def user_batch(split, tokenizer, config: RunConfig, indices: list[int], batch_size: int, *, lengths: bool = True):
    """`batched` for the user's own `to_tf_dataset` call (`config.recipe`) on the user's own tokenized columns; the
    untruncated lengths come from tokenizing the task's text columns, where the split has them."""
    recipe = config.recipe
    task = config.glue_task
    rows = split.select(indices).to_dict()
    input_ids = [list(ids) for ids in rows.get("input_ids", [])]
    has_texts = all(column in rows for column in task.text_columns)
    full = ([] if not lengths else [len(ids) for ids in tokenize(tokenizer, task, rows, None)["input_ids"]]
            if has_texts and input_ids else [len(ids) for ids in input_ids])
    kwargs = recipe.to_tf_dataset_kwargs()
    requested = kwargs["columns"] or [c for c in split.column_names if c not in (LABEL, COLLATOR_LABEL)]
    batch = FirstBatch(indices=indices, rows=rows, input_ids=input_ids, full_lengths=full,
                       requested_columns=list(requested),
                       label_columns=list(recipe.label_cols) if recipe.label_cols else None,
                       tokenized_columns=list(split.column_names),
                       label_renamed=renames_label(recipe, rows, indices, split.column_names))
    if not input_ids:
        batch.error = "KeyError: the split has no input_ids column: it was never tokenized"
        columns = list(task.text_columns)
        batch.error_fix = (f"dataset = dataset.map(lambda rows: tokenizer(*(rows[c] for c in {columns!r}), "
                           "truncation=True), batched=True)")
        return batch, None
    try:
        probes = shape_probes([len(ids) for ids in input_ids], len(indices))
        dataset = split.select(indices).to_tf_dataset(**{**kwargs, "batch_size": batch_size, "shuffle": False,
                                                         "num_test_batches": probes})
        return batch, _keyed(dataset, kwargs["columns"], kwargs["label_cols"])
    except Exception as exc:
        batch.error = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0]}"
        if recipe.collate_fn is None and "shape" in str(exc):
            batch.error_fix = "to_tf_dataset(..., collate_fn=DataCollatorWithPadding(tokenizer, return_tensors='np'))"
        return batch, None


def _keyed(dataset, columns: list[str] | None, label_cols):
    """`to_tf_dataset` gives one input column as a bare tensor (`input_ids` alone): the same batches keyed by its
    name, as the checks read a batch's inputs by name (the model takes either)."""
    features = [column for column in columns or [] if column not in (label_cols or [])]
    if len(features) != 1:
        return dataset
    name = features[0]
    if label_cols:
        return dataset.map(lambda x, y: ({name: x}, y))
    return dataset.map(lambda x: {name: x})


def renames_label(recipe, rows: dict[str, list], indices: list[int], columns: list[str]) -> bool:
    """Whether the user's collator turns `label` into `labels` (DataCollatorWithPadding does; the default does not)."""
    if recipe.collate_fn is None or LABEL not in columns or not indices:
        return False
    try:
        one = {key: values[0] for key, values in rows.items() if key in (LABEL, "input_ids", "attention_mask")}
        return COLLATOR_LABEL in recipe.collate_fn([one], **(recipe.collate_fn_args or {}))
    except Exception:
        return False


def training_order(num_rows: int, config: RunConfig) -> np.ndarray:
    """The order `model.fit` meets the split's rows in: seeded like `to_tf_dataset(shuffle=True)`, else as stored."""
    return np.random.default_rng(config.seed).permutation(num_rows) if config.shuffle else np.arange(num_rows)


def held_out_indices(num_rows: int, config: RunConfig, trained_rows: int, size: int = 32) -> list[int]:
    """Rows after the first `trained_rows` of the training order, for scoring what training did; a split too
    small to spare any gives its last rows (then they overlap the training rows)."""
    order = training_order(num_rows, config)
    spare = order[trained_rows:trained_rows + size]
    return (spare if len(spare) >= min(8, size) else order[-min(size, num_rows):]).tolist()


def batches_of(split, tokenizer, config: RunConfig, rows: list[int]) -> list:
    """The given split rows as consecutive batches of the configured size, as `model.fit` gets them: through one
    `to_tf_dataset` (its map functions traced once, not once a batch); None for each when it cannot make them."""
    count = -(-len(rows) // config.batch_size)
    if not count:
        return []
    _, dataset = batched(split, tokenizer, config, rows, config.batch_size, lengths=False)
    try:
        batches = list(dataset) if dataset is not None else []
    except Exception:
        batches = []
    return batches if len(batches) == count else [None] * count


def training_batches(split, tokenizer, config: RunConfig, count: int, *, skip: int = 0) -> list:
    """The first `count` batches `model.fit` would see, cycling a small split; `skip` leaves out the first few
    (a run context already holds the first batch).

    Raises:
        ValueError: the configured columns or tokenizer cannot produce batches (see data.batch).
    """
    rows = np.resize(training_order(len(split), config), count * config.batch_size).tolist()
    batches = batches_of(split, tokenizer, config, rows[skip * config.batch_size:])
    if any(batch is None for batch in batches):
        problem = build_batch(split, tokenizer, config, rows[:config.batch_size]).error
        raise ValueError(problem or "the configured columns cannot produce a batch")
    return batches


def shape_probes(lengths: list[int], rows: int) -> int:
    """How many single rows `to_tf_dataset` should sample to infer its output shapes, for rows of these token
    `lengths` (empty when unknown: then ten samples a row of the `rows`).

    It fixes a dimension when every sampled row has the same length; with its default of 20 samples from rows of
    which nearly all share one length it can miss the others, fix the sequence length too short, and fail on the real
    batch ("Shape of tensor ... is not compatible"). So it samples until all samples landing on the commonest length
    is a one-in-a-million chance (a split of 96 rows with one longer row: 1,320 samples; rows of varied lengths: 20;
    rows all of one length need no more: any sample gives their shape).
    """
    if not lengths:
        return min(2000, max(20, 10 * rows))
    share = max(np.unique(lengths, return_counts=True)[1]) / len(lengths)
    if share >= 1:
        return 20
    return int(min(2000, max(20, math.ceil(math.log(1e-6) / math.log(share)))))


def text_columns_of(split, taken=()) -> list[str]:
    """The split's columns of text (strings), in order, but those in `taken`."""
    return [name for name, feature in split.features.items()
            if getattr(feature, "dtype", None) in ("string", "large_string") and name not in taken]


def split_labels(split) -> np.ndarray:
    """The split's label column as a numpy array, read from Arrow without a Python loop over rows."""
    column = split.data.column(LABEL)
    return column.to_numpy()


# Cells scanned per column for text that holds no words (a Python pass over each cell).
PROSE_SCAN_ROWS = 20_000


def _no_words(cell: str) -> bool:
    """A cell with no words: digits and punctuation only ("12345"), or one word repeated ("ok ok ok")."""
    words = cell.split()
    if not words:
        return False  # empty cells are text_cell_problems' to name
    if not any(character.isalpha() for character in cell):
        return True
    return len(words) > 1 and len({word.lower() for word in words}) == 1


def not_prose(split, task: GlueTask, limit: int = PROSE_SCAN_ROWS) -> dict[str, dict]:
    """For each of the task's text columns: the rows (of the first `limit`) whose cell holds no words, a few of
    them, and their share of the rows scanned. Columns whose cells are not all strings are left out."""
    found = {}
    for column in task.text_columns:
        if column not in split.column_names:
            continue
        cells = split[:limit][column]
        if not cells or not all(isinstance(cell, str) for cell in cells):
            continue
        rows = [row for row, cell in enumerate(cells) if _no_words(cell)]
        found[column] = {"rows": rows[:50], "count": len(rows), "scanned": len(cells),
                         "share": len(rows) / len(cells), "examples": [cells[row][:40] for row in rows[:3]]}
    return found


def text_cell_problems(split, task: GlueTask) -> dict[str, dict[str, list]]:
    """For each of the task's text columns with bad cells: the rows whose cell is empty (missing or blank) and the
    rows whose cell is not text (an object, a list), with a few of those values. Nothing when every cell is text."""
    import pyarrow as pa
    import pyarrow.compute as pc

    problems = {}
    for column in task.text_columns:
        if column not in split.column_names:
            continue
        values = split.data.column(column)
        if pa.types.is_string(values.type) or pa.types.is_large_string(values.type):
            blank = pc.or_kleene(pc.is_null(values), pc.equal(pc.utf8_length(pc.utf8_trim_whitespace(values)), 0))
            empty = np.flatnonzero(pc.fill_null(blank, True).to_numpy(zero_copy_only=False)).tolist()
            not_text, examples = [], []
        else:
            cells = values.to_pylist()
            if "json" in str(values.type):  # datasets' JSON type holds each cell's JSON text
                cells = [None if cell is None else json.loads(cell) for cell in cells]
            empty = [row for row, cell in enumerate(cells)
                     if cell is None or (isinstance(cell, str) and not cell.strip())]
            not_text = [row for row, cell in enumerate(cells) if cell is not None and not isinstance(cell, str)]
            examples = [json.dumps(cells[row])[:60] for row in not_text[:3]]
        if empty or not_text:
            problems[column] = {"empty": empty, "not_text": not_text, "examples": examples}
    return problems


def label_names_for(task: GlueTask, num_labels: int) -> list[str]:
    """Names of label ids 0..num_labels-1 (extra ids beyond the task's names are shown as numbers)."""
    return [task.label_name(label) if label < len(task.label_names) else f"label {label}"
            for label in range(num_labels)]


def sentence_segments(ids: list[int], tokenizer) -> list[list[int]]:
    """A row's token ids split at the separator token into its sentences, special tokens dropped."""
    sep = tokenizer.sep_token_id
    special = set(tokenizer.all_special_ids)
    parts, current = [], []
    for token in ids:
        if token == sep:
            if current:
                parts.append(current)
            current = []
        elif token not in special:
            current.append(token)
    if current:
        parts.append(current)
    return parts or [[]]


def decoded_rows(batch: FirstBatch, tokenizer, task: GlueTask) -> list[dict[str, Any]]:
    """Every batch row decoded with `tokenizer.decode`, beside its label id and name and, where the split has them,
    its text columns as written (`raw`: a WordPiece decode reads "isn't" as "isn ' t", which is what the model
    reads, not a fault of the data)."""
    labels = batch.rows.get(LABEL, [None] * len(batch.indices))
    written = batch.rows.get(LABEL_AS_WRITTEN, [None] * len(batch.indices))
    with tokenizer_lock(tokenizer):
        unk = tokenizer.unk_token_id
        decoded = [tokenizer.decode(ids) for ids in batch.input_ids]
        fields = [{column: tokenizer.decode(parts[i], skip_special_tokens=True) if i < len(parts) else ""
                   for i, column in enumerate(task.text_columns)}
                  for parts in (sentence_segments(list(ids), tokenizer) for ids in batch.input_ids)]
    return [
        {
            "position": position,
            "index": int(index),
            "decoded": decoded[position],
            "fields": fields[position],  # what the model reads of each text column, special tokens left out
            **({"raw": {column: str(batch.rows[column][position]) for column in task.text_columns}}
               if all(column in batch.rows for column in task.text_columns) else {}),
            "label": labels[position],
            "label_name": (_not_a_label(written[position], task) if labels[position] == UNUSABLE_LABEL
                           and LABEL_AS_WRITTEN in batch.rows else task.label_name(labels[position])),
            "tokens": len(ids),
            "unknown_tokens": sum(1 for token in ids if unk is not None and token == unk),
        }
        for position, (index, ids) in enumerate(zip(batch.indices, batch.input_ids, strict=True))
    ]


def _not_a_label(written: str | None, task: GlueTask) -> Text:
    """How a row whose label could not be read shows its label as the file wrote it."""
    value = (written or "").strip()
    return msg("not a label of {task}: {value}", task=task.name, value=repr(value)) if value else \
        msg("not a label of {task}: (empty)", task=task.name)


def invalid_labels(labels: np.ndarray, task: GlueTask, num_labels: int) -> dict[Any, int]:
    """Counts of each label value outside the valid range (regression: outside STS-B's 0..5 or not finite)."""
    values = np.asarray(labels)
    if task.regression:
        numeric = values.astype(float)
        bad = ~np.isfinite(numeric) | (numeric < STSB_RANGE[0]) | (numeric > STSB_RANGE[1])
    else:
        bad = (values < 0) | (values >= num_labels)
    found, counts = np.unique(values[bad], return_counts=True)
    return {plain_label(value): int(count) for value, count in zip(found, counts, strict=True)}


def plain_label(value):
    value = value.item() if hasattr(value, "item") else value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value
