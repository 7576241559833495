"""data.duplicates: duplicate and conflicting rows of the split."""

from __future__ import annotations

from collections import OrderedDict
import threading
from typing import Any, TypedDict

import pyarrow.compute as pc

from diagnostics.config.tasks import GlueTask
from diagnostics.core.check import Check, Condition
from diagnostics.core.context import RunContext
from diagnostics.core.evidence import Rows
from diagnostics.core.result import CheckResult, judge
from diagnostics.core.rules import Above, ShareAbove
from diagnostics.i18n import N_, msg
from diagnostics.keras.batches import LABEL
from diagnostics.keras.internals import split_fingerprint


_DUPLICATES_MEMO: "OrderedDict[tuple, dict[str, Any]]" = OrderedDict()


_DUPLICATES_LOCK = threading.Lock()


def duplicate_figures(split, task: GlueTask, *, examples: int = 5, cached: bool = True) -> dict[str, Any]:
    """Rows whose text repeats, and repeated texts that carry different labels.

    One hash group-by in Arrow over the text columns (no Python loop over rows). The figures depend
    only on the split, so they are kept per split fingerprint: changing num_labels, the batch size or
    anything else in the configuration never rescans the texts.

    Args:
        cached: False scans the texts even when this split was scanned before (a first scan, for the bench).
    """
    key = (split_fingerprint(split) or id(split), tuple(task.text_columns), examples)
    with _DUPLICATES_LOCK:  # sessions of the app scan in threads of their own
        if cached and key in _DUPLICATES_MEMO:
            _DUPLICATES_MEMO.move_to_end(key)
            return dict(_DUPLICATES_MEMO[key])
    keys = list(task.text_columns)
    table = split.data.table.select(keys + [LABEL])
    groups = table.group_by(keys, use_threads=True).aggregate([(LABEL, "count"), (LABEL, "count_distinct")])
    counts = groups.column(f"{LABEL}_count").to_numpy()
    distinct = groups.column(f"{LABEL}_count_distinct").to_numpy()
    conflicting_groups = groups.filter(pc.greater(groups.column(f"{LABEL}_count_distinct"), 1))
    shown = conflicting_groups.sort_by([(column, "ascending") for column in keys]).slice(0, examples).select(keys)
    sample = table.join(shown, keys=keys, join_type="inner").sort_by([(column, "ascending") for column in keys])
    figures = {
        "rows_scanned": int(table.num_rows),
        "duplicate_rows": int((counts - 1).sum()),
        "conflicting_rows": int(counts[distinct > 1].sum()),
        "conflict_examples": sample.slice(0, examples * 2).to_pylist(),
    }
    with _DUPLICATES_LOCK:
        _DUPLICATES_MEMO[key] = figures
        while len(_DUPLICATES_MEMO) > 16:
            _DUPLICATES_MEMO.popitem(last=False)
    return dict(figures)


def check_duplicates(figures: dict[str, Any]) -> CheckResult:
    """The same text should not appear many times, nor with different labels.

    Args:
        figures: from `duplicate_figures`.
    """
    return judge(CHECK, figures)


def _counted(figures: dict[str, Any]):
    """What every verdict of data.duplicates says first: the repeated and the conflicting rows, counted."""
    rows = figures["rows_scanned"]
    return msg("{repeated:,} of {rows:,} rows repeat an earlier row's text ({share:.1%}); {conflicting:,} rows "
               "share a text with a different label.", repeated=figures["duplicate_rows"], rows=rows,
               share=figures["duplicate_rows"] / rows if rows else 0.0, conflicting=figures["conflicting_rows"])


def measure(run: RunContext) -> CheckResult:
    return check_duplicates(duplicate_figures(run.split, run.config.glue_task))


class Evidence(TypedDict, total=False):
    """What data.duplicates puts in its evidence (the charts, tables and JSON report read it)."""

    conflict_examples: Rows
    conflicting_rows: int
    duplicate_rows: int
    rows_scanned: int


CHECK = Check("data.duplicates", N_("duplicate and conflicting rows of the split"), unit="duplicates",
              measure=measure, conditions=(
    Condition("max_conflicting_rows", 0, "warn when more rows than this share a text with a different label",
              Above("conflicting_rows"), says=lambda e, f: (
                  msg("{summary} The model cannot fit both labels of the same text.", summary=_counted(e)),
                  "dataset = dataset.filter(...)  # drop or relabel the conflicting rows shown")),
    Condition("warn_duplicate_share", 0.05, "warn when more than this share of the rows repeat another row's text",
              ShareAbove("duplicate_rows", "rows_scanned"), says=lambda e, f: (
                  msg("{summary} Repeats inflate some examples' weight.", summary=_counted(e)),
                  msg("Drop duplicates before tokenizing (e.g. with pandas drop_duplicates on the text columns)."))),
    ), otherwise_says=lambda e, f: _counted(e), evidence=Evidence)
