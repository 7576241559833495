"""The environment as the first check: each library combination that stops Transformers' TF models is named with
its one fix before anything imports them, in every entry point; a real environment without tf-keras says so."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from diagnostics.core.environment import StackError, require_tf_keras_model, stack_problems
from diagnostics.i18n import localize

pytestmark = pytest.mark.stack

ROOT = Path(__file__).resolve().parents[2]
GOOD = {"tensorflow": "2.20.0", "tf-keras": "2.20.1", "transformers": "4.54.1", "keras": "3.15.1"}


def said(versions):
    return [(localize(problem.finding), problem.fix) for problem in stack_problems(versions)]


def test_the_pinned_stack_and_the_oldest_the_ranges_allow_have_no_problem():
    assert said(GOOD) == []
    assert said({"tensorflow": "2.16.2", "tf-keras": "2.16.0", "transformers": "4.44.2", "keras": "3.3.3"}) == []
    assert stack_problems() == []  # this environment's own


def test_transformers_5_is_named_with_the_range_that_has_tf_classes():
    [(finding, fix)] = said({**GOOD, "transformers": "5.2.0"})
    assert "Transformers 5.2.0 has no TensorFlow model classes" in finding
    assert fix == 'pip install "transformers>=4.44,<5"'


def test_keras_3_without_tf_keras_and_a_minor_version_mismatch_name_the_matching_tf_keras():
    [(finding, fix)] = said({**GOOD, "tf-keras": None})
    assert "TensorFlow 2.20.0 comes with Keras 3" in finding and "not installed" in finding
    assert fix == 'pip install "tf-keras~=2.20.0"'
    [(finding, fix)] = said({**GOOD, "tensorflow": "2.19.1"})
    assert "tf-keras 2.20.1 does not match TensorFlow 2.19.1" in finding
    assert fix == 'pip install "tf-keras~=2.19.0"'


def test_missing_libraries_come_first_and_each_is_named():
    found = said({"tensorflow": None, "tf-keras": None, "transformers": None, "keras": None})
    assert [fix for _, fix in found] == ['pip install "tensorflow>=2.16,<2.21"', 'pip install "transformers>=4.44,<5"']


def test_a_keras_3_model_is_named_and_a_tf_keras_one_is_not():
    import keras
    import tf_keras

    inputs = keras.Input((4,))
    with pytest.raises(StackError) as caught:
        require_tf_keras_model(keras.Model(inputs, keras.layers.Dense(2)(inputs)))
    assert "Keras 3 model (Functional)" in localize(caught.value.args[0])
    assert "import tf_keras as keras" in localize(caught.value.args[0])
    tf_inputs = tf_keras.Input((4,))
    require_tf_keras_model(tf_keras.Model(tf_inputs, tf_keras.layers.Dense(2)(tf_inputs)))  # raises nothing


@pytest.mark.subprocess
def test_an_environment_without_tf_keras_is_told_so_by_the_command_line_and_diagnose(tmp_path):
    """A real environment that lacks tf-keras: this one's packages, tf_keras left out, on an isolated path."""
    site = Path(next(path for path in sys.path if path.endswith("site-packages") and Path(path, "tf_keras").is_dir()))
    farm = tmp_path / "site-packages"
    farm.mkdir()
    for entry in site.iterdir():
        if not entry.name.lower().startswith(("tf_keras", "tf-keras")):
            (farm / entry.name).symlink_to(entry)
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(farm)])
    command = [sys.executable, "-s", "-c", "import sys; sys.path = [p for p in sys.path if p != %r]; "
               "from diagnostics.__main__ import main; sys.exit(main(sys.argv[1:]))" % str(site)]
    done = subprocess.run([*command, "run", "--task", "sst2"], env=env, capture_output=True, text=True,
                          cwd=tmp_path, timeout=120)
    assert done.returncode == 2, done.stderr[-2000:]
    assert "comes with Keras 3" in done.stderr and 'pip install "tf-keras~=' in done.stderr
    assert "Traceback" not in done.stderr
    done = subprocess.run([sys.executable, "-s", "-c", "import sys; sys.path = [p for p in sys.path if p != %r]\n"
                           "from diagnostics import diagnose\ntry:\n    diagnose(None, None)\n"
                           "except Exception as exc:\n    print(type(exc).__name__, exc)" % str(site)],
                          env=env, capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert done.stdout.startswith("StackError") and "tf-keras" in done.stdout, done.stdout + done.stderr[-2000:]
