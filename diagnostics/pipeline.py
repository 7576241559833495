"""Runs the stages of the walk for one configuration on one shared run context."""

from __future__ import annotations

import functools
import gc
from dataclasses import replace

from diagnostics import limits, registry
from diagnostics.i18n import Text, joined, msg, msgn
from diagnostics.budget import BudgetExceeded, run_budget
from diagnostics.batches import LABEL, split_labels
from diagnostics.context import RunContext
from diagnostics.data import run_data_checks
from diagnostics.devices import outside_user_strategy
from diagnostics.errors import InputError
from diagnostics.hyperparams import SweepSettings, optimizer_summary, run_hparams_checks
from diagnostics.learnability import check_learnability, learnability_figures
from diagnostics.model import not_classification_results, run_model_checks
from diagnostics.overfit import DEFAULT_EPOCHS, run_overfit_checks
from diagnostics.result import CheckResult, Status, error_result, run_check, skipped
from diagnostics.training import effective_rate

STAGES = registry.STAGE_ORDER
LEARNABILITY = "data.learnability"
PARTS = ("setup", "training")


def stage(name: str, checks: tuple[str, ...] | None = None):
    """A stage on a run context: run inside hosted mode's time budget, never raise, and free what it trained.

    Anything the stage's shared work raises (a batch, a model copy, a decode), beyond unusable input, becomes an
    `error` result for each of its checks, naming the exception, with the traceback in the evidence; past the
    time budget they are skips saying so. A trained copy holds its weights, gradients and optimizer slots, and
    refers to itself through Keras's traced train step, so only the cycle collector frees it; collecting here
    frees the largest tensors between stages instead of whenever Python next collects.

    Args:
        checks: the check ids the stage answers for (default: every check of the stage in `parts`).
    """
    def decorate(function):
        @functools.wraps(function)
        def wrapper(run: RunContext, *args, **kwargs) -> list[CheckResult]:
            parts = kwargs.get("parts", PARTS)
            ids = checks or tuple(check for check in registry.checks_of(name) if check != LEARNABILITY
                                  and registry.CHECKS[check].part in parts)
            try:
                with run_budget():
                    return function(run, *args, **kwargs)
            except InputError:
                raise
            except BudgetExceeded as exc:
                return [skipped(check, name, str(exc)) for check in ids]
            except Exception as exc:  # one broken piece of shared work must not blank the page
                return [error_result(check, name, exc) for check in ids]
            finally:
                gc.collect()
        return wrapper
    return decorate


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


def run_stages(run: RunContext, stages: tuple[str, ...] = STAGES, *, sweep: SweepSettings = SweepSettings(),
               progress=None, epochs: int = DEFAULT_EPOCHS) -> list[CheckResult]:
    """Run the chosen stages in pipeline order on one run context (every stage shares its batches and model), outside
    any strategy scope the caller is in (`devices.outside_user_strategy`)."""
    return outside_user_strategy(_run_stages, run, stages, sweep=sweep, progress=progress, epochs=epochs)


def _run_stages(run: RunContext, stages: tuple[str, ...], *, sweep: SweepSettings, progress, epochs: int
                ) -> list[CheckResult]:
    results: list[CheckResult] = []
    with run_budget():
        if "data" in stages:
            results += data_stage(run) + learnability_stage(run)
        if "model" in stages:
            results += model_stage(run)
        if "hparams" in stages:
            results += hparams_stage(run, sweep=sweep, progress=progress)
        if "overfit" in stages:
            best = next((r.evidence.get("best_rate") for r in results if r.id == "hparams.lr_sweep"), None)
            results += overfit_stage(run, epochs=epochs, best_rate=best, progress=progress)
    return name_each_cause_once(results)


def name_each_cause_once(results: list[CheckResult]) -> list[CheckResult]:
    """One cause, one owner: when hparams.lr_sweep measured the configured rate as too high, hparams.optimizer's rule
    of thumb and the overfit test's weight drift say so and point at the sweep instead of naming the rate again."""
    sweep = next((result for result in results if result.id == "hparams.lr_sweep"), None)
    if sweep is None or not (sweep.evidence or {}).get("configured_too_high"):
        return results
    rate = sweep.evidence.get("configured_rate")
    out = []
    for result in results:
        evidence = result.evidence or {}
        if result.id == "hparams.optimizer" and evidence.get("rate_above_ceiling"):
            result = replace(result, status=Status.PASS, fix=None, summary=msg(
                "{summary} Whether its rate suits this checkpoint is measured by hparams.lr_sweep (see its finding).",
                summary=optimizer_summary(evidence)))
        elif result.id == "overfit.one_batch" and evidence.get("drift_warning") and \
                (evidence.get("memorised") or evidence.get("learning")):
            result = replace(result, status=Status.PASS, fix=None, summary=msg(
                "The model {outcome} one batch at learning rate {rate:g} (accuracy {accuracy:.0%}): the pipeline can "
                "learn. How fast that rate moves the pretrained weights is hparams.lr_sweep's finding.",
                outcome=msg("memorised") if evidence.get("memorised") else msg("learns"),
                rate=evidence.get("learning_rate") or rate, accuracy=evidence.get("final_accuracy") or 0.0))
        out.append(result)
    return out


def _reason(run: RunContext, need: str) -> Text | None:
    """Why the stage cannot do what `need` names on this run, or None when it can."""
    config = run.config
    if need == "columns" and run.missing_columns:
        expected = list(config.glue_task.text_columns) + ["label"]
        return msg("The split has no {missing} column (it has {found}; {task} needs {needed}): see data.columns.",
                   missing=", ".join(run.missing_columns), found=", ".join(run.split.column_names),
                   task=config.glue_task.name, needed=", ".join(expected))
    if need == "columns" and run.text_problems:
        counts = joined([msgn("{column} in {count:,} row", "{column} in {count:,} rows",
                              len(found["empty"]) + len(found["not_text"]), column=column)
                         for column, found in run.text_problems.items()])
        return msg("Some text cells are empty or not text ({counts}): see data.columns.", counts=counts)
    if need == "labels" and not run.has_labels:
        return msg("No label of the split is usable (all -1, as in a GLUE test split, or unreadable: see "
                   "data.label_range), so there is nothing to learn.")
    if need == "range" and run.unreadable_scores:
        return msg("{count:,} scores are empty or not numbers (see data.label_range): a NaN label makes every loss "
                   "NaN, so fix them first.", count=run.unreadable_scores)
    if need in ("range", "readable") and run.unusable_labels:
        task = config.glue_task
        return msg("{count:,} labels are not {task} labels (see data.label_range): every check that feeds labels to "
                   "the model needs ids 0..{last} or {task}'s names, so fix them first.", count=run.unusable_labels,
                   task=task.name, last=task.num_labels - 1)
    if need == "range" and run.out_of_range_labels:
        return msg("Training stops at the first of {count:,} labels outside [0, {num_labels}) (see data.label_range "
                   "and model.nan_rows): fix them or num_labels first.", count=run.out_of_range_labels,
                   num_labels=config.effective_num_labels)
    if need == "flows" and run.classifier[0] is not None and run.first_batch.tf_batch is not None \
            and run.gradients_stopped:
        return msg("Blocked by model.gradients: with loss {loss} every gradient is zero, so no step moves the weights "
                   "and this measurement could only show that (not the learning rate or the labels). Fix the loss "
                   "first (see hparams.loss).", loss=repr(config.loss))
    if need == "model" and run.classifier[0] is None:
        return msg("No model to train: {reason}", reason=run.classifier[1])
    if need == "batch" and run.first_batch.tf_batch is None:
        return msg("No training batches: {error} (see data.batch).", error=run.first_batch.error)
    if need == "rows" and len(run.split) < 8:
        return msg("The split has {rows} rows, too few to hold some out.", rows=len(run.split))
    return None


def _blocked(run: RunContext, stage_name: str, check_ids, *needs: str) -> list[CheckResult]:
    """Skips, with the first reason among `needs` in order, for checks that cannot run; nothing when they can."""
    reason = next((found for need in needs if (found := _reason(run, need))), None)
    return [skipped(check, stage_name, reason) for check in check_ids] if reason else []


@stage("data")
def data_stage(run: RunContext) -> list[CheckResult]:
    """The Data stage's checks on the batch and the split (learnability, which trains, runs apart)."""
    return run_data_checks(run.config, run.split, run.tokenizer, lambda: run.first_batch)


@stage("data", checks=(LEARNABILITY,))
def learnability_stage(run: RunContext) -> list[CheckResult]:
    """data.learnability: a short run on the given labels against shuffled ones (trains two copies)."""
    return _blocked(run, "data", (LEARNABILITY,), "columns", "labels", "range", "model", "batch", "rows",
                    "flows") or [
        run_check(LEARNABILITY, "data", lambda: check_learnability(learnability_figures(
            run.classifier[0], run.tokenizer, run.config, run.split, rate=effective_rate(run.config))))]


@stage("model")
def model_stage(run: RunContext) -> list[CheckResult]:
    """The Model stage on the first batch; a checkpoint with no classifier is a clear fail."""
    blocked = _blocked(run, "model", registry.checks_of("model"), "columns", "readable")
    if blocked:
        return blocked
    model, problem = run.classifier
    if model is None:
        return not_classification_results(run.config.checkpoint, problem)
    labels = split_labels(run.split) if LABEL in run.split.column_names else None
    return run_model_checks(run.config, model, run.tokenizer, run.first_batch, labels, len(run.split))


@stage("hparams")
def hparams_stage(run: RunContext, *, sweep: SweepSettings = SweepSettings(), progress=None,
                  parts: tuple[str, ...] = PARTS) -> list[CheckResult]:
    """The Hyperparameters stage on the first batches `model.fit` would see; "setup" checks take seconds,
    "training" ones (the sweep and the range test) train a copy."""
    sweep = sweep.validated()
    checks = tuple(check for part in parts for check in registry.checks_of("hparams", part))
    blocked = _blocked(run, "hparams", checks, "columns", "model", "batch")
    if blocked:
        return blocked
    # A few batches seen repeatedly: with a new batch every step, K steps show batch-to-batch noise, not learning.
    try:
        batches, held = run.training_batches(max(1, min(sweep.steps // 4, 4)))
    except ValueError as exc:
        reason = msg("No training batches: {error} (see data.batch).",
                     error=str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
        return [skipped(check, "hparams", reason) for check in checks]
    untrainable = _blocked(run, "hparams", registry.checks_of("hparams", "training"), "range", "flows") \
        if "training" in parts else []
    if untrainable:
        parts = tuple(part for part in parts if part != "training")
    return run_hparams_checks(run.config, run.classifier[0], batches, run.first_labels, sweep,
                              progress or (lambda fraction, text: None), held=held, parts=parts,
                              step=lambda: run.in_range_step) + untrainable


@stage("overfit")
def overfit_stage(run: RunContext, *, epochs: int = DEFAULT_EPOCHS, rate: float | None = None,
                  best_rate: float | None = None, progress=None) -> list[CheckResult]:
    """The overfit-one-batch test; `rate` overrides the configured one (e.g. the sweep's best)."""
    validate_epochs(epochs)
    return _blocked(run, "overfit", registry.checks_of("overfit"), "columns", "readable", "model",
                    "flows") or run_overfit_checks(
        run.config, run.classifier[0], run.tokenizer, run.split, epochs=epochs, rate=rate, best_rate=best_rate,
        progress=progress or (lambda fraction, text: None))


def validate_epochs(epochs) -> int:
    """The overfit test's epoch count, or an InputError saying what it may be."""
    if not (isinstance(epochs, int) or float(epochs).is_integer()) or not 1 <= epochs <= 1000:
        raise InputError(msg("The overfit test needs a whole number of epochs from 1 to 1000, got {epochs}.",
                             epochs=epochs))
    problems = limits.epochs_problems(int(epochs))
    if problems:
        raise InputError(msg("{problems}.", problems=joined(problems, "; ")))
    return int(epochs)
