"""Fixes that name a learning rate, written in the names the user's code uses: Keras as their code imports it
(`tf_keras`, `tf.keras` or an alias), the optimizer they built (`create_optimizer` kept with its schedule), and one
rate for every check, the sweep's once it has measured one (`causes.explain` writes them again at it)."""

from __future__ import annotations

import contextlib
import contextvars
import types
from dataclasses import dataclass
from typing import Any, Iterator

from diagnostics.config.schedule import Schedule
from diagnostics.i18n import Text

DEFAULT_KERAS = "tf_keras"  # the Keras that Transformers' TF models need on this stack


@dataclass(frozen=True)
class CodeStyle:
    """How the user's code writes an optimizer: Keras's name, the optimizer it built, its weight decay (AdamW's) and
    its planned schedule (create_optimizer's)."""

    keras: str = DEFAULT_KERAS
    optimizer: str = "Adam"  # a `config.OPTIMIZERS` key, or "other" with its class in `class_name`
    weight_decay: float = 0.0
    schedule: Schedule = Schedule()
    class_name: str = ""  # another optimizer's Keras class ("SGD")

    @classmethod
    def of(cls, config) -> "CodeStyle":
        return cls(config.keras_name, config.optimizer, config.weight_decay, config.schedule,
                   config.optimizer_shown if config.optimizer == "other" else "")


DEFAULT_STYLE = CodeStyle()  # frozen: one shared default
_STYLE: contextvars.ContextVar[CodeStyle] = contextvars.ContextVar("debugger_code_style", default=DEFAULT_STYLE)


@contextlib.contextmanager
def code_style(style: CodeStyle) -> Iterator[None]:
    """Within the block, rate fixes are written in `style` (the runner opens one for each run's configuration)."""
    token = _STYLE.set(style)
    try:
        yield
    finally:
        _STYLE.reset(token)


def keras_name() -> str:
    """How the code of the run being checked names Keras (for a fix that writes a Keras object)."""
    return _STYLE.get().keras


def written(rate: float) -> float:
    """A rate as a fix writes it, one significant digit ('2e-03' for the sweep's 0.0021544...): what "Apply the fix"
    sets is the rate the card shows."""
    return float(f"{rate:.0e}")


def optimizer_code(rate: float, style: CodeStyle) -> str:
    """The user's optimizer at `rate`, as their code would build it."""
    if style.optimizer == "create_optimizer":
        return style.schedule.code(rate)
    if style.optimizer == "AdamW":
        return f"{style.keras}.optimizers.AdamW(learning_rate={rate:.0e}, weight_decay={style.weight_decay:g})"
    if style.optimizer == "other" and style.class_name:
        return f"{style.keras}.optimizers.{style.class_name}(learning_rate={rate:.0e})"
    return f"{style.keras}.optimizers.Adam(learning_rate={rate:.0e})"


class RateFix(Text):
    """A fix that names a rate: the user's optimizer at it (`optimizer_code`), in the style of the run that made it,
    with a comment whose template is a catalog message ("{code}  # lower the rate"); `with_rate` writes it again at
    another rate, in the same style."""

    rate: float
    style: CodeStyle

    def __new__(cls, rate: float, comment: str = "{code}", style: CodeStyle | None = None):
        style = style or _STYLE.get()
        self = super().__new__(cls, comment, {"code": optimizer_code(rate, style)})
        self.rate, self.style = rate, style
        return self

    def __reduce__(self):
        return RateFix, (self.rate, self.template, self.style)

    def with_rate(self, rate: float) -> "RateFix":
        return RateFix(rate, self.template, self.style)


def keras_name_in(namespace: dict[str, Any]) -> str:
    """How a script or notebook names the Keras its Transformers model runs on, from its global names: a name bound
    to that Keras (`import tf_keras`, `import tf_keras as keras`, `from tensorflow import keras` with
    TF_USE_LEGACY_KERAS=1), else `<tf>.keras` when TensorFlow's own name leads there, else `tf_keras`."""
    import tf_keras

    def is_tf_keras(module) -> bool:
        try:
            return getattr(getattr(module, "optimizers", None), "Adam", None) is tf_keras.optimizers.Adam
        except Exception:  # a lazy loader that cannot load: not the Keras in use
            return False

    modules = [(name, value) for name, value in namespace.items()
               if isinstance(value, types.ModuleType) and not name.startswith("_")]
    for name, value in modules:
        if value is tf_keras or (value.__name__ != "tensorflow" and is_tf_keras(value)):
            return name
    for name, value in modules:
        if value.__name__ == "tensorflow" and is_tf_keras(getattr(value, "keras", None)):
            return f"{name}.keras"
    return DEFAULT_KERAS
