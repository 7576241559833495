"""Your script page: trace a training script (uploaded, pasted, on this machine, or the course's under the demo
kit) in a child process, then show what it built on the walk's four pages and in the Report."""

import tempfile
import time
from pathlib import Path

import streamlit as st

from diagnostics.config import limits
from diagnostics.i18n import _, msg
from diagnostics.usercode.course_scripts import COURSE_SCRIPTS
from diagnostics.usercode.trace import trace_script
from ui.render import ACTIVE_KEY, TRACED_KEY, markdown_text, shown
from ui.repair import REPAIRED_KEY, repair_section
from ui.script import run_options, script_source, show_trace

COURSE_PATHS = {script.path for script in COURSE_SCRIPTS.values()}

st.title(_("Your script"))
st.caption(_("Your own TensorFlow training script, run in a separate process: at each `model.fit` the checks run on "
             "the model, dataset, compile settings and tokenizer it built, then that fit trains two steps so the "
             "script reaches its next one (freeze, then fine-tune: each phase is checked); a training loop without "
             "`fit` is checked at its first `apply_gradients`. An error before `fit` is diagnosed too. The same as "
             "`python -m diagnostics trace train.py`."))
if limits.hosted():
    st.info(_("This hosted app never runs code it is given, so tracing a script is not offered here. On your own "
              "machine, run `python -m diagnostics trace train.py`, or start this app with `streamlit run app.py` "
              "and open this page."), icon=":material/lock:")
    st.stop()
st.warning(_("A traced script runs as you, with your rights: it can read, write and delete whatever you can, and "
             "reach the network. Trace only code you would run yourself."), icon=":material/warning:")

path, code, name = script_source()
options, problems = run_options()
for problem in problems:
    st.error(problem)
if st.button(_("Trace the script"), type="primary", key="script.run",
             disabled=bool(problems) or (path is None and code is None)):
    with tempfile.TemporaryDirectory(prefix="tpd-script-") as holder:
        if code is not None:
            path = Path(holder) / name
            path.write_text(code)
        source = code if code is not None else path.read_text(encoding="utf-8", errors="replace")
        with st.status(_("Tracing {name}…").format(name=markdown_text(path.name)), expanded=True) as box:
            line = st.empty()
            started = time.monotonic()
            shown_seconds = [-1]

            def tick(seconds: float) -> None:
                # Each second, how long it has run against its limit; a visitor who left stops the trace here.
                if int(seconds) != shown_seconds[0]:
                    shown_seconds[0] = int(seconds)
                    box.update(label=_("Tracing {name}… {seconds} s of its {limit:.0f} s limit").format(
                        name=markdown_text(path.name), seconds=int(seconds), limit=options["timeout"]),
                        expanded=True)  # an update without it folds the box, hiding the child's progress lines

            outcome = trace_script(path, capture_output=True, progress=lambda text: line.write(shown(text)),
                                   tick=tick, limit_name=msg("Time limit (s)"), **options)
            # What it found is said once, below; the box keeps the progress lines and how long it took.
            box.update(label=_("Traced {name} in {seconds:.0f} s").format(name=markdown_text(path.name),
                                                                         seconds=time.monotonic() - started),
                       state="complete" if outcome.exit_code == 0 else "error", expanded=False)
    st.session_state[TRACED_KEY] = {"name": path.name, "report": outcome.report, "message": outcome.message,
                                    "exit_code": outcome.exit_code, "output": outcome.output, "source": source,
                                    "options": options, "path": None if code is not None else str(path),
                                    "keep_repaired": code is None and path not in COURSE_PATHS}
    st.session_state[TRACED_KEY]["seconds"] = time.monotonic() - started
    st.session_state.pop(REPAIRED_KEY, None)
    st.session_state[ACTIVE_KEY] = outcome.report is not None
    st.rerun()  # the sidebar, drawn before this page, names the script the pages now show

traced = st.session_state.get(TRACED_KEY)
if not traced:
    st.info(_("Choose a script and press **Trace the script**. It runs in its own process with the time limit "
              "above; its model is never trained by the checks (they train copies)."))
    st.stop()
st.divider()
show_trace(traced)
repair_section(traced)
