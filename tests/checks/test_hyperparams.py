import math

import numpy as np
import pytest

from diagnostics.config.training import SweepSettings
from diagnostics.checks.hparams.loss import check_loss
from diagnostics.checks.hparams import lr_range_test as lr_range_test_module
from diagnostics.checks.hparams.lr_range_test import _range_stop, check_lr_range_test, lr_range_test
from diagnostics.checks.hparams.lr_sweep import check_lr_sweep
from diagnostics.checks.hparams.optimizer import check_optimizer, optimizer_settings
from diagnostics.checks.hparams.schedule import check_schedule, schedule_figures
from diagnostics.config.run import RunConfig
from diagnostics.keras.batches import training_batches
from diagnostics.core.context import RunContext
from diagnostics.core.errors import InputError
from diagnostics.walk.stages import hparams_stage
from diagnostics.core.result import Status
from diagnostics.keras.training import Trainer

SMALL = SweepSettings(min_rate=1e-5, max_rate=1e-1, rates=3, steps=3, range_steps=12)


def stage(config, split, tokenizer, model, settings=SMALL, parts=("setup", "training")):
    return {
        r.id: r
        for r in hparams_stage(RunContext(config, tokenizer, split, lambda *_: model), sweep=settings, parts=parts)
    }


# ------------------------------------------------------------ hparams.optimizer


def test_optimizer_string_adam_warns_with_0_001():
    result = check_optimizer(optimizer_settings(RunConfig(optimizer="adam")))
    assert result.status is Status.WARN
    assert "0.001" in result.summary and "'adam'" in result.summary
    assert result.fix == "tf_keras.optimizers.Adam(learning_rate=5e-05)"  # a pretrained checkpoint's rate
    kit = check_optimizer(optimizer_settings(RunConfig(optimizer="adam")), pretrained=False)
    assert kit.fix == "tf_keras.optimizers.Adam(learning_rate=3e-03)"  # the demo kit's random weights: 3e-3, not 5e-5
    sources = {row["setting"]: row["source"] for row in result.evidence["settings"]}
    assert sources["learning_rate"] == "Keras default" and sources["beta_1"] == "Keras default"


def test_optimizer_adam_object_at_5e_5_passes_and_marks_the_rate_as_set():
    result = check_optimizer(optimizer_settings(RunConfig(optimizer="Adam", learning_rate=5e-5)))
    assert result.status is Status.PASS
    assert {row["setting"]: row["source"] for row in result.evidence["settings"]}["learning_rate"] == "set"


@pytest.mark.parametrize("rate, status", [(1e-4, Status.PASS), (1.01e-4, Status.WARN)])
def test_optimizer_learning_rate_boundary(rate, status):
    assert check_optimizer(optimizer_settings(RunConfig(optimizer="Adam", learning_rate=rate))).status is status


def test_optimizer_create_optimizer_reports_its_peak_rate():
    figures = optimizer_settings(RunConfig(optimizer="create_optimizer", learning_rate=3e-5, weight_decay=0.01))
    assert figures["learning_rate"] == pytest.approx(3e-5)
    assert figures["class"] == "AdamWeightDecay"


# ------------------------------------------------------------ hparams.loss


def test_loss_string_from_logits_false_on_logits_fails(mnli_split, bert_tokenizer, cached_bert):
    # Labels in the input dict (the course's columns): the one fix is the model's own loss, which reads them (a Keras
    # loss object there would be keras_loss_on_input_labels' finding next).
    config = RunConfig(batch_size=6, loss="sparse_categorical_crossentropy")
    result = stage(config, mnli_split, bert_tokenizer, cached_bert, parts=("setup",))["hparams.loss"]
    assert result.status is Status.FAIL
    assert "from_logits=False" in result.summary
    assert str(result.fix).startswith("model.compile(optimizer=optimizer)  # no loss=")
    # Labels apart (x, y): the same Keras loss, reading logits.
    separate = stage(RunConfig(batch_size=6, loss="sparse_categorical_crossentropy", labels_in="separate"), mnli_split,
                     bert_tokenizer, cached_bert, parts=("setup",))["hparams.loss"]
    assert separate.status is Status.FAIL and "from_logits=True" in separate.fix


def test_loss_internal_passes(mnli_split, bert_tokenizer, cached_bert):
    result = stage(RunConfig(batch_size=6), mnli_split, bert_tokenizer, cached_bert, parts=("setup",))["hparams.loss"]
    assert result.status is Status.PASS


def test_loss_labels_in_dict_with_keras_loss_says_what_this_version_does(mnli_split, bert_tokenizer, cached_bert):
    config = RunConfig(batch_size=6, loss="SparseCategoricalCrossentropy(from_logits=True)", labels_in="inputs")
    result = stage(config, mnli_split, bert_tokenizer, cached_bert, parts=("setup",))["hparams.loss"]
    assert result.status is Status.WARN
    assert "moves them out" in result.summary and "4.54.1" in result.summary
    assert "No gradients provided" in result.summary


def test_loss_separate_labels_with_internal_loss_says_what_this_version_does(mnli_split, bert_tokenizer, cached_bert):
    config = RunConfig(batch_size=6, labels_in="separate")
    result = stage(config, mnli_split, bert_tokenizer, cached_bert, parts=("setup",))["hparams.loss"]
    assert result.status is Status.PASS
    assert "copies y" in result.summary


def test_loss_mse_on_classes_fails():
    figures = {"loss": "mse", "labels_in": "inputs", "regression": False, "train_step_error": None,
               "outputs_are_probabilities": False, "configured_value": 1.0, "cross_entropy_from_logits": 1.0}
    assert check_loss(figures).status is Status.FAIL


# ------------------------------------------------------------ hparams.lr_sweep


def test_sweep_measures_the_configured_rate_and_flags_a_divergent_one(mnli_split, bert_tokenizer, bert_checkpoint,
                                                                      seeded_models, seed):
    settings = SweepSettings(min_rate=1e-5, max_rate=10.0, rates=3, steps=4, range_steps=10)
    cached_bert = seeded_models(bert_checkpoint, 3, seed)
    before = [w.copy() for w in cached_bert.get_weights()]
    result = stage(RunConfig(batch_size=6, seed=seed), mnli_split, bert_tokenizer, cached_bert,
                   settings)["hparams.lr_sweep"]
    evidence = result.evidence
    assert evidence["learning_rates"] == pytest.approx([1e-5, 5e-5, 1e-2, 10.0])
    assert len(evidence["losses"]) == 4 and all(len(curve) == 4 for curve in evidence["losses"])
    assert all(loss is not None and math.isfinite(loss) for loss in evidence["losses"][0])
    assert len(evidence["held_out"]) == 4 and evidence["held_out_start"]["loss"] > 0
    assert evidence["diverged"][0] is False and evidence["diverged"][-1] is True
    assert evidence["best_rate"] != 10.0
    for old, new in zip(before, cached_bert.get_weights(), strict=True):
        assert old.tobytes() == new.tobytes()


def sweep_figures(rates, held_losses, drifts, start=1.0, curves=None):
    """Sweep evidence as lr_sweep returns it, from plain numbers."""
    curves = curves or [[1.0, 0.9] for _ in rates]
    return {"learning_rates": rates, "steps": [1, 2], "losses": curves, "smoothed": curves,
            "held_out_rows": 32, "held_out_start": {"loss": start},
            "held_out": [{"loss": loss, "accuracy": None, "commonest_share": None} for loss in held_losses],
            "drift_per_step": drifts}


RATES = [1e-5, 1e-4, 1e-3]


@pytest.mark.parametrize("drift, status", [(7e-3, Status.FAIL), (2e-3, Status.WARN), (1e-3, Status.PASS)])
def test_sweep_configured_rate_overwriting_pretrained_weights(drift, status):
    figures = sweep_figures(RATES, [0.9, 0.8, 0.7], [1e-5, 7e-4, drift])
    result = check_lr_sweep(figures, configured_rate=1e-3, pretrained=True)
    assert result.status is status
    if status is not Status.PASS:
        assert "1e-04" in result.fix and "pretrained" in result.summary


def test_sweep_recommends_the_good_rate_with_the_lowest_held_out_loss():
    figures = sweep_figures(RATES, [0.9, 0.8, 0.7], [1e-5, 7e-4, 7e-3])
    evidence = check_lr_sweep(figures, configured_rate=1e-4).evidence
    assert evidence["best_rate"] == 1e-4
    assert evidence["max_safe_rate"] == pytest.approx(1e-3 / 7, rel=0.3)


def test_sweep_random_weights_ignore_drift_passes():
    figures = sweep_figures(RATES, [0.9, 0.8, 0.7], [1e-5, 7e-4, 7e-3])
    result = check_lr_sweep(figures, configured_rate=1e-3, pretrained=False)
    assert result.status is Status.PASS and result.evidence["best_rate"] == 1e-3


def test_sweep_held_out_loss_rising_flags_the_rate():
    figures = sweep_figures(RATES, [0.9, 0.8, 1.2], [0, 0, 0])
    result = check_lr_sweep(figures, configured_rate=1e-3, pretrained=False)
    assert result.status is Status.WARN and "held-out loss rose" in result.summary


def test_sweep_configured_rate_far_below_the_recommended_warns():
    figures = sweep_figures([1e-7, 1e-5, 1e-4], [0.99, 0.9, 0.8], [0, 0, 0])
    result = check_lr_sweep(figures, configured_rate=1e-7, pretrained=False)
    assert result.status is Status.WARN and "below" in result.summary
    assert "1e-04" in result.fix


def test_sweep_every_rate_diverged_fails():
    figures = sweep_figures([1e-3, 1e-1], [None, 3.0], [0, 0], curves=[[1.1, None], [1.1, 3.0]])
    assert check_lr_sweep(figures, configured_rate=1e-3).status is Status.FAIL


def test_trainer_reset_restores_weights_and_optimizer_state(mnli_split, bert_tokenizer, cached_bert):
    batches = training_batches(mnli_split, bert_tokenizer, RunConfig(batch_size=6), count=2)
    trainer = Trainer(cached_bert, batches, RunConfig())
    trainer.reset(1e-2)
    assert len(trainer.run(2)) == 2
    trainer.reset(1e-4)
    for start, now in zip(cached_bert.get_weights(), trainer.model.get_weights(), strict=True):
        np.testing.assert_array_equal(start, now)
    assert all(not np.asarray(v).any() for v in trainer.optimizer.variables)
    assert float(trainer.optimizer.learning_rate.numpy()) == pytest.approx(1e-4)


def test_a_copy_with_accuracy_traces_its_train_step_once(mnli_split, bert_tokenizer, cached_bert, monkeypatch):
    """The compiled accuracy's variables are made before the first traced step (a tf.function that makes variables
    runs its Python twice), and the first step's accuracy is the batch's own, not one left from that evaluation."""
    import tensorflow as tf

    model_class = type(cached_bert)
    traced = []
    step = model_class.train_step

    def counted(self, data):
        if not tf.executing_eagerly():
            traced.append(1)
        return step(self, data)

    monkeypatch.setattr(model_class, "train_step", counted)
    config = RunConfig(batch_size=4)
    batches = training_batches(mnli_split, bert_tokenizer, config, count=2)
    trainer = Trainer(cached_bert, batches, config, metrics=["accuracy"])
    trainer.reset(1e-4)
    trainer.run(3)
    assert len(traced) == 1
    accuracy = next(metric for metric in trainer.model.metrics if metric.name == "accuracy")
    assert float(accuracy.count.numpy()) == 3 * 4  # three steps of four rows: the eager evaluation was reset


def test_trainer_reset_starts_again_from_the_first_batch(mnli_split, bert_tokenizer, cached_bert):
    """Each rate of the sweep sees the same batches in the same order, whatever the run before it took."""
    batches = training_batches(mnli_split, bert_tokenizer, RunConfig(batch_size=4), count=3)
    trainer = Trainer(cached_bert, batches, RunConfig())
    for steps in (1, 2, 3, 5, 0):
        trainer.reset(1e-4)
        trainer.run(steps)
    trainer.reset(1e-4)
    seen = next(trainer._iterator)  # the batch the next step would train on
    np.testing.assert_array_equal(np.asarray(seen["input_ids"]), np.asarray(batches[0]["input_ids"]))


def test_held_out_rows_are_scored_the_same_traced_as_eagerly_after_every_step_and_reset(mnli_split, bert_tokenizer,
                                                                                       cached_bert):
    """The sweep scores each rate through the copy's traced forward pass: the figures an eager call gives, on the
    weights the copy holds now (trained, then put back), and eagerly for a layer that cannot be traced."""
    import tensorflow as tf
    import tf_keras

    from diagnostics.keras.keras_model import Forward
    from diagnostics.keras.scoring import held_out_figures

    config = RunConfig(batch_size=4)
    batches = training_batches(mnli_split, bert_tokenizer, config, count=3)
    trainer, held = Trainer(cached_bert, batches[:2], config), batches[2]
    for rate, steps in ((1e-2, 3), (1e-4, 0)):
        trainer.reset(rate)
        trainer.run(steps)
        traced = held_out_figures(trainer.model, held, False, trainer.forward)
        eager = held_out_figures(trainer.model, held, False)
        assert traced["loss"] == pytest.approx(eager["loss"], rel=1e-4) and traced["accuracy"] == eager["accuracy"]
    assert trainer.forward._function.experimental_get_tracing_count() == 1  # one trace for every score

    class ReadsOnHost(tf_keras.Model):  # .numpy() runs only eagerly
        def call(self, inputs, training=False):
            return tf.constant(np.asarray(inputs.numpy(), dtype=np.float32) * 2.0)

    forward = Forward(ReadsOnHost())
    for _ in range(2):
        np.testing.assert_allclose(np.asarray(forward(np.ones((3, 2), np.float32))), 2.0)
    assert forward._function is False


@pytest.mark.slow  # full tier: trains two copies side by side
def test_the_copys_step_is_keras_own_traced_without_autograph_and_trains_the_same(mnli_split, bert_tokenizer,
                                                                                  cached_bert):
    """The copy's train step is the one `fit` traces, less AutoGraph's rewriting of every layer's source (seconds
    of the first step): the same losses, step for step, as Keras's own traced step."""
    config = RunConfig(batch_size=4)
    batches = training_batches(mnli_split, bert_tokenizer, config, count=2)
    trainer = Trainer(cached_bert, batches, config)
    trainer.reset(1e-3)
    ours = trainer.run(3)
    assert trainer.train_function.autograph is False and trainer.traces() == 1
    assert trainer.model.train_function is trainer.train_function  # fit on the copy (the overfit test) runs it too
    trainer.train_function = trainer.model.make_train_function(force=True)  # Keras's own, with AutoGraph
    trainer.reset(1e-3)
    assert trainer.run(3) == pytest.approx(ours, rel=1e-6)


def test_a_trace_that_fails_without_autograph_is_traced_with_it_and_a_failing_step_is_not_traced_again():
    import tensorflow as tf

    from diagnostics.keras.keras_model import Traced

    def gate(x):
        if tf.reduce_sum(x) > 0:  # Python control flow on a tensor's value: AutoGraph's to convert
            return x
        return -x

    gated = Traced(gate)
    np.testing.assert_allclose(np.asarray(gated(tf.constant([-1.0, -2.0]))), [1.0, 2.0])
    assert gated.autograph is True and gated.experimental_get_tracing_count() == 1

    def checked(x):
        tf.debugging.assert_positive(x)
        return x

    failing = Traced(checked)
    with pytest.raises(tf.errors.InvalidArgumentError):
        failing(tf.constant([-1.0]))  # traced, then failed while running: the step's own error, as it is
    assert failing.autograph is False and failing.experimental_get_tracing_count() == 1


def test_a_shared_copy_is_made_once_and_remade_only_when_it_cannot_serve(mnli_split, bert_tokenizer, cached_bert):
    from diagnostics.keras.training import SharedCopy

    config = RunConfig(batch_size=4)
    batches = training_batches(mnli_split, bert_tokenizer, config, count=2)
    copies = SharedCopy()
    first = copies.trainer(cached_bert, batches, config)
    assert copies.trainer(cached_bert, batches[1:], config) is first  # other batches: the same copy
    assert copies.trainer(cached_bert, batches, RunConfig(batch_size=4, learning_rate=1e-4)) is not first
    assert first.metrics == ["accuracy"]  # the overfit test reads it from the same copy
    for start, now in zip(cached_bert.get_weights(), first.source.get_weights(), strict=True):
        np.testing.assert_array_equal(start, now)


# ------------------------------------------------------------ hparams.lr_range_test


def test_range_test_restores_weights(mnli_split, bert_tokenizer, cached_bert):
    batches = training_batches(mnli_split, bert_tokenizer, RunConfig(batch_size=6), count=2)
    trainer = Trainer(cached_bert, batches, RunConfig())
    figures = lr_range_test(trainer, SweepSettings(range_steps=15))
    assert 1 <= len(figures["learning_rates"]) <= 15
    assert figures["learning_rates"] == sorted(figures["learning_rates"])
    for start, now in zip(cached_bert.get_weights(), trainer.model.get_weights(), strict=True):
        np.testing.assert_array_equal(start, now)


def _valley_curve():
    lrs = np.geomspace(1e-6, 1, 25)
    losses = 1.1 - 0.6 / (1 + np.exp(-(np.log10(lrs) + 3) * 3))
    losses[-4:] = [1.0, 2.0, 5.0, np.nan]
    return lrs.tolist(), losses.tolist()


def test_range_test_rules_side_by_side_drop_non_finite_points():
    lrs, losses = _valley_curve()
    result = check_lr_range_test({"learning_rates": lrs, "losses": [None if math.isnan(v) else v for v in losses]})
    assert set(result.evidence["suggestions"]) == {"steepest", "minimum / 10", "valley"}
    assert result.evidence["dropped_points"] == 1
    assert 1e-5 < result.evidence["suggested"] < 1e-1
    # The rules are named in the reader's language; the evidence keeps its keys.
    from diagnostics.i18n import localize

    assert "steepest" in localize(result.summary, "en") and "valley" in localize(result.summary, "en")
    russian = localize(result.summary, "ru")
    assert "самый крутой спуск" in russian and "долина" in russian and "steepest" not in russian


def test_range_test_rules_that_disagree_say_the_curve_is_uninformative_and_defer_to_the_sweep(monkeypatch):
    monkeypatch.setattr(lr_range_test_module, "CHECK", lr_range_test_module.CHECK.with_values(disagree_factor=2.0))
    lrs = np.geomspace(1e-6, 1, 12).tolist()
    losses = [1.1, 1.0, 1.1, 1.0, 1.1, 1.0, 1.1, 0.9, 1.1, 1.0, 1.2, 1.1]
    result = check_lr_range_test({"learning_rates": lrs, "losses": losses})
    assert result.status is Status.SKIP and result.fix is None  # not a verdict: never a PASS
    assert "Uninformative" in result.summary and "disagree" in result.summary and "hparams.lr_sweep" in result.summary
    assert result.evidence["uninformative"]  # the valley rule's rate stays in the evidence, proposed nowhere
    from diagnostics.report.plots import range_test_figure

    figure = range_test_figure(result)  # its rules' rates drawn as its evidence, said to suggest nothing
    assert any("disagree, so this test suggests none" in (note.text or "") for note in figure.layout.annotations)


def test_range_test_with_the_sweeps_rate_proposes_none_of_its_own(monkeypatch):
    monkeypatch.setattr(lr_range_test_module, "CHECK", lr_range_test_module.CHECK.with_values(disagree_factor=100.0))
    lrs, losses = _valley_curve()
    figures = {"learning_rates": lrs, "losses": [None if math.isnan(v) else v for v in losses]}
    alone = check_lr_range_test(figures)
    beside = check_lr_range_test(figures, sweep_rate=2e-5)
    assert alone.summary.startswith("Suggested rate") and "sweep" not in alone.summary
    # One rate wherever one is proposed: the curve's pick is evidence, the rate to use the sweep's.
    assert "The rate to use is the sweep's 2e-05" in beside.summary and beside.fix is None
    assert beside.evidence["suggested"] == alone.evidence["suggested"]


def test_range_test_stop_rule_ignores_one_noisy_step():
    noisy = [2.37, 0.83, 2.12, 3.54] + [1.0] * 20
    assert _range_stop(noisy, 4.0) is None
    assert _range_stop([1.0] * 10 + [50.0] * 10, 4.0) is not None
    assert _range_stop([1.0, float("nan")], 4.0) == 1


def test_range_test_suggestion_capped_at_the_rate_pretrained_weights_tolerate(monkeypatch):
    monkeypatch.setattr(lr_range_test_module, "CHECK", lr_range_test_module.CHECK.with_values(disagree_factor=100.0))
    lrs, losses = _valley_curve()
    result = check_lr_range_test({"learning_rates": lrs, "losses": [None if math.isnan(v) else v for v in losses]},
                                    max_safe_rate=1.4e-4, drift_limit=5e-3)
    assert result.evidence["suggested"] == pytest.approx(1e-4)
    # The limit quoted is the one the sweep measured by (this run's warn_drift), never the module's default.
    assert "Capped" in result.summary and "by more than 0.005 of their size" in result.summary


def test_range_test_too_few_points_warn():
    assert check_lr_range_test({"learning_rates": [1e-6, 1e-5], "losses": [1.0, None]}).status is Status.WARN


# ------------------------------------------------------------ hparams.schedule


def test_schedule_create_optimizer_warms_up_then_decays():
    figures = schedule_figures(RunConfig(optimizer="create_optimizer", learning_rate=5e-5, train_steps=100,
                                            warmup_steps=10))
    rates = dict(zip(figures["steps"], figures["learning_rates"], strict=True))
    assert rates[0] == 0.0 and rates[10] == pytest.approx(5e-5) and rates[100] == pytest.approx(0.0)
    assert check_schedule(figures).status is Status.PASS


def test_schedule_mostly_warmup_warns():
    figures = schedule_figures(RunConfig(optimizer="create_optimizer", train_steps=100, warmup_steps=80))
    assert check_schedule(figures).status is Status.WARN


def test_the_schedule_is_one_value_the_optimizer_the_chart_the_check_and_a_fix_all_read(monkeypatch):
    """A setting that derives the warmup another way (here a tenth of the steps, as a warmup ratio would) changes
    `Schedule.of` alone: the optimizer the copies train with, the schedule's chart and check, the validation and a
    rate fix in the user's code all follow it."""
    from diagnostics.config.schedule import Schedule
    from diagnostics.core.fixes import CodeStyle, optimizer_code
    from diagnostics.keras.training import build_optimizer

    monkeypatch.setattr(Schedule, "of", classmethod(lambda cls, config: cls(config.train_steps,
                                                                            config.train_steps // 10, 0.0)))
    config = RunConfig(optimizer="create_optimizer", learning_rate=5e-5, train_steps=100).validated()
    figures = schedule_figures(config)
    rates = dict(zip(figures["steps"], figures["learning_rates"], strict=True))
    assert figures["warmup_steps"] == 10 and rates[5] == pytest.approx(2.5e-5) and rates[10] == pytest.approx(5e-5)
    optimizer = build_optimizer(config)
    assert optimizer.get_config()["learning_rate"]["config"]["warmup_steps"] == 10
    assert "num_warmup_steps=10," in optimizer_code(1e-4, CodeStyle.of(config))
    monkeypatch.setattr(Schedule, "of", classmethod(lambda cls, config: cls(config.train_steps,
                                                                            config.train_steps + 1, 0.0)))
    with pytest.raises(InputError, match="warmup steps"):
        RunConfig(optimizer="create_optimizer", train_steps=100).validated()


def test_schedule_string_adam_is_a_constant_0_001():
    figures = schedule_figures(RunConfig(optimizer="adam"))
    assert set(figures["learning_rates"]) == {0.001}


# ------------------------------------------------------------ settings


@pytest.mark.parametrize("settings", [SweepSettings(rates=1), SweepSettings(rates=300),
                                      SweepSettings(min_rate=1e-2, max_rate=1e-3), SweepSettings(steps=0)])
def test_unusable_sweep_settings_are_a_clear_error(settings):
    with pytest.raises(InputError):
        settings.validated()


def test_sweep_held_out_loss_that_did_not_move_ranks_by_training_loss():
    curves = [[1.1, 1.1], [1.1, 1.05], [1.1, 0.9]]
    figures = sweep_figures(RATES, [1.0995, 1.0985, 1.0990], [0, 0, 0], start=1.0995, curves=curves)
    result = check_lr_sweep(figures, configured_rate=1e-3, pretrained=False)
    assert result.evidence["best_rate"] == 1e-3 and result.evidence["ranked_by"] == "training loss"
    assert "too little to rank" in result.summary
    # What the rule reads, measured, and at which rates: never "every rate" beside a flagged rate's own rise, nor a
    # loss that rose 3% said to have "moved at most 3%... too little" against a rule of a 1% fall.
    assert f"none of the rates not flagged ({', '.join(f'{rate:.0e}' for rate in RATES)}) lowered the held-out loss " \
           "by 1% of its start (1.099; its lowest was 1.099)" in result.summary, result.summary


@pytest.mark.parametrize("pretrained, recommended", [(False, 1e-3), (True, 1e-4)])
def test_sweep_that_moved_no_loss_recommends_the_good_rate_nearest_the_checkpoints_usual_one(pretrained, recommended):
    # A few steps on random weights (or a hard task) move neither loss: the lowest training loss is then noise, and
    # a rate it picked (1e-6 measured once on the kit) trains nothing; the usual rate is one real training calls good.
    rates = [1e-6, 1e-5, 1e-4, 1e-3, 1e-2]
    curves = [[0.693, 0.692], [0.693, 0.6925], [0.693, 0.6931], [0.693, 0.694], [0.693, 0.695]]
    figures = sweep_figures(rates, [0.693] * 5, [1e-6] * 5, start=0.693, curves=curves)
    result = check_lr_sweep(figures, configured_rate=1e-3 if not pretrained else 1e-4, pretrained=pretrained)
    assert result.evidence["ranked_by"] == "usual rate" and result.evidence["best_rate"] == recommended
    assert "nearest this checkpoint's usual" in result.summary


def test_rate_charts_write_rates_one_way_and_keep_the_legend_off_the_axis_title():
    from diagnostics.report.plots import range_test_figure, sweep_final_figure
    from diagnostics.core.result import CheckResult

    lrs = np.geomspace(1e-6, 1e-1, 12).tolist()
    ranged = range_test_figure(CheckResult("hparams.lr_range_test", "hparams", Status.PASS, "", evidence={
        "learning_rates": lrs, "losses": [1.0] * 12, "smoothed": [1.0] * 12, "suggestions": {"valley": 1e-4}}))
    assert (ranged.layout.xaxis.type, ranged.layout.xaxis.tickformat) == ("log", ".0e")
    rates = [1e-5, 1e-4, 1e-3]
    swept = sweep_final_figure(CheckResult("hparams.lr_sweep", "hparams", Status.PASS, "", evidence={
        "learning_rates": rates, "held_out": [{"loss": 0.69}, {"loss": 0.6}, {"loss": 0.7}], "held_out_start":
        {"loss": 0.69}, "final_losses": [0.6, 0.5, 0.7], "diverged": [False] * 3, "best_rate": 1e-4,
        "configured_rate": 1e-3, "drift_per_step": [None] * 3}))
    assert swept.layout.xaxis.tickformat == ".0e"
    assert swept.layout.legend.yanchor == "top" and swept.layout.legend.y < -0.2
    assert swept.layout.yaxis.range is None  # every value fits: nothing clipped


def test_a_diverged_rate_leaves_the_top_of_the_sweeps_charts_instead_of_flattening_the_good_rates():
    from diagnostics.report.plots import sweep_curves_figure, sweep_final_figure
    from diagnostics.core.result import CheckResult

    rates = [1e-5, 1e-4, 1e-1]
    result = CheckResult("hparams.lr_sweep", "hparams", Status.FAIL, "", evidence={
        "learning_rates": rates, "steps": [1, 2, 3], "losses": [[0.7, 0.69, 0.68], [0.7, 0.6, 0.55], [0.7, 40, 300]],
        "held_out": [{"loss": 0.69}, {"loss": 0.6}, {"loss": 250.0}], "held_out_start": {"loss": 0.69},
        "diverged": [False, False, True], "best_rate": 1e-4, "configured_rate": 1e-1, "drift_per_step": [None] * 3})
    for figure in (sweep_curves_figure(result), sweep_final_figure(result)):
        low, high = figure.layout.yaxis.range
        assert high < 1.0 and low > 0.4, (low, high)  # the good rates' losses fill the chart
        assert any("flagged rates leave the top (up to 300" in note.text or "flagged rates leave the top (up to 250"
                   in note.text for note in figure.layout.annotations)


def test_the_sweeps_step_chart_draws_what_it_ranks_by_so_the_recommended_line_ends_lowest():
    from diagnostics.report.plots import sweep_curves_figure

    # Ranked by training loss (the held-out loss did not move): 1e-3's smoothed loss ends lowest, though 1e-4's
    # noisy last step is the lowest single step. The lines are the smoothed losses; each step's own are dots.
    raw = [[1.10, 1.09, 1.10, 1.09], [1.10, 1.08, 1.09, 1.00], [1.10, 0.95, 0.93, 1.01]]
    smoothed = [[1.10, 1.095, 1.097, 1.093], [1.10, 1.09, 1.09, 1.05], [1.10, 1.02, 0.98, 0.99]]
    figures = {**sweep_figures(RATES, [1.099, 1.0985, 1.099], [0, 0, 0], start=1.099, curves=raw),
               "steps": [1, 2, 3, 4], "smoothed": smoothed}
    result = check_lr_sweep(figures, configured_rate=1e-5, pretrained=False)
    assert result.evidence["ranked_by"] == "training loss" and result.evidence["best_rate"] == 1e-3
    figure = sweep_curves_figure(result)
    lines = {trace.name: trace for trace in figure.data if trace.mode == "lines"}
    assert lowest(lines) == "1e-03 (recommended)"
    assert [list(trace.y) for trace in lines.values()] == smoothed
    dots = [trace for trace in figure.data if trace.mode == "markers"]
    assert [list(trace.y) for trace in dots] == raw and not any(trace.showlegend for trace in dots)
    assert [dot.marker.color for dot in dots] == [line.line.color for line in lines.values()]


def lowest(lines: dict) -> str:
    return min(lines, key=lambda name: lines[name].y[-1])


def test_the_overfit_chart_keeps_ln_k_below_the_accuracy_axis_top():
    import math

    from diagnostics.core.result import CheckResult
    from diagnostics.report.plots import overfit_figure

    ln_k = math.log(3)
    figure = overfit_figure(CheckResult("overfit.one_batch", "overfit", Status.PASS, "", evidence={
        "losses": [1.05, 0.8, 0.3, 0.05], "accuracies": [0.3, 0.6, 0.9, 1.0], "ln_k": ln_k}))
    low, high = figure.layout.yaxis.range
    assert low == 0 and ln_k / high < 0.8  # ln K well below the top, where the accuracy axis says 100%
    assert figure.layout.yaxis2.showgrid is False


def test_the_optimizer_summary_names_the_class_once_when_it_was_given_as_itself():
    from diagnostics.checks.hparams.optimizer import optimizer_summary

    rows = [{"setting": "learning_rate", "value": "5e-05", "source": "set"},
            {"setting": "beta_1", "value": "0.9", "source": "Keras default"}]
    itself = str(optimizer_summary({"class": "Adam", "given_as": "Adam", "learning_rate": 5e-5, "settings": rows}))
    assert itself.startswith("The optimizer is Adam with learning rate 5e-05") and "builds" not in itself
    string = str(optimizer_summary({"class": "Adam", "given_as": "adam", "learning_rate": 1e-3, "settings": rows}))
    assert string.startswith("The string 'adam' builds Adam with learning rate 0.001")


def test_a_sweep_on_random_weights_says_nothing_of_pretrained_weights():
    curves = [[1.1, 1.1], [1.1, 1.05], [1.1, 0.9]]
    figures = sweep_figures(RATES, [1.09, 1.05, 1.0], [0, 0, 0], start=1.0995, curves=curves)
    summary = check_lr_sweep(figures, configured_rate=1e-3, pretrained=False).summary
    assert "pretrained" not in summary and "that do not diverge" in summary and "does not diverge" in summary
    assert "pretrained weights" in check_lr_sweep(figures, configured_rate=1e-3, pretrained=True).summary
