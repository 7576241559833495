"""The check registry, the layout it keeps (no stage imports another, no import cycle), and the guard that turns
any failure of a stage's shared work into error results instead of a traceback."""

import ast
import inspect
import json
from pathlib import Path

import pytest

from conftest import ROOT
from diagnostics.walk import registry
from diagnostics.__main__ import main
from diagnostics.config.run import RunConfig
from diagnostics.core.context import RunContext
from diagnostics.config.training import SweepSettings
from diagnostics.walk.stages import STAGES
from diagnostics.walk.stages import run_stages
from diagnostics.core.result import Status
from diagnostics.config.scenarios import SCENARIOS

STAGE_PACKAGES = ("checks.data", "checks.model", "checks.hparams", "checks.overfit")
SMALL = SweepSettings(rates=2, steps=2, range_steps=5)
PACKAGE = ROOT / "diagnostics"


def module_name(path) -> str:
    """"checks.data.columns" for diagnostics/checks/data/columns.py, "i18n" for diagnostics/i18n/__init__.py."""
    parts = path.relative_to(PACKAGE).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(path): path for path in PACKAGE.rglob("*.py") if "demo_data" not in path.parts}


def imports_of(path) -> set[str]:
    """The diagnostics modules a module imports, at the top or inside a function ("checks.data.columns",
    "walk.registry")."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("diagnostics"):
            base = node.module[len("diagnostics."):] if node.module != "diagnostics" else ""
            for alias in node.names:  # `from diagnostics.checks import data` imports the module checks.data
                inner = f"{base}.{alias.name}" if base else alias.name
                names.add(inner if inner in MODULES else base)
        elif isinstance(node, ast.Import):
            names |= {alias.name[len("diagnostics."):] for alias in node.names if alias.name.startswith("diagnostics.")}
    return {name for name in names if name in MODULES}


GRAPH = {name: imports_of(path) - {name} for name, path in MODULES.items()}


def test_checks_json_lists_every_check_with_its_stage_title_and_thresholds(capsys):
    assert main(["checks", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [check["id"] for check in listed] == list(registry.CHECKS)
    assert {check["stage"] for check in listed} == set(STAGES)
    assert all(check["title"] and check["id"].startswith(check["stage"] + ".") for check in listed)
    sweep = next(check for check in listed if check["id"] == "hparams.lr_sweep")
    assert (
        sweep["trains"] and {c["name"] for c in sweep["conditions"]} and all(c["meaning"] for c in sweep["conditions"])
    )


def test_checks_listing_prints_each_threshold_by_name(capsys):
    assert main(["checks"]) == 0
    out = capsys.readouterr().out
    for check in registry.CHECKS.values():
        assert check.id in out and check.title in out
        for condition in check.conditions:  # a finding, yes or no, has no value to print
            assert (f"{condition.name} = {condition.value:g}" if condition.value is not None
                    else f"{condition.name}: {condition.meaning}") in out
    # A check that fails (or skips) when no rule is crossed says so; a pass is the default.
    assert out.count("no rule crossed: fail") == 1 and out.count("no rule crossed: skip") == 2


def test_a_condition_is_named_once_in_its_checks_module_and_says_its_own_sentence():
    """A condition's name is declared in its check's `CHECK`; no function takes it as a keyword (its value is read
    from the declaration), and no `judge` call says a sentence: each condition that judges says its own where it is
    declared (`Condition.says`), and each check what it finds when none is crossed (`Check.otherwise_says`)."""
    judged = 0
    for check in registry.CHECKS.values():
        module = inspect.getmodule(check.measure) if check.measure else None
        path = (
            Path(module.__file__)
            if module
            else PACKAGE
            / "checks"
            / check.stage
            / f"{check.id.split('.', 1)[1] if check.stage != 'overfit' else 'one_batch'}.py"
        )
        tree = ast.parse(path.read_text())
        names = {condition.name for condition in check.conditions}
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef):
                taken = {arg.arg for arg in node.args.args + node.args.kwonlyargs}
                assert not taken & names, (path.name, node.name, taken & names)
            if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "judge":
                assert len(node.args) == 2, (path.name, node.lineno)  # the check and its evidence; facts by name
                judged += 1
        assert check.otherwise_says is not None, check.id
        assert all((condition.rule is None) == (condition.says is None) for condition in check.conditions), check.id
    assert judged >= len(registry.CHECKS)
    assert sum(condition.says is not None for check in registry.CHECKS.values() for condition in check.conditions) \
        >= 40


def test_scenarios_expect_only_registered_checks():
    for scenario in SCENARIOS.values():
        assert set(scenario.expected_ids()) <= set(registry.CHECKS), scenario.name


def stage_of(module: str) -> str | None:
    """The stage package a module belongs to ("checks.data" for checks.data.columns), None outside them."""
    return next((stage for stage in STAGE_PACKAGES if module == stage or module.startswith(stage + ".")), None)


def test_no_check_module_imports_a_module_of_another_stage():
    """A check's module reads its own stage's modules and the layers below (core, keras, config, i18n), never another
    stage's: what two stages share lives in checks.common."""
    crossing = {(module, imported) for module in GRAPH if stage_of(module)
                for imported in GRAPH[module] if stage_of(imported) not in (None, stage_of(module))}
    assert not crossing
    assert {stage_of(module) for module in GRAPH} >= set(STAGE_PACKAGES)


def test_diagnostics_has_no_import_cycle():
    done, path = set(), []

    def visit(module):
        assert module not in path, " -> ".join(path[path.index(module):] + [module])
        if module in done:
            return
        path.append(module)
        for imported in sorted(GRAPH.get(module, ())):
            visit(imported)
        path.pop()
        done.add(module)

    for module in GRAPH:
        visit(module)


# ------------------------------------------------------------ no traceback by construction


class DiskOnFire(RuntimeError):
    pass


def burn(*args, **kwargs):
    raise DiskOnFire("the disk is on fire\nsecond line")


@pytest.fixture
def run(demo_inputs, demo_model):
    tokenizer, split = demo_inputs
    return RunContext(RunConfig(batch_size=8), tokenizer, split, lambda *args: demo_model)


def assert_errors(results, ids):
    by_id = {result.id: result for result in results}
    assert set(ids) <= set(by_id), set(ids) - set(by_id)
    for check in ids:
        result = by_id[check]
        assert result.status is Status.ERROR, (check, result.status, result.summary)
        assert result.summary == "The check itself failed with DiskOnFire: the disk is on fire"
        assert "DiskOnFire" in result.evidence["traceback"] and "Traceback" in result.evidence["traceback"]


def test_a_model_that_cannot_load_is_an_error_in_every_stage_that_needs_one(demo_inputs):
    tokenizer, split = demo_inputs
    run = RunContext(RunConfig(batch_size=8), tokenizer, split, burn)
    results = run_stages(run, sweep=SMALL, epochs=2)
    assert_errors(results, ["data.learnability", *registry.checks_of("model"), *registry.checks_of("hparams"),
                            "overfit.one_batch"])
    assert {r.status for r in results if r.stage == "data" and r.id != "data.learnability"} <= {
        Status.PASS,
        Status.WARN,
    }


def test_a_first_batch_that_raises_is_data_batchs_failure_and_every_check_needing_it_points_there(run, monkeypatch):
    monkeypatch.setattr(RunContext, "first_batch", property(burn))
    results = {r.id: r for r in run_stages(run, ("data", "model", "hparams"), sweep=SMALL)}
    assert results["data.batch"].status is Status.FAIL and "DiskOnFire" in results["data.batch"].summary
    needing = [check.id for check in registry.CHECKS.values() if check.runs_in and "batch" in registry.needs_of(check)
               or check.id in ("data.columns", "data.decoded_samples", "data.truncation")]
    assert {"model.forward", "model.gradients", "hparams.lr_sweep", "data.decoded_samples"} <= set(needing)
    for check_id in needing:
        if check_id in results:
            result = results[check_id]
            assert result.status is Status.SKIP, (check_id, result.summary)
            assert result.summary == "Tokenizing the first batch failed (DiskOnFire: the disk is on fire): see " \
                                     "data.batch.", (check_id, result.summary)
    # What does not need the batch is still measured.
    assert results["model.config"].status is Status.PASS and results["model.memory"].status is Status.PASS
    assert results["data.label_range"].status is Status.PASS


def test_a_decode_that_raises_is_an_error_for_the_checks_that_decode(run, monkeypatch):
    from diagnostics.checks.data import decoded_samples
    from diagnostics.checks.model import nan_rows

    monkeypatch.setattr(decoded_samples, "decoded_rows", burn)
    monkeypatch.setattr(nan_rows, "decoded_rows", burn)
    results = run_stages(run, ("data", "model"))
    assert_errors(results, ["data.decoded_samples", "model.nan_rows"])
    statuses = {r.id: r.status for r in results}
    assert statuses["data.label_range"] is Status.PASS and statuses["model.forward"] is Status.PASS


def test_training_batches_that_raise_are_errors_of_the_checks_that_train_on_them(run, monkeypatch):
    """The sweep and the range test train on the batches after the first; the setup checks read the first alone."""
    monkeypatch.setattr(RunContext, "training_batches", burn)
    results = run_stages(run, ("hparams",), sweep=SMALL)
    assert_errors(results, registry.checks_of("hparams", "training"))
    assert all(r.status is not Status.ERROR for r in results if r.id in registry.checks_of("hparams", "setup"))


def test_an_overfit_run_that_raises_is_an_error(run, monkeypatch):
    from diagnostics.checks.overfit import one_batch

    monkeypatch.setattr(one_batch, "run_overfit_checks", burn)
    assert_errors(run_stages(run, ("overfit",)), ["overfit.one_batch"])


def test_the_command_line_prints_the_one_line_finding_and_keeps_the_traceback_in_json(tmp_path, monkeypatch, capsys):
    from diagnostics.checks.model import nan_rows

    monkeypatch.setattr(nan_rows, "decoded_rows", burn)
    path = tmp_path / "report.json"
    assert main(["run", "--stages", "model", "--json", str(path)]) == 1
    out = capsys.readouterr().out
    assert "ERROR model.nan_rows" in out and "Traceback" not in out
    check = next(c for c in json.loads(path.read_text())["checks"] if c["id"] == "model.nan_rows")
    assert "Traceback" in check["evidence"]["traceback"] and check["evidence"]["exception"] == "DiskOnFire"


def test_the_run_context_builds_the_first_batch_once_for_every_stage(run, monkeypatch):
    from diagnostics.core import context

    calls = []
    real = context.build_first_batch
    monkeypatch.setattr(context, "build_first_batch", lambda *args: calls.append(1) or real(*args))
    run_stages(run, ("data", "model"))
    from diagnostics.walk.stages import hparams_stage

    hparams_stage(run, parts=("setup",))
    assert len(calls) == 1


def test_a_model_copy_that_raises_is_an_error_of_the_checks_that_train_it(run, monkeypatch):
    from diagnostics.keras import keras_model

    monkeypatch.setattr(keras_model, "fresh_copy", burn)  # the one copy the Model stage's single steps share
    results = run_stages(run, ("model",))
    assert_errors(results, ["model.gradients", "model.weights_after_step", "model.nan_origin"])
    statuses = {r.id: r.status for r in results}
    assert statuses["model.forward"] is Status.PASS and statuses["model.memory"] is not Status.ERROR


def test_the_docs_check_table_is_the_registry():
    """docs/checks.md's table and docs/pages.md's checks of each stage page are written from the registry (a new
    check lands in both by `python scripts/readme_tables.py`), and are what it writes now."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "scripts/readme_tables.py", "--check"], cwd=ROOT, capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    table = (ROOT / "docs" / "checks.md").read_text()
    assert all(f"| `{check}` |" in table for check in registry.CHECKS)
    pages = (ROOT / "docs" / "pages.md").read_text()
    assert all(f"`{check}`" in pages for stage in registry.STAGE_ORDER for check in registry.checks_of(stage))


def _table_rows(document: str) -> dict[str, list[str]]:
    """A Markdown document's table rows by their first cell (its backticks taken off), each row's cells."""
    import re

    rows = {}
    for line in (ROOT / "docs" / document).read_text().splitlines():
        if line.startswith("| ") and not line.startswith("|---"):
            cells = [cell.strip() for cell in line.strip("|").split(" | ")]
            rows[re.sub(r"`", "", cells[0])] = cells
    return rows


def test_the_scenarios_table_has_each_scenario_with_the_checks_that_own_its_causes():
    """docs/scenarios.md's table is written by hand: one row a scenario, naming every check its causes are owned by."""
    rows = {name: cells for name, cells in _table_rows("scenarios.md").items() if name != "scenario"}
    assert set(rows) == set(SCENARIOS)
    for name, scenario in SCENARIOS.items():
        missing = [check for check in scenario.expected_ids() if f"`{check}`" not in rows[name][2]]
        assert not missing, (name, missing)


# ------------------------------------------------------------ typed evidence


def test_every_check_declares_its_evidence():
    from diagnostics.walk.registry import EVIDENCE

    assert set(EVIDENCE) == set(registry.CHECKS)


def test_a_full_run_puts_only_declared_keys_in_evidence(full_demo_run):
    from diagnostics.checks.data.learnability import RunScore
    from diagnostics.checks.hparams.lr_sweep import HeldOut
    from diagnostics.walk.registry import declared_keys

    _, report, _ = full_demo_run
    for check in report["checks"]:
        assert set(check["evidence"]) <= declared_keys(check["id"]), (check["id"], set(check["evidence"]) -
                                                                       declared_keys(check["id"]))
    by_id = {check["id"]: check["evidence"] for check in report["checks"]}
    for row in by_id["hparams.lr_sweep"]["held_out"] + [by_id["hparams.lr_sweep"]["held_out_start"]]:
        assert set(row) == set(HeldOut.__annotations__)
    for run_name in ("given", "shuffled"):
        assert set(by_id["data.learnability"][run_name]) == set(RunScore.__annotations__)


def _keys_read(tree, name: str) -> set[str]:
    """Keys read from `name` as name["key"] or name.get("key") (name may be an attribute, e.g. result.evidence)."""
    def is_target(node) -> bool:
        return (isinstance(node, ast.Name) and node.id == name) or (
            isinstance(node, ast.Attribute) and node.attr == name
        )

    keys = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and is_target(node.value) and isinstance(node.slice, ast.Constant):
            keys.add(node.slice.value)
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"
                and is_target(node.func.value) and node.args and isinstance(node.args[0], ast.Constant)):
            keys.add(node.args[0].value)
    return keys


def test_each_chart_reads_only_keys_its_evidence_declares():
    from diagnostics.report import plots as shapes

    tree = ast.parse((ROOT / "diagnostics" / "report" / "plots.py").read_text())
    checked = 0
    for function in (node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name.endswith("_figure")):
        casts = [node.args[0].id for node in ast.walk(function) if isinstance(node, ast.Call)
                 and getattr(node.func, "id", None) == "cast"]
        assert casts, f"{function.name} reads its evidence without declaring its shape"
        declared = set(getattr(shapes, casts[0]).__annotations__)
        read = _keys_read(function, "evidence")
        assert read <= declared, (function.name, read - declared)
        checked += bool(read)
    assert checked >= 8


def test_pages_read_only_declared_evidence_keys():
    from diagnostics.walk.registry import EVIDENCE

    declared = set().union(*(shape.__annotations__ for shape in EVIDENCE.values()))
    reading = 0
    for page in (ROOT / "app_pages").glob("*.py"):
        read = _keys_read(ast.parse(page.read_text()), "evidence")
        assert read <= declared, (page.name, read - declared)
        reading += bool(read)
    assert reading == 4  # the four stage pages; the Report reads whole results


def test_a_command_line_run_loads_its_model_once_for_every_stage(demo_inputs, demo_model):
    tokenizer, split = demo_inputs
    calls = []
    run = RunContext.open(RunConfig(batch_size=8), tokenizer=tokenizer, split=split,
                          model_loader=lambda *args: calls.append(args) or demo_model)
    results = run_stages(run, ("model", "overfit"), epochs=1)
    assert {r.status for r in results} <= {Status.PASS, Status.WARN, Status.FAIL, Status.SKIP}
    assert calls == [("demo", 3, 0)]


# ---------------------------------------------------------------- conditions that judge

def test_conditions_with_a_rule_judge_in_declared_order_and_take_their_threshold_by_name():
    from dataclasses import replace

    from diagnostics.core.check import Check, Condition
    from diagnostics.core.result import judge
    from diagnostics.core.rules import Above

    check = Check("data.example", "an example", otherwise_says=lambda e, f: f"fine at {e['share']}", conditions=(
        Condition("fail_share", 0.5, "fail above it", Above("share"), status="fail",
                  says=lambda e, f: (f"far too many: {e['share']:.1f} of {f.rows}", "fix it")),
        Condition("warn_share", 0.1, "warn above it", Above("share"), says=lambda e, f: ("too many", "look")),
        Condition("window", 5, "a setting of the measurement, no rule"),
    ))

    def verdict(share, declared=check):
        result = judge(declared, {"share": share}, rows=10)
        return result.status, result.summary, result.fix

    assert verdict(0.6) == (Status.FAIL, "far too many: 0.6 of 10", "fix it")  # both crossed: the first declared
    assert verdict(0.2) == (Status.WARN, "too many", "look")
    assert verdict(0.1) == (Status.PASS, "fine at 0.1", None)  # at the threshold is not above it
    assert verdict(None) == (Status.PASS, "fine at None", None)  # not measured crosses nothing
    higher = replace(check, conditions=(check.conditions[0], replace(check.conditions[1], value=0.3),
                                        check.conditions[2]))
    assert verdict(0.2, higher) == (Status.PASS, "fine at 0.2", None)  # the declared value is the one judged by
    assert judge(check, {"share": 0.2}).evidence == {"share": 0.2}
    # A sentence is written only for the verdict given: one that formats a fact this run lacks is never called.
    assert judge(check, {"share": 0.2}).summary == "too many"
    # No rule crossed: the status the check declares (a pass unless it says otherwise), and its sentence and fix.
    strict = Check("data.strict", "fails unless a rule finds it well", otherwise="fail",
                   otherwise_says=lambda e, f: ("too few", "train longer"), conditions=(
        Condition("good_share", 0.9, "pass above it", Above("share"), status="pass",
                  says=lambda e, f: ("fine", None)),))
    assert judge(strict, {"share": 0.95}).status is Status.PASS
    assert (judge(strict, {"share": 0.5}).status, judge(strict, {"share": 0.5}).fix) == (Status.FAIL, "train longer")
    assert judge(check, {"share": 0.2}).stage == "data"


def test_a_pass_that_only_a_threshold_set_for_the_run_allows_says_the_finding_and_that_threshold():
    from diagnostics.core.check import Check, Condition, per_run_thresholds
    from diagnostics.core.result import judge
    from diagnostics.core.rules import Above, AtMost

    check = Check("data.example", "an example", otherwise_says=lambda e, f: "nothing found", conditions=(
        Condition("max_bad_rows", 0, "fail above it", Above("bad_rows"), status="fail",
                  says=lambda e, f: (f"{e['bad_rows']} rows of {f.rows} are bad.", "drop them")),
        Condition("min_filled", 1.0, "warn below it", AtMost("filled", below=True),
                  says=lambda e, f: (f"{e['filled']:.0%} filled.", "fill it")),
    ))
    with per_run_thresholds({"data.example": {"max_bad_rows": 5, "min_filled": 0.5}}):
        both = judge(check, {"bad_rows": 2, "filled": 0.75}, rows=10)
        one = judge(check, {"bad_rows": 2, "filled": 1.0}, rows=10)
        none = judge(check, {"bad_rows": 0, "filled": 1.0}, rows=10)
        beyond = judge(check, {"bad_rows": 6, "filled": 1.0}, rows=10)
    assert (both.status, both.fix, both.condition) == (Status.PASS, None, None)
    assert both.summary == ("2 rows of 10 are bad. It passes because this run sets max_bad_rows to 5 (--threshold; 0 "
                            "by default). 75% filled. It passes because this run sets min_filled to 0.5 (--threshold; "
                            "1 by default).")
    assert one.summary == ("2 rows of 10 are bad. It passes because this run sets max_bad_rows to 5 (--threshold; 0 by "
                           "default).")
    assert none.summary == "nothing found"  # nothing the run allows: the sentence for nothing found
    assert (beyond.status, beyond.summary) == (Status.FAIL, "6 rows of 10 are bad.")  # past the run's own threshold
    # At the declared thresholds the same evidence is judged as usual.
    assert judge(check, {"bad_rows": 2, "filled": 1.0}, rows=10).status is Status.FAIL
    # A check that fails unless a rule finds it well has no pass to explain.
    strict = Check("data.strict", "fails unless a rule finds it well", otherwise="fail",
                   otherwise_says=lambda e, f: ("too few", "train longer"), conditions=(
        Condition("max_bad_rows", 0, "warn above it", Above("bad_rows"), says=lambda e, f: ("bad", None)),))
    with per_run_thresholds({"data.strict": {"max_bad_rows": 5}}):
        assert judge(strict, {"bad_rows": 2}).summary == "too few"


def test_rules_read_declared_evidence_and_are_listed_with_their_status(capsys):
    from diagnostics.walk.registry import EVIDENCE

    ruled = 0
    for check in registry.CHECKS.values():
        for condition in check.conditions:
            if condition.rule is None:
                continue
            ruled += 1
            assert condition.status in ("pass", "warn", "fail", "skip"), condition.name  # skip: measured, no verdict
            keys = set(condition.rule.keys)
            assert keys and keys <= set(EVIDENCE[check.id].__annotations__), (check.id, condition.name, keys)
    assert ruled >= 13
    assert main(["checks", "--json"]) == 0
    listed = {check["id"]: check for check in json.loads(capsys.readouterr().out)}
    truncation = {condition["name"]: condition for condition in listed["data.truncation"]["conditions"]}
    assert truncation["warn_padding_share"]["rule"] == "fixed_padding and padding_share > threshold"
    assert truncation["warn_padding_share"]["status"] == "warn"


@pytest.mark.parametrize("check_id, evidence, crossed", [
    ("data.truncation", {"truncated_share": 0.11, "padding_share": 0.0}, "warn_truncated_share"),
    ("data.truncation", {"truncated_share": 0.1, "padding_share": 0.61, "fixed_padding": True}, "warn_padding_share"),
    ("data.truncation", {"truncated_share": 0.1, "padding_share": 0.61, "fixed_padding": False}, None),
    ("data.truncation", {"truncated_share": 0.1, "padding_share": 0.6, "fixed_padding": True}, None),
    ("data.duplicates", {"duplicate_rows": 5, "rows_scanned": 100, "conflicting_rows": 1}, "max_conflicting_rows"),
    ("data.duplicates", {"duplicate_rows": 6, "rows_scanned": 100, "conflicting_rows": 0}, "warn_duplicate_share"),
    ("data.duplicates", {"duplicate_rows": 5, "rows_scanned": 100, "conflicting_rows": 0}, None),
    ("data.duplicates", {"duplicate_rows": 0, "rows_scanned": 0, "conflicting_rows": 0}, None),
    ("data.baselines", {"mean_predictor_mse": 0.0}, "constant_scores"),
    ("data.baselines", {"mean_predictor_mse": 0.4}, None),
    ("data.baselines", {"majority_accuracy": 0.91}, "warn_majority_accuracy"),
    ("data.decoded_samples", {"unknown_share": 0.06}, "warn_unknown_share"),
    ("model.initial_loss", {"disagreement": 0.2, "relative_gap": 0.5}, "warn_loss_disagreement"),
    ("model.initial_loss", {"disagreement": 0.1, "relative_gap": 0.31}, "warn_relative_gap"),
    ("model.initial_loss", {"disagreement": 0.1, "relative_gap": 0.3}, None),
    ("hparams.schedule", {"warms_up": True, "warmup_steps": 51, "train_steps": 100}, "warn_warmup_share"),
    ("hparams.schedule", {"warms_up": True, "warmup_steps": 50, "train_steps": 100}, None),
    ("hparams.schedule", {"warms_up": False, "warmup_steps": 90, "train_steps": 100}, None),  # a constant rate
    ("data.columns", {"missing_in_split": ["premise"], "missing_requested": ["x"]}, "missing_columns"),
    ("data.columns", {"text_cells": {"premise": {"empty": [3], "not_text": [], "examples": []}}}, "bad_text_cells"),
    ("data.columns", {"missing_in_split": [], "missing_requested": ["x"], "model_inputs_left_out": ["a"]},
     "missing_requested"),
    ("data.columns", {"missing_in_split": [], "missing_requested": [], "model_inputs_left_out": ["a"]},
     "inputs_left_out"),
    ("data.columns", {"missing_in_split": [], "missing_requested": [], "model_inputs_left_out": []}, None),
    ("data.batch", {"error": "ValueError: ...", "no_labels": True}, "batch_raises"),
    ("data.batch", {"no_labels": True, "batch_fill": 0.5}, "no_labels"),
    ("data.batch", {"no_labels": False, "batch_fill": 0.99}, "min_batch_fill"),
    ("data.batch", {"no_labels": False, "batch_fill": 1.0}, None),
    ("data.label_range", {"invalid_labels": 1, "stray_rows": [4]}, "max_invalid_labels"),
    ("data.label_range", {"invalid_labels": 0, "stray_rows": [4]}, "warn_rare_share"),
    ("data.label_range", {"invalid_labels": 0}, None),
    ("data.label_balance", {"top_share": 0.81, "mix_chance": 1e-6}, "warn_dominant_share"),
    ("data.label_balance", {"top_share": 0.8, "mix_chance": 9e-4}, "max_chance"),
    ("data.label_balance", {"top_share": 0.8, "mix_chance": 1e-3}, None),
    # Learnability: held-out rows first, then the training rows, then what the model's start says.
    ("data.learnability", {"accuracy_gain": 0.1, "p_value": 0.01, "fit_gain": 0.5}, "min_accuracy_gain"),
    ("data.learnability", {"accuracy_gain": 0.1, "p_value": 0.011, "fit_gain": 0.5, "pretrained": False}, "fit_margin"),
    ("data.learnability", {"accuracy_gain": 0.1, "p_value": 0.011, "fit_gain": 0.5, "pretrained": True}, None),
    ("data.learnability", {"accuracy_gain": 0.09, "p_value": 0.001, "fit_gain": 0.1, "pretrained": False},
     "random_weights"),
    ("data.learnability", {"accuracy_gain": 0.09, "p_value": 0.001, "fit_gain": 0.1, "pretrained": True}, None),
    ("data.learnability", {"error_ratio": 0.79, "fit_gain": 0.0}, "max_error_ratio"),
    ("data.learnability", {"error_ratio": 0.8, "fit_gain": None, "pretrained": True}, None),
    ("hparams.lr_range_test", {"finite_points": 4, "spread": 100.0}, "min_points"),
    ("hparams.lr_range_test", {"finite_points": 5, "spread": 30.1}, "disagree_factor"),
    ("hparams.lr_range_test", {"finite_points": 5, "spread": 30.0}, None),
    # The sweep's verdict on the configured rate.
    ("hparams.lr_sweep", {"no_good_rate": True, "configured_broke": True}, "no_good_rate"),
    ("hparams.lr_sweep", {"no_good_rate": False, "configured_broke": True, "configured_too_high": True}, "broke"),
    ("hparams.lr_sweep", {"configured_broke": False, "pretrained": True, "configured_drift": 3.1e-3,
                          "configured_too_high": True}, "fail_drift"),
    ("hparams.lr_sweep", {"configured_broke": False, "pretrained": False, "configured_drift": 1e-2,
                          "configured_too_high": True}, "too_high"),
    ("hparams.lr_sweep", {"pretrained": True, "configured_drift": 3e-3, "configured_too_high": True}, "too_high"),
    ("hparams.lr_sweep", {"configured_too_high": False, "decades_below": 1.01}, "warn_decades"),
    ("hparams.lr_sweep", {"configured_too_high": False, "decades_below": 1.0}, None),
    ("hparams.lr_sweep", {"configured_too_high": False, "decades_below": -2.0}, None),  # above the recommended
    # The head against the task: findings, yes or no, in order, and the one count with a threshold.
    ("model.config", {"no_pad_token": True, "wrong_regression_head": True}, "no_pad_token"),
    ("model.config", {"regression": True, "wrong_regression_head": True}, "regression_head"),
    ("model.config", {"regression": True, "unused_outputs": 0}, "regression_fits"),
    ("model.config", {"head_short": True, "unused_outputs": 1, "names_out_of_order": True}, "missing_outputs"),
    ("model.config", {"unused_outputs": 1, "names_out_of_order": True}, "max_unused_outputs"),
    ("model.config", {"unused_outputs": 0, "names_out_of_order": True}, "label_order"),
    ("model.config", {"no_pad_token": False, "unused_outputs": 0, "names_out_of_order": False}, None),
    ("hparams.optimizer", {"string_adam": True, "pretrained": False, "learning_rate": 1e-3}, "string_adam"),
    ("hparams.optimizer", {"string_adam": False, "pretrained": False, "learning_rate": 1e-3}, "random_weights"),
    ("hparams.optimizer", {"string_adam": False, "pretrained": True, "learning_rate": 1.1e-4}, "warn_learning_rate"),
    ("hparams.optimizer", {"string_adam": False, "pretrained": True, "learning_rate": 1e-4}, None),
    ("hparams.loss", {"train_step_error": "ValueError: ...", "regression_loss": True}, "step_raises"),
    ("hparams.loss", {"train_step_error": None, "classification_loss": True}, "classification_loss"),
    ("hparams.loss", {"regression_loss": True, "outputs_are_probabilities": False, "disagreement": 1.0},
     "regression_loss"),
    ("hparams.loss", {"outputs_are_probabilities": False, "disagreement": 0.11, "keras_loss_on_input_labels": True},
     "warn_disagreement"),
    ("hparams.loss", {"outputs_are_probabilities": True, "disagreement": 0.5}, None),  # a probability head
    ("hparams.loss", {"outputs_are_probabilities": False, "disagreement": 0.1, "keras_loss_on_input_labels": True},
     "keras_loss_on_input_labels"),
    ("model.forward", {"error": "InvalidArgumentError: ..."}, "forward_raises"),
    ("model.forward", {"wrong_shape": True, "finite_share": 0.5}, "wrong_shape"),
    ("model.forward", {"wrong_shape": False, "finite_share": 0.99, "fit_call_error": "..."}, "min_finite_share"),
    ("model.forward", {"wrong_shape": False, "finite_share": 1.0, "fit_call_error": "InvalidArgumentError"},
     "fit_call_raises"),
    ("model.forward", {"wrong_shape": False, "finite_share": 1.0, "fit_call_error": None}, None),
    ("model.nan_rows", {"non_finite_rows": 1}, "max_non_finite_rows"),
    ("model.nan_rows", {"non_finite_rows": 0}, None),
    ("model.nan_rows", {"non_finite_rows": 2, "non_finite_in_fit": True, "weights_diverged": False},
     "max_non_finite_rows"),  # the rows' fault
    ("model.nan_rows", {"non_finite_rows": 0, "non_finite_in_fit": True, "weights_diverged": True},
     "non_finite_in_fit"),
    ("model.gradients", {"error": "ValueError: No gradients provided", "no_gradient": ["a"]}, "step_raises"),
    ("model.gradients", {"error": None, "no_gradient": ["a"], "zero_gradient": ["b"]}, "no_gradient"),
    ("model.gradients", {"no_gradient": [], "zero_gradient": ["b"], "non_finite": []}, "zero_gradient"),
    ("model.gradients", {"no_gradient": [], "zero_gradient": ["b"], "non_finite": ["c"]}, "non_finite_gradient"),
    ("model.gradients", {"no_gradient": [], "zero_gradient": [], "non_finite": []}, None),
    ("model.weights_after_step", {"non_finite": ["a"], "rate_at_step": 0.0}, "non_finite_weights"),
    ("model.weights_after_step", {"non_finite": [], "rate_at_step": 0.0, "variables": 3, "moved": 0}, "warmup_step"),
    ("model.weights_after_step", {"non_finite": [], "rate_at_step": 1e-5, "variables": 3, "moved": 0}, "min_moved"),
    ("model.weights_after_step", {"non_finite": [], "rate_at_step": 1e-5, "variables": 3, "moved": 1}, None),
    ("model.weights_after_step", {"non_finite": [], "rate_at_step": 1e-5}, None),  # moves not measured
    ("model.nan_origin", {"layer": "tf_bert_model/embeddings"}, "non_finite_layer"),
    ("model.nan_origin", {}, None),
    ("model.memory", {"total_bytes": 2 ** 30 + 1, "room_bytes": 2 ** 30}, "max_memory_share"),
    ("model.memory", {"total_bytes": 2 ** 30, "room_bytes": 2 ** 30}, None),
    # A run watched during fit: the loss rule needs both bounds (no chance bound for regression), the weights rule
    # a loss that did not fall.
    ("model.divergence", {"loss_rise": 4.1, "chance_rise": 1.6, "growth": 1.0}, "rise_factor"),
    ("model.divergence", {"loss_rise": 4.1, "chance_rise": 1.5, "growth": 1.0}, None),
    ("model.divergence", {"loss_rise": 4.1, "chance_rise": None, "growth": 1.0}, "rise_factor"),
    ("model.divergence", {"loss_rise": 0.9, "chance_rise": 0.5, "growth": 5.1}, "weight_growth"),
    ("model.divergence", {"loss_rise": 0.89, "chance_rise": 0.5, "growth": 50.0}, None),
    ("model.divergence", {"loss_rise": None, "chance_rise": None, "growth": 50.0}, None),
    # The overfit curve: what the rules read, at and past each boundary (the fallback, no rule crossed, is a fail).
    ("overfit.one_batch", {"error": "InvalidArgumentError: ...", "nan_from_start": False}, "fit_raises"),
    ("overfit.one_batch", {"nan_from_start": True}, "no_finite_start"),
    ("overfit.one_batch", {"non_finite_epochs": 1, "spike": 0.0, "first_loss": 1.0}, "max_non_finite_epochs"),
    ("overfit.one_batch", {"non_finite_epochs": 0, "spike": 0.26, "first_loss": 1.0, "substitute_rate": False},
     "spike_share"),
    # At the rate the test took for one the sweep measured as broken, a bump says nothing of the run's own rate.
    ("overfit.one_batch", {"non_finite_epochs": 0, "spike": 0.9, "first_loss": 1.0, "substitute_rate": True,
                           "final_loss": 0.01, "all_right": True}, "memorised_share"),
    ("overfit.one_batch", {"non_finite_epochs": 0, "spike": 0.25, "first_loss": 1.0, "drift_per_step": 1.1e-3},
     "warn_drift"),
    ("overfit.one_batch", {"first_loss": 1.0, "final_loss": 0.5, "all_right": True}, "memorised_share"),
    ("overfit.one_batch", {"first_loss": 1.0, "final_loss": 0.5, "all_right": False}, None),
    ("overfit.one_batch", {"first_loss": 0.06, "final_loss": 0.049, "all_right": True}, "memorised_value"),
    ("overfit.one_batch", {"first_loss": 0.06, "final_loss": 0.05, "all_right": True}, None),
    ("overfit.one_batch", {"first_loss": 1.0, "final_loss": 0.95, "progress": 0.05, "falling_share": 0.8,
                           "all_right": True}, "learning_progress"),
    ("overfit.one_batch", {"first_loss": 1.0, "final_loss": 0.96, "progress": 0.04, "falling_share": 1.0,
                           "all_right": True}, None),
    ("overfit.one_batch", {"first_loss": 1.0, "final_loss": 0.95, "progress": 0.05, "falling_share": 0.79,
                           "all_right": True}, None),
])
def test_each_rule_is_crossed_by_the_measurement_it_names_and_no_other(check_id, evidence, crossed):
    """The boundaries of the checks' rules, read from the registry alone."""
    hits = [condition.name for condition in registry.CHECKS[check_id].conditions
            if condition.rule is not None and condition.rule(evidence, condition.value, values_of(check_id))]
    assert (hits[:1] or [None])[0] == crossed, hits


def test_every_verdict_is_judged_by_the_registrys_rules():
    """No module writes a check's status by hand: a result is `judge`d from the registry's conditions (or is the
    guard's error or the runner's skip, both in diagnostics/core/result.py)."""
    written = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path == PACKAGE / "core" / "result.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "CheckResult":
                written.append(f"{path.name}:{node.lineno}")
    assert written == []


def values_of(check_id: str) -> dict:
    return {condition.name: condition.value for condition in registry.CHECKS[check_id].conditions}


# ---------------------------------------------------------------- adding a check

WHITESPACE_CHECK = '''
"""data.whitespace: text cells with stray whitespace at either end."""

from typing import TypedDict

from diagnostics.core.check import Check, Condition
from diagnostics.core.result import judge
from diagnostics.core.rules import ShareAbove
from diagnostics.i18n import N_, msg


class Evidence(TypedDict, total=False):
    padded_cells: int
    cells: int


def measure(run):
    cells = [value for column in run.config.glue_task.text_columns for value in run.split[column]]
    padded = sum(isinstance(value, str) and value != value.strip() for value in cells)
    return judge(CHECK, {"padded_cells": padded, "cells": len(cells)})


def counted(e, f):
    return msg("{padded} of {cells} text cells carry stray whitespace.", padded=e["padded_cells"], cells=e["cells"])


CHECK = Check("data.whitespace", N_("text cells with stray whitespace"), unit="data", requires=("texts",),
              measure=measure, evidence=Evidence, otherwise_says=counted, conditions=(
    Condition("warn_padded_share", 0.05, "warn when more than this share of the text cells carry stray whitespace",
              ShareAbove("padded_cells", "cells"), says=lambda e, f: (
                  counted(e, f), "dataset = dataset.map(lambda row: {k: v.strip() for k, v in row.items()})")),))
'''


def test_a_new_check_is_one_module_the_runner_lists_runs_and_judges(demo_inputs, demo_model, monkeypatch, capsys):
    """The issue's example: data.whitespace, written as one module (measurement, condition, sentence, evidence) and
    collected like the stage packages collect theirs; nothing else is edited for the runner, the listing and the
    evidence checks to take it."""
    import types

    from diagnostics.walk import runner

    module = types.ModuleType("whitespace")
    exec(compile(WHITESPACE_CHECK, "whitespace.py", "exec"), module.__dict__)
    check = module.CHECK
    monkeypatch.setattr(registry, "CHECKS", {**registry.CHECKS, check.id: check})
    monkeypatch.setitem(registry.EVIDENCE, check.id, check.evidence)
    tokenizer, split = demo_inputs
    padded = split.map(lambda row, index: {"premise": f" {row['premise']} " if index % 3 == 0 else row["premise"]},
                       with_indices=True)
    found = {r.id: r for r in runner.run_units(RunContext(RunConfig(batch_size=8), tokenizer, padded,
                                                          lambda *args: demo_model), ["data"])}
    result = found["data.whitespace"]
    assert result.status is Status.WARN and result.condition == "warn_padded_share"
    assert result.evidence["padded_cells"] == len(range(0, len(split), 3))
    assert set(result.evidence) <= registry.declared_keys(check.id)
    clean = {r.id: r for r in runner.run_units(RunContext(RunConfig(batch_size=8), tokenizer, split,
                                                          lambda *args: demo_model), ["data"])}
    assert clean["data.whitespace"].status is Status.PASS and clean["data.whitespace"].evidence["padded_cells"] == 0
    assert main(["checks", "--json"]) == 0
    listed = {c["id"]: c for c in json.loads(capsys.readouterr().out)}
    assert listed["data.whitespace"]["conditions"][0]["rule"] == "padded_cells > threshold * cells"
    assert listed["data.whitespace"]["needs"] == ["texts"]


def test_a_context_holds_no_model_copy_after_a_call_that_took_only_one_of_the_single_steps(run):
    """The Model stage alone takes the first batch's step, not hparams.loss's: the copy the two would share is let go
    when the call ends, so a context the app keeps for every session never holds it."""
    results = run_stages(run, ("model",))
    assert "batch_step" in run.__dict__ and "in_range_step" not in run.__dict__  # one step taken, on a copy
    assert {r.id: r.status for r in results}["model.gradients"] is Status.PASS
    assert run._stepper == []
