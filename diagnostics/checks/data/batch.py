"""data.batch: the first batch builds, with the expected shapes and dtypes."""

from __future__ import annotations

from typing import Any, TypedDict

from diagnostics.core.check import Check, Condition
from diagnostics.core.context import RunContext
from diagnostics.core.evidence import Rows
from diagnostics.core.result import CheckResult, judge
from diagnostics.core.rules import AtMost, Holds
from diagnostics.i18n import N_, msg
from diagnostics.keras.batches import COLLATOR_LABEL, FirstBatch, LABEL


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
        return judge(CHECK, {"error": batch.error, "requested": batch.requested_columns,
                             "label_cols": batch.label_columns}, raised=None, error_fix=batch.error_fix)
    described = describe_batch(batch.tf_batch)
    evidence = {**described, "no_labels": described["labels_at"] == "none",
                "batch_fill": described["rows"] / batch_size if batch_size else 1.0}
    return judge(CHECK, evidence, batch_size=batch_size)


def check_tokenizing(exc: Exception) -> CheckResult:
    """data.batch when tokenizing the first batch raised (the tokenizer's or the user's recipe's own error)."""
    return judge(CHECK, {"error": f"{type(exc).__name__}: {exc}"}, raised=exc)


def _described(e) -> Any:
    """What data.batch says of a batch that built: its rows, each tensor's shape and dtype, and where its labels
    are."""
    shapes = ", ".join(f"{entry['key']} {tuple(entry['shape'])} {entry['dtype']}" for entry in e["entries"])
    labels_at = LABELS_AT_TEXT[e["labels_at"]]  # a declared sentence (N_), translated here
    return msg("The first batch holds {rows} rows: {shapes}; {labels}.", rows=e["rows"], shapes=shapes,
               labels=msg(labels_at))


def _raises(e, f) -> tuple:
    """(finding, fix) for a first batch that could not be built: tokenizing it raised (`raised`, no fix), or
    to_tf_dataset did (with the fix the batch builder found, else one that asks for existing columns)."""
    if f.raised is not None:
        return (msg("Tokenizing the first batch failed: {error}: {message}.", error=type(f.raised).__name__,
                    message=str(f.raised).strip().splitlines()[0] if str(f.raised).strip() else ""), None)
    return (msg("to_tf_dataset could not produce a batch: {error}.", error=e["error"].rstrip(".!")),
            f.error_fix or "to_tf_dataset(columns=[...existing columns...], "
            "collate_fn=DataCollatorWithPadding(tokenizer, return_tensors='np'), batch_size=...)")


def measure(run: RunContext) -> CheckResult:
    if run.batch_exception is not None:
        return check_tokenizing(run.batch_exception)
    return check_batch(run.first_batch, run.config.batch_size)


class Evidence(TypedDict, total=False):
    """What data.batch puts in its evidence (the charts, tables and JSON report read it)."""

    entries: Rows  # key, in, shape, dtype of each tensor the model receives
    labels_at: str
    rows: int
    error: str
    requested: list[str]
    label_cols: list[str]
    no_labels: bool  # the batch holds no labels at all
    batch_fill: float  # the rows it holds over the batch size


CHECK = Check("data.batch", N_("the first batch builds, with the expected shapes and dtypes"), requires=("texts",),
              measure=measure, conditions=(
    Condition("batch_raises", None, "fail when tokenizing or batching the first rows raises", Holds("error"),
              status="fail", says=_raises),
    Condition("no_labels", None, "fail when the batch holds no labels at all", Holds("no_labels"), status="fail",
              says=lambda e, f: (_described(e), "to_tf_dataset(columns=[..., 'label'], ...)  # or label_cols=['label'] "
                                                "for Keras (x, y)")),
    Condition("min_batch_fill", 1.0, "warn when the first batch holds less than this share of the batch size (the "
                                     "split is smaller)", AtMost("batch_fill", below=True), says=lambda e, f: (
                  msg("{summary} The split has fewer rows than the batch size {batch_size}.", summary=_described(e),
                      batch_size=f.batch_size),
                  f"batch_size={e['rows']}  # or use a larger split"))),
              otherwise_says=lambda e, f: _described(e), evidence=Evidence)
