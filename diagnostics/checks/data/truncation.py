"""data.truncation: rows cut at max_length, and padding in the batch."""

from __future__ import annotations

from typing import Any, TypedDict

import numpy as np

from diagnostics.config.tasks import GlueTask
from diagnostics.core.check import Check, Condition
from diagnostics.core.context import RunContext
from diagnostics.core.result import CheckResult, judge
from diagnostics.core.rules import Above, All, Holds
from diagnostics.i18n import N_, msg
from diagnostics.keras.batches import FirstBatch, tokenize
from diagnostics.keras.tokenizer_locks import tokenizer_lock


# Rows of a user's split re-tokenized to see what their truncation cut (a tokenizer pass over this many takes a second).
TRUNCATION_ROWS = 5000


def users_truncation(split, tokenizer, task: GlueTask, limit: int = TRUNCATION_ROWS, *,
                     max_length: int | None = None, source: str = "unknown") -> dict[str, Any] | None:
    """What the user's own tokenization cut: the split's raw text re-tokenized without truncation against the token ids
    the user's code stored (its first `limit` rows); None when the split lacks either.

    Args:
        max_length / source: the length the user's tokenizer call truncates at and where it comes from
            (`RunConfig.truncation`: "call", "model"); for "none" or "unknown", the longest row stored stands for it.
    """
    if "input_ids" not in split.column_names or not all(column in split.column_names for column in task.text_columns):
        return None
    rows = split.select(range(min(len(split), limit))).to_dict()
    stored = np.asarray([len(ids) for ids in rows["input_ids"]])
    # Re-tokenized with the special tokens the stored rows have: a tokenizer of another library (KerasHub's WordPiece)
    # adds none, and every row would read as two tokens cut.
    special = _stored_with_special_tokens(rows["input_ids"], tokenizer)
    full = np.asarray([len(ids) for ids in tokenize(tokenizer, task, rows, None, special=special)["input_ids"]])
    cut = np.flatnonzero(full > stored)
    measured = source in ("call", "model") and max_length
    return {"rows": int(len(stored)), "truncated": int(len(cut)), "truncated_rows": cut[:50].tolist(),
            "cut_at": int(max_length) if measured else int(stored.max()) if len(stored) else 0,
            "cut_source": source if measured else "unknown" if len(cut) else source,
            "longest": int(full.max()) if len(full) else 0}


def _stored_with_special_tokens(stored: list, tokenizer) -> bool:
    """Whether the stored rows begin with the special token the tokenizer puts first ([CLS], <s>): most of them do,
    or the tokenizer puts none first."""
    with tokenizer_lock(tokenizer):
        first = tokenizer("a")["input_ids"][:1]
    if not first or first[0] not in set(tokenizer.all_special_ids):
        return True
    opening = [ids[0] for ids in stored if len(ids)]
    return not opening or sum(token == first[0] for token in opening) * 2 >= len(opening)


def truncation_figures(batch: FirstBatch, max_length: int, split_cut: dict[str, Any] | None = None, *,
                       unmeasured: bool = False) -> dict[str, Any]:
    """Share of rows cut at max_length and share of padding in the padded batch; with `split_cut`
    (`users_truncation`), the rows the user's own tokenization cut across the split decide; `unmeasured`: the
    user's rows have no raw text to re-tokenize, so only the padding is measured."""
    lengths = np.asarray(batch.full_lengths)
    kept = np.asarray([len(ids) for ids in batch.input_ids])
    longest = int(kept.max()) if len(kept) else 0
    width = max(_batch_width(batch) or longest, longest)  # the batch as the pipeline builds it, padding included
    padded = width * len(kept)
    padding = {"padding_share": float(1 - kept.sum() / padded) if padded else 0.0, "padded_length": width,
               "fixed_padding": width > longest}
    if unmeasured:
        return {"max_length": max_length, "rows": int(len(lengths)), "truncated_rows": None, "truncated_share": None,
                "lengths": lengths.tolist(), "scope": "unmeasured", **padding}
    if split_cut is not None:
        return {"max_length": split_cut["cut_at"], "rows": split_cut["rows"], "truncated_rows": split_cut["truncated"],
                "truncated_share": split_cut["truncated"] / split_cut["rows"] if split_cut["rows"] else 0.0,
                "lengths": lengths.tolist(), "scope": "split", **padding,
                "cut_rows": split_cut["truncated_rows"], "longest": split_cut["longest"],
                "cut_source": split_cut["cut_source"]}
    return {
        "max_length": max_length,
        "rows": int(len(lengths)),
        "truncated_rows": int((lengths > max_length).sum()),
        "truncated_share": float((lengths > max_length).mean()) if len(lengths) else 0.0,
        "lengths": lengths.tolist(),
        **padding,
    }


def _batch_width(batch: FirstBatch) -> int | None:
    """The token width of the batch `fit` gets (its input_ids' second dimension), when it was built."""
    if batch.tf_batch is None:
        return None
    inputs = batch.tf_batch[0] if isinstance(batch.tf_batch, tuple) else batch.tf_batch
    ids = inputs.get("input_ids") if hasattr(inputs, "get") else None
    shape = getattr(ids, "shape", None)
    return int(shape[1]) if shape is not None and len(shape) == 2 else None


def check_truncation(figures: dict[str, Any]) -> CheckResult:
    """Too many rows cut at max_length loses the text; too much padding wastes compute.

    Args:
        figures: from `truncation_figures`.
    """
    return judge(CHECK, figures)


def _measured(figures: dict[str, Any]):
    """What every verdict of data.truncation says first: the rows cut (across the split for the user's own
    tokenization, or in the first batch) and the padding of the batch."""
    if figures.get("scope") == "split":
        # What the tokenization truncates at, as far as it was seen: the call's max_length, the tokenizer's maximum,
        # no truncation at all, or (no call seen) only the longest row it stored.
        at = {"call": msg(", which truncates at max_length={max_length} (your tokenizer call's)",
                          max_length=figures["max_length"]),
              "model": msg(", which truncates at {max_length} tokens (the tokenizer's maximum: truncation=True "
                           "without max_length)", max_length=figures["max_length"]),
              "none": msg(", which does not truncate (its longest row has {max_length} tokens)",
                          max_length=figures["max_length"])}.get(
            figures.get("cut_source"), msg(" (its tokenizer call was not seen; its longest stored row has {max_length} "
                                           "tokens)", max_length=figures["max_length"]))
        return msg("{cut:,} of {rows:,} rows of the split ({share:.0%}) lose tokens to your tokenization{at}, "
                   "measured by re-tokenizing their text without truncation{where}; padding is {padding:.0%} of "
                   "the padded batch ({length} tokens a row).", cut=figures["truncated_rows"],
                   rows=figures["rows"], share=figures["truncated_share"], at=at,
                   where=msg(" (first rows {rows})", rows=", ".join(map(str, figures["cut_rows"][:8])))
                   if figures["cut_rows"] else "",
                   padding=figures["padding_share"], length=figures["padded_length"])
    if figures.get("scope") == "unmeasured":
        return msg("The split's raw text is not at hand (the rows were read back from the dataset given to fit), "
                   "so what truncation cut cannot be counted; padding is {padding:.0%} of the padded batch "
                   "({length} tokens a row).", padding=figures["padding_share"], length=figures["padded_length"])
    return msg("{cut} of {rows} rows ({share:.0%}) are cut at max_length={max_length}; padding is "
               "{padding:.0%} of the padded batch ({length} tokens a row).", cut=figures["truncated_rows"],
               rows=figures["rows"], share=figures["truncated_share"], max_length=figures["max_length"],
               padding=figures["padding_share"], length=figures["padded_length"])


def _cut(e, f) -> tuple:
    """(finding, fix) for rows truncated: a max_length that keeps the longest row (up to 512 tokens)."""
    longest = e.get("longest") or (max(e["lengths"]) if e["lengths"] else 0)
    return (msg("{summary} The model never sees the end of those rows.", summary=_measured(e)),
            f"tokenizer(..., truncation=True, max_length={min(longest, 512)})")


def measure(run: RunContext) -> CheckResult:
    """For the user's own pipeline, what their tokenization cut of the split, at the length their tokenizer call
    truncates at (only the padding when the rows have no raw text to re-tokenize)."""
    config = run.config
    if not config.recipe:
        return check_truncation(truncation_figures(run.first_batch, config.max_length))
    cut = users_truncation(run.split, run.tokenizer, config.glue_task, max_length=config.max_length,
                           source=config.truncation)
    return check_truncation(truncation_figures(run.first_batch, config.max_length, split_cut=cut,
                                               unmeasured=cut is None))


class Evidence(TypedDict, total=False):
    """What data.truncation puts in its evidence (the charts, tables and JSON report read it)."""

    lengths: list[int]
    max_length: int
    padded_length: int
    padding_share: float
    fixed_padding: bool  # the batch is padded past its longest row (padding="max_length"), not per batch
    rows: int
    truncated_rows: int
    truncated_share: float
    scope: str  # "split": the user's own tokenization, re-measured on the split's raw text; "unmeasured": no raw text
    cut_source: str  # where that tokenization's length comes from (RunConfig.truncation: "call", "model", ...)
    cut_rows: list[int]  # those rows (the first 50)
    longest: int  # the longest row without truncation


CHECK = Check("data.truncation", N_("rows cut at max_length, and padding in the batch"),
              requires=("texts", "tokenizes", "decodes"), measure=measure, conditions=(
    Condition("warn_truncated_share", 0.1, "warn when more than this share of the rows are truncated",
              Above("truncated_share"), says=_cut),
    Condition("warn_padding_share", 0.6, "warn when the pipeline pads every batch to one length and more "
                                         "than this share of the batch's tokens are padding (padding per "
                                         "batch is the fix, not a finding)",
              All((Holds("fixed_padding"), Above("padding_share"))), says=lambda e, f: (
                  msg("{summary} Most of the compute goes to padding.", summary=_measured(e)),
                  msg("Pad per batch with DataCollatorWithPadding, not padding='max_length'; or group rows by "
                      "length.")))),
              otherwise_says=lambda e, f: _measured(e), evidence=Evidence)
