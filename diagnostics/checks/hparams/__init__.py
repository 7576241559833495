"""The Hyperparameters stage: what a string optimizer or loss silently set and the schedule ("setup", seconds), and a
learning-rate sweep and range test on a trained copy ("training", on request)."""

from __future__ import annotations

from diagnostics.checks.hparams import loss, lr_range_test, lr_sweep, optimizer, schedule, training
from diagnostics.core.check import Unit

MODULES = (optimizer, loss, schedule, lr_sweep, lr_range_test)
CHECKS = tuple(module.CHECK for module in MODULES)
CAUSES = tuple(cause for module in MODULES for cause in getattr(module, "CAUSES", ()))
UNITS = (
    Unit("setup", "hparams", needs=("columns", "model", "batch")),
    Unit("training", "hparams", training.measure_training,
         ("columns", "model", "batch", "range", "flows", "fits"),
         takes=("sweep",), copy=True, plan=training.planned_steps),
)
