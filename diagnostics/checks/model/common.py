"""What the Model checks share: finite shares and statistics of arrays, layer groups, and the first
batch's labels and losses as the run context measured them."""

from __future__ import annotations

from typing import Any

import numpy as np

from diagnostics.core.context import RunContext
from diagnostics.keras.internals import LAYER_PREFIX, variable_path
from diagnostics.keras.scoring import per_sample_losses


def finite_share(array: np.ndarray) -> float:
    return float(np.isfinite(array).mean()) if array.size else 1.0


def stats(array: np.ndarray) -> dict[str, Any]:
    values = np.asarray(array, dtype=np.float64)
    finite = values[np.isfinite(values)]
    return {
        "shape": list(values.shape),
        "min": float(finite.min()) if finite.size else None,
        "max": float(finite.max()) if finite.size else None,
        "non_finite_share": 1.0 - finite_share(values),
    }


def layer_group(name: str) -> str:
    """The block a variable belongs to, for per-layer charts: an encoder layer, the embeddings, a head layer."""
    parts = variable_path(name).split("/")
    for index, part in enumerate(parts):
        if part.startswith(LAYER_PREFIX):
            return "/".join(parts[: index + 1])
    return "/".join(parts[:-1]) or parts[0]


def first_losses(run: RunContext):
    """The first batch's loss per row, from the logits, under the loss training computes (NaN where a label is out
    of range for a cross-entropy of class ids; binary cross-entropy takes any label as its target)."""
    return per_sample_losses(run.forward.logits, run.first_labels, run.config.glue_task.regression,
                             binary=run.config.loss == "binary_crossentropy")



ON_BATCH = ("model", "batch")  # what the Model checks of the first batch need beyond their unit
AFTER_FORWARD = ON_BATCH + ("forward",)  # and those after model.forward: a pass that raises stops the step too
