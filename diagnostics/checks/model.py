"""Model stage: one batch through a freshly loaded model, the NaN-row drilldown, gradients, where NaN starts, memory."""

from __future__ import annotations

import math
import shutil
import subprocess
from typing import Any

import numpy as np

from diagnostics.i18n import N_, Text, msg, msgn
from diagnostics.keras.internals import LAYER_PREFIX, variable_path
from diagnostics.config.run import RunConfig
from diagnostics.core.fixes import RateFix
from diagnostics.config.tasks import GlueTask
from diagnostics.keras.loading import config_size
from diagnostics.keras.measurement import Forward
from diagnostics.core.registry import threshold
from diagnostics.core.result import CheckResult, crossed, judge
from diagnostics.keras.training import StepRecord, effective_rate

STAGE = "model"


# ---------------------------------------------------------------- measuring


def finite_share(array: np.ndarray) -> float:
    return float(np.isfinite(array).mean()) if array.size else 1.0


def stats(array: np.ndarray) -> dict[str, Any]:
    values = np.asarray(array, dtype=np.float64)
    finite = values[np.isfinite(values)]
    return {
        "shape": list(values.shape),
        "min": float(finite.min()) if finite.size else None,
        "max": float(finite.max()) if finite.size else None,
        "non_finite_share": 1.0 - finite_share(values),
    }


def layer_group(name: str) -> str:
    """The block a variable belongs to, for per-layer charts: an encoder layer, the embeddings, a head layer."""
    parts = variable_path(name).split("/")
    for index, part in enumerate(parts):
        if part.startswith(LAYER_PREFIX):
            return "/".join(parts[: index + 1])
    return "/".join(parts[:-1]) or parts[0]


# ---------------------------------------------------------------- model.config


def check_config(model_config, model_class: str, task: GlueTask, tokenizer,
                 present: dict[int, int] | None = None) -> CheckResult:
    """Architecture, num_labels, label names and problem type against the task's labels and the labels present.

    Args:
        present: how many rows of the split hold each label value (None when the split's labels are not known); every
            statement about outputs and their examples is counted from it.
    """
    num_labels = int(model_config.num_labels)
    id2label = {int(k): v for k, v in (model_config.id2label or {}).items()}
    generic = all(name == f"LABEL_{i}" for i, name in id2label.items())
    evidence = {
        "model_class": model_class,
        "architectures": list(model_config.architectures or []),
        "model_type": model_config.model_type,
        "num_labels": num_labels,
        "task_num_labels": task.num_labels,
        "id2label": {str(k): v for k, v in id2label.items()},
        "label2id": dict(model_config.label2id or {}),
        "problem_type": model_config.problem_type,
        "task_labels": list(task.label_names),
        "pad_token": tokenizer.pad_token,
    }
    proper_fix = task.head_fix()
    described = msg("{model_class} ({model_type}) with num_labels={num_labels}", model_class=model_class,
                    model_type=model_config.model_type, num_labels=num_labels)
    own = [str(id2label.get(i)) for i in range(num_labels)]
    # Names are compared as names: the task's names in another order is a wrong order; other words for the classes
    # (Invalid/Valid for CoLA's unacceptable/acceptable) are read in the model's order, which is the ids' own.
    same_words = sorted(name.strip().lower() for name in own) == sorted(name.lower() for name in task.label_names)
    naming = msg("generic names LABEL_0..") if generic else msg("the task's label names") \
        if own == list(task.label_names) else msg("its own names ({names}) for {task}'s ({task_names}), by id",
                                                  names=", ".join(own), task=task.name,
                                                  task_names=", ".join(task.label_names))
    names = ", ".join(task.label_names)
    evidence["labels_present"] = {str(value): count for value, count in sorted(present.items())} \
        if present is not None else None
    regression = bool(task.regression)
    evidence.update(no_pad_token=tokenizer.pad_token is None, regression=regression,
                    wrong_regression_head=regression and (num_labels != 1 or model_config.problem_type
                                                          not in (None, "regression")),
                    head_short=not regression and (model_config.problem_type == "regression"
                                                   or num_labels < task.num_labels),
                    names_out_of_order=not regression and not generic and same_words
                    and [name.strip().lower() for name in own] != [name.lower() for name in task.label_names])
    if not task.known and not regression:  # the head against the labels the data holds, nothing else
        return _config_against_data(described, num_labels, present, task, evidence)
    extra = list(range(task.num_labels, num_labels)) if not regression else []
    evidence["unused_outputs"] = len(extra)
    fed = {output: (present or {}).get(output) for output in extra if (present or {}).get(output)}
    outputs = ", ".join(str(output) for output in extra)
    wider = msg("{described}, but {task} has only {count} labels: output {outputs} learns only from the {rows:,} rows "
                "labelled {outputs}, which are not {task} labels (see data.label_range).", described=described,
                task=task.name, count=task.num_labels, outputs=", ".join(str(output) for output in fed),
                rows=sum(fed.values())) if fed else \
        msgn("{described}, but {task} has only {labels} labels: output {outputs} never gets a positive example (no "
             "row{of_split} is labelled {outputs}).", "{described}, but {task} has only {labels} labels: outputs "
             "{outputs} never get a positive example (no row{of_split} is labelled {outputs}).", len(extra),
             described=described, task=task.name, labels=task.num_labels, outputs=outputs,
             of_split=msg(" of the split") if present is not None else "")
    return judge("model.config", evidence, {
        **_no_pad_token(described),
        "regression_head": (
            msg("{described} and problem_type={problem_type}, but {task} is regression: it needs one output and a mean "
                "squared error loss.", described=described, problem_type=repr(model_config.problem_type),
                task=task.name),
            "TFAutoModelForSequenceClassification.from_pretrained(checkpoint, num_labels=1)"),
        "regression_fits": (
            msg("{described}: one output, as regression on {task} needs.", described=described, task=task.name), None),
        "missing_outputs": (
            msg("{described}, but {task} has {count} labels ({names}): {span} no output, so rows with them get a NaN "
                "loss (GPU) or an error (CPU).", described=described, task=task.name, count=task.num_labels,
                names=names, span=_label_span(num_labels, task.num_labels)),
            proper_fix),
        "max_unused_outputs": (wider, proper_fix),
        "label_order": (
            msg("{described}, but its id2label {id2label} differs from {task}'s label order ({names}): predictions "
                "would be read with the wrong names.", described=described, id2label=id2label, task=task.name,
                names=names),
            proper_fix),
    }, msg("{described} matches {task}'s {count} labels; id2label uses {naming}.", described=described,
           task=task.name, count=task.num_labels, naming=naming))


def _no_pad_token(described) -> dict:
    return {"no_pad_token": (
        msg("{described}, but its tokenizer has no padding token, so batches of more than one row cannot be padded.",
            described=described),
        "tokenizer.pad_token = tokenizer.eos_token\nmodel.config.pad_token_id = tokenizer.pad_token_id")}


def _config_against_data(described, num_labels: int, present: dict[int, int] | None, task: GlueTask,
                         evidence: dict) -> CheckResult:
    """model.config for a task that is not known: the head against the labels the data holds, nothing else (the
    task's own labels and names are not known, so only the padding token and the unused outputs are judged)."""
    evidence.update(head_short=False, names_out_of_order=False)
    unused = [output for output in range(num_labels) if not (present or {}).get(output)]
    evidence["unused_outputs"] = len(unused) if present and max(present) < num_labels else 0
    values = ", ".join(f"{value} x{count:,}" for value, count in sorted((present or {}).items()))
    return judge("model.config", evidence, {
        **_no_pad_token(described),
        "max_unused_outputs": (
            msgn("{described}, but no row of the split is labelled {unused} ({values}): output {unused} never gets a "
                 "positive example.", "{described}, but no row of the split is labelled {unused} ({values}): outputs "
                 "{unused} never get a positive example.", len(unused), described=described,
                 unused=", ".join(map(str, unused)), values=values),
            f"TFAutoModelForSequenceClassification.from_pretrained(checkpoint, num_labels={max(present or [0]) + 1})"),
    }, msg("{described}; the task is not known ({tasks} fit), so the head is compared with the labels present "
           "({values}).", described=described, tasks=task.name, values=values) if present else
        msg("{described}; the task is not known ({tasks} fit) and the labels are not read, so the head is not judged.",
            described=described, tasks=task.name))


def _label_span(first: int, end: int) -> Text:
    return msg("label {first} has", first=first) if end - first == 1 else \
        msg("labels {first} to {last} have", first=first, last=end - 1)


# ---------------------------------------------------------------- model.forward


def out_of_range(labels, num_labels: int, regression: bool) -> int:
    """How many class labels lie outside [0, num_labels): the head has no output for them (0 for regression)."""
    values = np.asarray(labels)
    if regression or not values.size or not np.issubdtype(values.dtype, np.number):
        return 0
    return int(((values < 0) | (values >= num_labels)).sum())


def check_forward(forward: Forward, batch_rows: int, num_labels: int, out_of_range_labels: int = 0) -> CheckResult:
    """The batch runs through the model; logits have the right shape and are finite.

    Args:
        out_of_range_labels: the batch's labels the head has no output for (`out_of_range`).
    """
    if forward.error:
        return judge("model.forward", {"error": forward.error}, {"forward_raises": (
            msg("The forward pass raised {error}.", error=forward.error),
            msg("Read the error above; run model(batch) with run_eagerly=True to see where."))}, "")
    shape = list(forward.logits.shape)
    share = finite_share(forward.logits)
    evidence = {"logits_shape": shape, "finite_share": share, "fit_call_error": forward.fit_call_error,
                "logits": forward.logits.tolist(), "wrong_shape": shape != [batch_rows, num_labels],
                "out_of_range_labels": out_of_range_labels}
    return judge("model.forward", evidence, {
        "wrong_shape": (msg("The logits have shape {shape}, not ({rows}, {num_labels}).", shape=tuple(shape),
                            rows=batch_rows, num_labels=num_labels), None),
        "min_finite_share": (
            msg("{share:.0%} of the logits are NaN or Inf before any training: the weights or inputs are broken (see "
                "model.nan_origin).", share=1 - share),
            msg("Reload the checkpoint; check model.get_weights() for NaN.")),
        "fit_call_raises": (
            msg("The logits {shape} are finite, but calling the model with the labels in the input dict, as model.fit "
                "does, raises {error} (on a GPU this shows as loss: nan instead).", shape=tuple(shape),
                error=forward.fit_call_error),
            msg("Call the model on the batch with its labels, model(batch), and read where it raises.")),
    }, msg("The batch runs through the model eagerly: logits {shape}, all finite.", shape=tuple(shape)))


# ---------------------------------------------------------------- model.nan_rows


def nan_reason(rows: list[dict[str, Any]], num_labels: int, regression: bool) -> str:
    """What the non-finite rows share, measured: "logits" (their logits are already non-finite), "test_split" (every
    label is -1), "beyond_head" (every label is num_labels or more), "out_of_range" (every label lies outside
    [0, num_labels)), "missing_score" (every score is NaN), else "mixed"."""
    labels = [row["label"] for row in rows]
    if rows and all(not all(v is not None and math.isfinite(v) for v in row["logits"]) for row in rows):
        return "logits"
    if not regression and labels and all(label == -1 for label in labels):
        return "test_split"
    if not regression and labels and all(label >= num_labels for label in labels):
        return "beyond_head"
    if not regression and labels and all(label < 0 or label >= num_labels for label in labels):
        return "out_of_range"
    if regression and labels and all(not math.isfinite(float(label)) for label in labels):
        return "missing_score"
    return "mixed"


def nan_cause(rows: list[dict[str, Any]], num_labels: int, regression: bool) -> Text:
    """The cause the non-finite rows share, in one phrase."""
    reason = nan_reason(rows, num_labels, regression)
    labels = [row["label"] for row in rows]
    if reason == "logits":
        return msg("their logits are already non-finite, so the weights or the inputs are the cause (see "
                   "model.nan_origin)")
    if reason == "test_split":
        return msg("every one has label -1: the split has no labels (a GLUE test split)")
    if reason == "beyond_head":
        return msg("every one has a label >= num_labels ({values}) while config.num_labels == {num_labels}",
                   values=", ".join(map(str, sorted(set(labels)))), num_labels=num_labels)
    if reason == "out_of_range":
        return msg("every one has a label outside [0, {num_labels})", num_labels=num_labels)
    if reason == "missing_score":
        return msg("every one has a missing (NaN) score")
    logits_broken = [row for row in rows if not all(v is not None and math.isfinite(v) for v in row["logits"])]
    return msg("no single cause: {broken} have non-finite logits, the rest labels {labels}",
               broken=len(logits_broken), labels=sorted(set(labels)))


def check_nan_rows(losses: np.ndarray, logits: np.ndarray, decoded: list[dict[str, Any]], num_labels: int,
                   regression: bool) -> CheckResult:
    """A per-sample loss for every row; fail when any row's loss is NaN or Inf, naming the shared cause."""
    bad = [i for i, loss in enumerate(losses) if not math.isfinite(loss)]
    series = {"losses": [float(v) if math.isfinite(v) else None for v in losses],
              "labels": [row["label"] for row in decoded]}
    if not bad:
        return judge("model.nan_rows", {**series, "rows": [], "non_finite_rows": 0}, {}, msg(
            "All {rows} rows have a finite loss (from {low:.3f} to {high:.3f}).", rows=len(losses), low=np.min(losses),
            high=np.max(losses)))
    rows = [{
        "position": i,
        "index": decoded[i]["index"],
        "decoded": decoded[i]["decoded"],
        "fields": decoded[i].get("fields") or {},
        **({"raw": decoded[i]["raw"]} if "raw" in decoded[i] else {}),
        "label": decoded[i]["label"],
        "label_name": decoded[i]["label_name"],
        "loss": None,
        "logits": [float(v) if math.isfinite(v) else None for v in np.asarray(logits[i]).ravel()],
    } for i in bad]
    reason = nan_reason(rows, num_labels, regression)
    fix = {"test_split": msg("Use a split with labels ('train' or 'validation'): GLUE's test splits carry label -1."),
           "beyond_head": "TFAutoModelForSequenceClassification.from_pretrained(checkpoint, "
                          f"num_labels={max(row['label'] for row in rows) + 1})",
           "logits": msg("Reload the checkpoint and look at model.nan_origin for the first broken layer.")}.get(
        reason, msg("Drop or fix the rows listed, then rerun."))
    evidence = {**series, "rows": rows, "cause": nan_cause(rows, num_labels, regression), "non_finite_rows": len(bad),
                "labels_cause": reason in ("test_split", "beyond_head", "out_of_range", "missing_score"),
                "logits_cause": reason == "logits"}
    return judge("model.nan_rows", evidence, {
        "max_non_finite_rows": (msg("{bad} of {rows} rows have a non-finite loss, and {cause}.", bad=len(bad),
                                    rows=len(losses), cause=evidence["cause"]), fix)}, "")


# ---------------------------------------------------------------- model.initial_loss


def check_initial_loss(value: float, expected: float, reference: float, loss_name: str, regression: bool, *,
                       warn_relative_gap: float = threshold("model.initial_loss", "warn_relative_gap"),
                       warn_loss_disagreement: float = threshold("model.initial_loss", "warn_loss_disagreement")) -> CheckResult:
    """The fresh model's loss should sit near the random-guess loss ln K (regression: mean of label squared),
    and the configured loss should agree with the loss computed properly on the same logits.

    Args:
        value: mean loss of the batch under the configured loss, finite (the runner's "scored" need: some row has a
            valid label).
        expected: ln K, or mean(label²) for regression.
        reference: the same batch's loss computed properly from the logits (cross-entropy or squared error).
        warn_relative_gap: relative distance from `expected` above which the loss is suspicious.
        warn_loss_disagreement: relative distance between `value` and `reference` above which the
            configured loss reads the model's output as something it is not.
    """
    evidence = {"loss": value, "expected": expected, "reference": reference, "loss_name": loss_name}
    what = msg("mean(label²), the error of a head that outputs about 0") if regression else f"ln(K) = {expected:.3f}"
    gap = abs(value - expected) / expected if expected else 0.0
    disagreement = abs(value - reference) / reference if reference else 0.0
    evidence.update({"relative_gap": gap, "disagreement": disagreement})
    fix = ("model.compile(optimizer=...)  # the model's internal loss; or loss=SparseCategoricalCrossentropy(from_logits=True)"
           if not regression else "model.compile(optimizer=...)  # the internal mean squared error")
    return judge("model.initial_loss", evidence, {
        "warn_loss_disagreement": (
            msg("The configured loss {loss} gives {value:.3f} on the untrained model, but cross-entropy computed from "
                "its logits gives {reference:.3f} ({what}): the loss treats the logits as probabilities "
                "(from_logits=False).", loss=repr(loss_name), value=value, reference=reference, what=what), fix),
        "warn_relative_gap": (
            msg("The untrained model's loss is {value:.3f}, {gap:.0%} away from {what}: the head may not fit the task, "
                "the checkpoint may already be trained on other labels, or a custom loss has a bug.", value=value,
                gap=gap, what=what), fix),
    }, msg("The untrained model's loss is {value:.3f}, within {gap:.0%} of {what}, as a fresh head should be.",
           value=value, gap=gap, what=what),
        thresholds={"warn_loss_disagreement": warn_loss_disagreement, "warn_relative_gap": warn_relative_gap})


# ---------------------------------------------------------------- model.gradients


def gradient_figures(record: StepRecord) -> dict[str, Any]:
    """Global gradient norm, per-layer norms, and the variables with no or non-finite gradients."""
    unused = set(record.unused)
    gradients = [(name, grad) for name, grad in record.gradients if name not in unused]
    missing = [variable_path(name) for name, grad in gradients if grad is None]
    broken = [variable_path(name) for name, grad in record.gradients if grad is not None and not grad.finite]
    groups: dict[str, float] = {}
    for name, grad in gradients:
        if grad is not None:
            groups[layer_group(name)] = groups.get(layer_group(name), 0.0) + grad.sum_squares
    norms = [{"layer": layer, "norm": math.sqrt(total) if math.isfinite(total) else None} for layer, total in groups.items()]
    total = sum(v for v in groups.values())
    sizes = dict(zip((name for name, _ in record.gradients), record.sizes or [0] * len(record.gradients)))
    sizes = {name: size for name, size in sizes.items() if name not in unused}
    zero = [name for name, grad in gradients if grad is not None and grad.finite and grad.zero]
    dead = [name for name, grad in gradients if grad is None or (grad.finite and grad.zero)]
    weights = sum(sizes.values())
    return {
        "variables": len(gradients),
        "unused_by_output": [variable_path(name) for name in record.unused],
        "no_gradient": missing,
        "zero_gradient": [variable_path(name) for name in zero],
        "dead_share": sum(sizes[name] for name in dead) / weights if weights else None,
        "non_finite": broken,
        "global_norm": math.sqrt(total) if math.isfinite(total) else None,
        "layer_norms": norms,
        "loss": record.loss,
        "error": record.error,
    }


LABELS_LOSS_MISMATCH = N_(
    "This is the course's \"No gradients provided\" error: the loss given to compile() never sees the model's "
    "output and labels together, e.g. labels inside the input dict with compile(loss=...) on a Transformers "
    "version that does not move them out, or no labels where the internal loss needs them."
)


def check_gradients(figures: dict[str, Any], config: RunConfig) -> CheckResult:
    """One real train step with the configured loss and label placement: every trainable variable gets a finite gradient."""
    no_gradients = "No gradients provided" in (figures["error"] or "")
    zero, total = figures["zero_gradient"], figures["variables"]
    loss_cause = config.loss != "internal"
    placement = msg("inside the input dict") if config.labels_in == "inputs" else msg("separate (x, y)")
    return judge("model.gradients", figures, {
        "step_raises": (
            msg("model.fit's train step raised {error}. {mismatch}", error=figures["error"],
                mismatch=msg(LABELS_LOSS_MISMATCH)) if no_gradients else
            msg("model.fit's train step raised {error}.", error=figures["error"]),
            msg("model.compile(optimizer=optimizer)  # no loss: the model uses the labels in the input dict")
            if no_gradients else msg("Run one model.train_on_batch(...) on this batch with run_eagerly=True to see "
                                     "where it raises.")),
        "no_gradient": lambda: (
            msg("{count} of {total} trainable variables get no gradient ({names}): they are not connected to the "
                "loss. {mismatch}", count=len(figures["no_gradient"]), total=total,
                names=", ".join(figures["no_gradient"][:5]) + (", ..." if len(figures["no_gradient"]) > 5 else ""),
                mismatch=msg(LABELS_LOSS_MISMATCH)),
            msg("Check that the loss uses the model's output; freeze unused layers with layer.trainable = False.")),
        "zero_gradient": lambda: (
            msg("Every gradient is exactly zero (global norm 0, all {total} trainable variables) with loss {loss}: the "
                "loss does not change with any weight, so no step can train the model.", total=total,
                loss=repr(config.loss)) if len(zero) == total else
            msg("{count} of {total} trainable variables get an all-zero gradient ({names}; {share:.1%} of the "
                "weights): training cannot change them.", count=len(zero), total=total,
                names=", ".join(zero[:5]) + (", ..." if len(zero) > 5 else ""), share=figures["dead_share"] or 0.0),
            msg("The loss given to compile() stops the gradient (see hparams.loss): {code}",
                code="model.compile(optimizer=optimizer)  # no loss=: the model's own loss") if loss_cause else
            msg("Check what stands between these weights and the loss (a stop_gradient, a saturated activation, an "
                "output the loss does not read).")),
        "non_finite_gradient": lambda: (
            msg("{count} of {total} variables get a NaN or Inf gradient, first {first}.",
                count=len(figures["non_finite"]), total=total, first=figures["non_finite"][0]),
            msg("Fix the non-finite loss first (model.nan_rows); then lower the learning rate or clip: {code}",
                code="Adam(..., global_clipnorm=1.0)")),
    }, lambda: msg("All {count} trainable variables get a finite gradient (global norm {norm:.3g}) with loss {loss} "
                   "and labels {placement}.", count=total, norm=figures["global_norm"], loss=repr(config.loss),
                   placement=placement) + _unused_text(figures.get("unused_by_output") or []))


def _unused_text(unused: list[str]) -> Any:
    """What a step says of the variables the model's output never uses (measured: no gradient of the output)."""
    if not unused:
        return ""
    return " " + msgn("{count} more variable ({names}) is not used by the model's output at all, so it gets no "
                      "gradient whatever the loss (Keras warns of it; it is the architecture, not a fault).",
                      "{count} more variables ({names}) are not used by the model's output at all, so they get no "
                      "gradient whatever the loss (Keras warns of them; it is the architecture, not a fault).",
                      len(unused), names=", ".join(unused[:4]) + (", ..." if len(unused) > 4 else ""))


# ---------------------------------------------------------------- model.weights_after_step


def check_weights_after_step(record: StepRecord, broken: list[str], learning_rate_text: str,
                             moved: dict[str, Any] | None = None, *, stale: tuple[int, int, int] | None = None
                             ) -> CheckResult:
    """After one optimizer step on a copy (one that ran: the runner's "stepped" need), every weight is still finite
    and the step moved weights; and the traced fit's own train step trains what the layers mark trainable.

    Args:
        moved: `training.moved_variables` of the step (None when it was not measured).
        stale: `RunConfig.stale_train_step`: the fit reuses a train step built before `trainable` changed.
    """
    evidence = {"non_finite": broken, "loss": record.loss, "rate_at_step": record.rate,
                "stale_train_step": stale is not None,
                **({"train_step_built_at_fit": stale[0], "train_step_trains": stale[1], "marked_trainable": stale[2]}
                   if stale else {}),
                **({"moved": moved["moved"], "unmoved": [variable_path(name) for name in moved["unmoved"]][:50],
                    "max_change": moved["max_change"]} if moved else {})}
    if moved:
        evidence["variables"] = moved["variables"]
    moved_text = msg(" and moved {moved} of {count} trainable variables", moved=moved["moved"],
                     count=moved["variables"]) if moved else ""
    return judge("model.weights_after_step", evidence, {
        "stale_train_step": lambda: (
            msg("This fit reuses the train step Keras built at fit {fit}, which updates {trained:,} weights, while "
                "the layers now mark {marked:,} trainable: trainable was changed after that fit without compiling "
                "again, so the weights it unfroze stay as they are.", fit=stale[0], trained=stale[1], marked=stale[2]),
            "model.compile(optimizer=..., loss=...)  # again after changing trainable, before this fit"),
        "non_finite_weights": (
            msg("After one optimizer step ({rate}), {count} weights hold NaN or Inf, first: {first}.",
                rate=learning_rate_text, count=len(broken), first=", ".join(broken[:3])),
            msg("Lower the learning rate (hparams.lr_sweep measures which rates work) and fix non-finite losses "
                "(model.nan_rows).")),
        "warmup_step": (
            msg("After one optimizer step ({rate}) on a copy, every weight is finite; the schedule's rate at step 0 is "
                "0 (warmup starts there), so this step moves nothing by design.", rate=learning_rate_text), None),
        "min_moved": lambda: (
            msg("One optimizer step ({rate}) on a copy moved none of the {count} trainable variables (the largest "
                "change is {change:.2g}): training leaves the model as it is.", rate=learning_rate_text,
                count=moved["variables"], change=moved["max_change"]),
            msg("Make the gradients flow first (see model.gradients).")),
    }, msg("After one optimizer step ({rate}) on a copy, every weight is finite{moved}.", rate=learning_rate_text,
           moved=moved_text))


# ---------------------------------------------------------------- model.nan_origin


def first_non_finite(trace: list[tuple[str, np.ndarray]], input_ids) -> dict[str, Any] | None:
    """The first stage of the forward trace whose output holds NaN or Inf, with its input and output statistics."""
    previous_name, previous = "input_ids", np.asarray(input_ids)
    for name, output in trace:
        if finite_share(output) < 1.0:
            return {"layer": name, "input_from": previous_name, "input": stats(previous), "output": stats(output)}
        previous_name, previous = name, output
    return None


def check_nan_origin(fresh: Forward, stepped: Forward | None, input_ids, broken_fresh: list[str],
                     broken_stepped: list[str], any_nan_loss: bool) -> CheckResult:
    """Where NaN starts: the first layer (in forward order) whose output is non-finite, on this one batch; a skip
    saying why there is nothing to trace when no layer output is."""
    found, broken = {}, []
    for when, forward, broken in ((msg("in the freshly loaded model"), fresh, broken_fresh),
                                  (msg("after one optimizer step"), stepped, broken_stepped)):
        found = first_non_finite(forward.trace, input_ids) if forward is not None and forward.trace else None
        if found:
            found.update({"when": when, "after_step": forward is stepped, "non_finite_weights": broken[:20]})
            break
    return judge("model.nan_origin", found or {}, {"non_finite_layer": lambda: (
        msg("NaN/Inf first appears {when} at the output of {layer} ({output:.0%} non-finite; its input from {source} "
            "has {input:.0%}){weights}.", when=found["when"], layer=found["layer"],
            output=found["output"]["non_finite_share"], source=found["input_from"],
            input=found["input"]["non_finite_share"],
            weights=msg("; non-finite weights: {weights}", weights=", ".join(broken[:3])) if broken else ""),
        msg("Reload the checkpoint (weights are broken) or lower the learning rate (the step broke them)."))},
        msg("Every layer's output is finite: the non-finite loss comes from the labels, not the network (see "
            "model.nan_rows).") if any_nan_loss else
        msg("Nothing to trace: every layer output, loss, gradient and weight is finite."))


# ---------------------------------------------------------------- model.memory




def gpu_memory_bytes() -> int | None:
    """Total memory of the first GPU, when one exists and nvidia-smi can say."""
    import tensorflow as tf

    if not tf.config.list_physical_devices("GPU") or not shutil.which("nvidia-smi"):
        return None
    try:
        output = subprocess.run(["nvidia-smi", "--query-gpu=memory.total", "--format=csv,noheader,nounits"],
                                capture_output=True, text=True, timeout=10).stdout
        return int(output.split()[0]) * 1024 * 1024
    except Exception:
        return None


def memory_figures(param_count: int, model_config, batch_size: int, sequence_length: int) -> dict[str, Any]:
    """Memory training needs: float32 weights, gradients and Adam's two slots, plus an activation estimate.

    Activations per layer follow Korthikanti et al. (2022): s*b*h*(34 + 5*a*s/h) bytes in 16-bit,
    doubled for float32.
    """
    import psutil

    hidden, layers, heads = config_size(model_config)
    state = param_count * 4 * 4
    activations = 0
    if hidden:
        activations = int(2 * layers * sequence_length * batch_size * hidden * (34 + 5 * heads * sequence_length / hidden))
    return {
        "parameters": int(param_count),
        "weights_bytes": param_count * 4,
        "training_state_bytes": state,
        "activation_bytes_estimate": activations,
        "total_bytes": state + activations,
        "available_ram_bytes": int(psutil.virtual_memory().available),
        "gpu_bytes": gpu_memory_bytes(),
        "batch_size": batch_size,
        "sequence_length": sequence_length,
    }


# distilbert-base-cased's size: suggested as a smaller checkpoint only to a model larger than it.
SMALLER_CHECKPOINT_PARAMETERS = 66_000_000


def _gib(count: float) -> str:
    return f"{count / 2**30:.2f} GiB" if count >= 2**28 else f"{count / 2**20:.1f} MiB"


def check_memory(figures: dict[str, Any]) -> CheckResult:
    """Whether training fits in the memory of the device it would run on."""
    device = "GPU" if figures["gpu_bytes"] else "RAM"
    room = figures["gpu_bytes"] or figures["available_ram_bytes"]
    summary = msg("{parameters:,} parameters: training needs about {total} (weights, gradients and Adam's two slots "
                  "{state}, activations for batch {batch} x max_length {length} about {activations}) against {room} "
                  "of {device}.", parameters=figures["parameters"], total=_gib(figures["total_bytes"]),
                  state=_gib(figures["training_state_bytes"]), batch=figures["batch_size"],
                  length=figures["sequence_length"], activations=_gib(figures["activation_bytes_estimate"]),
                  room=_gib(room), device=device)
    configured = figures.get("configured_batch_size") or figures["batch_size"]
    if configured > figures["batch_size"]:
        summary = msg("{summary} The batch size is {configured:,}, but the split has only {rows:,} rows, so a batch "
                      "holds {rows:,}.", summary=summary, configured=configured, rows=figures["batch_size"])
    smaller = figures["parameters"] > SMALLER_CHECKPOINT_PARAMETERS
    return judge("model.memory", {**figures, "room_bytes": room}, {"max_memory_share": (
        msg("{summary} It will not fit.", summary=summary),
        msg("Halve the batch size, shorten max_length, or pick a smaller checkpoint such as distilbert-base-cased.")
        if smaller else msg("Halve the batch size or shorten max_length."))}, summary)


# ---------------------------------------------------------------- model.divergence (during the user's own fit)


def divergence_seen(losses: list[float], weight_norms: list[float], chance_loss: float | None, *,
                    rise_factor: float = threshold("model.divergence", "rise_factor"),
                    chance_multiple: float = threshold("model.divergence", "chance_multiple"),
                    window: float = threshold("model.divergence", "window"),
                    weight_growth: float = threshold("model.divergence", "weight_growth"),
                    stalled_share: float = threshold("model.divergence", "stalled_share")) -> dict[str, Any] | None:
    """Whether a run diverges, judged on its per-step losses and weight norms, and by which rule.

    The loss rule: the median loss of the last `window` steps is above `rise_factor` times the first step's loss
    (Lightning's range test stops at 4x) and, for a classifier, above `chance_multiple` times ln K, a loss worse
    than guessing. The weights rule: the weights' global norm grew past `weight_growth` times its start while the
    loss is no lower than at the start (Adam's bounded steps can blow the weights up while the loss stays finite,
    near ln K). A median, so one noisy step never counts.

    Args:
        losses: each step's own loss from the run's first step (all finite).
        weight_norms: the trainable weights' global norm before the first step, then after each step.
        chance_loss: ln K for a classifier; None for regression.

    Returns:
        None while the run looks sane (or has too few steps to say); else what the rule saw: "rule" ("loss" or
        "weights"), "start", "recent", "limit", "growth", and the ratios the registry's rules read ("loss_rise":
        recent / start, "chance_rise": recent / ln K, None for regression).
    """
    seen = divergence_measured(losses, weight_norms, chance_loss, window=window, rise_factor=rise_factor,
                               chance_multiple=chance_multiple)
    if seen is None:
        return None
    rule = next(iter(crossed("model.divergence", seen, {
        "rise_factor": rise_factor, "chance_multiple": chance_multiple, "window": window,
        "weight_growth": weight_growth, "stalled_share": stalled_share})), None)
    return {"rule": {"rise_factor": "loss", "weight_growth": "weights"}[rule], **seen} if rule else None


def divergence_measured(losses: list[float], weight_norms: list[float], chance_loss: float | None, *, window: float,
                        rise_factor: float, chance_multiple: float) -> dict[str, float] | None:
    """The figures model.divergence's rules judge: the first step's loss, the median of the last `window` steps,
    their ratio, the ratio to ln K, the loss limit they give and the weights' growth; None with too few steps."""
    window = int(window)
    if len(losses) <= window or not weight_norms:
        return None
    start, recent = float(losses[0]), float(np.median(losses[-window:]))
    limit = rise_factor * start
    if chance_loss is not None:
        limit = max(limit, chance_multiple * chance_loss)
    return {"start": start, "recent": recent, "limit": limit,
            "growth": float(weight_norms[-1] / weight_norms[0]) if weight_norms[0] > 0 else 1.0,
            "loss_rise": recent / start if start > 0 else math.inf if recent > 0 else 1.0,
            "chance_rise": recent / chance_loss if chance_loss else None}


def _times(ratio: float) -> str:
    """A multiple for a sentence: "4.2", "4481", or "3.9e+29" for a run whose loss left float range behind."""
    if not math.isfinite(ratio):
        return "∞"
    return f"{ratio:.1f}" if ratio < 10 else f"{ratio:.0f}" if ratio < 1e6 else f"{ratio:.1e}"


def rate_to_suggest(rate: float | None, usual: float) -> float:
    """A rate to try after a run diverged: the checkpoint's usual rate, or a tenth of the rate that diverged when
    that was already at or below it."""
    return usual if rate is None or rate > usual else rate / 10


def check_divergence(figures: dict[str, Any], *,
                     rise_factor: float = threshold("model.divergence", "rise_factor"),
                     chance_multiple: float = threshold("model.divergence", "chance_multiple"),
                     window: float = threshold("model.divergence", "window"),
                     weight_growth: float = threshold("model.divergence", "weight_growth"),
                     stalled_share: float = threshold("model.divergence", "stalled_share")) -> CheckResult:
    """A run watched during the user's own fit: fail when it diverges, saying whether the rows or the weights
    make the loss high.

    Args:
        figures: "losses" (each step's own loss), "weight_norms" (before the first step, then after each),
            "chance_loss" (ln K, None for regression), "learning_rate" (None when it could not be read),
            "usual_rate" (the checkpoint's), and once a divergence is seen "rows_loss_at_start" (the mean loss of
            the batch's rows on the weights the run started from; None when they could not be examined),
            "weights_moved" (|W - W0| / |W0|) and "rows".
    """
    thresholds = {"rise_factor": rise_factor, "chance_multiple": chance_multiple, "window": window,
                  "weight_growth": weight_growth, "stalled_share": stalled_share}
    seen = divergence_seen(figures["losses"], figures["weight_norms"], figures["chance_loss"], **thresholds)
    steps = len(figures["losses"])
    evidence = {**figures, "steps": steps, "seen": seen, **{key: (seen or {}).get(key) for key in
                                                            ("loss_rise", "chance_rise", "growth")}}
    if seen is None:
        return judge("model.divergence", evidence, {}, msg(
            "Over {steps} steps the loss and the weights' size stayed bounded: no sign of divergence.", steps=steps),
            thresholds=thresholds)
    rate = figures.get("learning_rate")
    suggested = rate_to_suggest(rate, figures["usual_rate"])
    evidence["suggested_rate"] = suggested
    moved = figures.get("weights_moved")
    values = {"step": steps, "recent": seen["recent"], "start": seen["start"],
              "growth": _times(seen["growth"]), "ratio": _times(seen["recent"] / seen["start"] if seen["start"] > 0
                                                                 else math.inf),
              "moved": ("?" if moved is None or not math.isfinite(moved) else
                        msg("{share:.0%} of their size", share=moved) if moved < 1 else
                        msg("{times}x their size", times=_times(moved))),
              "rate": f"{rate:g}" if rate is not None else "?"}
    at_start = figures.get("rows_loss_at_start")
    values["rows"] = f"{at_start:.3g}" if at_start is not None else "?"
    rate_fix = RateFix(suggested, N_("{code}  # the checkpoint's usual rate; or the sweep's: python -m diagnostics run "
                                      "--stages hparams") if suggested == figures["usual_rate"] else
                       N_("{code}  # a tenth of the rate; or the sweep's: python -m diagnostics run --stages hparams"))
    # Either rule is a divergence; which one, and the rows' own loss on the starting weights, say what drove it.
    if at_start is not None and math.isfinite(at_start) and at_start > seen["limit"]:
        cause = (msg("At step {step} the loss is {recent:.3g}, {ratio}x its start ({start:.3g}), but the same rows "
                     "already give {rows} on the weights training started from: these rows, not the training, make "
                     "the loss high.", **values),
                 msg("Drop or fix the rows listed (a label far outside the task's range, or broken text), then rerun."))
        says = {"rise_factor": cause, "weight_growth": cause}
    else:
        says = {"rise_factor": (msg(
            "By step {step} the loss rose to {recent:.3g}, {ratio}x its start ({start:.3g}), while the rows "
            "themselves give {rows} on the weights training started from: the weights diverged (their norm grew "
            "{growth}x and they moved {moved}), so the learning rate {rate} is too high for this model.", **values),
            rate_fix),
            "weight_growth": (msg(
                "By step {step} the weights' norm grew {growth}x (they moved {moved}) while the loss, {recent:.3g}, is "
                "no lower than at the start ({start:.3g}): the weights diverged and the model stopped learning, so "
                "the learning rate {rate} is too high for this model.", **values), rate_fix)}
    return judge("model.divergence", evidence, says, "", thresholds=thresholds)


# ---------------------------------------------------------------- the stage


def learning_rate_text(config: RunConfig) -> Text:
    given = 'optimizer "adam"' if config.optimizer == "adam" else config.optimizer
    return msg("{optimizer}, learning rate {rate:g}", optimizer=given, rate=effective_rate(config))


def not_a_classifier(checkpoint: str, message: str) -> CheckResult:
    """model.config when the checkpoint has no sequence-classification model: a clear fail (the runner skips the
    Model checks that need the model, naming this one)."""
    return judge("model.config", {"error": message}, {"not_a_classifier": (
        msg("{checkpoint} cannot be loaded as a TensorFlow sequence classifier: {message}", checkpoint=checkpoint,
            message=message),
        'TFAutoModelForSequenceClassification.from_pretrained("distilbert-base-uncased", num_labels=...)  '
        "# an encoder checkpoint with a classification head class")}, "")


def labels_present(labels: np.ndarray | None, task: GlueTask) -> dict[int, int] | None:
    """How many rows hold each label value of the split (for a classification task with numeric labels)."""
    if labels is None or task.regression or not np.issubdtype(np.asarray(labels).dtype, np.number):
        return None
    values, counts = np.unique(np.asarray(labels)[np.asarray(labels) >= 0], return_counts=True)
    return {int(value): int(count) for value, count in zip(values, counts)}


def expected_loss(labels: np.ndarray, task: GlueTask, num_labels: int) -> float:
    """The untrained loss to expect: ln K for a classifier, mean(label²) for a regression head that outputs about 0."""
    if task.regression:
        return float(np.mean(labels[np.isfinite(labels.astype(float))].astype(float) ** 2))
    return math.log(num_labels)
