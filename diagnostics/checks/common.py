"""What checks of several stages share: the findings of other checks that two causes explain alike (named once for
both owners' `CAUSES`), and the weight-drift bounds the sweep and the overfit test judge by."""

from __future__ import annotations

import numpy as np

from diagnostics.core.check import Explains
from diagnostics.core.context import RunContext
from diagnostics.core.rules import Above, Holds
from diagnostics.i18n import Text, msg
from diagnostics.keras import keras_model


OUT_OF_RANGE = Above("out_of_range_labels")  # the first batch holds labels the head cannot take
# What labels the head has no output for stop (data.label_range's and model.config's causes).
LABELS_STOP = (Explains("model.forward", ("fit_call_raises",), OUT_OF_RANGE),
               Explains("model.nan_rows", ("max_non_finite_rows",), Holds("labels_cause")),
               Explains("model.gradients", ("step_raises",), OUT_OF_RANGE),
               Explains("hparams.loss", ("step_raises",), OUT_OF_RANGE),
               Explains("overfit.one_batch", ("fit_raises", "no_finite_start"), OUT_OF_RANGE))
# What a model that learns nothing shows (hparams.loss's and model.gradients's causes).
NOTHING_LEARNS = (Explains("model.weights_after_step", ("min_moved",)), Explains("data.learnability"),
                  Explains("hparams.lr_sweep", ("no_good_rate",)), Explains("hparams.lr_range_test"),
                  Explains("overfit.one_batch"))

# Weight drift a step (median over pretrained kernels of |change| / |kernel|). Above 1e-3 a step, a few hundred
# steps overwrite what pretraining learned. Measured on all-MiniLM-L6-v2 with Adam (bench/lr_truth.py): 1e-4
# gives about 7e-4 a step and fine-tunes well; 3e-4 gives about 2e-3 and ends well below the best held-out
# accuracy; 1e-3 gives about 6e-3 and collapses to one class.
WARN_DRIFT = 1e-3
FAIL_DRIFT = 3e-3


def out_of_range(labels, num_labels: int, regression: bool) -> int:
    """How many class labels lie outside [0, num_labels): the head has no output for them (0 for regression)."""
    values = np.asarray(labels)
    if regression or not values.size or not np.issubdtype(values.dtype, np.number):
        return 0
    return int(((values < 0) | (values >= num_labels)).sum())


def num_labels_of(run: RunContext) -> int:
    return keras_model.head_of(run.classifier[0]).num_labels


def out_of_range_of(run: RunContext) -> int:
    """The first batch's labels the head has no output for (the Model checks and hparams.loss read it)."""
    return out_of_range(run.first_labels, num_labels_of(run), run.config.glue_task.regression)


def own_loss_reason(config) -> Text:
    """Why a check that judges a loss's kind or value skips a loss of the user's own (`config.loss == "custom"`)."""
    return msg("The loss is the script's own ({loss}): training runs with it as it is, but the checks cannot read what "
               "it expects (logits or probabilities, class ids or one-hot rows) nor what it starts at, so they do not "
               "judge it.", loss=config.loss_shown)


def row_numbers(indices, shown: int = 10) -> str | Text:
    """'3, 17 and 4 more' for row indices of a split."""
    listed = ", ".join(str(int(index)) for index in indices[:shown])
    return msg("{listed} and {count:,} more", listed=listed, count=len(indices) - shown) if len(indices) > shown \
        else listed
