"""A traced process that is killed (out of memory, a signal) is said as killed, never as a clean trace, and nothing
above it raises: the keeper ends as its child did, the tracer reads that end (issue 70, item 7)."""

import subprocess
import sys

import pytest

from diagnostics.usercode.trace import EXIT_BAD_INPUT, EXIT_FAILED, EXIT_OK, _judged, killed_by


def test_the_keeper_ends_as_a_child_killed_by_sigkill_did_without_raising():
    """SIGKILL takes no handler, so the keeper cannot put one back before ending the same way (it raised
    `OSError: [Errno 22] Invalid argument` there, and the trace's parent read a keeper that failed)."""
    done = subprocess.run([sys.executable, "-m", "diagnostics.usercode.keeper", sys.executable, "-c",
                           "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == -9 and "Traceback" not in done.stderr, done.stderr
    done = subprocess.run([sys.executable, "-m", "diagnostics.usercode.keeper", sys.executable, "-c",
                           "import os, signal; os.kill(os.getpid(), signal.SIGTERM)"], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == -15 and "Traceback" not in done.stderr, done.stderr


CHECKED = {"script": {"path": "train.py", "reached_fit": True, "fit_at": "train.py:30", "fits": 2, "loop": False,
                      "error": None},
           "checks": [], "causes": [], "notes": [], "counts": {}, "phase": {"fit": 1, "at": "train.py:30"}}


def test_a_trace_killed_after_a_clean_fit_says_so_and_is_not_a_clean_bill():
    assert killed_by(-9) == "SIGKILL" and killed_by(0) is None and killed_by(None) is None and killed_by(1) is None
    clean = _judged("train.py", CHECKED, timed_out=False, timeout=600, status=0, output="", seen=[])
    assert clean.exit_code == EXIT_OK
    killed = _judged("train.py", CHECKED, timed_out=False, timeout=600, status=-9, output="", seen=[])
    assert killed.exit_code == EXIT_FAILED
    assert str(killed.message) == (
        "train.py reached fit at train.py:30; checked what it built: no check fails. Then the traced process was "
        "killed by SIGKILL (most often the machine running out of memory), before the script ended: what it did after "
        "the checks above (a later fit's checks, if it reached one) was not checked.")
    early = _judged("train.py", None, timed_out=False, timeout=600, status=-9, output="", seen=[])
    assert early.exit_code == EXIT_BAD_INPUT and str(early.message) == (
        "train.py was killed by SIGKILL (most often the machine running out of memory) before any fit was checked.")


@pytest.mark.slow  # full tier: a whole trace in a child process; the two tests above hold the rest of the claim
@pytest.mark.subprocess
def test_trace_a_script_killed_after_its_fit_names_the_kill_and_the_parent_never_raises(tmp_path):
    from diagnostics.keras.loading import demo_checkpoint_dir
    from diagnostics.usercode.trace import trace_script

    script = tmp_path / "killed.py"
    script.write_text(
        "import os, signal\n"
        "import numpy as np\n"
        "import tf_keras\n"
        "from transformers import TFAutoModelForSequenceClassification\n"
        f"model = TFAutoModelForSequenceClassification.from_pretrained({str(demo_checkpoint_dir())!r}, num_labels=2)\n"
        "model.compile(optimizer=tf_keras.optimizers.Adam(learning_rate=1e-3))\n"
        "ids = np.tile(np.arange(5, 13), (32, 1))\n"
        "model.fit({'input_ids': ids, 'attention_mask': np.ones_like(ids)}, np.arange(32) % 2, batch_size=8)\n"
        "os.kill(os.getpid(), signal.SIGKILL)  # as the kernel ends a process out of memory\n")
    outcome = trace_script(script, capture_output=True, cwd=tmp_path, stages="data,model")
    assert outcome.report is not None and outcome.exit_code == EXIT_FAILED, outcome.message + outcome.output[-3000:]
    assert "killed by SIGKILL" in str(outcome.message) and "Traceback" not in outcome.output
