"""Report page: every check run so far in one checklist, downloadable as Markdown and JSON."""

import json

import streamlit as st

from diagnostics.core.budget import time_left_text
from diagnostics.core.progress import in_sequence
from diagnostics.i18n import _, localize, msgn
from diagnostics.walk.stages import STAGES
from diagnostics.walk.causes import causes
from diagnostics.core.check import STAGE_TITLES
from diagnostics.report.formats import build_report, markdown_report
from diagnostics.core.result import CheckResult
from ui.render import TRACED_KEY, causes_block, checklist, shown, status_line, traced_results
from diagnostics.walk.registry import unit_checks
from diagnostics.walk.runner import planned_jobs
from ui.apply import before_and_after, offer, run_now
from ui.caches import open_run
from ui.shared import computed, overfit_jobs, recalled, recalled_all, kept, stage_jobs
from ui.session import current_config

st.title(_("Report"))
st.caption(_("Every check of every stage run so far, failing and warning checks first, in pipeline order."))
traced = traced_results("data")
if traced is not None:
    report = st.session_state[TRACED_KEY]["report"]
    results = [CheckResult.from_dict(check) for check in report["checks"]]
    left, right = st.columns(2)
    left.download_button(_("Download Markdown"), markdown_report(report, results) if report.get("run") else "",
                         file_name="script-report.md", mime="text/markdown", key="report.download_md",
                         disabled=not report.get("run"))
    right.download_button(_("Download JSON"), json.dumps(report, indent=2), file_name="script-report.json",
                          mime="application/json", key="report.download_json")
    causes_block(causes(results), results=results)
    st.subheader(_("Every check"))
    status_line(results)
    checklist(results)
    st.stop()
config = current_config()


def not_run() -> dict[str, list[str]]:
    """What has not run for this configuration, check by check: a stage none of whose units ran by its name, one run
    in part with the checks still to run (the sweep, learnability), so "no cause" is never said of checks that never
    looked."""
    return {stage: [check for job in stage_jobs(stage, config) if kept(job) is None
                    for check in unit_checks(job.kind)] for stage in STAGES}


unrun = not_run()
# The button is offered while something has not run: once every stage has, there is nothing for it to do.
if (any(unrun.values()) and st.button(
        _("Run every stage now"), type="primary", key="report.run_all",
        help=_("Each stage with this session's page settings; what any session has computed is reused."))) \
        or run_now():
    overall = st.progress(0.0, text=_("Running the checks"))
    # Every job's training steps, planned before any runs, so the bar over all of them tells the time left of all
    # (the overfit test's job is made once the sweep is kept, as its key holds the sweep's rate; its steps do not).
    planned = planned_jobs([job for stage in STAGES for job in stage_jobs(stage, config)], open_run)
    number = 0
    for stage in STAGES:  # in order: the overfit test's recommended rate comes from the sweep
        said = _("Running the checks: {stage}").format(stage=_(STAGE_TITLES[stage]))
        for job in stage_jobs(stage, config):
            def watch(flight, number=number, said=said):
                fraction, left = in_sequence(planned, number, flight.fraction, flight.remaining())
                overall.progress(fraction, text=said if left is None else f"{said} · {localize(time_left_text(left))}")

            overall.progress(in_sequence(planned, min(number, len(planned) - 1), 0.0, None)[0], text=said)
            if computed(job, f"{_(STAGE_TITLES[stage])}:", watch=watch) is None:
                st.stop()
            number += 1
    overall.empty()
    st.rerun()  # drawn again from what is now kept: without the button, as every stage has run
ran_any = {stage: bool(recalled(stage, config)) for stage in STAGES}
missing = [_(STAGE_TITLES[stage]) + (f" ({', '.join(checks)})" if ran_any[stage] else "")
           for stage, checks in unrun.items() if checks]
if missing:
    st.info(_("Not run yet for this configuration: {stages}. Open their pages, or run every stage here.").format(
        stages=", ".join(missing)))
results = recalled_all(config)
if not results:
    st.stop()
report = build_report(config, results)
left, right = st.columns(2)
left.download_button(_("Download Markdown"), markdown_report(report, results), file_name="pipeline-report.md",
                     mime="text/markdown", key="report.download_md")
right.download_button(_("Download JSON"), json.dumps(report, indent=2), file_name="pipeline-report.json",
                      mime="application/json", key="report.download_json")
found = causes(results)
before_and_after(config, found)
if not found and missing:
    still = sum(len(checks) for checks in unrun.values())
    st.subheader(_("Not yet known"))
    st.warning(localize(msgn("No check that ran names a cause, but {count} check that could name one has not run yet "
                             "for this configuration (listed above): run it before calling this pipeline clean.",
                             "No check that ran names a cause, but {count} checks that could name one have not run "
                             "yet for this configuration (listed above): run them before calling this pipeline "
                             "clean.", still)))
else:
    causes_block(found, offer(config, results, found), results)
rerun = overfit_jobs(config).get("rerun")
if rerun is not None and (entry := kept(rerun)) is not None:
    st.caption(_("The overfit test was also rerun at the sweep's recommended rate {rate:.0e}: {finding}").format(
        rate=rerun.settings.rate, finding=shown(entry.results[0].summary)))
st.subheader(_("Every check"))
status_line(results)
checklist(results)
