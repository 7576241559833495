"""The Model stage: one batch through a freshly loaded model, the NaN-row drilldown, gradients, where NaN starts,
memory; and the divergence watch of a user's own fit. Its checks measure alone, sharing the run context's forward
pass and train step (`RunContext.forward`, `RunContext.batch_step`); the runner skips the ones that read a pass or a
step that failed, naming the check that owns it (model.forward, model.gradients)."""

from __future__ import annotations

from diagnostics.checks.model import (config, divergence, forward, gradients, initial_loss, memory, nan_origin,
                                      nan_rows, weights_after_step)
from diagnostics.core.check import Unit, collect

# Every check of the stage in walk order, collected from its module (a check's registration: its module imported
# above and named here).
CHECKS, CAUSES = collect(config, forward, nan_rows, initial_loss, gradients, weights_after_step, nan_origin, memory,
                         divergence)
UNITS = (Unit("model", "model", needs=("columns", "readable")),)
