"""The report: every check's result with the run and the library versions, as JSON, Markdown and a checklist."""

from __future__ import annotations

import platform
import re
from importlib import metadata

from diagnostics.walk.causes import Found
from diagnostics.walk.causes import causes
from diagnostics.config.run import RunConfig, task_title
from diagnostics.i18n import N_, Text, _, current_language, localize, msg, msgn
from diagnostics.report.escape import code_block, code_span, control_free, markdown_text, xml_text
from diagnostics.core.check import STAGE_ORDER
from diagnostics.core.result import CheckResult, Status, pending, rank
from diagnostics.walk.causes import worst_first

STATUS_MARKS = {Status.PASS: N_("PASS"), Status.WARN: N_("WARN"), Status.FAIL: N_("FAIL"), Status.ERROR: N_("ERROR"),
                Status.SKIP: N_("SKIP")}
# A finding another check's cause explains: not counted as a failure of its own.
EXPLAINED_MARK = N_("SEE")
# A check that has not run yet (`result.pending`).
PENDING_MARK = N_("PENDING")
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
    """The JSON report: `{"run", "environment", "causes", "counts", "checks"}` (English; `run.language` records the
    language the person who made it read it in). `causes` lists each cause once: its owner, status, summary, fix and
    the checks whose findings it explains; `counts` counts the checks that stand alone by status, and `explained`
    the findings a cause explains."""
    run = config.to_dict()
    run["language"] = current_language()
    if resolved_checkpoint:
        run["resolved_checkpoint"] = resolved_checkpoint
    standing = [result for result in results if result.explained_by is None]
    return {
        "run": run,
        "environment": environment(),
        "causes": [cause.to_dict() for cause in causes(results)],
        "counts": {**{status.value: sum(r.status is status for r in standing) for status in Status},
                   "explained": len(results) - len(standing)},
        "checks": [result.to_dict() for result in results],
    }


def mark(result: CheckResult) -> str:
    """A result's mark in a checklist, in the current language: its status, SEE for an explained finding, PENDING for
    a check that has not run yet."""
    if result.explained_by is not None:
        return _(EXPLAINED_MARK)
    return _(PENDING_MARK) if pending([result]) else _(STATUS_MARKS[result.status])


def _counted(status: Status, number: int) -> Text:
    """'1 fail', '2 errors', ...: a status counted in the causes' headline, with each language's plural forms."""
    if status is Status.FAIL:
        return msgn("{count} fail", "{count} fail", number)
    if status is Status.ERROR:
        return msgn("{count} error", "{count} errors", number)
    return msgn("{count} warn", "{count} warn", number)


def causes_headline(found: list[Found], results: list[CheckResult] = ()) -> str:
    """'2 causes: 1 fail, 1 warn' (or that there is none, which is never said while a check of `results` has not run
    yet: `pending`), in the current language."""
    waiting = pending(list(results))
    if not found and waiting:
        return localize(msgn("No cause found yet: {checks} has not run; run it before calling this pipeline clean.",
                             "No cause found yet: {checks} have not run; run them before calling this pipeline "
                             "clean.", len(waiting), checks=", ".join(waiting)))
    if not found:
        return localize(msg("No cause found: no check fails or warns."))
    counts = ", ".join(localize(_counted(status, number)) for status in (Status.FAIL, Status.ERROR, Status.WARN)
                       if (number := sum(cause.status is status for cause in found)))
    return localize(msgn("{count} cause: {counts}", "{count} causes: {counts}", len(found), counts=counts))


def cause_lines(results: list[CheckResult]) -> list[str]:
    """The causes first: a headline, then each cause's status, owner and summary, and what it explains."""
    found = causes(results)
    lines = [causes_headline(found, results)]
    for cause in found:
        title = f"{_(cause.title)}: " if cause.title else ""
        lines.append(f"  {_(STATUS_MARKS[cause.status]):<5} {cause.owner:<24} {title}{localize(cause.summary)}" + (
            " " + localize(msg("(pending: {owner} has not run; found by {checks})", owner=cause.owner,
                               checks=", ".join(cause.explains))) if cause.pending else ""))
        if cause.pending:
            continue
        if cause.explains:
            lines.append(f"  {'':<5} {'':<24} " + localize(msg("explains: {checks}", checks=", ".join(cause.explains))))
    return [control_free(line) for line in lines]  # for a terminal: no control character from a user's text


def checklist_lines(results: list[CheckResult]) -> list[str]:
    """One line per check, worst first: mark, id, summary (in the current language); an explained finding names the
    check that owns its cause."""
    ran = {r.id for r in results}
    return [control_free(f"{mark(r):<5} {r.id:<24} {localize(r.summary)}") + (
        "" if not r.explained_by else " " + localize(msg("(explained by {owner})", owner=r.explained_by))
        if r.explained_by in ran else " " + localize(msg("(pending: its cause is {owner}'s, which has not run)",
                                                         owner=r.explained_by)))
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
        f"- {_('Checkpoint')}: {code_span(run['checkpoint'])}",
        f"- {_('GLUE task')} / {_('Split')}: "
        f"{code_span(localize(task_title(run['task'], run.get('task_candidates') or ())))} / "
        f"{code_span(run['split'])} ({_('Data')}: {markdown_text(run['data_source'])})",
        f"- num_labels: {run['effective_num_labels']}, {_('Batch size')}: {run['batch_size']}, "
        f"{_('Max length')}: {run['max_length']}",
        *_training_line(run),
        "",
    ]
    order = {stage: i for i, stage in enumerate(STAGE_ORDER)}
    read = [CheckResult.from_dict(check) for check in report["checks"]]
    checks = [check for result, check in sorted(zip(read, report["checks"], strict=True), key=lambda pair: (
        rank(pair[0]), order.get(pair[0].stage, len(order))))]

    def said(check: dict, field: str, *, code: bool = False) -> str:
        # A sentence made here keeps its own formatting, the values it was filled with escaped; one read back from
        # JSON is escaped whole (code is fenced, not escaped).
        result = made.get(check["id"])
        if result is not None and getattr(result, field):
            return localize(getattr(result, field), escape=None if code else markdown_text)
        return check[field] if code else markdown_text(check[field])

    lines += ["## " + causes_headline(causes(read), read), ""]
    for cause in report.get("causes") or ():
        summary = said({"id": cause["owner"], "summary": cause["summary"]}, "summary")
        title = f"{markdown_text(_(cause['title']))}: " if cause.get("title") else ""
        lines.append(f"- **{_(STATUS_MARKS[Status(cause['status'])])}** `{cause['owner']}`: {title}{summary}" + (
            " " + localize(msg("(pending: {owner} has not run; found by {checks})", owner=cause["owner"],
                               checks=", ".join(cause["explains"]))) if cause.get("pending") else
            " " + localize(msg("Explains: {checks}.", checks=", ".join(f"`{c}`" for c in cause["explains"])))
            if cause["explains"] else ""))
    lines += ["", "| {} | {} | {} |".format(_("status"), _("check"), _("finding")), "|---|---|---|"]
    for check in checks:
        summary = re.sub(r"(?<!\\)\|", r"\\|", said(check, "summary"))  # a pipe not escaped yet ends a cell
        if check.get("explained_by"):
            summary += " " + localize(msg("(explained by {owner})", owner=check["explained_by"]))
            status = _(EXPLAINED_MARK)
        else:
            status = _(STATUS_MARKS[Status(check["status"])])
        lines.append(f"| {status} | `{check['id']}` | {summary} |")
    fixes = [check for check in checks if check["fix"]]
    if fixes:
        lines += ["", "## " + _("Fixes"), ""]
        for check in fixes:
            lines += [f"**{check['id']}**", ""] + ([*code_block(said(check, "fix", code=True), "python"), ""]
                                                    if fix_is_code(check["fix"]) else [said(check, "fix"), ""])
    lines += _markdown_repair(report.get("repair"))
    lines += ["", _("Versions:") + " " + ", ".join(f"{k} {v}" for k, v in report["environment"].items())]
    return "\n".join(lines) + "\n"


def _training_line(run: dict) -> list[str]:
    """The run's training settings (what `compile` was given), as the sidebar's "Training setup" names them."""
    if "optimizer" not in run:
        return []
    said = [f"{_('Loss')}: `{run.get('loss')}`", f"{_('Optimizer')}: `{run['optimizer']}`"]
    if run["optimizer"] != "adam":  # the string's rate is Keras's own, whatever the setting holds
        said.append(f"{_('Learning rate')}: {run.get('learning_rate'):g}")
    if run.get("weight_decay"):
        said.append(f"{_('Weight decay')}: {run['weight_decay']:g}")
    return [f"- {_('Training setup')}: " + ", ".join(said)]


# trace --repair's verdict on each cause (`usercode.repair_run.verdicts`), in words.
REPAIR_SENTENCES = {
    "verified": N_("{owner}: repaired and verified (the trace of the repaired script no longer names it, nor anything "
                   "new)"),
    "not_verified": N_("{owner}: repaired, not verified: the trace of the repaired script names {named}"),
    "not_reached": N_("{owner}: repaired, not verified: the repaired script stopped before fit (above)"),
    "not_repairable": N_("{owner}: not repairable in the code: {reason}")}


def verdict_text(item: dict) -> Text:
    """One cause's verdict, in words (translated where shown)."""
    template = REPAIR_SENTENCES[item["state"]]
    return msg(template, owner=item["owner"], reason=item.get("reason", ""),
               named=", ".join(item.get("named_after") or ()) or "-")


def _markdown_repair(repair: dict | None) -> list[str]:
    """trace --repair's section of the Markdown report: where the repaired script was written, each cause's verdict
    and the diff."""
    if not repair:
        return []
    lines = ["", "## " + _("Repair"), ""]
    if repair.get("file"):
        lines += [localize(msg("The repaired script: {file}", file=code_span(repair["file"]))), ""]
    lines += ["- " + localize(verdict_text(item), escape=markdown_text) for item in repair.get("causes") or ()]
    if repair.get("diff"):
        lines += ["", *code_block(repair["diff"], "diff")]
    return lines


_CODE_START = re.compile(
    r"^(?:[A-Za-z_][\w.]*(?:\s*,\s*[A-Za-z_]\w*)*\s*(?:\(|=|\[)|(?:pip|python|import|from|export) )"
)


def fix_is_code(fix: str) -> bool:
    """Whether a fix (read in English) is code to paste, `model.compile(...)`, `pip install x`, rather than a sentence
    such as "Halve the batch size": code is shown as code, prose as prose."""
    return bool(_CODE_START.match(str(fix).strip()))


def junit_report(report: dict) -> str:
    """The report as JUnit XML for a CI server: one test suite per stage, one test case per check, so one failing
    case per cause: a `fail` or `error` is a failure (with the finding and the fix) unless another check's cause
    explains it (then it passes, naming that owner in system-out), `skip` is skipped, `warn` passes with its finding
    in system-out and a `status` property."""
    from xml.etree import ElementTree as ET

    root = ET.Element("testsuites", name="Training Pipeline Debugger")
    fits = [report, *(report.get("later_fits") or [])]  # a traced script's checked fits, a suite set each
    for number, fit in enumerate(fits, 1):
        run = fit.get("run") or {}
        for stage in STAGE_ORDER:
            checks = [check for check in fit.get("checks", []) if check["stage"] == stage]
            if not checks:
                continue
            ran = {check["id"] for check in fit.get("checks", [])}
            # A finding whose owner has not run (`causes.explain`'s pending pointer) fails here: nothing else does.
            alone = {check["id"] for check in checks
                     if not check.get("explained_by") or check["explained_by"] not in ran}
            failing = [check for check in checks if check["status"] in ("fail", "error") and check["id"] in alone]
            name = stage if len(fits) == 1 else f"fit{(fit.get('phase') or {}).get('fit', number)}.{stage}"
            suite = ET.SubElement(root, "testsuite", name=name, tests=str(len(checks)), failures=str(len(failing)),
                                  errors="0", skipped=str(sum(c["status"] == "skip" for c in checks)))
            properties = ET.SubElement(suite, "properties")
            for key in ("checkpoint", "task", "split"):  # a task not known is said so, never its first candidate
                value = (
                    task_title(run.get(key, ""), run.get("task_candidates") or ())
                    if key == "task"
                    else run.get(key, "")
                )
                ET.SubElement(properties, "property", name=key, value=str(value))
            for check in checks:
                case = ET.SubElement(suite, "testcase", name=check["id"], classname=f"diagnostics.{name}")
                ET.SubElement(ET.SubElement(case, "properties"), "property", name="status", value=check["status"])
                text = check["summary"] + (f"\n\nFix:\n{check['fix']}" if check["fix"] else "")
                if check.get("explained_by") and check["id"] not in alone:
                    ET.SubElement(case, "system-out").text = f"EXPLAINED by {check['explained_by']}: {check['summary']}"
                elif check["status"] in ("fail", "error"):
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
            f"{error['where']}: {error['code']}\n{error['finding']}"
            + (f"\n\nFix:\n{error['fix']}" if error.get("fix") else "")
        )
    _junit_repair(root, report.get("repair"))
    for element in root.iter():  # every text a user gave, as XML may hold it
        element.text = xml_text(element.text) if element.text is not None else None
        element.attrib = {key: xml_text(value) for key, value in element.attrib.items()}
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def _junit_repair(root, repair: dict | None) -> None:
    """trace --repair's verdicts, a test case per cause: verified passes, repaired but not verified fails (with what
    the trace of the repaired script said), not repairable in the code is skipped with why; the diff in system-out."""
    from xml.etree import ElementTree as ET

    if not repair:
        return
    causes = repair.get("causes") or []
    failing = [item for item in causes if item["state"] in ("not_verified", "not_reached")]
    suite = ET.SubElement(root, "testsuite", name="repair", tests=str(len(causes)), failures=str(len(failing)),
                          errors="0", skipped=str(sum(item["state"] == "not_repairable" for item in causes)))
    for item in causes:
        case = ET.SubElement(suite, "testcase", name=f"repair.{item['owner']}", classname="diagnostics.repair")
        if item["state"] == "not_repairable":
            ET.SubElement(case, "skipped", message="not repairable in the code: " + str(item.get("reason", "")))
        elif item["state"] == "not_verified":
            ET.SubElement(case, "failure", message="repaired, not verified: the trace of the repaired script names "
                          + ", ".join(item.get("named_after") or ()), type="fail")
        elif item["state"] == "not_reached":
            ET.SubElement(case, "failure", message="repaired, not verified: the repaired script stopped before fit",
                          type="fail")
        else:
            ET.SubElement(case, "system-out").text = f"VERIFIED: repaired in {repair.get('file')}"
    if repair.get("diff"):
        ET.SubElement(suite, "system-out").text = repair["diff"]
