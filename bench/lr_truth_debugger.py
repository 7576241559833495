"""What the debugger's measured learning-rate checks say at each rate, for bench/lr_truth.py.

One sweep over the default grid with the truth's rates added (the sweep measures every rate from the same
start, so each configured rate is judged from the same evidence), one range test, and the overfit test run
at each rate, all on copies of one loaded model, exactly as `python -m diagnostics run` builds them.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from diagnostics.keras import data_files, loading
from diagnostics.config.run import RunConfig
from diagnostics.keras.batches import build_batch, held_out_indices, training_batches
from diagnostics.checks.hparams.lr_range_test import check_lr_range_test, lr_range_test
from diagnostics.checks.hparams.lr_sweep import check_lr_sweep, lr_sweep, sweep_verdicts
from diagnostics.config.training import SweepSettings
from diagnostics.checks.overfit.one_batch import run_overfit_checks
from diagnostics.keras.training import Trainer, is_pretrained

FLAGGED = {"warn", "fail"}


@dataclass(frozen=True)
class GridWithRates(SweepSettings):
    """The default sweep grid with extra rates measured alongside."""

    extra: tuple[float, ...] = ()

    def grid(self) -> list[float]:
        return sorted(set(super().grid()) | set(self.extra))


def debugger_table(config: RunConfig, rates) -> dict:
    """rate -> {"sweep": verdict text, "overfit": status, "bad": bool}, plus "recommended" and "range_suggestion"."""
    config = config.validated()
    tokenizer = loading.load_tokenizer(config.checkpoint)
    split = data_files.load_split(config)
    model = loading.load_model(config.checkpoint, config.effective_num_labels, config.seed)
    settings = GridWithRates(extra=tuple(rates))
    count = max(1, min(settings.steps // 4, 4))
    batches = training_batches(split, tokenizer, config, count=count)
    held = build_batch(
        split, tokenizer, config, held_out_indices(len(split), config, count * config.batch_size)
    ).tf_batch
    trainer = Trainer(model, batches, config)
    figures = lr_sweep(trainer, settings, held, regression=config.glue_task.regression)
    pretrained = is_pretrained(model)
    verdicts = sweep_verdicts(figures, pretrained=pretrained)
    recommended = verdicts["best_rate"]
    range_result = check_lr_range_test(lr_range_test(trainer, settings), max_safe_rate=verdicts["max_safe_rate"])
    del trainer
    table: dict = {"recommended": recommended,
                   "range_suggestion": f"{range_result.evidence.get('suggested', float('nan')):.1e} "
                                       f"({range_result.evidence.get('finite_points', 0)} finite points)"}
    for rate in rates:
        sweep = check_lr_sweep(figures, rate, pretrained=pretrained)
        index = figures["learning_rates"].index(rate)
        drift = figures["drift_per_step"][index]
        overfit = run_overfit_checks(replace(config, optimizer="Adam", learning_rate=rate), model, tokenizer, split,
                                     best_rate=recommended)[0]
        table[f"{rate:g}"] = {
            "sweep": f"{sweep.status.value} (drift {drift:.1e})" if drift is not None else sweep.status.value,
            "overfit": overfit.status.value,
            "bad": sweep.status.value in FLAGGED or overfit.status.value in FLAGGED,
            "held_out_loss": figures["held_out"][index]["loss"],
        }
    table["held_out_losses"] = [score["loss"] for score in figures["held_out"]]
    table["grid"] = figures["learning_rates"]
    table["mean_drift_per_rate"] = float(
        np.nanmean([d / r for d, r in zip(figures["drift_per_step"], figures["learning_rates"], strict=True) if d])
    )
    return table
