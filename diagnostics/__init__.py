"""Training Pipeline Debugger: checks for TensorFlow + Transformers fine-tuning on GLUE.

`from diagnostics import diagnose, DiagnoseCallback` runs the checks on your own model and dataset (see
usercode/api.py and usercode/callback.py); they import TensorFlow on first use, not with the package.
`with diagnostics.watch():` around your `to_tf_dataset` calls lets the checks batch your rows with your own call
(usercode/hooks.py). Importing the package patches no library.

Importing the package selects Keras 2 (`tf-keras`), which Transformers' TF models need,
and quiets TensorFlow's C++ logging, Transformers' warnings and `datasets`' progress bars before they are first
imported, where the environment does not set them. The child that runs a traced script leaves them as the user's
environment has them (`TRACE_CHILD_ENV`): the script's own output stays its own.
"""

import os

QUIET = {"TF_CPP_MIN_LOG_LEVEL": "2", "TOKENIZERS_PARALLELISM": "false", "HF_DATASETS_DISABLE_PROGRESS_BARS": "1",
         "TRANSFORMERS_VERBOSITY": "error"}
TRACE_CHILD_ENV = "DEBUGGER_TRACE_CHILD"
# The variables this import set, not the user: a traced script's child is started without them. They are named in
# QUIETED_ENV too, so a process started by one that imported the package (a test worker, a server) knows them.
QUIETED_ENV = "DEBUGGER_QUIETED"
SET_ON_IMPORT = tuple(dict.fromkeys(
    [key for key in QUIET if key not in os.environ]
    + [key for key in os.environ.get(QUIETED_ENV, "").split(",") if key in QUIET]))

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
if os.environ.get(TRACE_CHILD_ENV) != "1":
    for _key, _value in QUIET.items():
        os.environ.setdefault(_key, _value)
    os.environ[QUIETED_ENV] = ",".join(SET_ON_IMPORT)

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
