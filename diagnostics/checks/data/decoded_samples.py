"""data.decoded_samples: the first batch decoded beside its label names."""

from __future__ import annotations

from typing import Any, TypedDict

from diagnostics.checks.common import row_numbers
from diagnostics.core.check import Check, Condition
from diagnostics.core.context import RunContext
from diagnostics.core.evidence import Rows
from diagnostics.core.result import CheckResult, judge
from diagnostics.core.rules import Above
from diagnostics.i18n import N_, msg
from diagnostics.keras.batches import decoded_rows


def check_decoded_samples(rows: list[dict[str, Any]], not_prose: dict[str, dict] | None = None) -> CheckResult:
    """The decoded batch reads as text: few unknown tokens; and the split's text columns hold words.

    Args:
        rows: from `decoded_rows`.
        not_prose: `batches.not_prose` of the split (per text column, the cells with no words).
    """
    tokens = sum(row["tokens"] for row in rows)
    unknown = sum(row["unknown_tokens"] for row in rows)
    share = unknown / tokens if tokens else 0.0
    not_prose = not_prose or {}
    worst = max(not_prose, key=lambda column: not_prose[column]["share"], default=None)
    evidence = {"rows": rows, "unknown_share": share, "not_prose": not_prose,
                "not_prose_share": not_prose[worst]["share"] if worst else 0.0}
    return judge(CHECK, evidence, worst=worst, unknown=unknown, tokens=tokens)


def measure(run: RunContext) -> CheckResult:
    return check_decoded_samples(decoded_rows(run.first_batch, run.tokenizer, run.config.glue_task), run.not_prose)


class Evidence(TypedDict, total=False):
    """What data.decoded_samples puts in its evidence (the charts, tables and JSON report read it)."""

    rows: Rows  # position, index, label, label_name, decoded, tokens, unknown_tokens
    unknown_share: float
    not_prose: dict[str, Any]  # per text column: rows with no words (digits or punctuation, one word repeated)
    not_prose_share: float  # the largest share of a text column's scanned cells with no words


def _not_prose(e, f) -> tuple:
    """(finding, fix) for a text column whose cells hold no words: the worst such column, with its rows."""
    worst = e["not_prose"][f.worst]
    return (msg("{share:.0%} of {column}'s cells hold no words ({count:,} of the {scanned:,} rows scanned, e.g. rows "
                "{rows}: {examples}): digits or punctuation only, or one word repeated. The model reads this column "
                "as the task's text.", share=worst["share"], column=f.worst, count=worst["count"],
                scanned=worst["scanned"], rows=row_numbers(worst["rows"], 5),
                examples=", ".join(repr(example) for example in worst["examples"])),
            f"dataset = dataset.rename_column('<the column with the sentences>', '{f.worst}')  # after dropping the "
            f"wrong '{f.worst}'")


CHECK = Check("data.decoded_samples", N_("the first batch decoded beside its label names"),
              requires=("texts", "tokenizes", "decodes"), measure=measure, conditions=(
    # Judged in this order.
    Condition("warn_not_prose_share", 0.2, "warn when more than this share of a text column's cells "
                                           "hold no words (digits or punctuation only, or one word "
                                           "repeated; of the first 20,000 rows)",
              Above("not_prose_share"), says=_not_prose),
    Condition("warn_unknown_share", 0.05, "warn when more than this share of the batch's tokens are unknown",
              Above("unknown_share"), says=lambda e, f: (
                  msg("{share:.0%} of the batch's tokens are unknown ({unknown} of {tokens}): the tokenizer does not "
                      "fit this text.", share=e["unknown_share"], unknown=f.unknown, tokens=f.tokens),
                  msg("Load the tokenizer from the same checkpoint as the model: {code}",
                      code="AutoTokenizer.from_pretrained(checkpoint)")))),
              otherwise_says=lambda e, f: msg(
                  "{rows} rows decode to readable text; {unknown} of {tokens} tokens are unknown. Read them beside "
                  "their labels.", rows=len(e["rows"]), unknown=f.unknown, tokens=f.tokens),
              evidence=Evidence)
