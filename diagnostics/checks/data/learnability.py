"""data.learnability: the given labels are learned better than the same labels shuffled."""

from __future__ import annotations

from typing import Any, TypedDict

from dataclasses import replace

import numpy as np

from diagnostics.config.run import RunConfig
from diagnostics.core import progress
from diagnostics.core.chance import chance_of_at_least
from diagnostics.core.check import Cause, Check, Condition, Explains
from diagnostics.core.context import RunContext
from diagnostics.core.result import CheckResult, judge, run_check
from diagnostics.core.rules import Above, All, AtMost, Holds
from diagnostics.i18n import N_, msg
from diagnostics.keras.batches import LABEL, LEARNABILITY_CONTROL, batches_of, build_batch, shuffled_labels
from diagnostics.keras.scoring import held_out_figures
from diagnostics.keras.keras_model import encoder_frozen
from diagnostics.keras.training import SharedCopy, Trainer, is_pretrained, usual_rate_of


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


def sizes(count: int, batch_size: int, train_size: int = 96, held_size: int = 32, epochs: int = 6
          ) -> tuple[int, int, int]:
    """(held-out rows, training rows, steps of each run) for a split of `count` rows."""
    held = min(held_size, max(1, count // 4))
    train = max(0, min(train_size, count - held))
    return held, train, epochs * -(-train // batch_size)


def planned_steps(run: RunContext, settings) -> int:
    """Both runs' steps: the given labels', then the shuffled ones'."""
    return 2 * sizes(len(run.split), run.config.batch_size)[2]


def learnability_figures(model, tokenizer, config: RunConfig, split, *, rate: float, train_size: int = 96,
                         held_size: int = 32, epochs: int = 6, copies: SharedCopy | None = None) -> dict[str, Any]:
    """Held-out scores after the same short run on the given labels and on a random permutation of them, both on
    one copy of the model (`copies`: shared with the call's other training checks; a new one when None)."""
    count = len(split)
    order = np.random.default_rng(config.seed).permutation(count)
    held_size, train_rows, steps = sizes(count, config.batch_size, train_size, held_size, epochs)
    held, train = order[:held_size].tolist(), order[held_size:held_size + train_rows].tolist()
    control_split = shuffled_labels(split, config.seed, LEARNABILITY_CONTROL)
    given_batches = batches_of(split, tokenizer, config, train)
    substitute = config.optimizer_shown if config.optimizer == "other" else None
    if substitute:  # the usual rate is Adam's: an SGD or RMSprop step at it is another size
        config = replace(config, optimizer="Adam", user_optimizer=None)
    trainer = (copies or SharedCopy()).trainer(model, given_batches, config)
    progress.doing(msg("Training on the given labels ({steps} steps)", steps=steps))
    given = held_out_score(trainer, given_batches, build_batch(split, tokenizer, config, held), config, steps, rate)
    progress.doing(msg("Training on the same labels shuffled ({steps} steps)", steps=steps))
    control = held_out_score(trainer, batches_of(control_split, tokenizer, config, train),
                             build_batch(control_split, tokenizer, config, held), config, steps, rate)
    held_labels = split.data.column(LABEL).to_numpy()[held]
    if config.glue_task.regression:
        chance = float(np.var(held_labels.astype(float)))
    else:
        known = held_labels[held_labels >= 0].astype(int)
        chance = float(np.bincount(known).max() / len(known)) if len(known) else 0.0
    return {"given": given, "shuffled": control, "chance": chance, "pretrained": is_pretrained(model),
            "train_rows": len(train), "held_rows": len(held), "steps": steps, "learning_rate": rate,
            "adam_for": substitute,
            "regression": config.glue_task.regression}


def check_learnability(figures: dict[str, Any]) -> CheckResult:
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
    evidence = {**figures, "fit_gain": 1 - given["final_train_loss"] / control["final_train_loss"]
                if control["final_train_loss"] else None}
    if figures["regression"]:
        evidence["error_ratio"] = given["score"] / control["score"] if control["score"] else None
    else:
        baseline, rows = max(control["score"], figures["chance"]), int(figures["held_rows"])
        evidence.update(accuracy_gain=given["score"] - baseline,
                        p_value=chance_of_at_least(round(given["score"] * rows), rows, baseline))
    # A pretrained model memorises random labels about as fast as real ones (on real MNLI at 5e-5: training loss
    # 1.09 to 0.41 with the given labels, 1.09 to 0.43 with shuffled ones) and a short run at a fine-tuning rate
    # may not generalise yet, so for it nothing here separates detached labels from a hard task. A randomly
    # initialised model at its high rate learns labels that carry signal within this run (the demo kit's do).
    return judge(CHECK, evidence)


def _run(e) -> Any:
    """The two short runs data.learnability compared: steps, rows, rate and held-out rows."""
    if e.get("adam_for"):
        return msg("{steps} steps on {rows} rows with Adam at rate {rate:g} (the usual rate for the weights it trains; "
                   "the script's {optimizer} and its rate are hparams.lr_sweep's to judge), scored on {held} held-out "
                   "rows", steps=e["steps"], rows=e["train_rows"], rate=e["learning_rate"], optimizer=e["adam_for"],
                   held=e["held_rows"])
    return msg("{steps} steps on {rows} rows at rate {rate:g} (the usual rate for the weights it trains: the "
               "configured rate is hparams.lr_sweep's to judge), scored on {held} held-out rows", steps=e["steps"],
               rows=e["train_rows"], rate=e["learning_rate"], held=e["held_rows"])


def _numbers(e) -> Any:
    """Both runs' held-out scores: the error (regression), else the accuracy beside the majority label's."""
    given, control = e["given"], e["shuffled"]
    if e["regression"]:
        return msg("held-out error {given:.3f} with the given labels, {shuffled:.3f} with shuffled ones",
                   given=given["score"], shuffled=control["score"])
    return msg("held-out accuracy {given:.0%} with the given labels, {shuffled:.0%} with shuffled ones (the "
               "held-out rows' commonest label {chance:.0%})", given=given["score"], shuffled=control["score"],
               chance=e["chance"])


def _fits(e) -> Any:
    """Both runs' training loss, from their first steps to their last."""
    given, control = e["given"], e["shuffled"]
    return msg("training loss {given_first:.3f} to {given_final:.3f} with the given labels, {shuffled_first:.3f} to "
               "{shuffled_final:.3f} with shuffled ones", given_first=given["first_train_loss"],
               given_final=given["final_train_loss"], shuffled_first=control["first_train_loss"],
               shuffled_final=control["final_train_loss"])


def _signal(e, f) -> tuple:
    """(finding, fix) when the given labels beat shuffled ones on held-out rows."""
    return msg("The labels carry signal: after {run}, {numbers}.", run=_run(e), numbers=_numbers(e)), None


def _random(e, f) -> tuple:
    """(finding, fix) when, on a randomly initialised model, the given labels behave like random ones."""
    return (msg("After {run}, the given labels were fitted no faster than shuffled ones ({fits}) and generalise no "
                "better ({numbers}).{reading}", run=_run(e), fits=_fits(e), numbers=_numbers(e),
                reading=msg(" The labels behave like random ones: they no longer line up with their texts (a shuffle "
                            "or a join that reordered one column), or this run is too short for the model.")),
            msg("Check that texts and labels were shuffled or filtered together (dataset.shuffle on the whole "
                "dataset, never on one column)."))


def only_when_asked(run: RunContext):
    """On a pretrained checkpoint it runs only when asked for: there its two short runs take minutes on a CPU and,
    measured on real GLUE text, rarely conclude (a pretrained model fits shuffled labels about as fast as real ones,
    and held-out rows after so few steps separate them only on easy tasks)."""
    if encoder_frozen(run.classifier[0]):
        return msg("Not run by default on a fit that leaves the encoder frozen: a head on fixed features learns "
                   "real labels about as slowly as shuffled ones in a run this short, so it cannot tell them apart; "
                   "it runs on a fit that trains the encoder (or ask for it: --with data.learnability, with_checks= "
                   "in diagnose()).")
    if not is_pretrained(run.classifier[0]):
        return None
    return msg("Not run by default on a pretrained checkpoint: it trains two copies for a minute or more on a CPU "
               "and, on real GLUE text (MNLI, MRPC, RTE, CoLA), its short runs rarely tell labels that match their "
               "texts from shuffled ones. Ask for it when you suspect the labels (--with data.learnability, "
               "with_checks= in diagnose(), or the Data page's button).")


def measure_learnability(run: RunContext, *, copies) -> list[CheckResult]:
    """At the checkpoint's usual rate, whatever the configured one (the rate is the sweep's question)."""
    model = run.classifier[0]
    return [run_check(CHECK.id, CHECK.stage, lambda: check_learnability(learnability_figures(
        model, run.tokenizer, run.config, run.split, rate=usual_rate_of(model), copies=copies)))]


class RunScore(TypedDict):
    score: float
    first_train_loss: float
    final_train_loss: float


class Evidence(TypedDict, total=False):
    """What data.learnability puts in its evidence (the charts, tables and JSON report read it)."""

    given: RunScore
    shuffled: RunScore
    chance: float
    held_rows: int
    train_rows: int
    learning_rate: float
    adam_for: str | None  # the script's optimizer (SGD...) when the runs train with Adam at the usual rate instead
    pretrained: bool
    regression: bool
    steps: int
    # What the registry's rules read:
    accuracy_gain: float  # held-out accuracy above the better of the shuffled run's and the majority label's
    p_value: float  # how often that many right answers come by chance at that better accuracy
    error_ratio: float | None  # regression: held-out error over the shuffled run's
    fit_gain: float | None  # the share by which the given labels' final training loss is below the shuffled run's


CHECK = Check("data.learnability", N_("the given labels are learned better than the same labels shuffled"),
              trains=True, unit="learnability", otherwise="skip", conditions=(
    # Judged in this order; when none is crossed the run cannot tell (a skip that says so, with the numbers).
    Condition("min_accuracy_gain", 0.1, "pass when held-out accuracy beats the shuffled run and the majority by this",
              All((Above("accuracy_gain", or_equal=True), AtMost("p_value", of="max_p_value"))), status="pass",
              says=_signal),
    Condition("max_p_value", 0.01,
              "and when that many right answers come by chance at most this often (binomial tail)"),
    Condition("max_error_ratio", 0.8, "regression: pass when held-out error is below this share of the shuffled run's",
              AtMost("error_ratio", below=True), status="pass", says=_signal),
    Condition("fit_margin", 0.1, "on a randomly initialised model, pass when the given labels' training loss ends more "
                                 "than this share below the shuffled run's (a pretrained one fits shuffled labels "
                                 "about as fast, so there it proves nothing)",
              All((Above("fit_gain"), Holds("pretrained", False))), status="pass", says=lambda e, f: (
                  msg("The labels carry structure: after {run}, {fits}; real labels are fitted faster than random "
                      "ones. Held-out rows do not separate them yet ({numbers}): this run is too short for the task "
                      "to generalise.", run=_run(e), fits=_fits(e), numbers=_numbers(e)), None)),
    Condition("random_weights", None, "warn when neither separates them on a randomly initialised model (it learns "
                                      "labels that carry signal within the run)", Holds("pretrained", False),
              says=_random)),
              otherwise_says=lambda e, f: msg(
                  "Inconclusive: after {run}, the given labels neither beat the shuffled ones on held-out rows "
                  "({numbers}) nor were fitted faster ({fits}). A pretrained model memorises random labels about as "
                  "fast as real ones, and a run this short on a hard task may not generalise yet, so it cannot tell "
                  "detached labels from a hard task; a longer run on more rows would.", run=_run(e),
                  numbers=_numbers(e), fits=_fits(e)),
              evidence=Evidence)

# The causes this check owns, each with its precedence among every check's causes (`Cause.precedence`).
CAUSES = (
    # Labels that carry no signal: every rate's held-out loss rises or stays, so the sweep's ranking of rates by it
    # (and its verdict on the configured rate, short of a loss that broke) says nothing about the rate.
    Cause("random_labels", "data.learnability", ("random_weights",), N_("labels that do not match their texts"),
          (Explains("hparams.lr_sweep", ("too_high", "warn_decades", "no_good_rate"),
                    Holds("configured_broke", False)),), precedence=70),
)
