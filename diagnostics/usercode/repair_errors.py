"""The repair of a script that stopped before fit on an error whose fix is code of its own (`script_errors`): a
column the data lacks (its line, with the column the data has), every split given where one goes (its line, with
the split named), the tokenizer's BatchEncoding given to a Keras model's fit (its line, with a dict), a Keras 3
import or a `tf.keras.` name (tf-keras's instead), or `create_optimizer`'s pair taken as the optimizer (unpacked).
Each edit replaces one line with one line, so the line numbers every later repair reads stay true."""

from __future__ import annotations

import re

from diagnostics.usercode.repair import Edit
from diagnostics.usercode.script_errors import code_of

# Keras 3's imports, as tutorials write them, and tf-keras's (the Keras of Transformers' TF models).
KERAS_3_IMPORTS = (
    (re.compile(r"^(\s*)from tensorflow\.keras((?:\.\w+)*) import "), r"\1from tf_keras\2 import "),
    (re.compile(r"^(\s*)from tensorflow import keras\s*$"), r"\1import tf_keras as keras"),
    (re.compile(r"^(\s*)import keras\s*$"), r"\1import tf_keras as keras"),
    (re.compile(r"^(\s*)from keras((?:\.\w+)*) import "), r"\1from tf_keras\2 import "),
    (re.compile(r"^(\s*)import tensorflow\.keras as (\w+)\s*$"), r"\1import tf_keras as \2"),
)
# Keras 3 reached through TensorFlow's own names (`tf.keras.optimizers.Adam`, `tf.losses...`, `tf.metrics...`) once
# `import tensorflow as tf` binds tf: the same names in tf-keras, imported on that line.
TF_KERAS_NAMES = re.compile(r"(?<![\w.])tf\.(keras\.|optimizers\.|losses\.|metrics\.)")
IMPORT_TF = "import tensorflow as tf"
PAIR = re.compile(r"^(\s*)(\w+)(\s*=\s*(?:\w+\.)*create_optimizer\()")


def error_repair(source: str, error: dict) -> list[Edit]:
    """The edits that mend the error a script stopped on before fit (the trace report's `script.error`), none where
    its fix is not code of its own."""
    kind, fix = error.get("kind"), str(error.get("fix") or "")
    owner, lines, edits = f"error:{kind}", source.splitlines(), []

    def edit(number: int, after: str) -> None:
        if after != lines[number - 1]:
            edits.append(Edit(owner, number, lines[number - 1], after))

    if kind in ("column", "split", "batch_encoding") and (number := _line(error)) is not None and number <= len(lines):
        code = code_of(lines[number - 1])
        # A sentence, or code with a gap to fill ("model.fit(x=dict(encodings), ...)"), is not the line mended
        if fix and fix != code and code and not fix.endswith(".") and "..." not in fix:
            edit(number, lines[number - 1].replace(code, fix, 1))
    elif kind == "stack" and "tf_keras" in fix:
        through_tf = any(code_of(line) == IMPORT_TF for line in lines) and any(
            TF_KERAS_NAMES.search(code_of(line)) for line in lines)
        for number, line in enumerate(lines, 1):
            for pattern, replacement in KERAS_3_IMPORTS:
                if pattern.match(line):
                    edit(number, pattern.sub(replacement, line, count=1))
                    break
            else:
                if through_tf and code_of(line) == IMPORT_TF:
                    edit(number, line.replace(IMPORT_TF, IMPORT_TF + ", tf_keras", 1))
                elif through_tf and TF_KERAS_NAMES.search(code_of(line)):
                    edit(number, TF_KERAS_NAMES.sub(lambda found: "tf_keras." + (
                        "" if found.group(1) == "keras." else found.group(1)), line))
    elif kind == "optimizer_tuple":
        for number, line in enumerate(lines, 1):
            if (found := PAIR.match(line)) is not None:
                edit(number, PAIR.sub(rf"\1\2, {found.group(2)}_schedule\3", line, count=1))
    return edits


def applied(source: str, edits: list[Edit]) -> str:
    """`source` with each edit's line replaced."""
    lines = source.splitlines(keepends=True)
    for edit in edits:
        ending = lines[edit.line - 1][len(lines[edit.line - 1].rstrip("\r\n")):]
        lines[edit.line - 1] = edit.after + ending
    return "".join(lines)


def _line(error: dict) -> int | None:
    """The line number of the trace's `where` ("train.py:26")."""
    where = str(error.get("where") or "")
    return int(where.rsplit(":", 1)[1]) if ":" in where and where.rsplit(":", 1)[1].isdigit() else None
