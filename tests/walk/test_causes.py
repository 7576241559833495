"""Causes as the unit of the report: declared owners, findings that point at them, one rate, fixes in the user's
names; with plain results, no model."""

import json
import types
from xml.etree import ElementTree

import pytest

from diagnostics.walk import registry
from diagnostics.walk.causes import causes, owners
from diagnostics.walk.causes import explain
from diagnostics.config.run import RunConfig
from diagnostics.config.schedule import Schedule
from diagnostics.core.fixes import CodeStyle, RateFix, code_style, keras_name_in, optimizer_code
from diagnostics.i18n import msg
from diagnostics.report.formats import build_report, cause_lines, checklist_lines, junit_report, markdown_report
from diagnostics.core.result import CheckResult, Status


def result(check_id, status, condition=None, fix=None, **evidence):
    return CheckResult(check_id, check_id.split(".")[0], Status(status), f"{check_id} found it", fix=fix,
                       evidence=evidence, condition=condition)


HEAD_SHORT = [
    result("data.label_range", "fail", "labels_beyond_head", fix="num_labels=3", beyond_head=True),
    result("model.config", "fail", "missing_outputs", fix="num_labels=3 and names"),
    result("model.forward", "fail", "fit_call_raises", out_of_range_labels=5),
    result("model.nan_rows", "fail", "max_non_finite_rows", labels_cause=True),
    result("model.gradients", "fail", "step_raises", out_of_range_labels=5),
    result("hparams.loss", "pass"),
]


def test_every_declared_cause_names_conditions_its_owner_has_and_explains_only_declared_checks_and_conditions():
    for cause in registry.CAUSES.values():
        conditions = {condition.name for condition in registry.CHECKS[cause.owner].conditions}
        assert set(cause.conditions) <= conditions, cause.name
        for explains in cause.explains:
            assert explains.check in registry.CHECKS and explains.check != cause.owner, cause.name
            assert set(explains.conditions) <= {c.name for c in registry.CHECKS[explains.check].conditions}, explains


def test_every_key_an_explanation_reads_is_declared_in_the_explained_checks_evidence():
    from diagnostics.walk.registry import declared_keys

    for cause in registry.CAUSES.values():
        for explains in cause.explains:
            if explains.when is not None:
                assert set(explains.when.keys) <= declared_keys(explains.check), (cause.name, explains)


def test_the_listing_gives_each_owner_its_causes():
    listed = {check["id"]: check for check in registry.listing()}
    assert [cause["name"] for cause in listed["model.config"]["causes"]] == ["head_short"]
    head = listed["model.config"]["causes"][0]
    assert {"check": "model.nan_rows", "conditions": ["max_non_finite_rows"], "when": "labels_cause"} in head[
        "explains"
    ]
    assert listed["data.batch"]["causes"] == []


def test_a_head_too_small_is_one_cause_and_the_findings_it_explains_point_at_it():
    explained = explain(HEAD_SHORT)
    found = causes(explained)
    assert [(cause.owner, cause.status, cause.fix) for cause in found] == [
        ("model.config", Status.FAIL, "num_labels=3 and names")]
    assert found[0].explains == ("data.label_range", "model.forward", "model.nan_rows", "model.gradients")
    assert found[0].title == "a head with fewer outputs than the task has labels"
    for item in explained:
        if item.id in found[0].explains:
            assert item.explained_by == "model.config" and item.fix is None and item.status is Status.FAIL
            assert item.evidence  # the evidence stays (the NaN-row drilldown is the Model page's centre)


def test_a_finding_explained_only_when_its_measurement_says_so_stands_alone_otherwise():
    # The fit call raised, but the batch holds no label the head cannot take: not the head's doing.
    other = [*HEAD_SHORT[:2], result("model.forward", "fail", "fit_call_raises", out_of_range_labels=0)]
    assert {cause.owner for cause in causes(explain(other))} == {"model.config", "model.forward"}


def test_labels_outside_the_tasks_classes_come_before_a_head_too_small():
    both = [result("data.label_range", "fail", "max_invalid_labels"), *HEAD_SHORT[1:]]
    by_id = {item.id: item for item in explain(both)}
    assert by_id["model.nan_rows"].explained_by == "data.label_range"
    assert by_id["data.label_range"].explained_by is None and by_id["model.config"].explained_by is None


def test_an_explained_owner_passes_its_explanations_on_to_the_root_cause():
    chain = [result("hparams.loss", "fail", "warn_disagreement"),
             result("model.gradients", "fail", "zero_gradient"),
             result("model.weights_after_step", "fail", "min_moved")]
    by_id = {item.id: item for item in explain(chain)}
    assert by_id["model.gradients"].explained_by == "hparams.loss"
    assert by_id["model.weights_after_step"].explained_by == "hparams.loss"
    assert owners(list(by_id.values())) == {"hparams.loss"}


def test_a_passing_or_skipped_owner_explains_nothing_and_a_skip_is_never_a_cause():
    alone = [result("data.label_range", "pass"), result("model.config", "pass"),
             result("model.nan_rows", "fail", "max_non_finite_rows", labels_cause=True),
             result("model.nan_origin", "skip")]
    found = causes(explain(alone))
    assert [cause.owner for cause in found] == ["model.nan_rows"]


def test_a_summary_explained_by_another_cause_is_said_without_its_reading():
    spike = msg("After {run}, it jumped{reading}.", run="20 epochs",
                reading=msg(": training is unstable at this learning rate"))
    results = [result("hparams.loss", "fail", "warn_disagreement"),
               CheckResult("overfit.one_batch", "overfit", Status.FAIL, spike, fix="lower", condition="spike_share")]
    overfit = explain(results)[1]
    assert overfit.explained_by == "hparams.loss" and str(overfit.summary) == "After 20 epochs, it jumped."
    assert str(explain(results[1:])[0].summary).endswith("unstable at this learning rate.")


@pytest.mark.parametrize("keras, optimizer, expected", [
    ("tf_keras", "Adam", "tf_keras.optimizers.Adam(learning_rate=1e-04)"),
    ("tf.keras", "adam", "tf.keras.optimizers.Adam(learning_rate=1e-04)"),
    ("keras", "AdamW", "keras.optimizers.AdamW(learning_rate=1e-04, weight_decay=0.01)"),
    ("tf.keras", "create_optimizer", "optimizer, schedule = create_optimizer(init_lr=1e-04, num_train_steps=300, "
                                     "num_warmup_steps=30, weight_decay_rate=0.01)"),
])
def test_a_rate_fix_is_written_in_the_users_names(keras, optimizer, expected):
    style = CodeStyle(keras, optimizer, 0.01, Schedule(300, 30, 0.01))
    assert optimizer_code(1e-4, style) == expected
    with code_style(style):
        assert str(RateFix(1e-4)) == expected
    assert str(RateFix(3e-3, style=style).with_rate(1e-4)) == expected


def test_one_rate_the_sweeps_wherever_a_rate_is_named():
    style = CodeStyle("tf.keras", "Adam")
    results = [result("hparams.optimizer", "warn", "string_adam", fix=RateFix(5e-5, style=style)),
               result("hparams.lr_sweep", "pass", fix=None, best_rate=1e-4),
               result("overfit.one_batch", "fail", "spike_share", fix=RateFix(1e-5, style=style),
                      at_configured_rate=True)]
    explained = explain(results)
    fixes = [str(item.fix) for item in explained if item.fix is not None and item.explained_by is None]
    # Once: the overfit test that crawled at the string's rate is the string's cause (string_rate), not a second
    # cause proposing the same rate (the walk of stop 81 read "3 causes", two of them this rate).
    assert fixes == ["tf.keras.optimizers.Adam(learning_rate=1e-04)"]
    assert next(item for item in explained if item.id == "overfit.one_batch").explained_by == "hparams.optimizer"
    unswept = explain([results[0]])  # no sweep: the rate the check named stands
    assert str(unswept[0].fix) == "tf.keras.optimizers.Adam(learning_rate=5e-05)"


def test_an_overfit_test_short_of_epochs_at_a_rate_the_sweep_cleared_is_no_rates_cause():
    """The overfit test's "the epochs were too few" (slow_at_a_swept_rate) says the rate is fine: no cause whose fix
    changes the rate (the string's hidden rate, the sweep's) explains it, though it trained at the configured rate."""
    style = CodeStyle("tf.keras", "Adam")
    results = [result("hparams.optimizer", "warn", "string_adam", fix=RateFix(5e-5, style=style)),
               result("hparams.lr_sweep", "pass", fix=None, best_rate=1e-4),
               result("overfit.one_batch", "warn", "slow_at_a_swept_rate", fix="More epochs.",
                      at_configured_rate=True, rate_swept_fine=True)]
    overfit = next(item for item in explain(results) if item.id == "overfit.one_batch")
    assert overfit.explained_by is None


def test_a_rate_fix_survives_a_pickle_with_its_style():
    import pickle

    fix = RateFix(2e-5, style=CodeStyle("tf.keras", "create_optimizer", 0.0, Schedule(90, 9)))
    again = pickle.loads(pickle.dumps(fix))
    assert again == fix and again.rate == 2e-5 and again.with_rate(1e-4).style.keras == "tf.keras"


def test_keras_is_named_as_the_users_code_names_it():
    import tensorflow
    import tf_keras

    assert keras_name_in({"tf_keras": tf_keras}) == "tf_keras"
    assert keras_name_in({"keras": tf_keras, "tf": tensorflow}) == "keras"  # import tf_keras as keras
    assert keras_name_in({"np": types.ModuleType("numpy")}) == "tf_keras"  # no Keras in sight: the one that works
    # With TF_USE_LEGACY_KERAS=1 (set by importing diagnostics, as in a traced script) tf.keras is tf_keras
    assert keras_name_in({"tf": tensorflow}) == "tf.keras"


def test_the_report_leads_with_its_causes_in_json_terminal_markdown_and_junit():
    explained = explain(HEAD_SHORT)
    report = build_report(RunConfig(task="mnli", num_labels=2), explained)
    assert json.loads(json.dumps(report))["causes"] == [{
        "owner": "model.config", "cause": "head_short", "title": "a head with fewer outputs than the task has labels",
        "status": "fail", "summary": "model.config found it", "fix": "num_labels=3 and names",
        "explains": ["data.label_range", "model.forward", "model.nan_rows", "model.gradients"]}]
    assert report["counts"]["fail"] == 1 and report["counts"]["explained"] == 4
    lines = cause_lines(explained)
    assert lines[0] == "1 cause: 1 fail" and "model.config" in lines[1] and "explains: data.label_range" in lines[2]
    assert [line.split()[0] for line in checklist_lines(explained)][:2] == ["FAIL", "SEE"]
    assert "(explained by model.config)" in checklist_lines(explained)[1]
    markdown = markdown_report(report, explained)
    assert "## 1 cause: 1 fail" in markdown and "| SEE | `model.nan_rows`" in markdown
    suites = ElementTree.fromstring(junit_report(report).split("\n", 1)[1])
    failing = [case.get("name") for case in suites.iter("testcase") if case.find("failure") is not None]
    assert failing == ["model.config"]  # one failing case per cause
    assert sum(int(suite.get("failures")) for suite in suites.iter("testsuite")) == 1


# ------------------------------------------------------------ one owner whatever page opens first


def test_a_finding_that_is_a_later_checks_cause_points_at_it_as_pending_before_it_runs():
    # The Data page opened first (a course-script link): model.config has not run, and the label check's finding is
    # its cause; it points there, says no fix of its own, and the report neither names data.label_range nor reads
    # clean.
    data_only = [HEAD_SHORT[0], result("data.columns", "pass")]
    shown = {item.id: item for item in explain(data_only)}
    assert shown["data.label_range"].explained_by == "model.config" and shown["data.label_range"].fix is None
    found = causes(list(shown.values()))
    assert [(cause.owner, cause.status, cause.fix, cause.pending, cause.explains) for cause in found] == [
        ("model.config", Status.FAIL, None, True, ("data.label_range",))]
    assert found[0].title == "a head with fewer outputs than the task has labels"
    lines = cause_lines(list(shown.values()))
    assert lines[0] == "1 cause: 1 fail" and "pending: model.config has not run" in lines[1]
    assert "pending: its cause is model.config's" in "\n".join(checklist_lines(list(shown.values())))
    # What the runner keeps carries no such pointer: once model.config runs, its own verdict decides.
    kept = explain(data_only, pending=False)
    assert kept[0].explained_by is None and kept[0].fix == "num_labels=3"
    assert explain([*kept, result("model.config", "pass")])[0].explained_by is None


def test_a_pending_cause_fails_a_run_and_its_junit_case():
    from diagnostics.__main__ import exit_code

    shown = explain([HEAD_SHORT[0], result("data.columns", "pass")])
    assert exit_code(causes(shown), "fail") == 1
    report = build_report(RunConfig(checkpoint="demo"), shown)
    suite = ElementTree.fromstring(junit_report(report)).find("testsuite")
    assert suite.get("failures") == "1"
    assert report["causes"][0]["pending"] is True


def test_no_report_reads_clean_while_a_check_has_not_run():
    from diagnostics.core.result import NOT_RUN, skipped
    from diagnostics.report.formats import causes_headline

    waiting = [result("data.columns", "pass"), skipped("data.learnability", "data", "Not run by default", NOT_RUN)]
    assert causes_headline(causes(waiting), waiting).startswith("No cause found yet: data.learnability has not run")
    assert "PENDING" in checklist_lines(waiting)[-1] or "PENDING" in "\n".join(checklist_lines(waiting))
    plain = [result("data.columns", "pass"), result("data.batch", "skip")]  # a skip that cannot apply is no wait
    assert causes_headline(causes(plain), plain) == "No cause found: no check fails or warns."


def test_labels_that_stop_the_model_page_opened_first_point_at_the_label_check_until_it_runs():
    model_only = [result("model.config", "pass"), result("model.nan_rows", "fail", "max_non_finite_rows",
                                                         labels_cause=True)]
    assert explain(model_only)[1].explained_by == "data.label_range"
    assert [(cause.owner, cause.pending) for cause in causes(explain(model_only))] == [("data.label_range", True)]
