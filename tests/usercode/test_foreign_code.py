"""Training code the checks were not designed around: a model built inside a strategy scope, datasets made by
`prepare_tf_dataset` and changed by `tf.data` methods, the user's optimizer with all its settings, labels taken from
the data, a loss that stops the gradients; and `tests/scripts/glue_classifier.py`, a script in a public example's
shape, traced end to end."""

import numpy as np
import pytest

from conftest import ROOT, copy_checks, make_split
from diagnostics.checks.data.label_range import check_label_range
from diagnostics.usercode.hooks import watch
from diagnostics.core.result import Status
from tests.usercode.here import trace_here


def classifier(checkpoint, num_labels):
    from transformers import TFAutoModelForSequenceClassification

    return TFAutoModelForSequenceClassification.from_pretrained(str(checkpoint), num_labels=num_labels)


def tokenized_mnli(split, tokenizer):
    return split.map(lambda rows: tokenizer(rows["premise"], rows["hypothesis"]), batched=True)


# ---------------------------------------------------------------- strategies


@pytest.mark.parametrize("strategy", ["one_device", "default"])
def test_step_taking_checks_pass_on_a_model_built_inside_a_strategy_scope(strategy, bert_checkpoint, bert_tokenizer,
                                                                           mnli_split):
    import tensorflow as tf
    import tf_keras

    from diagnostics import diagnose

    scope = tf.distribute.OneDeviceStrategy("/cpu:0") if strategy == "one_device" else tf.distribute.get_strategy()
    with scope.scope():
        model = classifier(bert_checkpoint, 3)
        with watch():
            dataset = model.prepare_tf_dataset(tokenized_mnli(mnli_split, bert_tokenizer), batch_size=4,
                                               shuffle=True, tokenizer=bert_tokenizer)
        model.compile(optimizer=tf_keras.optimizers.Adam(learning_rate=1e-3))
        report = diagnose(model, dataset, bert_tokenizer, stages="model,hparams,overfit", epochs=3)
    statuses = {result.id: result.status for result in report.results}
    for check in ("model.gradients", "model.weights_after_step", "hparams.loss", "hparams.lr_sweep",
                  "hparams.lr_range_test", "overfit.one_batch"):
        assert statuses[check] is not Status.ERROR, report[check].summary
        assert "merge_call" not in str(report[check].summary) and "replica" not in str(report[check].summary)
    assert statuses["model.gradients"] is Status.PASS and statuses["hparams.loss"] is Status.PASS


# ---------------------------------------------------------------- the script's own output


@pytest.mark.slow  # full tier: a child trace of every stage
@pytest.mark.subprocess
def test_tracing_leaves_the_scripts_logging_and_progress_settings_as_they_were(tmp_path):
    import subprocess
    import sys

    from diagnostics.usercode.trace import trace_script

    script = tmp_path / "settings.py"
    script.write_text(
        "import logging, os\n"
        "import datasets, transformers\n"
        "from transformers import TFTrainingArguments\n"
        "args = TFTrainingArguments(output_dir='out')\n"
        "print('SETTINGS', transformers.logging.get_verbosity(), datasets.is_progress_bar_enabled(), args.disable_tqdm,"
        " [os.environ.get(key) for key in ('TF_CPP_MIN_LOG_LEVEL', 'TRANSFORMERS_VERBOSITY', "
        "'HF_DATASETS_DISABLE_PROGRESS_BARS', 'TOKENIZERS_PARALLELISM')])\n")
    env = {key: value for key, value in __import__("os").environ.items()
           if key not in __import__("diagnostics").SET_BY_DEBUGGER}
    plain = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path, env=env,
                           timeout=300)
    traced = trace_script(script, capture_output=True, cwd=tmp_path)
    expected = next(line for line in plain.stdout.splitlines() if line.startswith("SETTINGS"))
    assert "SETTINGS 30 True False" in expected  # Transformers' warnings and the bars on, as a plain run has them
    assert expected in traced.output.splitlines()


# ---------------------------------------------------------------- the user's optimizer, whole


def test_copies_train_with_every_setting_of_the_users_optimizer(bert_checkpoint, bert_tokenizer, mnli_split):
    from transformers import create_optimizer

    from diagnostics import diagnose
    from diagnostics.keras.training import Trainer, build_optimizer, sweep_optimizer

    model = classifier(bert_checkpoint, 3)
    optimizer, _ = create_optimizer(init_lr=2e-3, num_train_steps=40, num_warmup_steps=4, adam_epsilon=1e-8,
                                    weight_decay_rate=0.01, adam_global_clipnorm=1.0)
    model.compile(optimizer=optimizer)
    with watch():
        dataset = model.prepare_tf_dataset(tokenized_mnli(mnli_split, bert_tokenizer), batch_size=4,
                                           tokenizer=bert_tokenizer)
    report = diagnose(model, dataset, bert_tokenizer, stages="hparams")
    config = report.config
    rows = {row["setting"]: row for row in report["hparams.optimizer"].evidence["settings"]}
    assert (rows["global_clipnorm"]["value"], rows["global_clipnorm"]["source"]) == ("1", "set")
    assert (rows["epsilon"]["value"], rows["epsilon"]["source"]) == ("1e-08", "set")
    assert "LayerNorm" in rows["exclude_from_weight_decay"]["value"]
    assert "global_clipnorm=1," in report["hparams.optimizer"].summary
    # The Model stage's step trains with the schedule; the sweep and the overfit test at a constant rate; all clip.
    stepped, swept = build_optimizer(config), sweep_optimizer(config, 1e-3)
    for clone in (stepped, swept):
        assert clone is not optimizer
        assert clone.get_config()["global_clipnorm"] == 1.0 and clone.get_config()["epsilon"] == 1e-8
        assert clone.get_config()["weight_decay_rate"] == 0.01
        assert clone._exclude_from_weight_decay == optimizer._exclude_from_weight_decay
    assert type(stepped.get_config()["learning_rate"]) is dict and swept.get_config()["learning_rate"] == 1e-3
    trainer = Trainer(model, [next(iter(dataset))], config)
    trainer.reset(1e-3)
    assert np.isfinite(trainer.run(2)).all()
    trainer.reset(1e-3)  # the legacy optimizer's state zeroed after it was built (its slots made in the first step)
    assert int(trainer.optimizer.iterations.numpy()) == 0 and len(trainer.optimizer.variables()) > 1
    assert all(not np.asarray(variable).any() for variable in trainer.optimizer.variables())
    assert int(optimizer.iterations.numpy()) == 0  # the user's own optimizer never stepped


# ---------------------------------------------------------------- provenance through tf.data


TRANSFORMS = {
    "with_options": lambda d: d.with_options(__import__("tensorflow").data.Options()),
    "prefetch": lambda d: d.prefetch(2),
    "shuffle": lambda d: d.shuffle(8, seed=0),
    "map": lambda d: d.map(lambda x, y: (x, y)),
    "repeat": lambda d: d.repeat(2),
    "take": lambda d: d.take(2),
    "cache": lambda d: d.cache(),
    "apply": lambda d: d.apply(lambda inner: inner.prefetch(1)),
    "chain": lambda d: d.shuffle(8).with_options(__import__("tensorflow").data.Options()).prefetch(1),
}


@pytest.mark.parametrize("method", TRANSFORMS)
def test_a_dataset_keeps_its_split_through_tf_data_methods(method, bert_checkpoint, bert_tokenizer, mnli_split):
    from diagnostics.usercode import hooks

    model = classifier(bert_checkpoint, 3)
    source = tokenized_mnli(mnli_split, bert_tokenizer)
    with hooks.watch():
        dataset = TRANSFORMS[method](model.prepare_tf_dataset(source, batch_size=4, tokenizer=bert_tokenizer))
    found = hooks.provenance_of(dataset)
    assert found is not None and found.source is source and found.same_elements
    assert found.kwargs["batch_size"] == 4 and found.kwargs["label_cols"] == "labels"
    assert hooks.method_names(found.steps)[-1] == ("prefetch()" if method in ("apply", "chain") else f"{method}()")


def test_a_batch_after_to_tf_dataset_keeps_the_split_for_the_task_and_reads_the_rows_back(
        bert_checkpoint, bert_tokenizer, mnli_split):
    from datasets import ClassLabel

    from diagnostics import diagnose

    from diagnostics.usercode import hooks

    model = classifier(bert_checkpoint, 3)
    source = tokenized_mnli(mnli_split, bert_tokenizer).cast_column(
        "label", ClassLabel(names=["entailment", "neutral", "contradiction"]))
    with hooks.watch():
        dataset = source.to_tf_dataset(columns=["input_ids", "attention_mask"], label_cols="label", batch_size=2,
                                       collate_fn=__import__("transformers").DataCollatorWithPadding(
                                           bert_tokenizer, return_tensors="np")).unbatch().padded_batch(4)
    found = hooks.provenance_of(dataset)
    assert found.source is source and not found.same_elements
    model.compile(optimizer="adam")
    report = diagnose(model, dataset, bert_tokenizer, stages="data")
    assert report.config.task == "mnli" and report.config.task_known
    assert any("change its batches" in str(note) for note in report.notes)
    assert "entailment" in str(report["data.label_balance"].summary)


# ---------------------------------------------------------------- the task, never guessed


def test_the_task_comes_from_the_user_the_split_or_the_model_and_is_never_guessed():
    from transformers import BertConfig

    from diagnostics.usercode.task_finding import find_task

    pairs, labels = ["sentence1", "sentence2", "label"], np.array([0, 1] * 10)
    assert find_task("RTE", columns=pairs, labels=labels).name == "rte"
    unknown = find_task(None, columns=pairs, labels=labels)
    assert unknown.candidates == ("mrpc", "rte", "wnli") and unknown.label_names == ("label 0", "label 1")
    named = find_task(None, columns=pairs, labels=labels, class_names=["entailment", "not_entailment"])
    assert (named.name, named.candidates) == ("rte", ())
    assert find_task(None, columns=pairs, labels=labels + 0.5).name == "stsb"  # scores
    trained = BertConfig(num_labels=2, finetuning_task="wnli")
    assert find_task(None, columns=pairs, labels=labels, model_config=trained).name == "wnli"
    own_names = BertConfig(id2label={0: "not_equivalent", 1: "equivalent"})
    assert find_task(None, columns=pairs, labels=labels, model_config=own_names).name == "mrpc"
    stray = find_task(None, columns=pairs, labels=np.array([0, 1] * 10 + [2]))
    assert stray.candidates == ("mrpc", "rte", "wnli") and len(stray.label_names) == 3
    # Rows read back with no columns: sentence pairs with three labels can only be MNLI; two labels could be five.
    assert find_task(None, columns=None, labels=np.array([0, 1, 2] * 4), segments=2).name == "mnli"
    assert len(find_task(None, columns=None, labels=labels, segments=2).candidates) == 5
    assert find_task(None, columns=["sentence", "label"], labels=labels).candidates == ("cola", "sst2")


def test_an_unknown_task_shows_labels_by_their_own_names_and_judges_nothing_against_a_task(bert_checkpoint,
                                                                                         bert_tokenizer):
    from diagnostics import diagnose

    split = make_split("rte", [(f"the cat sat {i}", "a cat sat", i % 2) for i in range(16)])
    tokenized = split.map(lambda rows: bert_tokenizer(rows["sentence1"], rows["sentence2"]), batched=True)
    model = classifier(bert_checkpoint, 2)
    model.compile(optimizer="adam")
    with watch():
        dataset = model.prepare_tf_dataset(tokenized, batch_size=4, tokenizer=bert_tokenizer).with_options(
            __import__("tensorflow").data.Options())
    report = diagnose(model, dataset, bert_tokenizer, stages="data,model")
    assert report.config.task_candidates == ("mrpc", "rte", "wnli")
    assert any("mrpc, rte, wnli all fit" in str(note) for note in report.notes)
    text = " ".join(str(result.summary) for result in report.results)
    for name in ("entailment", "equivalent"):
        assert name not in text  # no candidate's label names
    assert "label 0" in str(report["data.label_balance"].summary)
    assert report["model.config"].status is Status.PASS and "not known" in str(report["model.config"].summary)
    assert not report.failed
    assert all(report[check].status is Status.PASS for check in ("data.label_range", "data.label_balance",
                                                                  "data.baselines", "model.config"))


# ---------------------------------------------------------------- labels against the task and the data


def test_a_label_outside_the_known_tasks_classes_fails_with_its_rows_whatever_the_head():
    from diagnostics.config.tasks import TASKS

    labels = np.array([0, 1] * 95 + [2] * 10)
    result = check_label_range(labels, [0, 1, 2], TASKS["rte"], 3, "train")
    assert result.status is Status.FAIL
    assert "rte has 2 classes" in result.summary and "num_labels=3" in result.summary
    assert result.evidence["rows"] == list(range(190, 200)) and "190, 191" in result.summary
    assert "num_labels=2" in str(result.fix)


def test_a_label_outside_a_known_tasks_classes_with_a_head_that_fits_names_its_rows_and_no_bigger_head():
    from diagnostics.config.tasks import TASKS

    labels = np.array([0, 1] * 20 + [2] * 3 + [0, 1] * 5)
    result = check_label_range(labels, [0, 1], TASKS["cola"], 2, "train")
    assert result.status is Status.FAIL
    assert result.evidence["rows"] == [40, 41, 42] and "rows 40, 41, 42" in result.summary
    assert "num_labels" not in str(result.fix)


def test_with_the_task_unknown_a_rare_label_value_is_a_warning_naming_its_rows():
    from diagnostics.config.tasks import GlueTask

    unknown = GlueTask("mrpc or rte", ("sentence1", "sentence2"), ("label 0", "label 1", "label 2"), ("train",),
                       known=False)
    stray = check_label_range(np.array([0, 1] * 95 + [2] * 10), [0], unknown, 3, "train")
    assert stray.status is Status.WARN and stray.evidence["stray_rows"][:2] == [190, 191]
    assert check_label_range(np.array([0, 1, 2] * 40), [0], unknown, 3, "train").status is Status.PASS


def test_with_the_task_unknown_a_rare_value_beyond_the_head_is_a_stray_to_drop_and_a_wider_head_the_alternative():
    from diagnostics.config.tasks import GlueTask

    unknown = GlueTask("cola or sst2", ("sentence",), ("label 0", "label 1"), ("train",), known=False)
    labels = np.array([0, 1] * 333 + [2] * 34)  # 700 rows of binary sentiment, 34 of them labelled 2
    result = check_label_range(labels, [0, 1], unknown, 2, "train")
    assert result.status is Status.FAIL
    assert "label 2 is on only 34 rows (4.9%" in result.summary and "rows 666, 667" in result.summary
    assert result.evidence["rows"][:2] == [666, 667]
    assert str(result.fix).startswith("Drop or relabel these rows: dataset = "
                                      "dataset.filter(lambda row: row['label'] != 2)")
    assert "if 2 is a real class" in str(result.fix) and "num_labels=3" in str(result.fix)
    # A value as common as the others is a class the head lacks: the wider head is the fix.
    balanced = check_label_range(np.array([0, 1, 2] * 100), [0, 1, 2], unknown, 2, "train")
    assert balanced.status is Status.FAIL and str(balanced.fix).endswith("num_labels=3)")


def test_model_config_counts_what_it_says_about_outputs_from_the_data(bert_checkpoint, bert_tokenizer):
    from transformers import AutoConfig

    from diagnostics.config.tasks import TASKS
    from diagnostics.checks.model.config import check_config

    config = AutoConfig.from_pretrained(str(bert_checkpoint), num_labels=3)
    fed = check_config(config, "TFBert", TASKS["rte"], bert_tokenizer, {0: 95, 1: 95, 2: 10})
    assert fed.status is Status.WARN and "output 2 learns only from the 10 rows labelled 2" in fed.summary
    idle = check_config(config, "TFBert", TASKS["rte"], bert_tokenizer, {0: 95, 1: 95})
    assert "never gets a positive example (no row of the split is labelled 2)" in idle.summary


# ---------------------------------------------------------------- the user's own column names


def text_label_dataset():
    """The kit's SST-2 rows under the column names most custom datasets use (text, label), through to_tf_dataset."""
    from datasets import Dataset
    from transformers import DataCollatorWithPadding

    from diagnostics.keras.loading import load_tokenizer

    tokenizer = load_tokenizer("demo")
    rows = kit_rows_of("sst2")
    split = Dataset.from_dict({"text": [row["sentence"] for row in rows], "label": [row["label"] for row in rows]})
    split = split.map(lambda batch: tokenizer(batch["text"], truncation=True), batched=True)
    with watch():
        dataset = split.to_tf_dataset(columns=["input_ids", "attention_mask"], label_cols="label", batch_size=8,
                                      collate_fn=DataCollatorWithPadding(tokenizer, return_tensors="np"))
    return dataset, tokenizer


def kit_rows_of(task):
    import json

    path = ROOT / "diagnostics" / "demo_data" / task / "train.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_text_column_passes_when_the_task_was_found_and_is_named_to_rename_when_it_was_given():
    from transformers import TFAutoModelForSequenceClassification

    from diagnostics import diagnose
    from diagnostics.keras.loading import demo_checkpoint_dir

    dataset, tokenizer = text_label_dataset()
    model = TFAutoModelForSequenceClassification.from_pretrained(str(demo_checkpoint_dir()), num_labels=2)
    found = diagnose(model, dataset, tokenizer, stages="data", progress=False)
    assert found["data.columns"].status is Status.PASS, found["data.columns"].summary
    assert not found.failed
    assert any("text → sentence" in str(note) for note in found.notes)
    given = diagnose(model, dataset, tokenizer, task="sst2", stages="data", progress=False)
    assert given["data.columns"].status is Status.FAIL
    assert "The split lacks sentence" in given["data.columns"].summary
    assert given["data.columns"].fix == "dataset = dataset.rename_columns({'text': 'sentence'})"


# ---------------------------------------------------------------- a script in a public example's shape, traced

SCRIPT = ROOT / "tests" / "scripts" / "glue_classifier.py"


def write_csv(path, rows):
    import csv

    with open(path, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=["sentence1", "sentence2", "label"])
        writer.writeheader()
        for row in rows:
            writer.writerow({key: row[key] for key in ("sentence1", "sentence2", "label")})
    return path


def kit_rows(split):
    import json

    path = ROOT / "diagnostics" / "demo_data" / "rte" / f"{split}.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


def trace_classifier(tmp_path, checkpoint, train_rows, *, rate, extra=(), task=None, stages=None, skip=None,
                     validation_rows=None, child=False):
    """Trace the script on csv files of these rows, here or (`child`) in the tracer's child process as a user's
    trace runs, its output captured; (the outcome, {check: result dict})."""
    from diagnostics.usercode.trace import trace_script

    train = write_csv(tmp_path / "train.csv", train_rows)
    validation = write_csv(tmp_path / "validation.csv", validation_rows or train_rows[:16])
    arguments = ["--model_name_or_path", str(checkpoint), "--train_file", str(train), "--validation_file",
                 str(validation), "--output_dir", str(tmp_path / "out"), "--learning_rate", str(rate),
                 "--per_device_train_batch_size", "8", "--max_grad_norm", "1.0", "--weight_decay", "0.01",
                 "--warmup_ratio", "0.1", "--num_train_epochs", "3", *extra]
    if child:
        outcome = trace_script(SCRIPT, arguments, task=task, stages=stages, skip=skip, cwd=tmp_path,
                               capture_output=True, timeout=900)
    else:
        outcome = trace_here(SCRIPT, arguments, task=task, stages=stages, skip=skip, cwd=tmp_path)
    assert outcome.report is not None, outcome.message + outcome.output[-3000:]
    assert outcome.report["script"]["reached_fit"], outcome.message
    return outcome, {check["id"]: check for check in outcome.report["checks"]}


def named_elsewhere(checks, words, owner):
    """The checks other than `owner` whose finding names one of these words and that do not pass."""
    return [check_id for check_id, check in checks.items() if check_id != owner and check["status"] != "pass"
            and any(word in check["summary"] for word in words)]


@pytest.mark.slow  # full tier: a whole trace; the matrix's slice traces healthy shapes in the default tier
@pytest.mark.subprocess
def test_trace_a_healthy_script_of_a_new_shape_on_the_kit_fails_nothing_and_warns_on_no_guess(tmp_path):
    from diagnostics.keras.loading import demo_checkpoint_dir

    outcome, checks = trace_classifier(tmp_path, demo_checkpoint_dir(), kit_rows("train"), rate=3e-3,
                                       validation_rows=kit_rows("validation"), child=True)
    failing = {check_id: check["summary"] for check_id, check in checks.items() if check["status"] in ("fail", "error")}
    assert failing == {}, failing
    assert outcome.report["run"]["task_candidates"] == ["mrpc", "rte", "wnli"]
    for check_id in ("data.label_range", "data.label_balance", "data.baselines", "model.config"):
        assert checks[check_id]["status"] == "pass", checks[check_id]["summary"]
    assert "not known" in " ".join(outcome.report["notes"])
    assert "with_options()" in " ".join(outcome.report["notes"])
    assert "2 labels: [0, 1]" in outcome.output  # the script's own logging still prints
    assert "final loss" in outcome.output  # its fit, run briefly after the checks, gave it a History to read


# The task given (rte) or found from the data: the second trace is the full tier's.
@pytest.mark.parametrize("task", [None, pytest.param("rte", marks=pytest.mark.slow)])
def test_trace_a_stray_label_is_named_with_its_rows_by_data_label_range_alone(tmp_path, task):
    from diagnostics.keras.loading import demo_checkpoint_dir

    rows = [dict(row, label=2 if index % 12 == 5 and index < 120 else row["label"])
            for index, row in enumerate(kit_rows("train"))]
    stray = [index for index, row in enumerate(rows) if row["label"] == 2]
    _, checks = trace_classifier(tmp_path, demo_checkpoint_dir(), rows, rate=3e-3, task=task, stages="data,model")
    label_range = checks["data.label_range"]
    assert label_range["status"] == ("fail" if task else "warn"), label_range["summary"]
    assert f"rows {stray[0]}, {stray[1]}" in label_range["summary"]
    assert label_range["evidence"]["rows" if task else "stray_rows"] == stray
    assert "positive example" not in checks["model.config"]["summary"]
    if task:
        assert "output 2 learns only from the 10 rows labelled 2" in checks["model.config"]["summary"]
        assert "see data.label_range" in checks["model.config"]["summary"]
    assert [check_id for check_id, check in checks.items() if check["status"] == "fail"] == (
        ["data.label_range"] if task else [])


def test_trace_truncation_by_the_scripts_own_tokenizer_is_measured_on_the_raw_text(tmp_path):
    from diagnostics.keras.loading import demo_checkpoint_dir, load_tokenizer

    rows = kit_rows("train")
    tokenizer = load_tokenizer("demo")
    lengths = np.array([len(tokenizer(row["sentence1"], row["sentence2"])["input_ids"]) for row in rows])
    cap = int(np.percentile(lengths, 67))  # about a third of the rows are longer
    expected = np.flatnonzero(lengths > cap).tolist()
    _, checks = trace_classifier(tmp_path, demo_checkpoint_dir(), rows, rate=3e-3, stages="data",
                                 skip="data.learnability", extra=("--max_seq_length", str(cap)))
    truncation = checks["data.truncation"]
    assert truncation["status"] == "warn" and truncation["evidence"]["scope"] == "split"
    assert truncation["evidence"]["truncated_rows"] == len(expected) and truncation["evidence"]["max_length"] == cap
    assert truncation["evidence"]["cut_rows"] == expected[:50]
    assert f"{len(expected)} of {len(rows)} rows of the split" in truncation["summary"]
    assert truncation["evidence"]["cut_source"] == "call" and f"max_length={cap} (your tokenizer call's)" in \
        truncation["summary"]
    assert named_elsewhere(checks, ["truncat"], "data.truncation") == []


def test_trace_truncation_is_said_at_the_scripts_max_length_when_no_row_reaches_it(tmp_path):
    from diagnostics.keras.loading import demo_checkpoint_dir, load_tokenizer

    rows = kit_rows("train")
    tokenizer = load_tokenizer("demo")
    longest = max(len(tokenizer(row["sentence1"], row["sentence2"])["input_ids"]) for row in rows)
    _, checks = trace_classifier(tmp_path, demo_checkpoint_dir(), rows, rate=3e-3, stages="data",
                                 skip="data.learnability", extra=("--max_seq_length", str(longest + 20)))
    truncation = checks["data.truncation"]
    # Not the longest row stored (nor a batch's padded length): the length the script's tokenizer call gives.
    assert truncation["status"] == "pass" and truncation["evidence"]["truncated_rows"] == 0
    assert truncation["evidence"]["max_length"] == longest + 20 and truncation["evidence"]["cut_source"] == "call"


def test_trace_a_loss_that_stops_the_gradients_is_named_once_and_blocks_the_measurements(tmp_path):
    from diagnostics.keras.loading import demo_checkpoint_dir

    _, checks = trace_classifier(tmp_path, demo_checkpoint_dir(), kit_rows("train"), rate=3e-3,
                                 extra=("--probability_loss", "True"))
    assert checks["model.gradients"]["status"] == "fail" and "exactly zero" in checks["model.gradients"]["summary"]
    # The loss owns the cause: the zero gradients it gives point at it, and so does every blocked measurement, each
    # stating what the blocking step measured.
    assert checks["model.gradients"]["explained_by"] == "hparams.loss"
    assert checks["hparams.loss"]["status"] == "fail" and "explained_by" not in checks["hparams.loss"]
    for check_id in copy_checks():
        assert checks[check_id]["status"] == "skip", checks[check_id]["summary"]
        assert "no gradient or an all-zero one" in checks[check_id]["summary"]
        assert "(see hparams.loss)" in checks[check_id]["summary"]
    assert "1e-06" not in " ".join(check["summary"] + str(check.get("fix")) for check in checks.values())


# ---------------------------------------------------------------- on the real checkpoint, with real GLUE text


def real_rows():
    """Real MRPC sentence pairs (the GLUE validation file): 200 to train on, 54 held out."""
    import csv

    with open(ROOT / "tests" / "data" / "mrpc" / "validation.tsv", newline="") as handle:
        rows = list(csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE))
    return rows[:200], rows[200:]


def test_trace_a_healthy_script_of_a_new_shape_on_the_real_checkpoint_fails_nothing(tmp_path, real_checkpoint):
    train, validation = real_rows()
    outcome, checks = trace_classifier(tmp_path, real_checkpoint, train, rate=5e-5, validation_rows=validation)
    assert len(checks) >= 20, outcome.report.get("error")  # the checks ran: an empty report would flag nothing
    flagged = {check_id: check["summary"] for check_id, check in checks.items() if check["status"] in ("warn", "fail",
                                                                                                       "error")}
    assert flagged == {}, flagged  # a healthy run on real text: nothing to warn of, measured stages included
    assert outcome.report["run"]["task_candidates"] == ["mrpc", "rte", "wnli"]
    for check_id in ("data.label_range", "data.label_balance", "data.baselines", "model.config",
                     "model.gradients", "hparams.optimizer", "hparams.loss", "hparams.lr_sweep", "overfit.one_batch"):
        assert checks[check_id]["status"] == "pass", (check_id, checks[check_id]["summary"])
    # On a pretrained checkpoint learnability runs only when asked for (--with), and says so.
    learnability = checks["data.learnability"]
    assert learnability["status"] == "skip" and learnability["summary"].startswith("Not run by default")
    assert "global_clipnorm=1" in checks["hparams.optimizer"]["summary"]


# ---------------------------------------------------------------- gradients that flow, steps that move


def record_of(grads, sizes, rate=1e-3):
    from diagnostics.keras.training import GradientStats, StepRecord

    return StepRecord(loss=0.69, gradients=[(f"bert/layer_{i}/kernel:0", None if grad is None else GradientStats.of(
        np.asarray(grad, dtype=np.float32))) for i, grad in enumerate(grads)], sizes=sizes, rate=rate)


def test_model_gradients_fails_on_all_zero_or_partly_zero_gradients_naming_their_share():
    from diagnostics.config.run import RunConfig
    from diagnostics.checks.model.gradients import check_gradients, gradient_figures

    dead = check_gradients(gradient_figures(record_of([np.zeros(6), np.zeros(2)], [6, 2])),
                           RunConfig(loss="SparseCategoricalCrossentropy(from_logits=False)"))
    assert dead.status is Status.FAIL and "Every gradient is exactly zero" in dead.summary
    assert "hparams.loss" in str(dead.fix)
    part = check_gradients(gradient_figures(record_of([np.ones(6), np.zeros(2)], [6, 2])), RunConfig())
    assert part.status is Status.FAIL and "1 of 2 trainable variables" in part.summary and "25.0%" in part.summary
    assert check_gradients(gradient_figures(record_of([np.ones(6), np.ones(2)], [6, 2])), RunConfig()).status \
        is Status.PASS


def test_model_weights_after_step_fails_when_nothing_moved_and_passes_a_warmups_zero_first_rate():
    from diagnostics.checks.model.weights_after_step import check_weights_after_step

    still = {"variables": 2, "moved": 0, "unmoved": ["a:0", "b:0"], "max_change": 0.0}
    assert check_weights_after_step(record_of([np.zeros(2)], [2]), [], "Adam", still).status is Status.FAIL
    warmup = check_weights_after_step(record_of([np.ones(2)], [2], rate=0.0), [], "create_optimizer", still)
    assert warmup.status is Status.PASS and "warmup" in warmup.summary
    moved = {"variables": 2, "moved": 2, "unmoved": [], "max_change": 1e-3}
    assert "and 2 of the 2 trainable variables changed" in \
        check_weights_after_step(record_of([np.ones(2)], [2]), [], "Adam", moved).summary


def test_weight_decay_alone_is_not_a_step_that_moved(bert_checkpoint, bert_tokenizer, mnli_split):
    import tf_keras

    from diagnostics.keras.training import fresh_copy, moved_variables

    model = classifier(bert_checkpoint, 3)
    inputs = dict(bert_tokenizer(["the cat sat"], return_tensors="tf"))
    copy = fresh_copy(model, inputs)
    for variable in copy.trainable_variables:  # what AdamW does with a zero gradient: shrink by rate x decay
        variable.assign(variable * (1 - 1e-3 * 0.01))
    assert moved_variables(model, copy, 1e-3, 0.01)["moved"] == 0
    copy.trainable_variables[0].assign_add(tf_keras.backend.ones_like(copy.trainable_variables[0]) * 1e-3)
    assert moved_variables(model, copy, 1e-3, 0.01)["moved"] == 1


def test_one_cause_one_owner_the_sweep_names_a_bad_rate_and_the_others_point_at_it():
    from diagnostics.walk.causes import causes
    from diagnostics.walk.causes import explain
    from diagnostics.i18n import msg
    from diagnostics.core.result import CheckResult

    settings = [{"setting": "learning_rate", "value": "0.001", "source": "set"}]
    ceiling = msg("{summary} {rate:g} is above {limit:g}{reading}.", summary="Adam builds Adam", rate=1e-3, limit=1e-4,
                  reading=msg(": fine-tuning a pretrained transformer at this rate tends to wreck its weights"))
    results = [
        CheckResult("hparams.optimizer", "hparams", Status.WARN, ceiling, fix="Adam(5e-5)",
                    evidence={"class": "Adam", "given_as": "Adam", "learning_rate": 1e-3, "settings": settings},
                    condition="warn_learning_rate"),
        CheckResult("hparams.lr_sweep", "hparams", Status.FAIL, "The configured rate 0.001 is too high",
                    evidence={"configured_too_high": True, "configured_rate": 1e-3}, condition="fail_drift"),
        CheckResult("overfit.one_batch", "overfit", Status.WARN, "moved its pretrained weights by 4e-3",
                    evidence={"learning_rate": 1e-3, "final_accuracy": 1.0, "at_configured_rate": True},
                    condition="warn_drift"),
    ]
    named = {result.id: result for result in explain(results)}
    assert named["hparams.lr_sweep"].explained_by is None and named["hparams.lr_sweep"].status is Status.FAIL
    for check_id in ("hparams.optimizer", "overfit.one_batch"):
        assert named[check_id].explained_by == "hparams.lr_sweep" and named[check_id].fix is None
    assert "wreck" not in named["hparams.optimizer"].summary  # its reading is the sweep's to say
    assert [(cause.owner, cause.explains) for cause in causes(list(named.values()))] == [
        ("hparams.lr_sweep", ("hparams.optimizer", "overfit.one_batch"))]
    # The sweep measured the rate and passed it: the rule of thumb points at that measurement all the same.
    measured = explain([results[0], CheckResult("hparams.lr_sweep", "hparams", Status.PASS, "fine", evidence={})])
    assert measured[0].explained_by == "hparams.lr_sweep" and causes(measured) == []
    # Without the sweep's measurement, the rule of thumb stands as its own cause.
    alone = explain([results[0]])
    assert alone[0].explained_by is None and [cause.owner for cause in causes(alone)] == ["hparams.optimizer"]

RENAMED = '''
from tokenizers import BertWordPieceTokenizer

tokenizer = BertWordPieceTokenizer({vocab!r}, lowercase=False)
tokenizer.enable_truncation(max_length=16)
tokenizer.enable_padding(
    pad_id=0, max_length=16)
'''


def test_trace_a_keyword_its_library_renamed_names_the_library_its_version_and_the_keyword_it_takes(
        tmp_path, vocab_file):
    """A tutorial's `enable_padding(max_length=...)` (tokenizers renamed it `length=` in 0.8) stops the script
    before fit: the trace names the library and its installed version, the keyword refused and the nearest one the
    call's own signature takes, and gives the script's own line with it as the fix."""
    from importlib.metadata import version

    script = tmp_path / "notebook.py"
    script.write_text(RENAMED.format(vocab=str(vocab_file)))
    outcome = trace_here(script)
    error = outcome.report["script"]["error"]
    assert error["kind"] == "keyword" and error["where"] == "notebook.py:6", error
    assert error["finding"] == (f"tokenizers {version('tokenizers')} refuses the keyword max_length= of "
                                "tokenizer.enable_padding(): it was renamed or removed, and the nearest keyword it "
                                "takes is length=.")
    assert error["fix"] == "pad_id=0, length=16)"


def test_a_refused_keyword_of_the_scripts_own_function_or_with_no_near_one_lists_what_it_takes(tmp_path):
    import runpy

    from diagnostics.usercode.script_errors import refused_keyword

    def refused(call: str):
        script = tmp_path / "own.py"
        script.write_text(f"def encode(text, size=8):\n    return text\n\n\n{call}\n")
        try:
            runpy.run_path(str(script), run_name="__main__")
        except TypeError as exc:
            return refused_keyword(exc)
        raise AssertionError(f"{call} did not raise")

    finding, fix = refused("encode('a', sizes=4)")
    assert (str(finding), fix) == ("encode() refuses the keyword sizes=: the nearest keyword it takes is size=.",
                                   "encode('a', size=4)")
    finding, fix = refused("encode('a', colour=3)")
    assert (str(finding), fix) == ("encode() refuses the keyword colour=: it takes text=, size=", None)
    assert refused_keyword(TypeError("unsupported operand")) is None


def test_a_classifiers_own_loss_given_to_compile_is_read_as_the_loss_it_computes(demo_model, seeded_models):
    """`compile(loss=model.hf_compute_loss)` (Transformers' older docs) is the classifier's own loss on its logits:
    cross-entropy of class ids, or a squared error for one output; any other function is the script's own loss
    ("custom", trained with as it is); a dict holding one loss is that loss; what is not one loss (one for each of
    several outputs) is still refused."""
    from diagnostics.core.errors import InputError
    from diagnostics.usercode.compile_settings import read_loss

    assert read_loss(demo_model, demo_model.hf_compute_loss, seen=True) == \
        "SparseCategoricalCrossentropy(from_logits=True)"
    regression = seeded_models("demo", 1, 0)
    assert read_loss(regression, regression.hf_compute_loss, seen=True) == "mse"
    assert read_loss(demo_model, lambda labels, logits: logits, seen=True) == "custom"
    assert read_loss(demo_model, {"logits": "mse"}, seen=True) == "mse"
    with pytest.raises(InputError, match="is not a loss the debugger can judge"):
        read_loss(demo_model, {"logits": "mse", "hidden_states": "mse"}, seen=True)


def test_a_column_the_data_lacks_is_named_with_the_columns_it_has_and_its_line_mended():
    """The Transformers tutorial tokenized `dataset["text"]` on a split whose text is "sentence" (transformers PR
    #21201, benchmarks/reported): the trace said only "ValueError: Column 'text' doesn't exist.", with no fix."""
    import pandas as pd
    from datasets import Dataset

    from diagnostics.usercode.script_errors import missing_column

    data = Dataset.from_dict({"sentence": ["a film"], "label": [0]})
    with pytest.raises(ValueError) as raised:
        tokens = data["text"]  # noqa: F841
    finding, fix = missing_column(raised.value)
    assert finding == "The data has no column 'text': its columns are sentence, label."
    assert fix == 'tokens = data["sentence"]'  # its line, without its comment
    frame = pd.DataFrame({"premise": ["a"], "hypothesis": ["b"], "label": [1]})
    with pytest.raises(KeyError) as raised:
        frame["hypotesis"]
    assert missing_column(raised.value) == ("The data has no column 'hypotesis': its columns are premise, "
                                            "hypothesis, label.", 'frame["hypothesis"]')
    assert missing_column(KeyError("text")) is None  # a KeyError of no data: not a column's


def test_create_optimizers_pair_given_as_the_optimizer_is_named_and_never_called_keras_3():
    """tensorflow/tensorflow#43582 (benchmarks/reported): `create_optimizer` returns (optimizer, schedule), and
    `compile` given the pair says "Could not interpret optimizer identifier: <tf_keras.src...PolynomialDecay>", which
    the trace once called "A Keras 3 object was given to a tf-keras model" (tf_keras.src read as keras.src)."""
    import tf_keras
    from transformers import create_optimizer

    from diagnostics.usercode.script_errors import _classify

    model = tf_keras.Sequential([tf_keras.layers.Dense(1)])
    pair = create_optimizer(init_lr=5e-5, num_train_steps=10, num_warmup_steps=0)
    with pytest.raises(ValueError) as raised:
        model.compile(optimizer=pair)
    kind, finding, fix = _classify(raised.value, str(raised.value))
    assert kind == "optimizer_tuple" and "create_optimizer returns both" in finding and "Keras 3" not in finding
    assert fix.startswith("optimizer, schedule = create_optimizer(")


def test_every_split_given_where_one_goes_is_named_with_the_line_that_takes_one():
    """huggingface/transformers#22960 (benchmarks/reported): the quicktour gave `prepare_tf_dataset` the DatasetDict
    `load_dataset` returns ("Dataset argument should be a datasets.Dataset!"); `to_tf_dataset` on it has no such
    attribute. The trace names the dict and its splits, and its fix is the script's line with "train" named, which
    `--repair` writes."""
    from datasets import Dataset, DatasetDict

    from diagnostics.usercode.repair_errors import applied, error_repair
    from diagnostics.usercode.script_errors import _classify

    dataset = DatasetDict(train=Dataset.from_dict({"a": [1]}), test=Dataset.from_dict({"a": [2]}))
    with pytest.raises(AttributeError) as raised:
        tf_dataset = dataset.to_tf_dataset(columns=["a"], batch_size=16)  # the tutorial's  # noqa: F841
    kind, finding, fix = _classify(raised.value, str(raised.value))
    assert (kind, finding) == ("split", "dataset is a DatasetDict, every split at once (train, test), given where "
                                        "one split goes.")
    assert fix == 'tf_dataset = dataset["train"].to_tf_dataset(columns=["a"], batch_size=16)'

    def prepare_tf_dataset(dataset, batch_size):  # Transformers' own check, as TFPreTrainedModel has it
        if not isinstance(dataset, Dataset):
            raise TypeError("Dataset argument should be a datasets.Dataset!")

    with pytest.raises(TypeError) as raised:
        prepare_tf_dataset(dataset, batch_size=16)
    kind, _, fix = _classify(raised.value, str(raised.value))
    assert (kind, fix) == ("split", 'prepare_tf_dataset(dataset["train"], batch_size=16)')
    source = "x = 1\ntf_dataset = model.prepare_tf_dataset(dataset, batch_size=16)  # quicktour\n"
    edits = error_repair(source, {"kind": "split", "where": "train.py:2",
                                  "fix": 'tf_dataset = model.prepare_tf_dataset(dataset["train"], batch_size=16)'})
    assert applied(source, edits).splitlines()[1] == \
        'tf_dataset = model.prepare_tf_dataset(dataset["train"], batch_size=16)  # quicktour'
    assert _classify(TypeError("Dataset argument should be a datasets.Dataset!"), "")[0] == "other"  # no dict seen
    # The validation line of the same script takes the validation split, never the training one again.
    dataset = DatasetDict(train=Dataset.from_dict({"a": [1]}), validation=Dataset.from_dict({"a": [2]}))
    with pytest.raises(AttributeError) as raised:
        tf_val = dataset.to_tf_dataset(columns=["a"], batch_size=16)  # noqa: F841
    assert _classify(raised.value, str(raised.value))[2] == \
        'tf_val = dataset["validation"].to_tf_dataset(columns=["a"], batch_size=16)'



def test_rows_tokenized_one_at_a_time_and_stacked_are_named_with_the_fix(tokenizer):
    """huggingface/transformers#3727 (benchmarks/reported): `encode_plus(text, return_tensors='tf')` in a loop gives
    (1, 128) a row, so the stacked inputs are (rows, 1, 128); the trace names the extra axis of one and the fix (the
    rows joined along the batch axis), which its report carries; another rank is still refused in one sentence."""
    from diagnostics.core.errors import InputError
    from diagnostics.usercode.read_back import read_back

    ids = np.ones((4, 1, 8), dtype=np.int32)
    with pytest.raises(InputError) as raised:
        read_back([({"input_ids": ids, "attention_mask": ids}, np.zeros(4, dtype=np.int64))], tokenizer, task="sst2")
    assert "rows of one row each (shape [4, 1, 8])" in str(raised.value)
    assert raised.value.fix.startswith("input_ids = np.concatenate(input_ids, axis=0)")
    with pytest.raises(InputError) as raised:
        read_back([({"input_ids": np.ones((4, 2, 8), dtype=np.int32)}, np.zeros(4))], tokenizer, task="sst2")
    assert str(raised.value) == "The dataset's input_ids are not batches of rows (shape [4, 2, 8])." \
        and raised.value.fix is None


def test_a_batch_encoding_given_to_a_keras_models_own_fit_is_named_with_its_line_and_a_dict(tokenizer, tmp_path):
    """huggingface/transformers#5939 (benchmarks/reported): `fit(x=tokenizer(...))` on a functional model around an
    encoder; Keras cannot batch the BatchEncoding (only a Transformers model's fit converts one). The finding names
    the model, and the fix is the script's fit line with x as a dict, which `--repair` writes line for line."""
    import tf_keras

    from diagnostics.usercode.repair_errors import applied, error_repair
    from diagnostics.usercode.fit_errors import batch_encoding_to_keras

    ids = tf_keras.layers.Input(shape=(4,), dtype="int32", name="input_ids")
    model = tf_keras.Model(ids, tf_keras.layers.Dense(1)(tf_keras.layers.Embedding(30, 2)(ids)))
    encodings = tokenizer(["a b", "c"], padding=True, return_tensors="tf")
    script = tmp_path / "train.py"
    script.write_text("x = 1\nmodel.fit(x=X_train, y=targets, epochs=3)  # the report's\n")
    finding, fix = batch_encoding_to_keras(model, encodings, str(script), 2)
    assert "BatchEncoding as x, and the model is a Keras model of its own (Functional)" in finding
    assert fix == "model.fit(x=dict(X_train), y=targets, epochs=3)"
    edits = error_repair(script.read_text(), {"kind": "batch_encoding", "where": "train.py:2", "fix": fix})
    assert applied(script.read_text(), edits).splitlines()[1] == \
        "model.fit(x=dict(X_train), y=targets, epochs=3)  # the report's"
    script.write_text("model.fit(tokenizer(texts, padding=True), labels)\n")
    assert batch_encoding_to_keras(model, encodings, str(script), 1)[1] == \
        "model.fit(dict(tokenizer(texts, padding=True)), labels)"
    assert batch_encoding_to_keras(model, dict(encodings), str(script), 1) is None  # a dict is what Keras takes
    numpy = tokenizer(["a b", "c"], padding=True, return_tensors="np")  # Keras batches a BatchEncoding of arrays
    assert batch_encoding_to_keras(model, numpy, str(script), 1) is None
    assert batch_encoding_to_keras(model, encodings, None, None)[1].startswith("model.fit(x=dict(encodings)")


def test_a_bare_encoder_given_to_fit_is_named_once_with_the_class_that_has_a_head(bert_checkpoint, bert_tokenizer):
    """huggingface/transformers#5151 (benchmarks/reported): `TFAutoModel`'s TFBertModel trained as a classifier.
    Its config still says num_labels=2, which once read as a classifier: model.config passed it and six checks
    failed on its hidden states ("the check itself failed"). Now one sentence names it, with the class to use."""
    import numpy as np
    from transformers import TFAutoModel

    from diagnostics.core.errors import InputError
    from diagnostics.usercode.api import capture
    from diagnostics.usercode.own_code import build_run

    model = TFAutoModel.from_pretrained(bert_checkpoint)
    model.compile(optimizer="adam")
    ids = dict(bert_tokenizer(["a b c", "d e"], padding="max_length", max_length=8, return_tensors="np"))
    with pytest.raises(InputError) as raised:
        build_run(capture(model, (ids, np.array([0, 1])), bert_tokenizer, "sst2"))
    assert str(raised.value).startswith("TFBertModel is a bare encoder: it has no classification head")
    assert raised.value.kind == "no_head"
    assert raised.value.fix.startswith('model = TFAutoModelForSequenceClassification.from_pretrained("')


def test_num_labels_set_on_the_config_after_loading_is_named_once(bert_checkpoint, bert_tokenizer):
    """huggingface/transformers#2992 (benchmarks/reported): `model.config.num_labels = 1` after `from_pretrained`
    leaves a head of two outputs. The checks once read the config: data.label_range failed half the labels as
    outside [0, 1), model.forward failed the logits' width, and four checks failed themselves copying the head."""
    import numpy as np
    from transformers import TFAutoModelForSequenceClassification

    from diagnostics.core.errors import InputError
    from diagnostics.usercode.api import capture
    from diagnostics.usercode.own_code import build_run

    model = TFAutoModelForSequenceClassification.from_pretrained(bert_checkpoint)
    model.config.num_labels = 1
    ids = dict(bert_tokenizer(["a b c", "d e"], padding="max_length", max_length=8, return_tensors="np"))
    with pytest.raises(InputError) as raised:
        build_run(capture(model, (ids, np.array([0, 1])), bert_tokenizer, "sst2"))
    assert str(raised.value).startswith("The model's config says num_labels=1, but its classification head has 2 "
                                        "outputs")
    assert raised.value.kind == "num_labels_after_load"
    assert raised.value.fix.startswith("model = TFBertForSequenceClassification.from_pretrained(")
    model.config.num_labels = 2  # as it loads: no refusal
    build_run(capture(model, (ids, np.array([0, 1])), bert_tokenizer, "sst2"))


def test_threshold_metrics_on_a_models_logits_are_named_with_the_compile_line(bert_checkpoint, tmp_path):
    """huggingface/transformers#10075 (benchmarks/reported): `metrics=[Precision(), Recall()]` on a classifier's two
    logits a row stops fit ("Shapes (None, 2) and (None, 1) are incompatible"). Named with the compile line, its
    metrics replaced; a single sigmoid output, which these metrics read, is left alone."""
    import tf_keras
    from transformers import TFAutoModelForSequenceClassification

    from diagnostics.usercode.fit_errors import threshold_metrics_on_logits

    model = TFAutoModelForSequenceClassification.from_pretrained(bert_checkpoint)
    script = tmp_path / "train.py"
    script.write_text("model.compile(optimizer=opt, loss=loss, metrics=[Precision(), Recall()])  # the report's\n")
    metrics = [tf_keras.metrics.Precision(), tf_keras.metrics.Recall()]
    finding, fix = threshold_metrics_on_logits(model, metrics, str(script), 1)
    assert str(finding) == ("compile's metrics Precision, Recall read each output as one class's probability in "
                            "[0, 1], but the model gives 2 logits a row: fit stops at its first step.")
    assert fix == 'model.compile(optimizer=opt, loss=loss, metrics=["accuracy"])'
    assert threshold_metrics_on_logits(model, ["auc", "accuracy"], None, None)[1].startswith(
        "model.compile(..., metrics=['accuracy'])")
    assert threshold_metrics_on_logits(model, ["accuracy"], str(script), 1) is None
    script.write_text("model.compile(optimizer=opt, loss=loss,\n              metrics=[Precision(), Recall()])\n")
    assert threshold_metrics_on_logits(model, metrics, str(script), 1)[1] == 'metrics=["accuracy"])'  # its line
    ids = tf_keras.layers.Input(shape=(4,), dtype="int32")
    sigmoid = tf_keras.Model(ids, tf_keras.layers.Dense(1, activation="sigmoid")(tf_keras.layers.Flatten()(
        tf_keras.layers.Embedding(30, 2)(ids))))
    assert threshold_metrics_on_logits(sigmoid, metrics, str(script), 1) is None


def test_keras_3_callbacks_given_to_fit_are_named_though_the_brief_fit_runs_none():
    """tensorflow/tensorflow#40548 (benchmarks/reported): `EarlyStopping` from tensorflow.keras (Keras 3 since
    TensorFlow 2.16) given to a tf-keras model's fit. The trace's brief fit after the checks runs no callbacks, so
    the script's own fit would be the first to refuse them: the trace names them at fit, with tf-keras's import."""
    import keras
    import tf_keras

    from diagnostics.usercode.fit_errors import keras_3_callbacks

    finding, fix = keras_3_callbacks([tf_keras.callbacks.EarlyStopping(), keras.callbacks.EarlyStopping()])
    assert "(keras EarlyStopping given to fit(callbacks=...))" in str(finding) and fix.startswith("import tf_keras")
    assert keras_3_callbacks([tf_keras.callbacks.EarlyStopping()]) is None and keras_3_callbacks(None) is None


def test_the_heads_readings_never_refuse_a_healthy_model(bert_checkpoint):
    """The review of stop 81: a head assigned before its encoder (CTRL's) is not the last kernel, and a model built
    from its config has no weights yet; a language-model head is not a bare encoder; labels one-hot or multi-hot
    (a categorical or binary cross-entropy) take Precision and Recall, as does a metric class of the user's own."""
    import types

    import tf_keras
    from transformers import BertConfig, TFBertForSequenceClassification, TFBertLMHeadModel

    from diagnostics.usercode.own_code import _built_head_width, _is_bare_encoder
    from diagnostics.usercode.fit_errors import threshold_metrics_on_logits

    def kernel(width):
        return types.SimpleNamespace(name="dense/kernel:0", shape=(8, width))

    head_first = types.SimpleNamespace(built=True, weights=[kernel(2), kernel(1280)],
                                       config=types.SimpleNamespace(num_labels=2))
    assert _built_head_width(head_first) is None
    assert _built_head_width(types.SimpleNamespace(built=True, weights=[kernel(384), kernel(2)],
                                                   config=types.SimpleNamespace(num_labels=1))) == 2
    config = BertConfig.from_pretrained(bert_checkpoint)
    assert _built_head_width(TFBertForSequenceClassification(config)) is None  # not built: no weights to read
    assert not _is_bare_encoder(TFBertLMHeadModel(config))
    model = TFBertForSequenceClassification(config)
    metrics = [tf_keras.metrics.Precision(), tf_keras.metrics.Recall()]
    assert threshold_metrics_on_logits(model, metrics, None, None, loss="categorical_crossentropy") is None
    assert threshold_metrics_on_logits(model, metrics, None, None, loss=tf_keras.losses.BinaryCrossentropy()) is None
    assert threshold_metrics_on_logits(model, metrics, None, None, loss="sparse_categorical_crossentropy") is not None

    class Precision:  # the user's own, which takes the argmax first
        pass

    assert threshold_metrics_on_logits(model, [Precision()], None, None) is None
