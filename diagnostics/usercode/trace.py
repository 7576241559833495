"""`python -m diagnostics trace SCRIPT`: run a user's training script in a child process with `fit` intercepted.

At each `fit` call the child captures the model, the dataset, the compile settings and the tokenizer the script
built and runs the checks on them (a fit that trains the same weights with the same optimizer and rate as one
checked before is not checked again), then lets that fit train a few steps so the script goes on to its next fit:
freeze-then-fine-tune is checked phase by phase. `then_train` lets every fit train in full. When the script fails
before `fit`, the exception itself is diagnosed. The parent (`trace_script`) waits for the child under a time limit,
relays its progress, and reads the report back.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import json
import math
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from diagnostics import QUIETED_ENV, SET_ON_IMPORT, TRACE_CHILD_ENV
from diagnostics.core.budget import time_left, time_left_text
from diagnostics.keras.keras_model import what_it_trains
from diagnostics.i18n import Text, from_data, joined, message_of, msg, msgn, to_data
from diagnostics.keras.internals import is_missing_column_error

PROJECT_ROOT = Path(__file__).resolve().parents[2]
EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT = 0, 1, 2
DEFAULT_TIMEOUT = 600.0
# After its checks a fit trains this many steps (and evaluate and predict run this many), so that a script goes on
# to its next fit (freeze-then-fine-tune's second phase) in seconds.
BRIEF_STEPS = 2
# At most this many fits are checked a trace (a hyperparameter search fits many models).
MAX_CHECKED_FITS = 4


# ---------------------------------------------------------------- the parent


@dataclass
class TraceOutcome:
    """What tracing a script gave.

    Attributes:
        report: the JSON report (None when the script never reached fit nor failed in a way the child could report).
        exit_code: 0 no check fails, 1 one fails or the script failed before fit, 2 unusable input or a time-out.
        message: one line saying what happened, for the command line or the page.
        output: the script's own output (when captured).
    """

    report: dict | None
    exit_code: int
    message: str
    output: str = ""
    progress: list[str] = field(default_factory=list)


def trace_script(script: str | Path, script_args: list[str] | None = None, *, stages: str | None = None,
                 skip: str | None = None, timeout: float = DEFAULT_TIMEOUT, tokenizer: str | None = None, task: str | None = None,
                 then_train: bool = False, capture_output: bool = False, cwd: str | Path | None = None,
                 progress: Callable[[str], None] | None = None) -> TraceOutcome:
    """Run `script` in a child process with `fit` intercepted; never raises for what the script does.

    Refused in hosted mode, whoever asks (the app's page, the command line, a caller of this function): a public
    deployment never runs code it is given."""
    from diagnostics.config import limits

    if limits.hosted() is not None:
        return TraceOutcome(None, EXIT_BAD_INPUT, msg("Hosted mode never runs code it is given, so it does not trace "
                                                      "scripts: run python -m diagnostics trace on your own machine."))
    if not (isinstance(timeout, (int, float)) and math.isfinite(timeout) and timeout > 0):
        return TraceOutcome(None, EXIT_BAD_INPUT, msg("The time limit must be a positive number of seconds, not "
                                                      "{timeout}.", timeout=timeout))
    path = Path(script).expanduser()
    if not path.is_file():
        return TraceOutcome(None, EXIT_BAD_INPUT, msg("No script at {path}.", path=path))
    with tempfile.TemporaryDirectory(prefix="tpd-trace-") as work:
        spec = {"script": str(path.resolve()), "args": list(script_args or []), "stages": stages, "skip": skip,
                "tokenizer": tokenizer, "task": task, "then_train": then_train, "parent": os.getpid(),
                "report": str(Path(work) / "report.json"), "progress": str(Path(work) / "progress.txt")}
        spec_path = Path(work) / "spec.json"
        spec_path.write_text(json.dumps(spec))
        # The script's environment as the user's: without what importing the debugger set to quiet itself.
        env = {**{key: value for key, value in os.environ.items() if key not in (*SET_ON_IMPORT, QUIETED_ENV)},
               TRACE_CHILD_ENV: "1", "PYTHONPATH": os.pathsep.join(
                   [str(PROJECT_ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])}
        output_file = open(Path(work) / "output.txt", "w+") if capture_output else None
        child = subprocess.Popen([sys.executable, "-m", "diagnostics.usercode.trace", "--child", str(spec_path)],
                                 cwd=str(cwd) if cwd else None, env=env, stdin=subprocess.DEVNULL,
                                 stdout=output_file, stderr=subprocess.STDOUT if output_file else None,
                                 start_new_session=True)
        seen: list[str] = []
        deadline = time.monotonic() + timeout
        timed_out = False
        try:
            while child.poll() is None:
                _relay(Path(spec["progress"]), seen, progress)
                if time.monotonic() > deadline:
                    timed_out = True
                    break
                time.sleep(0.2)
            _relay(Path(spec["progress"]), seen, progress)
        finally:  # a timeout, the caller interrupted or its progress callback raising, or a normal exit alike
            _stop(child)
        output = ""
        if output_file:
            output_file.seek(0)
            output = output_file.read()[-20000:]
            output_file.close()
        report_path = Path(spec["report"])
        report = _read_report(report_path)  # after a time-out too: the fits checked before it stand
    return _judged(path.name, report, timed_out=timed_out, timeout=timeout, status=child.returncode, output=output,
                   seen=seen)


def _judged(name: str, report: dict | None, *, timed_out: bool, timeout: float, status: int | None, output: str,
            seen: list[str]) -> TraceOutcome:
    """What a finished trace comes to: the child's report with its exit code and one-line finding."""
    reached = report is not None and report.get("script", {}).get("reached_fit")
    if timed_out and not reached:
        where = msg(" after reaching fit, while the checks ran") if any("reached fit" in line for line in seen) \
            else msg(" before reaching fit (a loop that never ends, or training without model.fit?)")
        return TraceOutcome(None, EXIT_BAD_INPUT, msg("{name} was stopped after {timeout:g} s{reached}; give a longer "
                                                      "--timeout if it is just slow.", name=name, timeout=timeout,
                                                      reached=where), output, seen)
    if report is None:
        return TraceOutcome(None, EXIT_BAD_INPUT, msg("{name} ended (exit status {status}) without a report: the "
                                                      "tracer itself failed; its output above says why.", name=name,
                                                      status=status), output, seen)
    script_info = report.get("script", {})
    if script_info.get("error") and not reached:
        error = script_info["error"]
        return TraceOutcome(report, EXIT_FAILED, msg("{name} stopped before fit at {where}: {finding}", name=name,
                                                     where=error["where"], finding=script_finding(error)), output,
                            seen)
    if not reached:
        return TraceOutcome(report, EXIT_BAD_INPUT, msg("{name} ended without calling fit: nothing to check.",
                                                        name=name), output, seen)
    fits = fit_reports(report)
    failing, parts = False, []
    for fit in fits:
        # Counted by cause: a finding another check's cause explains counts once, at its owner.
        found_causes = fit.get("causes") or []
        error = fit.get("error") or (script_info.get("error") if fit is report else None)
        failing = failing or bool(error) or any(cause["status"] in ("fail", "error") for cause in found_causes)
        counts = {state: sum(cause["status"] == state for cause in found_causes) for state in ("fail", "error", "warn")}
        failed, warned = counts["fail"] + counts["error"], counts["warn"]
        found = script_finding(error) if error else joined([part for part in (
            msgn("{count} cause fails", "{count} causes fail", failed) if failed else None,
            msgn("{count} cause warns", "{count} causes warn", warned) if warned else None)
            if part is not None]) if failed or warned else msg("no check fails")
        parts.append(found if len(fits) == 1 else msg("fit {number} at {where}: {found}", found=found,
                                                       number=fit["phase"]["fit"], where=fit["phase"]["at"]))
    if script_info.get("loop"):
        message = msg("{name} reached the first apply_gradients of its training loop at {where}; checked what it "
                      "built: {found}.", name=name, where=script_info["fit_at"], found=parts[0])
    elif len(fits) == 1:
        message = msg("{name} reached fit at {where}; checked what it built: {found}.", name=name,
                      where=script_info["fit_at"], found=parts[0])
    else:
        message = msg("{name} reached fit {count} times; checked what each trains: {found}.", name=name,
                      count=script_info.get("fits", len(fits)), found=joined(parts, "; "))
    if timed_out:
        message = msg("{message} It was stopped after {timeout:g} s: these are the checks it finished.",
                      message=message, timeout=timeout)
    return TraceOutcome(report, EXIT_FAILED if failing else EXIT_OK, message, output, seen)


def _read_report(path: Path) -> dict | None:
    """The child's report; None when it wrote none, or one cut short (a child killed while writing)."""
    try:
        report = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return report if isinstance(report, dict) and isinstance(report.get("checks", []), list) else None


def script_finding(error: dict) -> Any:
    """What a script's error before fit means, translatable when the report carries its sentence."""
    sentence = from_data(error.get("finding_sentence"))
    return sentence if sentence is not None and str(sentence) == error.get("finding") else error.get("finding")


def script_fix(error: dict) -> Any:
    sentence = from_data(error.get("fix_sentence"))
    return sentence if sentence is not None and str(sentence) == error.get("fix") else error.get("fix")


def _relay(progress_file: Path, seen: list[str], progress) -> None:
    """Pass on the child's new progress lines (each a JSON sentence, so it can be translated)."""
    if not progress_file.is_file():
        return
    lines = progress_file.read_text().splitlines()
    for line in lines[len(seen):]:
        try:
            said = from_data(json.loads(line))
        except ValueError:
            said = line
        seen.append(str(said))
        if progress:
            progress(said)


def _stop(child: subprocess.Popen) -> None:
    """End the child and everything it started: its process group (the child leads one), and its descendants that
    left the group for a session of their own. After a normal exit this ends what the script left running."""
    import psutil

    try:
        family = psutil.Process(child.pid).children(recursive=True) if child.poll() is None else []
    except psutil.Error:
        family = []
    try:
        os.killpg(child.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    for process in family:
        with contextlib.suppress(psutil.Error):
            process.kill()
    if child.poll() is None:
        child.kill()
    child.wait()
    psutil.wait_procs(family, timeout=5)


def _end_descendants() -> None:
    """In the child: end every process the script started and left running (they were re-parented to the child,
    a subreaper), so none outlives the trace."""
    import psutil

    family = psutil.Process().children(recursive=True)
    for process in family:
        with contextlib.suppress(psutil.Error):
            process.kill()
    psutil.wait_procs(family, timeout=5)


def _tie_to_parent(parent: int) -> None:
    """In the child, on Linux: die with the process that started the trace (even a killed one), and adopt the
    script's orphaned processes (a daemon it double-forks), so `_end_descendants` finds them."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    pr_set_pdeathsig, pr_set_child_subreaper = 1, 36
    libc.prctl(pr_set_pdeathsig, signal.SIGTERM)
    libc.prctl(pr_set_child_subreaper, 1)
    signal.signal(signal.SIGTERM, lambda *_: (_end_descendants(), os._exit(143)))
    if os.getppid() != parent:  # the parent was gone before the death signal was set
        _end_descendants()
        os._exit(143)


# ---------------------------------------------------------------- the child


class _Child:
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

    def checks_progress(self):
        """The checks' progress as lines for the parent: the step, how far along, and from the pace so far how
        long is left."""
        started = time.monotonic()

        def progress(fraction: float, text) -> None:
            left = time_left(time.monotonic() - started, fraction)
            self.say(msg("{text} ({fraction:.0%})", text=text, fraction=fraction) if left is None else
                     msg("{text} ({fraction:.0%}, {left})", text=text, fraction=fraction, left=time_left_text(left)))

        return progress

    def say(self, text: str) -> None:
        """One progress line for the parent: a JSON sentence (one line; JSON escapes new lines)."""
        with open(self.spec["progress"], "a") as handle:
            handle.write(json.dumps(to_data(text)) + "\n")

    # ------------------------------------------------------------ hooks

    def install(self) -> None:
        import datasets
        import tf_keras
        from transformers import modeling_tf_utils

        from diagnostics.usercode import hooks

        # The script's own `map` calls run, rather than load a result an earlier run cached: its tokenizer call (its
        # truncation and max_length) is then seen. The rows are the same; only the time to make them is spent again.
        datasets.disable_caching()

        # Open for the whole script (the child process ends with it); held here, as a dropped block would close.
        self.watching = hooks.watch()
        self.watching.__enter__()
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

        tf_keras.Model.fit = fit
        for method in ("evaluate", "predict"):
            self._bound(tf_keras.Model, method)
        for owner in (modeling_tf_utils.TFPreTrainedModel, tf_keras.Model):
            self._wrap_compile(owner)
        for owner in (tf_keras.optimizers.Optimizer, tf_keras.optimizers.legacy.Optimizer):
            self._wrap_apply_gradients(owner)

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
                    "where": f"{Path(child.script).name} line {frame.f_lineno}" if frame else Path(child.script).name,
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

        owner.apply_gradients = apply_gradients

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

    def on_loop(self, optimizer, variables: list, where: str, scopes: list[dict], namespace) -> None:
        """The checks on a custom loop's first update, as the report of its one checked step."""
        from diagnostics.usercode.api import capture
        from diagnostics.core.errors import InputError

        self.say(msg("The script's training loop reached apply_gradients at {where}: running the checks on what it "
                     "built", where=where))
        model = _owner_of(variables, scopes)
        phase = {"fit": 1, "at": where, "loop": True, **(what_it_trains(model) if model is not None else {})}

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

    def _scopes(self, frame) -> list[dict]:
        """The script's local and global names, innermost frame first."""
        scopes = []
        while frame is not None:
            if os.path.abspath(frame.f_code.co_filename) == self.script:
                scopes += [frame.f_locals, frame.f_globals]
            frame = frame.f_back
        return scopes

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
        if method == "fit":
            arguments.update(epochs=1, initial_epoch=0, steps_per_epoch=_bounded(arguments.get("steps_per_epoch")))
            if arguments.get("validation_data") is not None:
                arguments["validation_steps"] = _bounded(arguments.get("validation_steps"))
        else:
            arguments["steps"] = _bounded(arguments.get("steps"))
        if method not in self.briefly:  # the report's note names the methods that ran briefly
            self.briefly.add(method)
            self.write_fits()
        return original(model, **arguments)

    def _bound(self, owner, method: str) -> None:
        """After the checks, the script's evaluate and predict run briefly too (`brief`), unless --then-train."""
        original = getattr(owner, method)
        child = self

        @functools.wraps(original)
        def bounded(model, *args, **kwargs):
            if child.checking or not child.reports or child.spec.get("then_train"):
                return original(model, *args, **kwargs)
            return child.brief(original, model, args, kwargs, method)

        setattr(owner, method, bounded)

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
                child.compiled[model] = {"optimizer": bound.arguments.get("optimizer"),
                                         "loss": bound.arguments.get("loss")}
            child._compiling.active = True
            try:
                return original(model, *args, **kwargs)
            finally:
                if outer:
                    child._compiling.active = False

        owner.compile = compile

    # ------------------------------------------------------------ fit reached

    def on_fit(self, model, args: tuple, kwargs: dict, *, stale: tuple[int, int, int] | None = None) -> None:
        """Run the checks on what this fit got, as the fit's report (the report file holds every checked fit's)."""
        from diagnostics.usercode.api import capture
        from diagnostics.usercode.own_code import arrays_as_dataset

        frame = self._script_frame(sys._getframe(1))
        where = f"{Path(self.script).name} line {frame.f_lineno}" if frame else Path(self.script).name
        number = len(self.reports) + 1
        self.say(msg("The script reached fit at {where}: running the checks on what it built", where=where)
                 if number == 1 else msg("The script reached fit {number} at {where}: running the checks on what it "
                                         "trains", number=number, where=where))
        x = args[0] if args else kwargs.get("x")
        y = args[1] if len(args) > 1 else kwargs.get("y")
        phase = {"fit": self.fits, "at": where, **what_it_trains(model, stale)}

        def captured():
            nonlocal x
            if y is not None:
                x = arrays_as_dataset(x, y, kwargs.get("batch_size"))
            found = capture(model, x, self._tokenizer(frame), self.spec.get("task"),
                            origin=f"{Path(self.script).name}")
            found.compile_args = self.compiled.get(model)
            found.stale_train_step = stale
            workers = kwargs.get("workers")
            if isinstance(workers, int) and workers < 1:  # fit would raise this before training (tf-keras 2.20)
                found.notes.append(msg("{finding} Fix: {fix}", finding=msg(
                    "fit(workers=-1) is refused by tf-keras {version} (older Keras read it as every core).",
                    version=_versions()["tf-keras"]), fix="model.fit(..., workers=1)  # or leave workers out"))
            found.namespace = frame.f_globals if frame else None
            return found

        self.checked(where, phase, captured)

    def checked(self, where: str, phase: dict, captured: Callable[[], Any]) -> None:
        """Run the checks on what `captured()` finds (a fit's or a loop's objects) as one checked fit's report, and
        write the report file; what the checks cannot take is said, never a traceback."""
        from diagnostics.core.errors import InputError
        from diagnostics.usercode.own_code import build_run
        from diagnostics.walk.stages import parse_skip, parse_stages, run_stages
        from diagnostics.report.formats import build_report

        try:
            found = captured()
            run = build_run(found)
            results = run_stages(run, parse_stages(self.spec.get("stages")), progress=self.checks_progress(),
                                 skip=parse_skip(self.spec.get("skip")))
            report = build_report(run.config, results)
            report.update(_notes(found.notes))
        except Exception as exc:
            finding = message_of(exc) if isinstance(exc, InputError) else \
                msg("The checks could not run on what the script built: {error}: {message}",
                    error=type(exc).__name__, message=str(exc))
            report = {"run": {}, "checks": [], "notes": [], "counts": {},
                      "error": {"kind": "input", "type": type(exc).__name__, "message": str(exc)[:2000],
                                "where": where, "code": "", **_said("finding", finding), "fix": None,
                                "traceback": "".join(traceback.format_exception(exc))[-8000:]}}
        report["phase"] = phase
        self.reports.append(report)
        self.write_fits()

    def write_fits(self, after: BaseException | None = None) -> None:
        """The report file: the first checked fit's report, the later ones under "later_fits", what the script did
        after the checks, and where it stopped."""
        if not self.reports:
            return
        first = self.reports[0]
        info = {"path": self.script, "reached_fit": True, "fit_at": first["phase"]["at"], "fits": self.fits,
                "loop": bool(first["phase"].get("loop")), "error": first.get("error")}
        report = {key: value for key, value in first.items() if key != "error"}
        report["later_fits"] = [{key: value for key, value in later.items()} for later in self.reports[1:]]
        notes = []
        if self.briefly and not self.spec.get("then_train"):
            notes.append(msg("After the checks, each {methods} ran {steps} steps (no callbacks), not what the script "
                             "asked for, so the script went on to its next fit; --then-train runs them in full.",
                             methods="/".join(sorted(self.briefly)), steps=BRIEF_STEPS))
        if self.unchecked:
            notes.append(msg("Fits {fits} were not checked: at most {count} fits are checked a trace.",
                             fits=", ".join(map(str, self.unchecked)), count=MAX_CHECKED_FITS))
        if after is not None:
            notes.append(msg("After the checks the script raised {error}: {message}", error=type(after).__name__,
                             message=(str(after).strip().splitlines() or [""])[0][:300]))
        info.update(_notes(notes))  # the trace's own notes; each fit's are in its report
        report["script"] = info
        self.write(report)

    def write(self, report: dict) -> None:
        """Write the report whole or not at all (a parent that stops the child mid-write reads the last one)."""
        from diagnostics.core.result import to_json

        path = Path(self.spec["report"])
        partial = path.with_suffix(".partial")
        partial.write_text(json.dumps(to_json(report), indent=2))
        os.replace(partial, path)
        self.reported = True

    def _script_frame(self, frame):
        """The innermost frame running the user's script."""
        while frame is not None:
            if os.path.abspath(frame.f_code.co_filename) == self.script:
                return frame
            frame = frame.f_back
        return None

    def _tokenizer(self, frame):
        """The tokenizer the script built: --tokenizer, else one among the script's objects (or its collator's)."""
        return self._tokenizer_in(self._scopes(frame))

    def _tokenizer_in(self, scopes: list[dict]):
        """The tokenizer among these names (or a collator's), or --tokenizer's."""
        if self.spec.get("tokenizer"):
            from diagnostics.keras import loading

            return loading.load_tokenizer(self.spec["tokenizer"])
        from transformers import PreTrainedTokenizerBase

        for scope in scopes:
            for value in list(scope.values()):
                if isinstance(value, PreTrainedTokenizerBase):
                    return value
                inner = getattr(value, "tokenizer", None)
                if isinstance(inner, PreTrainedTokenizerBase):
                    return inner
        return None

    # ------------------------------------------------------------ an error before fit

    def on_error(self, exc: BaseException) -> None:
        """Diagnose an exception the script raised before fit, and write the report."""
        from diagnostics.usercode import hooks
        from diagnostics.walk.registry import CHECKS, run_check_ids
        from diagnostics.core.result import skipped

        frames = [entry for entry in traceback.extract_tb(exc.__traceback__)
                  if os.path.abspath(entry.filename) == self.script]
        last = frames[-1] if frames else None
        where = f"{Path(self.script).name} line {last.lineno}" if last else Path(self.script).name
        code = (last.line or "").strip() if last else ""
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        kind, finding, fix = _classify(exc, message)
        info = {"path": self.script, "reached_fit": False, "fit_at": None,
                "error": {"kind": kind, "type": type(exc).__name__, "message": str(exc)[:2000], "where": where,
                          "code": code, **_said("finding", finding), **_said("fix", fix),
                          "traceback": "".join(traceback.format_exception(exc))[-8000:]}}
        report: dict[str, Any] = {"run": {}, "checks": [], "notes": [], "counts": {}}
        if kind == "columns" and hooks.last_call:
            try:
                with _quiet_checks():
                    report = self._diagnose_columns(exc, hooks.last_call, where)
            except Exception as failure:  # the finding above stands without the Data stage
                report.update(_notes([msg("The Data stage could not run on the split: {error}: {message}",
                                          error=type(failure).__name__, message=str(failure))]))
            reason = msg("The script stopped before fit at {where} (see data.columns).", where=where)
            report["checks"] += [skipped(check, CHECKS[check].stage, reason).to_dict() for check in run_check_ids()
                                 if CHECKS[check].stage != "data" and check not in
                                 {c["id"] for c in report["checks"]}]
        report["script"] = info
        self.write(report)

    def _diagnose_columns(self, exc: BaseException, call: dict, where: str) -> dict:
        """The Data stage on the split and arguments of the `to_tf_dataset` call that raised."""
        from diagnostics.usercode.own_code import Captured, build_run
        from diagnostics.walk.stages import data_stage
        from diagnostics.report.formats import build_report

        frame = None
        tb = exc.__traceback__
        while tb is not None:
            if os.path.abspath(tb.tb_frame.f_code.co_filename) == self.script:
                frame = tb.tb_frame
            tb = tb.tb_next
        model = _find_model(frame)
        captured = Captured(model=model, tokenizer=self._tokenizer(frame), task=self.spec.get("task"),
                            source=call["source"], to_tf_dataset=call["kwargs"], origin=where)
        if model is not None:
            captured.compile_args = self.compiled.get(model)
        run = build_run(captured)
        report = build_report(run.config, data_stage(run))
        report.update(_notes(captured.notes))
        return report


@contextlib.contextmanager
def _quiet_checks():
    """Transformers' warnings and `datasets`' progress bars off while the checks run on what the script built, then
    back to the script's own settings."""
    import datasets
    from transformers.utils import logging as transformers_logging

    level, bars = transformers_logging.get_verbosity(), datasets.is_progress_bar_enabled()
    transformers_logging.set_verbosity_error()
    datasets.disable_progress_bars()
    try:
        yield
    finally:
        transformers_logging.set_verbosity(level)
        if bars:
            datasets.enable_progress_bars()


def _count(variables) -> int:
    """The weights in these variables."""
    return sum(math.prod(int(size) for size in variable.shape) for variable in variables)


def _bounded(steps) -> int:
    return min(int(steps), BRIEF_STEPS) if isinstance(steps, int) and steps > 0 else BRIEF_STEPS


def fit_reports(report: dict) -> list[dict]:
    """Each checked fit's report, in order: the first (the report's own keys) and the later ones."""
    return [report, *(report.get("later_fits") or [])]


def phase_title(fit: dict, count: int):
    """"fit 2 at train.py line 40: trains the head only (...)", or just where for a script with one fit."""
    phase = fit.get("phase") or {}
    trains = from_data(phase.get("trains_sentence"))
    trains = trains if trains is not None and str(trains) == phase.get("trains") else phase.get("trains")
    if count == 1:
        return msg("{where}: {trains}", where=phase.get("at", "?"), trains=trains) if trains else phase.get("at", "?")
    return msg("fit {number} at {where}: {trains}", number=phase.get("fit", "?"), where=phase.get("at", "?"),
               trains=trains or "?")


class _LoopChecked(BaseException):
    """Raised from a custom loop's first apply_gradients once its report is written: ends the script (a
    BaseException, so the script's own `except Exception` cannot swallow it)."""


def _owner_of(variables: list, scopes: list[dict]):
    """The Keras model among the script's objects whose trainable weights include those apply_gradients updates."""
    import tf_keras

    wanted = {id(variable) for variable in variables}
    for scope in scopes:
        for value in list(scope.values()):
            if isinstance(value, tf_keras.Model) and wanted & {id(v) for v in value.trainable_variables}:
                return value
    return None


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


def _notes(notes: list) -> dict:
    """A report's notes in English, with their sentences for translating them later."""
    return {"notes": [str(note) for note in notes], "notes_sentences": [to_data(note) for note in notes]}


def script_notes(report: dict) -> list:
    """A traced report's notes, translatable where the report carries their sentences."""
    notes, sentences = report.get("notes", []), report.get("notes_sentences") or []
    return [sentence if isinstance(sentence, Text) and str(sentence) == note else note
            for note, sentence in zip(notes, [from_data(data) for data in sentences] + [None] * len(notes))]


def _said(name: str, text) -> dict:
    """An error field in English, with its sentence for translating it later (when it is one)."""
    return {name: None if text is None else str(text),
            **({f"{name}_sentence": to_data(text)} if isinstance(text, Text) else {})}


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
    if isinstance(exc, (ValueError, TypeError)) and "keras.src." in text and (
            "Could not interpret" in text or "keras.src.optimizers" in text or "keras.src.losses" in text):
        return (msg("A Keras 3 object was given to a tf-keras (Keras 2) model: `import keras` and, since TensorFlow "
                    "2.16, `from tensorflow import keras` give Keras 3, while Transformers' TF models are tf-keras "
                    "models ({error}).", error=text.splitlines()[0][:200]), "import tf_keras as keras  # or os.environ['TF_USE_LEGACY_KERAS'] = '1' "
                "before TensorFlow is imported")
    return None


def _find_model(frame):
    """A Transformers TF model among the script's objects, when the script built one before it failed."""
    if frame is None:
        return None
    from transformers import TFPreTrainedModel

    for scope in (frame.f_locals, frame.f_globals):
        for value in list(scope.values()):
            if isinstance(value, TFPreTrainedModel):
                return value
    return None


def child_main(spec_path: str) -> int:
    """Run the script of a spec with `fit` intercepted, writing the report (the child process's entry point); no
    process the script started outlives it."""
    spec = json.loads(Path(spec_path).read_text())
    _tie_to_parent(spec["parent"])
    try:
        return _run_child(spec)
    finally:
        _end_descendants()


def _run_child(spec: dict) -> int:
    import runpy

    child = _Child(spec)
    child.say(msg("Running {name}", name=Path(spec["script"]).name))
    child.install()
    # Seeded as `run` is (seed 0), so two traces of one unseeded script build the same head and agree; a script
    # that seeds itself still wins.
    import tf_keras

    tf_keras.utils.set_random_seed(0)
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
    sys.exit("usage: python -m diagnostics trace SCRIPT (this module's own entry point is for the tracer's child)")
