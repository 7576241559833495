"""A run's own thresholds (`diagnose(thresholds=...)`, `--threshold check.condition=value`): validated against the
registry with one line naming the known names, and read by the checks of that run alone."""

import json

import pytest

from diagnostics.core.check import per_run_thresholds
from diagnostics.core.errors import InputError
from diagnostics.i18n import localize, message_of
from diagnostics.walk import registry
from diagnostics.walk.stages import parse_thresholds


def error_of(given) -> str:
    with pytest.raises(InputError) as caught:
        parse_thresholds(given)
    return localize(message_of(caught.value))


def test_both_forms_give_the_same_thresholds():
    assert parse_thresholds({"data.duplicates": {"warn_duplicate_share": 0.1}}) == \
        parse_thresholds(["data.duplicates.warn_duplicate_share=0.1"]) == {
            "data.duplicates": {"warn_duplicate_share": 0.1}}
    assert parse_thresholds(None) == parse_thresholds([]) == {}


def test_the_examples_the_help_and_the_errors_give_are_thresholds_that_exist():
    import re

    from diagnostics.__main__ import build_parser
    from diagnostics.usercode.api import diagnose

    written = build_parser().format_help() + "".join(
        action.help or "" for parser in build_parser()._subparsers._group_actions[0].choices.values()
        for action in parser._actions) + (diagnose.__doc__ or "")
    examples = re.findall(r"e\.g\. ([a-z_]+\.[a-z_]+\.[a-z_]+=[0-9.]+)", written)
    assert examples and all(parse_thresholds([example]) for example in examples)
    assert "has no threshold" in error_of(["data.duplicates.max_share=0.1"])


def test_a_wrong_name_is_one_line_naming_what_is_known():
    said = error_of({"data.duplicate": {"warn_duplicate_share": 0.1}})
    assert "Unknown check data.duplicate" in said and "data.duplicates" in said and "\n" not in said
    said = error_of(["data.duplicates.warn_share=0.1"])
    assert "data.duplicates has no threshold warn_share" in said
    assert "max_conflicting_rows, warn_duplicate_share" in said
    assert "finite number, not nan" in error_of(["data.duplicates.warn_duplicate_share=nan"])
    assert "finite number, not abc" in error_of({"data.duplicates": {"warn_duplicate_share": "abc"}})
    assert "check.condition=value" in error_of(["data.duplicates"])
    assert "given by name" in error_of({"data.duplicates": 0.1})


def test_a_run_reads_its_own_thresholds_and_no_other_run_does():
    check = registry.CHECKS["data.label_balance"]
    declared = check.value("warn_dominant_share")
    with per_run_thresholds({"data.label_balance": {"warn_dominant_share": 0.2}}):
        assert check.value("warn_dominant_share") == 0.2 and check.values()["warn_dominant_share"] == 0.2
    assert check.value("warn_dominant_share") == declared


def test_diagnose_refuses_an_unknown_threshold_before_it_runs_anything():
    from diagnostics import diagnose

    with pytest.raises(InputError, match="Unknown check data.nope"):
        diagnose(None, None, thresholds={"data.nope": {"x": 1}})


def test_the_command_line_judges_with_the_threshold_it_was_given(tmp_path):
    from diagnostics.__main__ import main

    verdicts = []
    for extra in ([], ["--threshold", "data.label_balance.warn_dominant_share=0.2"]):
        path = tmp_path / f"report{len(extra)}.json"
        assert main(["run", "--stages", "data", "--skip", "data.learnability", *extra, "--json", str(path)]) in (0, 1)
        checks = {check["id"]: check for check in json.loads(path.read_text())["checks"]}
        verdicts.append(checks["data.label_balance"]["status"])
    assert verdicts == ["pass", "warn"]
    assert main(["run", "--threshold", "data.label_balance.share=0.2"]) == 2


def test_no_sentence_quotes_a_module_level_threshold():
    """A sentence quotes the threshold its run judged by (`CHECK.value(...)`, or the evidence the measurement kept),
    never a module's constant: a run that raised warn_drift once read a sentence quoting the old 0.001 (the range
    test's cap, the sweep's consequence). Every msg()/msgn() value in the checks' modules that is a name is checked:
    none may be a module-level number that is also some condition's declared value, defined there or imported."""
    import ast
    import importlib
    import pkgutil

    import diagnostics.checks as checks

    declared = {condition.value for check in registry.CHECKS.values() for condition in check.conditions
                if condition.value is not None}
    quoted = []
    for info in pkgutil.walk_packages(checks.__path__, "diagnostics.checks."):
        module = importlib.import_module(info.name)
        numbers = {name for name, value in vars(module).items()  # a constant that is some condition's default
                   if name.isupper() and isinstance(value, (int, float)) and not isinstance(value, bool)
                   and value in declared}
        tree = ast.parse(open(module.__file__, encoding="utf-8").read())
        for call in ast.walk(tree):
            if isinstance(call, ast.Call) and getattr(call.func, "id", None) in ("msg", "msgn"):
                quoted += [f"{info.name}:{call.lineno}: {keyword.arg}={keyword.value.id}" for keyword in call.keywords
                           if isinstance(keyword.value, ast.Name) and keyword.value.id in numbers]
    assert quoted == []
