"""The Your script page's Repair and re-check: each cause's fix written into the traced script (side by side with
the original), the repaired script traced again with the same options, each cause's verdict, the checklist before
and after, and the repaired script to download. The script itself is never written."""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

import streamlit as st

from diagnostics.core.result import CheckResult
from diagnostics.i18n import _, msg
from diagnostics.report.formats import verdict_text
from diagnostics.usercode.repair_run import checked, planned, repair_and_trace
from diagnostics.usercode.trace import fit_reports, phase_title
from ui.render import TRACED_KEY, checklist, markdown_text, shown, status_line

REPAIRED_KEY = "script.repaired"  # the last repair of the traced script: its source, diff, verdicts, new report
VERDICT_BOXES = {"verified": st.success, "not_verified": st.warning, "not_reached": st.warning,
                 "not_repairable": st.info}


def repair_section(traced: dict) -> None:
    """The section, under a trace that reached fit: what the repair changes, the button, and the last repair's
    verdicts."""
    report, source = traced.get("report"), traced.get("source")
    if not report or source is None:
        return
    fixed = planned(source, report)  # a checked fit's causes, or the error the script stopped on before fit
    if not checked(report) and not fixed.edits:
        return
    if not fixed.edits and not fixed.unrepaired:
        return
    st.divider()
    st.subheader(_("Repair and re-check"))
    if not fixed.edits:
        for item in fixed.unrepaired:
            st.info(shown(verdict_text({"owner": item.owner, "state": "not_repairable", "reason": item.reason})))
        return
    st.caption(_("Each cause's fix, written into your script where it builds that object; the repaired script is "
                 "then traced again with the same options. Your script is never changed: download the repaired one."))
    left, right = st.columns(2)
    left.markdown("**" + markdown_text(traced["name"]) + "**")
    right.markdown("**" + _("Repaired") + "**")
    for line, before_lines, new_line, after_lines in fixed.places(source):
        left, right = st.columns(2)
        before = "\n".join(f"{line + n:>4} {text}" for n, text in enumerate(before_lines))
        after = "\n".join(f"{new_line + n:>4} {text}" for n, text in enumerate(after_lines))
        left.code(before or " ", language="python")  # scrolls: wrapped, an identifier broke mid-name
        right.code(after or " ", language="python")
    if st.button(_("Repair and re-check"), type="primary", key="script.repair"):
        st.session_state[REPAIRED_KEY] = _run(traced)
    repaired = st.session_state.get(REPAIRED_KEY)
    if repaired and repaired["from"] == source:
        _show(traced, repaired)  # its verdicts name the causes left unrepaired too
    else:
        for item in fixed.unrepaired:
            st.info(shown(verdict_text({"owner": item.owner, "state": "not_repairable", "reason": item.reason})))


def _run(traced: dict) -> dict:
    """Write the repaired script, trace it with the first trace's options, and keep what a page needs to show it.
    A script with a file of its own gets the repaired one beside it (as `trace --repair` writes it, so paths the
    script takes from its own location still hold); one on this machine keeps it there, a course script's is
    removed after its trace; an uploaded or pasted one is written in a folder of its own, removed after."""
    options = traced["options"]
    name = Path(traced["name"]).stem.removesuffix(".repaired") + ".repaired.py"
    origin = Path(traced["path"]) if traced.get("path") else None
    with tempfile.TemporaryDirectory(prefix="tpd-repair-") as holder:
        beside = origin is not None and os.access(origin.parent, os.W_OK)
        script = origin if origin is not None else Path(holder) / traced["name"]
        target = (origin.parent if beside else Path(holder)) / name
        with st.status(_("Tracing {name}…").format(name=markdown_text(name)), expanded=True) as box:
            line = st.empty()
            started = time.monotonic()

            def tick(seconds: float) -> None:
                box.update(label=_("Tracing {name}… {seconds} s of its {limit:.0f} s limit").format(
                    name=markdown_text(name), seconds=int(seconds), limit=options["timeout"]),
                    expanded=True)  # an update without it folds the box, hiding the child's progress lines

            made: list[Path] = []  # where the repair went: a new name where the usual one was taken
            try:
                done = repair_and_trace(script, traced["report"], target, source=traced["source"],
                                        name=traced["name"], said=lambda text: line.write(shown(text)), tick=tick,
                                        on_written=lambda run, number: made.append(run.written),
                                        limit_name=msg("Time limit (s)"), **options)
            finally:
                if beside and not traced.get("keep_repaired") and made:
                    made[0].unlink(missing_ok=True)
            box.update(label=_("Traced {name} in {seconds:.0f} s").format(name=markdown_text(name),
                                                                         seconds=time.monotonic() - started),
                       state="complete", expanded=False)
    after = done.after
    return {"name": done.written.name if done.written else name, "from": traced["source"],
            "source": done.fixed.source, "diff": done.diff,
            "causes": done.causes,
            "output": after.output if after is not None else "", "exit_code": after.exit_code if after else None,
            "written": str(done.written) if beside and traced.get("keep_repaired") and done.written else None,
            "rounds": len(made),
            "report": after.report if after is not None else None,
            "message": after.message if after is not None else None}


def _show(traced: dict, repaired: dict) -> None:
    """Each cause's verdict, the checklist of each fit before and after, the download and the diff."""
    rounds = repaired.get("rounds") or 1
    if rounds > 1:  # the preview above is the first round's: say that the rest came from later traces
        st.info(_("The repair took {rounds} rounds: each trace of the repaired script named causes that a repair "
                  "mends, so it was repaired and traced again. The diff below holds every change.").format(
            rounds=rounds))
    for item in repaired["causes"]:
        VERDICT_BOXES[item["state"]](shown(verdict_text(item)))
    after_report = repaired["report"]
    if after_report is None or not (after_report.get("script") or {}).get("reached_fit"):
        st.error(shown(repaired["message"] or msg("The repaired script gave no report.")))
    before_fits = fit_reports(traced["report"])
    after_fits = fit_reports(after_report) if after_report else []
    for number, before in enumerate(before_fits):
        if len(before_fits) > 1:
            st.markdown("#### " + markdown_text(shown(phase_title(before, len(before_fits)))))
        left, right = st.columns(2)
        left.markdown("**" + _("Before") + "**")
        status_line([CheckResult.from_dict(check) for check in before.get("checks", [])], where=left)
        right.markdown("**" + _("After") + "**")
        if number < len(after_fits):
            status_line([CheckResult.from_dict(check) for check in after_fits[number].get("checks", [])],
                        where=right)
    if after_fits:
        with st.expander(_("The repaired script's checklist")):
            for fit in after_fits:
                checklist([CheckResult.from_dict(check) for check in fit.get("checks", [])])
    if repaired.get("written"):
        st.caption(_("Written to {path} (your script is unchanged).").format(path=markdown_text(repaired["written"])))
    st.download_button(_("Download the repaired script"), repaired["source"], file_name=repaired["name"],
                       mime="text/x-python", key="script.repaired.download")
    with st.expander(_("The diff"), expanded=rounds > 1):
        st.code(repaired["diff"], language="diff")
    if after_fits and st.button(_("Continue from the repaired script"), key="script.repair.continue",
                                help=_("The repaired script becomes the traced one: its results fill the walk's "
                                       "pages, and what its trace names can be repaired in turn.")):
        st.session_state[TRACED_KEY] = {**traced, "name": repaired["name"], "report": after_report,
                                        "message": repaired["message"], "exit_code": repaired["exit_code"],
                                        "output": repaired["output"], "source": repaired["source"]}
        st.session_state.pop(REPAIRED_KEY, None)
        st.rerun()
