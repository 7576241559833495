"""Training Pipeline Debugger: checks for TensorFlow + Transformers fine-tuning on GLUE.

`from diagnostics import diagnose, DiagnoseCallback` runs the checks on your own model and dataset (see
usercode/api.py and usercode/callback.py); they import TensorFlow on first use, not with the package.
`with diagnostics.watch():` around your `to_tf_dataset` calls lets the checks batch your rows with your own call
(usercode/hooks.py). Importing the package patches no library.

Importing the package sets nothing for the process: a notebook's `tf.keras`, logging and progress bars stay as the
user's environment has them. The debugger's own processes (the app's server, the command line, the benches and the
suite) call `own_process()` first, which selects Keras 2 (`tf-keras`) for `tf.keras`, as Transformers' TF models
need, and quiets TensorFlow's C++ logging, Transformers' warnings and `datasets`' progress bars before they are first
imported, where the environment does not set them. A traced script's child is started without what this set
(`SET_BY_DEBUGGER`), so the script runs with the user's environment, as it does alone.
"""

import os

QUIET = {"TF_USE_LEGACY_KERAS": "1", "TF_CPP_MIN_LOG_LEVEL": "2", "TOKENIZERS_PARALLELISM": "false",
         "HF_DATASETS_DISABLE_PROGRESS_BARS": "1", "TRANSFORMERS_VERBOSITY": "error"}
TRACE_CHILD_ENV = "DEBUGGER_TRACE_CHILD"
# The variables `own_process` set, not the user: a traced script's child is started without them. They are named in
# QUIETED_ENV too, so a process started by one that set them (a test worker, a server) knows them.
QUIETED_ENV = "DEBUGGER_QUIETED"
SET_BY_DEBUGGER: list[str] = []


def own_process() -> None:
    """Keras 2 for `tf.keras` and quiet libraries, in a process the debugger owns, where the environment does not
    set them; call it before TensorFlow is imported. Nothing in a traced script's child (its environment is the
    user's)."""
    if os.environ.get(TRACE_CHILD_ENV) == "1":
        return
    known = [key for key in os.environ.get(QUIETED_ENV, "").split(",") if key in QUIET]
    for key in dict.fromkeys([key for key in QUIET if key not in os.environ] + known):
        if key not in SET_BY_DEBUGGER:
            SET_BY_DEBUGGER.append(key)
    for key, value in QUIET.items():
        os.environ.setdefault(key, value)
    os.environ[QUIETED_ENV] = ",".join(SET_BY_DEBUGGER)


_API = ("diagnose", "DiagnoseCallback", "Report", "PipelineError")


def __getattr__(name):
    if name == "watch":
        from diagnostics.usercode.hooks import watch

        return watch
    if name == "DiagnoseCallback":
        from diagnostics.usercode.callback import DiagnoseCallback

        return DiagnoseCallback
    if name in _API:
        from diagnostics.usercode import api

        return getattr(api, name)
    raise AttributeError(f"module 'diagnostics' has no attribute {name!r}")
