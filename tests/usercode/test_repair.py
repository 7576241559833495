"""The script rewriter (diagnostics/usercode/repair.py) on scripts written the ways users write them: each fix made at
its one place, every other character kept, and a fix with no place to go said with its reason."""

import ast
import json
import textwrap

import pytest

from conftest import ROOT
from diagnostics.usercode.repair import Change, repair

RATE = Change("hparams.lr_sweep", "learning_rate", 3e-5)


def only_changed(original: str, repaired: str) -> list[tuple[str, str]]:
    """The (before, after) pairs of the lines that differ; the line count is kept."""
    before, after = original.splitlines(), repaired.splitlines()
    assert len(before) == len(after)
    return [(old, new) for old, new in zip(before, after, strict=True) if old != new]


def test_a_rate_is_changed_in_the_users_own_optimizer_call_keeping_its_comments_and_spacing():
    source = textwrap.dedent("""\
        import tf_keras as K  # Keras 2, as Transformers' TF models need
        optimizer = K.optimizers.Adam(
            learning_rate = 1e-3 ,   # Keras's default
            epsilon=1e-8)
        model.compile(optimizer=optimizer,loss=loss)  # no metrics
        model.fit(x, y, epochs=3)
        """)
    repaired = repair(source, [RATE], keras="K")
    assert only_changed(source, repaired.source) == [("    learning_rate = 1e-3 ,   # Keras's default",
                                                      "    learning_rate = 3e-05 ,   # Keras's default")]
    assert [(edit.line, edit.before, edit.after) for edit in repaired.edits] == [(3, "1e-3", "3e-05")]
    assert repaired.unrepaired == []
    ast.parse(repaired.source)


def test_the_string_adam_becomes_an_object_in_the_scripts_own_keras_name():
    source = "from tensorflow import keras as tfk\nmodel.compile(optimizer='adam', loss=loss)\nmodel.fit(x, y)\n"
    repaired = repair(source, [RATE], keras="tfk")
    assert "model.compile(optimizer=tfk.optimizers.Adam(learning_rate=3e-05), loss=loss)" in repaired.source


def test_a_rate_given_by_a_schedule_create_optimizer_or_positionally_is_changed_where_it_is_given():
    schedule = textwrap.dedent("""\
        base_rate = 5e-3
        schedule = keras.optimizers.schedules.PolynomialDecay(initial_learning_rate=base_rate, decay_steps=100)
        model.compile(optimizer=keras.optimizers.Adam(learning_rate=schedule))
        """)
    assert only_changed(schedule, repair(schedule, [RATE]).source) == [("base_rate = 5e-3", "base_rate = 3e-05")]
    created = "optimizer, schedule = create_optimizer(init_lr=1e-3, num_train_steps=500, num_warmup_steps=0)\n"
    assert "create_optimizer(init_lr=3e-05, num_train_steps=500" in repair(created, [RATE]).source
    helper = "def build():\n    return keras.optimizers.Adam(1e-3)  # in a helper\n\nmodel.compile(optimizer=build())\n"
    assert "return keras.optimizers.Adam(3e-05)  # in a helper" in repair(helper, [RATE]).source
    bare = "model.compile(optimizer=tf_keras.optimizers.Adam(), loss=loss)\n"
    assert "tf_keras.optimizers.Adam(learning_rate=3e-05)" in repair(bare, [RATE]).source


def test_a_rate_from_argparse_is_changed_at_the_options_default():
    source = textwrap.dedent("""\
        parser = argparse.ArgumentParser()
        parser.add_argument("--learning-rate", type=float, default=1e-3, help="the rate")
        args = parser.parse_args()
        optimizer = keras.optimizers.Adam(learning_rate=args.learning_rate)
        """)
    assert only_changed(source, repair(source, [RATE]).source) == [(
        '''parser.add_argument("--learning-rate", type=float, default=1e-3, help="the rate")''',
        '''parser.add_argument("--learning-rate", type=float, default=3e-05, help="the rate")''')]


def test_a_computed_rate_is_left_as_it_is_and_said_why():
    source = "optimizer = keras.optimizers.Adam(learning_rate=base * scale)\n"
    repaired = repair(source, [RATE])
    assert repaired.source == source and repaired.edits == []
    assert [(left.owner, left.reason) for left in repaired.unrepaired] == [
        ("hparams.lr_sweep", "the value is computed (base * scale), with no one number in the script to change")]


def test_num_labels_goes_to_the_classifier_and_never_to_the_tokenizer():
    source = textwrap.dedent("""\
        tokenizer = AutoTokenizer.from_pretrained(checkpoint)
        model = TFAutoModelForSequenceClassification.from_pretrained(
            checkpoint,
        )
        """)
    repaired = repair(source, [Change("model.config", "num_labels", 3)])
    assert repaired.source.splitlines()[0] == source.splitlines()[0]
    assert "    checkpoint, num_labels=3,\n)" in repaired.source
    ast.parse(repaired.source)
    given = "model = TFBertForSequenceClassification.from_pretrained(name, num_labels=2)\n"
    assert "from_pretrained(name, num_labels=3)" in repair(given, [Change("model.config", "num_labels", 3)]).source

def test_a_head_of_the_users_own_is_widened_at_its_last_dense_layer_below_the_classes():
    functional = textwrap.dedent("""\
        NUM_CLASSES = 2  # sentiment
        encoder = TFAutoModel.from_pretrained(name)
        hidden = keras.layers.Dense(64, activation="relu")(encoder.output)
        head = keras.layers.Dense(NUM_CLASSES, activation="softmax")(hidden)
        model = keras.Model(encoder.input, head)
        """)
    repaired = repair(functional, [Change("model.config", "num_labels", 3)])
    # The number the output layer reads, where the script gives it; the hidden layer (wider) is left alone.
    assert only_changed(functional, repaired.source) == [
        ("NUM_CLASSES = 2  # sentiment", "NUM_CLASSES = 3  # sentiment")
    ]
    keyword = "head = keras.layers.Dense(units=2, activation='softmax')(x)\n"
    assert "Dense(units=3, activation='softmax')" in repair(keyword, [Change("model.config", "num_labels", 3)]).source
    plain = "encoder = TFAutoModel.from_pretrained(name)\nhead = keras.layers.Dense(2)(encoder.output)\n"
    assert "Dense(3)(encoder.output)" in repair(plain, [Change("model.config", "num_labels", 3)]).source
    wide = "encoder = TFAutoModel.from_pretrained(name)\nhead = keras.layers.Dense(64)(encoder.output)\n"
    left = repair(wide, [Change("model.config", "num_labels", 3)])
    assert left.source == wide and "widen its last layer" in left.unrepaired[0].reason


def test_the_loss_is_changed_at_the_compile_before_the_fit_the_trace_checked():
    source = textwrap.dedent("""\
        import tf_keras
        model.compile(optimizer=opt, loss="sparse_categorical_crossentropy")
        model.fit(x, y)  # fit 1
        model.compile(optimizer=opt2)
        model.fit(x, y)  # fit 2
        """)
    loss = "tf_keras.losses.SparseCategoricalCrossentropy(from_logits=True)"
    first = repair(source, [Change("hparams.loss", "loss", loss)], before_line=3)
    assert only_changed(source, first.source) == [
        (
            'model.compile(optimizer=opt, loss="sparse_categorical_crossentropy")',
            f"model.compile(optimizer=opt, loss={loss})",
        )
    ]
    second = repair(source, [Change("hparams.loss", "loss", loss)], before_line=5)
    assert only_changed(source, second.source) == [("model.compile(optimizer=opt2)",
                                                    f"model.compile(optimizer=opt2, loss={loss})")]
    loop = "with tf.GradientTape() as tape:\n    loss = loss_fn(y, model(x))\n"
    assert "never calls compile" in repair(loop, [Change("hparams.loss", "loss", loss)]).unrepaired[0].reason


def test_a_fix_that_reads_a_keras_the_script_never_imported_brings_its_import():
    source = "import argparse\nfrom transformers import TFAutoModel  # the model\n\nmodel.compile(loss='mse')\n"
    loss = "tf_keras.losses.SparseCategoricalCrossentropy(from_logits=True)"
    repaired = repair(source, [Change("hparams.loss", "loss", loss)])
    assert repaired.source == ("import argparse\nfrom transformers import TFAutoModel  # the model\nimport tf_keras\n"
                               f"\nmodel.compile(loss={loss})\n")
    imported = "import tf_keras as K\nmodel.compile(loss='mse')\n"
    assert "import tf_keras\n" not in repair(imported, [Change("hparams.loss", "loss", "K.losses.MSE")]).source


def test_a_loss_taken_out_leaves_the_other_arguments_as_they_were():
    out = Change("hparams.loss", "loss", None)
    assert repair("model.compile(loss='mse', optimizer=opt)\n", [out]).source == "model.compile(optimizer=opt)\n"
    assert repair("model.compile(optimizer=opt,\n    loss='mse')\n", [out]).source == "model.compile(optimizer=opt)\n"


def test_text_before_an_edit_on_its_line_in_any_script_keeps_its_place():
    source = 'label = "négatif"; optimizer = Adam(1e-3)  # taux d\'apprentissage\n'
    assert repair(source, [RATE]).source == 'label = "négatif"; optimizer = Adam(3e-05)  # taux d\'apprentissage\n'


def test_two_fixes_at_once_and_their_diff():
    source = "model = TFAutoModelForSequenceClassification.from_pretrained(c, num_labels=2)\n" \
             "model.compile(optimizer=Adam(1e-3))\nmodel.fit(x, y)\n"
    repaired = repair(source, [RATE, Change("model.config", "num_labels", 3)])
    assert [edit.owner for edit in repaired.edits] == ["model.config", "hparams.lr_sweep"]
    diff = repaired.diff(source, "train.py")
    assert diff.startswith("--- train.py\n+++ train.repaired.py\n")
    assert "-model.compile(optimizer=Adam(1e-3))\n" in diff and "+model.compile(optimizer=Adam(3e-05))\n" in diff
    assert "\n model.fit(x, y)\n" in diff  # the unchanged line, as context


def test_the_changes_come_from_each_causes_own_fix_and_the_rest_say_why():
    from diagnostics.usercode.repair_plan import changes_of

    causes = [{"owner": "model.config", "fix": "TFAutoModelForSequenceClassification.from_pretrained(checkpoint, "
                                                "num_labels=3, id2label={0: 'a', 1: 'b', 2: 'c'}, label2id={...})"},
              {"owner": "hparams.loss", "fix": "model.compile(optimizer=optimizer, "
                                               "loss=tf_keras.losses.SparseCategoricalCrossentropy(from_logits=True)) "
                                               " # or no loss= at all"},
              {"owner": "hparams.lr_sweep", "fix": "keras.optimizers.Adam(learning_rate=2e-05)"},
              {"owner": "hparams.loss", "fix": "model.compile(optimizer=optimizer)  # no loss= : the model's internal "
                                               "loss reads the labels itself"},
              {"owner": "hparams.optimizer", "fix": "tf_keras.optimizers.Adam(learning_rate=3e-03)"},
              {"owner": "data.label_range", "fix": "filter the rows"}]
    changes, left = changes_of(causes)
    assert [(change.owner, change.kind, change.value) for change in changes] == [
        ("model.config", "num_labels", 3),
        ("hparams.loss", "loss", "tf_keras.losses.SparseCategoricalCrossentropy(from_logits=True)"),
        ("hparams.lr_sweep", "learning_rate", 2e-05), ("hparams.loss", "loss", None)]
    # A rate the sweep did not measure is not written in (the optimizer's own is the checkpoint's usual rate).
    assert [item.owner for item in left] == ["hparams.optimizer", "data.label_range"]
    assert "hparams.lr_sweep has measured one" in left[0].reason and "relabel the rows" in left[1].reason


SCRIPT = ROOT / "diagnostics" / "demo_data" / "scripts" / "course_script_repaired.py"
DATA = ROOT / "diagnostics" / "demo_data" / "mnli"


# full tier: traces the script twice; the default tier plans repairs on recorded reports (this file) and in the
# matrix's slice
@pytest.mark.slow
@pytest.mark.subprocess
def test_trace_repair_writes_the_fixed_script_beside_and_verifies_it_by_tracing_it_again(tmp_path, capsys):
    from diagnostics.__main__ import main

    script = tmp_path / "train.py"
    script.write_text(SCRIPT.read_text())
    report = tmp_path / "report.json"
    junit = tmp_path / "report.xml"
    markdown = tmp_path / "report.md"
    code = main(["trace", str(script), "--repair", "--json", str(report), "--junit", str(junit), "--markdown",
                 str(markdown), "--", "--train", str(DATA / "train.jsonl"), "--validation",
                 str(DATA / "validation_matched.jsonl")])
    printed = capsys.readouterr().out
    assert code == 1  # the user's script, unchanged, still has its causes
    assert script.read_text() == SCRIPT.read_text()
    repaired = tmp_path / "train.repaired.py"
    # Two rounds in one --repair: the head the labels need and no loss= (the labels sit in the input dict, so
    # hparams.loss's fix is the model's own loss, which reads them); then, the sweep able to run on the repaired
    # script, the rate it measured written into the string 'adam' (with the import the object needs).
    assert [line for line in repaired.read_text().splitlines() if line not in SCRIPT.read_text().splitlines()] == [
        "import tf_keras",
        "model = TFAutoModelForSequenceClassification.from_pretrained(model_checkpoint, num_labels=3)",
        "model.compile(optimizer=tf_keras.optimizers.Adam(learning_rate=2e-03))"]
    assert "+++ train.repaired.py" in printed and "model.config: repaired and verified" in printed
    assert "repaired again (round 2)" in printed
    written = json.loads(report.read_text())["repair"]
    assert written["file"] == str(repaired) and {edit["owner"] for edit in written["edits"]} == {
        "model.config", "hparams.loss", "hparams.optimizer"}
    assert {item["owner"]: item["state"] for item in written["causes"]} == {
        "model.config": "verified", "hparams.loss": "verified", "hparams.optimizer": "verified"}
    assert written["retrace_causes"] == [[]]  # the repaired script traces clean
    # JUnit says the same: a case per cause, the one left unrepaired skipped with why, the diff with the suite.
    from xml.etree import ElementTree as ET

    suite = next(suite for suite in ET.parse(junit).getroot() if suite.get("name") == "repair")
    cases = {case.get("name"): case for case in suite.iter("testcase")}
    assert set(cases) == {"repair.model.config", "repair.hparams.loss", "repair.hparams.optimizer"}
    assert suite.get("failures") == "0" and not any(case.find("skipped") is not None for case in cases.values())
    assert "+++ train.repaired.py" in suite.find("system-out").text
    # And the Markdown: where the repaired script is, each cause's verdict, the diff.
    said = markdown.read_text()
    assert f"## Repair\n\nThe repaired script: `{repaired}`" in said
    from markdown_it import MarkdownIt

    shown = MarkdownIt("commonmark").render(said)  # as a reader sees it: the verdicts' values are escaped
    assert "<li>model.config: repaired and verified" in shown
    assert "<li>hparams.optimizer: repaired and verified" in shown
    assert "```diff\n--- train.py\n+++ train.repaired.py" in said
    # Refused before anything runs: the user's script is never written over.
    assert main(["trace", str(script), "--repair", str(script)]) == 2
    assert "write over the script itself" in capsys.readouterr().err
    # A script that stops before fit (its data file missing) has nothing to repair yet, and says so.
    repaired.unlink()
    assert main(["trace", str(script), "--repair", "--", "--train", str(tmp_path / "none.jsonl")]) == 1
    assert "did not reach fit" in capsys.readouterr().out and not repaired.exists()


def test_a_repair_is_verified_when_nothing_new_is_named_and_a_measurement_taking_over_a_cause_is_not_new():
    from diagnostics.usercode.repair import Edit, Repair
    from diagnostics.usercode.repair_run import verdicts

    fixed = Repair("", [Edit("model.config", 1, "", ", num_labels=3")], [])
    before = [{"causes": [{"owner": "model.config"}, {"owner": "hparams.optimizer"}]}]

    def after(*causes):
        return {"script": {"reached_fit": True, "error": None}, "causes": list(causes), "checks": []}

    # The sweep, blocked before, now runs and owns the rate the optimizer's rule warned of: the same cause.
    taken_over = after({"owner": "hparams.lr_sweep", "explains": ["hparams.optimizer"]})
    assert verdicts(fixed, before, taken_over)[0]["state"] == "verified"
    new = after({"owner": "data.label_range", "explains": []})
    assert verdicts(fixed, before, new)[0] == {"owner": "model.config", "state": "not_verified",
                                               "named_after": ["data.label_range"]}
    assert verdicts(fixed, before, after({"owner": "model.config"}))[0]["state"] == "not_verified"
    # A mended error (the batch given as a BatchEncoding) let the checks run for the first time: what they name then
    # (padding) was never seen, so the error's mend is verified, and the padding is the trace's own finding.
    mended = Repair("", [Edit("error:batch_encoding", 1, "fit(x=X)", "fit(x=dict(X))")], [])
    assert verdicts(mended, [], new)[0] == {"owner": "error:batch_encoding", "state": "verified", "named_after": []}
    # Past it to another error at the same fit (the metrics compile gave): still mended, not "did not reach fit".
    other = {"script": {"reached_fit": True, "error": {"kind": "metrics"}}, "causes": [], "checks": []}
    assert verdicts(mended, [], other)[0]["state"] == "verified"
    again = {"script": {"reached_fit": True, "error": {"kind": "batch_encoding"}}, "causes": [], "checks": []}
    assert verdicts(mended, [], again)[0]["state"] == "not_reached"
    stopped = {"script": {"reached_fit": False, "error": {"where": "x"}}, "causes": [], "checks": []}
    assert verdicts(fixed, before, stopped)[0]["state"] == "not_reached"
    assert verdicts(fixed, before, None)[0]["state"] == "not_reached"


# Scripts written for other purposes (tests/scripts: a Hugging Face run_glue-style script with argparse dataclasses,
# a tutorial's functional model on a Sequence, freeze-then-fine-tune, a GradientTape loop), each fix tried on each:
# the one line it changes, or why it changes none.
FOREIGN = {
    ("glue_classifier.py", "num_labels"): "the value is computed (num_labels)",  # the config's, from the data's labels
    ("glue_classifier.py", "loss"): "compile's arguments come from a dict (**{key: value",  # a second loss= would raise
    ("glue_classifier.py", "learning_rate"): "the value is computed (training_args.learning_rate)",
    ("semantic_similarity.py", "num_labels"): "no sequence classifier is loaded with from_pretrained",
    ("semantic_similarity.py", "loss"): ('loss="categorical_crossentropy"', "loss=SparseCategoricalCrossentropy()"),
    ("semantic_similarity.py", "learning_rate"): "the value is computed (FINE_TUNING_RATE)",  # float(sys.argv[3])
    ("freeze_then_fine_tune.py", "num_labels"): ("num_labels=2", "num_labels=3"),
    ("freeze_then_fine_tune.py", "loss"): ("loss=loss", "loss=SparseCategoricalCrossentropy()"),
    ("freeze_then_fine_tune.py", "learning_rate"): ("default=2e-5", "default=3e-05"),
    ("tape_loop.py", "num_labels"): ("num_labels=2", "num_labels=3"),
    ("tape_loop.py", "loss"): "the script never calls compile",
    ("tape_loop.py", "learning_rate"): "the value is computed (rate)",
}
CHANGES = {"num_labels": Change("model.config", "num_labels", 3),
           "loss": Change("hparams.loss", "loss", "SparseCategoricalCrossentropy()"), "learning_rate": RATE}


@pytest.mark.parametrize("script, kind", sorted(FOREIGN), ids=lambda value: str(value))
def test_a_script_written_for_something_else_gets_one_line_changed_or_the_reason_it_cannot(script, kind):
    source = (ROOT / "tests" / "scripts" / script).read_text()
    repaired = repair(source, [CHANGES[kind]])
    expected = FOREIGN[(script, kind)]
    ast.parse(repaired.source)
    if isinstance(expected, str):
        assert repaired.source == source and repaired.edits == []
        assert [str(left.reason) for left in repaired.unrepaired if expected in str(left.reason)], repaired.unrepaired
        return
    (before, after), = only_changed(source, repaired.source)
    assert before.replace(*expected) == after, (before, after)


def test_num_labels_of_a_classifier_built_from_a_config_goes_to_the_config():
    """`from_pretrained(name, config=config)` refuses a num_labels of its own: the config's call gets it."""
    source = textwrap.dedent("""\
        config = AutoConfig.from_pretrained(name, num_labels=2)  # binary
        model = TFAutoModelForSequenceClassification.from_pretrained(name, config=config)
        """)
    change = Change("model.config", "num_labels", 3)
    assert only_changed(source, repair(source, [change]).source) == [(
        "config = AutoConfig.from_pretrained(name, num_labels=2)  # binary",
        "config = AutoConfig.from_pretrained(name, num_labels=3)  # binary")]
    bare = source.replace(", num_labels=2", "")
    assert "config = AutoConfig.from_pretrained(name, num_labels=3)" in repair(bare, [change]).source
    elsewhere = "model = TFAutoModelForSequenceClassification.from_pretrained(name, config=make_config())\n"
    left = repair(elsewhere, [change])
    assert left.edits == [] and "takes its configuration from config=make_config()" in str(left.unrepaired[0].reason)


def test_a_model_input_left_out_of_columns_is_added_to_the_scripts_own_list():
    """data.columns's fix names the columns; the script's list gets the inputs it left out, in its own quotes, and
    labels given apart with label_cols= stay apart."""
    from diagnostics.usercode.repair_plan import changes_of

    fix = "to_tf_dataset(columns=['input_ids', 'attention_mask', 'label'], ...)"
    (change,), left = changes_of([{"owner": "data.columns", "fix": fix}])
    assert left == [] and change.kind == "columns"
    source = textwrap.dedent("""\
        train = tokenized["train"].to_tf_dataset(columns=["input_ids", "label"], batch_size=16,  # the course's
                                                 shuffle=True, collate_fn=collator)
        model.fit(train)
        """)
    assert only_changed(source, repair(source, [change]).source) == [(
        '''train = tokenized["train"].to_tf_dataset(columns=["input_ids", "label"], batch_size=16,  # the course's''',
        '''train = tokenized["train"].to_tf_dataset(columns=["input_ids", "label", "attention_mask"], batch_size=16,'''
        '''  # the course's''')]
    apart = 'COLUMNS = ["input_ids"]\nds = split.to_tf_dataset(columns=COLUMNS, label_cols=["label"])\n'
    assert only_changed(apart, repair(apart, [change]).source) == [
        ('COLUMNS = ["input_ids"]', 'COLUMNS = ["input_ids", "attention_mask"]')]
    computed = "ds = split.to_tf_dataset(columns=names + extra)\n"
    assert "the columns are computed (names + extra)" in str(repair(computed, [change]).unrepaired[0].reason)


# full tier: four traces of the course's script; the default tier plans each round on recorded reports (below)
@pytest.mark.slow
@pytest.mark.subprocess
def test_one_repair_takes_the_courses_script_as_written_from_its_first_error_to_a_clean_trace(tmp_path, capsys):
    from diagnostics.__main__ import main

    script = tmp_path / "course.py"
    script.write_text((ROOT / "diagnostics" / "demo_data" / "scripts" / "course_script.py").read_text())
    report = tmp_path / "report.json"
    main(["trace", str(script), "--repair", "--json", str(report), "--", "--train", str(DATA / "train.jsonl"),
          "--validation", str(DATA / "validation_matched.jsonl")])
    written = json.loads(report.read_text())["repair"]
    assert {item["owner"]: item["state"] for item in written["causes"]} == {
        "data.columns": "verified", "model.config": "verified", "hparams.loss": "verified",
        "hparams.optimizer": "verified"}
    assert written["retrace_causes"] == [[]]
    repaired = (tmp_path / "course.repaired.py").read_text()
    assert repaired.count("collate_fn=DataCollatorWithPadding(tokenizer, return_tensors='np')") == 2
    assert "from transformers import DataCollatorWithPadding" in repaired


COURSE = (ROOT / "diagnostics" / "demo_data" / "scripts" / "course_script.py").read_text()


def test_a_cause_that_stops_the_script_before_fit_is_repaired_at_the_call_that_raised():
    from diagnostics.usercode.repair_run import checked, planned

    stopped = {"script": {"reached_fit": False, "error": {"where": "course.py:43"}}, "run": {}, "causes": [{
        "owner": "data.columns", "fix": "to_tf_dataset(columns=['input_ids', 'attention_mask', 'label'], "
                                        "collate_fn=DataCollatorWithPadding(tokenizer, return_tensors='np'), ...)"}]}
    assert len(checked(stopped)) == 1
    fixed = planned(COURSE, stopped)
    assert fixed.unrepaired == [] and {edit.owner for edit in fixed.edits} == {"data.columns"}
    changed = [line for line in fixed.source.splitlines() if line not in COURSE.splitlines()]
    assert changed == ["from transformers import DataCollatorWithPadding",
                       '    columns=["input_ids", "attention_mask", "label"], batch_size=16, shuffle=True, '
                       "collate_fn=DataCollatorWithPadding(tokenizer, return_tensors='np')"]
    # A script stopped by something no check measured (a missing file) has nothing to repair.
    assert checked({"script": {"reached_fit": False, "error": {"where": "course.py:29"}}, "causes": []}) == []


def test_the_optimizers_rate_is_written_once_the_sweep_has_measured_it():
    from diagnostics.usercode.repair_plan import changes_of
    from diagnostics.usercode.repair_run import planned

    cause = {"owner": "hparams.optimizer", "fix": "tf_keras.optimizers.Adam(learning_rate=2e-03)"}
    assert changes_of([cause])[0] == []  # the sweep did not run: no rate is written
    (change,), left = changes_of([cause], measured=0.002154434690031882)
    assert (change.kind, change.value, left) == ("learning_rate", 2e-3, [])
    fit = {"phase": {"at": "course.py:58"}, "causes": [cause], "checks": [
        {"id": "hparams.lr_sweep", "stage": "hparams", "status": "pass", "summary": "",
         "evidence": {"best_rate": 0.002154434690031882}}]}
    report = {"script": {"reached_fit": True}, "run": {}, **fit}
    assert 'optimizer=tf_keras.optimizers.Adam(learning_rate=2e-03)' in planned(COURSE, report).source


def test_the_repaired_copy_never_goes_through_a_link_nor_over_a_file(tmp_path):
    """A link planted where the repaired copy goes (train.repaired.py -> precious.txt) is left alone, and so is a
    file of that name: the copy takes the first free name beside it, and a later round writes that same file again,
    still never through a link."""
    from diagnostics.core.errors import InputError
    from diagnostics.usercode.repair_run import write_repaired

    precious = tmp_path / "precious.txt"
    precious.write_text("keep me")
    (tmp_path / "train.repaired.py").symlink_to(precious)
    (tmp_path / "train.repaired-2.py").write_text("an earlier repair")
    written = write_repaired(tmp_path / "train.repaired.py", "fixed = 1\n")
    assert written == tmp_path / "train.repaired-3.py" and written.read_text() == "fixed = 1\n"
    assert precious.read_text() == "keep me" and (tmp_path / "train.repaired-2.py").read_text() == "an earlier repair"
    assert write_repaired(written, "fixed = 2\n", made=True) == written and written.read_text() == "fixed = 2\n"
    written.unlink()
    written.symlink_to(precious)  # swapped for a link between two rounds
    with pytest.raises(InputError, match="Cannot write the repaired script"):
        write_repaired(written, "fixed = 3\n", made=True)
    assert precious.read_text() == "keep me"


def test_an_error_before_fit_whose_fix_is_code_is_repaired_line_for_line():
    """benchmarks/reported: "--repair: nothing was repaired, as the script did not reach fit" on a Keras 3 import
    (tensorflow/tensorflow#64250), a column the data lacks (transformers PR #21201) and create_optimizer's pair
    (tensorflow/tensorflow#43582), each with a fix of code the trace had named."""
    from diagnostics.usercode.repair_errors import applied, error_repair

    source = ("import os\nfrom tensorflow.keras.optimizers import Adam\nfrom tensorflow import keras\n"
              "tokens = tokenizer(list(data['text']), padding=True)  # the tutorial's\n"
              "optimizer = transformers.create_optimizer(init_lr=5e-5, num_train_steps=9, num_warmup_steps=0)\n")
    keras = error_repair(source, {"kind": "stack", "fix": "import tf_keras as keras  # or ..."})
    assert [(edit.line, edit.after) for edit in keras] == [(2, "from tf_keras.optimizers import Adam"),
                                                           (3, "import tf_keras as keras")]
    through_tf = ("import tensorflow as tf  # the course's\n"
                  "opt = tf.keras.optimizers.Adam(learning_rate=tf.keras.optimizers.schedules.PolynomialDecay(5e-5, "
                  "9))\nmodel.compile(opt, loss=tf.losses.SparseCategoricalCrossentropy(from_logits=True), "
                  "metrics=tf.metrics.SparseCategoricalAccuracy())\nx = tf.constant(1)\n")
    assert applied(through_tf, error_repair(through_tf, {"kind": "stack", "fix": "import tf_keras as keras"})) == (
        "import tensorflow as tf, tf_keras  # the course's\n"
        "opt = tf_keras.optimizers.Adam(learning_rate=tf_keras.optimizers.schedules.PolynomialDecay(5e-5, 9))\n"
        "model.compile(opt, loss=tf_keras.losses.SparseCategoricalCrossentropy(from_logits=True), "
        "metrics=tf_keras.metrics.SparseCategoricalAccuracy())\nx = tf.constant(1)\n")  # TensorFlow's own stays
    column = error_repair(source, {"kind": "column", "where": "train.py:4",
                                   "fix": "tokens = tokenizer(list(data['sentence']), padding=True)"})
    assert applied(source, column).splitlines()[3] == \
        "tokens = tokenizer(list(data['sentence']), padding=True)  # the tutorial's"
    pair = error_repair(source, {"kind": "optimizer_tuple", "fix": "optimizer, schedule = create_optimizer(...)"})
    assert pair[0].after.startswith("optimizer, optimizer_schedule = transformers.create_optimizer(")
    assert error_repair(source, {"kind": "column", "where": "train.py:4", "fix": "Name one of the data's columns: "
                                                                               "sentence, label."}) == []
