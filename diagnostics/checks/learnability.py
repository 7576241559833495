"""Data stage, trained: do the labels carry signal? A short run on the given labels against the same run on
labels shuffled at random, judged on held-out rows of the split."""

from __future__ import annotations

from typing import Any

import numpy as np

from diagnostics.core.chance import chance_of_at_least
from diagnostics.i18n import msg
from diagnostics.config.run import RunConfig
from diagnostics.keras.batches import LABEL, LEARNABILITY_CONTROL, batches_of, build_batch, shuffled_labels
from diagnostics.core.registry import threshold
from diagnostics.core.result import CheckResult, judge
from diagnostics.keras.training import SharedCopy, Trainer, held_out_figures, is_pretrained

CHECK_ID, STAGE = "data.learnability", "data"


def held_out_score(trainer: Trainer, batches: list, held, config: RunConfig, steps: int, rate: float
                   ) -> dict[str, float]:
    """Train the copy from its start for `steps` steps on `batches`; score it on the `held` batch (accuracy, or MSE)."""
    trainer.use(batches)
    trainer.reset(rate)
    losses = trainer.run(steps)
    scored = held_out_figures(trainer.model, held.tf_batch, config.glue_task.regression)
    score = scored["loss"] if config.glue_task.regression else scored["accuracy"]
    tail = max(1, len(losses) // 4)
    return {"score": score, "first_train_loss": float(np.mean(losses[:tail])),
            "final_train_loss": float(np.mean(losses[-tail:]))}


def learnability_figures(model, tokenizer, config: RunConfig, split, *, rate: float, train_size: int = 96,
                         held_size: int = 32, epochs: int = 6, copies: SharedCopy | None = None) -> dict[str, Any]:
    """Held-out scores after the same short run on the given labels and on a random permutation of them, both on
    one copy of the model (`copies`: shared with the call's other training checks; a new one when None)."""
    count = len(split)
    order = np.random.default_rng(config.seed).permutation(count)
    held_size = min(held_size, max(1, count // 4))
    held, train = order[:held_size].tolist(), order[held_size:held_size + train_size].tolist()
    steps = epochs * -(-len(train) // config.batch_size)
    control_split = shuffled_labels(split, config.seed, LEARNABILITY_CONTROL)
    given_batches = batches_of(split, tokenizer, config, train)
    trainer = (copies or SharedCopy()).trainer(model, given_batches, config)
    given = held_out_score(trainer, given_batches, build_batch(split, tokenizer, config, held), config, steps, rate)
    control = held_out_score(trainer, batches_of(control_split, tokenizer, config, train),
                             build_batch(control_split, tokenizer, config, held), config, steps, rate)
    held_labels = split.data.column(LABEL).to_numpy()[held]
    if config.glue_task.regression:
        chance = float(np.var(held_labels.astype(float)))
    else:
        chance = float(np.bincount(held_labels[held_labels >= 0].astype(int)).max() / max(1, (held_labels >= 0).sum())) \
            if (held_labels >= 0).any() else 0.0
    return {"given": given, "shuffled": control, "chance": chance, "pretrained": is_pretrained(model),
            "train_rows": len(train), "held_rows": len(held), "steps": steps, "learning_rate": rate, "regression": config.glue_task.regression}


def check_learnability(figures: dict[str, Any], *,
                       min_accuracy_gain: float = threshold("data.learnability", "min_accuracy_gain"),
                       max_p_value: float = threshold("data.learnability", "max_p_value"),
                       max_error_ratio: float = threshold("data.learnability", "max_error_ratio"),
                       fit_margin: float = threshold("data.learnability", "fit_margin")) -> CheckResult:
    """Do the given labels carry signal the model picks up, compared with the same labels shuffled?

    Held-out rows decide first: the given labels pass when they beat both the shuffled control and the majority
    label by `min_accuracy_gain`, and by more than chance: as many right answers would come at the better of those
    two accuracies at most `max_p_value` of the time (on 32 held-out rows, 10 points above a 38% majority is 16
    rows right, which random labels reach one time in ten; regression: an error below `max_error_ratio` of the
    control's). A short run on
    a hard task (RTE-like) beats neither, so the training rows decide next: real labels are fitted faster than
    random ones (final training loss below the control's by `fit_margin`). When neither separates them: on a
    randomly initialised model (which learns labels with signal within this run) they behave like random labels:
    warn; on a pretrained one the run cannot tell: inconclusive (skip), with the numbers.
    """
    given, control = figures["given"], figures["shuffled"]
    run = msg("{steps} steps on {rows} rows at rate {rate:g} (the usual rate for the weights it trains: the "
              "configured rate is hparams.lr_sweep's to judge), scored on {held} held-out rows", steps=figures["steps"],
              rows=figures["train_rows"], rate=figures["learning_rate"], held=figures["held_rows"])
    evidence = {**figures, "fit_gain": 1 - given["final_train_loss"] / control["final_train_loss"]
                if control["final_train_loss"] else None}
    if figures["regression"]:
        evidence["error_ratio"] = given["score"] / control["score"] if control["score"] else None
        numbers = msg("held-out error {given:.3f} with the given labels, {shuffled:.3f} with shuffled ones",
                      given=given["score"], shuffled=control["score"])
    else:
        baseline, rows = max(control["score"], figures["chance"]), int(figures["held_rows"])
        evidence.update(accuracy_gain=given["score"] - baseline,
                        p_value=chance_of_at_least(round(given["score"] * rows), rows, baseline))
        numbers = msg("held-out accuracy {given:.0%} with the given labels, {shuffled:.0%} with shuffled ones (majority "
                      "label {chance:.0%})", given=given["score"], shuffled=control["score"], chance=figures["chance"])
    fits = msg("training loss {given_first:.3f} to {given_final:.3f} with the given labels, {shuffled_first:.3f} to "
               "{shuffled_final:.3f} with shuffled ones", given_first=given["first_train_loss"],
               given_final=given["final_train_loss"], shuffled_first=control["first_train_loss"],
               shuffled_final=control["final_train_loss"])
    signal = (msg("The labels carry signal: after {run}, {numbers}.", run=run, numbers=numbers), None)
    # A pretrained model memorises random labels about as fast as real ones (on real MNLI at 5e-5: training loss
    # 1.09 to 0.41 with the given labels, 1.09 to 0.43 with shuffled ones) and a short run at a fine-tuning rate
    # may not generalise yet, so for it nothing here separates detached labels from a hard task. A randomly
    # initialised model at its high rate learns labels that carry signal within this run (the demo kit's do).
    return judge(CHECK_ID, evidence, {
        "min_accuracy_gain": signal, "max_error_ratio": signal,
        "fit_margin": (
            msg("The labels carry structure: after {run}, {fits}; real labels are fitted faster than random ones. "
                "Held-out rows do not separate them yet ({numbers}): this run is too short for the task to "
                "generalise.", run=run, fits=fits, numbers=numbers), None),
        "random_weights": (
            msg("After {run}, the given labels were fitted no faster than shuffled ones ({fits}) and generalise no "
                "better ({numbers}).{reading}", run=run, fits=fits, numbers=numbers,
                reading=msg(" The labels behave like random ones: they no longer line up with their texts (a shuffle "
                            "or a join that reordered one column), or this run is too short for the model.")),
            msg("Check that texts and labels were shuffled or filtered together (dataset.shuffle on the whole "
                "dataset, never on one column).")),
    }, msg("Inconclusive: after {run}, the given labels neither beat the shuffled ones on held-out rows ({numbers}) "
           "nor were fitted faster ({fits}). A pretrained model memorises random labels about as fast as real ones, "
           "and a run this short on a hard task may not generalise yet, so it cannot tell detached labels from a "
           "hard task; a longer run on more rows would.", run=run, numbers=numbers, fits=fits),
        thresholds={"min_accuracy_gain": min_accuracy_gain, "max_p_value": max_p_value,
                    "max_error_ratio": max_error_ratio, "fit_margin": fit_margin})
