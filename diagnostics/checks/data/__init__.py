"""The Data stage: the first batch exactly as `model.fit` would get it, checks on the batch and the split, and (it
trains) whether the labels carry signal."""

from __future__ import annotations

from diagnostics.checks.data import (
    baselines,
    batch,
    columns,
    decoded_samples,
    duplicates,
    label_balance,
    label_range,
    learnability,
    truncation,
)
from diagnostics.core.check import Unit

# In walk order: columns and batch own what stops the batch (missing columns, bad text cells, a tokenizer that
# raises), so the runner skips the others when those stop it.
MODULES = (columns, batch, decoded_samples, label_range, label_balance, baselines, truncation, duplicates,
           learnability)
CHECKS = tuple(module.CHECK for module in MODULES)
CAUSES = tuple(cause for module in MODULES for cause in getattr(module, "CAUSES", ()))
UNITS = (
    Unit("data", "data", heavy=False),
    Unit("labels", "data", needs=("label_column",), heavy=False),
    Unit("duplicates", "data", needs=("columns",), heavy=False),
    Unit("learnability", "data", learnability.measure_learnability,
         ("columns", "labels", "range", "model", "batch", "rows", "flows", "fits"), copy=True,
         plan=learnability.planned_steps, on_request=learnability.only_when_asked),
)
