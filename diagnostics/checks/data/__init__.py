"""The Data stage: the first batch exactly as `model.fit` would get it, checks on the batch and the split, and (it
trains) whether the labels carry signal."""

from __future__ import annotations

from diagnostics.checks.data import (baselines, batch, columns, decoded_samples, duplicates, label_balance,
                                     label_range, learnability, truncation)
from diagnostics.core.check import Unit, collect

# Every check of the stage in walk order, collected from its module (a check's registration: its module imported
# above and named here): columns and batch own what stops the batch (missing columns, bad text cells, a tokenizer
# that raises), so the runner skips the others when those stop it.
CHECKS, CAUSES = collect(columns, batch, decoded_samples, label_range, label_balance, baselines, truncation,
                         duplicates, learnability)
UNITS = (
    Unit("data", "data", heavy=False),
    Unit("labels", "data", needs=("label_column",), heavy=False),
    Unit("duplicates", "data", needs=("columns",), heavy=False),
    Unit("learnability", "data", learnability.measure_learnability,
         ("columns", "labels", "range", "model", "batch", "rows", "flows", "fits"), copy=True,
         plan=learnability.planned_steps, on_request=learnability.only_when_asked),
)
