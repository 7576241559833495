"""Overfit stage: train a copy on one batch holding every label; a pipeline that cannot memorise one batch is broken."""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from diagnostics.config import RunConfig
from diagnostics.data import LABEL, FirstBatch, build_batch, decoded_rows, split_labels
from diagnostics.glue import GlueTask
from diagnostics.limits import check_deadline
from diagnostics.result import CheckResult, Status
from diagnostics.training import Trainer, effective_rate, first_line, split_batch

STAGE = "overfit"
DEFAULT_EPOCHS = 20


def every_label_indices(labels: np.ndarray, task: GlueTask, batch_size: int, seed: int) -> tuple[list[int], list[str]]:
    """Rows for one batch holding every label of the task (round-robin over labels, seeded).

    Returns:
        the row indices, and the names of task labels the split cannot supply.
    """
    rng = np.random.default_rng(seed)
    if task.regression:
        return rng.permutation(len(labels))[:batch_size].tolist(), []
    pools = [rng.permutation(np.flatnonzero(labels == label)).tolist() for label in range(task.num_labels)]
    missing = [task.label_names[label] for label, pool in enumerate(pools) if not pool]
    chosen: list[int] = []
    while len(chosen) < batch_size and any(pools):
        for pool in pools:
            if pool and len(chosen) < batch_size:
                chosen.append(pool.pop())
    return chosen, missing


def overfit_one_batch(model, batch: FirstBatch, config: RunConfig, epochs: int, *, rate: float | None = None,
                      progress: Callable[[float, str], None] = lambda fraction, text: None) -> dict[str, Any]:
    """Train a copy of the model on one batch for `epochs` epochs with plain `model.fit`; the model is untouched.

    Returns:
        losses and accuracies after every step (None for regression), the rate, and the copy's final
        predictions for each row.
    """
    import tf_keras

    task = config.glue_task
    rate = effective_rate(config) if rate is None else rate
    trainer = Trainer(model, [batch.tf_batch], config, metrics=None if task.regression else ["accuracy"])
    trainer.reset(rate)
    report = tf_keras.callbacks.LambdaCallback(
        on_epoch_begin=lambda epoch, logs: check_deadline(f"at epoch {epoch + 1} of {epochs} of the overfit test"),
        on_epoch_end=lambda epoch, logs: progress((epoch + 1) / epochs, f"Epoch {epoch + 1} of {epochs}: loss {logs['loss']:.4f}"))
    try:
        history = trainer.fit(batch.tf_batch, epochs, callbacks=[report])
    except Exception as exc:  # what model.fit itself raises is the finding (e.g. a label out of range on CPU)
        return {"epochs": epochs, "learning_rate": rate, "losses": [], "accuracies": None, "predictions": [],
                "final_accuracy": None, "ln_k": None, "error": f"{type(exc).__name__}: {first_line(exc)}"}
    inputs, _ = split_batch(batch.tf_batch)
    logits = np.asarray(trainer.model(inputs, training=False).logits)
    del trainer
    losses = [float(v) for v in history.history["loss"]]
    accuracies = [float(v) for v in history.history.get("accuracy", [])] or None
    labels = np.asarray(batch.rows[LABEL])
    predictions = logits[:, 0].tolist() if task.regression else logits.argmax(axis=1).tolist()
    return {
        "epochs": epochs,
        "learning_rate": rate,
        "losses": [v if math.isfinite(v) else None for v in losses],
        "accuracies": accuracies,
        "predictions": predictions,
        "final_accuracy": None if task.regression else float(np.mean(np.asarray(predictions) == labels)),
        "ln_k": None if task.regression else math.log(int(model.config.num_labels)),
    }


def check_overfit(figures: dict[str, Any], rows: list[dict[str, Any]], *, missing_labels: list[str] | None = None,
                  best_rate: float | None = None, near_min_share: float = 0.05, near_min_value: float = 0.05,
                  stuck_share: float = 0.9) -> CheckResult:
    """Pass when the loss falls near its minimum and (classification) every row is predicted right.

    Args:
        figures: from `overfit_one_batch`.
        rows: the batch decoded, with predictions.
        missing_labels: task labels the split could not supply to the batch.
        best_rate: the Hyperparameters sweep's best rate, when known.
        near_min_share / near_min_value: the loss counts as near its minimum below `near_min_share` of its
            start or below `near_min_value`.
        stuck_share: a final loss above this share of the start means the loss did not move.
    """
    if figures.get("error"):
        return CheckResult(
            "overfit.one_batch", STAGE, Status.FAIL,
            f"model.fit on the batch raised {figures['error']} (on a GPU this shows as loss: nan instead).",
            fix="Fix the labels first (see data.label_range and model.nan_rows).",
            evidence={**figures, "rows": rows, "missing_labels": missing_labels or [], "best_rate": best_rate},
        )
    losses = figures["losses"]
    first, final = losses[0], losses[-1]
    accuracy = figures["final_accuracy"]
    evidence = {**figures, "rows": rows, "missing_labels": missing_labels or [], "best_rate": best_rate}
    note = f" The split has no {', '.join(missing_labels)}, so the batch cannot hold every label." if missing_labels else ""
    run = f"{figures['epochs']} epochs at learning rate {figures['learning_rate']:g}"
    regression = accuracy is None
    if first is not None and final is not None and math.isfinite(first) and math.isfinite(final):
        near_minimum = final < near_min_share * first or final < near_min_value
        if near_minimum and (regression or accuracy == 1.0):
            achieved = "" if regression else " and predicts every row right (100%)"
            return CheckResult(
                "overfit.one_batch", STAGE, Status.PASS,
                f"After {run}, the loss fell from {first:.3f} to {final:.4f}{achieved}: the pipeline can learn.{note}",
                evidence=evidence,
            )
    rerun = (f" The sweep's best rate is {best_rate:.1e}: rerun at it." if best_rate else
             " Run the Hyperparameters sweep to find a better rate.")
    if any(v is None for v in losses) or (final is not None and first is not None and final > first):
        cause = ("the loss rose or turned NaN: the learning rate is too high, or rows have labels out of range "
                 "(see model.nan_rows)")
        fix = "tf_keras.optimizers.Adam(learning_rate=5e-5)  # lower the rate; fix model.nan_rows first"
    elif final >= stuck_share * first:
        cause = ("the loss stayed near where it started" + (f" (ln K = {figures['ln_k']:.3f})" if figures["ln_k"] else "")
                 + ": the learning rate is too low, or weights are frozen or disconnected from the loss (see model.gradients)")
        fix = "tf_keras.optimizers.Adam(learning_rate=...)  # a rate from the sweep; check layer.trainable"
    else:
        cause = ("the loss fell too slowly: the learning rate is too low, or the loss reads logits as probabilities "
                 "(from_logits=False, see hparams.loss)")
        fix = "More epochs or a higher rate; loss=SparseCategoricalCrossentropy(from_logits=True) or the internal loss"
    shown_final = "NaN" if final is None else f"{final:.4f}"
    reached = "" if regression else f", accuracy {accuracy:.0%}"
    return CheckResult(
        "overfit.one_batch", STAGE, Status.FAIL,
        f"After {run}, the loss went from {first if first is None else round(first, 3)} to {shown_final}{reached}: "
        f"{cause}.{rerun}{note}",
        fix=fix,
        evidence=evidence,
    )


def run_overfit_checks(config: RunConfig, model, tokenizer, split, *, epochs: int = DEFAULT_EPOCHS,
                       rate: float | None = None, best_rate: float | None = None,
                       progress: Callable[[float, str], None] = lambda fraction, text: None) -> list[CheckResult]:
    """The overfit test on a batch holding every label; the model given is never modified."""
    task = config.glue_task
    labels = split_labels(split)
    if not task.regression and not (labels >= 0).any():
        return [CheckResult("overfit.one_batch", STAGE, Status.SKIP,
                            "The split has no labels (all -1, a GLUE test split), so there is nothing to learn.")]
    indices, missing = every_label_indices(labels, task, config.batch_size, config.seed)
    batch = build_batch(split, tokenizer, config, indices)
    if batch.tf_batch is None:
        return [CheckResult("overfit.one_batch", STAGE, Status.SKIP,
                            f"No batch to train on: {batch.error} (see data.batch).")]
    figures = overfit_one_batch(model, batch, config, epochs, rate=rate, progress=progress)
    rows = decoded_rows(batch, tokenizer, task)
    if figures.get("error"):
        return [check_overfit(figures, rows, missing_labels=missing, best_rate=best_rate)]
    for row, prediction in zip(rows, figures["predictions"]):
        row["predicted"] = prediction
        row["predicted_name"] = task.label_name(prediction) if not task.regression else f"score {prediction:.2f}"
        row["correct"] = None if task.regression else prediction == row["label"]
    return [check_overfit(figures, rows, missing_labels=missing, best_rate=best_rate)]
