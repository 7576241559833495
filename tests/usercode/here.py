"""Trace a script in the test's own process, as the tracer's child would (`trace_child.run_in_process`, which the
matrix of script shapes uses too), for the tests whose subject is what the checks find in a script, not the child
process: the process's imports serve every trace, where a child pays TensorFlow's and Transformers' import again
(about 5 s on 2 cores). The child itself (its time limit, its output relay, what it leaves behind, the command line
around it) is tested through `trace_script` and `main(["trace", ...])` in tests/usercode/test_own_code.py, the
script page's tests and the browser's."""

from __future__ import annotations

import os
from pathlib import Path
import tempfile


def spec_of(script: Path, script_args, folder: Path, *, stages=None, skip=None, asked=None, tokenizer=None,
            task=None) -> dict:
    """The tracer child's spec for tracing `script` in this process, its report and progress files in `folder`."""
    return {"script": str(script), "args": [str(arg) for arg in script_args or []], "stages": stages, "skip": skip,
            "asked": asked, "tokenizer": tokenizer, "task": task, "then_train": False, "thresholds": {},
            "parent": os.getpid(), "report": str(folder / "report.json"), "progress": str(folder / "progress.txt")}


def trace_here(script: str | Path, script_args: list[str] | None = None, *, stages: str | None = None,
               skip: str | None = None, asked: str | None = None, tokenizer: str | None = None,
               task: str | None = None, cwd: str | Path | None = None, capfd=None):
    """Trace `script` with these arguments in this process; the `TraceOutcome` `trace_script` gives for the same
    report. With pytest's `capfd`, the outcome's output is what the script and the tracer printed (what a child's
    captured output holds); else it is empty."""
    from diagnostics.usercode.trace import _judged, _read_report
    from diagnostics.usercode.trace_child import run_in_process

    path = Path(script).resolve()
    if capfd is not None:
        capfd.readouterr()  # what the test printed before is not the script's
    with tempfile.TemporaryDirectory(prefix="tpd-here-") as work:
        spec = spec_of(path, script_args, Path(work), stages=stages, skip=skip, asked=asked, tokenizer=tokenizer,
                       task=task)
        before = os.getcwd()
        os.chdir(cwd or before)
        try:
            run_in_process(spec)
        finally:
            os.chdir(before)
        report = _read_report(Path(spec["report"]))
        progress = Path(spec["progress"])
        seen = progress.read_text().splitlines() if progress.is_file() else []
    output = ""
    if capfd is not None:
        captured = capfd.readouterr()
        output = captured.out + captured.err
    return _judged(path.name, report, timed_out=False, timeout=0, status=0, output=output, seen=seen)
