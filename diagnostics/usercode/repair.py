"""Rewrites a user's training script where a cause's fix says, and nowhere else: the optimizer's learning rate, the
classifier's `num_labels`, the loss given to `compile`. Each edit replaces or adds one argument of one call that
Python's own parser located (`ast`, whose nodes carry their exact start and end), so every other character of the
script, its comments, formatting and names included, stays as the user wrote it.

A change that has no place it can be made says why (`Unrepaired`), and nothing is guessed: a rate given through a
variable is changed where that variable gets a number (an argparse default, an assignment), or not at all."""

from __future__ import annotations

import ast
import difflib
from dataclasses import dataclass
from typing import Iterable

OPTIMIZERS = ("Adam", "AdamW", "SGD", "RMSprop", "Adagrad", "Adamax", "Nadam", "Adafactor", "AdamWeightDecay")
SCHEDULES = {"PolynomialDecay": "initial_learning_rate", "ExponentialDecay": "initial_learning_rate",
             "CosineDecay": "initial_learning_rate", "InverseTimeDecay": "initial_learning_rate",
             "WarmUp": "initial_learning_rate"}
RATE_NAMES = ("learning_rate", "lr", "init_lr")


@dataclass(frozen=True)
class Change:
    """What a cause's fix changes, whatever the script: `kind` is "learning_rate" (a float), "num_labels" (an int)
    or "loss" (the loss's code, in the script's own Keras name); `owner` is the check that holds the cause."""

    owner: str
    kind: str
    value: object


@dataclass(frozen=True)
class Edit:
    """One edit made: the script's line, the source it replaced (empty where an argument was added) and the new."""

    owner: str
    line: int
    before: str
    after: str


@dataclass(frozen=True)
class Unrepaired:
    """A change with no place in the script to make it, and why."""

    owner: str
    reason: str


@dataclass(frozen=True)
class Repair:
    source: str
    edits: list[Edit]
    unrepaired: list[Unrepaired]

    def diff(self, original: str, name: str) -> str:
        """A unified diff of the original against the repaired source."""
        return "".join(difflib.unified_diff(original.splitlines(keepends=True), self.source.splitlines(keepends=True),
                                            fromfile=name, tofile=name.removesuffix(".py") + ".repaired.py"))


def repair(source: str, changes: Iterable[Change], *, keras: str = "tf_keras", before_line: int | None = None
           ) -> Repair:
    """`source` with each change made at its place: the last such call before `before_line` (the fit the trace
    checked), else the last in the script. `keras` is how the script names Keras, for an object written in."""
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))
    spans: list[tuple[int, int, str, str, int]] = []  # (start, end, new text, owner, line)
    unrepaired = []
    calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call)]
    calls.sort(key=lambda node: (node.lineno, node.col_offset))
    if before_line is not None:
        before = [node for node in calls if node.lineno <= before_line]
        calls = before or calls

    def at(line: int, column: int) -> int:
        return offsets[line - 1] + len(lines[line - 1].encode("utf-8")[:column].decode("utf-8", errors="replace"))

    def replace(node: ast.AST, text: str, owner: str) -> None:
        spans.append((at(node.lineno, node.col_offset), at(node.end_lineno, node.end_col_offset), text, owner,
                      node.lineno))

    def add_keyword(call: ast.Call, name: str, text: str, owner: str) -> None:
        end = at(call.end_lineno, call.end_col_offset) - 1  # the closing parenthesis
        arguments = [*call.args, *(keyword.value for keyword in call.keywords)]
        if not arguments:
            spans.append((end, end, f"{name}={text}", owner, call.end_lineno))
            return
        last = max(arguments, key=lambda node: (node.end_lineno, node.end_col_offset))
        after = at(last.end_lineno, last.end_col_offset)
        comma = source.find(",", after, end)
        if comma >= 0:  # a trailing comma: the new argument goes after it, with one of its own
            spans.append((comma + 1, comma + 1, f" {name}={text},", owner, last.end_lineno))
        else:
            spans.append((after, after, f", {name}={text}", owner, last.end_lineno))

    for change in changes:
        handler = {"learning_rate": _rate, "num_labels": _num_labels, "loss": _loss}.get(change.kind)
        if handler is None:
            unrepaired.append(Unrepaired(change.owner, f"no rewrite is known for {change.kind}"))
            continue
        reason = handler(change, calls, tree, keras, replace, add_keyword)
        if reason:
            unrepaired.append(Unrepaired(change.owner, reason))
    text = source
    edits = []
    for start, end, new, owner, line in sorted(spans, reverse=True):
        edits.append(Edit(owner, line, source[start:end], new))
        text = text[:start] + new + text[end:]
    return Repair(text, sorted(edits, key=lambda edit: edit.line), unrepaired)


def _name(func: ast.AST) -> str:
    """A call's function name, its last part (`keras.optimizers.Adam` -> Adam)."""
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else ""


def _keyword(call: ast.Call, *names: str) -> ast.keyword | None:
    return next((keyword for keyword in call.keywords if keyword.arg in names), None)


def _number(value: float) -> str:
    return f"{value:.0e}" if value < 1e-2 else f"{value:g}"


def _rate(change, calls, tree, keras, replace, add_keyword) -> str | None:
    """The rate where the script gives it: a schedule's or create_optimizer's initial rate when it builds one (what
    the optimizer then reads), else the optimizer's own, else compile's optimizer string written as an object."""
    rate = _number(float(change.value))
    named = [(call, _name(call.func)) for call in reversed(calls)]
    for call, name in named:
        if name == "create_optimizer" or name in SCHEDULES:
            keyword = _keyword(call, "init_lr" if name == "create_optimizer" else SCHEDULES[name])
            value = keyword.value if keyword is not None else (call.args[0] if call.args else None)
            if value is None:
                add_keyword(call, "init_lr" if name == "create_optimizer" else SCHEDULES[name], rate, change.owner)
                return None
            return _set_value(value, rate, tree, replace, change.owner)
    for call, name in named:
        if name in OPTIMIZERS:
            keyword = _keyword(call, *RATE_NAMES)
            value = keyword.value if keyword is not None else (call.args[0] if call.args else None)
            if value is None:
                add_keyword(call, "learning_rate", rate, change.owner)
                return None
            return _set_value(value, rate, tree, replace, change.owner)
    for call, name in named:
        keyword = _keyword(call, "optimizer") if name == "compile" else None
        if keyword is not None and isinstance(keyword.value, ast.Constant) and isinstance(keyword.value.value, str):
            optimizer = {"adam": "Adam", "adamw": "AdamW", "sgd": "SGD", "rmsprop": "RMSprop"}.get(
                keyword.value.value.lower())
            if optimizer is None:
                return f"the optimizer {keyword.value.value!r} is a string naming no Keras class known here"
            replace(keyword.value, f"{keras}.optimizers.{optimizer}(learning_rate={rate})", change.owner)
            return None
    return "no optimizer is built in the script (a Keras optimizer, a schedule, create_optimizer or compile's string)"


def _set_value(value: ast.AST, text: str, tree: ast.Module, replace, owner: str) -> str | None:
    """Write `text` where `value` gets its number: the value itself when it is one, else the one place a name it reads
    is given a number (an assignment, or an argparse option's default)."""
    if isinstance(value, ast.Constant) and isinstance(value.value, (int, float)):
        replace(value, text, owner)
        return None
    source = _number_source(value, tree)
    if source is None:
        return f"the rate is computed ({ast.unparse(value)}), with no one number in the script to change"
    replace(source, text, owner)
    return None


def _number_source(value: ast.AST, tree: ast.Module) -> ast.AST | None:
    """The number a name or an `args.name` reads, when exactly one place in the script gives it."""
    if isinstance(value, ast.Name):
        given = [node.value for node in ast.walk(tree) if isinstance(node, ast.Assign) and any(
            isinstance(target, ast.Name) and target.id == value.id for target in node.targets)]
        if len(given) == 1:
            found = given[0]
            if isinstance(found, ast.Constant) and isinstance(found.value, (int, float)):
                return found
            return _number_source(found, tree)
        return None
    if isinstance(value, ast.Attribute):
        options = [node for node in ast.walk(tree) if isinstance(node, ast.Call) and _name(node.func) == "add_argument"
                   and any(isinstance(arg, ast.Constant) and isinstance(arg.value, str)
                           and arg.value.lstrip("-").replace("-", "_") == value.attr for arg in node.args)]
        if len(options) == 1:
            default = _keyword(options[0], "default")
            if default is not None and isinstance(default.value, ast.Constant) \
                    and isinstance(default.value.value, (int, float)):
                return default.value
    return None


def _num_labels(change, calls, tree, keras, replace, add_keyword) -> str | None:
    count = str(int(change.value))
    for call in reversed(calls):
        if _name(call.func) == "from_pretrained" and "SequenceClassification" in ast.unparse(call.func):
            keyword = _keyword(call, "num_labels")
            if keyword is None:
                add_keyword(call, "num_labels", count, change.owner)
                return None
            return _set_value(keyword.value, count, tree, replace, change.owner)
    return "no sequence classifier is loaded with from_pretrained in the script (a head of your own: widen its layer)"


def _loss(change, calls, tree, keras, replace, add_keyword) -> str | None:
    for call in reversed(calls):
        if _name(call.func) == "compile":
            keyword = _keyword(call, "loss")
            if keyword is None:
                add_keyword(call, "loss", str(change.value), change.owner)
            else:
                replace(keyword.value, str(change.value), change.owner)
            return None
    return "the script never calls compile (a training loop of its own: change the loss it computes)"
