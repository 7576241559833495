"""Runs the stages of the walk for one configuration, loading what they need."""

from __future__ import annotations

import functools
import gc
from typing import Callable

import numpy as np

from diagnostics import limits, loading
from diagnostics.config import RunConfig
from diagnostics.data import (LABEL, build_batch, build_first_batch, held_out_indices, run_data_checks,
                              training_batches)
from diagnostics.errors import InputError, NotClassifierError
from diagnostics.learnability import CHECK_ID as LEARNABILITY, check_learnability, learnability_figures
from diagnostics.hyperparams import SETUP_CHECKS, STAGE as HPARAMS, TRAINING_CHECKS, SweepSettings, run_hparams_checks
from diagnostics.model import MODEL_CHECKS, not_classification_results, run_model_checks
from diagnostics.overfit import DEFAULT_EPOCHS, STAGE as OVERFIT, run_overfit_checks
from diagnostics.training import effective_rate
from diagnostics.result import CheckResult, run_check, skipped

STAGES = ("data", "model", "hparams", "overfit")


def stage(function):
    """A stage: run inside hosted mode's time budget, and free what it trained once it returns.

    A trained copy holds its weights, gradients and optimizer slots, and refers to itself through
    Keras's traced train step, so only the cycle collector frees it; collecting here frees the
    largest tensors between stages instead of whenever Python next collects.
    """
    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        try:
            with limits.run_budget():
                return function(*args, **kwargs)
        finally:
            gc.collect()
    return wrapper


def parse_stages(text: str | None) -> tuple[str, ...]:
    """'data,model' -> ('data', 'model'); None -> every stage; unknown names are an InputError."""
    if not text:
        return STAGES
    names = tuple(name.strip() for name in text.split(",") if name.strip())
    unknown = [name for name in names if name not in STAGES]
    if unknown:
        raise InputError(f"Unknown stage(s) {', '.join(unknown)}; available: {', '.join(STAGES)}.")
    return names


@stage
def run_stages(config: RunConfig, stages: tuple[str, ...] = STAGES, *, tokenizer=None, split=None,
               model_loader: Callable = loading.load_model, sweep: SweepSettings = SweepSettings(),
               progress=None, epochs: int = DEFAULT_EPOCHS) -> list[CheckResult]:
    """Run the chosen stages in pipeline order.

    Args:
        tokenizer, split: already-loaded artifacts to reuse (the app passes its cached ones).
        model_loader: `(checkpoint, num_labels, seed) -> model`; the app passes its shared cache.
            The model it returns is never modified.

    Raises:
        InputError: the configuration, checkpoint or data cannot be used.
    """
    config = config.validated()
    tokenizer = tokenizer if tokenizer is not None else loading.load_tokenizer(config.checkpoint)
    split = split if split is not None else loading.load_split(config)
    loading.validate_for_tokenizer(config, tokenizer)
    results: list[CheckResult] = []
    if "data" in stages:
        results += run_data_checks(config, split, tokenizer)
        results += learnability_stage(config, tokenizer, split, model_loader)
    if "model" in stages:
        results += model_stage(config, tokenizer, split, model_loader)
    if "hparams" in stages:
        results += hparams_stage(config, tokenizer, split, model_loader, sweep, progress)
    if "overfit" in stages:
        best = next((r.evidence.get("best_rate") for r in results if r.id == "hparams.lr_sweep"), None)
        results += overfit_stage(config, tokenizer, split, model_loader, epochs=epochs, best_rate=best,
                                 progress=progress)
    return results


def out_of_range_labels(split, config: RunConfig) -> int:
    """How many labels of the split the model's head cannot take (training stops at the first one on CPU)."""
    from diagnostics.data import invalid_labels, split_labels

    if config.glue_task.regression:
        return 0
    return sum(invalid_labels(split_labels(split), config.glue_task, config.effective_num_labels).values())


def _missing_columns(check_ids, stage: str, split, config: RunConfig) -> list[CheckResult]:
    """Skips for checks that need the task's text and label columns when the split lacks some, else nothing."""
    task = config.glue_task
    expected = list(task.text_columns) + [LABEL]
    missing = [column for column in expected if column not in split.column_names]
    if not missing:
        return []
    reason = (f"The split has no {', '.join(missing)} column (it has {', '.join(split.column_names)}; {task.name} "
              f"needs {', '.join(expected)}): see data.columns.")
    return [skipped(check, stage, reason) for check in check_ids]


def _untrainable(check_ids, stage: str, split, config: RunConfig) -> list[CheckResult]:
    """Skips for training checks when labels are out of range, else nothing."""
    bad = out_of_range_labels(split, config)
    if not bad:
        return []
    reason = (f"Training stops at the first of {bad:,} labels outside [0, {config.effective_num_labels}) "
              "(see data.label_range and model.nan_rows): fix them or num_labels first.")
    return [skipped(check, stage, reason) for check in check_ids]


@stage
def learnability_stage(config: RunConfig, tokenizer, split, model_loader: Callable = loading.load_model
                       ) -> list[CheckResult]:
    """data.learnability: a short run on the given labels against shuffled ones (trains two copies)."""
    missing = _missing_columns((LEARNABILITY,), "data", split, config)
    if missing:
        return missing
    if config.glue_task.regression is False and (split.data.column(LABEL).to_numpy() < 0).all():
        return [skipped(LEARNABILITY, "data", "The split has no labels (all -1), so there is nothing to learn.")]
    untrainable = _untrainable((LEARNABILITY,), "data", split, config)
    if untrainable:
        return untrainable
    model, problem = _load_classifier(config, model_loader)
    if model is None:
        return [skipped(LEARNABILITY, "data", f"No model to train: {problem}")]
    if build_first_batch(split, tokenizer, config).tf_batch is None:
        return [skipped(LEARNABILITY, "data", "No batch can be built (see data.batch).")]
    if len(split) < 8:
        return [skipped(LEARNABILITY, "data", f"The split has {len(split)} rows, too few to hold some out.")]
    return [run_check(LEARNABILITY, "data", lambda: check_learnability(learnability_figures(
        model, tokenizer, config, split, rate=effective_rate(config))))]


@stage
def overfit_stage(config: RunConfig, tokenizer, split, model_loader: Callable = loading.load_model, *,
                  epochs: int = DEFAULT_EPOCHS, rate: float | None = None, best_rate: float | None = None,
                  progress=None) -> list[CheckResult]:
    """The overfit-one-batch test; `rate` overrides the configured one (e.g. the sweep's best)."""
    validate_epochs(epochs)
    missing = _missing_columns(("overfit.one_batch",), OVERFIT, split, config)
    if missing:
        return missing
    model, problem = _load_classifier(config, model_loader)
    if model is None:
        return [skipped("overfit.one_batch", OVERFIT, f"No model to train: {problem}")]
    try:
        return run_overfit_checks(config, model, tokenizer, split, epochs=epochs, rate=rate, best_rate=best_rate,
                                  progress=progress or (lambda fraction, text: None))
    except limits.BudgetExceeded as exc:
        return [skipped("overfit.one_batch", OVERFIT, str(exc))]


def validate_epochs(epochs) -> int:
    """The overfit test's epoch count, or an InputError saying what it may be."""
    if not (isinstance(epochs, int) or float(epochs).is_integer()) or not 1 <= epochs <= 1000:
        raise InputError(f"The overfit test needs a whole number of epochs from 1 to 1000, got {epochs}.")
    problems = limits.epochs_problems(int(epochs))
    if problems:
        raise InputError("; ".join(problems) + ".")
    return int(epochs)


def _load_classifier(config: RunConfig, model_loader: Callable):
    """The model under test, or the reason it cannot be loaded as a sequence classifier."""
    try:
        return model_loader(config.checkpoint, config.effective_num_labels, config.seed), None
    except NotClassifierError as exc:
        return None, str(exc)


@stage
def hparams_stage(config: RunConfig, tokenizer, split, model_loader: Callable = loading.load_model,
                  sweep: SweepSettings = SweepSettings(), progress=None,
                  parts: tuple[str, ...] = ("setup", "training")) -> list[CheckResult]:
    """The Hyperparameters stage on the first batches `model.fit` would see."""
    sweep = sweep.validated()
    checks = (SETUP_CHECKS if "setup" in parts else ()) + (TRAINING_CHECKS if "training" in parts else ())
    missing = _missing_columns(checks, HPARAMS, split, config)
    if missing:
        return missing
    model, problem = _load_classifier(config, model_loader)
    if model is None:
        return [skipped(check, HPARAMS, f"No model to train: {problem}") for check in checks]
    first = build_first_batch(split, tokenizer, config)
    if first.tf_batch is None:
        return [skipped(check, HPARAMS, f"No training batches: {first.error} (see data.batch).") for check in checks]
    try:
        # A few batches seen repeatedly: with a new batch every step, K steps show batch-to-batch noise, not learning.
        count = max(1, min(sweep.steps // 4, 4))
        batches = training_batches(split, tokenizer, config, count=count)
        held = build_batch(split, tokenizer, config,
                           held_out_indices(len(split), config, count * config.batch_size)).tf_batch
    except Exception as exc:
        reason = f"No training batches: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''} (see data.batch)."
        return [skipped(check, HPARAMS, reason) for check in checks]
    labels = np.asarray(first.rows[LABEL])
    untrainable = _untrainable(TRAINING_CHECKS, HPARAMS, split, config) if "training" in parts else []
    if untrainable:
        parts = tuple(part for part in parts if part != "training")
    return run_hparams_checks(config, model, [first.tf_batch] + batches[1:], labels, sweep,
                              progress or (lambda fraction, text: None), held=held, parts=parts) + untrainable


@stage
def model_stage(config: RunConfig, tokenizer, split, model_loader: Callable = loading.load_model) -> list[CheckResult]:
    """The Model stage on the Data stage's first batch; a checkpoint with no classifier is a clear fail."""
    missing = _missing_columns(MODEL_CHECKS, "model", split, config)
    if missing:
        return missing
    model, problem = _load_classifier(config, model_loader)
    if model is None:
        return not_classification_results(config.checkpoint, problem)
    batch = build_first_batch(split, tokenizer, config)
    return run_model_checks(config, model, tokenizer, batch)
