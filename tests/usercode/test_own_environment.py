"""The script runs in the environment it has alone (issue 70): importing the package sets nothing process-wide, and
the traced script's child imports no library and sets no variable ahead of the script, wrapping what the checks
need as the script imports it (usercode/after_import.py), so `tf.keras` is the Keras the script gets alone and its
own errors are its own. The whole trace of a script whose Keras 3 optimizer meets a Transformers model is the full
tier's; the child's state at the script's first line is the default tier's."""

import os
import subprocess
import sys
import textwrap

import pytest

import diagnostics
from conftest import ROOT
from diagnostics.usercode.after_import import AfterImport


def users_environment() -> dict[str, str]:
    """This process's environment without what `own_process` set for the suite: the user's."""
    return {key: value for key, value in os.environ.items()
            if key not in (*diagnostics.SET_BY_DEBUGGER, diagnostics.QUIETED_ENV)}


# ---------------------------------------------------------------- the finder


def write_package(root, name: str, body: str = "VALUE = 1\n"):
    package = root / name
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "part.py").write_text(body)
    return package


def test_a_function_waits_for_its_module_and_the_module_keeps_its_own_loader(tmp_path, monkeypatch):
    write_package(tmp_path, "awaited_pkg")
    monkeypatch.syspath_prepend(str(tmp_path))
    seen = []
    importing = AfterImport()
    try:
        importing.when("awaited_pkg.part", lambda module: seen.append((module.__name__, module.VALUE)))
        assert seen == [] and sys.meta_path[0] is importing
        import awaited_pkg.part

        assert seen == [("awaited_pkg.part", 1)]  # once its code ran, not before
        assert type(awaited_pkg.part.__loader__).__name__ == "SourceFileLoader"
        assert awaited_pkg.part.__spec__.loader is awaited_pkg.part.__loader__
        assert importing not in sys.meta_path  # nothing waits: the finder is off
        importing.when("awaited_pkg.part", lambda module: seen.append("now"))  # imported already: called at once
        assert seen[-1] == "now"
    finally:
        importing.close()
        for name in ("awaited_pkg", "awaited_pkg.part"):
            sys.modules.pop(name, None)


def test_a_function_that_fails_leaves_the_import_as_it_is_and_close_drops_what_waits(tmp_path, monkeypatch, capsys):
    write_package(tmp_path, "failing_pkg")
    write_package(tmp_path, "never_pkg")
    monkeypatch.syspath_prepend(str(tmp_path))
    importing = AfterImport()
    try:
        importing.when("failing_pkg.part", lambda module: 1 / 0)
        importing.when("never_pkg.part", lambda module: pytest.fail("called after close"))
        import failing_pkg.part

        assert failing_pkg.part.VALUE == 1 and importing.failed == ["failing_pkg.part: ZeroDivisionError: division "
                                                                    "by zero"]
        assert "ZeroDivisionError" in capsys.readouterr().err  # said, not swallowed
        importing.close()
        assert importing not in sys.meta_path
        import never_pkg.part  # noqa: F401
    finally:
        importing.close()
        for name in ("failing_pkg", "failing_pkg.part", "never_pkg", "never_pkg.part"):
            sys.modules.pop(name, None)


def test_a_function_hears_an_import_begin_once_before_its_code_runs(tmp_path, monkeypatch):
    write_package(tmp_path, "begun_pkg")
    monkeypatch.syspath_prepend(str(tmp_path))
    heard = []
    importing = AfterImport()
    try:
        importing.before("begun_pkg", heard.append)
        importing.before("sys", pytest.fail)  # imported already: never called
        import begun_pkg.part  # noqa: F401

        assert heard == ["begun_pkg"] and importing not in sys.meta_path
    finally:
        importing.close()
        for name in ("begun_pkg", "begun_pkg.part"):
            sys.modules.pop(name, None)


def test_a_trace_says_each_heavy_import_with_the_seconds_it_took_the_last_time_here(tmp_path, monkeypatch):
    from diagnostics.usercode.trace_imports import _import_key, import_times

    monkeypatch.setenv("DEBUGGER_CACHE_DIR", str(tmp_path))
    assert import_times() == {}  # the first trace here: no estimate is shown
    import_times({"tensorflow": 6.2})
    assert import_times() == {"tensorflow": 6.2}
    (tmp_path / "trace-import-times.json").write_text("not json")
    assert import_times() == {}
    # Transformers imported after TensorFlow is another import than Transformers loading TensorFlow itself.
    assert _import_key("transformers", {}) != _import_key("transformers", {"tensorflow": 0}) or \
        "tensorflow" not in sys.modules


# ---------------------------------------------------------------- the notebook's process

NOTEBOOK = """
import json, os, sys
before = dict(os.environ)
import diagnostics
from diagnostics import DiagnoseCallback, diagnose, watch
import diagnostics.usercode.api, diagnostics.usercode.trace
changed = sorted(key for key in set(before) | set(os.environ) if before.get(key) != os.environ.get(key))
import tensorflow as tf
print("RESULT " + json.dumps({"changed": changed, "keras": tf.keras.optimizers.Adam.__module__.split(".")[0]}))
"""


@pytest.mark.subprocess
def test_importing_the_package_sets_no_variable_and_a_notebooks_tf_keras_stays_its_own():
    env = {key: value for key, value in users_environment().items() if key != "TF_USE_LEGACY_KERAS"}
    done = subprocess.run([sys.executable, "-c", NOTEBOOK], cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={**env, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr[-2000:]
    result = done.stdout.split("RESULT ")[-1]
    # Keras 3, as `import tensorflow` gives a notebook that never set TF_USE_LEGACY_KERAS (before: tf_keras)
    assert result.strip() == '{"changed": [], "keras": "keras"}'


# ---------------------------------------------------------------- the traced script's first line

PROBE = textwrap.dedent("""
    import json, os, sys
    names = ("tensorflow", "tf_keras", "datasets", "transformers")
    state = {"env": {key: os.environ.get(key) for key in ("TF_USE_LEGACY_KERAS", "TF_CPP_MIN_LOG_LEVEL",
                                                          "TRANSFORMERS_VERBOSITY")},
             "imported": [name for name in names if name in sys.modules]}
    import datasets, tensorflow as tf, tf_keras
    from transformers import PreTrainedTokenizerBase
    state["keras"] = tf.keras.optimizers.Adam.__module__.split(".")[0]
    print("STATE " + json.dumps(state))
    print("WRAPPED " + json.dumps([hasattr(method, "__wrapped__") or method.__name__ != name for name, method in (
        ("to_tf_dataset", datasets.Dataset.to_tf_dataset), ("__call__", PreTrainedTokenizerBase.__call__),
        ("compile", tf_keras.Model.compile))]))
""")


@pytest.mark.subprocess
def test_the_traced_script_starts_with_nothing_imported_and_the_users_environment(tmp_path, monkeypatch):
    from diagnostics.usercode import trace
    from diagnostics.usercode.trace import trace_script

    script = tmp_path / "probe.py"
    script.write_text(PROBE)
    for legacy in (None, "1"):  # the user's own choice of Keras is the script's, whichever it is
        env = {key: value for key, value in users_environment().items() if key != "TF_USE_LEGACY_KERAS"}
        if legacy:
            env["TF_USE_LEGACY_KERAS"] = legacy
        plain = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path, env=env,
                               timeout=300)
        line = next(line for line in plain.stdout.splitlines() if line.startswith("STATE "))
        assert '"imported": []' in line and ('"keras": "tf_keras"' if legacy else '"keras": "keras"') in line
        with monkeypatch.context() as patch:  # the user's value here, and the debugger's own settings around it
            patch.delenv("TF_USE_LEGACY_KERAS", raising=False)
            if legacy:
                patch.setenv("TF_USE_LEGACY_KERAS", legacy)
            patch.setattr(trace, "SET_BY_DEBUGGER",
                          [key for key in diagnostics.SET_BY_DEBUGGER if key != "TF_USE_LEGACY_KERAS"])
            traced = trace_script(script, capture_output=True, cwd=tmp_path, timeout=300)
        assert line in traced.output.splitlines(), traced.output[-3000:]
        # The wrappers are in place once the script imported each library.
        assert "WRAPPED [true, true, true]" in traced.output.splitlines()


FORUM = """
import numpy as np
import tensorflow as tf
from tensorflow import keras
from transformers import AutoTokenizer, TFAutoModelForSequenceClassification

optimizer = keras.optimizers.Adam(learning_rate=5e-5)  # tf.keras read before Transformers' TF models load: Keras 3
tokenizer = AutoTokenizer.from_pretrained({kit!r})
model = TFAutoModelForSequenceClassification.from_pretrained({kit!r}, num_labels=2)
encoded = tokenizer(["a good film", "a bad film"] * 8, padding=True, return_tensors="np")
model.compile(optimizer=optimizer, loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
model.fit(dict(encoded), np.array([1, 0] * 8), epochs=1, batch_size=8)
"""


@pytest.mark.slow  # full tier: a whole trace in a child; the default tier's probe holds the child's environment
@pytest.mark.subprocess
def test_a_keras_3_optimizer_for_a_transformers_model_fails_traced_as_it_does_alone_and_is_named(tmp_path,
                                                                                                 monkeypatch):
    from diagnostics.keras.loading import demo_checkpoint_dir
    from diagnostics.usercode import trace
    from diagnostics.usercode.trace import trace_script

    script = tmp_path / "forum.py"
    script.write_text(FORUM.format(kit=str(demo_checkpoint_dir())))
    env = {key: value for key, value in users_environment().items() if key != "TF_USE_LEGACY_KERAS"}
    plain = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path, env=env,
                           timeout=300)
    assert plain.returncode != 0 and "Could not interpret optimizer identifier" in plain.stderr
    monkeypatch.delenv("TF_USE_LEGACY_KERAS", raising=False)
    monkeypatch.setattr(trace, "SET_BY_DEBUGGER",
                        [key for key in diagnostics.SET_BY_DEBUGGER if key != "TF_USE_LEGACY_KERAS"])
    traced = trace_script(script, capture_output=True, cwd=tmp_path, timeout=600)
    # Before, the child's TF_USE_LEGACY_KERAS=1 made `keras` tf-keras: the script trained and traced clean.
    error = traced.report["script"]["error"]
    assert traced.report["script"]["reached_fit"] is False and traced.report["checks"] == []
    assert "A Keras 3 object was given to a tf-keras (Keras 2) model" in str(error), error
    assert "import tf_keras as keras" in str(error)
