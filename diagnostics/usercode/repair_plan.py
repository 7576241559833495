"""From a trace's causes to the changes a repair makes: each cause's own fix read as one argument of one call
(`changes_of`), and every checked fit's causes made at the calls before it (`repair_fits`)."""

from __future__ import annotations

import ast
import re

from diagnostics.i18n import msg
from diagnostics.usercode.repair import Change, Repair, Unrepaired, _name, repair


# The causes whose fix is one argument of one call, and which argument; every other cause says why it is not.
REPAIRABLE = {"model.config": ("num_labels",), "hparams.loss": ("loss",),
              "hparams.lr_sweep": ("learning_rate", "init_lr"), "data.columns": ("columns",),
              "data.batch": ("collate_fn",)}
KINDS = {"num_labels": "num_labels", "loss": "loss", "learning_rate": "learning_rate", "init_lr": "learning_rate",
         "columns": "columns", "collate_fn": "collate_fn"}


def changes_of(causes: list[dict], measured: float | None = None) -> tuple[list[Change], list[Unrepaired]]:
    """A fit's causes (the JSON report's) as changes to the script, read from each cause's own fix (the one its owner
    wrote: the sweep's measured rate, the head the labels need, the loss that reads the outputs, or `compile` with no
    loss at all), and the causes that have none, each with why. `measured`: the rate the fit's sweep measured, which
    the optimizer's own cause (the string 'adam') names once it has (every fix names the sweep's rate)."""
    changes, left = [], []
    for cause in causes:
        owner, fix = cause["owner"], cause.get("fix") or ""
        value = _argument_in(fix, REPAIRABLE[owner]) if owner in REPAIRABLE else None
        # Adam(lr=...) -> Adam(learning_rate=...); the string 'adam' once the sweep has measured the rate its fix names.
        if value is None and (cause.get("cause") == "ignored_keyword" or owner == "hparams.optimizer" and measured):
            value = _argument_in(fix, ("learning_rate",))
        if value is not None:
            changes.append(Change(owner, KINDS[value[0]], value[1]))
            collator = _argument_in(fix, ("collate_fn",)) if owner == "data.columns" else None
            if collator is not None:  # the columns' fix pads the rows too, where the script has no collator
                changes.append(Change(owner, "collate_fn", collator[1]))
        elif owner == "hparams.optimizer":
            left.append(Unrepaired(owner, msg("a rate is written in only once hparams.lr_sweep has measured one, "
                                              "which it did not in this trace: repairing the repaired script, "
                                              "where the sweep can run, writes it")))
        elif owner == "data.label_range":
            left.append(Unrepaired(owner, msg("the labels are wrong in the data itself: drop or relabel the rows it "
                                              "names, or filter them out where the script reads the data")))
        else:
            left.append(Unrepaired(owner, msg("its fix is not one argument of one call: {fix}", fix=fix)))
    return changes, left


def _argument_in(fix: str, names: tuple[str, ...]) -> tuple[str, object] | None:
    """(name, value) of the first keyword argument called one of `names` in the fix's code: a number as a number, any
    other value as its source; a `compile` call without `loss=` is ("loss", None), the loss taken out."""
    try:  # a fix that elides the rest of a call after its keywords ("f(columns=[...], ...)") reads without it
        tree = ast.parse(fix)
    except SyntaxError:
        try:
            fix = re.sub(r",\s*\.\.\.\s*\)", ")", fix)
            tree = ast.parse(fix)
        except SyntaxError:
            return None
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg in names:
            if isinstance(node.value, ast.Constant) and isinstance(node.value.value, (int, float)):
                return node.arg, node.value.value
            return node.arg, ast.get_source_segment(fix, node.value)
    if "loss" in names and any(isinstance(node, ast.Call) and _name(node.func) == "compile" for node in ast.walk(tree)):
        return "loss", None
    return None


def measured_rate(fit: dict) -> float | None:
    """The rate a checked fit's sweep measured and recommends, read from its JSON report as every fix reads it
    (`causes.sweep_rate`); None where the sweep did not run or found none."""
    from diagnostics.core.result import CheckResult
    from diagnostics.walk.causes import sweep_rate

    return sweep_rate({check["id"]: CheckResult.from_dict(check) for check in fit.get("checks") or ()
                       if check["id"] == "hparams.lr_sweep"})


def fit_line(phase: dict) -> int | None:
    """The script's line of a checked fit ("train.py:56")."""
    found = re.search(r":(\d+)$", str(phase.get("at") or ""))
    return int(found.group(1)) if found else None


def repair_fits(source: str, fits: list[dict], keras: str) -> Repair:
    """The script with every checked fit's causes repaired, each at the calls before that fit."""
    edits, left, text = [], [], source
    for fit in fits:
        changes, unrepairable = changes_of(fit.get("causes") or [], measured_rate(fit))
        left += [item for item in unrepairable if item not in left]
        if changes:
            done = repair(text, changes, keras=keras, before_line=fit_line(fit.get("phase") or {}))
            text = done.source
            edits += done.edits
            left += [item for item in done.unrepaired if item not in left]
    return Repair(text, edits, left)
