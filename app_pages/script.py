"""Your script page: trace a training script (uploaded, pasted, on this machine, or the course's under the demo
kit) in a child process, then show what it built on the walk's four pages and in the Report."""

import shlex
import tempfile
from pathlib import Path

import streamlit as st

from diagnostics import limits
from diagnostics.registry import STAGE_ORDER, STAGE_TITLES
from diagnostics.result import CheckResult
from diagnostics.scripts import COURSE_SCRIPTS
from diagnostics.trace import DEFAULT_TIMEOUT, trace_script
from ui.render import ACTIVE_KEY, TRACED_KEY, checklist, status_line

SOURCES = {"course": "The course's script (demo kit)", "upload": "Upload a file", "paste": "Paste the code",
           "path": "A file on this machine"}

st.title("Your script")
st.caption("Your own TensorFlow training script, run in a separate process until its first `model.fit`: there the "
           "checks run on the model, dataset, compile settings and tokenizer it built, instead of training. An error "
           "before `fit` is diagnosed too. The same as `python -m diagnostics trace train.py`.")
if limits.hosted():
    st.info("This hosted app never runs code it is given, so tracing a script is not offered here. On your own "
            "machine, run `python -m diagnostics trace train.py`, or start this app with `streamlit run app.py` and "
            "open this page.", icon=":material/lock:")
    st.stop()

source = st.radio("Script", list(SOURCES), format_func=SOURCES.get, horizontal=True, key="script.source")
code, name, path = None, None, None
if source == "course":
    chosen = st.selectbox("Which", list(COURSE_SCRIPTS), key="script.course",
                          format_func=lambda key: COURSE_SCRIPTS[key].title)
    path = COURSE_SCRIPTS[chosen].path
    st.caption(COURSE_SCRIPTS[chosen].about)
    with st.expander(f"{path.name}"):
        st.code(path.read_text(), language="python")
elif source == "upload":
    uploaded = st.file_uploader("A Python training script", type=["py"], key="script.upload")
    if uploaded is not None:
        code, name = uploaded.getvalue().decode("utf-8", errors="replace"), uploaded.name
elif source == "paste":
    code = st.text_area("The script", height=300, key="script.paste",
                        placeholder="from transformers import TFAutoModelForSequenceClassification\n...")
    name = "pasted_script.py"
else:
    typed = st.text_input("Path to the script", key="script.path", placeholder="train.py")
    if typed.strip():
        path = Path(typed.strip()).expanduser()
        if not path.is_file():
            st.error(f"No file at {path}: give the path of a .py file on the machine this app runs on.")
            path = None

left, middle, right = st.columns([2, 3, 1])
arguments = left.text_input("The script's own arguments", key="script.args",
                            help="As on a command line, e.g. --checkpoint ./my-model")
stages = middle.multiselect("Stages", list(STAGE_ORDER), default=list(STAGE_ORDER), key="script.stages",
                            format_func=STAGE_TITLES.get)
timeout = right.number_input("Time limit (s)", min_value=10, max_value=3600, value=int(DEFAULT_TIMEOUT), step=10,
                             key="script.timeout")
workdir = st.text_input("Run it from this directory", value=str(Path.cwd()), key="script.workdir",
                        help="Relative paths in the script are read from here.")

problems = []
try:
    script_args = shlex.split(arguments)
except ValueError as exc:
    problems.append(f"The arguments cannot be split like a command line: {exc}.")
if not stages:
    problems.append("Choose at least one stage.")
if not Path(workdir).expanduser().is_dir():
    problems.append(f"No directory at {workdir}.")
if code is not None and not code.strip():
    code = None
for problem in problems:
    st.error(problem)
ready = not problems and (path is not None or code is not None)

if st.button("Trace the script", type="primary", key="script.run", disabled=not ready):
    with tempfile.TemporaryDirectory(prefix="tpd-script-") as holder:
        if code is not None:
            path = Path(holder) / (name or "script.py")
            path.write_text(code)
        with st.status(f"Tracing {path.name}…", expanded=True) as box:
            line = st.empty()
            outcome = trace_script(path, script_args, stages=",".join(stages), timeout=float(timeout),
                                   capture_output=True, cwd=Path(workdir).expanduser(),
                                   progress=lambda text: line.write(text))
            box.update(label=outcome.message, state="complete" if outcome.exit_code == 0 else "error")
    st.session_state[TRACED_KEY] = {"name": path.name, "report": outcome.report, "message": outcome.message,
                                    "exit_code": outcome.exit_code, "output": outcome.output}
    st.session_state[ACTIVE_KEY] = outcome.report is not None

traced = st.session_state.get(TRACED_KEY)
if not traced:
    st.info("Choose a script and press **Trace the script**. It runs in its own process with the time limit above; "
            "its model is never trained by the checks (they train copies).")
    st.stop()

st.divider()
st.subheader(f"Traced: {traced['name']}")
(st.success if traced["exit_code"] == 0 else st.error)(traced["message"])
report = traced["report"]
if report:
    error = report.get("script", {}).get("error")
    if error:
        st.markdown(f"**{error['where']}**")
        if error.get("code"):
            st.code(error["code"], language="python")
        if error.get("fix"):
            st.markdown("**Fix**")
            st.code(error["fix"], language="python")
    for note in report.get("notes", []):
        st.caption(note)
    # Not a widget key: a widget's state is dropped on pages that do not draw it, and this one is read everywhere.
    st.session_state[ACTIVE_KEY] = st.toggle("Show these results on the walk's pages and in the Report",
                                             value=bool(st.session_state.get(ACTIVE_KEY)))
    results = [CheckResult.from_dict(check) for check in report.get("checks", [])]
    if results:
        status_line(results)
        checklist(results)
if traced.get("output"):
    with st.expander("The script's output"):
        st.code(traced["output"][-6000:], language="text")
