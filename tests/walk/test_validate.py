"""The registry refuses a broken declaration when it is built: a new check module (`data.whitespace`, as a newcomer
would add one) with each kind of mistake is collected with the real stages, in this process, as the registry
collects them (`registry.collect`, then the runner's `problems`), and is refused with one line naming its module and
the name it got wrong. Two tests import it in a fresh interpreter, where the subject is the import itself: the stage
packages' lists extended before the registry is built, and a broken declaration stopping that import."""

import subprocess
import sys
import textwrap
import types

import pytest

from conftest import ROOT
from diagnostics.checks import data, hparams, model, overfit
from diagnostics.core import check as check_module
from diagnostics.walk import registry, runner, validate

# A check module declared the way the stage packages declare theirs. `{check}`, `{cause}` and `{unit}` are filled
# in per case.
DECLARATIONS = """
from typing import TypedDict
from diagnostics.core.check import Cause, Check, Condition, Explains, Unit
from diagnostics.core.rules import Above

class Evidence(TypedDict):
    rows: int
    spaced: int

CHECK = {check}
CAUSES = {causes}
UNIT = {unit}
"""
# The same module added to the Data stage's lists in a fresh interpreter, before the registry is built.
IMPORTED = DECLARATIONS + """
import sys, types
from diagnostics.checks import data
module = types.ModuleType("diagnostics.checks.data.whitespace")
module.__dict__.update(CHECK=CHECK, CAUSES=CAUSES, UNIT=UNIT)
sys.modules[module.__name__] = module
data.CHECKS = (*data.CHECKS, CHECK)
data.CAUSES = (*data.CAUSES, *CAUSES)
data.UNITS = (*data.UNITS, *([UNIT] if UNIT else []))
try:
    import diagnostics.walk.runner
except ImportError as exc:
    print(type(exc).__name__, exc)
else:
    print(list(diagnostics.walk.registry.CAUSES))
"""
CHECK = ('Check("data.whitespace", "Whitespace in the text", unit="data", evidence=Evidence, '
         'measure=lambda run: [], otherwise_says=lambda e, f: "no spaces", '
         'conditions=(Condition("spaced", 0.1, "share of rows", rule=Above("spaced"), '
         'says=lambda e, f: ("spaces", None)),))')
SPACES = 'Cause("spaces", "data.whitespace", ("spaced",), "Spaces", precedence=15)'


# The Data stage's check modules, in its order.
DATA_MODULES = [sys.modules[validate.module_of(check)] for check in data.CHECKS]


def declared(cause: str) -> str:
    """A module's CAUSES, as the real modules write it: a tuple (empty where `cause` is "None")."""
    return "()" if cause == "None" else f"({cause},)"


@pytest.fixture
def collected(monkeypatch):
    """`collected(check, cause, unit)`: the registry's causes in order when the module's declarations hold beside
    the real stages' ("RegistryError <line>" when they do not), collected here as the registry and runner do."""
    def collect(check=CHECK, cause="None", unit="None", causes=None):
        module = types.ModuleType("diagnostics.checks.data.whitespace")
        exec(textwrap.dedent(DECLARATIONS).format(check=check, causes=causes or declared(cause), unit=unit),
             module.__dict__)
        monkeypatch.setitem(sys.modules, module.__name__, module)
        try:  # as the Data stage's package collects its modules, this one after them
            stage_checks, stage_causes = check_module.collect(*DATA_MODULES, module)
            stage = types.SimpleNamespace(CHECKS=stage_checks, CAUSES=stage_causes,
                                          UNITS=(*data.UNITS, *([module.UNIT] if module.UNIT else [])))
            checks, causes, units = registry.collect((stage, model, hparams, overfit))
            validate.hold(runner.problems(checks, units))
        except validate.RegistryError as exc:
            return f"{type(exc).__name__} {exc}"
        return list(causes)
    return collect


def imported(check=CHECK, cause="None") -> str:
    code = textwrap.dedent(IMPORTED).format(check=check, causes=declared(cause), unit="None")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip()


@pytest.mark.subprocess
def test_a_new_check_module_added_to_its_stage_before_the_import_is_taken_and_a_broken_one_stops_it():
    causes = imported(cause=SPACES)
    assert causes.startswith("[") and "'spaces'" in causes, causes
    said = imported(cause=SPACES.replace("precedence=15", "precedence=1.5"))
    assert said == ("RegistryError diagnostics.checks.data.whitespace: cause 'spaces' has precedence 1.5, which is "
                    "not a whole number"), said


def test_a_sound_new_check_module_is_taken(collected):
    assert collected() == list(registry.CAUSES)


def test_a_new_cause_takes_its_place_by_its_own_precedence(collected):
    """A cause is registered by its declaration alone: its precedence puts it among the others."""
    causes = collected(cause=SPACES)
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
    (CHECK.replace('"data.whitespace", "Whitespace', '"data.truncation", "Whitespace'), "None", "None",
     "diagnostics.checks.data.whitespace: check id 'data.truncation' is already declared by "
     "diagnostics.checks.data.truncation"),
    (CHECK.replace('says=lambda e, f: ("spaces", None)),)', 'says=lambda e, f: ("spaces", None)))'), "None", "None",
     "diagnostics.checks.data.whitespace: data.whitespace's conditions is a Condition, not a tuple of Condition (one "
     "alone needs its trailing comma: (item,))"),
    (CHECK.replace('unit="data"', 'unit="data", requires="texts"'), "None", "None",
     "diagnostics.checks.data.whitespace: data.whitespace's requires is a str, not a tuple of str (one alone needs "
     "its trailing comma: (item,))"),
    (CHECK, 'Cause("absent_columns", "data.whitespace", ("spaced",), "Spaces", precedence=15)', "None",
     "diagnostics.checks.data.whitespace: cause 'absent_columns' is already declared by "
     "diagnostics.checks.data.columns"),
    (CHECK, 'Cause("spaces", "data.whitespace", "spaced", "Spaces", precedence=15)', "None",
     "diagnostics.checks.data.whitespace: cause 'spaces''s conditions is a str, not a tuple of str"),
    (CHECK.replace('measure=lambda run: [], ', ''), "None", "None",
     "diagnostics.checks.data.whitespace: data.whitespace's measure is None, and its unit 'data' has no function of "
     "its own to run it: declare measure="),
], ids=["requires", "unit", "rule key", "precedence taken", "precedence not whole", "cause condition", "explains",
        "unit need", "unit reads", "no sentence", "sentence without rule", "no otherwise sentence", "id taken",
        "condition without comma", "requires a string", "cause name taken", "cause conditions a string",
        "no measure"])
def test_a_broken_declaration_is_refused_with_one_line_naming_its_module_and_name(check, cause, unit, line,
                                                                                collected):
    said = collected(check, cause, unit)
    assert said.startswith("RegistryError " + line), said
    assert "\n" not in said
