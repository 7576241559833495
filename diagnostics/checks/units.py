"""The units of the walk (`registry.UNITS` names each one's function here), and the stages as callers ask for them;
every call goes through the one runner (`diagnostics.core.runner`)."""

from __future__ import annotations

import numpy as np

from diagnostics.keras import keras_model

from diagnostics.core import registry
from diagnostics.i18n import msg
from diagnostics.keras.batches import LABEL, LABEL_AS_WRITTEN, decoded_rows, split_labels
from diagnostics.core.context import RunContext
from diagnostics.checks.data import (check_baselines, check_batch, check_columns, check_decoded_samples, check_duplicates,
                              check_label_balance, check_label_range, check_text_cells, check_tokenizing,
                              check_truncation, duplicate_figures, missing_columns_result, truncation_figures,
                              users_truncation)
from diagnostics.keras.devices import outside_user_strategy
from diagnostics.core.errors import InputError
from diagnostics.checks.hyperparams import (SweepSettings, check_loss, check_optimizer, check_schedule, loss_figures,
                                     optimizer_settings, run_training_checks, schedule_figures)
from diagnostics.checks.learnability import check_learnability, learnability_figures
from diagnostics.keras.measurement import configured_loss_value, non_finite_weights
from diagnostics.checks.model import (check_config, check_forward, check_gradients, check_initial_loss, check_memory,
                               check_nan_origin, check_nan_rows, check_weights_after_step, expected_loss,
                               gradient_figures, labels_present, learning_rate_text, memory_figures,
                               not_a_classifier, out_of_range)
from diagnostics.checks.overfit import DEFAULT_EPOCHS, run_overfit_checks
from diagnostics.core.result import CheckResult, run_check
from diagnostics.core.runner import Settings, run_units
from diagnostics.keras.training import head_only, is_pretrained, per_sample_losses, split_batch, usual_rate_of

__all__ = ["STAGES", "parse_stages", "parse_skip", "run_stages", "data_stage",
           "learnability_stage", "model_stage", "hparams_stage", "overfit_stage"]

STAGES = registry.STAGE_ORDER
LEARNABILITY = "data.learnability"
PARTS = ("setup", "training")


def parse_stages(text: str | None) -> tuple[str, ...]:
    """'data,model' -> ('data', 'model'); None -> every stage; unknown names are an InputError."""
    if not text:
        return STAGES
    names = tuple(name.strip() for name in text.split(",") if name.strip())
    unknown = [name for name in names if name not in STAGES]
    if unknown:
        raise InputError(msg("Unknown stage(s) {unknown}; available: {stages}.", unknown=", ".join(unknown),
                             stages=", ".join(STAGES)))
    return names


def parse_skip(text: str | None) -> tuple[str, ...]:
    """'data.learnability' -> the units those checks run in ('learnability',), to be left out of a run; a check
    that runs with others in one unit (the range test with the sweep) is left out with all of them or not at all.

    Raises:
        InputError: an unknown check, or a check named without the others of its unit.
    """
    names = [name.strip() for name in (text or "").split(",") if name.strip()]
    unknown = [name for name in names if name not in registry.CHECKS or registry.CHECKS[name].runs_in is None]
    if unknown:
        raise InputError(msg("Unknown check(s) {unknown} to skip; `python -m diagnostics checks` lists them.",
                             unknown=", ".join(unknown)))
    units = tuple(dict.fromkeys(registry.CHECKS[name].runs_in for name in names))
    for unit in units:
        if left := [check for check in registry.UNITS[unit].checks if check not in names]:
            raise InputError(msg("{checks} run together in one unit: skip them all or none (add {left}).",
                                 checks=", ".join(registry.UNITS[unit].checks), left=", ".join(left)))
    return units


def run_stages(run: RunContext, stages: tuple[str, ...] = STAGES, *, sweep: SweepSettings = SweepSettings(),
               progress=None, epochs: int = DEFAULT_EPOCHS, skip: tuple[str, ...] = ()) -> list[CheckResult]:
    """Run the chosen stages in pipeline order on one run context (every stage shares its batches and model), outside
    any strategy scope the caller is in (`devices.outside_user_strategy`); `skip`: units left out (`parse_skip`)."""
    units = [unit for stage in stages for unit in registry.units_of(stage) if unit not in skip]
    return outside_user_strategy(run_units, run, units, Settings(sweep=sweep, epochs=epochs), progress)


# ---------------------------------------------------------------- each stage alone

def data_stage(run: RunContext) -> list[CheckResult]:
    """The Data stage's checks on the batch and the split (learnability, which trains, runs apart)."""
    return run_units(run, [unit for unit in registry.units_of("data") if not registry.UNITS[unit].copy])


def learnability_stage(run: RunContext) -> list[CheckResult]:
    """data.learnability: a short run on the given labels against shuffled ones (trains two copies)."""
    return run_units(run, ("learnability",))


def model_stage(run: RunContext) -> list[CheckResult]:
    """The Model stage on the first batch."""
    return run_units(run, ("model",))


def hparams_stage(run: RunContext, *, sweep: SweepSettings = SweepSettings(), progress=None,
                  parts: tuple[str, ...] = PARTS) -> list[CheckResult]:
    """The Hyperparameters stage: "setup" checks take seconds, "training" ones (the sweep and the range test) train
    a copy."""
    return run_units(run, parts, Settings(sweep=sweep), progress)


def overfit_stage(run: RunContext, *, epochs: int = DEFAULT_EPOCHS, rate: float | None = None,
                  best_rate: float | None = None, configured_broke: bool | None = None,
                  progress=None) -> list[CheckResult]:
    """The overfit-one-batch test; `rate` overrides the configured one (e.g. the sweep's best); with the sweep's
    measurement (`best_rate`, `configured_broke`) it never trains at a rate the sweep measured as broken."""
    return run_units(run, ("overfit",), Settings(epochs=epochs, rate=rate, best_rate=best_rate,
                                                 configured_broke=configured_broke), progress)


# ---------------------------------------------------------------- the units' functions (called by the runner only)

# The Data checks that measure alone (each `registry.Check.measure`); data.columns and data.batch own what stops the
# batch (missing columns, bad text cells, a tokenizer that raises), so the runner skips the others when those stop it.

def data_columns(run: RunContext) -> CheckResult:
    task, columns = run.config.glue_task, list(run.split.column_names)
    if any(column in run.missing_columns for column in task.text_columns):
        return missing_columns_result(columns, task, run.missing_columns)
    if run.text_problems:
        return check_text_cells(run.text_problems, task, len(run.split))
    inputs = run.config.model_inputs or run.tokenizer.model_input_names
    recipe = run.config.recipe
    return check_columns(columns, task, run.first_batch, list(inputs),
                         read_back=recipe is not None and type(recipe.collate_fn).__name__ == "ReadBackCollator")


def data_batch(run: RunContext) -> CheckResult:
    if run.batch_exception is not None:
        return check_tokenizing(run.batch_exception)
    return check_batch(run.first_batch, run.config.batch_size)


def data_decoded_samples(run: RunContext) -> CheckResult:
    return check_decoded_samples(decoded_rows(run.first_batch, run.tokenizer, run.config.glue_task), run.not_prose)


def data_truncation(run: RunContext) -> CheckResult:
    """For the user's own pipeline, what their tokenization cut of the split, at the length their tokenizer call
    truncates at (only the padding when the rows have no raw text to re-tokenize)."""
    config = run.config
    if not config.recipe:
        return check_truncation(truncation_figures(run.first_batch, config.max_length))
    cut = users_truncation(run.split, run.tokenizer, config.glue_task, max_length=config.max_length,
                           source=config.truncation)
    return check_truncation(truncation_figures(run.first_batch, config.max_length, split_cut=cut,
                                               unmeasured=cut is None))


def _batch_labels(run: RunContext) -> list:
    """The first batch's labels when it builds, else none (its problems are data.batch's finding)."""
    built = not run.missing_columns and not run.text_problems and run.batch_exception is None
    return run.first_batch.rows[LABEL] if built else []


def data_label_range(run: RunContext) -> CheckResult:
    config, split = run.config, run.split
    written = split[LABEL_AS_WRITTEN] if LABEL_AS_WRITTEN in split.column_names else None
    return check_label_range(split_labels(split), _batch_labels(run), config.glue_task, config.effective_num_labels,
                             config.split, written)


def data_label_balance(run: RunContext) -> CheckResult:
    return check_label_balance(split_labels(run.split), _batch_labels(run), run.config.glue_task,
                               run.config.effective_num_labels)


def data_baselines(run: RunContext) -> CheckResult:
    return check_baselines(split_labels(run.split), run.config.glue_task, run.config.effective_num_labels)


def data_duplicates(run: RunContext) -> CheckResult:
    return check_duplicates(duplicate_figures(run.split, run.config.glue_task))


def measure_learnability(run: RunContext, *, copies) -> list[CheckResult]:
    """At the checkpoint's usual rate, whatever the configured one (the rate is the sweep's question)."""
    model = run.classifier[0]
    return [run_check(LEARNABILITY, "data", lambda: check_learnability(learnability_figures(
        model, run.tokenizer, run.config, run.split, rate=usual_rate_of(model), copies=copies)))]


# The Model checks measure alone too; they share the run context's forward pass and train step (`RunContext.forward`,
# `RunContext.batch_step`), and the runner skips the ones that read a pass or a step that failed, naming the check
# that owns it (model.forward, model.gradients).

def model_config(run: RunContext) -> CheckResult:
    """With no classifier, a fail (the runner skips the other Model checks, naming this one)."""
    model, problem = run.classifier
    if model is None:
        return not_a_classifier(run.config.checkpoint, problem)
    task = run.config.glue_task
    labels = split_labels(run.split) if LABEL in run.split.column_names else None
    return check_config(keras_model.model_config(model), keras_model.describe_model(model), task, run.tokenizer, labels_present(labels, task))


def _num_labels(run: RunContext) -> int:
    return keras_model.head_of(run.classifier[0]).num_labels


def _losses(run: RunContext):
    """The first batch's loss per row, from the logits (NaN where a label is out of range)."""
    return per_sample_losses(run.forward.logits, run.first_labels, run.config.glue_task.regression)


def model_forward(run: RunContext) -> CheckResult:
    return check_forward(run.forward, len(run.first_labels), _num_labels(run), _out_of_range(run))


def _out_of_range(run: RunContext) -> int:
    """The first batch's labels the head has no output for."""
    return out_of_range(run.first_labels, _num_labels(run), run.config.glue_task.regression)


def model_nan_rows(run: RunContext) -> CheckResult:
    task = run.config.glue_task
    return check_nan_rows(_losses(run), run.forward.logits, decoded_rows(run.first_batch, run.tokenizer, task),
                          _num_labels(run), task.regression)


def model_initial_loss(run: RunContext) -> CheckResult:
    config, logits, labels = run.config, run.forward.logits, run.first_labels
    regression = config.glue_task.regression
    head = keras_model.head_of(run.classifier[0])
    return check_initial_loss(configured_loss_value(config.loss, logits, labels, regression, head),
                              expected_loss(labels, config.glue_task, _num_labels(run)),
                              configured_loss_value("internal", logits, labels, regression), config.loss, regression)


def model_gradients(run: RunContext) -> CheckResult:
    return check_gradients({**gradient_figures(run.batch_step.record), "out_of_range_labels": _out_of_range(run)},
                           run.config)


def model_weights_after_step(run: RunContext) -> CheckResult:
    step = run.batch_step
    return check_weights_after_step(step.record, step.broken, learning_rate_text(run.config), step.moved,
                                    stale=run.config.stale_train_step)


def model_nan_origin(run: RunContext) -> CheckResult:
    step, losses = run.batch_step, _losses(run)
    return check_nan_origin(run.forward, step.forward, split_batch(run.first_batch.tf_batch)[0]["input_ids"],
                            non_finite_weights(run.classifier[0]), step.broken,
                            bool(losses.size and not np.isfinite(losses).all()))


def model_memory(run: RunContext) -> CheckResult:
    """At the batch fit builds: no more rows than the split has."""
    model, config, rows = run.classifier[0], run.config, len(run.split)
    return check_memory({**memory_figures(model.count_params(), keras_model.model_config(model), min(config.batch_size, rows) or
                                          config.batch_size, config.max_length),
                         "configured_batch_size": config.batch_size})


def _batches(run: RunContext, sweep: SweepSettings):
    """The training batches and held-out rows a few steps of `sweep` see (with a new batch every step, K steps show
    batch-to-batch noise, not learning). The first builds (the units' "batch" need); one after it that does not is
    an error of the unit, naming what it raised."""
    return run.training_batches(max(1, min(sweep.steps // 4, 4)))


# The Hyperparameters stage's setup checks measure alone too, sharing the run context's forward pass and its train
# step with labels in range.

def hparams_optimizer(run: RunContext) -> CheckResult:
    model = run.classifier[0]
    return check_optimizer(optimizer_settings(run.config), pretrained=is_pretrained(model),
                           frozen_encoder=head_only(model))


def hparams_loss(run: RunContext) -> CheckResult:
    config = run.config
    return check_loss(loss_figures(run.classifier[0], run.first_batch.tf_batch, run.first_labels, config,
                                   config.glue_task, step=lambda: run.in_range_step, forward=run.forward))


def hparams_schedule(run: RunContext) -> CheckResult:
    return check_schedule(schedule_figures(run.config))


def measure_training(run: RunContext, *, sweep: SweepSettings, progress, copies) -> list[CheckResult]:
    batches, held = _batches(run, sweep)
    return run_training_checks(run.config, run.classifier[0], batches, sweep, progress, held=held, copies=copies)


def measure_overfit(run: RunContext, *, epochs: int, rate: float | None, best_rate: float | None,
                    configured_broke: bool | None, progress, copies) -> list[CheckResult]:
    return run_overfit_checks(run.config, run.classifier[0], run.tokenizer, run.split, epochs=epochs, rate=rate,
                              best_rate=best_rate, configured_broke=configured_broke, progress=progress,
                              copies=copies)
