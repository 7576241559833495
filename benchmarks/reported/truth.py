"""The truth of each case: the buggy and the fixed script run plainly, as their reporter ran them: the error it
stopped on, or its held-out accuracy against the commonest label's share. A case is a training bug only when the
fixed script measurably beats the buggy one."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.reported import ROOT, Case

SCORE = re.compile(r"held-out accuracy ([0-9.]+) on (\d+) rows; majority class ([0-9.]+)")
ERROR = re.compile(r"^\s*(\w+(?:\.\w+)*(?:Error|Exception|Exit)\b.*)$", re.M)
# TensorFlow's wrappers of the error that says what happened: the last line naming an exception that is not one.
WRAPPERS = ("in user code:", "Graph execution error:")
NAN_LOSS = re.compile(r"\bloss: nan\b", re.I)
MARGIN = 0.05  # how much better than the buggy script (or than the commonest label) a fixed one must score


def plain_run(script: Path, arguments: list[str], timeout: float = 1800) -> dict:
    """`python SCRIPT ARGUMENTS` in a fresh process: its exit code, seconds, and its score or the error it stopped
    on (the last line naming an exception)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("TF_USE_LEGACY_KERAS", None)  # the user's environment, not the debugger's
    started = time.monotonic()
    try:
        done = subprocess.run([sys.executable, str(script), *arguments], cwd=ROOT, env=env, capture_output=True,
                              text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"exit": None, "seconds": round(time.monotonic() - started, 1), "error": f"timed out at {timeout} s"}
    run = {"exit": done.returncode, "seconds": round(time.monotonic() - started, 1),
           # What Keras's TerminateOnNaN would act on: a loss of nan in the progress Keras printed.
           "loss_nan": NAN_LOSS.search(done.stdout + done.stderr) is not None}
    if (score := SCORE.search(done.stdout)) is not None:
        run.update(accuracy=float(score.group(1)), rows=int(score.group(2)), majority=float(score.group(3)))
    elif errors := ERROR.findall(done.stderr):
        said = [error for error in errors if not error.rstrip().endswith(WRAPPERS)]
        run["error"] = (said or errors)[-1].strip()[:300]
    else:
        run["error"] = (done.stderr.strip().splitlines() or ["no output"])[-1][:300]
    return run


def learned(run: dict) -> bool:
    """Whether a run learned something: it finished and beat the commonest label's share by the margin."""
    return run.get("accuracy") is not None and run["accuracy"] >= run["majority"] + MARGIN


def training_bug(buggy: dict, fixed: dict) -> bool:
    """Whether the fix measurably mends the run: the buggy script stopped on an error the fixed one runs past to
    its score, or the fixed script learned and scored at least the margin higher. (A fixed run that finishes
    without learning, on too few rows of a hard task, still shows the error mended: the repair is then not judged,
    `score.judge`.)"""
    if fixed.get("accuracy") is None:
        return False
    return buggy.get("accuracy") is None or learned(fixed) and fixed["accuracy"] >= buggy["accuracy"] + MARGIN


def truth(case: Case, checkpoint: Path) -> dict:
    buggy = plain_run(case.script(), case.arguments(checkpoint))
    fixed = plain_run(case.script(fixed=True), case.arguments(checkpoint))
    return {"buggy": buggy, "fixed": fixed}
