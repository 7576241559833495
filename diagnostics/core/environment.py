"""The environment as the first check: the library combinations in which Transformers' TensorFlow models cannot
work, read from the installed packages' metadata before TensorFlow or Transformers is imported, each named with
its one fix. `diagnose()`, the callback, `trace`, the command line and the app's start call `require_stack()`
first, so a course reader on a fresh Colab meets this sentence, not the first traceback of the broken import."""

from __future__ import annotations

import functools
from importlib import metadata
from typing import NamedTuple

from diagnostics.core.errors import InputError
from diagnostics.i18n import Text, msg

# The ranges pyproject.toml declares; a fix installs inside them.
TRANSFORMERS_RANGE = "transformers>=4.44,<5"
TENSORFLOW_RANGE = "tensorflow>=2.16,<2.21"
PACKAGES = ("tensorflow", "tf-keras", "transformers", "keras")


class StackProblem(NamedTuple):
    finding: Text
    fix: str


class StackError(InputError):
    """The installed libraries cannot run Transformers' TensorFlow models; the message names the fix."""


@functools.cache
def _installed() -> tuple[tuple[str, str | None], ...]:
    found: dict[str, str | None] = {}
    for name in PACKAGES:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = None
    # TensorFlow's CPU-only and GPU wheels carry other names for the same package.
    for other in ("tensorflow-cpu", "tensorflow-macos", "tf-nightly"):
        if found["tensorflow"] is None:
            try:
                found["tensorflow"] = metadata.version(other)
            except metadata.PackageNotFoundError:
                pass
    return tuple(found.items())


def installed() -> dict[str, str | None]:
    """The installed version of each package the stack depends on (None when it is not installed), read once a
    process (the app asks on every rerun)."""
    return dict(_installed())


def _minor(version: str) -> tuple[int, int]:
    parts = [int("".join(ch for ch in part if ch.isdigit()) or 0) for part in version.split(".")[:2]]
    return (parts + [0, 0])[0], (parts + [0, 0])[1]


def stack_problems(versions: dict[str, str | None] | None = None) -> list[StackProblem]:
    """What stops Transformers' TF models in these versions (the installed ones by default), most basic first."""
    versions = installed() if versions is None else versions
    tensorflow, tf_keras, transformers = versions.get("tensorflow"), versions.get("tf-keras"), versions.get(
        "transformers")
    found = []
    if tensorflow is None:
        found.append(StackProblem(msg("TensorFlow is not installed."), f'pip install "{TENSORFLOW_RANGE}"'))
    if transformers is None:
        found.append(StackProblem(msg("Transformers is not installed."), f'pip install "{TRANSFORMERS_RANGE}"'))
    elif _minor(transformers)[0] >= 5:
        found.append(StackProblem(
            msg("Transformers {version} has no TensorFlow model classes: version 5 removed them. The TensorFlow "
                "models live on in Transformers 4.", version=transformers), f'pip install "{TRANSFORMERS_RANGE}"'))
    if tensorflow is not None and _minor(tensorflow) >= (2, 16):
        major, minor = _minor(tensorflow)
        wanted = f'pip install "tf-keras~={major}.{minor}.0"'
        if tf_keras is None:
            found.append(StackProblem(
                msg("TensorFlow {version} comes with Keras 3, and Transformers' TensorFlow models need Keras 2, the "
                    "tf-keras package, which is not installed.", version=tensorflow), wanted))
        elif _minor(tf_keras) != (major, minor):
            found.append(StackProblem(
                msg("tf-keras {keras} does not match TensorFlow {version}: tf-keras must have TensorFlow's minor "
                    "version.", keras=tf_keras, version=tensorflow), wanted))
    return found


def require_stack(versions: dict[str, str | None] | None = None) -> None:
    """Raise StackError naming the first problem and its fix; nothing when the stack can work."""
    problems = stack_problems(versions)
    if problems:
        raise StackError(msg("{finding} Fix: {fix}", finding=problems[0].finding, fix=problems[0].fix))


def require_tf_keras_model(model) -> None:
    """Raise StackError for a model built with Keras 3 (`import keras`, or `tf.keras` where TensorFlow was imported
    without TF_USE_LEGACY_KERAS=1), which the checks and Transformers' TF models, tf-keras models both, cannot
    train; nothing for any other object."""
    if any(kind.__module__.split(".")[0] == "keras" for kind in type(model).__mro__):
        raise StackError(msg(
            "The model is a Keras 3 model ({kind}): `import keras` and, since TensorFlow 2.16, `tf.keras` give Keras "
            "3, while Transformers' TensorFlow models and these checks use Keras 2 (tf-keras). Fix: {fix}",
            kind=type(model).__name__, fix="import tf_keras as keras  # or os.environ['TF_USE_LEGACY_KERAS'] = '1' "
                                           "before TensorFlow is imported (in a notebook, restart the kernel first)"))
