"""Data stage, trained: do the labels carry signal? A short run on the given labels against the same run on
labels shuffled at random, judged on held-out rows of the split."""

from __future__ import annotations

from typing import Any

import numpy as np

from diagnostics.config import RunConfig
from diagnostics.data import LABEL, build_batch
from diagnostics.result import CheckResult, Status
from diagnostics.training import Trainer, split_batch

CHECK_ID = "data.learnability"
STAGE = "data"


def train_batches(split, tokenizer, config: RunConfig, rows: list[int]) -> list:
    return [build_batch(split, tokenizer, config, rows[i:i + config.batch_size]).tf_batch
            for i in range(0, len(rows), config.batch_size)]


def held_out_score(trainer: Trainer, batches: list, held, config: RunConfig, steps: int, rate: float
                   ) -> dict[str, float]:
    """Train the copy from its start for `steps` steps on `batches`; score it on the `held` batch (accuracy, or MSE)."""
    trainer.use(batches)
    trainer.reset(rate)
    losses = trainer.run(steps)
    inputs, _ = split_batch(held.tf_batch)
    logits = np.asarray(trainer.model(inputs, training=False).logits)
    labels = np.asarray(held.rows[LABEL])
    if config.glue_task.regression:
        score = float(np.mean((logits[:, 0] - labels.astype(float)) ** 2))
    else:
        score = float(np.mean(logits.argmax(axis=1) == labels))
    return {"score": score, "final_train_loss": float(losses[-1])}


def learnability_figures(model, tokenizer, config: RunConfig, split, *, rate: float, train_size: int = 96,
                         held_size: int = 32, epochs: int = 6) -> dict[str, Any]:
    """Held-out scores after the same short run on the given labels and on a random permutation of them."""
    count = len(split)
    order = np.random.default_rng(config.seed).permutation(count)
    held_size = min(held_size, max(1, count // 4))
    held, train = order[:held_size].tolist(), order[held_size:held_size + train_size].tolist()
    steps = epochs * -(-len(train) // config.batch_size)
    labels = split.data.column(LABEL).to_numpy()
    control_split = split.remove_columns(LABEL).add_column(
        LABEL, np.random.default_rng(config.seed + 1).permutation(labels))
    given_batches = train_batches(split, tokenizer, config, train)
    trainer = Trainer(model, given_batches, config)  # one copy for both runs
    given = held_out_score(trainer, given_batches, build_batch(split, tokenizer, config, held), config, steps, rate)
    control = held_out_score(trainer, train_batches(control_split, tokenizer, config, train),
                             build_batch(control_split, tokenizer, config, held), config, steps, rate)
    held_labels = labels[held]
    if config.glue_task.regression:
        chance = float(np.var(held_labels.astype(float)))
    else:
        chance = float(np.bincount(held_labels[held_labels >= 0].astype(int)).max() / max(1, (held_labels >= 0).sum())) \
            if (held_labels >= 0).any() else 0.0
    return {"given": given, "shuffled": control, "chance": chance, "train_rows": len(train), "held_rows": len(held),
            "steps": steps, "learning_rate": rate, "regression": config.glue_task.regression}


def check_learnability(figures: dict[str, Any], *, min_accuracy_gain: float = 0.1, max_error_ratio: float = 0.8
                       ) -> CheckResult:
    """Warn when the given labels are learned no better than shuffled ones (on held-out rows).

    Args:
        min_accuracy_gain: how much held-out accuracy the given labels must add over both the shuffled
            control and the majority-label rate.
        max_error_ratio: regression: the given labels' held-out error must be below this share of the control's.
    """
    given, control = figures["given"]["score"], figures["shuffled"]["score"]
    run = (f"{figures['steps']} steps on {figures['train_rows']} rows at rate {figures['learning_rate']:g}, "
           f"scored on {figures['held_rows']} held-out rows")
    if figures["regression"]:
        learns = given < max_error_ratio * control
        numbers = f"held-out error {given:.3f} with the given labels, {control:.3f} with shuffled ones"
    else:
        learns = given >= control + min_accuracy_gain and given >= figures["chance"] + min_accuracy_gain
        numbers = (f"held-out accuracy {given:.0%} with the given labels, {control:.0%} with shuffled ones "
                   f"(majority label {figures['chance']:.0%})")
    if learns:
        return CheckResult(CHECK_ID, STAGE, Status.PASS,
                           f"The labels carry signal: after {run}, {numbers}.", evidence=figures)
    return CheckResult(
        CHECK_ID, STAGE, Status.WARN,
        f"The labels are learned no better than random ones: after {run}, {numbers}. Either the labels no longer "
        "line up with their texts (a shuffle or a join that reordered one column), or this run is too short for "
        "the model.",
        fix="Check that texts and labels were shuffled or filtered together (dataset.shuffle on the whole "
            "dataset, never on one column); then rerun with more steps.",
        evidence=figures,
    )
