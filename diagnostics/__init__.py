"""Training Pipeline Debugger: checks for TensorFlow + Transformers fine-tuning on GLUE.

`from diagnostics import diagnose, DiagnoseCallback` runs the checks on your own model and dataset (see api.py);
they import TensorFlow on first use, not with the package.

Importing the package selects Keras 2 (`tf-keras`), which Transformers' TF models need,
and quiets TensorFlow's C++ logging before TensorFlow is first imported.
"""

import os

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_DATASETS_DISABLE_PROGRESS_BARS", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

_API = ("diagnose", "DiagnoseCallback", "Report", "PipelineError")


def __getattr__(name):
    if name in _API:
        from diagnostics import api

        return getattr(api, name)
    raise AttributeError(f"module 'diagnostics' has no attribute {name!r}")
