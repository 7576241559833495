"""Hyperparameters stage: what a string optimizer or loss silently set, a learning-rate sweep, a range test, the schedule."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from diagnostics import limits
from diagnostics.config import RunConfig
from diagnostics.glue import GlueTask
from diagnostics.model import configured_loss_value, run_forward
from diagnostics.result import CheckResult, Status, run_check
from diagnostics.training import (StepRecord, Trainer, build_optimizer, effective_rate, fresh_copy, one_train_step,
                                  split_batch)

STAGE = "hparams"
# Above this, fine-tuning a pretrained transformer usually destroys what it learned (the course uses 5e-5).
WARN_LEARNING_RATE = 1e-4


# ---------------------------------------------------------------- hparams.optimizer


def optimizer_settings(config: RunConfig) -> dict[str, Any]:
    """The optimizer Keras builds from the configuration, each setting marked as set by the user or left at its default."""
    optimizer = build_optimizer(config)
    settings = optimizer.get_config()
    defaults = type(optimizer)().get_config()
    explicit = {
        "adam": set(),
        "Adam": {"learning_rate"},
        "AdamW": {"learning_rate", "weight_decay"},
        "create_optimizer": {"learning_rate", "weight_decay_rate"},
    }[config.optimizer]
    rows = []
    for name, value in settings.items():
        if name in ("name", "is_legacy_optimizer"):
            continue
        if isinstance(value, dict):  # a schedule (create_optimizer)
            shown = f"{value.get('class_name', 'schedule')} peaking at {config.learning_rate:g}"
        elif isinstance(value, (np.floating, float)):
            shown = f"{float(value):g}"
        else:
            shown = str(value)
        rows.append({
            "setting": name,
            "value": shown,
            "source": "set" if name in explicit else ("Keras default" if defaults.get(name) == value else "library"),
        })
    rate = float(settings["learning_rate"]) if not isinstance(settings["learning_rate"], dict) else config.learning_rate
    return {"class": type(optimizer).__name__, "given_as": config.optimizer, "learning_rate": rate, "settings": rows}


def check_optimizer(figures: dict[str, Any], *, pretrained: bool = True,
                    warn_learning_rate: float = WARN_LEARNING_RATE) -> CheckResult:
    """The effective optimizer; warn when it was given as a string (every setting silently defaulted) or when
    the learning rate is too high for fine-tuning a pretrained transformer.

    Args:
        pretrained: False for a checkpoint with random weights (the demo kit), where the rate rule does not apply.
    """
    rate = figures["learning_rate"]
    defaulted = [row["setting"] for row in figures["settings"] if row["source"] == "Keras default"]
    given = "the string 'adam'" if figures["given_as"] == "adam" else figures["given_as"]
    summary = (f"{given} builds {figures['class']} with learning rate {rate:g}; "
               f"{len(defaulted)} settings are Keras defaults ({', '.join(defaulted[:4])}{', ...' if len(defaulted) > 4 else ''}).")
    figures = {**figures, "pretrained": pretrained}
    if figures["given_as"] == "adam":
        return CheckResult(
            "hparams.optimizer", STAGE, Status.WARN,
            summary + f" The string hides its learning rate: 'adam' always means {rate:g}, "
            + (f"above the {warn_learning_rate:g} a pretrained transformer tolerates." if pretrained
               else "whatever this checkpoint needs."),
            fix="model.compile(optimizer=tf_keras.optimizers.Adam(learning_rate=5e-5))  # or transformers.create_optimizer(5e-5, ...)",
            evidence=figures,
        )
    if not pretrained:
        return CheckResult("hparams.optimizer", STAGE, Status.PASS,
                           summary + " This checkpoint has random weights (the demo kit), so the 1e-4 ceiling for "
                           "pretrained transformers does not apply; the sweep shows which rates work.", evidence=figures)
    if rate > warn_learning_rate:
        return CheckResult(
            "hparams.optimizer", STAGE, Status.WARN,
            summary + f" {rate:g} is above {warn_learning_rate:g}: fine-tuning a pretrained transformer at this rate "
            "tends to wreck its weights.",
            fix="model.compile(optimizer=tf_keras.optimizers.Adam(learning_rate=5e-5))  # or transformers.create_optimizer(5e-5, ...)",
            evidence=figures,
        )
    return CheckResult("hparams.optimizer", STAGE, Status.PASS, summary, evidence=figures)


# ---------------------------------------------------------------- hparams.loss


def loss_figures(model, tf_batch, labels: np.ndarray, config: RunConfig, task: GlueTask) -> dict[str, Any]:
    """How the configured loss treats what the model outputs, measured on the batch, and what one real train step minimises."""
    forward = run_forward(model, tf_batch)
    logits = forward.logits
    figures: dict[str, Any] = {"loss": config.loss, "labels_in": config.labels_in, "regression": task.regression}
    if logits is None:
        figures["error"] = forward.error
        return figures
    sums = logits.sum(axis=1)
    figures["outputs_are_probabilities"] = bool((logits >= 0).all() and np.allclose(sums, 1.0, atol=1e-3))
    figures["configured_value"] = configured_loss_value(config.loss, logits, labels, task.regression)
    figures["cross_entropy_from_logits"] = configured_loss_value("internal", logits, labels, task.regression)
    inputs, _ = split_batch(tf_batch)
    record: StepRecord = one_train_step(fresh_copy(model, inputs), tf_batch, config)
    figures["train_step_loss"] = record.loss
    figures["train_step_error"] = record.error
    figures["variables_without_gradient"] = sum(grad is None for _, grad in record.gradients)
    return figures


def _installed_transformers() -> str:
    from importlib.metadata import version

    return version("transformers")


def check_loss(figures: dict[str, Any], *, warn_disagreement: float = 0.1) -> CheckResult:
    """Whether the loss matches what the model outputs (found by behaviour, not by the loss's name).

    Args:
        warn_disagreement: relative gap between the configured loss and cross-entropy from the logits
            above which the loss reads the logits as something else.
    """
    name, labels_in, regression = figures["loss"], figures["labels_in"], figures["regression"]
    version = _installed_transformers()
    if figures.get("error"):
        return CheckResult("hparams.loss", STAGE, Status.SKIP,
                           f"The model could not run the batch ({figures['error']}), so the loss cannot be judged.",
                           evidence=figures)
    if figures["train_step_error"]:
        return CheckResult(
            "hparams.loss", STAGE, Status.FAIL,
            f"With loss {name!r} and labels {'inside the input dict' if labels_in == 'inputs' else 'separate'}, "
            f"Transformers {version}'s train step raises {figures['train_step_error']}.",
            fix="model.compile(optimizer=optimizer)  # no loss= : the model's internal loss reads the labels itself",
            evidence=figures,
        )
    if regression and name != "internal" and name != "mse":
        return CheckResult("hparams.loss", STAGE, Status.FAIL,
                           f"{name!r} is a classification loss, but stsb is regression with one output.",
                           fix='model.compile(optimizer=optimizer)  # internal MSE; or loss="mse"', evidence=figures)
    if not regression and name == "mse":
        return CheckResult("hparams.loss", STAGE, Status.FAIL,
                           "Mean squared error on class ids treats labels as numbers to regress, not classes.",
                           fix="model.compile(optimizer=optimizer)  # the internal cross-entropy", evidence=figures)
    configured, reference = figures["configured_value"], figures["cross_entropy_from_logits"]
    gap = abs(configured - reference) / reference if reference and math.isfinite(configured) else 0.0
    figures["disagreement"] = gap
    if not figures["outputs_are_probabilities"] and gap > warn_disagreement:
        return CheckResult(
            "hparams.loss", STAGE, Status.FAIL,
            f"The model outputs logits (rows do not sum to 1), but loss {name!r} reads them as probabilities "
            f"(from_logits=False): it gives {configured:.3f} where cross-entropy from the logits gives {reference:.3f}, "
            "so training follows a distorted loss and learns slowly.",
            fix="model.compile(optimizer=optimizer, loss=tf_keras.losses.SparseCategoricalCrossentropy(from_logits=True))"
                "  # or no loss= at all",
            evidence=figures,
        )
    if name != "internal" and labels_in == "inputs":
        return CheckResult(
            "hparams.loss", STAGE, Status.WARN,
            f"Loss {name!r} matches the model's output ({configured:.3f} on the batch), but the labels sit inside the "
            f"input dict with a Keras loss: Transformers {version}'s train_step moves them out and gives them to the "
            "Keras loss, so this trains here, while other versions raised \"No gradients provided for any variable\" "
            "and the model also computes its own loss on every step.",
            fix="to_tf_dataset(columns=[...inputs...], label_cols='label')  # labels apart for a Keras loss;\n"
                "# or keep them in the dict and compile(optimizer=...) with no loss",
            evidence=figures,
        )
    if name == "internal" and labels_in == "separate":
        note = (f"labels are separate (x, y) with the model's internal loss: Transformers {version}'s train_step copies y "
                "into the input dict as labels, so the internal loss is used.")
    elif name == "internal":
        note = "the model's internal loss reads the labels from the input dict, as the course's fixed script does."
    else:
        note = "the Keras loss reads logits (from_logits=True) and the separate labels."
    return CheckResult(
        "hparams.loss", STAGE, Status.PASS,
        f"Loss {name!r} matches the model's output ({configured:.3f} on the batch, cross-entropy from logits "
        f"{reference:.3f}); {note}",
        evidence=figures,
    )


# ---------------------------------------------------------------- hparams.lr_sweep


@dataclass(frozen=True)
class SweepSettings:
    """The learning-rate sweep and range test; every value settable on the page and the command line."""

    min_rate: float = 1e-6
    max_rate: float = 1e-2
    rates: int = 7
    steps: int = 8
    range_start: float = 1e-7
    range_end: float = 1.0
    range_steps: int = 40

    def grid(self) -> list[float]:
        return np.geomspace(self.min_rate, self.max_rate, self.rates).tolist()

    def validated(self) -> "SweepSettings":
        from diagnostics.errors import InputError

        problems = []
        if not (0 < self.min_rate < self.max_rate) or not all(map(math.isfinite, (self.min_rate, self.max_rate))):
            problems.append(f"the sweep needs 0 < lowest rate < highest rate, got {self.min_rate:g} and {self.max_rate:g}")
        if not 2 <= self.rates <= 25:
            problems.append(f"the sweep needs 2 to 25 rates, got {self.rates}")
        if not 1 <= self.steps <= 500:
            problems.append(f"steps per rate must be 1 to 500, got {self.steps}")
        if not (0 < self.range_start < self.range_end) or not 5 <= self.range_steps <= 1000:
            problems.append("the range test needs 0 < start rate < end rate and 5 to 1000 steps")
        problems += limits.sweep_problems(self)
        if problems:
            raise InputError("; ".join(problems) + ".")
        return self


Progress = Callable[[float, str], None]


def _no_progress(fraction: float, text: str) -> None:
    return None


def lr_sweep(trainer: Trainer, settings: SweepSettings, progress: Progress = _no_progress) -> dict[str, Any]:
    """The same batches from the same initial weights, K steps at each rate of a log grid.

    Returns:
        learning_rates, steps, losses (one list per rate) and final_losses (mean of the last
        quarter of each curve; None when non-finite).
    """
    rates = settings.grid()
    curves = []
    for index, rate in enumerate(rates):
        progress(index / len(rates), f"Training at learning rate {rate:.1e} ({index + 1} of {len(rates)})")
        trainer.reset(rate)
        curve = trainer.run(settings.steps)
        # Once a step is non-finite every later one is too; the running mean hides that, so say it.
        first_bad = next((i for i, loss in enumerate(curve) if not math.isfinite(loss)), len(curve))
        curves.append(curve[:first_bad] + [math.nan] * (len(curve) - first_bad))
    trainer.reset(rates[0])
    progress(1.0, "Sweep done")
    tail = max(1, settings.steps // 4)
    finals = [float(np.mean(curve[-tail:])) for curve in curves]
    return {
        "learning_rates": rates,
        "steps": list(range(1, settings.steps + 1)),
        "losses": [[loss if math.isfinite(loss) else None for loss in curve] for curve in curves],
        "final_losses": [value if math.isfinite(value) else None for value in finals],
    }


def sweep_verdicts(figures: dict[str, Any], *, rise_tolerance: float = 0.05) -> dict[str, Any]:
    """Which rates diverged (non-finite, or ending more than `rise_tolerance` above where they started; a
    small rise is the noise of different batches) and which rate is best."""
    diverged = []
    for curve, final in zip(figures["losses"], figures["final_losses"]):
        first = curve[0]
        diverged.append(final is None or first is None or final > first * (1 + rise_tolerance))
    candidates = [(final, rate) for rate, final, bad in zip(figures["learning_rates"], figures["final_losses"], diverged)
                  if not bad]
    best = min(candidates)[1] if candidates else None
    return {"diverged": diverged, "best_rate": best}


def check_lr_sweep(figures: dict[str, Any], configured_rate: float, *, warn_decades: float = 1.0) -> CheckResult:
    """Warn when the configured rate is more than `warn_decades` powers of ten from the sweep's best rate."""
    verdicts = sweep_verdicts(figures)
    figures = {**figures, **verdicts, "configured_rate": configured_rate}
    flagged = [f"{rate:.0e}" for rate, bad in zip(figures["learning_rates"], verdicts["diverged"]) if bad]
    best = verdicts["best_rate"]
    if best is None:
        return CheckResult(
            "hparams.lr_sweep", STAGE, Status.FAIL,
            f"Every rate from {figures['learning_rates'][0]:.0e} to {figures['learning_rates'][-1]:.0e} diverged "
            "(non-finite or rising loss): the problem is not the rate; look at model.nan_rows and hparams.loss.",
            fix="Fix the failing Data and Model checks first, then sweep again.",
            evidence=figures,
        )
    distance = abs(math.log10(configured_rate / best))
    diverged_text = f"; diverged: {', '.join(flagged)}" if flagged else "; none diverged"
    summary = (f"After {len(figures['steps'])} steps from the same weights, {best:.1e} reaches the lowest loss "
               f"({min(v for v in figures['final_losses'] if v is not None):.3f}){diverged_text}.")
    if distance > warn_decades:
        return CheckResult(
            "hparams.lr_sweep", STAGE, Status.WARN,
            summary + f" The configured rate {configured_rate:g} is {distance:.1f} powers of ten away from it.",
            fix=f"tf_keras.optimizers.Adam(learning_rate={best:.1e})",
            evidence=figures,
        )
    return CheckResult("hparams.lr_sweep", STAGE, Status.PASS,
                       summary + f" The configured rate {configured_rate:g} is within {warn_decades:g} power of ten of it.",
                       evidence=figures)


# ---------------------------------------------------------------- hparams.lr_range_test


def lr_range_test(trainer: Trainer, settings: SweepSettings, progress: Progress = _no_progress, *,
                  stop_factor: float = 4.0) -> dict[str, Any]:
    """One run with the rate rising exponentially each step (fastai's lr_find); weights restored afterwards.

    Stops early once the loss exceeds `stop_factor` times its lowest value or turns non-finite.
    """
    rates = np.geomspace(settings.range_start, settings.range_end, settings.range_steps).tolist()
    trainer.reset(rates[0])
    tried, losses = [], []
    chunk = 10  # steps run back to back between checks for a blow-up
    for start in range(0, len(rates), chunk):
        progress(start / len(rates), f"Range test: learning rate {rates[start]:.1e}")
        block = rates[start:start + chunk]
        for rate, loss in zip(block, trainer.run(len(block), block)):
            tried.append(rate)
            losses.append(loss)
            finite = [value for value in losses if math.isfinite(value)]
            if not math.isfinite(loss) or (finite and loss > stop_factor * min(finite)):
                break
        else:
            continue
        break
    trainer.reset(settings.range_start)
    progress(1.0, "Range test done")
    return {"learning_rates": tried, "losses": [v if math.isfinite(v) else None for v in losses]}


def _finite(lrs: list[float], losses: list[float | None]) -> tuple[np.ndarray, np.ndarray]:
    pairs = [(lr, loss) for lr, loss in zip(lrs, losses) if loss is not None and math.isfinite(loss)]
    return np.array([p[0] for p in pairs]), np.array([p[1] for p in pairs])


def suggest_steepest(lrs: np.ndarray, losses: np.ndarray) -> float:
    """The rate where the loss falls fastest against log(rate)."""
    slopes = np.gradient(losses, np.log(lrs))
    return float(lrs[int(np.argmin(slopes))])


def suggest_minimum(lrs: np.ndarray, losses: np.ndarray) -> float:
    """The rate of the lowest loss, divided by 10."""
    return float(lrs[int(np.argmin(losses))] / 10)


def suggest_valley(lrs: np.ndarray, losses: np.ndarray) -> float:
    """fastai's valley: the middle of the longest stretch where the loss keeps falling."""
    count = len(losses)
    lengths = [1] * count
    start = end = 0
    for i in range(1, count):
        for j in range(i):
            if losses[i] < losses[j] and lengths[i] < lengths[j] + 1:
                lengths[i] = lengths[j] + 1
        if lengths[end] < lengths[i]:
            end, start = i, i - lengths[i]
    sections = (end - start) / 3
    return float(lrs[min(count - 1, start + int(sections) + int(sections / 2))])


SUGGESTIONS: dict[str, Callable[[np.ndarray, np.ndarray], float]] = {
    "steepest": suggest_steepest,
    "minimum / 10": suggest_minimum,
    "valley": suggest_valley,
}


def check_lr_range_test(figures: dict[str, Any], *, disagree_factor: float = 30.0, min_points: int = 5) -> CheckResult:
    """Suggest a rate from the range test, with each rule side by side; say when the rules disagree."""
    lrs, losses = _finite(figures["learning_rates"], figures["losses"])
    dropped = len(figures["losses"]) - len(losses)
    if len(losses) < min_points:
        return CheckResult("hparams.lr_range_test", STAGE, Status.WARN,
                           f"Only {len(losses)} finite points before the loss blew up, too few to suggest a rate: "
                           "start the range test lower.", fix="Lower the range test's start rate.",
                           evidence={**figures, "suggestions": {}, "dropped_points": dropped})
    suggestions = {name: rule(lrs, losses) for name, rule in SUGGESTIONS.items()}
    spread = max(suggestions.values()) / min(suggestions.values())
    chosen = suggestions["valley"]
    side_by_side = ", ".join(f"{name} {rate:.1e}" for name, rate in suggestions.items())
    evidence = {**figures, "suggestions": suggestions, "suggested": chosen, "dropped_points": dropped, "spread": spread}
    if spread > disagree_factor:
        return CheckResult(
            "hparams.lr_range_test", STAGE, Status.WARN,
            f"The rules disagree by {spread:.0f}x ({side_by_side}; {dropped} non-finite points dropped): the curve is "
            f"noisy or flat; prefer the sweep's best rate, or take valley {chosen:.1e}.",
            fix=f"tf_keras.optimizers.Adam(learning_rate={chosen:.1e})",
            evidence=evidence,
        )
    return CheckResult("hparams.lr_range_test", STAGE, Status.PASS,
                       f"Suggested rate {chosen:.1e} (valley); the rules agree within {spread:.1f}x: {side_by_side}.",
                       fix=None, evidence=evidence)


# ---------------------------------------------------------------- hparams.schedule


def schedule_figures(config: RunConfig, *, points: int = 200) -> dict[str, Any]:
    """The learning rate at each planned training step: create_optimizer's warmup and decay, or the constant rate."""
    steps = np.unique(np.linspace(0, config.train_steps, min(points, config.train_steps + 1)).astype(int)).tolist()
    if config.optimizer == "create_optimizer":
        from transformers import create_optimizer

        _, schedule = create_optimizer(config.learning_rate, num_train_steps=config.train_steps,
                                       num_warmup_steps=config.warmup_steps, weight_decay_rate=config.weight_decay)
        rates = [float(schedule(step)) for step in steps]
    else:
        constant = 0.001 if config.optimizer == "adam" else config.learning_rate
        rates = [constant] * len(steps)
    return {"optimizer": config.optimizer, "steps": steps, "learning_rates": rates,
            "train_steps": config.train_steps, "warmup_steps": config.warmup_steps}


def check_schedule(figures: dict[str, Any], *, warn_warmup_share: float = 0.5) -> CheckResult:
    """The planned schedule; warn when warmup takes most of training."""
    peak = max(figures["learning_rates"])
    if figures["optimizer"] != "create_optimizer":
        return CheckResult("hparams.schedule", STAGE, Status.PASS,
                           f"A constant rate of {peak:g} for all {figures['train_steps']} planned steps (no warmup or decay; "
                           "create_optimizer adds both).", evidence=figures)
    share = figures["warmup_steps"] / figures["train_steps"]
    summary = (f"create_optimizer warms up over {figures['warmup_steps']} steps to {peak:.1e}, then decays linearly to "
               f"{figures['learning_rates'][-1]:.1e} at step {figures['train_steps']}.")
    if share > warn_warmup_share:
        return CheckResult("hparams.schedule", STAGE, Status.WARN,
                           summary + f" Warmup is {share:.0%} of training, so most steps run below the peak rate.",
                           fix=f"create_optimizer(..., num_warmup_steps={max(1, figures['train_steps'] // 10)})",
                           evidence=figures)
    return CheckResult("hparams.schedule", STAGE, Status.PASS, summary, evidence=figures)


# ---------------------------------------------------------------- the stage


SETUP_CHECKS = ("hparams.optimizer", "hparams.loss", "hparams.schedule")
TRAINING_CHECKS = ("hparams.lr_sweep", "hparams.lr_range_test")


def run_hparams_checks(config: RunConfig, model, batches: list, labels: np.ndarray, settings: SweepSettings,
                       progress: Progress = _no_progress, *, parts: tuple[str, ...] = ("setup", "training")
                       ) -> list[CheckResult]:
    """The Hyperparameters-stage checks; training happens on one copy of the (never modified) model.

    Args:
        parts: "setup" (optimizer, loss, schedule: seconds) and/or "training" (sweep and range test).
    """
    task = config.glue_task
    results = []
    if "setup" in parts:
        results += [
            run_check("hparams.optimizer", STAGE, lambda: check_optimizer(
                optimizer_settings(config), pretrained=not getattr(model.config, "demo_kit", False))),
            run_check("hparams.loss", STAGE, lambda: check_loss(loss_figures(model, batches[0], labels, config, task))),
            run_check("hparams.schedule", STAGE, lambda: check_schedule(schedule_figures(config))),
        ]
    if "training" in parts:
        holder: list[Trainer] = []

        def trainer() -> Trainer:
            if not holder:
                progress(0.0, "Copying the model and tracing its train step (once for every rate)")
                holder.append(Trainer(model, batches, config))
            return holder[0]

        results.append(run_check("hparams.lr_sweep", STAGE, lambda: check_lr_sweep(
            lr_sweep(trainer(), settings, lambda f, t: progress(0.7 * f, t)), effective_rate(config))))
        results.append(run_check("hparams.lr_range_test", STAGE, lambda: check_lr_range_test(
            lr_range_test(trainer(), settings, lambda f, t: progress(0.7 + 0.3 * f, t)))))
        progress(1.0, "Done")
    return results
