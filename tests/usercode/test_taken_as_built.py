"""What a script built is taken as it is (issue 70): a learning-rate schedule of its own is read by calling it at the
fit's planned steps, a model whose one input has its own name is fed the token ids as the script fed them, a
dataset that repeats is read for one pass, a tokenizer of the `tokenizers` library is read through Transformers,
and a keyword the optimizer drops (`Adam(lr=...)`) is named as the cause
with the keyword it should be. The units here are the default tier's; a whole trace of a notebook in that shape,
healthy and with `lr=`, is the full tier's (`test_trace_a_notebook_of_its_own_shape...`)."""

import json

import numpy as np
import pytest

from conftest import ROOT
from diagnostics.core.result import Status
from tests.usercode.here import trace_here


# A warmup schedule as notebooks write it: a class of their own, with no `get_config` (Keras cannot serialize it).
WARMUP = """class Warmup(keras.optimizers.schedules.LearningRateSchedule):
    def __init__(self, peak, warmup):
        self.peak, self.warmup = peak, warmup

    def __call__(self, step):
        step = tf.cast(step, tf.float32)
        return self.peak * tf.minimum(1.0, (step + 1) / self.warmup)
"""


def warmup_class():
    """The notebook's Warmup class, made here as the script makes it."""
    import tensorflow as tf
    import tf_keras

    namespace = {"tf": tf, "keras": tf_keras}
    exec(WARMUP, namespace)
    return namespace["Warmup"]


# ---------------------------------------------------------------- a schedule of the script's own


def test_a_schedule_of_the_scripts_own_is_read_by_calling_it_at_the_planned_steps():
    import tf_keras

    from diagnostics.checks.hparams.optimizer import optimizer_settings
    from diagnostics.checks.hparams.schedule import check_schedule, schedule_figures
    from diagnostics.config.run import RunConfig
    from diagnostics.keras.internals import optimizer_rate
    from diagnostics.keras.optimizers import clone_optimizer
    from diagnostics.usercode.compile_settings import read_optimizer

    Warmup = warmup_class()
    optimizer = tf_keras.optimizers.Adam(learning_rate=Warmup(5e-5, 10), clipnorm=1.0)
    fields = read_optimizer(None, optimizer, seen=True, planned_steps=40)
    assert fields == {"optimizer": "Adam", "learning_rate": 5e-5}  # the peak over the 40 planned steps

    copy = clone_optimizer(optimizer)  # Keras's own config refuses the class; the clone follows the same schedule
    assert type(optimizer_rate(copy)).__name__ == "Warmup" and copy.clipnorm == 1.0
    assert float(clone_optimizer(optimizer, rate=1e-3).learning_rate) == pytest.approx(1e-3)

    config = RunConfig(user_optimizer=optimizer, train_steps=40, **fields)
    figures = schedule_figures(config)
    assert figures["schedule"] == "Warmup" and figures["learning_rates"][0] == pytest.approx(5e-6)
    assert max(figures["learning_rates"]) == pytest.approx(5e-5) and figures["train_steps"] == 40
    result = check_schedule(figures)
    assert result.status is Status.PASS
    assert str(result.summary) == ("The optimizer's own Warmup schedule, read at the 40 planned steps: 5.0e-06 at step "
                                   "0, highest 5.0e-05 at step 9, 5.0e-05 at the last step.")
    rows = {row["setting"]: row["value"] for row in optimizer_settings(config)["settings"]}
    assert str(rows["learning_rate"]) == "Warmup peaking at 5e-05"


def test_a_fit_plans_its_epochs_times_its_steps_per_epoch_or_the_batches_the_data_holds():
    import tensorflow as tf

    from diagnostics.usercode.own_code import fit_steps

    rows = tf.data.Dataset.from_tensor_slices(np.arange(100))
    assert fit_steps(rows.batch(16), {"epochs": 3}) == 21  # 7 batches, 3 epochs
    assert fit_steps(rows.repeat().batch(16), {"epochs": 3, "steps_per_epoch": 40}) == 120
    assert fit_steps(rows.repeat().batch(16), {"epochs": 3}) is None  # endless: fit would need steps_per_epoch
    assert fit_steps(rows.batch(16), {"epochs": 5, "initial_epoch": 3}) == 14
    assert fit_steps([np.zeros((8, 4))] * 6, {}) == 6  # a Sequence's (or list's) length, one epoch by default
    assert fit_steps(iter([]), {"epochs": 2}) is None  # a generator does not say


# ---------------------------------------------------------------- a model's own input names


def word_ids_model():
    """A functional model whose one input is `input_word_ids` (a TF Hub encoder's name), fed a bare tensor of ids."""
    import tensorflow as tf
    import tf_keras

    word_ids = tf_keras.layers.Input(shape=(6,), dtype=tf.int32, name="input_word_ids")
    pooled = tf_keras.layers.GlobalAveragePooling1D()(tf_keras.layers.Embedding(30, 8)(word_ids))
    model = tf_keras.Model(word_ids, tf_keras.layers.Dense(1, activation="sigmoid")(pooled))
    model.compile(tf_keras.optimizers.Adam(1e-3), loss="binary_crossentropy")
    return model


def test_a_model_whose_one_input_has_its_own_name_is_fed_the_token_ids_as_the_script_fed_them():
    from diagnostics.keras.keras_model import call, fresh_copy
    from diagnostics.keras.training import one_train_step
    from diagnostics.config.run import RunConfig

    import tensorflow as tf

    model = word_ids_model()
    ids = tf.constant(np.tile(np.arange(1, 7, dtype=np.int32), (4, 1)))
    batch = ({"input_ids": ids}, tf.constant([0, 1, 0, 1]))  # the checks key a bare tensor of ids `input_ids`
    assert call(model, batch[0]).shape == (4, 1)
    copy = fresh_copy(model, batch[0])
    assert [weight.shape for weight in copy.weights] == [weight.shape for weight in model.weights]
    np.testing.assert_allclose(np.asarray(copy(batch[0])), np.asarray(model(ids)), rtol=1e-6)
    record = one_train_step(copy, batch, RunConfig(loss="binary_crossentropy", optimizer="Adam", learning_rate=1e-3,
                                                   data_source="code"))
    assert record.error is None and record.loss is not None and all(grad is not None for _, grad in record.gradients)


def test_a_tf_hub_shaped_model_of_three_inputs_named_its_own_way_is_fed_each_part_under_its_name(
        bert_checkpoint, bert_tokenizer, mnli_split):
    """`input_word_ids`, `input_mask`, `input_type_ids` (a TF Hub BERT's names) fed as a dict by those names: the
    rows are read back by what each name holds, copies take each part under the model's own name, and no check
    errors."""
    import tensorflow as tf
    import tf_keras
    from transformers import TFBertModel

    from diagnostics import diagnose
    from diagnostics.keras.keras_model import input_roles

    assert input_roles(["input_word_ids", "input_mask", "input_type_ids"]) == {
        "input_word_ids": "input_ids", "input_mask": "attention_mask", "input_type_ids": "token_type_ids"}
    assert input_roles(["input_ids", "attention_mask"]) is None and input_roles(["ids", "more_ids"]) is None

    encoder = TFBertModel.from_pretrained(str(bert_checkpoint))
    parts = {name: tf_keras.layers.Input(shape=(16,), dtype=tf.int32, name=name)
             for name in ("input_word_ids", "input_mask", "input_type_ids")}
    pooled = encoder(input_ids=parts["input_word_ids"], attention_mask=parts["input_mask"],
                     token_type_ids=parts["input_type_ids"])[1]
    model = tf_keras.Model(parts, tf_keras.layers.Dense(3)(pooled))
    model.compile(tf_keras.optimizers.Adam(1e-3),
                  loss=tf_keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    encoded = bert_tokenizer(list(mnli_split["premise"]), list(mnli_split["hypothesis"]), padding="max_length",
                             max_length=16, return_tensors="np")
    x = {"input_word_ids": encoded["input_ids"], "input_mask": encoded["attention_mask"],
         "input_type_ids": encoded["token_type_ids"]}
    dataset = tf.data.Dataset.from_tensor_slices((x, np.asarray(mnli_split["label"]))).batch(4)
    report = diagnose(model, dataset, bert_tokenizer, task="mnli", stages="data,model", progress=False)
    assert not [(result.id, str(result.summary)) for result in report.results if result.status is Status.ERROR]
    assert report["model.forward"].status is Status.PASS and report["model.gradients"].status is Status.PASS
    assert report["data.columns"].status is Status.PASS, report["data.columns"].summary


# ---------------------------------------------------------------- a dataset that repeats


def test_a_dataset_that_repeats_is_read_for_one_pass_before_or_after_its_batch():
    import tensorflow as tf

    from diagnostics.usercode.read_back import one_pass

    rows = tf.data.Dataset.from_tensor_slices((np.arange(40).reshape(10, 4), np.arange(10) % 2))
    for repeated in (rows.repeat().shuffle(32).batch(3).prefetch(2), rows.batch(3).repeat(5)):
        once = one_pass(repeated)
        ids = np.concatenate([np.asarray(x) for x, _ in once])
        assert sorted(ids[:, 0].tolist()) == list(range(0, 40, 4)), repeated  # each row once
        assert max(len(np.asarray(y)) for _, y in once) == 3
    assert one_pass(rows.batch(3)) is None and one_pass([1, 2]) is None


# ---------------------------------------------------------------- findings in the objects the script has


def test_a_label_beyond_a_sigmoid_head_is_said_as_binary_cross_entropy_trains_on_it_and_the_fix_drops_its_rows():
    """Under binary cross-entropy a label of 2 is a target, not an error: its loss is finite (the run trains), and a
    Keras model's own sigmoid output is not told to grow `num_labels` (it has none) nor given a datasets filter."""
    from diagnostics.checks.data.label_range import check_label_range
    from diagnostics.config.tasks import GlueTask
    from diagnostics.keras.scoring import per_sample_losses

    unknown = GlueTask("cola or sst2", ("sentence",), ("label 0", "label 1"), ("train",), known=False)
    labels = np.array([0, 1] * 56 + [2] * 16)
    sigmoid = check_label_range(labels, [0, 1], unknown, 2, "train", loss="binary_crossentropy", own_head=True)
    assert sigmoid.status is Status.FAIL
    assert str(sigmoid.summary).endswith(
        "the model has num_labels=2, so binary cross-entropy takes each as a target above 1: their loss stays finite "
        "(it can go below 0) and pulls the output toward a value no probability reaches, with no error.")
    assert str(sigmoid.fix) == (
        "Drop or relabel the rows labelled 2 where the script reads its labels: one sigmoid output takes labels 0 and "
        "1; if 2 is a real class, give the output layer 3 units (Dense(3) with a softmax) and compile with "
        "sparse_categorical_crossentropy.")
    classifier = check_label_range(labels, [0, 1], unknown, 2, "train")  # a Transformers classifier's own loss
    assert "NaN loss on GPU and an error on CPU" in str(classifier.summary)
    assert "num_labels=3" in str(classifier.fix)

    logits = np.array([[0.0, 0.4], [0.0, -1.0], [0.0, 2.0]])  # a sigmoid output's two class logits
    binary = per_sample_losses(logits, np.array([0, 1, 2]), False, binary=True)
    assert np.isfinite(binary).all() and binary[2] < 0  # -2 log p + log(1 - p) at p = sigmoid(2)
    assert np.isnan(per_sample_losses(logits, np.array([0, 1, 2]), False)[2])  # a sparse cross-entropy has no output


# ---------------------------------------------------------------- a loss of the script's own


def focal_loss(y_true, logits, gamma=2.0):
    """A focal loss as notebooks write it: a function of their own, on class ids and logits."""
    import tensorflow as tf

    y_true = tf.cast(tf.reshape(y_true, [-1]), tf.int32)
    picked = tf.gather(tf.nn.log_softmax(logits), y_true, batch_dims=1)
    return -tf.pow(1.0 - tf.exp(picked), gamma) * picked


def test_an_optimizer_outside_adams_family_is_cloned_as_built_and_no_adam_rule_judges_its_rate():
    import tf_keras

    from diagnostics.checks.hparams.optimizer import check_optimizer, optimizer_settings
    from diagnostics.config.run import RunConfig
    from diagnostics.core.fixes import CodeStyle, RateFix
    from diagnostics.keras.training import decoupled_decay
    from diagnostics.usercode.compile_settings import read_optimizer

    sgd = tf_keras.optimizers.SGD(learning_rate=0.05, momentum=0.9, weight_decay=0.01)
    fields = read_optimizer(None, sgd, seen=True)
    assert fields == {"optimizer": "other", "learning_rate": 0.05, "weight_decay": 0.01}
    config = RunConfig(user_optimizer=sgd, data_source="code", **fields)
    assert config.optimizer_shown == "SGD" and decoupled_decay(config) == 0.01
    result = check_optimizer(optimizer_settings(config), pretrained=True)
    assert result.status is Status.PASS and "a SGD step at the same rate is another size" in str(result.summary)
    assert RateFix(1e-2, style=CodeStyle.of(config)).endswith("tf_keras.optimizers.SGD(learning_rate=1e-02)")
    with pytest.raises(Exception, match="optimizer must be one of"):
        RunConfig(optimizer="other").validated()  # only the user's own code builds one


def test_a_loss_of_the_scripts_own_trains_as_it_is_and_the_checks_that_judge_a_loss_skip_saying_why(demo_inputs):
    import tf_keras

    from diagnostics import diagnose
    from diagnostics.keras.loading import load_model
    from diagnostics.keras.training import build_loss

    assert build_loss("custom", focal_loss) is focal_loss
    tokenizer, split = demo_inputs
    rows = split.select(range(32))
    encoded = dict(tokenizer(list(rows["premise"]), list(rows["hypothesis"]), padding=True, return_tensors="np"))
    model = load_model("demo", 3)
    model.compile(optimizer=tf_keras.optimizers.SGD(learning_rate=0.05, momentum=0.9), loss=focal_loss)
    report = diagnose(model, (encoded, np.asarray(rows["label"])), tokenizer, task="mnli", stages="model,hparams",
                      progress=False)
    reason = ("The loss is the script's own (focal_loss): training runs with it as it is, but the checks cannot read "
              "what it expects (logits or probabilities, class ids or one-hot rows) nor what it starts at, so they do "
              "not judge it.")
    for check in ("model.initial_loss", "hparams.loss"):
        assert report[check].status is Status.SKIP and str(report[check].summary) == reason
    assert report["hparams.lr_sweep"].status is not Status.ERROR  # copies train with the script's own loss
    gradients = report["model.gradients"]
    assert gradients.status is Status.PASS and "with loss 'focal_loss'" in str(gradients.summary)
    step = report["model.weights_after_step"]  # a real step with the script's own loss and optimizer
    assert step.status is Status.PASS and "(SGD, learning rate 0.05)" in str(step.summary)
    assert report["hparams.optimizer"].status is Status.PASS


# ---------------------------------------------------------------- a tokenizer of another library


def test_a_tokenizer_of_the_tokenizers_library_is_read_through_transformers_and_left_as_it_was(vocab_file):
    from tokenizers import BertWordPieceTokenizer

    from diagnostics.keras.other_tokenizers import from_tokenizers_library

    mine = BertWordPieceTokenizer(str(vocab_file), lowercase=True)
    mine.enable_padding(length=12)
    ids = mine.encode("the cat sat on the mat").ids
    tokenizer = from_tokenizers_library(mine)
    assert tokenizer.decode(ids, skip_special_tokens=True) == "the cat sat on the mat"
    assert (tokenizer.pad_token, tokenizer.cls_token, tokenizer.sep_token) == ("[PAD]", "[CLS]", "[SEP]")
    assert tokenizer.pad_token_id == ids[-1] == 0
    tokenizer(["the cat"], padding=False)  # the copy tokenizes as Transformers asks ...
    assert len(mine.encode("the cat").ids) == 12  # ... the script's own still pads as it set it
    assert from_tokenizers_library("not a tokenizer") is None


def test_with_no_tokenizer_anywhere_rows_are_token_ids_and_the_checks_that_read_text_skip_saying_why(tmp_path):
    """No tokenizer given, none among the objects, none saved with the model (its encoder's directory holds only
    weights): the run is built with a stand-in that shows token ids, the model's own pad id as padding, and only the
    checks that read text skip, each saying why."""
    import tensorflow as tf
    import tf_keras
    from transformers import TFAutoModel

    from diagnostics import diagnose
    from diagnostics.keras.loading import demo_checkpoint_dir
    from diagnostics.keras.other_tokenizers import is_token_ids, token_ids_tokenizer

    stand_in = token_ids_tokenizer(30, 0)
    assert is_token_ids(stand_in) and stand_in.pad_token_id == 0
    assert stand_in.decode([5, 12, 0, 0], skip_special_tokens=True) == "[5] [12]"

    TFAutoModel.from_pretrained(str(demo_checkpoint_dir())).save_pretrained(tmp_path / "weights-only")
    encoder = TFAutoModel.from_pretrained(str(tmp_path / "weights-only"))
    word_ids = tf_keras.layers.Input(shape=(8,), dtype=tf.int32, name="input_ids")
    model = tf_keras.Model(word_ids, tf_keras.layers.Dense(2)(encoder(word_ids)[0][:, 0, :]))
    model.compile(tf_keras.optimizers.Adam(1e-3),
                  loss=tf_keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    ids = np.array([[101, 7 + row % 5, 9 + row % 3, 102, 0, 0, 0, 0] for row in range(32)])
    report = diagnose(model, (ids, np.arange(32) % 2), stages="data", progress=False)
    assert any("No tokenizer was given" in str(note) for note in report.notes), report.notes
    for check in ("data.decoded_samples", "data.truncation"):
        assert report[check].status is Status.SKIP and str(report[check].summary).startswith("No tokenizer: none was "
                                                                                              "given"), report[check]
    assert not [result.id for result in report.results if result.status is Status.ERROR]
    assert report["data.batch"].status is Status.PASS and report["data.label_range"].status is Status.PASS


# ---------------------------------------------------------------- a keyword the optimizer drops


def test_a_keyword_the_optimizer_drops_is_the_cause_with_the_keyword_it_should_be():
    import tf_keras
    from importlib.metadata import version

    from diagnostics.checks.hparams.optimizer import check_optimizer, optimizer_settings
    from diagnostics.config.run import RunConfig
    from diagnostics.keras.optimizers import ignored_keywords
    from diagnostics.usercode.hooks import watch
    from diagnostics.usercode.repair import repair
    from diagnostics.usercode.repair_plan import changes_of

    outside = tf_keras.optimizers.Adam(lr=1e-5)
    with watch():
        optimizer = tf_keras.optimizers.Adam(lr=1e-5)
        fine = tf_keras.optimizers.Adam(learning_rate=1e-5)
    assert ignored_keywords(optimizer) == {"lr": 1e-5} and ignored_keywords(fine) == {}
    assert ignored_keywords(outside) == {}  # nothing is watched outside the block: the method is Keras's again
    assert float(optimizer.learning_rate) == pytest.approx(1e-3)  # what tf-keras trains at

    config = RunConfig(user_optimizer=optimizer, optimizer="Adam", learning_rate=1e-3, data_source="code")
    result = check_optimizer(optimizer_settings(config), pretrained=True)
    assert result.status is Status.FAIL
    assert str(result.summary) == (f"Adam(lr=1e-05) does not set the rate: tf-keras {version('tf-keras')} drops the "
                                   "keyword lr= with only a logged warning, so the optimizer trains at 0.001, not at "
                                   "the 1e-05 the script wrote.")
    assert result.fix == "Adam(learning_rate=1e-05)"

    changes, left = changes_of([{"owner": "hparams.optimizer", "cause": "ignored_keyword", "fix": result.fix}])
    assert left == [] and [(change.kind, change.value) for change in changes] == [("learning_rate", 1e-05)]
    source = "import tf_keras\nLR = 1e-5\nopt = tf_keras.optimizers.Adam(lr=LR, clipnorm=1.0)\nmodel.compile(opt)\n"
    repaired = repair(source, changes)
    assert "tf_keras.optimizers.Adam(learning_rate=LR, clipnorm=1.0)" in repaired.source, repaired.source


def test_the_sweeps_findings_on_the_rate_an_ignored_keyword_left_point_at_hparams_optimizer():
    from diagnostics.walk.registry import CAUSES

    cause, rate = CAUSES["ignored_keyword"], CAUSES["rate"]
    assert cause.owner == "hparams.optimizer" and cause.precedence < rate.precedence
    explained = {(explains.check, condition) for explains in cause.explains for condition in explains.conditions}
    assert {("hparams.lr_sweep", "too_high"), ("hparams.lr_sweep", "broke")} <= explained


# ---------------------------------------------------------------- a whole notebook of that shape


NOTEBOOK = '''import json
import os
import numpy as np
import tensorflow as tf
import tf_keras as keras
from tokenizers import BertWordPieceTokenizer
from transformers import AutoTokenizer, TFAutoModel

CHECKPOINT = {checkpoint!r}
MAX_LEN = 24
rows = [json.loads(line) for line in open({rows!r})]
texts = [row["sentence"] for row in rows]
{tokenize}
labels = np.array([row["label"] for row in rows])
train = tf.data.Dataset.from_tensor_slices((ids, labels)).repeat().shuffle(256).batch(16)


{warmup}

encoder = TFAutoModel.from_pretrained(CHECKPOINT)
word_ids = keras.layers.Input(shape=(MAX_LEN,), dtype=tf.int32, name="input_word_ids")
output = keras.layers.Dense(1, activation="sigmoid")(encoder(word_ids)[0][:, 0, :])
model = keras.Model(inputs=word_ids, outputs=output)
model.compile({optimizer}, loss="binary_crossentropy", metrics=["accuracy"])
model.fit(train, steps_per_epoch=len(rows) // 16, epochs=2)
'''
# The token ids from Transformers' tokenizer, or from the `tokenizers` library's as the issue's notebook made them.
TOKENIZE = {
    False: """tokenizer = AutoTokenizer.from_pretrained(CHECKPOINT)
ids = np.array(tokenizer(texts, padding="max_length", truncation=True, max_length=MAX_LEN)["input_ids"])""",
    True: """tokenizer = BertWordPieceTokenizer(os.path.join(CHECKPOINT, "vocab.txt"), lowercase=True)
tokenizer.enable_padding(length=MAX_LEN)
tokenizer.enable_truncation(max_length=MAX_LEN)
ids = np.array([encoding.ids for encoding in tokenizer.encode_batch(texts)])""",
}


@pytest.mark.slow  # full tier: whole traces; the units above hold each claim in the default tier
@pytest.mark.parametrize("optimizer, rate, wordpiece", [
    ("keras.optimizers.Adam(learning_rate=Warmup(1e-3, 4))", None, False),
    ("keras.optimizers.Adam(lr=1e-5)", 1e-5, False),
    ("keras.optimizers.Adam(learning_rate=Warmup(1e-3, 4))", None, True),
    ("keras.optimizers.SGD(learning_rate=0.05, momentum=0.9)", None, False)])
def test_trace_a_notebook_of_its_own_shape_checks_everything_and_names_an_ignored_keyword(tmp_path, optimizer, rate,
                                                                                          wordpiece):
    """A notebook's shape nobody here wrote: a functional model whose one input is `input_word_ids`, fed a bare
    tensor of ids from a dataset that repeats, a warmup schedule of its own, no get_config: every check runs or
    skips with its reason, the schedule is read over the fit's 16 planned steps, one pass of the 128 rows is read.
    With `Adam(lr=1e-5)`, hparams.optimizer names the dropped keyword with the one it should be; with the
    `tokenizers` library's BertWordPieceTokenizer, the rows decode through it."""
    from diagnostics.keras.loading import demo_checkpoint_dir

    rows = ROOT / "diagnostics" / "demo_data" / "sst2" / "train.jsonl"
    script = tmp_path / "notebook.py"
    script.write_text(NOTEBOOK.format(checkpoint=str(demo_checkpoint_dir()), rows=str(rows), optimizer=optimizer,
                                      warmup=WARMUP, tokenize=TOKENIZE[wordpiece]))
    outcome = trace_here(script)
    assert outcome.report is not None and outcome.report["script"]["reached_fit"], outcome.message
    checks = {check["id"]: check for check in outcome.report["checks"]}
    assert not [check_id for check_id, check in checks.items() if check["status"] == "error"], checks
    assert checks["model.forward"]["status"] == "pass"
    assert checks["data.duplicates"]["status"] == "pass", checks["data.duplicates"]["summary"]
    notes = json.dumps(outcome.report, ensure_ascii=False)
    assert "the checks read one pass of it" in notes and "Read back the first" not in notes
    if wordpiece:
        assert checks["data.decoded_samples"]["status"] == "pass", checks["data.decoded_samples"]["summary"]
    if "SGD" in optimizer:  # the data check trains with Adam at its usual rate; the SGD's rate is the sweep's
        assert "with Adam at rate" in checks["data.learnability"]["summary"], checks["data.learnability"]
        assert checks["hparams.optimizer"]["status"] == "pass"
    elif rate is None:
        assert checks["hparams.schedule"]["summary"].startswith("The optimizer's own Warmup schedule, read at the 16 "
                                                                "planned steps")
        assert checks["hparams.optimizer"]["status"] == "pass"
    else:
        assert checks["hparams.optimizer"]["status"] == "fail"
        assert "drops the keyword lr=" in checks["hparams.optimizer"]["summary"]
        assert checks["hparams.optimizer"]["fix"] == "Adam(learning_rate=1e-05)"
        assert checks["hparams.lr_sweep"]["status"] in ("pass", "see"), checks["hparams.lr_sweep"]


# ---------------------------------------------------------------- a loss for each output, of one output

def test_a_loss_given_per_output_for_a_model_of_one_output_is_read_as_that_loss():
    # Before: "compile(loss={'dense': <...SparseCategoricalCrossentropy object at 0x...>}) is not a loss the
    # debugger can judge", and nothing was checked.
    import tf_keras

    from diagnostics.usercode.compile_settings import loss_object, read_loss

    inputs = tf_keras.Input((4,), name="ids")
    model = tf_keras.Model(inputs, tf_keras.layers.Dense(2, activation="softmax", name="dense")(inputs))
    loss = tf_keras.losses.SparseCategoricalCrossentropy()
    for given, inner in (({"dense": loss}, loss), ([loss], loss), (("sparse_categorical_crossentropy",),
                                                                     "sparse_categorical_crossentropy")):
        model.compile(optimizer="adam", loss=given)
        expected = read_loss(model, inner, seen=True)
        assert expected.startswith(("SparseCategoricalCrossentropy", "sparse"))
        assert read_loss(model, given, seen=True) == expected
        assert read_loss(model) == expected  # as Keras keeps it
    assert loss_object(model, {"dense": loss}, seen=True) is loss
