"""Every row of the bad-input list: a clear message on the page with the sidebar kept, and on the command line
exit 2 with one line and no traceback (or, where the input is a bug the checks diagnose, a failing check)."""

import json

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from conftest import ROOT, rendered
from diagnostics.__main__ import main
from diagnostics.walk.registry import declared_keys
from diagnostics.config.tasks import TASKS

APP = str(ROOT / "app.py")
KEPT_SEED = 7  # set before each bad input; it must survive it


@pytest.fixture
def app():
    at = AppTest.from_file(APP, default_timeout=180).run()
    at.number_input(key="run.seed").set_value(KEPT_SEED).run()
    return at


def page_text(at) -> str:
    parts = [*at.markdown, *at.caption, *at.error, *at.warning, *at.info, *at.success]
    return "\n".join(rendered(element.value) for element in parts)


def assert_told(at, message: str) -> None:
    """The page shows `message`, raised nothing, and kept what the user entered elsewhere."""
    assert not at.exception, at.exception
    assert message in page_text(at)
    assert at.number_input(key="run.seed").value == KEPT_SEED


def use_files(at, text: str) -> None:
    assert "Local files" in at.radio(key="run.data_source").options
    at.radio(key="run.data_source").set_value("files").run()
    at.text_area(key="run.data_files").set_value(text).run()


# ------------------------------------------------------------ checkpoints


@pytest.mark.parametrize("checkpoint, message", [
    ("no-such-org/no-such-model", "Cannot load Hub checkpoint 'no-such-org/no-such-model'"),
    ("/no/such/checkpoint", "does not exist"),
])
def test_page_checkpoint_that_cannot_be_found_or_reached(app, checkpoint, message):
    app.text_input(key="run.checkpoint").set_value(checkpoint).run()
    assert_told(app, message)
    assert app.text_input(key="run.checkpoint").value == checkpoint
    app.text_input(key="run.checkpoint").set_value("demo").run()
    assert not app.error and app.dataframe  # and the user goes on


def test_page_directory_without_config(app, tmp_path):
    app.text_input(key="run.checkpoint").set_value(str(tmp_path)).run()
    assert_told(app, "has no config.json")


def test_page_gpt2_without_pad_token_is_named_with_its_fix(app, gpt2_checkpoint):
    app.switch_page("app_pages/2_model.py").run()
    app.text_input(key="run.checkpoint").set_value(str(gpt2_checkpoint)).run()
    assert_told(app, "FAIL] `model.config`")
    assert "tokenizer.pad_token = tokenizer.eos_token" in "\n".join(code.value for code in app.code)


def test_page_checkpoint_without_a_classifier(app, t5_config_checkpoint):
    app.switch_page("app_pages/2_model.py").run()
    app.text_input(key="run.checkpoint").set_value(str(t5_config_checkpoint)).run()
    assert_told(app, "sequence classifier")


# ------------------------------------------------------------ task, data files, split


def test_page_offers_only_glue_tasks(app):
    assert app.selectbox(key="run.task").options == list(TASKS)


@pytest.mark.parametrize("name, content, message", [
    ("train.json", None, "does not exist"),
    ("train.json", "", "is empty"),
    ("train.csv", "premise,hypothesis,label\n", "has no rows"),
    ("train.json", "\x00\x01\x02 not json {", "Could not read"),
])
def test_page_data_file_missing_empty_or_unparseable(app, tmp_path, name, content, message):
    path = tmp_path / name
    if content is not None:
        path.write_text(content)
    use_files(app, f"train={path}")
    assert_told(app, message)
    assert app.text_area(key="run.data_files").value == f"train={path}"


def test_page_data_file_without_the_task_columns(app, tmp_path):
    path = tmp_path / "train.csv"
    pd.DataFrame({"text": ["a good film", "a bad film"] * 4, "label": [1, 0] * 4}).to_csv(path, index=False)
    use_files(app, f"train={path}")
    assert_told(app, "The split lacks premise, hypothesis: mnli needs premise, hypothesis, label")


def test_page_data_file_line_without_a_split_name(app, tmp_path):
    use_files(app, str(tmp_path / "train.csv"))
    assert_told(app, "should read SPLIT=PATH")


def test_page_split_that_does_not_exist_falls_back_and_says_so(app):
    app.selectbox(key="run.split").set_value("validation_matched").run()
    app.selectbox(key="run.task").set_value("sst2").run()  # sst2 has no validation_matched
    assert_told(app, "There is no split 'validation_matched' here; showing 'train'")
    assert app.selectbox(key="run.split").value == "train"
    assert set(app.dataframe[0].value["label_name"]) <= {"negative", "positive"}


# ------------------------------------------------------------ numbers


@pytest.mark.parametrize("key, value, message", [
    ("run.num_labels", 0, "num_labels must be at least 1, got 0"),
    ("run.num_labels", -2, "num_labels must be at least 1, got -2"),
    ("run.batch_size", 0, "batch size must be at least 1, got 0"),
    ("run.max_length", 0, "max length must be at least 1, got 0"),
    ("run.max_length", 1000, "beyond this checkpoint's limit of 128 tokens"),
    ("run.max_length", 4096, "max length must be at most 2048, got 4096"),
    ("run.num_labels", 1000, "num_labels must be at most 100"),
])
def test_page_bad_sizes(app, key, value, message):
    app.number_input(key=key).set_value(value).run()
    assert_told(app, message)
    assert app.number_input(key=key).value == value


def test_page_number_fields_say_their_range_in_the_visitors_language(app, monkeypatch):
    """A number past the browser's own range (a 23-digit batch size) is refused by the browser, red, with a tooltip
    in English only: each bounded field's help says its range first, hosted mode's lower cap where it has one."""
    assert "From 1 to 1024." in app.number_input(key="run.batch_size").help
    assert "From 1 to 2048." in app.number_input(key="run.max_length").help
    assert "From 0 to 4294967295." in app.number_input(key="run.seed").help
    app.selectbox(key="ui.lang").set_value("ru").run()
    assert "От 1 до 1024." in app.number_input(key="run.batch_size").help
    monkeypatch.setenv("DEBUGGER_HOSTED", "1")
    hosted = AppTest.from_file(APP, default_timeout=180).run()
    assert "From 1 to 32." in hosted.number_input(key="run.batch_size").help
    assert "From 1 to 256." in hosted.number_input(key="run.max_length").help


def test_page_batch_larger_than_the_split_is_a_warning_not_a_crash(app):
    app.number_input(key="run.batch_size").set_value(1000).run()
    assert_told(app, "The split has fewer rows than the batch size 1000")


@pytest.mark.parametrize("text, message", [
    ("0", "learning rate must be a positive number, got 0.0"),
    ("-1", "learning rate must be a positive number, got -1.0"),
    ("fast", "learning rate 'fast' is not a number"),
    ("nan", "learning rate must be a positive number, got nan"),
])
def test_page_bad_learning_rate(app, text, message):
    app.text_input(key="run.learning_rate").set_value(text).run()
    assert_told(app, message)
    assert app.text_input(key="run.learning_rate").value == text


@pytest.mark.parametrize("rates", [1, 300])
def test_page_sweep_with_one_rate_or_hundreds(app, rates):
    app.switch_page("app_pages/3_hyperparameters.py").run()
    app.number_input(key="hparams.rates").set_value(rates).run()
    assert_told(app, f"the sweep's rates must be at least 2, got {rates}" if rates < 2 else
                f"the sweep's rates must be at most 25, got {rates}")
    assert app.button(key="hparams.run").disabled
    app.number_input(key="hparams.rates").set_value(3).run()
    assert not app.button(key="hparams.run").disabled


@pytest.mark.parametrize("epochs", [0, 5000])
def test_page_overfit_epochs_out_of_range(app, epochs):
    app.switch_page("app_pages/4_overfit.py").run()
    app.number_input(key="overfit.epochs").set_value(epochs).run()
    assert_told(app, f"the overfit test's epochs must be at least 1, got {epochs}" if epochs < 1 else
                f"the overfit test's epochs must be at most 1000, got {epochs}")
    assert app.button(key="overfit.run").disabled


# ------------------------------------------------------------ NaN everywhere


@pytest.mark.slow  # full tier: every page on a NaN model; test_cli_nan_everywhere holds the finding
def test_page_nan_everywhere_names_the_origin_and_every_page_still_renders(app, nan_checkpoint):
    app.text_input(key="run.checkpoint").set_value(str(nan_checkpoint)).run()
    assert not app.exception
    app.switch_page("app_pages/2_model.py").run()
    assert_told(app, "FAIL] `model.nan_origin`")
    assert "logits are already non-finite" in page_text(app)
    app.switch_page("app_pages/3_hyperparameters.py").run()
    for key, value in (("hparams.rates", 2), ("hparams.steps", 2), ("hparams.range_steps", 5)):
        app.number_input(key=key).set_value(value).run()
    app.button(key="hparams.run").click().run()
    assert_told(app, "`hparams.lr_sweep`")
    app.switch_page("app_pages/4_overfit.py").run()
    app.number_input(key="overfit.epochs").set_value(2).run()
    app.button(key="overfit.run").click().run()
    assert_told(app, "`overfit.one_batch`")
    assert not app.success  # no verdict of "it can learn" from NaN


# ------------------------------------------------------------ the command line


def _no_config_dir(tmp_path):
    return str(tmp_path)


def _file(tmp_path, content, name="train.json"):
    path = tmp_path / name
    if content is not None:
        path.write_text(content)
    return f"train={path}"


@pytest.mark.parametrize("args, message", [
    (lambda t: ["--checkpoint", "no-such-org/no-such-model"], "Cannot load Hub checkpoint"),
    (lambda t: ["--checkpoint", "/no/such/dir"], "does not exist"),
    (lambda t: ["--checkpoint", str(t)], "has no config.json"),
    (lambda t: ["--task", "imdb"], "Unknown GLUE task 'imdb'"),
    (lambda t: ["--data-files", _file(t, None)], "does not exist"),
    (lambda t: ["--data-files", _file(t, "")], "is empty"),
    (lambda t: ["--data-files", _file(t, "premise,hypothesis,label\n", "train.csv")], "has no rows"),
    (lambda t: ["--data-files", _file(t, "\x00\x01 not json {")], "Could not read"),
    (lambda t: ["--data-files", "train.csv"], "should read SPLIT=PATH"),
    (lambda t: ["--split", "dev"], "has no split 'dev'"),
    (lambda t: ["--num-labels", "0"], "must be at least 1, got 0"),
    (lambda t: ["--num-labels", "-3"], "must be at least 1, got -3"),
    (lambda t: ["--batch-size", "0"], "must be at least 1, got 0"),
    (lambda t: ["--max-length", "0"], "must be at least 1, got 0"),
    (lambda t: ["--max-length", "1000"], "beyond this checkpoint's limit of 128 tokens"),
    (lambda t: ["--max-length", "100000"], "max length must be at most 2048, got 100000"),
    (lambda t: ["--num-labels", "10000000000"], "num_labels must be at most 100"),
    (lambda t: ["--batch-size", "100000000"], "batch size must be at most 1024"),
    (lambda t: ["--seed", "-1"], "the seed must be at least 0, got -1"),
    (lambda t: ["--seed", "99999999999"], "the seed must be at most 4294967295"),
    (lambda t: ["--learning-rate", "0"], "must be a positive number, got 0"),
    (lambda t: ["--learning-rate", "-1"], "must be a positive number, got -1"),
    (lambda t: ["--learning-rate", "fast"], "'fast' is not a number"),
    (lambda t: ["--learning-rate", "nan"], "must be a positive number, got nan"),
    (lambda t: ["--sweep-rates", "1"], "the sweep's rates must be at least 2, got 1"),
    (lambda t: ["--sweep-rates", "300"], "the sweep's rates must be at most 25, got 300"),
    (lambda t: ["--epochs", "5000"], "the overfit test's epochs must be at most 1000, got 5000"),
    (lambda t: ["--json", "/proc/nope/x.json"], "Cannot write the report to /proc/nope/x.json"),
    (lambda t: ["--markdown", str(t)], ": it is a folder."),
    (lambda t: ["--junit", str((t / "plain.txt").write_text("x") and t / "plain.txt") + "/x.xml"],
     "Cannot write the report to"),
])
def test_cli_unusable_input_exits_2_with_one_line(tmp_path, capsys, args, message):
    assert exit_code(["run", "--stages", "data,hparams,overfit", *args(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert message in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def exit_code(argv) -> int:
    """main's status, whether it returns it or argparse exits with it."""
    try:
        return main(argv)
    except SystemExit as stop:
        return stop.code


def test_cli_non_classifier_and_missing_columns_are_failing_checks_with_their_fix(tmp_path, gpt2_checkpoint):
    """Not unusable input but the bug under diagnosis: a failing check names it and its one-line fix (exit 1)."""
    report_path = tmp_path / "report.json"
    assert main(["run", "--checkpoint", str(gpt2_checkpoint), "--stages", "model", "--json", str(report_path)]) == 1
    checks = {c["id"]: c for c in json.loads(report_path.read_text())["checks"]}
    assert checks["model.config"]["status"] == "fail"
    assert "tokenizer.pad_token = tokenizer.eos_token" in checks["model.config"]["fix"]
    csv = tmp_path / "train.csv"
    pd.DataFrame({"text": ["a good film", "a bad film"] * 4, "label": [1, 0] * 4}).to_csv(csv, index=False)
    assert main(["run", "--data-files", f"train={csv}", "--sweep-rates", "2", "--sweep-steps", "2", "--range-steps",
                 "5", "--epochs", "2", "--json", str(report_path)]) == 1
    checks = {c["id"]: c for c in json.loads(report_path.read_text())["checks"]}
    assert "lacks premise, hypothesis" in checks["data.columns"]["summary"]
    assert checks["overfit.one_batch"]["status"] == "skip"  # every later stage says why it could not run


def test_cli_nan_everywhere_reports_without_a_traceback(tmp_path, nan_checkpoint, capsys):
    report_path = tmp_path / "report.json"
    code = main(["run", "--checkpoint", str(nan_checkpoint), "--sweep-rates", "2", "--sweep-steps", "2",
                 "--range-steps", "5", "--epochs", "2", "--json", str(report_path)])
    captured = capsys.readouterr()
    assert code == 1 and "Traceback" not in captured.err + captured.out
    checks = {c["id"]: c for c in json.loads(report_path.read_text())["checks"]}
    assert checks["model.nan_origin"]["status"] == "fail"
    assert checks["overfit.one_batch"]["status"] in ("fail", "error")
    for check in checks.values():  # failing verdicts keep to their declared evidence too
        assert set(check["evidence"]) <= declared_keys(check["id"]), (check["id"], set(check["evidence"]) -
                                                                       declared_keys(check["id"]))


RTE_ROWS = [("A man is eating.", "Someone eats.", 0), ("The cat sleeps.", "A dog runs.", 1)] * 6


@pytest.mark.parametrize("header, lacks", [
    ("sentence1,sentence2,gold", "label"),
    ("sentence1,text_b,label", "sentence2"),
    ("a,b,c", "sentence1, sentence2, label"),
    (None, "sentence1, sentence2, label"),  # no header row: the first data row is read as one
])
def test_cli_data_file_not_in_the_task_schema_fails_data_columns_and_skips_the_rest(tmp_path, capsys, header, lacks):
    path = tmp_path / "validation.csv"
    body = "\n".join(f'"{a}","{b}",{label}' for a, b, label in RTE_ROWS)
    path.write_text((header + "\n" if header else "") + body + "\n")
    report_path = tmp_path / "report.json"
    code = main(["run", "--task", "rte", "--data-files", f"validation={path}", "--split", "validation",
                 "--json", str(report_path)])
    captured = capsys.readouterr()
    assert code == 1 and "Traceback" not in captured.err + captured.out
    checks = {c["id"]: c for c in json.loads(report_path.read_text())["checks"]}
    columns = checks["data.columns"]
    assert columns["status"] == "fail"
    assert f"lacks {lacks}: rte needs sentence1, sentence2, label; it has:" in columns["summary"]
    later = [c for c in checks.values() if c["stage"] != "data"] + [checks["data.learnability"]]
    assert later and all(c["status"] == "skip" for c in later)
    assert all("data.columns" in c["summary"] or "No model" in c["summary"] for c in later)
