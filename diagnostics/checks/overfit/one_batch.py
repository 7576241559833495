"""overfit.one_batch: one batch holding every label memorised by plain model.fit."""

from __future__ import annotations

import math
from typing import Any, TypedDict

import numpy as np

from diagnostics.checks.common import WARN_DRIFT
from diagnostics.config.run import RunConfig
from diagnostics.config.tasks import GlueTask
from diagnostics.config.training import DEFAULT_EPOCHS
from diagnostics.core import progress
from diagnostics.core.budget import check_deadline
from diagnostics.core.check import Check, Condition
from diagnostics.core.context import RunContext
from diagnostics.core.evidence import Rows
from diagnostics.core.fixes import RateFix
from diagnostics.core.result import CheckResult, crossed, judge
from diagnostics.core.rules import Above, All, AtMost, Holds, ShareAbove
from diagnostics.i18n import N_, Text, joined, msg
from diagnostics.keras.batches import FirstBatch, LABEL, build_batch, decoded_rows, split_labels
from diagnostics.keras.keras_model import call, class_logits, encoder_frozen, head_of
from diagnostics.keras.training import (
    SharedCopy,
    effective_rate,
    first_line,
    is_pretrained,
    split_batch,
    usual_rate_of,
    weight_drift,
)
from diagnostics.core.curves import round_down_rate, smoothed


def every_label_indices(labels: np.ndarray, task: GlueTask, batch_size: int, seed: int) -> tuple[list[int], list[str]]:
    """Rows for one batch holding every label of the task (round-robin over labels, seeded).

    Returns:
        the row indices, and the names of task labels the split cannot supply.
    """
    rng = np.random.default_rng(seed)
    if task.regression:
        return rng.permutation(len(labels))[:batch_size].tolist(), []
    pools = [rng.permutation(np.flatnonzero(labels == label)).tolist() for label in range(task.num_labels)]
    missing = [task.label_names[label] for label, pool in enumerate(pools) if not pool]
    chosen: list[int] = []
    while len(chosen) < batch_size and any(pools):
        for pool in pools:
            if pool and len(chosen) < batch_size:
                chosen.append(pool.pop())
    return chosen, missing


def overfit_one_batch(model, batch: FirstBatch, config: RunConfig, epochs: int, *, rate: float | None = None,
                      copies: SharedCopy | None = None) -> dict[str, Any]:
    """Train a copy of the model on one batch for `epochs` epochs with plain `model.fit`; the model is untouched.
    `copies` gives the copy (one shared with other training checks; a new one when None).

    Returns:
        losses and accuracies after every step (None for regression), the rate, and the copy's final
        predictions for each row.
    """
    import tf_keras

    task = config.glue_task
    rate = effective_rate(config) if rate is None else rate
    trainer = (copies or SharedCopy()).trainer(model, [batch.tf_batch], config)
    trainer.reset(rate)
    report = tf_keras.callbacks.LambdaCallback(
        on_epoch_begin=lambda epoch, logs: check_deadline(f"at epoch {epoch + 1} of {epochs} of the overfit test"),
        on_epoch_end=lambda epoch, logs: progress.doing(msg("Epoch {epoch} of {epochs}: loss {loss:.4f}",
                                                            epoch=epoch + 1, epochs=epochs, loss=logs["loss"])))
    try:
        history = trainer.fit(batch.tf_batch, epochs, callbacks=[report])
    except Exception as exc:  # what model.fit itself raises is the finding (e.g. a label out of range on CPU)
        return {"epochs": epochs, "learning_rate": rate, "losses": [], "accuracies": None, "predictions": [],
                "final_accuracy": None, "ln_k": None, "error": f"{type(exc).__name__}: {first_line(exc)}"}
    inputs, _ = split_batch(batch.tf_batch)
    logits = class_logits(trainer.model, call(trainer.model, inputs))
    drift = weight_drift(model, trainer.model) / epochs if is_pretrained(model) else None
    losses = [float(v) for v in history.history["loss"]]
    accuracies = [float(v) for v in history.history.get("accuracy", [])] or None
    labels = np.asarray(batch.rows[LABEL])
    predictions = logits[:, 0].tolist() if task.regression else logits.argmax(axis=1).tolist()
    return {
        "epochs": epochs,
        "learning_rate": rate,
        "losses": [v if math.isfinite(v) else None for v in losses],
        "accuracies": accuracies,
        "predictions": predictions,
        "final_accuracy": None if task.regression else float(np.mean(np.asarray(predictions) == labels)),
        # Where a cross-entropy starts; a loss of the user's own starts where it does.
        "ln_k": None if task.regression or config.loss == "custom" else math.log(head_of(model).num_labels),
        "pretrained": is_pretrained(model),
        "drift_per_step": drift,
        # The loss this run compiled reads the outputs as probabilities: only then is it a reason the curve names.
        "probability_loss": config.loss == "SparseCategoricalCrossentropy(from_logits=False)",
    }


def curve_shape(losses: list[float | None]) -> dict[str, Any]:
    """What an overfit curve shows, for the registry's rules to judge: how much of the starting loss it shed, its
    largest spike, whether it mostly falls, how many epochs ended on a non-finite loss.

    A spike is a rise above the lowest loss reached so far, once that is below the start: a large one (the
    `spike_share` rule) means the optimizer threw away what it had learned (a rate too high), which batch noise on
    one fixed batch never does. A rise before anything was learned (a first step that overshoots, then falls to
    nothing) threw nothing away; a loss that only rises is judged by where it ends.
    """
    values = [v for v in losses if v is not None]
    first, final = values[0], values[-1]
    lowest, spike, spike_at = math.inf, 0.0, None
    for epoch, value in enumerate(values, start=1):
        if lowest < first and value - lowest > spike:
            spike, spike_at = value - lowest, epoch
        lowest = min(lowest, value)
    trend = smoothed(values, 0.5)
    falls = sum(later <= earlier for earlier, later in zip(trend, trend[1:], strict=False)) / max(1, len(trend) - 1)
    return {"first_loss": first, "final_loss": final, "lowest_loss": min(values),
            "progress": (first - final) / first if first else 0.0, "spike": spike, "spike_at": spike_at,
            "falling_share": falls, "non_finite_epochs": sum(v is None for v in losses)}


def _no_curve(figures: dict[str, Any], evidence: dict[str, Any]) -> CheckResult | None:
    """overfit.one_batch's verdict when training gave no curve to judge (fit raised, or the loss was NaN at once)."""
    if not figures.get("error") and figures["losses"] and figures["losses"][0] is not None:
        return None
    evidence["nan_from_start"] = not figures.get("error")
    return judge(CHECK, evidence)


def _labels_outside(e) -> Text | str:
    """The batch's labels the head has no output for, counted ("" when none)."""
    return msg(" {count} of the batch's labels lie outside [0, {num_labels}).", count=e["out_of_range_labels"],
               num_labels=e.get("num_labels")) if e.get("out_of_range_labels") else ""


def _run(figures: dict[str, Any]) -> Text:
    """How the copy was trained: epochs and rate, and why at that rate when it is not the configured one."""
    run = msg("{epochs} epochs at learning rate {rate:g}", epochs=figures["epochs"], rate=figures["learning_rate"])
    if figures.get("rate_source") in ("usual", "sweep"):
        return msg("{run} ({which}: hparams.lr_sweep measured the loss at the configured {configured:g} turning NaN or "
                   "blowing up, so this test does not train at it)", run=run, configured=figures["configured_rate"],
                   which=msg("the usual rate for the weights it trains") if figures["rate_source"] == "usual" else
                   msg("the sweep's recommended rate"))
    return run


def _lower_rate_fix(rate: float, best_rate: float | None) -> RateFix:
    """The optimizer at a lower rate: the sweep's recommended one when lower, else a tenth of this one."""
    return RateFix(round_down_rate(best_rate) if best_rate and best_rate < rate else round_down_rate(rate / 10))


def _not_learning(e) -> tuple:
    """(what the curve says, fix) when the batch was neither memorised nor steadily learned."""
    best_rate = e["best_rate"]
    rerun = (msg(" The sweep recommends {rate:.0e}: rerun at it.", rate=best_rate)
             if best_rate and not math.isclose(best_rate, e["learning_rate"], rel_tol=1e-6) else "")
    if e["final_loss"] > e["first_loss"]:
        cause = msg("The loss rose: the learning rate is too high.{rerun}", rerun=rerun)
        fix = _lower_rate_fix(e["learning_rate"], best_rate)
    elif best_rate and best_rate < e["learning_rate"] and not math.isclose(best_rate, e["learning_rate"],
                                                                         rel_tol=1e-6):
        # The sweep measured a lower rate as better: "too low" would contradict it, and a higher rate is no fix.
        cause = msg("The loss {moved}{ln_k}, at a rate above the {best:.0e} the sweep measured as best on held-out "
                    "rows: check that the weights are not frozen or disconnected from the loss (see model.gradients) "
                    "and that the loss reads the outputs as they are (see hparams.loss), then rerun at {best:.0e}.",
                    moved=msg("stayed near where it started") if e["final_loss"] >= 0.9 * e["first_loss"] else
                    msg("fell too slowly or unevenly"), best=best_rate,
                    ln_k=f" (ln K = {e['ln_k']:.3f})" if e.get("ln_k") else "")
        fix = RateFix(best_rate)
    elif e["final_loss"] >= 0.9 * e["first_loss"]:
        cause = msg("The loss stayed near where it started{ln_k}: the learning rate is too low, or weights are frozen "
                    "or disconnected from the loss (see model.gradients).{rerun}",
                    ln_k=f" (ln K = {e['ln_k']:.3f})" if e.get("ln_k") else "", rerun=rerun)
        fix = RateFix(best_rate) if best_rate else msg("Run the Hyperparameters sweep for a rate, and check that "
                                                         "layer.trainable is True where it should be.")
    elif e.get("probability_loss"):
        cause = msg("The loss fell too slowly or unevenly: the learning rate is too low, or the loss reads logits as "
                    "probabilities (from_logits=False, see hparams.loss).{rerun}", rerun=rerun)
        fix = msg("More epochs or a higher rate; {code}",
                  code="loss=SparseCategoricalCrossentropy(from_logits=True) or the internal loss")
    else:  # the loss reads the outputs as they are: a fix of the loss would be one already in place
        cause = msg("The loss fell too slowly or unevenly: the learning rate is too low for this many epochs.{rerun}",
                    rerun=rerun)
        fix = RateFix(best_rate) if best_rate and best_rate > e["learning_rate"] else \
            msg("More epochs or a higher rate.")
    return cause, fix


def check_overfit(figures: dict[str, Any], rows: list[dict[str, Any]], *,
                  missing_labels: list[str] | None = None, best_rate: float | None = None) -> CheckResult:
    """Judge the overfit run by its curve with the registry's rules, in their order (a run with no curve:
    `_no_curve`).

    Fail when an epoch's loss is not finite or the loss spikes (see `curve_shape`). Warn, whatever the curve, when a
    pretrained model's weights moved more than `warn_drift` of their size an epoch: the batch can be memorised at a
    rate that wrecks pretraining in a real run. Pass when the batch is memorised (every row right and the loss at
    most `memorised_share` of its start, or below `memorised_value`), or when the loss falls steadily (at least
    `learning_progress` of its start, the smoothed curve falling on `learning_falls` of the epochs) with every row
    right: a pretrained model at a careful rate learns slowly and correctly. Warn when the loss falls steadily with
    rows still wrong at a rate the sweep did not call too low: the epochs were too few. Otherwise fail: it rose,
    stayed put or fell too slowly.

    Args:
        figures: from `overfit_one_batch`.
        rows: the batch decoded, with predictions.
        missing_labels: task labels the split could not supply to the batch.
        best_rate: the Hyperparameters sweep's recommended rate, when known.
    """
    evidence = {**figures, "rows": rows, "missing_labels": missing_labels or [], "best_rate": best_rate,
                "substitute_rate": figures.get("rate_source") in ("usual", "sweep")}
    if (broken := _no_curve(figures, evidence)) is not None:
        return broken
    accuracy = figures["final_accuracy"]
    evidence.update(curve_shape(figures["losses"]), all_right=accuracy is None or accuracy == 1.0)
    # A rate the sweep measured and did not call too low (`configured_too_low`, by the run's warn_decades): a slow
    # curve is
    # then the epochs' shortfall, not the rate's (real fine-tuning at 1e-5 learns; twenty steps of one batch barely
    # move); unless the loss reads logits as probabilities, a cause of its own (hparams.loss).
    evidence["rate_swept_fine"] = bool(best_rate) and evidence.get("at_configured_rate", True) \
        and figures["learning_rate"] <= best_rate and figures.get("configured_too_low") is False \
        and not figures.get("probability_loss")
    # Each verdict's `reading` is what the curve says of the rate; a finding another check's cause explains (the
    # sweep's rate, the loss) is said without it (`causes.explain`).
    return judge(CHECK, evidence)


def _curve(e) -> dict[str, Any]:
    """What every verdict on a curve says first: how the copy was trained (`run`), where the loss went (`went`), the
    accuracy it reached (`reached`), and the labels the batch lacks (`note`)."""
    accuracy, missing = e["final_accuracy"], e["missing_labels"]
    return {
        "run": _run(e),
        "went": msg("the loss went from {first:.4f} to {final}", first=e["first_loss"],
                    final="NaN" if e["losses"][-1] is None else f"{e['final_loss']:.4f}"),
        "reached": "" if accuracy is None else msg(", accuracy {accuracy:.0%}", accuracy=accuracy),
        "note": msg(" The split has no {labels}, so the batch cannot hold every label.", labels=", ".join(missing))
        if missing else "",
    }


def _memorised(e, f) -> tuple:
    """(finding, no fix) for a batch memorised."""
    told = _curve(e)
    achieved = "" if e["final_accuracy"] is None else msg(" and the model predicts every row right (100%)")
    return (msg("After {run}, {went}{achieved}: the pipeline can learn.{note}", run=told["run"], went=told["went"],
                note=told["note"], achieved=achieved), None)


def _drifts(e, f) -> tuple:
    """(finding, fix) for a pretrained model whose weights each epoch moved too far, memorised or not."""
    told = _curve(e)
    memorised = bool({"memorised_share", "memorised_value"} & set(crossed(CHECK, e)))
    return (msg("After {run}, {outcome}{reached}, but each epoch moved its pretrained weights by {drift:.1e} of their "
                "size (more than {limit:g}){reading}.{note}", run=told["run"],
                outcome=msg("the model memorised the batch") if memorised else told["went"], reached=told["reached"],
                drift=e.get("drift_per_step") or 0.0, limit=CHECK.value("warn_drift"), note=told["note"],
                reading=msg(": a real run of a few hundred steps at this rate overwrites what pretraining learned, "
                            "however well one batch is memorised")),
            _lower_rate_fix(e["learning_rate"], e["best_rate"]))


def _spikes(e, f) -> tuple:
    """(finding, fix) for a loss that jumped far above its lowest point: the optimizer threw away what it learned."""
    told = _curve(e)
    return (msg("After {run}, {went}{reached}, but it jumped by {spike:.3f} above its lowest point at epoch "
                "{epoch}{reading}.{note}", run=told["run"], went=told["went"], reached=told["reached"],
                spike=e["spike"], epoch=e["spike_at"], note=told["note"],
                reading=msg(": training is unstable at this learning rate")),
            _lower_rate_fix(e["learning_rate"], e["best_rate"]))


def _learning(e, f) -> tuple:
    """(finding, no fix) for a loss falling steadily with every row right, the batch not memorised yet."""
    told = _curve(e)
    return (msg("After {run}, {went}{reached}, falling steadily (by {progress:.0%} of its start): the pipeline learns, "
                "slowly at this rate; more epochs would memorise the batch.{note}", run=told["run"], went=told["went"],
                reached=told["reached"], progress=e["progress"], note=told["note"]), None)


def _too_few_epochs(e, f) -> tuple:
    """(finding, fix) for a loss falling steadily, the batch not memorised, at a rate the sweep did not call too
    low."""
    told = _curve(e)
    return (msg("After {run}, {went}{reached}, falling steadily (by {progress:.0%} of its start), the batch not yet "
                "memorised: at {rate:g}, which the sweep did not call too low (its best {best:.0e}), {epochs} epochs "
                "were too few.{note}", run=told["run"], went=told["went"], reached=told["reached"],
                progress=e["progress"], rate=e["learning_rate"], best=e["best_rate"], epochs=e["epochs"],
                note=told["note"]),
            msg("More epochs for the overfit test (its epochs setting) show whether the batch is memorised; the rate "
                "is hparams.lr_sweep's to judge."))


def _not_memorised(e, f) -> tuple:
    """(finding, fix) for a curve no rule finds well: it rose, stayed put or fell too slowly (`_not_learning`)."""
    cause, fix = _not_learning(e)
    return msg("After {run}, {went}{reached}.{reading}{note}", **_curve(e), reading=joined([" ", cause], "")), fix


def run_overfit_checks(config: RunConfig, model, tokenizer, split, *, epochs: int = DEFAULT_EPOCHS,
                       rate: float | None = None, best_rate: float | None = None,
                       configured_broke: bool | None = None, copies: SharedCopy | None = None,
                       configured_too_low: bool | None = None) -> list[CheckResult]:
    """The overfit test on a batch holding every label of a split that has labels; the model given is never
    modified (`copies`: the copy to train, shared with the call's other training checks).

    Args:
        rate: the rate to train at instead of the configured one (a rerun at another rate).
        best_rate / configured_broke: the sweep's recommended rate and whether it measured the configured rate as
            broken, its loss NaN or blown up (None: not measured). The test never trains at a rate the sweep measured
            as broken: it trains at the checkpoint's usual rate instead (the sweep's when that is the rate that broke),
            and says so. A rate the sweep calls too high for a milder reason (held-out loss, weight drift) still
            memorises a batch: the test trains at it, and what it finds of the rate points at the sweep.
    """
    task = config.glue_task
    labels = split_labels(split)  # some in range: a split without (a GLUE test split's) is skipped by the runner
    indices, missing = every_label_indices(labels, task, config.batch_size, config.seed)
    batch = build_batch(split, tokenizer, config, indices)
    if batch.tf_batch is None:  # the first batch built (the runner's "batch" need), these rows did not: an error
        raise ValueError(f"the overfit test's batch (rows {indices}) could not be built: {batch.error}")
    configured, source = effective_rate(config), "given" if rate is not None else "configured"
    if rate is None and configured_broke:
        # The checkpoint's usual rate, a rate real fine-tuning calls good (the sweep's own pick, from a few steps,
        # can be noisy); the sweep's pick when the usual rate is the one it flagged.
        usual = usual_rate_of(model)
        rate, source = (usual, "usual") if not math.isclose(usual, configured, rel_tol=1e-6) else (best_rate, "sweep")
        if rate is None:
            rate, source = configured, "configured"
    figures = overfit_one_batch(model, batch, config, epochs, rate=rate, copies=copies)
    num_labels = head_of(model).num_labels
    batch_labels = np.asarray(batch.rows[LABEL])
    figures.update(configured_rate=configured, rate_source=source, num_labels=num_labels,
                   configured_too_low=configured_too_low,
                   at_configured_rate=math.isclose(figures["learning_rate"], configured, rel_tol=1e-6),
                   out_of_range_labels=0 if task.regression else
                   int(((batch_labels < 0) | (batch_labels >= num_labels)).sum()))
    rows = decoded_rows(batch, tokenizer, task)
    if figures.get("error"):
        return [check_overfit(figures, rows, missing_labels=missing, best_rate=best_rate)]
    for row, prediction in zip(rows, figures["predictions"], strict=False):
        row["predicted"] = prediction
        row["predicted_name"] = task.label_name(prediction)
        row["correct"] = None if task.regression else prediction == row["label"]
    return [check_overfit(figures, rows, missing_labels=missing, best_rate=best_rate)]


def only_when_asked(run: RunContext):
    """On a fit that leaves the encoder frozen it runs only when asked for: a head over fixed features may not memorise
    a batch in a few epochs whether or not anything is wrong (the demo kit's random features cannot), so a failure
    there says nothing of the pipeline; the fit that trains the encoder is where it answers."""
    if not encoder_frozen(run.classifier[0]):
        return None
    return msg("Not run by default on a fit that leaves the encoder frozen: a head over fixed features may not "
               "memorise one batch in a short run whether or not anything is wrong; it runs on a fit that trains the "
               "encoder (or ask for it: --with overfit.one_batch, with_checks= in diagnose()).")


def planned_steps(run: RunContext, settings) -> int:
    """One step an epoch."""
    return settings.epochs


def measure_overfit(run: RunContext, *, epochs: int, rate: float | None, best_rate: float | None,
                    configured_broke: bool | None, copies, configured_too_low: bool | None = None) -> list[CheckResult]:
    return run_overfit_checks(run.config, run.classifier[0], run.tokenizer, run.split, epochs=epochs, rate=rate,
                              best_rate=best_rate, configured_broke=configured_broke, copies=copies,
                              configured_too_low=configured_too_low)


class Evidence(TypedDict, total=False):
    """What overfit.one_batch puts in its evidence (the charts, tables and JSON report read it)."""

    losses: list[float | None]
    accuracies: list[float | None]
    ln_k: float
    rows: Rows  # position, index, label, label_name, predicted, predicted_name, correct, decoded, tokens
    predictions: list[int]
    # The curve's shape (overfit.curve_shape), which the registry's rules judge:
    first_loss: float
    final_loss: float
    lowest_loss: float
    progress: float  # the share of the first loss shed by the last epoch
    spike: float  # the largest rise above the lowest loss so far
    spike_at: int | None
    falling_share: float  # the share of epochs that lowered the smoothed loss
    non_finite_epochs: int
    all_right: bool  # every row predicted right (always, for regression: judged on the loss alone)
    epochs: int
    final_accuracy: float
    learning_rate: float  # the rate the copy trained at
    configured_rate: float  # the configured one
    rate_source: str  # "configured"; "usual" or "sweep" (the sweep measured the configured rate as too high); "given"
    at_configured_rate: bool  # it trained at the configured rate (a finding the sweep's rate cause can explain)
    substitute_rate: bool  # it trained at a rate it took for the configured one the sweep measured as broken
    num_labels: int  # the head's outputs
    out_of_range_labels: int  # labels of the batch the head cannot take
    best_rate: float | None
    configured_too_low: bool | None  # the sweep called the configured rate too low (None: not measured)
    rate_swept_fine: bool  # trained at the configured rate, at or below the sweep's best, not called too low by it
    drift_per_step: float | None
    missing_labels: list[str]
    pretrained: bool
    probability_loss: bool  # compiled with from_logits=False on logits (hparams.loss's cause): a reason it names
    error: str  # model.fit on the batch raised
    nan_from_start: bool  # the loss was NaN from the first epoch: no curve to judge


CHECK = Check("overfit.one_batch", N_("one batch holding every label memorised by plain model.fit"),
              trains=True, otherwise="fail", conditions=(
    # Judged in this order; a curve no rule finds well is a fail (the loss rose, stayed put or fell too slowly).
    Condition("fit_raises", None, "fail when model.fit on the batch raises", Holds("error"), status="fail",
              says=lambda e, f: (
                  msg("model.fit on the batch raised {error} (on a GPU this shows as loss: nan instead).{labels}",
                      error=e.get("error"), labels=_labels_outside(e)),
                  msg("Run model.fit on this batch with run_eagerly=True to see where it raises."))),
    Condition("no_finite_start", None, "fail when the loss is NaN from the first epoch (no curve to judge)",
              Holds("nan_from_start"), status="fail", says=lambda e, f: (
                  msg("After {run} the loss was NaN from the first epoch.{labels}", run=_run(e),
                      labels=_labels_outside(e)),
                  msg("Fix model.nan_rows and model.weights_after_step first."))),
    Condition("max_non_finite_epochs", 0, "fail when more epochs than this end on a NaN or infinite loss",
              Above("non_finite_epochs"), status="fail", says=lambda e, f: (
                  msg("After {run}, {went}{reached}{reading}.{note}", **_curve(e),
                      reading=msg(": the learning rate is too high")),
                  _lower_rate_fix(e["learning_rate"], e["best_rate"]))),
    Condition("spike_share", 0.25, "fail when the loss rises above its lowest point by this share of its start (not "
                                   "at the rate the test takes for one the sweep measured as broken: a bump there "
                                   "says nothing of a rate the run was given)",
              All((ShareAbove("spike", "first_loss"), Holds("substitute_rate", False))), status="fail",
              says=_spikes),
    Condition("warn_drift", WARN_DRIFT, "warn when an epoch moves pretrained kernels by more than this",
              Above("drift_per_step"), says=_drifts),
    Condition("memorised_share", 0.5, "memorised: every row right and the loss at most this share of its start",
              All((Holds("all_right"), ShareAbove("final_loss", "first_loss", at_most=True))), status="pass",
              says=_memorised),
    Condition("memorised_value", 0.05, "memorised: every row right and the loss below this",
              All((Holds("all_right"), AtMost("final_loss", below=True))), status="pass", says=_memorised),
    Condition("learning_progress", 0.05, "learning: every row right and the loss fell at least this share of its start",
              All((Holds("all_right"), Above("progress", or_equal=True),
                   Above("falling_share", or_equal=True, of="learning_falls"))), status="pass", says=_learning),
    Condition("learning_falls", 0.8, "learning: and at least this share of the epochs lowered the smoothed loss"),
    Condition("slow_at_a_swept_rate", None, "warn, not fail, when the loss falls steadily at a rate the sweep did not "
                                            "call too low but the batch is not memorised: the epochs were too few",
              All((Holds("rate_swept_fine"), Above("progress", of="no_progress"),
                   Above("falling_share", or_equal=True, of="learning_falls"))), says=_too_few_epochs),
    Condition("no_progress", 0.0, "a curve that shed no more than this share of its start has not fallen at all"),
    ), otherwise_says=_not_memorised, evidence=Evidence)
