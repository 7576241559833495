"""The tracer's child, its reporting side: what it says while it checks, each fit's report as it is checked,
the report it writes for the parent, and a script that fails, diagnosed."""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
import traceback
from typing import Any, Callable

from diagnostics.core.budget import time_left_text
from diagnostics.core.progress import Lines
from diagnostics.i18n import message_of, msg, to_data
from diagnostics.usercode.script_errors import _classify
from diagnostics.usercode.trace import _notes, _said


# After its checks a fit trains this many steps (and evaluate and predict run this many), so that a script goes on
# to its next fit (freeze-then-fine-tune's second phase) in seconds.
BRIEF_STEPS = 2
# Seconds between two progress lines of the checks (each says what runs, how far, and how long is left).
LINE_EVERY_S = 3.0
# At most this many fits are checked a trace (a hyperparameter search fits many models).
MAX_CHECKED_FITS = 4


class Reports:
    """What `_Child` says and writes (a mixin: it reads the child's spec, its reports and its fits)."""

    def checks_progress(self):
        """The checks' progress as lines for the parent: what runs, how far along, and from the pace of a step
        how long is left (`core.progress`)."""

        lines = Lines(every=LINE_EVERY_S)

        def progress(fraction: float, text, left: float | None) -> None:
            # A few lines, not one a check or a step (`core.progress.Lines`); the heartbeat says one at least
            # every `runner.HEARTBEAT_S`.
            if not lines.due(str(text)):
                return
            self.say(msg("{text} ({fraction:.0%})", text=text, fraction=fraction) if left is None else
                     msg("{text} ({fraction:.0%}, {left})", text=text, fraction=fraction, left=time_left_text(left)))

        return progress

    def say(self, text: str) -> None:
        """One progress line for the parent: a JSON sentence (one line; JSON escapes new lines)."""
        with open(self.spec["progress"], "a") as handle:
            handle.write(json.dumps(to_data(text)) + "\n")

    def checked(self, where: str, phase: dict, captured: Callable[[], Any]) -> None:
        """Run the checks on what `captured()` finds (a fit's or a loop's objects) as one checked fit's report, and
        write the report file; what the checks cannot take is said, never a traceback."""
        from diagnostics.core.errors import InputError
        from diagnostics.usercode.own_code import build_run
        from diagnostics.walk.stages import parse_asked, parse_skip, parse_stages, run_stages
        from diagnostics.report.formats import build_report

        try:
            found = captured()
            run = build_run(found)

            def finished(results, pending) -> None:  # what a trace stopped at its limit keeps
                self.write_partial(phase, build_report(run.config, results + unreached(pending)), found.notes)

            results = run_stages(run, parse_stages(self.spec.get("stages")), progress=self.checks_progress(),
                                 skip=parse_skip(self.spec.get("skip")), asked=parse_asked(self.spec.get("asked")),
                                 thresholds=self.spec.get("thresholds") or None, finished=finished)
            report = build_report(run.config, results)
            report.update(_notes(found.notes))
        except Exception as exc:
            finding = message_of(exc) if isinstance(exc, InputError) else \
                msg("The checks could not run on what the script built: {error}: {message}",
                    error=type(exc).__name__, message=str(exc))
            report = {"run": {}, "checks": [], "notes": [], "counts": {},
                      "error": {"kind": getattr(exc, "kind", None) or "input", "type": type(exc).__name__,
                                "message": str(exc)[:2000],
                                "where": where, "code": "", **_said("finding", finding),
                                **_said("fix", getattr(exc, "fix", None)),
                                "traceback": "".join(traceback.format_exception(exc))[-8000:]}}
        report["phase"] = phase
        self.reports.append(report)
        self.write_fits()

    def write_partial(self, phase: dict, report: dict, notes) -> None:
        """The report file as it stands while this fit's checks go on: the finished checks, and the others as not
        reached, in case the trace is stopped before the next (a finished fit's report replaces it)."""
        report.update(_notes(notes))
        report["phase"] = phase
        self.reports.append(report)
        try:
            self.write_fits()
        finally:
            self.reports.pop()

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
        from diagnostics.keras.other_tokenizers import OTHER_LIBRARIES, adapted

        for scope in scopes:  # else another library's (BertWordPieceTokenizer, KerasHub's), read through Transformers
            for value in list(scope.values()):
                if type(value).__module__.startswith(OTHER_LIBRARIES):
                    found = adapted(value)
                    if found is not None:
                        return found
        return None

    def on_error(self, exc: BaseException) -> None:
        """Diagnose an exception the script raised before fit, and write the report."""
        from diagnostics.usercode import hooks
        from diagnostics.walk.registry import CHECKS, run_check_ids
        from diagnostics.core.result import skipped

        frames = [entry for entry in traceback.extract_tb(exc.__traceback__)
                  if os.path.abspath(entry.filename) == self.script]
        last = frames[-1] if frames else None
        where = place(self.script, last.lineno if last else None)
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


def place(script, line: int | None) -> str:
    """Where in the script: "train.py:43", as tracebacks and editors write it, the same in every language."""
    return f"{Path(script).name}:{line}" if line else Path(script).name


def unreached(units) -> list:
    """Each check of these units, skipped as not reached: what a report written mid-way says of what is still to run."""
    from diagnostics.core.result import NOT_RUN, skipped
    from diagnostics.walk import registry

    reason = msg("Not reached: the trace ended before this check's turn (its time limit came first).")
    return [skipped(check, registry.UNITS[unit].stage, reason, NOT_RUN)
            for unit in units for check in registry.unit_checks(unit)]


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
