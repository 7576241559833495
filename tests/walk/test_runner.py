"""The one runner: every unit of the registry runs from its declaration (its function, its needs,
settings and reads), in the order of what it reads, skipping with the owning check's reason when a need fails; a
check is added by declaration alone."""

import importlib
import json
import weakref
from dataclasses import replace

import pytest

from conftest import copy_checks

from diagnostics.core.check import Check, Unit
from diagnostics.walk import registry
from diagnostics.walk import runner
from diagnostics.__main__ import main
from diagnostics.config.run import RunConfig
from diagnostics.core.context import RunContext
from diagnostics.core.errors import InputError
from diagnostics.walk.registry import EVIDENCE
from diagnostics.config.training import SweepSettings
from diagnostics.core.result import CheckResult, Status
from diagnostics.core.progress import Work
from diagnostics.keras.training import SharedCopy, Trainer

SMALL = runner.Settings(sweep=SweepSettings(rates=2, steps=2, range_steps=5), epochs=2)


@pytest.fixture
def run(demo_inputs, demo_model):
    tokenizer, split = demo_inputs
    return RunContext(RunConfig(batch_size=8), tokenizer, split, lambda *args: demo_model)


def imported(dotted: str):
    module, _, attribute = dotted.rpartition(".")
    return getattr(importlib.import_module(module), attribute)


def test_checks_json_names_each_checks_function_by_an_importable_dotted_name(capsys):
    assert main(["checks", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    for check in listed:
        assert callable(imported(check["function"])), check["id"]
        assert check["unit"] is None or check["id"] in registry.unit_checks(check["unit"])
    assert {check["unit"] for check in listed} == set(registry.UNITS) | {None}


@pytest.fixture(scope="module")
def walk(demo_inputs, demo_model):
    """Every unit of the registry run once on the demo kit, in one call of the runner (shared by the tests below),
    with the copies of the model its training checks made."""
    tokenizer, split = demo_inputs
    run = RunContext(RunConfig(batch_size=8), tokenizer, split, lambda *args: demo_model)
    made, alive = [], []
    make = Trainer.__init__

    def counted(self, model, *args, **kwargs):
        made.append(model)
        make(self, model, *args, **kwargs)
        alive.append(weakref.ref(self.model))  # the Keras copy, which refers to itself through its traced step

    reports, works = [], []
    begin = Work.__init__

    def kept(self, *args, **kwargs):
        begin(self, *args, **kwargs)
        works.append(self)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Trainer, "__init__", counted)
        patch.setattr(Work, "__init__", kept)
        results = runner.run_units(run, list(registry.UNITS), SMALL,
                                   lambda fraction, text, left: reports.append((fraction, str(text), left)))
        left = [copy for ref in alive if (copy := ref()) is not None]  # read before any collection of the test's
    return results, made, left, (reports, works)


def test_the_whole_walk_plans_every_training_step_it_takes_and_says_what_runs_from_the_start(walk):
    """The plan made before any work (each training unit's `plan`) is the steps taken, so the fraction ends at 1
    and the estimate covers the whole call; the copy is traced once; every unit says what it runs."""
    reports, works = walk[3]
    assert len(works) == 1  # one computation for the whole call
    work = works[0]
    assert work.planned == work.done > 0 and work.traces_done == 1
    assert reports[0][0] == 0.0 and reports[-1][0] == 1.0
    assert [fraction for fraction, _, _ in reports] == sorted(fraction for fraction, _, _ in reports)
    said = [text for _, text, _ in reports]
    assert "Checking data.columns" in said and "Copying the model and tracing its train step" in said
    assert any(text.startswith("Training on the given labels") for text in said)
    assert any(left is not None for _, _, left in reports)


@pytest.fixture(scope="module")
def walked(walk):
    return walk[0]


def test_every_units_function_produces_a_result_for_each_of_its_checks_and_no_other(walked):
    """The runner calls each unit's function (or each of its checks' own): every check of the unit gets its result,
    in its stage, and none errs."""
    assert sorted(result.id for result in walked) == sorted(registry.run_check_ids())
    for unit in registry.UNITS.values():
        if unit.function:
            assert callable(unit.function)
        else:  # each of its checks measures alone
            assert all(callable(registry.CHECKS[check].measure) for check in registry.unit_checks(unit.name)), unit.name
        mine = [result for result in walked if registry.CHECKS[result.id].runs_in == unit.name]
        assert sorted(result.id for result in mine) == sorted(registry.unit_checks(unit.name)), unit.name
        assert all(result.stage == unit.stage and result.status is not Status.ERROR for result in mine), [
            (result.id, result.summary) for result in mine if result.status is Status.ERROR]


def test_what_a_unit_reads_is_declared_evidence_of_a_check_another_unit_runs():
    for unit in registry.UNITS.values():
        for read in unit.reads:
            check_id, key = read.split(":", 1)
            owner = registry.CHECKS[check_id].runs_in
            assert owner is not None and owner != unit.name
            assert key in EVIDENCE[check_id].__annotations__, read


def test_units_run_after_the_units_they_read_whatever_order_they_are_asked_in():
    assert runner.ordered(["overfit", "training", "data"]) == ["data", "training", "overfit"]
    assert runner.ordered(list(reversed(registry.UNITS))) == list(registry.UNITS)
    with pytest.raises(InputError, match="Unknown unit"):
        runner.ordered(["data", "sweeping"])


def test_the_overfit_unit_gets_the_sweeps_recommended_rate_from_the_same_call(walked):
    sweep = next(result for result in walked if result.id == "hparams.lr_sweep")
    overfit = next(result for result in walked if result.id == "overfit.one_batch")
    assert [result.id for result in walked][-1] == "overfit.one_batch"
    assert sweep.evidence["best_rate"] is not None
    assert overfit.evidence["best_rate"] == sweep.evidence["best_rate"]


def test_one_call_trains_one_copy_of_the_model_for_every_unit_that_trains(walk, demo_model):
    """Learnability, the sweep, the range test and the overfit test start from the copy's reset, so one call makes
    (and traces) the copy once; the model itself is never trained."""
    results, made, left, _ = walk
    assert [unit.name for unit in registry.UNITS.values() if unit.copy] == ["learnability", "training", "overfit"]
    assert left == []  # the runner freed the copy before returning, not whenever Python next collects
    # Measured (two epochs may not memorise; an uninformative range test is a skip with its curve as evidence).
    trained = [result.id for result in results if registry.CHECKS[result.id].trains
               and result.status is not Status.ERROR and (result.status is not Status.SKIP or result.evidence)]
    assert copy_checks() <= set(trained)
    assert made == [demo_model]
    assert list(registry.UNITS)[-3:] == ["learnability", "training", "overfit"]  # the copy's life is one stretch


def test_each_call_has_its_own_copy(run):
    """Two calls (two pages, or two sessions of the app at once on one context) never train the same copy."""
    first = runner.inputs(registry.UNITS["overfit"], SMALL, ())["copies"]
    second = runner.inputs(registry.UNITS["overfit"], SMALL, ())["copies"]
    assert isinstance(first, SharedCopy) and first is not second


# ---------------------------------------------------------------- a check added by declaration alone

def measure_majority_share(run: RunContext, *, majority_accuracy: float | None) -> list[CheckResult]:
    """A new unit's function: reads data.baselines' measured majority share from the same call."""
    status = Status.WARN if majority_accuracy is None or majority_accuracy > 0.5 else Status.PASS
    return [CheckResult("data.majority_share", "data", status, f"majority {majority_accuracy}",
                        evidence={"majority_accuracy": majority_accuracy})]


def majority_unit(run, **inputs):
    """The new unit's function (it looks its check's function up when called, so a test can replace it)."""
    return measure_majority_share(run, **inputs)


@pytest.fixture
def declared(monkeypatch):
    """One more check and its unit, declared in the registry and nowhere else (listed first, so that the runner
    must order it after the data unit it reads)."""
    check = Check("data.majority_share", "the commonest label's share", unit="majority")
    unit = Unit("majority", "data", majority_unit, needs=("columns",), reads=("data.baselines:majority_accuracy",),
                heavy=False)
    monkeypatch.setattr(registry, "CHECKS", {check.id: check, **registry.CHECKS})
    monkeypatch.setattr(registry, "UNITS", {unit.name: unit, **registry.UNITS})
    return check


def test_a_check_declared_alone_runs_after_what_it_reads_and_gets_its_output(run, declared):
    assert runner.ordered(["majority", "labels"]) == ["labels", "majority"]
    results = runner.run_units(run, ["majority", "labels"])
    found = {result.id: result for result in results}
    assert list(found)[0] == "data.majority_share"  # reported in the walk's order: it is declared first
    assert found["data.majority_share"].evidence["majority_accuracy"] == \
        found["data.baselines"].evidence["majority_accuracy"]  # it ran after the unit it reads, with its output
    assert registry.function_name(declared).endswith("majority_unit")
    assert "data.majority_share" in registry.checks_of("data")


def test_a_check_declared_alone_is_skipped_with_the_owning_checks_reason_when_its_need_fails(demo_inputs,
                                                                                          demo_model, declared):
    tokenizer, split = demo_inputs
    broken = RunContext(RunConfig(batch_size=8), tokenizer, split.remove_columns(["hypothesis"]),
                        lambda *args: demo_model)
    [result] = runner.run_units(broken, ["majority"])
    assert result.status is Status.SKIP and "hypothesis" in result.summary and "data.columns" in result.summary


def test_a_check_declared_alone_that_raises_is_an_error_not_a_traceback(run, declared, monkeypatch):
    def burn(*args, **kwargs):
        raise RuntimeError("the disk is on fire")

    monkeypatch.setitem(globals(), "measure_majority_share", burn)
    [result] = runner.run_units(run, ["majority"])
    assert result.status is Status.ERROR and "the disk is on fire" in result.summary


def test_the_label_and_duplicate_units_are_skipped_by_the_runner_with_the_owning_checks_reason(tokenizer):
    """A split without its label column: data.columns names it; the label checks and the duplicate scan are skipped
    by their units' declared needs, not by branches of their own."""
    from conftest import make_split
    from diagnostics.walk.stages import data_stage

    split = make_split("sst2", [("a great film", 1), ("an awful book", 0)] * 4).remove_columns("label")
    found = {result.id: result for result in data_stage(RunContext(RunConfig(task="sst2", batch_size=4).validated(),
                                                                   tokenizer, split))}
    assert found["data.columns"].status in (Status.FAIL, Status.WARN) and "label" in found["data.columns"].summary
    for check_id in ("data.label_range", "data.label_balance", "data.baselines"):
        assert found[check_id].status is Status.SKIP and "no 'label' column" in found[check_id].summary
    assert found["data.duplicates"].status is Status.SKIP and "see data.columns" in found["data.duplicates"].summary
    assert list(found) == [check_id for check_id in registry.CHECKS if check_id in found]  # the walk's order


def test_a_split_without_labels_skips_every_unit_that_trains_on_them_with_one_reason(demo_inputs, demo_model):
    """A GLUE test split (every label -1): the runner skips learnability, the sweep and the overfit test by their
    units' declared need, each naming data.label_range, the check that owns the cause."""
    tokenizer, split = demo_inputs
    unlabelled = split.map(lambda row: {"label": -1})
    run = RunContext(RunConfig(batch_size=8), tokenizer, unlabelled, lambda *args: demo_model)
    found = {result.id: result for result in runner.run_units(run, ["learnability", "training", "overfit"], SMALL)}
    assert set(found) == copy_checks()
    for result in found.values():
        assert result.status is Status.SKIP and "data.label_range" in result.summary, result


def test_a_check_that_requires_more_than_its_unit_is_skipped_alone_and_the_unit_answers_for_the_rest(tokenizer):
    """An empty text cell: data.columns names its row; data.batch, the decoded samples and truncation are skipped by
    the runner from their declared `requires`, pointing at data.columns, while the label checks are measured."""
    from conftest import make_split

    split = make_split("sst2", [("a great film", 1), ("", 0)] + [("an awful book", 0), ("the sun is warm", 1)] * 3)
    run = RunContext(RunConfig(task="sst2", batch_size=4).validated(), tokenizer, split)
    found = {result.id: result for result in runner.run_units(run, ["data", "labels"])}
    assert found["data.columns"].status is Status.FAIL and "row 1" in found["data.columns"].summary
    for check_id in ("data.batch", "data.decoded_samples", "data.truncation"):
        assert registry.CHECKS[check_id].requires and "texts" in registry.needs_of(registry.CHECKS[check_id])
        assert found[check_id].status is Status.SKIP, found[check_id]
        assert found[check_id].summary == "Some text cells are empty or not text (sentence in 1 row): see " \
                                          "data.columns.", found[check_id].summary
    assert found["data.label_range"].status is Status.PASS


def test_a_check_that_requires_more_than_its_unit_is_skipped_alone_and_the_others_come_from_its_function(
        run, monkeypatch):
    def measure(run, **inputs):
        return [CheckResult(check_id, "hparams", Status.PASS, "measured")
                for check_id in registry.unit_checks("training")]

    range_test = registry.CHECKS["hparams.lr_range_test"]
    monkeypatch.setattr(registry, "CHECKS", {**registry.CHECKS, range_test.id: replace(range_test, requires=("rows",))})
    tiny = RunContext(run.config, run.tokenizer, run.split.select(range(4)), run.model_loader)
    monkeypatch.setitem(registry.UNITS, "training", replace(registry.UNITS["training"], function=measure))
    found = {result.id: result for result in runner.run_units(tiny, ["training"], SMALL)}
    assert found[range_test.id].status is Status.SKIP and "too few" in found[range_test.id].summary
    assert found["hparams.lr_sweep"].summary == "measured"


@pytest.fixture(scope="module")
def narrow_model():
    """A tiny classifier whose embeddings hold 5 token ids: the demo tokenizer's ids run past them, so its forward
    pass and its train step raise (TensorFlow checks embedding ids on CPU)."""
    from transformers import BertConfig, TFBertForSequenceClassification

    model = TFBertForSequenceClassification(BertConfig(vocab_size=5, hidden_size=32, num_hidden_layers=2,
                                                       num_attention_heads=4, intermediate_size=37, num_labels=3))
    model(model.dummy_inputs)
    return model


def test_the_model_checks_that_read_a_failed_forward_pass_or_step_are_skipped_naming_its_owner(run, narrow_model):
    broken = RunContext(run.config, run.tokenizer, run.split, lambda *args: narrow_model)
    found = {result.id: result for result in runner.run_units(broken, ["model"])}
    assert found["model.forward"].status is Status.FAIL and "raised" in found["model.forward"].summary
    for check in ("model.nan_rows", "model.initial_loss", "model.gradients", "model.weights_after_step",
                  "model.nan_origin"):
        assert found[check].status is Status.SKIP and "see model.forward" in found[check].summary, check
    assert found["model.config"].status is not Status.ERROR and found["model.memory"].status is Status.PASS


def test_weights_after_a_train_step_that_raised_are_skipped_naming_model_gradients(demo_inputs):
    """Label 2 for a two-label head: the forward pass runs, the train step raises on CPU (model.gradients' finding)."""
    from conftest import make_split
    from diagnostics.keras.loading import load_model

    tokenizer, _ = demo_inputs
    split = make_split("mnli", [("a cat sat", "a dog ran", label) for label in (0, 1, 2, 2)])
    run = RunContext(RunConfig(batch_size=4, num_labels=2), tokenizer, split, load_model)
    found = {result.id: result for result in runner.run_units(run, ["model"])}
    assert found["model.forward"].status is not Status.ERROR and found["model.gradients"].status is Status.FAIL
    assert found["model.weights_after_step"].status is Status.SKIP
    assert "see model.gradients" in found["model.weights_after_step"].summary


def count_rows(run: RunContext) -> CheckResult:
    """A new check's own function, for a unit whose checks measure alone."""
    rows = len(run.split)
    return CheckResult("data.row_count", "data", Status.PASS, f"{rows} rows", evidence={"rows": rows})


def test_a_check_added_to_a_unit_of_checks_that_measure_alone_is_one_function_and_one_entry(run, monkeypatch):
    check = Check("data.row_count", "the split's rows", unit="labels", measure=count_rows)
    monkeypatch.setattr(registry, "CHECKS", {**registry.CHECKS, check.id: check})
    assert not registry.UNITS["labels"].function and registry.function_name(check).endswith("count_rows")
    found = {result.id: result for result in runner.run_units(run, ["labels"])}
    assert found["data.row_count"].evidence["rows"] == len(run.split)
    assert found["data.label_range"].status is Status.PASS  # the unit's other checks measure as before


def test_the_initial_loss_of_a_batch_without_a_valid_label_is_skipped_naming_model_nan_rows(demo_inputs):
    from conftest import make_split
    from diagnostics.keras.loading import load_model

    tokenizer, _ = demo_inputs
    split = make_split("mnli", [("a cat sat", "a dog ran", 2)] * 4)
    run = RunContext(RunConfig(batch_size=4, num_labels=2), tokenizer, split, load_model)
    found = {result.id: result for result in runner.run_units(run, ["model"])}
    assert found["model.nan_rows"].status is Status.FAIL
    assert found["model.initial_loss"].status is Status.SKIP
    assert "see model.nan_rows" in found["model.initial_loss"].summary
