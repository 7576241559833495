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
import json
import math
import os
import secrets
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from diagnostics import QUIETED_ENV, SET_BY_DEBUGGER, TRACE_CHILD_ENV
from diagnostics.i18n import Text, from_data, joined, message_of, msg, msgn, to_data


PROJECT_ROOT = Path(__file__).resolve().parents[2]


EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT = 0, 1, 2


DEFAULT_TIMEOUT = 600.0
# The environment variable that marks every process of one trace (`_marked`).
TRACE_TOKEN_ENV = "DEBUGGER_TRACE_TOKEN"


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
                 skip: str | None = None, asked: str | None = None, timeout: float = DEFAULT_TIMEOUT,
                 tokenizer: str | None = None, task: str | None = None, then_train: bool = False,
                 capture_output: bool = False, cwd: str | Path | None = None,
                 thresholds: dict[str, dict[str, float]] | None = None,
                 progress: Callable[[str], None] | None = None,
                 tick: Callable[[float], None] | None = None, limit_name: str | Text = "--timeout") -> TraceOutcome:
    """Run `script` in a child process with `fit` intercepted; never raises for what the script does.

    `progress` gets each line the child says; `tick` the seconds so far, every fifth of a second; `limit_name` is
    what the caller calls the time limit (the page's box), for the hint when it stops the script. Whatever either
    raises (a page whose visitor left stops there) ends the child and everything it started, then propagates.

    Refused in hosted mode, whoever asks (the app's page, the command line, a caller of this function): a public
    deployment never runs code it is given."""
    from diagnostics.config import limits

    if limits.hosted() is not None:
        return TraceOutcome(None, EXIT_BAD_INPUT, msg("Hosted mode never runs code it is given, so it does not trace "
                                                      "scripts: run python -m diagnostics trace on your own machine."))
    if not (isinstance(timeout, (int, float)) and math.isfinite(timeout) and timeout > 0):
        return TraceOutcome(None, EXIT_BAD_INPUT, msg("The time limit must be a positive number of seconds, not "
                                                      "{timeout}.", timeout=timeout))
    from diagnostics.core.environment import StackError, require_stack

    try:
        require_stack()
    except StackError as exc:
        return TraceOutcome(None, EXIT_BAD_INPUT, message_of(exc))
    path = Path(script).expanduser()
    if not path.is_file():
        return TraceOutcome(None, EXIT_BAD_INPUT, msg("No script at {path}.", path=path))
    with tempfile.TemporaryDirectory(prefix="tpd-trace-") as work:
        spec = {"script": str(path.resolve()), "args": list(script_args or []), "stages": stages, "skip": skip,
                "asked": asked, "tokenizer": tokenizer, "task": task, "then_train": then_train,
                "thresholds": thresholds or {}, "parent": os.getpid(), "report": str(Path(work) / "report.json"),
                "progress": str(Path(work) / "progress.txt")}
        spec_path = Path(work) / "spec.json"
        spec_path.write_text(json.dumps(spec))
        # The script's environment as the user's: without what importing the debugger set to quiet itself.
        token = secrets.token_hex(16)  # every process of this trace inherits it, whatever session it moves to
        env = {**{key: value for key, value in os.environ.items() if key not in (*SET_BY_DEBUGGER, QUIETED_ENV)},
               TRACE_CHILD_ENV: "1", TRACE_TOKEN_ENV: token, "PYTHONPATH": os.pathsep.join(
                   [str(PROJECT_ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])}
        output_file = open(Path(work) / "output.txt", "w+") if capture_output else None
        # The child runs under a keeper (usercode/keeper.py), which ends whatever the script leaves, however it left.
        child = subprocess.Popen([sys.executable, "-m", "diagnostics.usercode.keeper", sys.executable, "-m",
                                  "diagnostics.usercode.trace_child", "--child", str(spec_path)],
                                 cwd=str(cwd) if cwd else None, env=env, stdin=subprocess.DEVNULL,
                                 stdout=output_file, stderr=subprocess.STDOUT if output_file else None,
                                 start_new_session=True)
        seen: list[str] = []
        deadline = time.monotonic() + timeout
        timed_out = False
        quiet = Quiet(time.monotonic())
        try:
            while child.poll() is None:
                said = _relay(Path(spec["progress"]), seen, progress)
                if progress is not None:
                    quiet.heard(said, progress)
                if tick is not None:
                    tick(time.monotonic() - (deadline - timeout))
                if time.monotonic() > deadline:
                    timed_out = True
                    break
                time.sleep(0.2)
            _relay(Path(spec["progress"]), seen, progress)
        finally:  # a timeout, the caller interrupted or its progress callback raising, or a normal exit alike
            _stop(child, token)
        output = ""
        if output_file:
            output_file.seek(0)
            output = output_file.read()[-20000:]
            output_file.close()
        report_path = Path(spec["report"])
        report = _read_report(report_path)  # after a time-out too: the fits checked before it stand
    return _judged(path.name, report, timed_out=timed_out, timeout=timeout, limit_name=limit_name,
                   status=child.returncode, output=output,
                   seen=seen)


def _judged(name: str, report: dict | None, *, timed_out: bool, timeout: float, status: int | None, output: str,
            seen: list[str], limit_name: str | Text = "--timeout") -> TraceOutcome:
    """What a finished trace comes to: the child's report with its exit code and one-line finding."""
    reached = report is not None and report.get("script", {}).get("reached_fit")
    if timed_out and not reached:
        where = msg(" after reaching fit, while the checks ran") if any("reached fit" in line for line in seen) \
            else msg(" before reaching fit (a loop that never ends, or training without model.fit?)")
        return TraceOutcome(None, EXIT_BAD_INPUT, msg("{name} was stopped after {timeout:g} s{reached}; give it a "
                                                      "longer time limit ({limit}) if it is just slow.", name=name,
                                                      timeout=timeout, reached=where, limit=limit_name), output, seen)
    if report is None and killed_by(status):
        return TraceOutcome(None, EXIT_BAD_INPUT, msg("{name} was killed by {signal}{why} before any fit was checked.",
                                                      name=name, signal=killed_by(status),
                                                      why=msg(" (most often the machine running out of memory)")
                                                      if killed_by(status) == "SIGKILL" else ""), output, seen)
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
    if script_info.get("loop") and fits[0]["phase"].get("raised"):
        message = msg("{name} raised {error} at {where} before its training loop's first update; checked what it had "
                      "built there: {found}.", name=name, error=fits[0]["phase"]["raised"], where=script_info["fit_at"],
                      found=parts[0])
    elif script_info.get("loop"):
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
    elif killed_by(status):
        message = msg("{message} Then the traced process was killed by {signal}{why}, before the script ended: what "
                      "it did after the checks above (a later fit's checks, if it reached one) was not checked.",
                      message=message, signal=killed_by(status),
                      why=msg(" (most often the machine running out of memory)") if killed_by(status) == "SIGKILL"
                      else "")
        failing = True  # a trace cut short is never a clean bill
    return TraceOutcome(report, EXIT_FAILED if failing else EXIT_OK, message, output, seen)


def killed_by(status: int | None) -> str | None:
    """The signal that ended the child ("SIGKILL"), from its exit status; None when it exited."""
    if status is None or status >= 0:
        return None
    try:
        return signal.Signals(-status).name
    except ValueError:
        return f"signal {-status}"


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


# Seconds without a line from the child (its script loading, say) after which the parent says it still runs.
QUIET_S = 10.0


@dataclass
class Quiet:
    """When the child last said something, and what: past `QUIET_S` seconds of silence (its script loading, say)
    the parent says the script still runs, how long since its last line and that line. The time since the start is
    the page's label's and the command line's own to say: a second count here went stale beside it."""

    since: float
    last: Any = None
    told: float | None = None

    def heard(self, said: list, progress) -> None:
        now = time.monotonic()
        if said:
            self.since, self.last, self.told = now, said[-1], None
        elif now - (self.told or self.since) >= QUIET_S:
            self.told = now
            progress(msg("Still running, nothing new for {quiet:.0f} s: {doing}", quiet=now - self.since,
                         doing=self.last if self.last is not None else msg("starting the script")))


def _relay(progress_file: Path, seen: list[str], progress) -> list:
    """Pass on the child's new progress lines (each a JSON sentence, so it can be translated); returns them."""
    if not progress_file.is_file():
        return []
    lines = progress_file.read_text().splitlines()
    new = []
    for line in lines[len(seen):]:
        try:
            said = from_data(json.loads(line))
        except ValueError:
            said = line
        seen.append(str(said))
        new.append(said)
        if progress:
            progress(said)
    return new


def _stop(child: subprocess.Popen, token: str) -> None:
    """End the child and everything it started: its process group (the child leads one), its descendants that
    left the group for a session of their own, and any process still carrying the trace's token in its environment
    (a daemon whose parents are gone: the script ended with os._exit or a signal before the child could end it).
    After a normal exit this ends what the script left running."""
    import psutil

    try:
        family = psutil.Process(child.pid).children(recursive=True) if child.poll() is None else []
    except psutil.Error:
        family = []
    try:
        os.killpg(child.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    if child.poll() is None:
        child.kill()
    child.wait()
    family += _marked(token)
    for process in family:
        with contextlib.suppress(psutil.Error):
            process.kill()
    psutil.wait_procs(family, timeout=5)


def _marked(token: str) -> list:
    """The processes whose environment carries this trace's token (the caller's own excepted)."""
    import psutil

    found = []
    for process in psutil.process_iter():
        with contextlib.suppress(psutil.Error):
            if process.pid != os.getpid() and process.environ().get(TRACE_TOKEN_ENV) == token:
                found.append(process)
    return found


def fit_reports(report: dict) -> list[dict]:
    """Each checked fit's report, in order: the first (the report's own keys) and the later ones."""
    return [report, *(report.get("later_fits") or [])]


def phase_title(fit: dict, count: int):
    """"fit 2 at train.py:40: trains the head only (...)", or just where for a script with one fit."""
    phase = fit.get("phase") or {}
    trains = from_data(phase.get("trains_sentence"))
    trains = trains if trains is not None and str(trains) == phase.get("trains") else phase.get("trains")
    if count == 1:
        return msg("{where}: {trains}", where=phase.get("at", "?"), trains=trains) if trains else phase.get("at", "?")
    return msg("fit {number} at {where}: {trains}", number=phase.get("fit", "?"), where=phase.get("at", "?"),
               trains=trains or "?")


def _notes(notes: list) -> dict:
    """A report's notes in English, with their sentences for translating them later."""
    return {"notes": [str(note) for note in notes], "notes_sentences": [to_data(note) for note in notes]}


def script_notes(report: dict) -> list:
    """A traced report's notes, translatable where the report carries their sentences."""
    notes, sentences = report.get("notes", []), report.get("notes_sentences") or []
    return [
        sentence if isinstance(sentence, Text) and str(sentence) == note else note
        for note, sentence in zip(notes, [from_data(data) for data in sentences] + [None] * len(notes), strict=False)
    ]


def _said(name: str, text) -> dict:
    """An error field in English, with its sentence for translating it later (when it is one)."""
    return {name: None if text is None else str(text),
            **({f"{name}_sentence": to_data(text)} if isinstance(text, Text) else {})}
