"""The registry refuses a broken declaration when it is built: a new check module (`data.whitespace`, as a newcomer
would add one) with each kind of mistake, imported in a fresh interpreter, stops the import with one line naming its
module and the name it got wrong."""

import ast
import subprocess
import sys
import textwrap

import pytest

from conftest import ROOT

pytestmark = pytest.mark.subprocess

# A check module declared the way the stage packages declare theirs, added to the Data stage's lists before the
# registry is built. `{check}`, `{cause}` and `{unit}` are filled in per case.
MODULE = """
import sys, types
from typing import TypedDict
from diagnostics.checks import data
from diagnostics.core.check import Cause, Check, Condition, Explains, Unit
from diagnostics.core.rules import Above

class Evidence(TypedDict):
    rows: int
    spaced: int

module = types.ModuleType("diagnostics.checks.data.whitespace")
module.CHECK = {check}
module.CAUSE = {cause}
module.UNIT = {unit}
sys.modules[module.__name__] = module
data.CHECKS = (*data.CHECKS, module.CHECK)
data.CAUSES = (*data.CAUSES, *([module.CAUSE] if module.CAUSE else []))
data.UNITS = (*data.UNITS, *([module.UNIT] if module.UNIT else []))
try:
    import diagnostics.walk.runner
except ImportError as exc:
    print(type(exc).__name__, exc)
else:
    print("built")
"""
CHECK = ('Check("data.whitespace", "Whitespace in the text", unit="data", evidence=Evidence, '
         'otherwise_says=lambda e, f: "no spaces", '
         'conditions=(Condition("spaced", 0.1, "share of rows", rule=Above("spaced"), '
         'says=lambda e, f: ("spaces", None)),))')


def built(check=CHECK, cause="None", unit="None") -> str:
    code = textwrap.dedent(MODULE).format(check=check, cause=cause, unit=unit)
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip()


def test_a_sound_new_check_module_is_taken():
    assert built() == "built"


def test_a_new_cause_takes_its_place_by_its_own_precedence():
    """A cause is registered by its declaration alone: its precedence puts it among the others."""
    code = textwrap.dedent(MODULE).replace('print("built")', 'print(list(diagnostics.walk.registry.CAUSES))')
    said = subprocess.run([sys.executable, "-c", code.format(
        check=CHECK, cause='Cause("spaces", "data.whitespace", ("spaced",), "Spaces", precedence=15)', unit="None")],
        cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert said.returncode == 0, said.stderr[-2000:]
    causes = ast.literal_eval(said.stdout.strip())
    assert causes[:3] == ["absent_columns", "spaces", "stray_labels"] and causes[-1] == "rate"


@pytest.mark.parametrize("check, cause, unit, line", [
    (CHECK.replace('unit="data"', 'unit="data", requires=("txets",)'), "None", "None",
     "diagnostics.checks.data.whitespace: data.whitespace requires 'txets', which the runner does not provide"),
    (CHECK.replace('unit="data"', 'unit="dta"'), "None", "None",
     "diagnostics.checks.data.whitespace: data.whitespace runs in unit 'dta', which no stage declares"),
    (CHECK.replace('Above("spaced")', 'Above("share")'), "None", "None",
     "diagnostics.checks.data.whitespace: data.whitespace's condition 'spaced' reads 'share', which its evidence "
     "does not declare"),
    (CHECK, 'Cause("spaces", "data.whitespace", ("spaced",), "Spaces", precedence=10)', "None",
     "diagnostics.checks.data.whitespace: cause 'spaces' has precedence 10, as cause 'absent_columns' has"),
    (CHECK, 'Cause("spaces", "data.whitespace", ("spaced",), "Spaces", precedence=1.5)', "None",
     "diagnostics.checks.data.whitespace: cause 'spaces' has precedence 1.5, which is not a whole number"),
    (CHECK, 'Cause("spaces", "data.whitespace", ("spacd",), "Spaces", precedence=15)', "None",
     "diagnostics.checks.data.whitespace: cause 'spaces' names condition 'spacd', which data.whitespace does not "
     "declare"),
    (CHECK, 'Cause("spaces", "data.whitespace", ("spaced",), "Spaces", explains=(Explains("data.tokens"),), '
            'precedence=15)', "None",
     "diagnostics.checks.data.whitespace: cause 'spaces' explains 'data.tokens', which is no check"),
    (CHECK.replace('unit="data"', 'unit="spaces"'), "None", 'Unit("spaces", "data", needs=("texts", "tokenz"))',
     "diagnostics.checks.data.whitespace: unit 'spaces' needs 'tokenz', which the runner does not provide"),
    (CHECK.replace('unit="data"', 'unit="spaces"'), "None", 'Unit("spaces", "data", reads=("data.batch:rowz",))',
     "diagnostics.checks.data.whitespace: unit 'spaces' reads 'data.batch:rowz', which no check's evidence holds"),
    (CHECK.replace(', says=lambda e, f: ("spaces", None)', ''), "None", "None",
     "diagnostics.checks.data.whitespace: data.whitespace's condition 'spaced' judges but says nothing (declare its "
     "says=)"),
    (CHECK.replace(', rule=Above("spaced")', ''), "None", "None",
     "diagnostics.checks.data.whitespace: data.whitespace's condition 'spaced' says a sentence but has no rule to "
     "judge by"),
    (CHECK.replace('otherwise_says=lambda e, f: "no spaces", ', ''), "None", "None",
     "diagnostics.checks.data.whitespace: data.whitespace declares no otherwise_says, so it has nothing to say when "
     "no rule is crossed"),
], ids=["requires", "unit", "rule key", "precedence taken", "precedence not whole", "cause condition", "explains",
        "unit need", "unit reads", "no sentence", "sentence without rule", "no otherwise sentence"])
def test_a_broken_declaration_stops_the_import_with_one_line_naming_its_module_and_name(check, cause, unit, line):
    said = built(check, cause, unit)
    assert said.startswith("RegistryError " + line), said
    assert "\n" not in said
