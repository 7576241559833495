"""A script that fails before `fit`: the exception classified, and what changed in the libraries when the
stack shows it."""

from __future__ import annotations


import os
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
    found = stack_change(exc)
    if found is not None:
        return ("stack", *found)
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
    if keras_3 is not None or (isinstance(exc, (ValueError, TypeError)) and "keras.src." in text and (
            "Could not interpret" in text or "keras.src.optimizers" in text or "keras.src.losses" in text)):
        error = text.splitlines()[0][:200] if keras_3 is None else \
            f"{type(keras_3).__module__.split('.')[0]} {type(keras_3).__name__} given to {keras_3_receiver(exc)}"
        return (msg("A Keras 3 object was given to a tf-keras (Keras 2) model: `import keras` and, since "
                    "TensorFlow 2.16, `from tensorflow import keras` give Keras 3, while Transformers' TF models "
                    "are tf-keras models ({error}).",
                    error=error), "import tf_keras as keras  # or os.environ['TF_USE_LEGACY_KERAS'] = '1' "
                "before TensorFlow is imported")
    return None


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
