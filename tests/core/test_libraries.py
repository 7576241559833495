"""The heavy libraries imported once in the debugger's own processes, their objects frozen out of the cycle
collector's walks; a user's notebook (the package imported, diagnose() called) keeps its collector as it was."""

import json
import subprocess
import sys

import pytest

from conftest import ROOT

pytestmark = pytest.mark.subprocess

PROBE = """
import gc, json, sys
import diagnostics
from diagnostics.core.libraries import import_libraries
before = gc.get_freeze_count()
{calls}
print("RESULT " + json.dumps({{"before": before, "frozen": gc.get_freeze_count(), "enabled": gc.isenabled(),
                               "tensorflow": "tensorflow" in sys.modules, "garbage": garbage}}))
"""


def probe(calls: str) -> dict:
    done = subprocess.run([sys.executable, "-c", PROBE.format(calls=calls)], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(next(line for line in done.stdout.splitlines() if line.startswith("RESULT "))[7:])


def test_the_libraries_are_imported_once_frozen_and_the_collector_still_collects_what_comes_after():
    # A cycle made after the freeze is still found and freed by a collection.
    out = probe("import_libraries(); frozen_once = gc.get_freeze_count(); import_libraries()\n"
                "assert gc.get_freeze_count() == frozen_once\n"
                "class Node: pass\n"
                "node = Node(); node.self = node; del node\n"
                "garbage = gc.collect()")
    assert out["tensorflow"] and out["enabled"]
    assert out["before"] == 0 and out["frozen"] > 100_000  # TensorFlow's objects, out of every later walk
    assert out["garbage"] >= 1


def test_importing_the_package_leaves_a_notebooks_collector_alone():
    out = probe("from diagnostics import diagnose\ngarbage = 0")
    assert out["frozen"] == 0 and out["enabled"]
