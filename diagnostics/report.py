"""The report: every check's result with the run and the library versions, as JSON, Markdown and a checklist."""

from __future__ import annotations

import platform
import re
from importlib import metadata

from diagnostics.config import RunConfig
from diagnostics.i18n import N_, _, current_language, localize
from diagnostics.registry import STAGE_ORDER
from diagnostics.result import SEVERITY, CheckResult, Status, worst_first

STATUS_MARKS = {Status.PASS: N_("PASS"), Status.WARN: N_("WARN"), Status.FAIL: N_("FAIL"), Status.ERROR: N_("ERROR"),
                Status.SKIP: N_("SKIP")}
PACKAGES = ("tensorflow", "tf-keras", "transformers", "datasets", "tokenizers", "numpy", "streamlit", "plotly")


def environment() -> dict[str, str]:
    """Python and library versions, so a report says what it ran on."""
    versions = {"python": platform.python_version()}
    for package in PACKAGES:
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = "not installed"
    return versions


def build_report(config: RunConfig, results: list[CheckResult], *, resolved_checkpoint: str | None = None) -> dict:
    """The JSON report: `{"run": ..., "environment": ..., "checks": [...]}` (English; `run.language` records the
    language the person who made it read it in)."""
    run = config.to_dict()
    run["language"] = current_language()
    if resolved_checkpoint:
        run["resolved_checkpoint"] = resolved_checkpoint
    return {
        "run": run,
        "environment": environment(),
        "counts": {status.value: sum(r.status is status for r in results) for status in Status},
        "checks": [result.to_dict() for result in results],
    }


def checklist_lines(results: list[CheckResult]) -> list[str]:
    """One line per check, worst first: status, id, summary (in the current language)."""
    return [f"{_(STATUS_MARKS[r.status]):<5} {r.id:<24} {localize(r.summary)}"
            for r in worst_first(results, STAGE_ORDER)]


def markdown_report(report: dict, results: list[CheckResult] | None = None) -> str:
    """The report as Markdown in the current language: the run, then a checklist table, then each fix.

    Args:
        results: the report's results as the checks made them, so their findings can be translated (a report read
            back from JSON has only the English text).
    """
    run = report["run"]
    made = {result.id: result for result in results or ()}
    lines = [
        "# " + _("Training Pipeline Debugger report"),
        "",
        f"- {_('Checkpoint')}: `{run['checkpoint']}`",
        f"- {_('GLUE task')} / {_('Split')}: `{run['task']}` / `{run['split']}` ({_('Data')}: {run['data_source']})",
        f"- num_labels: {run['effective_num_labels']}, {_('Batch size')}: {run['batch_size']}, "
        f"{_('Max length')}: {run['max_length']}",
        "",
        "| {} | {} | {} |".format(_("status"), _("check"), _("finding")),
        "|---|---|---|",
    ]
    order = {stage: i for i, stage in enumerate(STAGE_ORDER)}
    checks = sorted(report["checks"], key=lambda c: (SEVERITY[Status(c["status"])], order.get(c["stage"], len(order))))

    def said(check: dict, field: str) -> str:
        result = made.get(check["id"])
        return localize(getattr(result, field)) if result is not None and getattr(result, field) else check[field]

    for check in checks:
        summary = said(check, "summary").replace("|", "\\|")
        lines.append(f"| {_(STATUS_MARKS[Status(check['status'])])} | `{check['id']}` | {summary} |")
    fixes = [check for check in checks if check["fix"]]
    if fixes:
        lines += ["", "## " + _("Fixes"), ""]
        for check in fixes:
            lines += [f"**{check['id']}**", ""] + (["```python", said(check, "fix"), "```", ""] if fix_is_code(
                check["fix"]) else [said(check, "fix"), ""])
    lines += ["", _("Versions:") + " " + ", ".join(f"{k} {v}" for k, v in report["environment"].items())]
    return "\n".join(lines) + "\n"


_CODE_START = re.compile(r"^(?:[A-Za-z_][\w.]*\s*(?:\(|=|\[)|(?:pip|python|import|from|export) )")


def fix_is_code(fix: str) -> bool:
    """Whether a fix (read in English) is code to paste, `model.compile(...)`, `pip install x`, rather than a sentence
    such as "Halve the batch size": code is shown as code, prose as prose."""
    return bool(_CODE_START.match(str(fix).strip()))


def junit_report(report: dict) -> str:
    """The report as JUnit XML for a CI server: one test suite per stage, one test case per check. `fail` and
    `error` are failures (with the finding and the fix), `skip` is skipped, `warn` passes with its finding in
    system-out and a `status` property."""
    from xml.etree import ElementTree as ET

    root = ET.Element("testsuites", name="Training Pipeline Debugger")
    run = report["run"]
    for stage in STAGE_ORDER:
        checks = [check for check in report["checks"] if check["stage"] == stage]
        if not checks:
            continue
        suite = ET.SubElement(root, "testsuite", name=stage, tests=str(len(checks)),
                              failures=str(sum(c["status"] in ("fail", "error") for c in checks)),
                              errors="0", skipped=str(sum(c["status"] == "skip" for c in checks)))
        properties = ET.SubElement(suite, "properties")
        for name in ("checkpoint", "task", "split"):
            ET.SubElement(properties, "property", name=name, value=str(run.get(name, "")))
        for check in checks:
            case = ET.SubElement(suite, "testcase", name=check["id"], classname=f"diagnostics.{stage}")
            ET.SubElement(ET.SubElement(case, "properties"), "property", name="status", value=check["status"])
            text = check["summary"] + (f"\n\nFix:\n{check['fix']}" if check["fix"] else "")
            if check["status"] in ("fail", "error"):
                ET.SubElement(case, "failure", message=check["summary"], type=check["status"]).text = text
            elif check["status"] == "skip":
                ET.SubElement(case, "skipped", message=check["summary"])
            elif check["status"] == "warn":
                ET.SubElement(case, "system-out").text = f"WARN: {text}"
    error = (report.get("script") or {}).get("error")
    if error:  # a traced script that stopped before fit
        suite = ET.SubElement(root, "testsuite", name="script", tests="1", failures="1", errors="0", skipped="0")
        case = ET.SubElement(suite, "testcase", name="script.reaches_fit", classname="diagnostics.script")
        ET.SubElement(case, "failure", message=error["finding"], type="fail").text = (
            f"{error['where']}: {error['code']}\n{error['finding']}" + (f"\n\nFix:\n{error['fix']}" if error.get("fix") else ""))
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"
