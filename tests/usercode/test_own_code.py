"""The checks on a user's own code: `diagnose()` on real objects, the Keras callback in a real `fit`, and
`python -m diagnostics trace` on the course's scripts under the demo kit (child processes, real training steps)."""

import json
import math

import numpy as np
import pytest

from conftest import ROOT, make_split
from diagnostics.__main__ import main
from diagnostics.usercode.hooks import watch
from diagnostics.core.result import Status
from diagnostics.usercode.course_scripts import COURSE_SCRIPTS

SCRIPTS = ROOT / "diagnostics" / "demo_data" / "scripts"


def classifier(checkpoint, num_labels):
    from transformers import TFAutoModelForSequenceClassification

    return TFAutoModelForSequenceClassification.from_pretrained(str(checkpoint), num_labels=num_labels)


def weights_of(model):
    return [np.array(w.numpy()) for w in model.weights]


def features_labels(split, tokenizer, batch_size=4):
    """A Keras `(features, labels)` dataset made by hand, with no to_tf_dataset call behind it."""
    import tensorflow as tf
    from transformers import DataCollatorWithPadding

    encoded = tokenizer(list(split["premise"]), list(split["hypothesis"]), truncation=True)
    padded = DataCollatorWithPadding(tokenizer, return_tensors="np")(
        [{key: encoded[key][i] for key in encoded} for i in range(len(split))])
    return tf.data.Dataset.from_tensor_slices((dict(padded), np.asarray(list(split["label"])))).batch(batch_size)


# ---------------------------------------------------------------- diagnose()


@pytest.mark.stack
def test_diagnose_a_compiled_model_on_a_features_labels_dataset(bert_checkpoint, bert_tokenizer, mnli_split):
    import tf_keras

    from diagnostics import diagnose

    model = classifier(bert_checkpoint, 3)
    model.compile(optimizer=tf_keras.optimizers.Adam(learning_rate=3e-5),
                  loss=tf_keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    before = weights_of(model)
    report = diagnose(model, features_labels(mnli_split, bert_tokenizer), bert_tokenizer, stages="data,model")
    assert report.failed == [], repr(report)
    config = report.config
    assert (config.labels_in, config.loss, config.optimizer, config.learning_rate, config.num_labels) == (
        "separate", "SparseCategoricalCrossentropy(from_logits=True)", "Adam", pytest.approx(3e-5), 3)
    assert config.task == "mnli" and any("found from its rows" in note for note in report.notes)
    assert report["data.label_range"].evidence  # the split read back: its 12 labels counted
    assert "12" in report["data.label_range"].summary
    assert all(
        np.array_equal(a, b) for a, b in zip(before, weights_of(model), strict=True)
    )  # the user's model is untouched
    parsed = json.loads(report.to_json())
    assert {check["id"] for check in parsed["checks"]} >= {"data.columns", "model.nan_rows"}
    assert "| PASS | `data.columns` |" in report.to_markdown()
    html = report._repr_html_()
    assert "<table>" in html and "data.decoded_samples" in html and "the cat sat" in html
    assert "<code></code>" not in html  # no empty fix box where a check has no fix
    # The checks' charts as the pages draw them, Plotly's script inline once (no CDN: a notebook may be offline).
    import plotly.graph_objects as go

    assert isinstance(report.figure("model.nan_rows"), go.Figure) and isinstance(report.figure("model.gradients"),
                                                                                  go.Figure)
    assert html.count("* plotly.js v") == 1 and "<script src=" not in html
    charts = sum(figures_count(report, result.id) for result in report.results)
    assert charts >= 3 and html.count("class=\"plotly-graph-div\"") == charts
    with pytest.raises(KeyError):
        report.figure("data.columns")
    assert repr(report).startswith("Report on ")


def figures_count(report, check_id: str) -> int:
    from diagnostics.report.plots import figures_of

    return len(figures_of(report[check_id]))


def test_diagnose_flags_a_loss_that_reads_logits_as_probabilities(bert_checkpoint, bert_tokenizer, mnli_split):
    import tf_keras

    from diagnostics import diagnose

    # The new head seeded: the initial loss tells a probability reading of logits only when some row's logits are
    # positive (rows of all-negative logits clip to the uniform ln K); hparams.loss's probe does not depend on it.
    tf_keras.utils.set_random_seed(0)
    model = classifier(bert_checkpoint, 3)
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    report = diagnose(model, features_labels(mnli_split, bert_tokenizer), bert_tokenizer, stages=["model"])
    assert report["model.initial_loss"].status in (Status.WARN, Status.FAIL)
    assert "from_logits=False" in report["model.initial_loss"].summary
    assert report.config.loss == "sparse_categorical_crossentropy"


@pytest.mark.stack
def test_diagnose_batches_the_users_own_to_tf_dataset_call(bert_checkpoint, bert_tokenizer, mnli_split):
    from transformers import DataCollatorWithPadding

    from diagnostics import diagnose

    tokenized = mnli_split.map(lambda rows: bert_tokenizer(rows["premise"], rows["hypothesis"]), batched=True)
    with watch():  # the user's own to_tf_dataset call, remembered
        dataset = tokenized.to_tf_dataset(columns=["input_ids", "attention_mask", "label"], batch_size=4,
                                          shuffle=True, collate_fn=DataCollatorWithPadding(bert_tokenizer,
                                                                                           return_tensors="np"))
    model = classifier(bert_checkpoint, 2)  # the course's bug: two labels on MNLI's three
    model.compile(optimizer="adam")
    report = diagnose(model, dataset, bert_tokenizer, stages="data")
    assert report.config.recipe.columns == ("input_ids", "attention_mask", "label")
    assert (report.config.batch_size, report.config.shuffle) == (4, True)
    assert report["data.label_range"].status is Status.FAIL
    assert "num_labels=2" in report["data.label_range"].summary
    assert report["data.columns"].status is Status.WARN  # BERT's token_type_ids left out of columns=
    assert "token_type_ids" in report["data.columns"].summary
    assert [r.id for r in report.failed] == ["data.label_range"]


@pytest.mark.parametrize("arguments, cut_at, source", [
    ({"truncation": True, "max_length": 9}, 9, "call"),  # the call's own length, whether or not a row reaches it
    ({"truncation": True, "max_length": 400}, 400, "call"),
    ({"max_length": 9}, 9, "call"),  # Transformers truncates at max_length without truncation=True too
    ({"truncation": True}, 512, "model"),  # the tokenizer's maximum
    ({}, None, "none"),  # no truncation: the longest row stands for the length
])
def test_truncation_is_measured_at_the_length_the_users_tokenizer_call_gives(bert_checkpoint, bert_tokenizer,
                                                                              mnli_split, arguments, cut_at, source):
    from transformers import DataCollatorWithPadding

    from diagnostics import diagnose

    bert_tokenizer.model_max_length = 512
    with watch():  # the user's own tokenization and to_tf_dataset call, remembered
        tokenized = mnli_split.map(lambda rows: bert_tokenizer(rows["premise"], rows["hypothesis"], **arguments),
                                   batched=True)
        dataset = tokenized.to_tf_dataset(columns=["input_ids", "attention_mask", "label"], batch_size=4,
                                          collate_fn=DataCollatorWithPadding(bert_tokenizer, return_tensors="np"))
    report = diagnose(classifier(bert_checkpoint, 3), dataset, bert_tokenizer, stages="data")
    truncation = report["data.truncation"]
    assert truncation.evidence["scope"] == "split" and truncation.evidence["cut_source"] == source
    longest = max(len(ids) for ids in tokenized["input_ids"])
    assert truncation.evidence["max_length"] == (cut_at or longest) and report.config.truncation == source
    full = [len(bert_tokenizer(row["premise"], row["hypothesis"])["input_ids"]) for row in mnli_split]
    assert truncation.evidence["truncated_rows"] == sum(length > (cut_at or 10**6) for length in full)
    if source == "call":
        assert f"truncates at max_length={cut_at} (your tokenizer call's)" in truncation.summary


def test_diagnose_says_what_it_cannot_judge(bert_checkpoint, bert_tokenizer, mnli_split):
    """What no check can run on is refused in one line: a loss for each of several outputs (a dict of two), and a Keras
    model of the user's own with no loss (only a Transformers model computes one). Any optimizer, any loss function,
    any schedule, a loss per output of a model with one is taken (tests/usercode/test_taken_as_built.py)."""
    import tf_keras

    from diagnostics import diagnose
    from diagnostics.core.errors import InputError

    data = features_labels(mnli_split, bert_tokenizer)
    model = classifier(bert_checkpoint, 3)
    model.compile(optimizer="sgd", loss={"logits": "mse", "hidden_states": "mse"})
    with pytest.raises(InputError, match="is not a loss the debugger can judge"):
        diagnose(model, data, bert_tokenizer)
    own = tf_keras.Sequential([tf_keras.layers.Embedding(64, 4), tf_keras.layers.GlobalAveragePooling1D(),
                               tf_keras.layers.Dense(3)])
    own.compile(optimizer="sgd")
    with pytest.raises(InputError, match="has no loss of its own"):
        diagnose(own, data.map(lambda x, y: (x["input_ids"], y)), bert_tokenizer)


# ---------------------------------------------------------------- DiagnoseCallback


def fit_stsb_with_callback(checkpoint, tokenizer, scores, batch_size, epochs):
    """The tiny BERT as an STS-B regressor, fitted at 1e-4 on rows with these scores, watched by the callback."""
    import tf_keras
    from transformers import DataCollatorWithPadding

    from diagnostics import DiagnoseCallback

    split = make_split("stsb", [(f"the cat sat {i}", "the dog ran", score) for i, score in enumerate(scores)])
    tokenized = split.map(lambda rows: tokenizer(rows["sentence1"], rows["sentence2"]), batched=True)
    with watch():
        dataset = tokenized.to_tf_dataset(columns=["input_ids", "attention_mask", "label"], batch_size=batch_size,
                                          collate_fn=DataCollatorWithPadding(tokenizer, return_tensors="np"))
    model = classifier(checkpoint, 1)
    model.compile(optimizer=tf_keras.optimizers.Adam(learning_rate=1e-4))
    callback = DiagnoseCallback(tokenizer=tokenizer, task="stsb", quick=False)
    history = model.fit(dataset, epochs=epochs, callbacks=[callback], verbose=0)
    return model, callback, history


@pytest.mark.stack
def test_callback_stops_at_the_first_nan_batch_and_names_its_rows(bert_checkpoint, bert_tokenizer):
    scores = [1.0, 2.5, 4.0, 0.5, 3.0, math.nan, math.nan, 2.0, 1.5, 1.0, 3.5, 4.5]
    model, callback, history = fit_stsb_with_callback(bert_checkpoint, bert_tokenizer, scores, 4, 3)
    assert len(history.history["loss"]) == 1  # stopped in the first epoch
    assert callback.nan_report is not None and callback.nan_report.extra["nan_step"] == 2
    rows = callback.nan_report["model.nan_rows"]
    assert rows.status is Status.FAIL and "missing (NaN) score" in rows.summary
    assert [row["position"] for row in rows.evidence["rows"]] == [1, 2]  # rows 5 and 6 of the split
    assert all(math.isfinite(loss) for loss in callback.losses[:1])
    assert "train_step" not in model.__dict__  # the watch is taken off after training


def demo_mnli_dataset(demo_inputs, batch_size=16):
    """The kit's MNLI rows through the user's own to_tf_dataset call, shuffled (by the seed set before)."""
    from transformers import DataCollatorWithPadding

    tokenizer, split = demo_inputs
    tokenized = split.map(lambda rows: tokenizer(rows["premise"], rows["hypothesis"]), batched=True)
    with watch():
        return tokenized.to_tf_dataset(columns=["input_ids", "attention_mask", "label"], batch_size=batch_size,
                                       shuffle=True, collate_fn=DataCollatorWithPadding(tokenizer,
                                                                                        return_tensors="np"))


def demo_classifier(rate):
    import tf_keras

    from diagnostics.keras.loading import demo_checkpoint_dir

    model = classifier(demo_checkpoint_dir(), 3)
    model.compile(optimizer=tf_keras.optimizers.Adam(learning_rate=rate))
    return model


def diverging_fit(demo_inputs, strict):
    """The kit's classifier fitted at a rate of 1.0 under the callback: (the callback, Keras's history)."""
    from diagnostics import DiagnoseCallback

    # Adam moves every weight by about the rate each step: at 1.0 the kit's weights grow without bound while
    # float32 never overflows, so the loss stays finite (a NaN-only watch, like TerminateOnNaN, sees nothing).
    model = demo_classifier(1.0)
    callback = DiagnoseCallback(tokenizer=demo_inputs[0], quick=False, strict=strict)
    history = model.fit(demo_mnli_dataset(demo_inputs), epochs=2, callbacks=[callback], verbose=0)
    assert "train_step" not in model.__dict__
    return callback, history


@pytest.mark.slow  # full tier: trains to reach the condition; test_model.py judges the same evidence
def test_callback_catches_a_run_that_diverges_with_a_finite_loss(demo_inputs, seed, capsys):
    callback, history = diverging_fit(demo_inputs, strict=False)
    assert all(math.isfinite(loss) for loss in callback.losses) and callback.nan_report is None
    result = callback.divergence_report["model.divergence"]
    assert result.status is Status.FAIL and "the weights diverged" in result.summary
    assert "the learning rate 1 is too high" in result.summary
    assert "learning_rate=3e-03" in result.fix  # the kit's own rate, not a pretrained checkpoint's 5e-5
    evidence = result.evidence
    step = callback.divergence_report.extra["divergence_step"]
    assert evidence["steps"] == step and len(evidence["losses"]) == step == len(evidence["weight_norms"]) - 1
    assert evidence["seen"]["recent"] > 4 * evidence["losses"][0] and evidence["weights_moved"] > 1
    assert evidence["rows_loss_at_start"] < evidence["seen"]["limit"] < evidence["rows_loss_now"]
    assert {"decoded", "label_name", "loss_at_start", "loss_now"} <= set(evidence["rows"][0])
    assert len(history.history["loss"]) == 2 and "training goes on" in capsys.readouterr().out


def test_a_strict_callback_stops_the_fit_where_it_diverged(demo_inputs, capsys):
    # What is found is the test above's, under each seed; strict only ends the fit there (8 steps an epoch, seen by
    # step 8), so one seed shows it.
    import tf_keras

    tf_keras.utils.set_random_seed(0)
    callback, history = diverging_fit(demo_inputs, strict=True)
    assert callback.divergence_report["model.divergence"].status is Status.FAIL
    assert len(history.history["loss"]) == 1 and "training goes on" not in capsys.readouterr().out


def test_callback_tells_weights_that_turned_nan_from_bad_rows(demo_inputs):
    import tf_keras

    from diagnostics import DiagnoseCallback

    # An infinite rate makes the first step's update infinite, so the second step's loss is NaN by construction
    # (under any seed: one is enough).
    tf_keras.utils.set_random_seed(0)
    model = demo_classifier(math.inf)
    callback = DiagnoseCallback(tokenizer=demo_inputs[0], quick=False)
    model.fit(demo_mnli_dataset(demo_inputs), epochs=2, callbacks=[callback], verbose=0)
    assert callback.nan_report.extra["nan_step"] == 2
    result = callback.nan_report["model.nan_rows"]
    assert result.status is Status.FAIL and "the weights diverged" in result.summary
    assert "learning rate inf" in result.summary and "learning_rate=3e-03" in result.fix
    assert result.evidence["weights_now_non_finite"] and result.evidence["curve"][0] == pytest.approx(math.log(3), 0.1)


@pytest.mark.slow  # full tier: trains to reach the condition; test_model.py judges the same evidence
def test_callback_blames_rows_whose_loss_is_high_from_the_start(bert_checkpoint, bert_tokenizer, seed):
    # STS-B scores on two scales: the first rows 0..5, the rest written as percentages. The loss rises from the
    # third step on because of the rows, whatever the weights do.
    scores = [1.0, 2.5, 4.0, 0.5] + [60.0, 85.0, 70.0, 95.0, 80.0, 65.0, 90.0, 75.0]
    _, callback, _ = fit_stsb_with_callback(bert_checkpoint, bert_tokenizer, scores, 2, 2)
    result = callback.divergence_report["model.divergence"]
    assert result.status is Status.FAIL and "these rows, not the training" in result.summary
    assert "Drop or fix the rows" in result.fix
    assert all(row["label"] >= 60 for row in result.evidence["rows"])


@pytest.mark.slow  # full tier: trains four epochs under three seeds; test_model.py judges a falling loss
@pytest.mark.stack
def test_callback_stays_quiet_on_a_healthy_run(demo_inputs, seed, capsys):
    from diagnostics import DiagnoseCallback

    model = demo_classifier(3e-3)
    callback = DiagnoseCallback(tokenizer=demo_inputs[0], quick=False)
    model.fit(demo_mnli_dataset(demo_inputs), epochs=4, callbacks=[callback], verbose=0)
    assert callback.divergence_report is None and callback.nan_report is None
    assert callback.losses[-1] < callback.losses[0]  # it learned
    assert "DiagnoseCallback" not in capsys.readouterr().out


def test_callback_checks_before_the_first_step_and_strict_raises(bert_checkpoint, bert_tokenizer, mnli_split, capsys):
    from transformers import DataCollatorWithPadding

    from diagnostics import DiagnoseCallback, PipelineError

    tokenized = mnli_split.map(lambda rows: bert_tokenizer(rows["premise"], rows["hypothesis"]), batched=True)
    with watch():
        dataset = tokenized.to_tf_dataset(columns=["input_ids", "attention_mask", "label"], batch_size=4,
                                          collate_fn=DataCollatorWithPadding(bert_tokenizer, return_tensors="np"))
    model = classifier(bert_checkpoint, 2)
    model.compile(optimizer="adam")
    before = weights_of(model)
    with pytest.raises(PipelineError, match="model.config") as raised:
        model.fit(dataset, epochs=1, callbacks=[DiagnoseCallback(strict=True)], verbose=0)
    out = capsys.readouterr().out
    assert "before the first step: " in out and "explains: data.label_range" in out  # the head's cause, named once
    assert "data.label_range" not in [result.id for result in raised.value.report.failed]
    assert all(np.array_equal(a, b) for a, b in zip(before, weights_of(model), strict=True))  # no step was taken


# ---------------------------------------------------------------- trace


def trace(tmp_path, script, *args, script_args=()):
    report = tmp_path / "report.json"
    junit = tmp_path / "report.xml"
    code = main(["trace", str(script), "--json", str(report), "--junit", str(junit), *args, "--", *script_args])
    return code, (json.loads(report.read_text()) if report.is_file() else None), junit


def statuses(report):
    return {check["id"]: check["status"] for check in report["checks"]}


@pytest.mark.subprocess
def test_trace_the_course_script_diagnoses_the_error_before_fit(tmp_path, capsys):
    code, report, junit = trace(tmp_path, SCRIPTS / "course_script.py")
    assert code == 1
    error = report["script"]["error"]
    line = next(number for number, text in enumerate((SCRIPTS / "course_script.py").read_text().splitlines(), 1)
                if text.startswith("train_dataset = "))
    assert error["kind"] == "columns" and error["where"] == f"course_script.py:{line}"
    assert "to_tf_dataset(" in error["code"] and "Column labels not found" in error["finding"]
    assert "DataCollatorWithPadding" in error["fix"] and "'label'" in error["fix"]
    columns = next(check for check in report["checks"] if check["id"] == "data.columns")
    assert columns["status"] == "fail"
    assert "labels" in columns["summary"] and "premise, hypothesis, label" in columns["summary"]
    assert statuses(report)["model.config"] == "skip"
    assert all(statuses(report)[check] == "fail" for check in COURSE_SCRIPTS["course_script"].flagged)
    assert "script.reaches_fit" in junit.read_text()
    assert f"stopped before fit at course_script.py:{line}" in capsys.readouterr().out


@pytest.mark.slow  # full tier: a whole trace of every stage
@pytest.mark.stack
@pytest.mark.subprocess
def test_trace_the_repaired_course_script_flags_each_remaining_bug(tmp_path):
    code, report, _ = trace(tmp_path, SCRIPTS / "course_script_repaired.py")
    assert code == 1
    assert report["script"]["reached_fit"] and report["script"]["fit_at"].startswith("course_script_repaired.py:")
    found = statuses(report)
    causes = {cause["owner"]: cause["status"] for cause in report["causes"]}
    # num_labels=2 on MNLI's three labels (the head's cause: the rows labelled 2 point at it), the string loss that
    # reads logits as probabilities, and the string "adam": each named once, by its owner.
    assert causes == {"model.config": "fail", "hparams.loss": "fail", "hparams.optimizer": "warn"}
    assert set(causes) == set(COURSE_SCRIPTS["course_script_repaired"].flagged)
    by_id = {check["id"]: check for check in report["checks"]}
    assert by_id["data.label_range"]["explained_by"] == "model.config"
    assert found["data.columns"] == "pass"
    assert report["run"]["recipe"]["collate_fn"] == "DataCollatorWithPadding"


@pytest.mark.slow  # full tier: a whole trace of every stage
@pytest.mark.stack
@pytest.mark.subprocess
def test_trace_the_fixed_course_script_has_no_failing_check(tmp_path, capsys):
    import re

    code, report, _ = trace(tmp_path, SCRIPTS / "course_script_fixed.py")
    failing = {check["id"]: check["summary"] for check in report["checks"] if check["status"] in ("fail", "error")}
    assert failing == {} and code == 0 and COURSE_SCRIPTS["course_script_fixed"].flagged == ()
    assert statuses(report)["overfit.one_batch"] == "pass"
    # Its progress says how far the checks are and, once their pace is known, how long they have left.
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("[trace] ")]
    assert any(re.search(r"\(\d+%, about \d+ (s|min) left\)$", line) for line in lines), lines[-10:]
    # Once they are done, the script's own fit runs its few steps (Keras first builds the script's train step): said,
    # so that wait is not read as the checks' last line at 100%.
    done = [index for index, line in enumerate(lines) if "Checks done: the script's fit runs 2 steps" in line]
    assert done and all("%" not in line for line in lines[done[0]:]), lines[-10:]


@pytest.mark.slow  # full tier: waits out a script
@pytest.mark.subprocess
def test_trace_ends_a_script_that_never_reaches_fit(tmp_path, capsys):
    script = tmp_path / "loop.py"
    script.write_text("import time\nwhile True:\n    time.sleep(0.1)\n")
    code, report, _ = trace(tmp_path, script, "--timeout", "8")
    assert code == 2 and report is None
    err = capsys.readouterr().err
    assert "loop.py was stopped after 8 s before reaching fit" in err and "longer time limit (--timeout)" in err


# full tier: a child trace; test_foreign_code.py's stray label holds a data finding in the default tier
@pytest.mark.slow
@pytest.mark.subprocess
def test_trace_a_missing_data_file_is_a_clear_finding(tmp_path):
    script = tmp_path / "train.py"
    script.write_text("from datasets import load_dataset\n\nraw = load_dataset('json', "
                      "data_files='no-such-file.jsonl')\n")
    code, report, _ = trace(tmp_path, script)
    assert code == 1
    error = report["script"]["error"]
    assert error["kind"] == "file" and error["where"] == "train.py:3"
    assert "no-such-file.jsonl" in error["finding"]


@pytest.mark.subprocess
def test_trace_refuses_a_script_that_is_not_there(tmp_path, capsys):
    code, report, _ = trace(tmp_path, tmp_path / "absent.py")
    assert code == 2 and report is None
    assert "No script at" in capsys.readouterr().err


@pytest.mark.subprocess
def test_trace_runs_in_a_child_so_the_caller_keeps_its_fit():
    import tf_keras

    assert tf_keras.Model.fit.__module__.startswith("tf_keras")  # intercepted in the child process only


@pytest.mark.slow  # full tier: a trace and an app walk of every stage
@pytest.mark.subprocess
def test_trace_gives_the_findings_the_app_gives_for_the_same_pipeline(tmp_path):
    """The repaired course script and the same pipeline set in the app's terms (the command line's run)."""
    code, traced, _ = trace(tmp_path, SCRIPTS / "course_script_repaired.py", "--stages", "data,model,hparams")
    report = tmp_path / "app.json"
    main(["run", "--checkpoint", "demo", "--task", "mnli", "--data-source", "demo", "--num-labels", "2",
          "--columns", "input_ids,attention_mask,label", "--batch-size", "16", "--loss",
          "sparse_categorical_crossentropy", "--optimizer", "adam", "--stages", "data,model,hparams",
          "--json", str(report)])
    app = statuses(json.loads(report.read_text()))
    traced = statuses(traced)
    # model.initial_loss measures the fresh head's own start, which the script's unseeded from_pretrained draws
    # anew each run; every other finding must be the app's.
    assert {k: v for k, v in traced.items() if k != "model.initial_loss"} == \
        {k: v for k, v in app.items() if k != "model.initial_loss"}


@pytest.mark.slow  # full tier: a whole trace
@pytest.mark.subprocess
def test_trace_leaves_out_the_checks_given_to_skip_as_run_does(tmp_path, capsys):
    code, report, _ = trace(tmp_path, SCRIPTS / "course_script_fixed.py", "--stages", "data", "--skip",
                            "data.learnability")
    assert code == 0 and report["script"]["reached_fit"]
    ids = set(statuses(report))
    assert "data.learnability" not in ids and {"data.columns", "data.label_range", "data.duplicates"} <= ids
    # A name it does not know is refused before the script runs, as run refuses it.
    (tmp_path / "refused").mkdir()
    code, report, _ = trace(tmp_path / "refused", SCRIPTS / "course_script_fixed.py", "--skip", "data.vibes")
    assert code == 2 and report is None
    assert "Unknown check(s) data.vibes to skip" in capsys.readouterr().err


@pytest.mark.slow  # full tier: trains the script after its trace
@pytest.mark.subprocess
def test_trace_then_train_lets_fit_go_on_after_the_checks(tmp_path, capsys):
    code, report, _ = trace(tmp_path, SCRIPTS / "course_script_fixed.py", "--stages", "data", "--then-train")
    assert code == 0 and report["script"]["reached_fit"]
    assert "training goes on (--then-train)" in capsys.readouterr().out


def test_a_fit_after_the_checks_runs_its_few_steps_eagerly_and_leaves_the_models_setting_as_it_was(tmp_path):
    import tensorflow as tf
    import tf_keras

    from diagnostics.usercode.trace_child import _Child
    from diagnostics.usercode.trace_report import BRIEF_STEPS

    seen = []

    class Recording(tf_keras.Model):
        def train_step(self, data):
            seen.append(tf.executing_eagerly())
            return super().train_step(data)

    inputs = tf_keras.Input((4,))
    model = Recording(inputs, tf_keras.layers.Dense(2)(inputs))
    model.compile(optimizer="adam", loss=tf_keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  run_eagerly=False)
    before = [weight.copy() for weight in model.get_weights()]
    progress = tmp_path / "progress.jsonl"
    child = _Child({"script": str(tmp_path / "train.py"), "progress": str(progress)})
    x, y = np.ones((64, 4), np.float32), np.zeros(64, np.int64)
    history = child.brief(tf_keras.Model.fit, model, (x, y), {"batch_size": 8, "epochs": 5, "verbose": 0}, "fit")
    assert len(history.history["loss"]) == 1 and seen == [True] * BRIEF_STEPS  # one epoch of two eager steps
    assert any((a != b).any() for a, b in zip(before, model.get_weights(), strict=True))
    assert model.run_eagerly is False  # as the script compiled it
    said = json.loads(progress.read_text())
    assert said["params"] == {"method": "fit", "steps": BRIEF_STEPS} and said["template"].startswith("Checks done")


@pytest.mark.parametrize("given, rows_per_batch", [({}, 32), ({"steps_per_epoch": 4}, 25), ({"batch_size": 10}, 10)])
def test_a_brief_fit_on_arrays_batches_them_as_the_scripts_own_call_would(tmp_path, given, rows_per_batch):
    # Two steps of arrays with no batch size made Keras cut the rows in two: batches of 350 rows of the docs recipe
    # (9 GB on a six-layer encoder, where the script's own fit uses 32 rows a batch and 2 GB).
    import tensorflow as tf
    import tf_keras

    from diagnostics.usercode.trace_child import _Child

    sizes = []

    class Recording(tf_keras.Model):
        def train_step(self, data):
            sizes.append(int(tf.shape(data[0]["ids"])[0]))
            return super().train_step(data)

    inputs = tf_keras.Input((4,), name="ids")
    model = Recording({"ids": inputs}, tf_keras.layers.Dense(2)(inputs))
    model.compile(optimizer="adam", loss=tf_keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    child = _Child({"script": str(tmp_path / "train.py"), "progress": str(tmp_path / "progress.jsonl")})
    x, y = {"ids": np.ones((100, 4), np.float32)}, np.zeros(100, np.int64)
    child.brief(tf_keras.Model.fit, model, (x, y), {"epochs": 3, "verbose": 0, **given}, "fit")
    assert sizes == [rows_per_batch] * 2


def test_diagnose_an_uncompiled_model_says_what_it_assumed(bert_checkpoint, bert_tokenizer, mnli_split):
    from diagnostics import diagnose

    model = classifier(bert_checkpoint, 3)
    report = diagnose(model, features_labels(mnli_split, bert_tokenizer), bert_tokenizer, task="mnli",
                      stages="model")
    assert any("not compiled" in note and "Adam(5e-05)" in note for note in report.notes)
    assert (report.config.loss, report.config.optimizer, report.config.learning_rate) == ("internal", "Adam", 5e-5)
    assert not any("found from" in note for note in report.notes)  # the task was given
    assert report["model.gradients"].status.value == "pass"


@pytest.mark.subprocess
def test_trace_is_refused_by_the_library_in_hosted_mode(tmp_path, monkeypatch, capsys):
    marker = tmp_path / "ran.txt"
    script = tmp_path / "train.py"
    script.write_text(f"open({str(marker)!r}, 'w').write('ran')\n")
    monkeypatch.setenv("DEBUGGER_HOSTED", "1")
    code, report, _ = trace(tmp_path, script)
    assert code == 2 and report is None and not marker.exists()
    assert "Hosted mode never runs code" in capsys.readouterr().err


@pytest.mark.subprocess
@pytest.mark.parametrize("timeout", ["nan", "-1", "0", "inf"])
def test_trace_time_limit_must_be_a_positive_number(tmp_path, capsys, timeout):
    script = tmp_path / "train.py"
    script.write_text("print('never')\n")
    code, report, _ = trace(tmp_path, script, "--timeout", timeout)
    assert code == 2 and report is None
    assert "positive number of seconds" in capsys.readouterr().err


@pytest.mark.subprocess
def test_trace_a_report_cut_short_reads_as_none(tmp_path):
    from diagnostics.usercode.trace import _read_report

    whole = tmp_path / "report.json"
    whole.write_text(json.dumps({"checks": [], "script": {"reached_fit": True}}))
    cut = tmp_path / "cut.json"
    cut.write_text(whole.read_text()[:20])
    assert _read_report(whole)["script"]["reached_fit"] and _read_report(cut) is None
    assert _read_report(tmp_path / "absent.json") is None


# ---------------------------------------------------------------- the trace's processes

FAMILY_SCRIPT = """
import os, subprocess, sys, time
sleeper = [sys.executable, "-c", "import time; time.sleep(300)"]
same = subprocess.Popen(sleeper)                               # in the child's process group
apart = subprocess.Popen(sleeper, start_new_session=True)      # a session of its own
open({pids!r}, "w").write(f"{{same.pid}} {{apart.pid}}")
{then}
"""


def gone(pid: int) -> bool:
    import psutil

    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def family_script(tmp_path, then: str):
    pids = tmp_path / "pids.txt"
    script = tmp_path / "family.py"
    script.write_text(FAMILY_SCRIPT.format(pids=str(pids), then=then))
    return script, pids


# The timeout covers the traced child's start too (importing TensorFlow and Transformers: 3 s alone, 6 to 8 s on a
# machine busy with the rest of the suite), so it leaves room for the script to spawn its family first.
@pytest.mark.subprocess
@pytest.mark.parametrize("then, timeout", [("sys.exit(0)", 120),
                                            pytest.param("time.sleep(600)", 20, marks=pytest.mark.slow)],
                         ids=["normal-exit", "timeout"])  # the timeout's wait is the full tier's
def test_trace_leaves_no_process_behind(tmp_path, then, timeout):
    import time

    from diagnostics.usercode.trace import trace_script

    script, pids = family_script(tmp_path, then)
    outcome = trace_script(script, timeout=timeout, capture_output=True)
    assert outcome.report is None or not outcome.report["script"]["reached_fit"]
    same, apart = map(int, pids.read_text().split())
    deadline = time.time() + 10
    while not (gone(same) and gone(apart)) and time.time() < deadline:
        time.sleep(0.2)
    assert gone(same) and gone(apart)


DETACHING_SCRIPT = """
import os, subprocess, sys
# A daemon that leaves every mark a sweep could find: a session of its own, an empty environment (no trace token),
# a double fork; then the traced process itself ends with os._exit, so it cannot end what it left behind.
subprocess.Popen(["/usr/bin/env", "-i", sys.executable, "-c",
                  "import os, time\\nif os.fork(): os._exit(0)\\nos.setsid()\\n"
                  "open({pid!r}, 'w').write(str(os.getpid()))\\ntime.sleep(300)"], start_new_session=True).wait()
while not os.path.exists({pid!r}):
    pass
os._exit(0)
"""


@pytest.mark.slow  # full tier: waits on a child's family
@pytest.mark.subprocess
def test_trace_ends_a_daemon_that_cleared_its_environment_and_left_while_the_script_os_exits(tmp_path):
    """Such a daemon outlived the trace: it carried no token for the sweep, and its parents were gone."""
    import time

    from diagnostics.usercode.trace import trace_script

    pid_file = tmp_path / "daemon.txt"
    script = tmp_path / "detach.py"
    script.write_text(DETACHING_SCRIPT.format(pid=str(pid_file)))
    trace_script(script, timeout=120, capture_output=True)
    daemon = int(pid_file.read_text())
    deadline = time.time() + 10
    while not gone(daemon) and time.time() < deadline:
        time.sleep(0.2)
    alive = not gone(daemon)
    if alive:
        __import__("os").kill(daemon, 9)
    assert not alive, "the daemon outlived the trace"


@pytest.mark.slow  # full tier: waits on a child's family
@pytest.mark.subprocess
def test_trace_interrupted_by_its_caller_leaves_no_process_behind(tmp_path):
    import time

    from diagnostics.usercode.trace import trace_script

    script, pids = family_script(tmp_path, "time.sleep(600)")

    def interrupt(line):
        deadline = time.time() + 60
        while not pids.is_file() and time.time() < deadline:
            time.sleep(0.2)
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        trace_script(script, timeout=120, capture_output=True, progress=interrupt)
    same, apart = map(int, pids.read_text().split())
    time.sleep(1)
    assert gone(same) and gone(apart)


# ---------------------------------------------------------------- hooks only when asked

UNTOUCHED = """
import datasets, tf_keras, transformers
before = {name: owner.__dict__.get(attr) for name, (owner, attr) in {
    "to_tf_dataset": (datasets.Dataset, "to_tf_dataset"), "fit": (tf_keras.Model, "fit"),
    "compile": (tf_keras.Model, "compile"), "train_step": (tf_keras.Model, "train_step"),
    "tf_train_step": (transformers.TFPreTrainedModel, "train_step")}.items()}
import diagnostics, diagnostics.usercode.api, diagnostics.walk.stages
import diagnostics.usercode.trace, diagnostics.usercode.hooks
from diagnostics import DiagnoseCallback, diagnose, watch
after = {name: owner.__dict__.get(attr) for name, (owner, attr) in {
    "to_tf_dataset": (datasets.Dataset, "to_tf_dataset"), "fit": (tf_keras.Model, "fit"),
    "compile": (tf_keras.Model, "compile"), "train_step": (tf_keras.Model, "train_step"),
    "tf_train_step": (transformers.TFPreTrainedModel, "train_step")}.items()}
print(sorted(name for name in before if before[name] is not after[name]))
"""


def test_importing_the_package_changes_no_library():
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", UNTOUCHED], cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={**__import__("os").environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "[]"


def test_watch_remembers_to_tf_datasets_made_inside_it_and_puts_the_method_back(bert_tokenizer, mnli_split):
    from datasets import Dataset

    from diagnostics.usercode.hooks import origin_of, watching

    tokenized = mnli_split.map(lambda rows: bert_tokenizer(rows["premise"], rows["hypothesis"]), batched=True)
    plain = Dataset.__dict__["to_tf_dataset"]
    outside = tokenized.to_tf_dataset(columns=["input_ids", "label"], batch_size=4)
    with watch():
        with watch():  # blocks nest
            inside = tokenized.to_tf_dataset(columns=["input_ids", "label"], batch_size=4)
        assert watching() and Dataset.__dict__["to_tf_dataset"] is not plain
    assert not watching() and Dataset.__dict__["to_tf_dataset"] is plain
    assert origin_of(outside) is None
    source, kwargs = origin_of(inside)
    assert source is tokenized and kwargs["batch_size"] == 4  # remembered for as long as the dataset lives


def test_watch_remembers_the_last_tokenizer_call_on_text_and_puts_the_call_back(bert_tokenizer):
    from transformers import PreTrainedTokenizerBase

    from diagnostics.usercode import hooks

    plain = PreTrainedTokenizerBase.__dict__["__call__"]
    hooks.last_tokenization.clear()
    bert_tokenizer(["outside the block"], truncation=True, max_length=7)
    assert hooks.tokenization() is None
    with watch():
        bert_tokenizer(["a premise", "another"], ["a hypothesis", "more"], truncation=True, max_length=7)
        bert_tokenizer.pad({"input_ids": [[1, 2], [3]]})  # not a call on text: the last one stands
        assert PreTrainedTokenizerBase.__dict__["__call__"] is not plain
    assert PreTrainedTokenizerBase.__dict__["__call__"] is plain
    assert hooks.tokenization() == {"truncation": True, "max_length": 7, "padding": None,
                                    "model_max_length": bert_tokenizer.model_max_length}


def test_a_dataset_keeps_the_tokenizer_call_that_made_its_ids_and_one_made_outside_a_watch_none(bert_tokenizer,
                                                                                                  mnli_split):
    from diagnostics.usercode import hooks

    with watch():
        tokenized = mnli_split.map(lambda rows: bert_tokenizer(rows["premise"], rows["hypothesis"], truncation=True,
                                                               max_length=11), batched=True)
        inside = tokenized.to_tf_dataset(columns=["input_ids", "label"], batch_size=4)
        bert_tokenizer(["a later call, for another pipeline"], max_length=99)
    assert hooks.provenance_of(inside).tokenization["max_length"] == 11  # not the later call's
    outside = tokenized.to_tf_dataset(columns=["input_ids", "label"], batch_size=4)
    assert hooks.provenance_of(outside) is None  # a stale record of another pipeline is never read for it


def stsb_dataset(tokenizer, scores, batch_size=4):
    import tensorflow as tf

    encoded = tokenizer([f"the cat sat {i}" for i in range(len(scores))], ["the dog ran"] * len(scores),
                        padding="max_length", max_length=12)
    return tf.data.Dataset.from_tensor_slices(({key: np.asarray(encoded[key]) for key in encoded},
                                               np.asarray(scores, np.float32))).batch(batch_size)


class RaisesAtStep:
    """A user's callback that raises at the end of a step (between steps: the watch's own step saw no error)."""

    def __new__(cls, step):
        import tf_keras

        class Raiser(tf_keras.callbacks.Callback):
            def on_train_batch_end(self, batch, logs=None):
                if batch == step:
                    raise KeyboardInterrupt("stopped by hand")

        return Raiser()


@pytest.mark.parametrize("where", ["in_a_step", "between_steps"])
def test_the_callbacks_watch_is_gone_after_a_fit_that_raises_and_a_users_own_train_step_stays(
        where, bert_checkpoint, bert_tokenizer):
    import tensorflow as tf
    import tf_keras

    from diagnostics import DiagnoseCallback

    model = classifier(bert_checkpoint, 1)
    model.compile(optimizer=tf_keras.optimizers.Adam(learning_rate=1e-4))
    calls = []  # appended when a fit traces the user's step
    own = model.train_step  # the class's, bound: an instance-level train_step of the user's own

    def users_step(data):
        calls.append(1)
        return own(data)

    model.train_step = users_step
    data = stsb_dataset(bert_tokenizer, [1.0, 2.0, 3.0, 1.5] + [4.0, 2.0, 3.0, 1.0] * 2)

    def checked(features, scores):  # the second batch's 4.0 fails inside the train function's step
        with tf.control_dependencies([tf.debugging.assert_less(scores, 3.5, message="a score out of range")]):
            return features, tf.identity(scores)

    if where == "in_a_step":
        data = data.map(checked)
        extra, error = [], tf.errors.InvalidArgumentError
    else:
        extra, error = [RaisesAtStep(1)], KeyboardInterrupt
    callback = DiagnoseCallback(tokenizer=bert_tokenizer, task="stsb", quick=False)
    with pytest.raises(error):
        model.fit(data, epochs=1, callbacks=[callback, *extra], verbose=0)
    if where == "between_steps":  # the watch is found left over by the next step of any fit, and taken off
        assert getattr(model.__dict__.get("train_step"), "watched_by", None) is callback
        model.fit(stsb_dataset(bert_tokenizer, [1.0, 2.0, 3.0, 4.0]), epochs=1, verbose=0)
    assert model.__dict__.get("train_step") is users_step  # the user's own step, not the watch and not deleted
    assert getattr(model.train_function, "watched_by", None) is None
    assert callback._restore is None
    stashed = [variable.numpy().copy() for variable in callback._stash]
    model.fit(stsb_dataset(bert_tokenizer, [0.5, 0.5, 0.5, 0.5]), epochs=1, verbose=0)
    assert all(
        np.array_equal(before, variable.numpy()) for before, variable in zip(stashed, callback._stash, strict=True)
    )
    assert calls  # fit traced the user's own step


@pytest.mark.slow  # full tier: waits on a child's family
@pytest.mark.subprocess
def test_a_daemon_the_script_leaves_is_ended_however_the_script_ends(tmp_path):
    """A script that double-forks a daemon into a session of its own, then ends with os._exit before fit: the child
    cannot end the daemon, and the daemon would hold the command's stdout open (`trace ... | tail` hanging). The
    trace ends it, and its output pipe closes."""
    import subprocess
    import sys

    import psutil

    pid_file = tmp_path / "daemon.pid"
    script = tmp_path / "daemon_script.py"
    script.write_text(f"""import os, sys, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        open({str(pid_file)!r}, "w").write(str(os.getpid()))
        time.sleep(600)
    os._exit(0)
while not os.path.exists({str(pid_file)!r}):
    time.sleep(0.05)
os._exit(3)
""")
    command = subprocess.Popen([sys.executable, "-m", "diagnostics", "trace", str(script)], cwd=ROOT,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    output, _ = command.communicate(timeout=300)  # returns only once every holder of the pipe is gone
    daemon = int(pid_file.read_text())
    assert command.returncode != 0 and b"daemon_script.py" in output
    assert not psutil.pid_exists(daemon) or psutil.Process(daemon).status() == psutil.STATUS_ZOMBIE


@pytest.mark.slow  # full tier: waits on a child's family
@pytest.mark.subprocess
def test_a_visitor_who_leaves_ends_the_trace_and_what_its_script_started(tmp_path):
    """The page's tick raises once its visitor is gone (a closed tab stops the page's script at its next call): the
    trace ends the child and the script's processes at once instead of running on to its time limit."""
    import time

    import psutil

    from diagnostics.usercode.trace import trace_script

    pid_file = tmp_path / "script.pid"
    script = tmp_path / "forever.py"
    script.write_text(f"import os, time\nopen({str(pid_file)!r}, 'w').write(str(os.getpid()))\ntime.sleep(600)\n")

    class Left(Exception):
        pass

    def tick(seconds: float) -> None:
        if pid_file.exists():
            raise Left()

    started = time.monotonic()
    with pytest.raises(Left):
        trace_script(script, timeout=300, capture_output=True, tick=tick)
    assert time.monotonic() - started < 60
    pid = int(pid_file.read_text())
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
