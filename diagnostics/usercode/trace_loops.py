"""The tracer's child, for a custom training loop (a `tf.GradientTape` loop, no fit): checked at its first
`apply_gradients`, or at the error its training code raised before it, on the model, data, loss and optimizer found
among the script's objects."""

from __future__ import annotations

import functools
import os
from pathlib import Path
import sys

from diagnostics.i18n import msg
from diagnostics.keras.keras_model import what_it_trains
from diagnostics.usercode.trace import _notes, script_notes
from diagnostics.usercode.trace_report import _quiet_checks, place


class Loops:
    """The child's hooks and checks for a custom loop (a mixin of the child: its spec, script and reports)."""

    def _wrap_apply_gradients(self, owner) -> None:
        """A custom training loop (a `tf.GradientTape` loop, no fit) is checked at its first `apply_gradients`:
        the model whose weights it updates, the data and the loss found among the script's objects, the
        optimizer itself. The script then ends (`--then-train` lets it go on)."""
        original = owner.apply_gradients
        child = self

        @functools.wraps(original)
        def apply_gradients(optimizer, grads_and_vars, *args, **kwargs):
            if child.in_fit or child.checking or child.looped or child.reports:
                return original(optimizer, grads_and_vars, *args, **kwargs)
            pairs = list(grads_and_vars)
            child.looped = True
            frame = child._script_frame(sys._getframe(1))
            # What the checks need, held while the script's frames unwind: the checks run once they are gone (a
            # loop's tf.function may be tracing this call, where nothing can run eagerly).
            loop = {"optimizer": optimizer, "variables": [variable for _, variable in pairs],
                    "where": place(child.script, frame.f_lineno if frame else None),
                    "scopes": [dict(scope) for scope in child._scopes(frame)],
                    "namespace": frame.f_globals if frame else None}
            if not child.spec.get("then_train"):
                raise _LoopChecked(loop)
            import tensorflow as tf

            if tf.inside_function():  # a tf.function tracing its step: nothing runs eagerly until the script ends
                child.pending_loop = loop
            else:
                child.check_loop(loop)
            return original(optimizer, pairs, *args, **kwargs)

        self._patch(owner, "apply_gradients", apply_gradients)

    def check_loop(self, loop: dict, *, after_training: bool = False) -> None:
        self.checking = True
        try:
            with _quiet_checks():
                self.on_loop(**loop)
        finally:
            self.checking = False
        if after_training:  # said in that check's report, beside its notes
            self.reports[-1].update(_notes([*script_notes(self.reports[-1]), msg(
                "Checked after the script ended (--then-train with a tf.function step): the weights are those "
                "training left, not those it started from.")]))
            self.write_fits()

    def on_loop(self, optimizer, variables: list, where: str, scopes: list[dict], namespace,
                raised: str | None = None) -> None:
        """The checks on a custom loop's first update (or on the error it `raised` before it), as the report of its
        one checked step."""
        from diagnostics.usercode.api import capture
        from diagnostics.core.errors import InputError

        self.say(msg("The script raised {error} at {where}: running the checks on what it had built", error=raised,
                     where=where) if raised else
                 msg("The script's training loop reached apply_gradients at {where}: running the checks on what it "
                     "built", where=where))
        model = _owner_of(variables, scopes)
        phase = {"fit": 1, "at": where, "loop": True, **({"raised": raised} if raised else {}),
                 **(what_it_trains(model) if model is not None else {})}

        def captured():
            if model is None:
                raise InputError(msg("No Keras model among the script's objects holds the weights apply_gradients "
                                     "updates."))
            data, loss = _loop_data(scopes), _loop_loss(scopes)
            if data is None:
                raise InputError(msg("No dataset among the script's objects (a tf.data.Dataset, a "
                                     "keras.utils.Sequence): check the loop with diagnose(model, dataset, loss=..., "
                                     "optimizer=...)."))
            found = capture(model, data, self._tokenizer_in(scopes), self.spec.get("task"),
                            origin=Path(self.script).name)
            found.compile_args = {"optimizer": optimizer, "loss": loss}
            found.namespace = namespace
            found.notes.append(
                msg("A custom training loop: checked at its first apply_gradients with its optimizer and the loss "
                    "{loss} found among its objects.", loss=_describe_loss(loss)) if loss is not None else
                msg("A custom training loop: checked at its first apply_gradients with its optimizer and the model's "
                    "own loss (no Keras loss among its objects; diagnose(model, dataset, loss=...) takes the one it "
                    "computes)."))
            return found

        self.checked(where, phase, captured)

    def check_what_it_built(self, exc: BaseException) -> bool:
        """A script that raised in its own training code before any fit or update (a loop whose loss raises on labels
        out of range, as TensorFlow does on CPU) is checked on the Keras model and the dataset it had built, as its
        first update would have been, the error said beside the findings. False when it had built no model and no
        dataset, or the error did not come from TensorFlow, Keras or Transformers."""
        import tf_keras

        frame, tb, modules = None, exc.__traceback__, []
        while tb is not None:
            modules.append(tb.tb_frame.f_globals.get("__name__", ""))
            if os.path.abspath(tb.tb_frame.f_code.co_filename) == self.script:
                frame = tb.tb_frame
            tb = tb.tb_next
        # Training code: a model, layer, loss or op of TensorFlow, Keras or a Transformers model; not loading a
        # tokenizer or data (their errors are said as they are).
        training = any(name.startswith(("tensorflow.", "tf_keras.", "transformers.modeling_tf", "transformers.models."))
                       for name in modules)
        if frame is None or not training or any("tokeniz" in name or name.startswith("datasets.") for name in modules):
            return False
        scopes = self._scopes(frame)
        models = [value for scope in scopes for value in list(scope.values()) if isinstance(value, tf_keras.Model)]
        if not models or _loop_data(scopes) is None:
            return False
        model = max(models, key=lambda candidate: len(candidate.trainable_variables))  # the outermost holds the rest
        optimizers = (tf_keras.optimizers.Optimizer, tf_keras.optimizers.legacy.Optimizer)
        optimizer = next((value for scope in scopes for value in list(scope.values()) if isinstance(value, optimizers)),
                         None)
        where = place(self.script, frame.f_lineno)
        self.check_loop({"optimizer": optimizer, "variables": list(model.trainable_variables), "where": where,
                         "scopes": [dict(scope) for scope in scopes], "namespace": frame.f_globals,
                         "raised": type(exc).__name__})
        self.reports[-1].update(_notes([*script_notes(self.reports[-1]), msg(
            "The script raised {error} at {where} before its first update ({message}): checked what it had built "
            "there.", error=type(exc).__name__, where=where,
            message=(str(exc).strip().splitlines() or [""])[0][:300])]))
        self.write_fits()
        return True

    def _scopes(self, frame) -> list[dict]:
        """The script's local and global names, innermost frame first."""
        scopes = []
        while frame is not None:
            if os.path.abspath(frame.f_code.co_filename) == self.script:
                scopes += [frame.f_locals, frame.f_globals]
            frame = frame.f_back
        return scopes


class _LoopChecked(BaseException):
    """Raised from a custom loop's first apply_gradients once its report is written: ends the script (a
    BaseException, so the script's own `except Exception` cannot swallow it)."""


def _owner_of(variables: list, scopes: list[dict]):
    """The Keras model among the script's objects whose trainable weights include those apply_gradients updates."""
    import tf_keras

    # The model that holds the most of them: an encoder inside the user's functional model holds only some (the
    # head's are the outer model's alone); among equals, the innermost scope's first.
    wanted = {id(variable) for variable in variables}
    best, most = None, 0
    for scope in scopes:
        for value in list(scope.values()):
            if isinstance(value, tf_keras.Model):
                held = len(wanted & {id(v) for v in value.trainable_variables})
                if held > most:
                    best, most = value, held
    return best


def _loop_data(scopes: list[dict]):
    """The data a custom loop trains on: a batched tf.data.Dataset or a keras.utils.Sequence among the script's
    objects, innermost first, a training split's before others."""
    import tensorflow as tf
    import tf_keras

    found = [(name, value) for scope in scopes for name, value in list(scope.items())
             if isinstance(value, (tf.data.Dataset, tf_keras.utils.Sequence))]
    training = [value for name, value in found if "train" in name.lower()]
    return (training or [value for _, value in found] or [None])[0]


def _loop_loss(scopes: list[dict]):
    """The Keras loss a custom loop computes: a loss object (or a loss function of Keras's) among its objects."""
    import tf_keras

    for scope in scopes:
        for value in list(scope.values()):
            if isinstance(value, tf_keras.losses.Loss):
                return value
            if callable(value) and getattr(value, "__module__", "").startswith("tf_keras.src.losses") and \
                    not isinstance(value, type):
                return value
    return None


def _describe_loss(loss) -> str:
    if isinstance(loss, type) or not hasattr(loss, "get_config"):
        return getattr(loss, "__name__", repr(loss))
    settings = {key: value for key, value in loss.get_config().items() if key == "from_logits"}
    return f"{type(loss).__name__}({', '.join(f'{key}={value}' for key, value in settings.items())})"
