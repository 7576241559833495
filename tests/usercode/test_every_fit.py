"""Every fit a script makes is checked, each on what it trains: freeze-then-fine-tune traced on the demo kit and real
MRPC text (tests/scripts/freeze_then_fine_tune.py), healthy and with the bugs of its second phase, and the most copied
tutorial's two fits on the real checkpoint; the rules for pretrained rates follow what each fit trains; copies keep
the model's frozen layers."""

import numpy as np
import pytest

from conftest import ROOT
from tests.usercode.here import trace_here

SCRIPT = ROOT / "tests" / "scripts" / "freeze_then_fine_tune.py"
# The sweep and the range test are left out to keep the suite short (their per-fit verdicts are the same code, measured
# on the real checkpoint by the tutorial's script below).
FAST = dict(task="mrpc", stages="data,model,hparams", skip="data.learnability,hparams.lr_sweep,hparams.lr_range_test")


def trace(tmp_path, checkpoint, *script_args, stages=FAST["stages"]):
    from diagnostics.usercode.trace import fit_reports

    outcome = trace_here(SCRIPT, [str(checkpoint), str(ROOT / "tests" / "data" / "mrpc" / "validation.tsv"),
                                  *script_args], cwd=tmp_path, **{**FAST, "stages": stages})
    assert outcome.report is not None and outcome.report["script"]["reached_fit"], (
        outcome.message + outcome.output[-3000:]
    )
    fits = fit_reports(outcome.report)
    assert [fit["phase"]["fit"] for fit in fits] == [1, 2], outcome.message
    assert all(not fit.get("error") for fit in fits), [fit.get("error") for fit in fits]
    return outcome, fits


def flagged(fit):
    return {check["id"]: check for check in fit["checks"] if check["status"] in ("fail", "error", "warn")}


@pytest.fixture(scope="module")
def kit_checkpoint():
    from diagnostics.keras.loading import demo_checkpoint_dir

    return demo_checkpoint_dir()


def test_trace_a_healthy_freeze_then_fine_tune_script_is_checked_fit_by_fit_and_passes_clean(tmp_path, kit_checkpoint):
    # The kit's DistilBERT fine-tuned at the kit's rate (tests/usercode/matrix/build.KIT_RATE); what real fine-tuning
    # calls good on a pretrained encoder is judged on the real checkpoint by the tutorial's script below.
    outcome, (head, whole) = trace(tmp_path, kit_checkpoint, "--fine_tune_lr", "3e-3")
    assert outcome.exit_code == 0, outcome.message
    assert flagged(head) == {} and flagged(whole) == {}, (flagged(head), flagged(whole))
    assert head["phase"]["trains_encoder"] is False and head["phase"]["encoder"] == 0
    assert "trains the head only" in head["phase"]["trains"]
    assert whole["phase"]["trains_encoder"] is True and whole["phase"]["encoder"] > 200_000
    optimizer = {
        fit["phase"]["fit"]: next(c for c in fit["checks"] if c["id"] == "hparams.optimizer") for fit in (head, whole)
    }
    assert optimizer[1]["evidence"]["learning_rate"] == pytest.approx(1e-3)
    assert optimizer[2]["evidence"]["learning_rate"] == pytest.approx(3e-3)
    # The copies the checks train keep the frozen encoder frozen: the head's variables alone get gradients
    # (DistilBERT's head: pre_classifier and classifier, a kernel and a bias each).
    gradients = next(c for c in head["checks"] if c["id"] == "model.gradients")
    assert "All 4 trainable variables" in gradients["summary"]
    assert "fit 1 at freeze_then_fine_tune.py:" in outcome.message and "fit 2 at" in outcome.message
    assert "2 steps" in " ".join(outcome.report["script"]["notes"])


def test_trace_the_tutorials_semantic_similarity_script_checks_both_fits_and_its_sweep_names_1e_3(tmp_path,
                                                                                                  real_checkpoint):
    """The most copied tutorial shape (tests/scripts/semantic_similarity.py: TFBertModel's main layer in a functional
    model, a Sequence of [input_ids, attention_masks, token_type_ids] lists with one-hot labels, MirroredStrategy, two
    fits) on real MNLI text, its fine-tuning fit at 1e-3: every check reads both fits' batches, the head-only fit at
    Adam()'s 1e-3 is clean, and the fine-tuning fit's rate is one cause, the sweep's, with a rate real fine-tuning of
    this checkpoint calls good (1e-5 to 1e-4: docs/real-checkpoint.md). The overfit test, which points at the sweep
    on such a rate, is left out (the healthy script of tests/usercode/test_foreign_code.py measures it on real text)."""
    from diagnostics.usercode.trace import fit_reports

    outcome = trace_here(ROOT / "tests" / "scripts" / "semantic_similarity.py",
                         [str(real_checkpoint), str(ROOT / "tests" / "data" / "mnli" / "validation_matched.jsonl"),
                          "1e-3"], cwd=tmp_path, skip="overfit.one_batch")
    assert outcome.report is not None and outcome.report["script"]["reached_fit"], (
        outcome.message + outcome.output[-3000:]
    )
    head, whole = fit_reports(outcome.report)
    assert all(check["status"] != "error" for fit in (head, whole) for check in fit["checks"])
    for fit in (head, whole):
        batch = next(check for check in fit["checks"] if check["id"] == "data.batch")
        assert batch["status"] == "pass" and "attention_masks" in batch["summary"], batch["summary"]
    assert head["phase"]["trains_encoder"] is False and head["causes"] == [] and flagged(head) == {}
    # Keras's default 1e-3 on the head alone is no fine-tuning rate to warn of.
    head_optimizer = next(check for check in head["checks"] if check["id"] == "hparams.optimizer")
    assert head_optimizer["condition"] == "head_only" and head_optimizer["evidence"]["learning_rate"] == pytest.approx(
        1e-3
    )
    assert whole["phase"]["trains_encoder"] is True
    assert [cause["owner"] for cause in whole["causes"]] == ["hparams.lr_sweep"], whole["causes"]
    checks = {check["id"]: check for check in whole["checks"]}
    # One cause, the rate, named by the measurement with a rate real fine-tuning of this checkpoint calls good (1e-5
    # to 1e-4, bench/lr_truth.py); the optimizer's own rule on the rate points at it with no rate of its own.
    sweep = checks["hparams.lr_sweep"]
    assert sweep["status"] == "fail" and 1e-5 <= sweep["evidence"]["best_rate"] <= 1e-4
    assert "pretrained" in sweep["summary"] and f"{sweep['evidence']['best_rate']:.0e}" in sweep["fix"]
    assert (
        checks["hparams.optimizer"]["explained_by"] == "hparams.lr_sweep" and checks["hparams.optimizer"]["fix"] is None
    )
    assert {check_id for check_id, check in flagged(whole).items() if not check.get("explained_by")} == \
        {"hparams.lr_sweep"}
    # The range test on real text: a curve of finite points that points into the same good range.
    range_test = checks["hparams.lr_range_test"]
    assert range_test["status"] == "pass", range_test["summary"]
    assert range_test["evidence"]["finite_points"] >= 20 and 1e-6 <= range_test["evidence"]["suggested"] <= 1.5e-4


def test_trace_unfreezing_without_compiling_again_is_named_once_by_weights_after_step(tmp_path, real_checkpoint):
    # On the real checkpoint, where fit 1's Adam(1e-3), kept without a compile, is above what a pretrained encoder
    # tolerates: the optimizer's warning points at the stale train step instead of naming a rate of its own.
    outcome, (head, whole) = trace(tmp_path, real_checkpoint, "--recompile", "0", stages="model,hparams")
    assert outcome.exit_code == 1
    assert flagged(head) == {}
    causes = [(cause["owner"], cause["status"], cause["cause"]) for cause in whole["causes"]]
    assert causes == [("model.weights_after_step", "fail", "stale_train_step")], causes
    assert "hparams.optimizer" in whole["causes"][0]["explains"]  # fit 1's Adam(1e-3), kept without a compile
    assert "built at fit 1, which updates 770 weights" in whole["causes"][0]["summary"]
    assert "model.compile" in whole["causes"][0]["fix"]
    assert "trains what fit 1 trained" in whole["phase"]["trains"]


# ---------------------------------------------------------------- on the kit, in a notebook


@pytest.fixture(scope="module")
def kit_model():
    from diagnostics.keras.loading import demo_checkpoint_dir
    from transformers import TFAutoModelForSequenceClassification

    model = TFAutoModelForSequenceClassification.from_pretrained(str(demo_checkpoint_dir()), num_labels=2)
    model({"input_ids": np.ones((2, 8), np.int32)})
    return model


def test_what_a_fit_trains_and_its_usual_rate_follow_the_frozen_layers(kit_model, monkeypatch):
    from diagnostics.keras import training
    from diagnostics.keras.keras_model import fresh_copy, what_trains

    inputs = {"input_ids": np.ones((2, 8), np.int32)}
    encoder = kit_model.layers[0]
    try:
        encoder.trainable = False
        counts = what_trains(kit_model)
        assert counts["encoder"] == 0 and counts["other"] > 0
        copy = fresh_copy(kit_model, inputs)
        assert what_trains(copy) == counts  # the copy trains what fit trains
        assert all(np.array_equal(a.numpy(), b.numpy()) for a, b in zip(kit_model.weights, copy.weights, strict=True))
        encoder.trainable = True
        encoder.embeddings.trainable = False  # a part frozen: the order Keras lists weights in changes
        copy = fresh_copy(kit_model, inputs)
        assert what_trains(copy) == what_trains(kit_model)
        np.testing.assert_allclose(copy(inputs).logits, kit_model(inputs).logits, rtol=1e-5, atol=1e-5)
    finally:
        encoder.trainable = True
        encoder.embeddings.trainable = True
    # The kit has random weights; as if pretrained, a frozen encoder makes a head-only fit with the head's rate.
    monkeypatch.setattr(training, "is_pretrained", lambda model: True)
    assert training.usual_rate_of(kit_model) == pytest.approx(5e-5)
    encoder.trainable = False
    try:
        assert training.head_only(kit_model) and training.usual_rate_of(kit_model) == pytest.approx(1e-3)
    finally:
        encoder.trainable = True


def test_the_callback_checks_each_fit_on_its_own_data_and_says_what_it_trains(kit_model, capsys):
    import json

    import tf_keras as keras

    from diagnostics.usercode.callback import DiagnoseCallback
    from diagnostics.keras.keras_model import fresh_copy
    from diagnostics.keras.loading import load_tokenizer

    tokenizer = load_tokenizer("demo")
    rows = [json.loads(line) for line in (ROOT / "diagnostics" / "demo_data" / "rte" / "train.jsonl")
            .read_text().splitlines()][:32]
    encoded = tokenizer([row["sentence1"] for row in rows], [row["sentence2"] for row in rows], truncation=True,
                        padding="max_length", max_length=48, return_tensors="np")
    x, y = dict(encoded), np.array([row["label"] for row in rows])
    callback = DiagnoseCallback(tokenizer=tokenizer, task="rte")
    model = fresh_copy(kit_model, {"input_ids": x["input_ids"][:2]})  # the module's model stays untrained
    loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    model.layers[0].trainable = False
    model.compile(optimizer=keras.optimizers.Adam(), loss=loss)
    model.fit(x, y, batch_size=16, epochs=1, verbose=0, callbacks=[callback])
    model.layers[0].trainable = True
    model.compile(optimizer=keras.optimizers.Adam(3e-3), loss=loss)
    model.fit({key: value[:16] for key, value in x.items()}, y[:16], batch_size=8, epochs=1, verbose=0,
              callbacks=[callback])
    said = capsys.readouterr().out
    assert callback.fits == 2 and len(callback.reports) == 2, said
    assert "trains the head only" in said and "the encoder is frozen" in said
    assert "fit 2, trains the encoder and the head" in said
    batches = [report["data.batch"].evidence for report in callback.reports]
    assert batches[0]["rows"] == 16 and batches[1]["rows"] == 8  # each fit's own data, as it batched them
    rates = [report["hparams.optimizer"].evidence["learning_rate"] for report in callback.reports]
    assert rates == [pytest.approx(1e-3), pytest.approx(3e-3)]


# ---------------------------------------------------------------- a custom training loop


def trace_loop(tmp_path, checkpoint, *script_args, capfd=None):
    outcome = trace_here(ROOT / "tests" / "scripts" / "tape_loop.py",
                         [str(checkpoint), str(ROOT / "tests" / "data" / "mrpc" / "validation.tsv"), *script_args],
                         cwd=tmp_path, capfd=capfd, **FAST)
    assert outcome.report is not None and outcome.report["script"]["loop"], outcome.message + outcome.output[-3000:]
    assert not outcome.report["script"]["error"], outcome.report["script"]["error"]
    return outcome


def test_trace_a_gradient_tape_loop_is_checked_at_its_first_apply_gradients(tmp_path, kit_checkpoint, capfd):
    outcome = trace_loop(tmp_path, kit_checkpoint, "3e-3", capfd=capfd)
    assert outcome.exit_code == 0 and flagged(outcome.report) == {}, flagged(outcome.report)
    assert "first apply_gradients of its training loop at tape_loop.py:" in outcome.message
    checks = {check["id"]: check for check in outcome.report["checks"]}
    # The loop's own loss object and optimizer, as it built them; its steps trained nothing before the checks.
    assert "SparseCategoricalCrossentropy(from_logits=True)" in checks["hparams.loss"]["summary"]
    assert checks["hparams.optimizer"]["evidence"]["learning_rate"] == pytest.approx(3e-3)
    assert checks["model.gradients"]["status"] == "pass" and checks["data.batch"]["evidence"]["rows"] == 16
    assert "epoch 0 step 0" not in outcome.output  # stopped at its first update


def test_trace_a_gradient_tape_loop_at_a_rate_too_high_names_it_once(tmp_path, real_checkpoint):
    outcome = trace_loop(tmp_path, real_checkpoint, "1e-3")
    assert [(cause["owner"], cause["status"]) for cause in outcome.report["causes"]] == [("hparams.optimizer", "warn")]


@pytest.mark.slow  # full tier: the matrix's slice traces a GradientTape loop in the default tier
def test_diagnose_takes_a_custom_loops_loss_and_optimizer(kit_model):
    import json

    import tf_keras as keras

    from diagnostics.usercode.api import diagnose
    from diagnostics.keras.keras_model import fresh_copy
    from diagnostics.keras.loading import load_tokenizer

    tokenizer = load_tokenizer("demo")
    rows = [json.loads(line) for line in (ROOT / "diagnostics" / "demo_data" / "rte" / "train.jsonl")
            .read_text().splitlines()][:32]
    encoded = tokenizer([row["sentence1"] for row in rows], [row["sentence2"] for row in rows], truncation=True,
                        padding="max_length", max_length=48, return_tensors="np")
    data = (dict(encoded), np.array([row["label"] for row in rows]))
    model = fresh_copy(kit_model, {"input_ids": encoded["input_ids"][:2]})  # never compiled, as in a loop
    report = diagnose(model, data, tokenizer, "rte", stages="model,hparams", loss=keras.losses.BinaryCrossentropy(),
                      optimizer=keras.optimizers.Adam(3e-3))
    assert report["hparams.optimizer"].evidence["learning_rate"] == pytest.approx(3e-3)
    assert [cause.owner for cause in report.causes if cause.status.value == "fail"] == ["hparams.loss"]
    sgd = diagnose(model, data, tokenizer, "rte", stages="hparams", optimizer=keras.optimizers.SGD(0.1))
    assert sgd["hparams.optimizer"].evidence["class"] == "SGD"  # any optimizer is taken, cloned as built
    assert sgd["hparams.optimizer"].evidence["learning_rate"] == pytest.approx(0.1)


def test_diagnose_reads_a_generator_back_and_says_it_is_used_up(kit_model):
    import json

    import tf_keras as keras

    from diagnostics.usercode.api import diagnose
    from diagnostics.keras.keras_model import fresh_copy
    from diagnostics.keras.loading import load_tokenizer

    tokenizer = load_tokenizer("demo")
    rows = [json.loads(line) for line in (ROOT / "diagnostics" / "demo_data" / "rte" / "train.jsonl")
            .read_text().splitlines()][:32]

    def batches():  # a tutorial's generator: it tokenizes 8 rows a batch as fit asks for them
        for start in range(0, len(rows), 8):
            chunk = rows[start:start + 8]
            encoded = tokenizer([row["sentence1"] for row in chunk], [row["sentence2"] for row in chunk],
                                truncation=True, padding="max_length", max_length=48, return_tensors="np")
            yield dict(encoded), np.array([row["label"] for row in chunk])

    model = fresh_copy(kit_model, {"input_ids": np.ones((2, 8), np.int32)})
    model.compile(optimizer=keras.optimizers.Adam(3e-3),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    data = batches()
    report = diagnose(model, data, tokenizer, "rte", stages="data")
    assert report["data.batch"].evidence["rows"] == 8 and report["data.label_range"].status.value == "pass"
    assert any("generator" in str(note) and "new one" in str(note) for note in report.notes)
    assert next(data, None) is None  # used up, as the note says


@pytest.mark.slow  # full tier: trains the script after its trace
@pytest.mark.subprocess
def test_trace_then_train_checks_a_tf_function_loop_once_it_has_run(tmp_path):
    """--then-train lets a loop's tf.function step train; its check waits for the script's end (nothing can run
    eagerly while the step is traced) and says the weights are the trained ones. On the kit."""
    from diagnostics.keras.loading import demo_checkpoint_dir
    from diagnostics.usercode.trace import trace_script

    outcome = trace_script(ROOT / "tests" / "scripts" / "tape_loop.py",
                           [str(demo_checkpoint_dir()), str(ROOT / "tests" / "data" / "mrpc" / "validation.tsv"),
                            "3e-3"], cwd=tmp_path, capture_output=True, timeout=900, then_train=True,
                           task="mrpc", stages="data,model")
    assert outcome.report is not None and outcome.report["script"]["loop"], outcome.message + outcome.output[-3000:]
    checks = {check["id"]: check for check in outcome.report["checks"]}
    assert checks["model.gradients"]["status"] == "pass", checks["model.gradients"]["summary"]
    assert "epoch 1 step 0" in outcome.output  # the loop trained to its end
    assert any("weights are those training left" in note for note in outcome.report["notes"])
