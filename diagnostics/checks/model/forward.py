"""model.forward: one batch through the model: logits of the right shape, all finite."""

from __future__ import annotations

import re
from typing import TypedDict

from diagnostics.checks.common import num_labels_of, out_of_range_of
from diagnostics.checks.model.common import ON_BATCH, finite_share
from diagnostics.core.check import Check, Condition
from diagnostics.core.context import RunContext
from diagnostics.core.result import CheckResult, judge
from diagnostics.core.rules import AtMost, Holds
from diagnostics.i18n import N_, msg
from diagnostics.keras.measurement import Forward


def check_forward(forward: Forward, batch_rows: int, num_labels: int, out_of_range_labels: int = 0) -> CheckResult:
    """The batch runs through the model; logits have the right shape and are finite.

    Args:
        out_of_range_labels: the batch's labels the head has no output for (`out_of_range`).
    """
    if forward.error:
        refused = re.search(r"unexpected keyword argument '(\w+)'", forward.error)
        return judge(CHECK, {"error": forward.error, **({"refused_input": refused.group(1)} if refused else {})})
    shape = list(forward.logits.shape)
    evidence = {"logits_shape": shape, "finite_share": finite_share(forward.logits),
                "fit_call_error": forward.fit_call_error, "logits": forward.logits.tolist(),
                "wrong_shape": shape != [batch_rows, num_labels], "out_of_range_labels": out_of_range_labels}
    return judge(CHECK, evidence, batch_rows=batch_rows, num_labels=num_labels)


def measure(run: RunContext) -> CheckResult:
    return check_forward(run.forward, len(run.first_labels), num_labels_of(run), out_of_range_of(run))


class Evidence(TypedDict, total=False):
    """What model.forward puts in its evidence (the charts, tables and JSON report read it)."""

    finite_share: float
    fit_call_error: str
    logits: list
    logits_shape: list[int]
    error: str
    refused_input: str  # an input of the batch the model's call takes no argument for (DistilBERT's token_type_ids)
    wrong_shape: bool  # the logits are not (rows, num_labels)
    out_of_range_labels: int  # labels of the batch outside [0, num_labels) (the fit call raises on them on CPU)


CHECK = Check("model.forward", N_("one batch through the model: logits of the right shape, all finite"),
              requires=ON_BATCH, measure=measure, conditions=(
    Condition("refused_input", None, "fail when the batch holds an input the model's call does not take",
              Holds("refused_input"), status="fail", says=lambda e, f: (
                  msg("The batch holds {name}, which the model does not take: its call refuses it ({error}).{why}",
                      name=e["refused_input"], error=e["error"],
                      why=msg(" DistilBERT takes no token_type_ids, which a BERT tokenizer or "
                              "return_token_type_ids=True adds (huggingface/transformers#2702).")
                      if e["refused_input"] == "token_type_ids" else ""),
                  f"tokenizer(..., return_{e['refused_input']}=False)  # or leave {e['refused_input']} out of "
                  f"to_tf_dataset(columns=[...]) and the input dict" if e["refused_input"] == "token_type_ids" else
                  msg("Leave {name} out of the model's inputs (to_tf_dataset(columns=[...]), the input dict).",
                      name=e["refused_input"]))),
    Condition("forward_raises", None, "fail when the forward pass raises", Holds("error"), status="fail",
              says=lambda e, f: (
                  msg("The forward pass raised {error}.", error=e["error"]),
                  msg("Read the error above; run model(batch) with run_eagerly=True to see where."))),
    Condition("wrong_shape", None, "fail when the logits are not (rows, num_labels)", Holds("wrong_shape"),
              status="fail", says=lambda e, f: (
                  msg("The logits have shape {shape}, not ({rows}, {num_labels}).", shape=tuple(e["logits_shape"]),
                      rows=f.batch_rows, num_labels=f.num_labels), None)),
    Condition("min_finite_share", 1.0, "fail when less than this share of the logits is finite",
              AtMost("finite_share", below=True), status="fail", says=lambda e, f: (
                  msg("{share:.0%} of the logits are NaN or Inf before any training: the weights or inputs are broken "
                      "(see model.nan_origin).", share=1 - e["finite_share"]),
                  msg("Reload the checkpoint; check model.get_weights() for NaN."))),
    Condition("fit_call_raises", None, "fail when calling the model with the labels in the input dict, as fit does, "
                                       "raises", Holds("fit_call_error"), status="fail", says=lambda e, f: (
                  msg("The logits {shape} are finite, but calling the model with the labels in the input dict, as "
                      "model.fit does, raises {error} (on a GPU this shows as loss: nan instead).",
                      shape=tuple(e["logits_shape"]), error=e["fit_call_error"]),
                  msg("Call the model on the batch with its labels, model(batch), and read where it raises.")))),
              otherwise_says=lambda e, f: msg("The batch runs through the model eagerly: logits {shape}, all finite.",
                                              shape=tuple(e["logits_shape"])),
              evidence=Evidence)
