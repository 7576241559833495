"""The linter, with the rule sets and reasons of pyproject.toml's [tool.ruff], over the whole project: CI runs it as
part of the suite, so code that breaks a rule does not land."""

from pathlib import Path
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT


def test_ruff_finds_nothing():
    ruff = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    if ruff is None:
        pytest.fail("ruff is not installed: pip install -r requirements-test.txt")
    done = subprocess.run([ruff, "check", "--no-cache", "."], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
