"""The Hyperparameters unit that trains: the learning-rate sweep and the range test on one traced copy."""

from __future__ import annotations

from diagnostics.checks.hparams.lr_range_test import CHECK as LR_RANGE_TEST, check_lr_range_test, lr_range_test
from diagnostics.checks.hparams.lr_sweep import CHECK as LR_SWEEP, check_lr_sweep, lr_sweep
from diagnostics.config.run import RunConfig
from diagnostics.config.training import SweepSettings
from diagnostics.core.context import RunContext
from diagnostics.core.result import CheckResult, run_check
from diagnostics.keras.training import SharedCopy, Trainer, effective_rate, head_only, trains_pretrained


def run_training_checks(config: RunConfig, model, batches: list, settings: SweepSettings,
                        *, held, copies: SharedCopy | None = None
                        ) -> list[CheckResult]:
    """The Hyperparameters stage's checks that train (the sweep and the range test), on one copy of the (never
    modified) model (`copies`: the one shared with the call's other training checks; a new one when None).

    Args:
        held: a batch of rows the sweep never trains on (the sweep scores each rate on it).
    """
    task = config.glue_task
    pretrained, head = trains_pretrained(model), head_only(model)  # the rules for what this fit trains
    results = []
    holder: list[Trainer] = []

    def trainer() -> Trainer:
        if not holder:
            holder.append((copies or SharedCopy()).trainer(model, batches, config))
        return holder[0]

    rate = effective_rate(config)
    results.append(run_check(LR_SWEEP.id, LR_SWEEP.stage, lambda: check_lr_sweep(
        lr_sweep(trainer(), settings, held, configured_rate=rate,
                 regression=task.regression),
        rate, pretrained=pretrained, head_only=head)))
    safe, best, limit = ((results[-1].evidence or {}).get(key) for key in ("max_safe_rate", "best_rate",
                                                                            "drift_limit"))
    results.append(run_check(LR_RANGE_TEST.id, LR_RANGE_TEST.stage, lambda: check_lr_range_test(
        lr_range_test(trainer(), settings), max_safe_rate=safe, drift_limit=limit,
        sweep_rate=best)))
    return results


def _batches(run: RunContext, sweep: SweepSettings):
    """The training batches and held-out rows a few steps of `sweep` see (with a new batch every step, K steps show
    batch-to-batch noise, not learning). The first builds (the units' "batch" need); one after it that does not is
    an error of the unit, naming what it raised."""
    return run.training_batches(max(1, min(sweep.steps // 4, 4)))


def planned_steps(run: RunContext, settings) -> int:
    """The steps the sweep (each rate of its grid and the configured rate) and the range test (at most) take."""
    sweep = settings.sweep
    return len(set(sweep.grid() + [effective_rate(run.config)])) * sweep.steps + sweep.range_steps


def measure_training(run: RunContext, *, sweep: SweepSettings, copies) -> list[CheckResult]:
    batches, held = _batches(run, sweep)
    return run_training_checks(run.config, run.classifier[0], batches, sweep, held=held, copies=copies)
