import json

from diagnostics.config.run import RunConfig
from diagnostics.report.formats import build_report, checklist_lines, markdown_report
from diagnostics.core.result import CheckResult, Status

RESULTS = [
    CheckResult("data.columns", "data", Status.PASS, "All columns exist."),
    CheckResult(
        "model.nan_rows",
        "model",
        Status.FAIL,
        "5 of 16 rows | have NaN.",
        fix="from_pretrained(..., num_labels=3)",
        evidence={"rows": [{"index": 1, "loss": float("nan")}]},
    ),
    CheckResult("hparams.optimizer", "hparams", Status.WARN, "adam means 0.001."),
]


def test_report_is_json_with_run_environment_and_checks():
    report = build_report(RunConfig(num_labels=2), RESULTS)
    assert json.loads(json.dumps(report))["run"]["num_labels"] == 2
    assert report["counts"] == {"pass": 1, "warn": 1, "fail": 1, "error": 0, "skip": 0, "explained": 0}
    assert [cause["owner"] for cause in report["causes"]] == ["model.nan_rows", "hparams.optimizer"]
    assert report["checks"][1]["evidence"]["rows"][0]["loss"] is None


def test_checklist_and_markdown_put_failures_first():
    assert checklist_lines(RESULTS)[0].startswith("FAIL  model.nan_rows")
    markdown = markdown_report(build_report(RunConfig(), RESULTS))
    table = [line for line in markdown.splitlines() if line.startswith("| ")]
    assert table[1].startswith("| FAIL | `model.nan_rows`") and "\\|" in table[1]
    assert "from_pretrained(..., num_labels=3)" in markdown
    # The run's training settings, as compile was given them (the string "adam"'s rate is Keras's, not shown).
    assert "- Training setup: Loss: `internal`, Optimizer: `Adam`, Learning rate: 5e-05" in markdown
    adam = markdown_report(build_report(RunConfig(optimizer="adam", loss="sparse_categorical_crossentropy"), RESULTS))
    assert "- Training setup: Loss: `sparse_categorical_crossentropy`, Optimizer: `adam`\n" in adam


def test_a_fix_that_is_code_is_shown_as_code_and_a_sentence_as_a_sentence():
    from diagnostics.report.formats import fix_is_code

    for code in ("model.compile(optimizer=optimizer)  # no loss", "tokenizer.pad_token = tokenizer.eos_token",
                 "to_tf_dataset(..., shuffle=True)", "pip install datasets",
                 "TFAutoModelForSequenceClassification.from_pretrained(checkpoint, num_labels=3)"):
        assert fix_is_code(code), code
    for prose in ("See model.nan_rows and model.config for the cause.", "Halve the batch size or shorten max_length.",
                  "Lower the learning rate (e.g. Adam(5e-5)) and fix non-finite losses (model.nan_rows)."):
        assert not fix_is_code(prose), prose
