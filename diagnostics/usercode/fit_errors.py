"""What would stop a script's own fit, named at that fit before it runs, with the fix (the trace's checks see
what fit got, and its brief fit after them runs no callbacks): each from a reported bug (benchmarks/reported)."""

from __future__ import annotations

from typing import Any

from diagnostics.i18n import msg
from diagnostics.usercode.script_errors import argument_rewritten, keras_3_given


def batch_encoding_to_keras(model, x, filename: str | None, lineno: int | None) -> tuple[Any, str] | None:
    """(finding, fix) when `fit` is given the tokenizer's `BatchEncoding` of TensorFlow tensors (return_tensors="tf")
    as x and the model is a Keras model of the script's own (a functional model around an encoder): Keras cannot
    batch one ("Cannot generate a hashable key for IteratorSpec ... BatchEncoding"; 2020's "too many values to
    unpack", huggingface/transformers#5939), while a Transformers model's own fit converts it. The fix is the
    script's fit line with x as a plain dict; None for anything else."""
    if type(x).__name__ != "BatchEncoding" or type(model).__module__.startswith("transformers."):
        return None
    if not any(type(value).__module__.startswith("tensorflow") for value in x.values()):
        return None  # numpy arrays (return_tensors="np"): Keras batches those, as the matrix's healthy scripts show
    finding = msg("fit was given the tokenizer's BatchEncoding as x, and the model is a Keras model of its own "
                  "({model}): Keras cannot batch a BatchEncoding (only a Transformers model's fit converts one), so "
                  "fit stops before its first step.", model=type(model).__name__)
    fixed = argument_rewritten(filename, lineno, "fit", "x", lambda code: f"dict({code})", first_positional=True,
                               same_line=True)  # --repair writes it over the fit's line
    return finding, fixed or "model.fit(x=dict(encodings), ...)  # encodings: what the tokenizer returned"


# Keras metrics that read each output as one class's probability in [0, 1] (and labels of one column).
THRESHOLD_METRICS = {"precision": "Precision", "recall": "Recall", "auc": "AUC",
                     **{name.lower(): name for name in (
                         "TruePositives", "TrueNegatives", "FalsePositives", "FalseNegatives", "PrecisionAtRecall",
                         "RecallAtPrecision", "SensitivityAtSpecificity", "SpecificityAtSensitivity")}}


def threshold_metrics_on_logits(model, metrics, filename: str | None, lineno: int | None,
                                loss=None) -> tuple[Any, str] | None:
    """(finding, fix) when compile's metrics include Keras's own that read each output as a probability in [0, 1]
    (`Precision()`, `Recall()`, `AUC()`), the model gives several logits a row and the labels are class ids (a sparse
    loss, or the model's own): fit stops at its first step ("Shapes (None, 2) and (None, 1) are incompatible";
    2021's "predictions must be >= 0", huggingface/transformers#10075). The fix is the compile line with metrics
    that read logits and class ids; None for anything else: a single sigmoid output, or one-hot or multi-hot labels
    (a categorical or binary cross-entropy), take these metrics."""
    from diagnostics.keras.keras_model import is_transformers_classifier

    loss_name = (loss if isinstance(loss, str) else type(loss).__name__ if loss is not None else "").lower()
    if loss_name and "sparse" not in loss_name and loss_name not in ("internal", "hf_compute_loss"):
        return None  # labels as wide as the output, which these metrics read
    flat = list(metrics.values()) if isinstance(metrics, dict) else list(metrics) if isinstance(
        metrics, (list, tuple)) else [metrics] if metrics is not None else []
    names = [THRESHOLD_METRICS.get((item if isinstance(item, str) else type(item).__name__).lower()) for item in flat
             if isinstance(item, str) or type(item).__module__.split(".")[0] in ("tf_keras", "keras")]
    names = [name for name in names if name]
    try:
        width = int(model.config.num_labels) if is_transformers_classifier(model) else int(model.output_shape[-1])
    except (AttributeError, TypeError, ValueError, IndexError):
        return None
    if not names or width < 2:
        return None
    finding = msg("compile's metrics {metrics} read each output as one class's probability in [0, 1], but the model "
                  "gives {width} logits a row: fit stops at its first step.", metrics=", ".join(names), width=width)
    fixed = argument_rewritten(filename, lineno, "compile", "metrics", lambda code: '["accuracy"]')
    return finding, fixed or ("model.compile(..., metrics=['accuracy'])  # precision and recall: on the predicted "
                              "classes, argmax of predict's logits")


def keras_3_callbacks(callbacks) -> tuple[Any, str] | None:
    """(finding, fix) when fit is given Keras 3 callbacks (`tensorflow.keras.callbacks.EarlyStopping` since
    TensorFlow 2.16, tensorflow/tensorflow#40548), which a tf-keras fit refuses once it runs them; None for anything
    else."""
    given = [item for item in (callbacks if isinstance(callbacks, (list, tuple)) else [callbacks])
             if type(item).__module__.startswith("keras.src.")]
    if not given:
        return None
    return keras_3_given(", ".join(f"keras {type(item).__name__}" for item in given) + " given to fit(callbacks=...)")
