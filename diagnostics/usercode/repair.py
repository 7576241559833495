"""Rewrites a user's training script where a cause's fix says, and nowhere else: the optimizer's learning rate, the
classifier's `num_labels`, the loss given to `compile`. Each edit replaces or adds one argument of one call that
Python's own parser located (`ast`, whose nodes carry their exact start and end), so every other character of the
script, its comments, formatting and names included, stays as the user wrote it.

A change that has no place it can be made says why (`Unrepaired`), and nothing is guessed: a rate given through a
variable is changed where that variable gets a number (an argparse default, an assignment), or not at all."""

from __future__ import annotations

import ast
import difflib
import re
from dataclasses import dataclass
from typing import Iterable

from diagnostics.i18n import Text, msg

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
    """A cause with no change to make in the script, and why."""

    owner: str
    reason: Text


@dataclass(frozen=True)
class Repair:
    """The repaired source, the edits that made it, and the causes it could not repair."""

    source: str
    edits: list[Edit]
    unrepaired: list[Unrepaired]

    def places(self, original: str) -> list[tuple[int, list[str], int, list[str]]]:
        """Each place the repaired source differs from the original: (the original's first line there, counted
        from 1, its lines, the repaired source's first line there, the repaired lines)."""
        before, after = original.splitlines(), self.source.splitlines()
        return [(i1 + 1, before[i1:i2], j1 + 1, after[j1:j2]) for tag, i1, i2, j1, j2 in
                difflib.SequenceMatcher(a=before, b=after, autojunk=False).get_opcodes() if tag != "equal"]

    def diff(self, original: str, name: str, to: str | None = None) -> str:
        """A unified diff of the original (`name`) against the repaired source (`to`, or NAME.repaired.py)."""
        return "".join(difflib.unified_diff(original.splitlines(keepends=True), self.source.splitlines(keepends=True),
                                            fromfile=name, tofile=to or name.removesuffix(".py") + ".repaired.py"))


class _Editor:
    """Edits of one source, each a span of it located by `ast` (whose columns count UTF-8 bytes), made at once."""

    def __init__(self, source: str):
        self.source = source
        self.lines = source.splitlines(keepends=True)
        self.offsets = [0]
        for line in self.lines:
            self.offsets.append(self.offsets[-1] + len(line))
        self.spans: list[tuple[int, int, str, str, int]] = []  # (start, end, new text, owner, line)

    def at(self, line: int, column: int) -> int:
        return self.offsets[line - 1] + len(self.lines[line - 1].encode("utf-8")[:column].decode("utf-8", "replace"))

    def replace(self, node: ast.AST, text: str, owner: str) -> None:
        self.spans.append((self.at(node.lineno, node.col_offset), self.at(node.end_lineno, node.end_col_offset), text,
                           owner, node.lineno))

    def add_keyword(self, call: ast.Call, name: str, text: str, owner: str) -> None:
        end = self.at(call.end_lineno, call.end_col_offset) - 1  # the closing parenthesis
        arguments = [*call.args, *(keyword.value for keyword in call.keywords)]
        if not arguments:
            self.spans.append((end, end, f"{name}={text}", owner, call.end_lineno))
            return
        last = max(arguments, key=lambda node: (node.end_lineno, node.end_col_offset))
        after = self.at(last.end_lineno, last.end_col_offset)
        comma = self.source.find(",", after, end)
        if comma >= 0:  # a trailing comma: the new argument goes after it, with one of its own
            self.spans.append((comma + 1, comma + 1, f" {name}={text},", owner, last.end_lineno))
        else:
            self.spans.append((after, after, f", {name}={text}", owner, last.end_lineno))

    def remove_keyword(self, call: ast.Call, keyword: ast.keyword, owner: str) -> None:
        arguments = sorted([*call.args, *call.keywords], key=lambda node: (node.lineno, node.col_offset))
        index = arguments.index(keyword)
        start, end = self.at(keyword.lineno, keyword.col_offset), self.at(keyword.end_lineno, keyword.end_col_offset)
        if index + 1 < len(arguments):  # up to the next argument, the comma between them with it
            end = self.at(arguments[index + 1].lineno, arguments[index + 1].col_offset)
        elif index > 0:  # the last: from the end of the one before
            start = self.at(arguments[index - 1].end_lineno, arguments[index - 1].end_col_offset)
        self.spans.append((start, end, "", owner, keyword.lineno))

    def result(self, unrepaired: list) -> "Repair":
        text, edits = self.source, []
        for start, end, new, owner, line in sorted(self.spans, reverse=True):
            edits.append(Edit(owner, line, self.source[start:end], new))
            text = text[:start] + new + text[end:]
        return Repair(text, sorted(edits, key=lambda edit: edit.line), unrepaired)


def repair(source: str, changes: Iterable[Change], *, keras: str = "tf_keras", before_line: int | None = None
           ) -> Repair:
    """`source` with each change made at its place: the last such call before `before_line` (the fit the trace
    checked), else the last in the script. `keras` is how the script names Keras, for an object written in."""
    tree = ast.parse(source)
    editor = _Editor(source)
    unrepaired = []
    calls = sorted((node for node in ast.walk(tree) if isinstance(node, ast.Call)),
                   key=lambda node: (node.lineno, node.col_offset))
    if before_line is not None:
        calls = [node for node in calls if node.lineno <= before_line] or calls
    for change in changes:
        handler = {"learning_rate": _rate, "num_labels": _num_labels, "loss": _loss, "columns": _columns,
                   "collate_fn": _collate}.get(change.kind)
        reason = handler(change, calls, tree, keras, editor) if handler else msg("no rewrite is known for {kind}",
                                                                                 kind=change.kind)
        if reason:
            unrepaired.append(Unrepaired(change.owner, reason))
    editor.spans += _imports_needed(tree, editor)
    return editor.result(unrepaired)


# A name a fix writes that the script may not have bound, and the import that binds it (Keras 2, as Transformers' TF
# models need it on this stack).
IMPORTS = {"tf_keras": "import tf_keras", "keras": "import tf_keras as keras", "tf": "import tensorflow as tf",
           "DataCollatorWithPadding": "from transformers import DataCollatorWithPadding"}


def _imports_needed(tree: ast.Module, editor: _Editor) -> list:
    """An import line for each name the new code reads at its start that the script never binds, after the script's
    last top-level import (or at its top)."""
    bound = {alias.asname or alias.name.split(".")[0] for node in ast.walk(tree)
             if isinstance(node, (ast.Import, ast.ImportFrom)) for alias in node.names}
    bound |= {node.id for node in ast.walk(tree) if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)}
    needed: dict[str, str] = {}
    for _, _, new, owner, _ in editor.spans:
        try:
            written = ast.parse(new.strip().lstrip(",").strip().rstrip(","), mode="exec")
        except SyntaxError:
            continue
        for node in ast.walk(written):
            read = node.value if isinstance(node, ast.Attribute) else node.func if isinstance(node, ast.Call) else None
            if isinstance(read, ast.Name) and read.id in IMPORTS and read.id not in bound:
                needed.setdefault(read.id, owner)
    imports = [node for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))]
    where = editor.offsets[imports[-1].end_lineno] if imports else 0
    line = imports[-1].end_lineno + 1 if imports else 1
    return [(where, where, IMPORTS[name] + "\n", owner, line) for name, owner in sorted(needed.items())]


def _name(func: ast.AST) -> str:
    """A call's function name, its last part (`keras.optimizers.Adam` -> Adam)."""
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else ""


def _keyword(call: ast.Call, *names: str) -> ast.keyword | None:
    return next((keyword for keyword in call.keywords if keyword.arg in names), None)


def _number(value: float) -> str:
    return f"{value:.0e}" if value < 1e-2 else f"{value:g}"


def _rate(change, calls, tree, keras, editor: _Editor) -> str | None:
    """The rate where the script gives it: a schedule's or create_optimizer's initial rate when it builds one (what
    the optimizer then reads), else the optimizer's own, else compile's optimizer string written as an object."""
    rate = _number(float(change.value))
    named = [(call, _name(call.func)) for call in reversed(calls)]
    for call, name in named:
        if name == "create_optimizer" or name in SCHEDULES:
            keyword = _keyword(call, "init_lr" if name == "create_optimizer" else SCHEDULES[name])
            value = keyword.value if keyword is not None else (call.args[0] if call.args else None)
            if value is None:
                editor.add_keyword(call, "init_lr" if name == "create_optimizer" else SCHEDULES[name], rate,
                                   change.owner)
                return None
            return _set_value(value, rate, tree, editor, change.owner)
    for call, name in named:
        if name in OPTIMIZERS:
            keyword = _keyword(call, *RATE_NAMES)
            if keyword is not None and keyword.arg == "lr":  # a keyword tf-keras drops: written as the one it reads
                written = ast.get_source_segment(editor.source, keyword.value) or rate
                editor.replace(keyword, f"learning_rate={written}", change.owner)
                return None
            value = keyword.value if keyword is not None else (call.args[0] if call.args else None)
            if value is None:
                editor.add_keyword(call, "learning_rate", rate, change.owner)
                return None
            return _set_value(value, rate, tree, editor, change.owner)
    for call, name in named:
        keyword = _keyword(call, "optimizer") if name == "compile" else None
        if keyword is not None and isinstance(keyword.value, ast.Constant) and isinstance(keyword.value.value, str):
            optimizer = {"adam": "Adam", "adamw": "AdamW", "sgd": "SGD", "rmsprop": "RMSprop"}.get(
                keyword.value.value.lower())
            if optimizer is None:
                return msg("the optimizer '{name}' is a string naming no Keras class known here",
                           name=keyword.value.value)
            editor.replace(keyword.value, f"{keras}.optimizers.{optimizer}(learning_rate={rate})", change.owner)
            return None
    return msg("no optimizer is built in the script (a Keras optimizer, a schedule, create_optimizer or compile's "
               "string)")


def _set_value(value: ast.AST, text: str, tree: ast.Module, editor: _Editor, owner: str) -> str | None:
    """Write `text` where `value` gets its number: the value itself when it is one, else the one place a name it reads
    is given a number (an assignment, or an argparse option's default)."""
    if isinstance(value, ast.Constant) and isinstance(value.value, (int, float)):
        editor.replace(value, text, owner)
        return None
    source = _number_source(value, tree)
    if source is None:
        return msg("the value is computed ({code}), with no one number in the script to change",
                   code=ast.unparse(value))
    editor.replace(source, text, owner)
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


def _num_labels(change, calls, tree, keras, editor: _Editor) -> str | None:
    count = str(int(change.value))
    for call in reversed(calls):
        if _name(call.func) == "from_pretrained" and "SequenceClassification" in ast.unparse(call.func):
            keyword = _keyword(call, "num_labels")
            given = _keyword(call, "config")
            if keyword is None and given is not None:  # the head's width is the config's: a num_labels here is refused
                call = _built_at(given.value, call, tree)
                if call is None:
                    return msg("the classifier takes its configuration from config={code}, which the script does not "
                               "build with from_pretrained: set num_labels where it is made", code=_short(given.value))
                keyword = _keyword(call, "num_labels")
            if keyword is None:
                editor.add_keyword(call, "num_labels", count, change.owner)
                return None
            return _set_value(keyword.value, count, tree, editor, change.owner)
    # A head of the user's own: the last Dense layer built before the fit whose width is a number below the classes.
    for call in reversed(calls):
        if _name(call.func) != "Dense":
            continue
        keyword = _keyword(call, "units")
        units = call.args[0] if call.args else keyword.value if keyword is not None else None
        number = units if isinstance(units, ast.Constant) else _number_source(units, tree) if units is not None \
            else None
        if isinstance(number, ast.Constant) and isinstance(number.value, int) and 0 < number.value < int(change.value):
            return _set_value(units, count, tree, editor, change.owner)
    return msg("no sequence classifier is loaded with from_pretrained in the script, and no Dense layer with fewer "
               "outputs than the classes is built before the fit (a head of your own: widen its last layer)")


def _built_at(value: ast.AST, before: ast.Call, tree: ast.Module) -> ast.Call | None:
    """The `from_pretrained` call whose result a name holds, at its last assignment before `before`."""
    if not isinstance(value, ast.Name):
        return None
    made = [node.value for node in ast.walk(tree) if isinstance(node, ast.Assign) and node.lineno < before.lineno
            and isinstance(node.value, ast.Call) and _name(node.value.func) == "from_pretrained"
            and any(isinstance(target, ast.Name) and target.id == value.id for target in node.targets)]
    return max(made, key=lambda call: call.lineno, default=None)


def _short(node: ast.AST, most: int = 60) -> str:
    code = ast.unparse(node)
    return code if len(code) <= most else code[:most - 1] + "…"


def _loss(change, calls, tree, keras, editor: _Editor) -> str | None:
    """The loss given to compile; None as the value takes `loss=` out (the model's own loss, for labels it reads from
    the input dict). A compile whose arguments come from a dict (`**`) may hold a loss there: it is said, not
    guessed (a second `loss=` beside one in the dict would raise)."""
    for call in reversed(calls):
        if _name(call.func) == "compile":
            keyword = _keyword(call, "loss")
            unpacked = next((keyword.value for keyword in call.keywords if keyword.arg is None), None)
            if keyword is None and unpacked is not None:
                return msg("compile's arguments come from a dict (**{code}): set its loss there",
                           code=_short(unpacked))
            if change.value is None:
                if keyword is not None:
                    editor.remove_keyword(call, keyword, change.owner)
            elif keyword is None:
                editor.add_keyword(call, "loss", str(change.value), change.owner)
            else:
                editor.replace(keyword.value, str(change.value), change.owner)
            return None
    return msg("the script never calls compile (a training loop of its own: change the loss it computes)")


def _collate(change, calls, tree, keras, editor: _Editor) -> str | None:
    """`collate_fn=` the fix names (a padding collator) on each `to_tf_dataset` call before the fit that has none,
    over the tokenizer the script builds (its own name for it)."""
    value = str(change.value)
    built = [target.id for node in ast.walk(tree) if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
             and _name(node.value.func) == "from_pretrained" and "Tokenizer" in _short(node.value.func)
             for target in node.targets if isinstance(target, ast.Name)]
    if len(set(built)) == 1:
        value = re.sub(r"\(tokenizer\b", f"({built[0]}", value)
    missing = [call for call in calls if _name(call.func) == "to_tf_dataset" and _keyword(call, "collate_fn") is None]
    for call in missing:
        editor.add_keyword(call, "collate_fn", value, change.owner)
    return None if missing else msg("every to_tf_dataset call before the fit has a collate_fn already")


def _columns(change, calls, tree, keras, editor: _Editor) -> str | None:
    """`to_tf_dataset(columns=[...])` with the columns the fix names: the model's inputs it left out added to the
    script's own list (in its quotes); labels the script gives with `label_cols=` stay there."""
    try:
        wanted = [str(name) for name in ast.literal_eval(str(change.value))]
    except (ValueError, SyntaxError):
        return msg("its fix names no list of columns: {fix}", fix=str(change.value))
    for call in reversed(calls):
        keyword = _keyword(call, "columns") if _name(call.func) == "to_tf_dataset" else None
        if keyword is None:
            continue
        value = keyword.value
        if isinstance(value, ast.Name):  # columns=COLUMNS: the one list literal assigned to the name
            found = [node.value for node in ast.walk(tree) if isinstance(node, ast.Assign) and any(
                isinstance(target, ast.Name) and target.id == value.id for target in node.targets)]
            value = found[0] if len(found) == 1 else value
        if not isinstance(value, (ast.List, ast.Tuple)) or not all(
                isinstance(item, ast.Constant) and isinstance(item.value, str) for item in value.elts):
            return msg("the columns are computed ({code}), with no one list in the script to change",
                       code=_short(keyword.value))
        have = [item.value for item in value.elts]
        if _keyword(call, "label_cols") is not None:
            wanted = [name for name in wanted if name not in ("label", "labels")]
        quote = (ast.get_source_segment(editor.source, value.elts[0]) or "'")[0] if value.elts else "'"
        kept = [ast.get_source_segment(editor.source, item) for item in value.elts if item.value in wanted]
        names = kept + [f"{quote}{name}{quote}" for name in wanted if name not in have]
        if names == [ast.get_source_segment(editor.source, item) for item in value.elts]:
            return None
        open_, close = ("[", "]") if isinstance(value, ast.List) else ("(", ",)" if len(names) == 1 else ")")
        editor.replace(value, open_ + ", ".join(names) + close, change.owner)
        return None
    return msg("no to_tf_dataset call with columns= is made before the fit (the batches come from elsewhere: give "
               "them every input the tokenizer returns)")
