"""The Overfit stage: train a copy on one batch holding every label; a pipeline that cannot memorise one batch is
broken."""

from __future__ import annotations

from diagnostics.checks.overfit import one_batch
from diagnostics.core.check import Unit, collect

# Every check of the stage in walk order, collected from its module.
CHECKS, CAUSES = collect(one_batch)
UNITS = (
    Unit("overfit", "overfit", one_batch.measure_overfit,
         ("columns", "labels", "range", "model", "batch", "flows", "fits"),
         takes=("epochs", "rate"), reads=("hparams.lr_sweep:best_rate", "hparams.lr_sweep:configured_broke",
                                               "hparams.lr_sweep:configured_too_low"),
         copy=True, plan=one_batch.planned_steps, on_request=one_batch.only_when_asked),
)
