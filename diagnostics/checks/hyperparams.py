"""Hyperparameters stage: what a string optimizer or loss silently set, a learning-rate sweep, a range test, the schedule."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from diagnostics.config import limits
from diagnostics.i18n import N_, Text, joined, msg
from diagnostics.config.run import RunConfig, usual_rate
from diagnostics.core.fixes import RateFix, keras_name
from diagnostics.config.tasks import GlueTask
from diagnostics.keras.keras_model import head_of
from diagnostics.keras.measurement import Forward, configured_loss_value
from diagnostics.core.registry import WARN_DRIFT, threshold
from diagnostics.core.result import CheckResult, judge, run_check
from diagnostics.keras.training import (SharedCopy, StepRecord, Trainer, build_optimizer, effective_rate,
                                  head_only, held_out_figures, labels_in_range, round_down_rate, smoothed,
                                  trains_pretrained, weight_drift)

STAGE = "hparams"


# ---------------------------------------------------------------- hparams.optimizer


def optimizer_settings(config: RunConfig) -> dict[str, Any]:
    """The optimizer Keras builds from the configuration (the user's own, when the pipeline is their code), each setting
    marked as set or left at its default."""
    from diagnostics.keras.optimizers import optimizer_settings_of

    optimizer = config.user_optimizer if config.user_optimizer is not None else build_optimizer(config)
    settings = optimizer_settings_of(optimizer)
    defaults = optimizer_settings_of(type(optimizer)())
    # A configuration names what it sets; the user's own optimizer shows it by differing from the class's defaults.
    explicit = {name for name, value in settings.items() if defaults.get(name, object()) != value} \
        if config.user_optimizer is not None else {
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
            shown = msg("{schedule} peaking at {rate:g}", schedule=value.get("class_name", "schedule"),
                        rate=config.learning_rate)
        elif isinstance(value, (np.floating, float)):
            shown = f"{float(value):g}"
        else:
            shown = str(value)
        rows.append({
            "setting": name,
            "value": shown,
            "source": msg("set") if name in explicit else (
                msg("Keras default") if defaults.get(name) == value else msg("library")),
        })
    rate = float(settings["learning_rate"]) if not isinstance(settings["learning_rate"], dict) else config.learning_rate
    return {"class": type(optimizer).__name__, "given_as": config.optimizer, "learning_rate": rate, "settings": rows}


def optimizer_summary(figures: dict[str, Any]) -> Text:
    """What the optimizer is: its class, rate, the settings chosen and those left at Keras's defaults."""
    defaulted = [row["setting"] for row in figures["settings"] if row["source"] == "Keras default"]
    chosen = [f"{row['setting']}={row['value']}" for row in figures["settings"]
              if row["source"] == "set" and row["setting"] != "learning_rate"]
    given = msg("The string 'adam'") if figures["given_as"] == "adam" else figures["given_as"]
    return msg("{given} builds {optimizer} with learning rate {rate:g}{chosen}; {count} settings are Keras defaults "
               "({settings}).", given=given, optimizer=figures["class"], rate=figures["learning_rate"],
               count=len(defaulted), chosen=msg(", {settings}", settings=", ".join(chosen)) if chosen else "",
               settings=", ".join(defaulted[:4]) + (", ..." if len(defaulted) > 4 else ""))


def check_optimizer(figures: dict[str, Any], *, pretrained: bool = True, frozen_encoder: bool = False,
                    warn_learning_rate: float = threshold("hparams.optimizer", "warn_learning_rate")) -> CheckResult:
    """The effective optimizer; warn when it was given as a string (every setting silently defaulted) or when
    the learning rate is too high for fine-tuning a pretrained transformer.

    Args:
        pretrained: False for a checkpoint with random weights (the demo kit), where the rate rule does not apply.
        frozen_encoder: the pretrained encoder is frozen (`training.head_only`): the fit trains a new head, and the
            rate rule for pretrained weights does not apply either.
    """
    rate = figures["learning_rate"]
    summary = optimizer_summary(figures)
    usual = usual_rate(pretrained and not frozen_encoder, frozen_encoder)
    figures = {**figures, "pretrained": pretrained and not frozen_encoder, "head_only": frozen_encoder,
               "string_adam": figures["given_as"] == "adam"}
    # What the rules below read into the rate is a rule of thumb: hparams.lr_sweep measures the rate, and once it has,
    # this finding points there (`registry.CAUSES`) and is said without its reading.
    return judge("hparams.optimizer", figures, {
        "string_adam": (
            msg("{summary} The string hides its learning rate: 'adam' always means {rate:g}{reading}.",
                summary=summary, rate=rate,
                reading=msg(", above the {limit:g} a pretrained transformer tolerates", limit=warn_learning_rate)
                if figures["pretrained"] else msg(", whatever this fit needs")),
            RateFix(usual)),
        "head_only": (
            msg("{summary} This fit trains only the head (the pretrained encoder is frozen), so the {limit:g} ceiling "
                "for fine-tuning pretrained weights does not apply; the sweep measures the rate.", summary=summary,
                limit=warn_learning_rate), None),
        "random_weights": (
            msg("{summary} This checkpoint has random weights (the demo kit), so the 1e-4 ceiling for pretrained "
                "transformers does not apply; the sweep shows which rates work.", summary=summary), None),
        "warn_learning_rate": (
            msg("{summary} {rate:g} is above {limit:g}{reading}.", summary=summary, rate=rate,
                limit=warn_learning_rate,
                reading=msg(": fine-tuning a pretrained transformer at this rate tends to wreck its weights")),
            RateFix(usual)),
    }, summary, thresholds={"warn_learning_rate": warn_learning_rate})


# ---------------------------------------------------------------- hparams.loss


def loss_figures(model, tf_batch, labels: np.ndarray, config: RunConfig, task: GlueTask, *, forward: Forward,
                 step: Callable[[], StepRecord]) -> dict[str, Any]:
    """How the configured loss treats what the model outputs, measured on the batch, and what one real train step
    minimises.

    Args:
        forward: the batch's forward pass, which ran (the runner's "forward" need: model.forward owns one that
            raises).
        step: the run's one train step with its labels drawn in range (`RunContext.in_range_step`).
    """
    logits, head = forward.logits, head_of(model)
    figures: dict[str, Any] = {"loss": config.loss, "labels_in": config.labels_in, "regression": task.regression,
                               "head": None if head.transformers else head.describe()}
    raw = forward.raw if forward.raw is not None else logits
    raw = raw.reshape(len(raw), -1)
    sums = raw.sum(axis=1)
    figures["outputs_are_probabilities"] = bool(head.probabilities or (
        (raw >= 0).all() and (np.allclose(sums, 1.0, atol=1e-3) if raw.shape[1] > 1 else (raw <= 1).all())))
    figures["configured_value"] = configured_loss_value(config.loss, logits, labels, task.regression, head)
    figures["cross_entropy_from_logits"] = configured_loss_value("internal", logits, labels, task.regression)
    if not task.regression and logits.shape[1] > 1:
        # A fresh head's logits sit near zero, where a loss that reads them as probabilities can happen to agree
        # with cross-entropy. Logits of 0.5 on each row's label and -1 elsewhere tell the two apart whatever the
        # head's start: cross-entropy from logits gives a modest loss, a probability reading a near-zero one.
        probe = np.where(np.arange(logits.shape[1])[None, :] == np.clip(labels.astype(int), 0, logits.shape[1] - 1)[:, None],
                         0.5, -1.0)
        figures["probe_configured_value"] = configured_loss_value(config.loss, probe, labels, task.regression, head)
        figures["probe_cross_entropy"] = configured_loss_value("internal", probe, labels, task.regression)
    if not task.regression:
        num_labels = head_of(model).num_labels
        _, figures["labels_drawn_in_range"] = labels_in_range(tf_batch, num_labels, config.seed)
        # Who owns those labels: a head narrower than the task's classes (model.config), else the data.
        figures["labels_owner"] = "model.config" if task.known and num_labels < task.num_labels and bool(
            ((labels >= num_labels) & (labels < task.num_labels)).any()) and not bool(
            ((labels < 0) | (labels >= task.num_labels)).any()) else "data.label_range"
    record = step()
    figures["train_step_loss"] = record.loss
    figures["train_step_error"] = record.error
    figures["variables_without_gradient"] = sum(grad is None for _, grad in record.gradients)
    return figures


def _installed_transformers() -> str:
    from importlib.metadata import version

    return version("transformers")


def check_loss(figures: dict[str, Any], *,
               warn_disagreement: float = threshold("hparams.loss", "warn_disagreement")) -> CheckResult:
    """Whether the loss matches what the model outputs (found by behaviour, not by the loss's name), judged on
    labels in range so that out-of-range labels (another check's finding) never hide a wrong loss.

    Args:
        warn_disagreement: relative gap between the configured loss and cross-entropy from the logits
            above which the loss reads the logits as something else.
    """
    result = _judge_loss(figures, warn_disagreement=warn_disagreement)
    drawn = figures.get("labels_drawn_in_range") or 0
    if drawn:
        result.summary = msg("{summary} (Judged with the batch's {count} labels the head has no output for replaced "
                             "by labels it has: those are {owner}'s finding.)", summary=result.summary, count=drawn,
                             owner=figures.get("labels_owner") or "data.label_range")
    return result


def _loss_class(name: str) -> str:
    """The Keras loss class of a configured loss ("categorical_crossentropy" -> CategoricalCrossentropy)."""
    base = name.split("(")[0]
    return {"categorical_crossentropy": "CategoricalCrossentropy", "binary_crossentropy": "BinaryCrossentropy"}.get(
        base, base if base[:1].isupper() else "SparseCategoricalCrossentropy")


def _compile_with(name: str, *, from_logits: bool, alternative: str | None = None):
    """The fix that compiles with the same Keras loss class and the given from_logits, in the code's own Keras name;
    `alternative` (a template with {code}, marked with N_) adds what else would do."""
    code = f"model.compile(optimizer=optimizer, loss={keras_name()}.losses.{_loss_class(name)}(from_logits={from_logits}))"
    return code if alternative is None else msg(alternative, code=code)


def _judge_loss(figures: dict[str, Any], *, warn_disagreement: float) -> CheckResult:
    name, labels_in, regression = figures["loss"], figures["labels_in"], figures["regression"]
    version = _installed_transformers()
    configured, reference = figures["configured_value"], figures["cross_entropy_from_logits"]

    def gap_of(value, against):
        return abs(value - against) / against if against and value is not None and math.isfinite(value) else 0.0

    figures["disagreement"] = max(gap_of(configured, reference),
                                  gap_of(figures.get("probe_configured_value"), figures.get("probe_cross_entropy")))
    figures["classification_loss"] = regression and name not in ("internal", "mse")
    figures["regression_loss"] = not regression and name == "mse"
    figures["keras_loss_on_input_labels"] = name != "internal" and labels_in == "inputs"
    figures["reads_probabilities_as_logits"] = bool(figures["outputs_are_probabilities"] and "from_logits=True" in name
                                                    and figures["disagreement"] > warn_disagreement)
    def shown() -> Text:  # how the configured loss misreads the logits: written only when it does
        if gap_of(configured, reference) > warn_disagreement:
            return msg("it gives {configured:.3f} where cross-entropy from the logits gives {reference:.3f}",
                       configured=configured, reference=reference)
        return msg("on this batch it gives {configured:.3f}, near cross-entropy from the logits ({reference:.3f}) "
                   "only because a fresh head's logits sit near zero; on logits of 0.5 for each row's label and -1 "
                   "elsewhere it gives {probe:.3g} where cross-entropy gives {probe_reference:.3f}",
                   configured=configured, reference=reference, probe=figures.get("probe_configured_value"),
                   probe_reference=figures.get("probe_cross_entropy"))

    if name == "internal" and labels_in == "separate":
        note = msg("labels are separate (x, y) with the model's internal loss: Transformers {version}'s train_step "
                   "copies y into the input dict as labels, so the internal loss is used.", version=version)
    elif name == "internal":
        note = msg("the model's internal loss reads the labels from the input dict, as the course's fixed script does.")
    elif figures.get("head") and figures.get("outputs_are_probabilities"):
        note = msg("the Keras loss reads the probabilities of the model's {head} output and the separate labels.",
                   head=figures["head"])
    else:
        note = msg("the Keras loss reads logits (from_logits=True) and the separate labels.")
    return judge("hparams.loss", figures, {
        "step_raises": (
            msg("With loss {loss} and labels {placement}, Transformers {version}'s train step raises {error}.",
                loss=repr(name), placement=msg("inside the input dict") if labels_in == "inputs" else msg("separate"),
                version=version, error=figures["train_step_error"]),
            msg("model.compile(optimizer=optimizer)  # no loss= : the model's internal loss reads the labels itself")),
        "classification_loss": (
            msg("{loss} is a classification loss, but stsb is regression with one output.", loss=repr(name)),
            msg('model.compile(optimizer=optimizer)  # internal MSE; or loss="mse"')),
        "regression_loss": (
            msg("Mean squared error on class ids treats labels as numbers to regress, not classes."),
            msg("model.compile(optimizer=optimizer)  # the internal cross-entropy")),
        "warn_disagreement": lambda: (
            msg("The model outputs logits (rows do not sum to 1), but loss {loss} reads them as probabilities "
                "(from_logits=False): {shown}, so training follows a distorted loss and learns slowly.",
                loss=repr(name), shown=shown()),
            _compile_with(name, from_logits=True, alternative=N_("{code}  # or no loss= at all")
                          if figures.get("head") is None else None)),
        "probabilities_as_logits": lambda: (
            msg("The model outputs probabilities ({head}: its final activation), but loss {loss} reads them as "
                "logits (from_logits=True): {shown}, so training follows a distorted loss and learns slowly.",
                head=figures.get("head") or msg("rows sum to 1"), loss=repr(name), shown=shown()),
            _compile_with(name, from_logits=False,
                          alternative=N_("{code}  # or drop the activation and keep from_logits=True"))),
        "keras_loss_on_input_labels": lambda: (
            msg("Loss {loss} matches the model's output ({configured:.3f} on the batch), but the labels sit inside the "
                "input dict with a Keras loss: Transformers {version}'s train_step moves them out and gives them to "
                "the Keras loss, so this trains here, while other versions raised \"No gradients provided for any "
                "variable\" and the model also computes its own loss on every step.", loss=repr(name),
                configured=configured, version=version),
            msg("to_tf_dataset(columns=[...inputs...], label_cols='label')  # labels apart for a Keras loss;\n"
                "# or keep them in the dict and compile(optimizer=...) with no loss")),
    }, lambda: msg("Loss {loss} matches the model's output ({configured:.3f} on the batch, cross-entropy from logits "
                   "{reference:.3f}); {note}", loss=repr(name), configured=configured, reference=reference, note=note),
        thresholds={"warn_disagreement": warn_disagreement})


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
        from diagnostics.core.errors import InputError

        problems = []
        if not (0 < self.min_rate < self.max_rate) or not all(map(math.isfinite, (self.min_rate, self.max_rate))):
            problems.append(msg("the sweep needs 0 < lowest rate < highest rate, got {low:g} and {high:g}",
                                low=self.min_rate, high=self.max_rate))
        if not 2 <= self.rates <= 25:
            problems.append(msg("the sweep needs 2 to 25 rates, got {rates}", rates=self.rates))
        if not 1 <= self.steps <= 500:
            problems.append(msg("steps per rate must be 1 to 500, got {steps}", steps=self.steps))
        if not (0 < self.range_start < self.range_end) or not 5 <= self.range_steps <= 1000:
            problems.append(msg("the range test needs 0 < start rate < end rate and 5 to 1000 steps"))
        problems += limits.sweep_problems(self)
        if problems:
            raise InputError(msg("{problems}.", problems=joined(problems, "; ")))
        return self


Progress = Callable[[float, str], None]


def _no_progress(fraction: float, text: str) -> None:
    return None


def lr_sweep(trainer: Trainer, settings: SweepSettings, held, *, configured_rate: float | None = None,
             regression: bool = False, progress: Progress = _no_progress) -> dict[str, Any]:
    """The same batches from the same initial weights, K steps at each rate of a log grid (and at the
    configured rate), each scored on held-out rows and by how far it moved the pretrained weights.

    A short run from the same start favours high rates (the loss on the batches trained on falls fastest at
    the highest rate that does not blow up), so a rate is judged on rows it did not train on, and by the
    drift of the pretrained kernels per step, which predicts what a long run at that rate does to them.

    Args:
        held: a batch of rows the sweep never trains on.
        configured_rate: added to the grid, so the rate under test is measured, not interpolated.

    Returns:
        learning_rates, steps, losses (one list per rate, None once non-finite), smoothed (the same,
        smoothed), held_out_start and held_out (loss, accuracy, commonest_share per rate), and
        drift_per_step (relative change of the pretrained kernels per step, per rate).
    """
    rates = sorted(set(settings.grid() + ([configured_rate] if configured_rate else [])))
    trainer.reset(rates[0])
    start = held_out_figures(trainer.model, held, regression)
    curves, scores, drifts = [], [], []
    for index, rate in enumerate(rates):
        progress(index / len(rates), msg("Training at learning rate {rate:.1e} ({number} of {count})",
                                                 rate=rate, number=index + 1, count=len(rates)))
        trainer.reset(rate)
        curve = trainer.run(settings.steps)
        # Once a step is non-finite every later one is too; the running mean hides that, so say it.
        first_bad = next((i for i, loss in enumerate(curve) if not math.isfinite(loss)), len(curve))
        curves.append(curve[:first_bad] + [math.nan] * (len(curve) - first_bad))
        scores.append(held_out_figures(trainer.model, held, regression))
        drifts.append(weight_drift(trainer.source, trainer.model) / settings.steps)
    trainer.reset(rates[0])
    progress(1.0, msg("Sweep done"))
    return {
        "learning_rates": rates,
        "configured_rate": configured_rate,
        "steps": list(range(1, settings.steps + 1)),
        "losses": [[_finite_or_none(loss) for loss in curve] for curve in curves],
        "smoothed": [[_finite_or_none(loss) for loss in smoothed(curve, SWEEP_SMOOTHING)] for curve in curves],
        "held_out_rows": start["rows"],
        "held_out_start": start,
        "held_out": scores,
        "drift_per_step": [d if math.isfinite(d) else None for d in drifts],
    }


# A sweep curve has a few steps, so its smoothing forgets faster than a range test's (beta 0.98 over ~100 steps).
SWEEP_SMOOTHING = 0.6


def _finite_or_none(value: float) -> float | None:
    return float(value) if value is not None and math.isfinite(value) else None


def sweep_verdicts(figures: dict[str, Any], *, pretrained: bool, head_only: bool = False,
                   blowup_factor: float = threshold("hparams.lr_sweep", "blowup_factor"),
                   held_out_rise: float = threshold("hparams.lr_sweep", "held_out_rise"),
                   warn_drift: float = threshold("hparams.lr_sweep", "warn_drift"),
                   min_held_out_gain: float = threshold("hparams.lr_sweep", "min_held_out_gain")) -> dict[str, Any]:
    """Why each rate is bad (empty when it is not), the recommended rate and the highest rate pretrained
    weights tolerate.

    A rate is bad when its loss turned non-finite or blew up (smoothed, beyond `blowup_factor` times where it
    started), when its held-out loss rose more than `held_out_rise` above the untrained model's, or (on a
    pretrained checkpoint) when each step moved the pretrained kernels by more than `warn_drift` of their
    size. The recommended rate is the good rate with the lowest held-out loss; when no good rate lowered the
    held-out loss by `min_held_out_gain` of its start, the one with the lowest smoothed training loss.
    """
    start = figures["held_out_start"]["loss"]
    reasons, broke = [], []
    for curve, score, drift in zip(figures["smoothed"], figures["held_out"], figures["drift_per_step"]):
        why = []
        broke.append(any(value is None for value in curve) or score["loss"] is None
                     or curve[-1] > blowup_factor * curve[0])
        if any(value is None for value in curve) or score["loss"] is None:
            why.append(msg("loss turned NaN"))
        elif curve[-1] > blowup_factor * curve[0]:
            why.append(msg("loss blew up ({first:.3f} to {last:.3f})", first=curve[0], last=curve[-1]))
        elif start is not None and score["loss"] > start * (1 + held_out_rise):
            why.append(msg("held-out loss rose ({first:.3f} to {last:.3f})", first=start, last=score["loss"]))
        if pretrained and drift is not None and drift > warn_drift:
            why.append(msg("moves pretrained weights {drift:.1e} of their size a step", drift=drift))
        reasons.append(why)
    good = [(score["loss"], curve[-1], rate, curve[0])
            for rate, score, curve, why in zip(figures["learning_rates"], figures["held_out"], figures["smoothed"], reasons)
            if not why]
    # After a few steps the held-out loss may not have moved at all (random weights learn nothing general that
    # soon); then its differences are noise, and the loss on the batches trained on ranks the good rates instead,
    # among those it fell for. When it fell for none either, the rates cannot be told apart in these steps: the good
    # rate nearest the checkpoint's usual one (a rate real fine-tuning calls good) stands for them.
    separates = bool(good) and start is not None and start - min(good)[0] >= min_held_out_gain * start
    falling = [entry for entry in good if entry[3] - entry[1] >= min_held_out_gain * entry[3]]
    usual = usual_rate(pretrained, head_only)
    if separates:
        ranked, ranked_by = sorted(good), "held-out loss"
    elif falling:
        ranked, ranked_by = sorted(falling, key=lambda entry: entry[1]), "training loss"
    else:
        ranked = sorted(good, key=lambda entry: abs(math.log(entry[2] / usual)))
        ranked_by = "usual rate"
    ratios = [drift / rate for rate, drift, broken in zip(figures["learning_rates"], figures["drift_per_step"], broke)
              if drift and not broken]
    return {
        "reasons": reasons,
        "diverged": [bool(why) for why in reasons],
        "broke": broke,
        "best_rate": ranked[0][2] if ranked else None,
        "ranked_by": ranked_by,
        "usual_rate": usual,
        "max_safe_rate": float(warn_drift / np.median(ratios)) if pretrained and ratios else None,
    }


def check_lr_sweep(figures: dict[str, Any], configured_rate: float, *, pretrained: bool = True, head_only: bool = False,
                   warn_decades: float = threshold("hparams.lr_sweep", "warn_decades"),
                   fail_drift: float = threshold("hparams.lr_sweep", "fail_drift"),
                   thin_held_out_rows: int = threshold("hparams.lr_sweep", "thin_held_out_rows")) -> CheckResult:
    """Judge the configured rate by what it did in the sweep; name the recommended rate as the fix.

    Fails when the configured rate diverged or moves pretrained weights by more than `fail_drift` a step;
    warns when it is merely too high, or more than `warn_decades` powers of ten below the recommended rate.
    """
    verdicts = sweep_verdicts(figures, pretrained=pretrained, head_only=head_only)
    rates, best = figures["learning_rates"], verdicts["best_rate"]
    index = min(range(len(rates)), key=lambda i: abs(math.log(rates[i] / configured_rate)))  # the configured rate's
    why, drift = verdicts["reasons"][index], figures["drift_per_step"][index]
    figures = {**figures, **verdicts, "configured_rate": configured_rate, "pretrained": pretrained,
               "no_good_rate": best is None, "configured_too_high": bool(why),
               "configured_broke": verdicts["broke"][index], "configured_drift": drift,
               "decades_below": math.log10(best / configured_rate) if best else None}
    if best is None:
        return judge("hparams.lr_sweep", figures, {"no_good_rate": (
            msg("Every rate from {low:.0e} to {high:.0e} diverged, worsened the held-out loss or overwrote the "
                "pretrained weights: the problem is not the rate; look at model.nan_rows and hparams.loss.",
                low=rates[0], high=rates[-1]),
            msg("Fix the failing Data and Model checks first, then sweep again."))}, "")
    flagged = [f"{rate:.0e}" for rate, bad in zip(rates, verdicts["diverged"]) if bad]
    best_score, start = figures["held_out"][rates.index(best)], figures["held_out_start"]
    thin = (msg(" The held-out rows are few ({rows}), so held-out differences are rough.",
                rows=figures["held_out_rows"]) if figures["held_out_rows"] < thin_held_out_rows else "")
    if verdicts["ranked_by"] == "usual rate":
        summary = msg("After {steps} steps from the same weights no rate lowered the held-out or the training loss by "
                      "1% of its start, too little to rank them: the recommendation is {best:.1e}, the rate nearest "
                      "this checkpoint's usual {usual:g} that neither diverges nor overwrites pretrained weights; "
                      "flagged: {flagged}.", steps=len(figures["steps"]), best=best, usual=verdicts["usual_rate"],
                      flagged=", ".join(flagged) or msg("none"))
    else:
        basis = msg("the lowest held-out loss ({best:.3f}, from {start:.3f} untrained)", best=best_score["loss"],
                    start=start["loss"]) if verdicts["ranked_by"] == "held-out loss" else \
            msg("the lowest training loss; the held-out loss moved less than 1% of its start ({start:.3f}) at every "
                "rate, too little to rank them, so this rests on the rows trained on", start=start["loss"])
        summary = msg("After {steps} steps from the same weights, {best:.1e} gives {basis}, among rates that neither "
                      "diverge nor overwrite pretrained weights; flagged: {flagged}.", steps=len(figures["steps"]),
                      best=best, basis=basis, flagged=", ".join(flagged) or msg("none"))
    fix = RateFix(best)
    consequence = (msg(" At that drift a few hundred steps overwrite what pretraining learned: real fine-tuning at "
                       "such rates ends at or near chance.") if pretrained and drift and drift > WARN_DRIFT else "")
    too_high = (msg("The configured rate {rate:g} is too high: {why}.{consequence} {summary}{thin}",
                    rate=configured_rate, why=joined(why, "; "), consequence=consequence, summary=summary, thin=thin),
                fix)
    return judge("hparams.lr_sweep", figures, {
        "broke": too_high, "fail_drift": too_high, "too_high": too_high,
        "warn_decades": (
            msg("The configured rate {rate:g} is more than {decades:g} power of ten below the recommended {best:.1e}, "
                "so training will crawl. {summary}{thin}", rate=configured_rate, decades=warn_decades, best=best,
                summary=summary, thin=thin), fix),
    }, msg("The configured rate {rate:g} neither diverges nor overwrites pretrained weights{drift}. {summary}{thin}",
           rate=configured_rate, drift=msg(" ({drift:.1e} of their size a step)", drift=drift)
           if pretrained and drift else "", summary=summary, thin=thin),
        thresholds={"warn_decades": warn_decades, "fail_drift": fail_drift})


# ---------------------------------------------------------------- hparams.lr_range_test


RANGE_SMOOTHING = 0.98


def lr_range_test(trainer: Trainer, settings: SweepSettings, progress: Progress = _no_progress, *,
                  stop_factor: float = 4.0) -> dict[str, Any]:
    """One run with the rate rising exponentially each step (fastai's lr_find); weights restored afterwards.

    Stops once the smoothed loss (exponential moving average with bias correction, as Lightning's finder)
    exceeds `stop_factor` times its lowest value, or a loss turns non-finite: one noisy batch never ends it.
    """
    rates = np.geomspace(settings.range_start, settings.range_end, settings.range_steps).tolist()
    trainer.reset(rates[0])
    tried, losses = [], []
    chunk = 10  # steps run back to back between checks for a blow-up
    try:
        for start in range(0, len(rates), chunk):
            progress(start / len(rates), msg("Range test: learning rate {rate:.1e}", rate=rates[start]))
            block = rates[start:start + chunk]
            tried += block
            losses += trainer.run(len(block), block)
            stop = _range_stop(losses, stop_factor)
            if stop is not None:
                tried, losses = tried[:stop + 1], losses[:stop + 1]
                break
    finally:
        trainer.reset(settings.range_start)
    progress(1.0, msg("Range test done"))
    return {"learning_rates": tried, "losses": [_finite_or_none(v) for v in losses],
            "smoothed": [_finite_or_none(v) for v in smoothed(losses, RANGE_SMOOTHING)]}


def _range_stop(losses: list[float], stop_factor: float) -> int | None:
    """The index of the first step whose loss is non-finite or whose smoothed loss blew up, if any."""
    lowest = math.inf
    for index, value in enumerate(smoothed(losses, RANGE_SMOOTHING)):
        if not math.isfinite(losses[index]) or not math.isfinite(value):
            return index
        if index > 0 and value > stop_factor * lowest:
            return index
        lowest = min(lowest, value)
    return None


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


def check_lr_range_test(figures: dict[str, Any], *, max_safe_rate: float | None = None,
                        sweep_rate: float | None = None,
                        disagree_factor: float = threshold("hparams.lr_range_test", "disagree_factor"),
                        min_points: int = threshold("hparams.lr_range_test", "min_points"),
                        trim: int = threshold("hparams.lr_range_test", "trim")) -> CheckResult:
    """Suggest a rate from the smoothed range-test curve (first and last `trim` points left out), each rule side
    by side; say when the rules disagree. On a pretrained checkpoint the suggestion is capped at the highest
    rate its weights tolerate (`max_safe_rate`, from the sweep's drift), since the loss of a few steps cannot
    show what a long run at a high rate does to them. With the sweep's recommended rate (`sweep_rate`) the range test
    proposes no rate of its own: its curve's pick is evidence beside the sweep's, which is the one rate to use."""
    curve = figures.get("smoothed") or figures["losses"]
    lrs, losses = _finite(figures["learning_rates"], curve)
    dropped = len(figures["losses"]) - len(_finite(figures["learning_rates"], figures["losses"])[1])
    lrs, losses = (lrs[trim:len(lrs) - trim], losses[trim:len(losses) - trim]) if len(lrs) > 2 * trim + min_points \
        else (lrs, losses)
    thresholds = {"disagree_factor": disagree_factor, "min_points": min_points, "trim": trim}
    if len(losses) < min_points:
        return judge("hparams.lr_range_test", {**figures, "suggestions": {}, "dropped_points": dropped,
                                               "finite_points": int(len(losses))}, {"min_points": (
            msg("Only {points} finite points before the loss blew up, too few to suggest a rate: start the range test "
                "lower.", points=len(losses)), msg("Lower the range test's start rate."))}, "", thresholds=thresholds)
    suggestions = {name: rule(lrs, losses) for name, rule in SUGGESTIONS.items()}
    spread = max(suggestions.values()) / min(suggestions.values())
    chosen = suggestions["valley"]
    capped = max_safe_rate is not None and chosen > max_safe_rate
    if capped:
        chosen = round_down_rate(max_safe_rate)
    side_by_side = ", ".join(f"{name} {rate:.1e}" for name, rate in suggestions.items())
    cap_text = (msg(" Capped at {chosen:.0e}: above {safe:.1e} each step moves the pretrained weights by more than "
                    "{limit:g} of their size (hparams.lr_sweep).", chosen=chosen, safe=max_safe_rate, limit=WARN_DRIFT)
                if capped else "")
    evidence = {**figures, "suggestions": suggestions, "suggested": chosen, "dropped_points": dropped, "spread": spread,
                "finite_points": int(len(losses)), "max_safe_rate": max_safe_rate,
                "uninformative": spread > disagree_factor}
    # A flat or noisy curve (a random-weight checkpoint's, a pretrained one's over few steps) says nothing about the
    # rate: nothing to fix, and the sweep's measured verdict stands.
    return judge("hparams.lr_range_test", evidence, {"disagree_factor": (
        msg("Uninformative: the curve is too flat or noisy to suggest a rate (its rules disagree by {spread:.0f}x on "
            "{points} smoothed points: {rules}; {dropped} non-finite points dropped). The sweep's measured verdict on "
            "the rate stands (hparams.lr_sweep).", spread=spread, points=len(losses), rules=side_by_side,
            dropped=dropped), None)},
        msg("The curve points at {chosen:.1e} from {points} smoothed points (its rules agree within {spread:.1f}x: "
            "{rules}).{cap} The rate to use is the sweep's {best:.1e}, measured on held-out rows (hparams.lr_sweep).",
            chosen=chosen, points=len(losses), spread=spread, rules=side_by_side, cap=cap_text, best=sweep_rate)
        if sweep_rate else
        msg("Suggested rate {chosen:.1e} from {points} smoothed points; the rules agree within {spread:.1f}x: "
            "{rules}.{cap}", chosen=chosen, points=len(losses), spread=spread, rules=side_by_side, cap=cap_text),
        thresholds=thresholds)


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
        rates = [effective_rate(config)] * len(steps)
    return {"optimizer": config.optimizer, "steps": steps, "learning_rates": rates,
            "train_steps": config.train_steps, "warmup_steps": config.warmup_steps}


def check_schedule(figures: dict[str, Any], *,
                   warn_warmup_share: float = threshold("hparams.schedule", "warn_warmup_share")) -> CheckResult:
    """The planned schedule; warn when warmup takes most of training."""
    peak = max(figures["learning_rates"])
    figures = {**figures, "warms_up": figures["optimizer"] == "create_optimizer"}
    share = figures["warmup_steps"] / figures["train_steps"]
    summary = msg("create_optimizer warms up over {warmup} steps to {peak:.1e}, then decays linearly to {last:.1e} at "
                  "step {steps}.", warmup=figures["warmup_steps"], peak=peak, last=figures["learning_rates"][-1],
                  steps=figures["train_steps"]) if figures["warms_up"] else \
        msg("A constant rate of {rate:g} for all {steps} planned steps (no warmup or decay; create_optimizer adds "
            "both).", rate=peak, steps=figures["train_steps"])
    return judge("hparams.schedule", figures, {"warn_warmup_share": (
        msg("{summary} Warmup is {share:.0%} of training, so most steps run below the peak rate.", summary=summary,
            share=share),
        f"create_optimizer(..., num_warmup_steps={max(1, figures['train_steps'] // 10)})")},
        summary, thresholds={"warn_warmup_share": warn_warmup_share})


# ---------------------------------------------------------------- the stage


def run_training_checks(config: RunConfig, model, batches: list, settings: SweepSettings,
                        progress: Progress = _no_progress, *, held, copies: SharedCopy | None = None
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
            progress(0.0, msg("Copying the model and tracing its train step (once for every rate)"))
            holder.append((copies or SharedCopy()).trainer(model, batches, config))
        return holder[0]

    rate = effective_rate(config)
    results.append(run_check("hparams.lr_sweep", STAGE, lambda: check_lr_sweep(
        lr_sweep(trainer(), settings, held, configured_rate=rate,
                 regression=task.regression, progress=lambda f, t: progress(0.7 * f, t)),
        rate, pretrained=pretrained, head_only=head)))
    safe, best = ((results[-1].evidence or {}).get(key) for key in ("max_safe_rate", "best_rate"))
    results.append(run_check("hparams.lr_range_test", STAGE, lambda: check_lr_range_test(
        lr_range_test(trainer(), settings, lambda f, t: progress(0.7 + 0.3 * f, t)), max_safe_rate=safe,
        sweep_rate=best)))
    progress(1.0, msg("Done"))
    return results
