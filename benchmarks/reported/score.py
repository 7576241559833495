"""The debugger's score on a case: the buggy script traced, the fixed one traced, and `trace --repair` with the
repaired script then run plainly. Each is judged from the trace's own JSON report (`judge`, testable on recorded
reports):

- detected: the check that owns the cause fails or warns on the buggy script (for a script stopped before fit whose
  owner is `error:KIND`, the trace's diagnosis of the error is of that kind);
- named right: detected, and its fix matches the accepted one (`fix_matches`);
- one voice: no second cause is named for the same bug: the owner's cause is named once, and no other cause's fix
  does what the accepted fix does (two checks never propose two rates); causes of other things (a padding warning)
  do not count against it;
- clean fixed: the fixed script's trace has no fail (its warnings are listed beside: each a measured finding of
  something else, such as padding, which the table shows);
- repaired: the repaired script, run plainly, learns as the fixed one does (within the truth's margin).
"""

from __future__ import annotations

import difflib
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks.reported import RESULTS, ROOT, Case
from benchmarks.reported.truth import MARGIN, learned, plain_run

FLAGGED = ("fail", "warn", "error")
REPORTS = RESULTS / "reports"


def traced(script: Path, arguments: list[str], work: Path, repair: Path | None = None, timeout: float = 2400) -> dict:
    """The trace's JSON report of `script` (with `--repair` into `repair` when given)."""
    report = work / f"{script.stem}-{'repair' if repair else 'trace'}.json"
    command = [sys.executable, "-m", "diagnostics", "trace", str(script), "--json", str(report),
               *(["--repair", str(repair)] if repair else []), "--", *arguments]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    if not report.is_file():
        return {"failed": (done.stderr.strip().splitlines() or ["no report"])[-1][:300]}
    return json.loads(report.read_text())


def fits(report: dict) -> list[dict]:
    """Each checked fit's part of a trace report (the report itself for a single fit)."""
    from diagnostics.usercode.trace import fit_reports

    return fit_reports(report) if report.get("script", {}).get("reached_fit") else []


def flagged(report: dict) -> list[dict]:
    """Every check result that fails or warns, in every checked fit."""
    return [check for part in fits(report) or [report] for check in part.get("checks", [])
            if check.get("status") in FLAGGED]


def causes(report: dict) -> list[dict]:
    """The causes the trace names: each checked fit's (its owner and fix), or the error that stopped the script."""
    named = [cause for part in fits(report) for cause in part.get("causes") or []]
    error = (report.get("script") or {}).get("error")
    # Before fit, or at a fit whose checks could not run on what the script built: the trace's diagnosis.
    if error:
        named.append({"owner": f"error:{error.get('kind')}", "fix": error.get("fix") or ""})
        named += [cause for cause in report.get("causes") or []] if not report["script"].get("reached_fit") else []
    return named


def judge(case: Case, buggy: dict, fixed: dict, repaired_run: dict | None, fixed_truth: dict | None) -> dict:
    """The five verdicts on one case, from the traces' reports and the plain runs."""
    named = causes(buggy)
    mine = [cause for cause in named if cause.get("owner") == case.owner]
    detected = bool(mine) or any(check.get("id") == case.owner for check in flagged(buggy))
    fix = " ".join(str(cause.get("fix") or "") for cause in mine)
    named_right = detected and (case.fix_matches is None or re.search(case.fix_matches, fix) is not None)
    pattern = re.compile(case.fix_matches) if case.fix_matches else None
    rivals = [cause for cause in named if cause.get("owner") != case.owner
              and pattern is not None and pattern.search(str(cause.get("fix") or ""))]
    one_voice = detected and len(mine) <= 1 and not rivals
    failed = [check for check in flagged(fixed) if check.get("status") in ("fail", "error")]
    clean_fixed = not failed and not (fixed.get("script") or {}).get("error") and "failed" not in fixed
    repaired = None  # judged where the fixed script learns: a repair that writes nothing has not repaired it
    if fixed_truth is not None and learned(fixed_truth):
        repaired = repaired_run is not None and learned(repaired_run) \
            and repaired_run["accuracy"] >= fixed_truth["accuracy"] - MARGIN
    return {"detected": detected, "named_right": named_right, "one_voice": one_voice, "clean_fixed": clean_fixed,
            "repaired": repaired, "causes": [cause.get("owner") for cause in named], "fix": fix[:300],
            "fixed_flags": [f"{check.get('status')} {check.get('id')}" for check in flagged(fixed)]}


def slim(report: dict) -> dict:
    """What `judge` reads of a trace report (each fit's checks by id, status and fix, its causes, the script's
    error), small enough to keep beside the score and judge again in the suite."""
    def part(fit: dict) -> dict:
        return {"checks": [{key: check.get(key) for key in ("id", "status", "fix", "explained_by")}
                           for check in fit.get("checks") or []],
                "causes": [{key: cause.get(key) for key in ("owner", "fix", "cause")} for cause in fit.get("causes")
                           or []]}

    script = report.get("script") or {}
    kept = {**part(report), "script": {"reached_fit": script.get("reached_fit"),
                                       "error": {key: (script.get("error") or {}).get(key)
                                                 for key in ("kind", "type", "where", "finding", "fix")}
                                       if script.get("error") else None}}
    if report.get("later_fits"):
        kept["later_fits"] = [part(fit) for fit in report["later_fits"]]
    return {**kept, **({"failed": report["failed"]} if "failed" in report else {})}


def score(case: Case, checkpoint: Path, fixed_truth: dict | None) -> dict:
    """The case traced, its fix traced, and its repair run plainly; the slim reports are kept with the verdicts
    (`results/reports/`), so the suite judges them again."""
    arguments = case.arguments(checkpoint)
    with tempfile.TemporaryDirectory(prefix="tpd-reported-") as folder:
        work = Path(folder)
        buggy = slim(traced(case.script(), arguments, work))
        fixed = slim(traced(case.script(fixed=True), arguments, work))
        repaired_script = work / "repaired.py"
        traced(case.script(), arguments, work, repair=repaired_script)
        repaired_run = plain_run(repaired_script, arguments) if repaired_script.is_file() else None
        # What the repair changed, kept beside its run: a repair judged "no" is read from it.
        diff = "".join(difflib.unified_diff(case.script().read_text().splitlines(keepends=True),
                                            repaired_script.read_text().splitlines(keepends=True),
                                            "case.py", "repaired.py")) if repaired_script.is_file() else None
    recorded = {"buggy": buggy, "fixed": fixed, "repaired_run": repaired_run, "fixed_truth": fixed_truth,
                "repaired_diff": diff}
    REPORTS.mkdir(parents=True, exist_ok=True)
    (REPORTS / f"{case.slug}.json").write_text(json.dumps(recorded, indent=1) + "\n")
    return {**judge(case, buggy, fixed, repaired_run, fixed_truth), "repaired_run": repaired_run}
