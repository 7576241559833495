"""A script that fails before `fit`: the exception classified, and what changed in the libraries when the
stack shows it."""

from __future__ import annotations


import ast
import difflib
import inspect
import linecache
import os
import re
import sys
import traceback
from typing import Any

from diagnostics.i18n import msg
from diagnostics.keras.internals import is_missing_column_error


def _classify(exc: BaseException, message: str) -> tuple[str, Any, Any]:
    """(kind, finding, fix) for an exception raised before fit."""
    text = str(exc)
    names = {entry.name for entry in traceback.extract_tb(exc.__traceback__)}
    if "to_tf_dataset" in names and is_missing_column_error(exc):
        return ("columns", msg("to_tf_dataset raised {error}: {message} (see data.columns for the columns the split "
                               "really has)", error=type(exc).__name__, message=message),
                "to_tf_dataset(columns=['input_ids', 'attention_mask', 'label'], "
                "collate_fn=DataCollatorWithPadding(tokenizer, return_tensors='np'), ...)")
    if "from_pretrained" in names and isinstance(exc, (OSError, ValueError)):
        return ("checkpoint", msg("The checkpoint cannot be loaded: {message}", message=message),
                msg("from_pretrained(<a local save_pretrained directory with config.json and weights, or a Hub name "
                    "this machine can reach>)"))
    if isinstance(exc, FileNotFoundError) or "FileNotFoundError" in type(exc).__name__ or "Unable to find" in text:
        return ("file", msg("A file the script reads does not exist: {message}", message=message),
                msg("Check the path: relative paths are read from the directory the script runs in ({directory}).",
                    directory=os.getcwd()))
    if isinstance(exc, ModuleNotFoundError):
        return ("import", msg("{message}: the script needs a package this environment lacks.", message=message),
                f"pip install {getattr(exc, 'name', '') or '<package>'}")
    found = missing_column(exc)
    if found is not None:
        return ("column", *found)
    found = optimizer_tuple(exc)
    if found is not None:
        return ("optimizer_tuple", *found)
    found = whole_dataset_dict(exc)
    if found is not None:
        return ("split", *found)
    found = stack_change(exc)
    if found is not None:
        return ("stack", *found)
    found = refused_keyword(exc)
    if found is not None:
        return ("keyword", *found)
    return ("other", f"{type(exc).__name__}: {message}", None)


def _versions() -> dict[str, str]:
    from importlib.metadata import version

    return {name: version(name) for name in ("datasets", "transformers", "tf-keras")}


def _frame_values(exc: BaseException, name: str) -> list:
    """The values of a local variable `name` in the frames the exception passed through."""
    values, tb = [], exc.__traceback__
    while tb is not None:
        if name in tb.tb_frame.f_locals:
            values.append(tb.tb_frame.f_locals[name])
        tb = tb.tb_next
    return values


# The text columns of the GLUE tasks: the column a script names that its split lacks is most often one of these.
TEXT_COLUMNS = ("sentence", "sentence1", "sentence2", "premise", "hypothesis", "question", "question1", "question2")


def missing_column(exc: BaseException) -> tuple[Any, Any] | None:
    """(finding, fix) when a dataset or a data frame was asked for a column it does not have (`dataset["text"]` on
    a split whose text is "sentence": datasets' "Column 'text' doesn't exist.", pandas' KeyError), read from the
    object the exception was raised on: its real columns, and the script's line with the nearest one (or its text
    column) in the missing one's place; None for anything else."""
    found = re.search(r"Column '(.+?)' doesn't exist", str(exc)) if isinstance(exc, ValueError) else None
    missing = found.group(1) if found else exc.args[0] if isinstance(exc, KeyError) and exc.args \
        and isinstance(exc.args[0], str) else None
    holder = next((value for value in _frame_values(exc, "self") if type(value).__module__.split(".")[0] in
                   ("datasets", "pandas") and hasattr(value, "column_names" if "datasets" in type(value).__module__
                                                      else "columns")), None)
    if missing is None or holder is None:
        return None
    columns = [str(name) for name in getattr(holder, "column_names", None) or list(holder.columns)]
    if missing in columns:
        return None
    near = difflib.get_close_matches(missing, columns, n=1, cutoff=0.6)
    texts = [name for name in columns if name in TEXT_COLUMNS]
    best = near[0] if near else texts[0] if len(texts) == 1 else None
    finding = msg("The data has no column {missing}: its columns are {columns}.", missing=repr(missing),
                  columns=", ".join(columns))
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None and not tb.tb_next.tb_frame.f_code.co_filename.startswith(
            os.path.dirname(os.path.dirname(inspect.getfile(type(holder))))):
        tb = tb.tb_next
    line = linecache.getline(tb.tb_frame.f_code.co_filename, tb.tb_lineno).strip() if tb is not None else ""
    line = code_of(line)
    if best is not None and (f'"{missing}"' in line or f"'{missing}'" in line):
        return finding, line.replace(f'"{missing}"', f'"{best}"').replace(f"'{missing}'", f"'{best}'")
    return finding, msg("Name one of the data's columns: {columns}.", columns=", ".join(columns))


def code_of(line: str) -> str:
    """A line's code, without its comment (read by Python's own tokenizer: a '#' in a string stays)."""
    import io
    import tokenize

    try:
        for token in tokenize.generate_tokens(io.StringIO(line.strip() + "\n").readline):
            if token.type == tokenize.COMMENT:
                return line.strip()[:token.start[1]].rstrip()
    except (tokenize.TokenError, SyntaxError):
        pass
    return line.strip()


def optimizer_tuple(exc: BaseException) -> tuple[Any, str] | None:
    """(finding, fix) when an (optimizer, schedule) pair was given where an optimizer goes: Transformers'
    `create_optimizer` returns both (tensorflow/tensorflow#43582, benchmarks/reported), and `compile` cannot interpret
    the pair, or a training step finds no `apply_gradients` on it; None for anything else."""
    text = str(exc)
    if not ("Could not interpret optimizer identifier" in text or "'tuple' object has no attribute" in text
            and "apply_gradients" in text):
        return None
    pairs, tb = [], exc.__traceback__  # any frame's (optimizer, schedule) pair, whatever the script named it
    while tb is not None:
        pairs += [value for value in list(tb.tb_frame.f_locals.values())
                  if isinstance(value, tuple) and len(value) == 2 and hasattr(value[0], "apply_gradients")]
        tb = tb.tb_next
    if not pairs and "'tuple' object" not in text:
        return None
    return (msg("An (optimizer, schedule) pair was given where an optimizer goes: Transformers' create_optimizer "
                "returns both, the optimizer and its learning-rate schedule ({error})",
                error=text.splitlines()[0][:160]),
            "optimizer, schedule = create_optimizer(init_lr=..., num_train_steps=..., num_warmup_steps=...)")


def whole_dataset_dict(exc: BaseException) -> tuple[Any, Any] | None:
    """(finding, fix) when a `DatasetDict`, every split at once, was given where one split goes:
    `model.prepare_tf_dataset(dataset)` on what `load_dataset` returned ("Dataset argument should be a
    datasets.Dataset!", huggingface/transformers#22960), `dataset.to_tf_dataset(...)` on it (no such attribute). The
    fix is the script's own line with the split named, "train" where there is one; None for anything else."""
    if not isinstance(exc, (TypeError, AttributeError)) or "datasets" not in sys.modules:
        return None
    from datasets import DatasetDict

    if not ("should be a datasets.Dataset" in str(exc) or "'DatasetDict' object has no attribute" in str(exc)):
        return None
    script, tb = [], exc.__traceback__  # the script's frames, each at the line the exception passed
    while tb is not None:
        script += [(tb.tb_frame, tb.tb_lineno)] if not _in_a_library(tb.tb_frame.f_code.co_filename) else []
        tb = tb.tb_next
    # The traced script's own lines only (the outermost frame's file): a helper module's line is not the one a
    # repair of the script edits.
    own = script[0][0].f_code.co_filename if script else None
    script = [(frame, lineno) for frame, lineno in script if frame.f_code.co_filename == own]
    for frame, lineno in reversed(script):  # the innermost line that hands a DatasetDict of its frame on
        line = code_of(linecache.getline(frame.f_code.co_filename, lineno))
        for name, whole in list(frame.f_locals.items()):
            given = re.compile(rf"(?<![\w.\]]){re.escape(name)}(?=\s*[,)]|\.to_tf_dataset\b)")
            if isinstance(whole, DatasetDict) and given.search(line):
                split = _split_for(line, list(whole))
                return (msg("{name} is a DatasetDict, every split at once ({splits}), given where one split goes.",
                            name=name, splits=", ".join(whole)), given.sub(f'{name}["{split}"]', line, count=1))
    return None


def _split_for(line: str, splits: list[str]) -> str:
    """The split a line means by the name it assigns: a validation or test split for `tf_val = ...`,
    `eval_dataset = ...`, `test_set = ...` where the dict has one, else the training split."""
    assigned = re.match(r"\s*(\w+)\s*=", line)
    target = assigned.group(1) if assigned else ""
    for hint, kinds in (("val", ("validation", "valid", "val", "dev")), ("eval", ("validation", "valid", "val", "dev")),
                        ("dev", ("validation", "dev")), ("test", ("test",))):
        if hint in target.lower():
            found = next((split for kind in kinds for split in splits if split.lower().startswith(kind)), None)
            if found is not None:
                return found
    return "train" if "train" in splits else splits[0] if splits else "train"


def _in_a_library(filename: str) -> bool:
    """Whether a frame's file is an installed package's or this project's, not the user's script."""
    return "site-packages" in filename or "dist-packages" in filename or filename.startswith(
        (os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))) + os.sep + "diagnostics",
         "<frozen"))


def stack_change(exc: BaseException) -> tuple[Any, str] | None:
    """(finding, fix) when the exception is a known change of the pinned libraries that tutorial code predates,
    recognised from the exception and the values it was raised on (never from the message alone where a value
    can tell); None for anything else."""
    text, versions = str(exc), _versions()
    if isinstance(exc, ValueError) and "text input must be of type" in text and any(
            type(value).__name__ == "Column" for value in _frame_values(exc, "text")):
        return (msg("The tokenizer was given a datasets column (dataset[column]): since datasets 4 that is a lazy "
                    "Column, not a list of strings, and the tokenizer refuses it (datasets {version} here).",
                    version=versions["datasets"]),
                "tokenizer(list(dataset['sentence1']), list(dataset['sentence2']), truncation=True)  # or "
                "dataset.map(lambda rows: tokenizer(rows['sentence1'], rows['sentence2'], truncation=True), "
                "batched=True)")
    if isinstance(exc, TypeError) and "pad_to_max_length" in text:
        return (msg("pad_to_max_length is gone from the tokenizer's arguments (Transformers deprecated it in 3.0; "
                    "{version} rejects it).", version=versions["transformers"]),
                "tokenizer(..., padding='max_length', truncation=True, max_length=128)  # or pad per batch: "
                "DataCollatorWithPadding")
    if isinstance(exc, ValueError) and "Expected workers to be positive" in text:
        return (msg("fit(workers=-1) is refused by tf-keras {version} (older Keras read it as every core).",
                    version=versions["tf-keras"]), "model.fit(..., workers=1)  # or leave workers out")
    keras_3 = _keras_3_value(exc)
    # Keras 3's own classes (keras.src...), not tf-keras's (tf_keras.src...), which once read as Keras 3 here.
    keras_3_text = re.search(r"(?<!tf_)keras\.src\.", text) is not None
    if keras_3 is not None or (isinstance(exc, (ValueError, TypeError)) and keras_3_text and (
            "Could not interpret" in text or "keras.src.optimizers" in text or "keras.src.losses" in text)):
        error = text.splitlines()[0][:200] if keras_3 is None else \
            f"{type(keras_3).__module__.split('.')[0]} {type(keras_3).__name__} given to {keras_3_receiver(exc)}"
        return keras_3_given(error)
    return None


def keras_3_given(error: str) -> tuple[Any, str]:
    """(finding, fix) for a Keras 3 object given to a tf-keras model, `error` saying which and where."""
    return (msg("A Keras 3 object was given to a tf-keras (Keras 2) model: `import keras` and, since TensorFlow 2.16, "
                "`from tensorflow import keras` give Keras 3, while Transformers' TF models are tf-keras models "
                "({error}).", error=error),
            "import tf_keras as keras  # or os.environ['TF_USE_LEGACY_KERAS'] = '1' before TensorFlow is imported")


def _frames(exc: BaseException):
    """The frames the exception passed through, and those of the exceptions it was raised from or during."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        tb = exc.__traceback__
        while tb is not None:
            yield tb.tb_frame
            tb = tb.tb_next
        exc = exc.__cause__ or exc.__context__


def _keras_3_value(exc: BaseException):
    """A Keras 3 object (a `keras.Input`'s KerasTensor, a Keras 3 layer, optimizer or loss) among the values the
    exception was raised on, when it passed through a Transformers TF model or tf-keras: what a model built with
    Keras 3's `keras.Input` around `TFBertModel` raises (tf-keras wraps the cause in 'Exception encountered when
    calling layer ...', which names none)."""
    frames = list(_frames(exc))
    if not any(frame.f_globals.get("__name__", "").startswith(("transformers.", "tf_keras.")) for frame in frames):
        return None
    for frame in frames:
        for value in list(frame.f_locals.values()):
            for item in (value if isinstance(value, (list, tuple)) else [value]):
                if type(item).__module__.startswith("keras.src."):
                    return item
    return None


def keras_3_receiver(exc: BaseException) -> str:
    """The Transformers or tf-keras layer the Keras 3 object reached, by its class name."""
    for frame in _frames(exc):
        owner = frame.f_locals.get("self")
        if owner is not None and type(owner).__module__.startswith("transformers."):
            return type(owner).__name__
    return "a tf-keras layer"


_UNEXPECTED = re.compile(r"got an unexpected keyword argument '(\w+)'")


def refused_keyword(exc: BaseException) -> tuple[Any, str | None] | None:
    """(finding, fix) for a call in the script that raised TypeError on a keyword its callable does not take (an API
    that renamed it: `enable_padding(max_length=...)`, `length=` since tokenizers 0.8): the library and its installed
    version, the keyword refused and the accepted keyword nearest to it, read from the callable's own signature, and
    as the fix the script's own line with that keyword. None when the call or its callable cannot be found."""
    found = _UNEXPECTED.search(str(exc)) if isinstance(exc, TypeError) else None
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    if found is None or tb is None:
        return None
    refused, frame, lineno = found.group(1), tb.tb_frame, tb.tb_lineno
    call = _call_at(frame.f_code.co_filename, lineno, refused)
    function = _resolve(call.func, frame) if call is not None else None
    if function is None:
        return None
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return None
    keywords = [p.name for p in parameters if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    nearest = _nearest(refused, keywords)
    name = ast.unparse(call.func)
    library = _library(function)
    said = dict(call=name, keyword=refused, library=library or "", nearest=nearest or "",
                keywords=", ".join(f"{keyword}=" for keyword in keywords) or "-")
    if nearest is None:
        finding = (msg("{library} refuses the keyword {keyword}= of {call}(): it takes {keywords}", **said) if library
                   else msg("{call}() refuses the keyword {keyword}=: it takes {keywords}", **said))
        return finding, None
    finding = (msg("{library} refuses the keyword {keyword}= of {call}(): it was renamed or removed, and the "
                   "nearest keyword it takes is {nearest}=.", **said) if library else
               msg("{call}() refuses the keyword {keyword}=: the nearest keyword it takes is {nearest}=.", **said))
    keyword = next(k for k in call.keywords if k.arg == refused)
    line = linecache.getline(frame.f_code.co_filename, keyword.lineno)
    start = len(line.encode()[:keyword.col_offset].decode(errors="ignore"))  # the offset counts UTF-8 bytes
    fixed = line[:start] + line[start:].replace(f"{refused}", nearest, 1) if line else ""
    return finding, fixed.strip() or f"{name}(..., {nearest}=...)"


def _call_at(filename: str, lineno: int, keyword: str | None = None, method: str | None = None) -> ast.Call | None:
    """The innermost call spanning `lineno` of the file that passes `keyword` (and/or calls a method named `method`),
    the file as it is now: a script edited since this process last read it is read again."""
    linecache.checkcache(filename)
    source = "".join(linecache.getlines(filename))
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call)
             and node.lineno <= lineno <= (node.end_lineno or node.lineno)
             and (keyword is None or any(k.arg == keyword for k in node.keywords))
             and (method is None or isinstance(node.func, ast.Attribute) and node.func.attr == method)]
    return min(calls, key=lambda node: (node.end_lineno or node.lineno) - node.lineno, default=None)


def argument_rewritten(filename: str | None, lineno: int | None, method: str, keyword: str, rewrite, *,
                       first_positional: bool = False, same_line: bool = False) -> str | None:
    """The line of the script's `.method(...)` call spanning `lineno` that holds its argument `keyword` (or, with
    `first_positional`, its first positional one where none is given by keyword), with that argument's code
    replaced by `rewrite(code)`, its comment left out; None where there is no such call, the argument spans lines,
    or (`same_line`: a repair edits line `lineno`) it is on another line."""
    call = _call_at(filename, lineno, method=method) if filename and lineno else None
    given = None if call is None else next((k.value for k in call.keywords if k.arg == keyword),
                                           call.args[0] if call.args and first_positional else None)
    if given is None or given.lineno != given.end_lineno or (same_line and given.lineno != lineno):
        return None
    raw = linecache.getline(filename, given.lineno).encode()  # the offsets count UTF-8 bytes
    start, end = given.col_offset, given.end_col_offset
    return code_of((raw[:start] + rewrite(raw[start:end].decode()).encode() + raw[end:]).decode())


def _resolve(expression: ast.expr, frame) -> Any:
    """The object a name or a chain of attributes names in the frame (nothing called, no other expression)."""
    names = []
    while isinstance(expression, ast.Attribute):
        names.append(expression.attr)
        expression = expression.value
    if not isinstance(expression, ast.Name):
        return None
    space = next((space for space in (frame.f_locals, frame.f_globals, frame.f_builtins) if expression.id in space),
                 None)
    if space is None:
        return None
    value = space[expression.id]
    for name in reversed(names):
        try:
            value = getattr(value, name)
        except AttributeError:
            return None
    return value


def _nearest(refused: str, keywords: list[str]) -> str | None:
    """The accepted keyword nearest to the refused one: a close spelling, or one the refused keyword ends with or
    starts with (max_length -> length)."""
    close = difflib.get_close_matches(refused, keywords, n=1, cutoff=0.6)
    if close:
        return close[0]
    parts = [k for k in keywords if len(k) > 2 and (refused.endswith(k) or refused.startswith(k))]
    return max(parts, key=len, default=None)


def _library(function: Any) -> str | None:
    """'<distribution> <version>' of the installed package that defines the callable, or None for the script's
    own."""
    from importlib.metadata import PackageNotFoundError, packages_distributions, version

    module = getattr(function, "__module__", None) or type(getattr(function, "__self__", None)).__module__
    top = (module or "").split(".")[0]
    if not top or top in ("__main__", "builtins"):
        return None
    distribution = (packages_distributions().get(top) or [top])[0]
    try:
        return f"{distribution} {version(distribution)}"
    except PackageNotFoundError:
        return None
