"""The tracer's child: runs a user's script with `fit`, `compile` and a loop's `apply_gradients` intercepted,
checks what each fit was given, and writes the report the parent reads back."""

from __future__ import annotations

import functools
import inspect
import json
import math
import os
from pathlib import Path
import sys
import threading
import traceback
from typing import Any
import weakref

from diagnostics.i18n import msg
from diagnostics.keras.keras_model import what_it_trains
from diagnostics.usercode.script_errors import _versions
from diagnostics.usercode.keeper import KEEPER_ENV, end_descendants, tie_to_parent
from diagnostics.usercode.trace_imports import announce_imports, announce_loading
from diagnostics.usercode.trace_loops import Loops, _LoopChecked
from diagnostics.usercode.trace_report import BRIEF_STEPS, MAX_CHECKED_FITS, Reports, _quiet_checks, place


_ABSENT = object()


class _Child(Loops, Reports):
    """The child's state: the spec, compile calls seen, and the report once written."""

    def __init__(self, spec: dict):
        self.spec = spec
        self.script = spec["script"]
        self.compiled: "weakref.WeakKeyDictionary[Any, dict]" = weakref.WeakKeyDictionary()
        self.reported = False
        self.fits = 0  # the script's fit calls so far
        self.checked_keys: list[tuple] = []  # what each checked fit trained, with what optimizer and rate
        self.reports: list[dict] = []  # each checked fit's report, in order
        self.unchecked: list[int] = []  # fits past MAX_CHECKED_FITS that train something new
        self.briefly: set[str] = set()  # the methods run briefly after the checks
        self.in_fit = 0  # fits running now (their apply_gradients calls are theirs)
        self.looped = False  # a custom loop's first apply_gradients was seen
        self.pending_loop: dict | None = None  # with --then-train, a tf.function loop is checked when the script ends
        # Per model, the train step Keras built (at its first fit after a compile): (fit, trainable ids, weights).
        self.steps_built: "weakref.WeakKeyDictionary[Any, tuple]" = weakref.WeakKeyDictionary()
        self.checking = False  # the checks' own fit and compile calls (on copies) pass straight through
        self._compiling = threading.local()
        self._patched: list[tuple[Any, str, Any]] = []  # (class, name, what its own __dict__ held before)

    def _patch(self, owner, name: str, value) -> None:
        self._patched.append((owner, name, owner.__dict__.get(name, _ABSENT)))
        setattr(owner, name, value)

    def uninstall(self) -> None:
        """Put back every method `install` replaced and close the `watch()` block: a process that traces several
        scripts in turn (the suite's matrix of script shapes) starts each from the libraries as they were."""
        for owner, name, before in reversed(self._patched):
            if before is _ABSENT:
                delattr(owner, name)
            else:
                setattr(owner, name, before)
        self._patched.clear()
        watching, self.watching = getattr(self, "watching", None), None
        if watching is not None:
            watching.__exit__(None, None, None)
        importing, self.importing = getattr(self, "importing", None), None
        if importing is not None:
            importing.close()


    # ------------------------------------------------------------ hooks

    def install(self) -> None:
        """Wrap what the checks need as the script imports it, never before: the script's imports resolve as they
        do when it runs alone (which Keras `tf.keras` is, above all), and its own errors are its own."""
        from diagnostics.usercode import hooks
        from diagnostics.usercode.after_import import AfterImport

        self.importing = AfterImport()
        # The script's own `map` calls run, rather than load a result an earlier run cached: its tokenizer call (its
        # truncation and max_length) is then seen. The rows are the same; only the time to make them is spent again.
        self.importing.when("datasets", lambda datasets: datasets.disable_caching())
        # Open for the whole script (the child process ends with it); held here, as a dropped block would close.
        self.watching = hooks.watch(self.importing.when)
        self.watching.__enter__()
        self.importing.when("tf_keras", self._install_keras)
        self.importing.when("transformers.modeling_tf_utils",
                            lambda module: self._wrap_compile(module.TFPreTrainedModel))
        self.importing.when("transformers.modeling_tf_utils",
                            lambda module: announce_loading(self, module.TFPreTrainedModel))
        announce_imports(self.importing, self.say)

    def _install_keras(self, tf_keras) -> None:
        """fit, evaluate, predict, compile and apply_gradients wrapped, once the script imports tf-keras (itself,
        or through Transformers' TF models)."""
        child = self
        keras_fit = tf_keras.Model.fit

        def fit(model, *args, **kwargs):
            if child.checking:
                return keras_fit(model, *args, **kwargs)
            child.fits += 1
            builds = getattr(model, "train_function", None) is None  # this fit builds the train step Keras runs
            trainable = [id(variable) for variable in model.trainable_variables]
            if child.to_check(model):
                child.checking = True
                try:
                    with _quiet_checks():
                        child.on_fit(model, args, kwargs, stale=None if builds else child.stale_step(model, trainable))
                finally:
                    child.checking = False
            if builds:
                child.steps_built[model] = (child.fits, trainable, _count(model.trainable_variables))
            child.in_fit += 1  # the optimizer's apply_gradients inside fit is fit's, not a custom loop's
            try:
                if child.spec.get("then_train"):
                    child.say(msg("Checks done: training goes on (--then-train)"))
                    return keras_fit(model, *args, **kwargs)
                return child.brief(keras_fit, model, args, kwargs, "fit")
            finally:
                child.in_fit -= 1

        self._patch(tf_keras.Model, "fit", fit)
        for method in ("evaluate", "predict"):
            self._bound(tf_keras.Model, method)
        self._wrap_compile(tf_keras.Model)
        for owner in (tf_keras.optimizers.Optimizer, tf_keras.optimizers.legacy.Optimizer):
            self._wrap_apply_gradients(owner)

    def stale_step(self, model, trainable: list[int]) -> tuple[int, int, int] | None:
        """(the fit that built it, the weights it trains, the weights marked trainable now) when this fit reuses a
        train step built before `trainable` changed: Keras traced it with the trainable weights of then."""
        built = self.steps_built.get(model)
        if built is None or built[1] == trainable:
            return None
        return built[0], built[2], _count(model.trainable_variables)

    def to_check(self, model) -> bool:
        """Whether this fit is checked: the first, and each later one that trains other weights, with another
        optimizer or at another rate (freeze-then-fine-tune's second phase); a fit that repeats a checked one (a
        loop of fits, one epoch each) is not checked again, and after MAX_CHECKED_FITS none is."""
        from diagnostics.keras.optimizers import current_rate

        try:
            rate = current_rate(model)
        except Exception:
            rate = None
        key = (id(model), tuple(id(variable) for variable in model.trainable_variables),
               id(getattr(model, "optimizer", None)), rate)
        if key in self.checked_keys:
            return False
        if len(self.checked_keys) >= MAX_CHECKED_FITS:
            self.unchecked.append(self.fits)
            return False
        self.checked_keys.append(key)
        return True

    def brief(self, original, model, args: tuple, kwargs: dict, method: str):
        """A fit, evaluate or predict after the checks, run for BRIEF_STEPS steps (one epoch, no callbacks) so the
        script goes on to what follows (its next fit) in seconds rather than the whole run it asked for."""
        bound = inspect.signature(original).bind(model, *args, **kwargs)
        arguments = dict(bound.arguments)
        arguments.pop("self", None)
        arguments.update(kwargs)  # **kwargs as given
        arguments.pop("kwargs", None)
        # No callbacks, workers or output of the script's own: a few steps in this process (workers=-1, which
        # tf-keras refuses, is said in the fit's notes).
        arguments.update(callbacks=None, verbose=0, workers=1, use_multiprocessing=False)
        steps_name = "steps_per_epoch" if method == "fit" else "steps"
        # Arrays are batched as the script's own call batches them: given steps and no batch size, Keras makes each
        # batch rows / steps long (two steps of 700 rows: batches of 350, 9 GB on a six-layer encoder, not 2 GB).
        rows = _array_rows(arguments.get("x"))
        if rows is not None and arguments.get("batch_size") is None:
            asked = arguments.get(steps_name)
            arguments["batch_size"] = math.ceil(rows / asked) if isinstance(asked, int) and asked > 0 else \
                DEFAULT_BATCH_SIZE
        if method == "fit":
            arguments.update(epochs=1, initial_epoch=0, steps_per_epoch=_bounded(arguments.get("steps_per_epoch")))
            if arguments.get("validation_data") is not None:
                arguments["validation_steps"] = _bounded(arguments.get("validation_steps"))
        else:
            arguments["steps"] = _bounded(arguments.get("steps"))
        first = method not in self.briefly
        if first:  # the report's note names the methods that ran briefly
            self.briefly.add(method)
            self.write_fits()
        if method == "fit" or first:  # each fit said; an evaluate or predict the first time
            self.say(msg("Checks done: the script's {method} runs {steps} steps, so the script goes on", method=method,
                         steps=BRIEF_STEPS))
        # Eagerly: tracing and optimising the script's own step for two steps took longer than the steps (3.4 s on the
        # demo kit's model, about 10 s on a six-layer transformer, against 0.5 s and 2 s eagerly). The checks ran
        # on Keras's traced step of a copy, so a step that fails only when traced was found there. The step Keras
        # keeps for the model's next fit is then this eager one, which only these brief runs ever call (--then-train
        # trains in full from the first fit); what a later fit reuses without a compile is still counted as Keras
        # would (`stale_step`). A ParameterServerStrategy cannot run eagerly: its step is traced.
        previous = getattr(model, "_run_eagerly", None)
        if getattr(model, "_cluster_coordinator", None) is None:
            model._run_eagerly = True
        try:
            return original(model, **arguments)
        finally:
            model._run_eagerly = previous

    def _bound(self, owner, method: str) -> None:
        """After the checks, the script's evaluate and predict run briefly too (`brief`), unless --then-train."""
        original = getattr(owner, method)
        child = self

        @functools.wraps(original)
        def bounded(model, *args, **kwargs):
            if child.checking or not child.reports or child.spec.get("then_train"):
                return original(model, *args, **kwargs)
            return child.brief(original, model, args, kwargs, method)

        self._patch(owner, method, bounded)

    def _wrap_compile(self, owner) -> None:
        original = owner.__dict__["compile"]
        child = self

        signature = inspect.signature(original)

        @functools.wraps(original)  # Transformers reads Keras's compile signature
        def compile(model, *args, **kwargs):
            outer = not getattr(child._compiling, "active", False) and not child.checking
            if outer:
                bound = signature.bind(model, *args, **kwargs)
                bound.apply_defaults()
                frame = child._script_frame(sys._getframe(1))
                child.compiled[model] = {"optimizer": bound.arguments.get("optimizer"),
                                         "loss": bound.arguments.get("loss"),
                                         "metrics": bound.arguments.get("metrics"),
                                         "at": (frame.f_code.co_filename, frame.f_lineno) if frame else None}
            child._compiling.active = True
            try:
                return original(model, *args, **kwargs)
            finally:
                if outer:
                    child._compiling.active = False

        self._patch(owner, "compile", compile)

    # ------------------------------------------------------------ fit reached

    def on_fit(self, model, args: tuple, kwargs: dict, *, stale: tuple[int, int, int] | None = None) -> None:
        """Run the checks on what this fit got, as the fit's report (the report file holds every checked fit's)."""
        from diagnostics.core.libraries import import_libraries
        from diagnostics.usercode.api import capture

        import_libraries()  # imported by the script by now: their objects frozen, so the checks' collections skip them
        from diagnostics.usercode.own_code import fit_steps
        from diagnostics.core.errors import InputError
        from diagnostics.usercode.read_back import arrays_as_dataset
        from diagnostics.usercode.fit_errors import (batch_encoding_to_keras, keras_3_callbacks,
                                                        threshold_metrics_on_logits)

        frame = self._script_frame(sys._getframe(1))
        where = place(self.script, frame.f_lineno if frame else None)
        number = len(self.reports) + 1
        self.say(msg("The script reached fit at {where}: running the checks on what it built", where=where)
                 if number == 1 else msg("The script reached fit {number} at {where}: running the checks on what it "
                                         "trains", number=number, where=where))
        x = args[0] if args else kwargs.get("x")
        y = args[1] if len(args) > 1 else kwargs.get("y")
        phase = {"fit": self.fits, "at": where, **what_it_trains(model, stale)}

        def captured():
            nonlocal x
            found = batch_encoding_to_keras(model, x, self.script, frame.f_lineno if frame else None)
            if found is not None:
                raise InputError(found[0], fix=found[1], kind="batch_encoding")
            found = keras_3_callbacks(kwargs.get("callbacks"))  # the brief fit after the checks runs none
            if found is not None:
                raise InputError(found[0], fix=found[1], kind="stack")
            compiled = self.compiled.get(model) or {}
            found = threshold_metrics_on_logits(model, compiled.get("metrics"), *(compiled.get("at") or (None, None)),
                                                loss=compiled.get("loss"))
            if found is not None:
                raise InputError(found[0], fix=found[1], kind="metrics")
            if y is not None:
                x = arrays_as_dataset(x, y, kwargs.get("batch_size"))
            found = capture(model, x, self._tokenizer(frame), self.spec.get("task"),
                            origin=f"{Path(self.script).name}")
            found.compile_args = self.compiled.get(model)
            found.stale_train_step = stale
            positional = dict(zip(("x", "y", "batch_size", "epochs"), args, strict=False))  # fit's own order
            found.planned_steps = fit_steps(x, {**positional, **kwargs})
            workers = kwargs.get("workers")
            if isinstance(workers, int) and workers < 1:  # fit would raise this before training (tf-keras 2.20)
                found.notes.append(msg("{finding} Fix: {fix}", finding=msg(
                    "fit(workers=-1) is refused by tf-keras {version} (older Keras read it as every core).",
                    version=_versions()["tf-keras"]), fix="model.fit(..., workers=1)  # or leave workers out"))
            found.namespace = frame.f_globals if frame else None
            return found

        self.checked(where, phase, captured)


    # ------------------------------------------------------------ an error before fit


def _count(variables) -> int:
    """The weights in these variables."""
    return sum(math.prod(int(size) for size in variable.shape) for variable in variables)


# Keras's batch size for arrays given with neither a batch size nor steps.
DEFAULT_BATCH_SIZE = 32


def _array_rows(x) -> int | None:
    """The rows of arrays Keras batches itself (a numpy array or tensor, or a dict, list or tuple of them; a
    DataFrame), None for data that comes in batches (a `tf.data.Dataset`, a `Sequence`, a generator)."""
    from collections.abc import Mapping

    import numpy

    first = x
    while isinstance(first, (Mapping, list, tuple)) and first:  # a BatchEncoding is a Mapping
        first = next(iter(first.values())) if isinstance(first, Mapping) else first[0]
    if isinstance(first, numpy.ndarray) or type(first).__name__ in ("EagerTensor", "DataFrame", "Series"):
        shape = getattr(first, "shape", None)
        if shape is not None and len(shape) > 0 and shape[0] is not None:
            return int(shape[0])
    return None


def _bounded(steps) -> int:
    return min(int(steps), BRIEF_STEPS) if isinstance(steps, int) and steps > 0 else BRIEF_STEPS


def child_main(spec_path: str) -> int:
    """Run the script of a spec with `fit` intercepted, writing the report (the child process's entry point); no
    process the script started outlives it."""
    spec = json.loads(Path(spec_path).read_text())
    tie_to_parent(int(os.environ.pop(KEEPER_ENV, None) or spec["parent"]))  # the keeper it runs under, or its caller
    try:
        return _run_child(spec)
    finally:
        end_descendants()


def _run_child(spec: dict) -> int:
    child = _Child(spec)
    child.say(msg("Running {name}", name=Path(spec["script"]).name))
    child.install()
    if spec.get("in_process"):
        argv, path = list(sys.argv), list(sys.path)
        try:
            return _run_installed(child, spec)
        finally:
            child.uninstall()
            sys.argv[:], sys.path[:] = argv, path
            _forget_the_scripts_globals()
    return _run_installed(child, spec)


def _forget_the_scripts_globals() -> None:
    """What a script sets for its whole process and the next script in the same process must not inherit: Keras's
    precision policy and its graph's names, and datasets' cache switch (`install` turned it off)."""
    import datasets
    import tf_keras

    tf_keras.mixed_precision.set_global_policy("float32")
    tf_keras.backend.clear_session()
    datasets.enable_caching()


def run_in_process(spec: dict) -> dict | None:
    """Trace one script in this process, as the child process would (hooks installed for the script alone, put
    back after it): the report written, or None. For a process that traces many scripts in turn (the suite's matrix
    of script shapes); `trace_script` runs each in a child process of its own, as a user's trace does."""
    _run_child({**spec, "in_process": True})
    path = Path(spec["report"])
    return json.loads(path.read_text()) if path.is_file() else None


def _seed_keras(tf_keras) -> None:
    """tf-keras's own generator of initializer seeds, as `tf_keras.utils.set_random_seed(0)` sets it."""
    import random

    from tf_keras.src import backend

    if hasattr(backend, "_SEED_GENERATOR"):
        backend._SEED_GENERATOR.generator = random.Random(0)


def _run_installed(child: "_Child", spec: dict) -> int:
    import runpy

    # Seeded as `run` is (seed 0), so two traces of one unseeded script build the same head and agree; a script
    # that seeds itself still wins. TensorFlow's seed is set once the script imports it.
    import random

    import numpy

    random.seed(0)
    numpy.random.seed(0)
    child.importing.when("tensorflow", lambda tf: tf.random.set_seed(0))
    child.importing.when("tf_keras", _seed_keras)
    sys.argv = [spec["script"], *spec["args"]]
    sys.path.insert(0, str(Path(spec["script"]).parent))
    try:
        try:
            runpy.run_path(spec["script"], run_name="__main__")
        finally:
            if child.pending_loop is not None:
                loop, child.pending_loop = child.pending_loop, None
                child.check_loop(loop, after_training=True)
    except _LoopChecked as checked:
        child.check_loop(checked.args[0])
    except SystemExit as exc:
        if not child.reports and exc.code not in (None, 0):
            child.on_error(RuntimeError(f"the script exited with status {exc.code} before fit"))
    except Exception as exc:
        if child.reports:  # a failure after the checks ran: their reports stand, with a note of it
            traceback.print_exc()
            child.write_fits(after=exc)
            return 0
        child.say(msg("The script raised {error} before fit: diagnosing it", error=type(exc).__name__))
        from diagnostics.usercode.script_errors import _classify

        if _classify(exc, str(exc))[0] == "other" and child.check_what_it_built(exc):
            return 0
        child.on_error(exc)
        return 0
    if child.reports:
        child.write_fits()
    elif not child.reported:
        child.write({"run": {}, "checks": [], "notes": [], "counts": {},
                     "script": {"path": spec["script"], "reached_fit": False, "fit_at": None, "error": None}})
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        sys.exit(child_main(sys.argv[2]))
    sys.exit("usage: python -m diagnostics trace SCRIPT (this module is the tracer's child)")
