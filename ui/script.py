"""The Your script page's parts: where the script comes from, how it is run, and what the trace found."""

from __future__ import annotations

import shlex
from pathlib import Path

import streamlit as st

from diagnostics.config.tasks import TASKS
from diagnostics.i18n import N_, _, localize, said
from diagnostics.keras.data_files import safe_file_name
from diagnostics.core.check import STAGE_ORDER, STAGE_TITLES
from diagnostics.core.result import CheckResult
from diagnostics.usercode.course_scripts import COURSE_SCRIPTS
from diagnostics.usercode.trace import (
    DEFAULT_TIMEOUT,
    fit_reports,
    phase_title,
    script_finding,
    script_fix,
    script_notes,
)
from ui.render import ACTIVE_KEY, checklist, choice, markdown_text, shown, status_line

# The task choice: found from the data and the model, or named.
FOUND = "found"
TRACEABLE_TASKS = [name for name, task in TASKS.items() if "train" in task.splits]
SOURCES = {"course": N_("The course's script (demo kit)"), "upload": N_("Upload a file"), "paste": N_("Paste the code"),
           "path": N_("A file on this machine")}


# The page's inputs and their defaults, set once a session and kept while another page is open (Streamlit forgets
# the value of a widget that a run does not draw). An uploaded file cannot be kept.
SCRIPT_DEFAULTS = {"script.source": "course", "script.course": next(iter(COURSE_SCRIPTS)), "script.paste": "",
                   "script.path": "", "script.args": "", "script.stages": list(STAGE_ORDER),
                   "script.timeout": int(DEFAULT_TIMEOUT), "script.workdir": str(Path.cwd()), "script.task": FOUND}


def script_file_name(name: str) -> str:
    """An uploaded script's name as a base name ending in .py: it is written into a temporary folder of ours, so a
    name such as "../x.py" or "/etc/x.py" never reaches another folder."""
    base = safe_file_name(name, "uploaded_script.py")
    return base if base.endswith(".py") else base + ".py"


def script_source() -> tuple[Path | None, str | None, str | None]:
    """(a script file, or None) or (None, its code, a file name for it), as the user chose."""
    source = st.radio(_("Script"), list(SOURCES), format_func=said(SOURCES).get, horizontal=True,
                      key=choice("script.source"))
    if source == "course":
        chosen = st.selectbox(_("Which"), list(COURSE_SCRIPTS), key=choice("script.course"),
                              format_func=said({key: script.title for key, script in COURSE_SCRIPTS.items()}).get)
        path = COURSE_SCRIPTS[chosen].path
        script = COURSE_SCRIPTS[chosen]
        flagged = ", ".join(f"`{check}`" for check in script.flagged) or _("nothing (no check may fail)")
        st.caption(_("{about} Its causes, by the checks that own them: {checks}.").format(about=_(script.about),
                                                                                             checks=flagged))
        with st.expander(path.name):
            st.code(path.read_text(), language="python")
        return path, None, None
    if source == "upload":
        uploaded = st.file_uploader(_("A Python training script"), type=["py"], key="script.upload")
        if uploaded is None:
            return None, None, None
        return None, uploaded.getvalue().decode("utf-8", errors="replace") or None, script_file_name(uploaded.name)
    if source == "paste":
        code = st.text_area(_("The script"), height=300, key="script.paste",
                            placeholder="from transformers import TFAutoModelForSequenceClassification\n...")
        return None, code if code.strip() else None, "pasted_script.py"
    typed = st.text_input(_("Path to the script"), key="script.path", placeholder="train.py").strip()
    if not typed:
        return None, None, None
    path = Path(typed).expanduser()
    if not path.is_file():
        st.error(_("No file at {path}: give the path of a .py file on the machine this app runs on.").format(
            path=markdown_text(path)))
        return None, None, None
    return path, None, None


def run_options() -> tuple[dict, list[str]]:
    """The trace's options (script_args, stages, timeout, cwd) and what is wrong with them."""
    # The stages on a row of their own: in a third of one, the four stages' chips were cut ("Hyper…").
    stages = st.multiselect(_("Stages"), list(STAGE_ORDER), key=choice("script.stages"),
                            format_func=said(STAGE_TITLES).get)
    left, right = st.columns([3, 1])
    arguments = left.text_input(_("The script's own arguments"), key="script.args",
                                help=_("As on a command line, e.g. --checkpoint ./my-model"))
    timeout = right.number_input(_("Time limit (s)"), min_value=10, max_value=3600, step=10, key="script.timeout")
    workdir_column, task_column = st.columns(2)  # the task column wide enough for "From the data and the model"
    workdir = workdir_column.text_input(_("Run it from this directory"), key="script.workdir",
                                        help=_("Relative paths in the script are read from here."))
    task = task_column.selectbox(_("The script's GLUE task"), [FOUND] + TRACEABLE_TASKS, key=choice("script.task"),
                                 format_func={FOUND: _("From the data and the model"),
                                              **{name: name for name in TRACEABLE_TASKS}}.get,
                                 help=_("Several tasks share columns (sentence1 and sentence2 fit RTE, MRPC, WNLI and "
                                        "STS-B): name yours so its labels are judged against its classes."))
    problems, script_args = [], []
    try:
        script_args = shlex.split(arguments)
    except ValueError as exc:
        problems.append(
            _("The arguments cannot be split like a command line: {problem}.").format(problem=markdown_text(exc))
        )
    if not stages:
        problems.append(_("Choose at least one stage."))
    if not Path(workdir).expanduser().is_dir():
        problems.append(_("No directory at {path}.").format(path=markdown_text(workdir)))
    return {"script_args": script_args, "stages": ",".join(stages), "timeout": float(timeout),
            "cwd": Path(workdir).expanduser(), "task": None if task == FOUND else task}, problems


def show_trace(traced: dict) -> None:
    """What the last trace found: the outcome, the script's error with its line and fix, the checklist."""
    st.subheader(_("Traced: {name}").format(name=markdown_text(traced["name"])))
    if traced.get("seconds") is not None:
        st.caption(_("Traced {name} in {seconds:.0f} s").format(name=markdown_text(traced["name"]),
                                                               seconds=traced["seconds"]))
    (st.success if traced["exit_code"] == 0 else st.error)(shown(traced["message"]))
    report = traced["report"]
    if report:
        error = report.get("script", {}).get("error")
        if error:
            st.markdown(f"**{markdown_text(error['where'])}**")
            if error.get("code"):
                st.code(error["code"], language="python")
            if error.get("fix"):
                st.markdown("**" + _("Fix") + "**")
                st.code(localize(script_fix(error)), language="python", wrap_lines=True)
        for note in script_notes(report.get("script") or {}):
            st.caption(shown(note))
        # Not a widget key: a widget's state is dropped on pages that do not draw it, and this one is read everywhere.
        st.session_state[ACTIVE_KEY] = st.toggle(_("Show these results on the walk's pages and in the Report"),
                                                 value=bool(st.session_state.get(ACTIVE_KEY)))
        fits = fit_reports(report)
        for fit in fits:
            if len(fits) > 1:
                st.markdown("#### " + markdown_text(localize(phase_title(fit, len(fits)))))
            elif report.get("script", {}).get("reached_fit") and (fit.get("phase") or {}).get("trains"):
                st.caption(shown(phase_title(fit, 1)))
            if fit is not report and fit.get("error"):
                st.error(shown(script_finding(fit["error"])))
            for note in script_notes(fit):
                st.caption(shown(note))
            results = [CheckResult.from_dict(check) for check in fit.get("checks", [])]
            if results:
                status_line(results)
                checklist(results)
    if traced.get("output"):
        with st.expander(_("The script's output")):
            st.code(traced["output"][-6000:], language="text")
