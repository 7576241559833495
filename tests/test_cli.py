import json
import subprocess
import sys
from xml.etree import ElementTree

import pandas as pd
import pytest

from conftest import ROOT
from diagnostics.walk import registry
from diagnostics.__main__ import main


def test_run_on_demo_kit_writes_report_and_exits_0(tmp_path, capsys):
    report_path = tmp_path / "report.json"
    code = main(["run", "--stages", "data", "--skip", "data.learnability", "--json", str(report_path)])
    report = json.loads(report_path.read_text())
    out = capsys.readouterr().out
    assert code == 0
    assert report["run"]["checkpoint"] == "demo" and report["run"]["task"] == "mnli"
    assert report["environment"]["transformers"] == "4.54.1"
    ids = [check["id"] for check in report["checks"]]
    assert "data.decoded_samples" in ids and "data.label_range" in ids
    assert "data.learnability" not in ids and "stages: data (--skip data.learnability)" in out  # left out, and said
    assert "PASS  data.columns" in out


def test_run_on_local_bert_checkpoint_and_glue_tsv_reports_decoded_rows(tmp_path, bert_checkpoint):
    tsv = tmp_path / "train.tsv"
    pd.DataFrame({"premise": ["the cat sat on the mat", "anna read the paper"] * 4,
                  "hypothesis": ["the cat sat", "anna never read"] * 4,
                  "label": ["entailment", "contradiction"] * 4}).to_csv(tsv, sep="\t", index=False)
    report_path = tmp_path / "report.json"
    code = main(["run", "--checkpoint", str(bert_checkpoint), "--task", "mnli", "--data-files", f"train={tsv}",
                 "--batch-size", "4", "--stages", "data", "--json", str(report_path)])
    report = json.loads(report_path.read_text())
    decoded = next(c for c in report["checks"] if c["id"] == "data.decoded_samples")
    texts = {row["decoded"] for row in decoded["evidence"]["rows"]}
    assert code == 0
    assert "[CLS] the cat sat on the mat [SEP] the cat sat [SEP]" in texts
    batch = next(c for c in report["checks"] if c["id"] == "data.batch")
    assert "token_type_ids" in [entry["key"] for entry in batch["evidence"]["entries"]]


def test_run_with_a_failing_check_exits_1(tmp_path):
    assert main(["run", "--split", "test_matched", "--stages", "data"]) == 1


@pytest.mark.parametrize(
    "args, message",
    [
        (["--task", "imdb"], "Unknown GLUE task 'imdb'"),
        (["--checkpoint", "/no/such/dir"], "does not exist"),
        (["--data-files", "train=/no/such.csv"], "does not exist"),
        (["--stages", "data,vibes"], "Unknown stage"),
        (["--split", "dev"], "has no split 'dev'"),
    ],
)
def test_run_with_unusable_input_exits_2_with_one_line(args, message, capsys):
    assert main(["run", *args]) == 2
    err = capsys.readouterr().err
    assert message in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("args", [["--num-labels", "0"], ["--batch-size", "-1"], ["--max-length", "x"]])
def test_bad_numbers_exit_2(args, capsys):
    with pytest.raises(SystemExit) as stop:
        main(["run", *args])
    assert stop.value.code == 2
    assert "Traceback" not in capsys.readouterr().err


def test_module_runs_as_a_command(tmp_path):
    completed = subprocess.run([sys.executable, "-m", "diagnostics", "run", "--task", "nope"], cwd=ROOT,
                               capture_output=True, text=True, timeout=120,
                               env={**__import__("os").environ, "HF_HUB_OFFLINE": "1"})
    assert completed.returncode == 2
    assert completed.stderr.strip().startswith("error: Unknown GLUE task")


def _three_class_tsv(path):
    pd.DataFrame({"premise": ["the cat sat on the mat", "anna read the paper", "the dog ran in the park"] * 4,
                  "hypothesis": ["the cat sat", "anna never read", "a dog ran today"] * 4,
                  "label": [0, 2, 1] * 4}).to_csv(path, sep="\t", index=False)


def test_model_stage_num_labels_two_fails_nan_rows_with_exactly_the_label_two_rows(tmp_path, bert_checkpoint):
    tsv = tmp_path / "train.tsv"
    _three_class_tsv(tsv)
    report_path = tmp_path / "report.json"
    code = main(["run", "--checkpoint", str(bert_checkpoint), "--data-files", f"train={tsv}", "--num-labels", "2",
                 "--batch-size", "12", "--stages", "model", "--json", str(report_path)])
    checks = {c["id"]: c for c in json.loads(report_path.read_text())["checks"]}
    assert code == 1
    assert checks["model.nan_rows"]["status"] == "fail"
    assert {row["label"] for row in checks["model.nan_rows"]["evidence"]["rows"]} == {2}
    assert len(checks["model.nan_rows"]["evidence"]["rows"]) == 4


def test_model_stage_num_labels_three_passes_every_model_check(tmp_path, bert_checkpoint):
    tsv = tmp_path / "train.tsv"
    _three_class_tsv(tsv)
    report_path = tmp_path / "report.json"
    code = main(["run", "--checkpoint", str(bert_checkpoint), "--data-files", f"train={tsv}", "--num-labels", "3",
                 "--batch-size", "12", "--stages", "model", "--json", str(report_path)])
    statuses = {c["id"]: c["status"] for c in json.loads(report_path.read_text())["checks"]}
    assert code == 0
    assert statuses.pop("model.nan_origin") == "skip"
    assert set(statuses.values()) == {"pass"}


def test_run_without_stages_writes_every_registered_check_as_json_and_junit(full_demo_run):
    code, report, junit_path = full_demo_run
    assert code == 0
    assert sorted(check["id"] for check in report["checks"]) == sorted(registry.run_check_ids())
    assert all(check["stage"] == registry.CHECKS[check["id"]].stage for check in report["checks"])
    overfit_check = next(c for c in report["checks"] if c["id"] == "overfit.one_batch")
    assert overfit_check["status"] == "pass"
    root = ElementTree.parse(junit_path).getroot()
    cases = {case.get("name"): case for case in root.iter("testcase")}
    assert sorted(cases) == sorted(registry.run_check_ids())
    assert [suite.get("name") for suite in root.iter("testsuite")] == list(registry.STAGE_ORDER)
    for check in report["checks"]:
        case = cases[check["id"]]
        # One failing case per cause: a finding another check's cause explains passes, naming its owner.
        assert (case.find("failure") is not None) == (check["status"] in ("fail", "error")
                                                      and not check.get("explained_by"))
        assert (case.find("skipped") is not None) == (check["status"] == "skip")
        if check["status"] == "warn":
            assert check["summary"] in case.find("system-out").text


def test_junit_counts_a_failing_run_as_failures(tmp_path):
    junit_path = tmp_path / "junit.xml"
    assert main(["run", "--stages", "data", "--num-labels", "2", "--junit", str(junit_path)]) == 1
    suite = ElementTree.parse(junit_path).getroot().find("testsuite")
    failures = {
        case.get("name"): case.find("failure") for case in suite.iter("testcase") if case.find("failure") is not None
    }
    assert "data.label_range" in failures and int(suite.get("failures")) == len(failures)
    assert "beyond the head's num_labels=2 outputs" in failures["data.label_range"].get("message")
    assert int(suite.get("tests")) == len(registry.checks_of("data"))


def test_fail_on_warn_turns_a_warning_into_exit_1():
    # The string 'adam' warns on its own (what is under test is the exit code, not the measurements).
    args = ["run", "--stages", "hparams", "--optimizer", "adam", "--skip", "hparams.lr_sweep,hparams.lr_range_test"]
    assert main(args) == 0
    assert main(args + ["--fail-on", "warn"]) == 1


def test_overfit_at_rate_10_fails_with_the_cause(tmp_path):
    report_path = tmp_path / "report.json"
    code = main(["run", "--stages", "overfit", "--learning-rate", "10", "--json", str(report_path)])
    check = json.loads(report_path.read_text())["checks"][0]
    assert code == 1
    # A loss that rises from the first epoch is too high a rate; one that fell and then jumped, an unstable one.
    assert check["status"] == "fail" and any(words in check["summary"] for words in (
        "the learning rate is too high", "unstable at this learning rate"))
    assert "learning_rate=1e+00" in check["fix"]  # a tenth of the rate: no sweep ran to recommend one


@pytest.mark.parametrize(
    "args, message",
    [
        (["--max-length", "1000"], "beyond this checkpoint's limit of 128 tokens"),
        (["--scenario", "nope"], "Unknown scenario"),
        (["--skip", "data.learnability,data.vibes"], "Unknown check(s) data.vibes to skip"),
        (["--skip", "hparams.lr_range_test"], "skip them all or none (add hparams.lr_sweep)"),
        (["--with", "data.vibes"], "Unknown check(s) data.vibes to run"),
        (["--with", "hparams.lr_sweep"], "ask for them all or none (add hparams.lr_range_test)"),
    ],
)
def test_more_unusable_input_exits_2_with_one_line(args, message, capsys):
    assert main(["run", "--stages", "data,hparams", *args]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


def test_directory_without_config_exits_2(tmp_path, capsys):
    assert main(["run", "--checkpoint", str(tmp_path)]) == 2
    assert "has no config.json" in capsys.readouterr().err


def test_scenarios_command_lists_every_scenario(capsys):
    from diagnostics.config.scenarios import SCENARIOS

    assert main(["scenarios"]) == 0
    out = capsys.readouterr().out
    assert all(name in out for name in SCENARIOS)
    assert "hparams.optimizer or hparams.lr_sweep" in out


@pytest.mark.slow
def test_the_default_demo_run_is_clean_a_healthy_run_warns_of_nothing(capsys):
    # A newcomer's first run: every stage at the default settings on the kit, warnings counted as failures.
    assert main(["run", "--checkpoint", "demo", "--fail-on", "warn"]) == 0, capsys.readouterr().out
