"""Rendering of check results: status badges, the checklist, and the stage runner with clear errors."""

from __future__ import annotations

import re
from typing import Callable

import streamlit as st

from diagnostics.errors import InputError
from diagnostics.i18n import _, localize, message_of
from diagnostics.registry import STAGE_ORDER
from diagnostics.report import STATUS_MARKS, fix_is_code
from diagnostics.result import CheckResult, Status, worst_first

STATUS_ICONS = {
    Status.PASS: ":material/check_circle:",
    Status.WARN: ":material/warning:",
    Status.FAIL: ":material/cancel:",
    Status.ERROR: ":material/bug_report:",
    Status.SKIP: ":material/skip_next:",
}
# Every ASCII punctuation mark: escaped with a backslash, CommonMark shows it as itself.
_MARKDOWN_SIGNS = re.compile(r"([!-/:-@\[-`{-~])")
# What GitHub-flavoured Markdown turns into a link even when escaped: "scheme://", "www." and e-mail addresses.
# A zero-width space breaks each without changing what the reader sees.
_AUTOLINKS = re.compile(r"(?i)(?<=:)(?=//)|(?<=\bwww)(?=\.)|(?=@)")
ZERO_WIDTH_SPACE = "\u200b"


def markdown_text(text: str) -> str:
    """Text shown in Markdown exactly as typed: nothing in it becomes a link, an image, a heading, emphasis or a
    Streamlit directive (a link's value, a file name, a row of an uploaded file, an exception's message)."""
    return _MARKDOWN_SIGNS.sub(r"\\\1", _AUTOLINKS.sub(ZERO_WIDTH_SPACE, str(text)))


def shown(value) -> str:
    """A sentence for a Markdown element (st.markdown, st.error, st.warning, ...): in the page's language, with
    every value it was filled with escaped (`markdown_text`); the sentence's own formatting stays."""
    return localize(value, escape=markdown_text)


STATUS_COLOURS = {Status.PASS: "green", Status.WARN: "orange", Status.FAIL: "red", Status.ERROR: "violet", Status.SKIP: "gray"}


def badge(status: Status) -> str:
    return f":{STATUS_COLOURS[status]}-badge[{STATUS_ICONS[status]} {_(STATUS_MARKS[status])}]"


def run_stage(stage: str, runner: Callable[[], list[CheckResult]]) -> list[CheckResult] | None:
    """Run a stage; unusable input, or anything a stage could not turn into a result, is a message on the page."""
    try:
        return runner()
    except InputError as exc:
        st.error(shown(message_of(exc)), icon=":material/error:")
        st.caption(_("Change the run configuration in the sidebar; everything else you entered is kept."))
        return None
    except Exception as exc:  # a stage turns its own failures into error results; this is the last guard
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else _("(no message)")
        st.error(_("The {stage} run stopped on {error}: {message}").format(
            stage=stage, error=type(exc).__name__, message=markdown_text(message)), icon=":material/bug_report:")
        return None


def status_line(results: list[CheckResult], where=st) -> None:
    """Badges counting the results of each status, in `where` (the page, or a placeholder filled later)."""
    counts = {status: sum(r.status is status for r in results) for status in Status}
    where.markdown("  ".join(f"{badge(status)} {count}" for status, count in counts.items() if count))


def checklist(results: list[CheckResult]) -> None:
    """Each check, worst first: badge, id, finding, and the fix: code as code, a sentence as a sentence."""
    for result in worst_first(results, STAGE_ORDER):
        with st.container(border=True):
            st.markdown(f"{badge(result.status)} `{result.id}`  \n{shown(result.summary)}")
            if result.fix and fix_is_code(result.fix):
                st.code(localize(result.fix), language="python")
            elif result.fix:
                st.markdown("**" + _("Fix") + ":** " + shown(result.fix))


def frame(rows: list[dict], columns: list[str] | None = None):
    """Evidence rows as a table in the page's language (a cell that is a sentence, such as a label name that says
    '(out of range: 2)', is translated; numbers, text and code stay as they are)."""
    import pandas as pd

    table = pd.DataFrame([{key: localize(value) for key, value in row.items()} for row in rows])
    return table[columns] if columns else table


def field_frame(rows: list[dict], columns: list[str]):
    """Decoded rows as a table with one column for each text field (`fields`: what the model reads of each text
    column) put before `decoded`; returns (the table, the field names)."""
    fields = list((rows[0].get("fields") or {}) if rows else {})
    flat = [{**{key: value for key, value in row.items() if key != "fields"}, **(row.get("fields") or {})}
            for row in rows]
    at = columns.index("decoded") if "decoded" in columns else len(columns)
    return frame(flat, columns[:at] + fields + columns[at:]), fields


def field_columns(fields: list[str], *, decoded_width: int = 300) -> dict:
    """Column settings for `field_frame`'s text columns."""
    import streamlit as st

    return {**{field: st.column_config.TextColumn(field, width=360) for field in fields},
            "decoded": st.column_config.TextColumn(_("decoded (tokenizer.decode)"), width=decoded_width)}


def by_id(results: list[CheckResult], check_id: str) -> CheckResult | None:
    return next((result for result in results if result.id == check_id), None)


# ---------------------------------------------------------------- a traced script's results

TRACED_KEY = "script.traced"  # {"name", "report", "message", "exit_code", "output"} of the last trace
ACTIVE_KEY = "script.active"  # the walk's pages show the traced results instead of the sidebar's pipeline


def traced_results(stage: str) -> list[CheckResult] | None:
    """The stage's results from the traced script when the pages show them (None: the sidebar's pipeline runs),
    under a banner naming the script."""
    traced = st.session_state.get(TRACED_KEY)
    if not st.session_state.get(ACTIVE_KEY) or not traced or not traced.get("report"):
        return None
    script = traced["report"].get("script", {})
    where = _("fit at {line}").format(line=script["fit_at"]) if script.get("reached_fit") else _("stopped before fit")
    st.info(_("Results traced from your script **{name}** ({where}). The sidebar's pipeline is not used here until "
              "you switch back on the **Your script** page or in the sidebar.").format(name=markdown_text(traced["name"]),
                                                                                    where=markdown_text(where)),
            icon=":material/code:")
    return [CheckResult.from_dict(check) for check in traced["report"].get("checks", []) if check["stage"] == stage]
