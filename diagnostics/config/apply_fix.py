"""A cause's fix as settings of the app's own pipeline: what the sidebar's "Apply the fix" sets (the same change the
cause's fix writes as code), or None where no setting is the fix (the data's own labels, a script's train step).

Each change undoes what the cause measured in this configuration, in the words of `RunConfig`: the task's own count
of labels for a head too small, the model's internal loss with the labels in the input dict for a loss that does not
fit, an Adam object for the string "adam", the rate the sweep measured for a rate too high, the model's inputs for
columns that leave one out, a split with labels for a test split, and the labels as the data gives them. A rate is
set as the fix writes it (`fixes.written`), so what is applied is what the card shows.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Iterable

from diagnostics.config.run import RunConfig
from diagnostics.core.fixes import RateFix, written


def config_change(owner: str, config: RunConfig, results: Iterable = ()) -> dict[str, Any] | None:
    """The `RunConfig` fields that fix the cause `owner` names on `config` (read from the owner's result among
    `results` where its measurement gives the value: the sweep's rate); None when no setting fixes it or the
    configuration already holds the change."""
    owned = next((result for result in results if result.id == owner), None)
    evidence = (owned.evidence if owned is not None else {}) or {}
    fix = getattr(owned, "fix", None)
    rate = fix.rate if isinstance(fix, RateFix) else None  # the rate the owner's card writes
    change: dict[str, Any] | None = None
    if owner == "model.config":
        change = {"num_labels": None}
    elif owner == "hparams.loss":
        change = {"loss": "internal", "labels_in": "inputs"}
    elif owner == "hparams.optimizer" and config.optimizer == "adam":
        change = {"optimizer": "Adam", **({"learning_rate": written(rate)} if rate else {})}
    elif owner == "hparams.lr_sweep" and evidence.get("best_rate"):
        change = {"learning_rate": written(float(evidence["best_rate"]))}
        if config.optimizer == "adam":
            change["optimizer"] = "Adam"
    elif owner == "data.columns":
        change = {"columns": None}
    elif owner == "data.label_range" and config.split.startswith("test"):
        change = {"split": "train" if "train" in config.glue_task.splits else config.glue_task.splits[0]}
    elif owner == "data.learnability" and config.shuffle_labels:
        change = {"shuffle_labels": False}
    if change is None or all(getattr(config, name) == value for name, value in change.items()):
        return None
    return change


def fixed(config: RunConfig, change: dict[str, Any]) -> RunConfig:
    """The configuration with a cause's change in, validated as the sidebar's would be."""
    return replace(config, **change).validated()


def said(change: dict[str, Any], after: RunConfig | None = None) -> str:
    """The change as the settings it sets, e.g. "num_labels=None, loss='internal'" (code: never translated); with
    the fixed configuration `after`, a num_labels left to the task is said as the count it gives ("num_labels=3", as
    the cause's fix writes it)."""
    def value(name: str, set_to: Any) -> Any:
        return after.effective_num_labels if name == "num_labels" and set_to is None and after is not None else set_to

    return ", ".join(f"{name}={value(name, set_to)!r}" for name, set_to in change.items())
