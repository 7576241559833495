import math

import numpy as np
import pytest

from conftest import copy_checks, make_split
from diagnostics.keras import loading
from diagnostics.checks.model.config import check_config
from diagnostics.checks.model.divergence import check_divergence, divergence_seen, rate_to_suggest
from diagnostics.keras.training import StepRecord
from diagnostics.checks.model.gradients import check_gradients, gradient_figures
from diagnostics.checks.model.initial_loss import check_initial_loss
from diagnostics.checks.model.memory import check_memory, memory_figures
from diagnostics.walk import registry
from diagnostics.config.run import RunConfig
from diagnostics.keras.batches import build_first_batch
from diagnostics.core.context import RunContext
from diagnostics.walk.stages import model_stage
from diagnostics.core.result import Status
from diagnostics.keras.scoring import per_sample_losses
from diagnostics.keras.training import GradientStats


def stage(config, split, tokenizer, model=None, loader=None):
    loader = loader or (lambda checkpoint, num_labels, seed: model)
    return {r.id: r for r in model_stage(RunContext(config, tokenizer, split, loader))}


@pytest.fixture(scope="module")
def two_label_bert(bert_checkpoint):
    return loading.load_model(str(bert_checkpoint), 2)


# ------------------------------------------------------------ per-sample loss


def test_per_sample_losses_match_cross_entropy_and_mark_invalid_labels_nan():
    logits = np.array([[2.0, 0.0], [0.0, 0.0], [1.0, 1.0]])
    losses = per_sample_losses(logits, np.array([0, 1, 2]), regression=False)
    assert losses[0] == pytest.approx(-math.log(math.exp(2) / (math.exp(2) + 1)))
    assert losses[1] == pytest.approx(math.log(2))
    assert math.isnan(losses[2])


def test_per_sample_losses_minus_one_is_nan_and_regression_is_squared_error():
    assert math.isnan(per_sample_losses(np.zeros((1, 3)), np.array([-1]), regression=False)[0])
    assert per_sample_losses(np.array([[1.0], [3.0]]), np.array([2.0, 3.0]), True).tolist() == [1.0, 0.0]


# ------------------------------------------------------------ a clean run


def test_clean_run_every_check_passes(mnli_split, bert_tokenizer, cached_bert):
    results = stage(RunConfig(batch_size=6), mnli_split, bert_tokenizer, cached_bert)
    assert results.pop("model.nan_origin").status is Status.SKIP
    assert {check: r.status for check, r in results.items()} == {check: Status.PASS for check in results}
    assert set(results) == set(registry.checks_of("model")) - {"model.nan_origin"}


def test_clean_run_initial_loss_within_15_percent_of_ln_k(mnli_split, bert_tokenizer, cached_bert):
    result = stage(RunConfig(batch_size=6), mnli_split, bert_tokenizer, cached_bert)["model.initial_loss"]
    assert abs(result.evidence["loss"] - math.log(3)) / math.log(3) < 0.15


def test_clean_run_bert_batch_carries_token_type_ids(mnli_split, bert_tokenizer, cached_bert):
    result = stage(RunConfig(batch_size=6), mnli_split, bert_tokenizer, cached_bert)["model.gradients"]
    assert result.evidence["global_norm"] > 0
    assert any("encoder/layer_._1" in row["layer"] for row in result.evidence["layer_norms"])


def test_cached_model_weights_are_unchanged(mnli_split, bert_tokenizer, cached_bert):
    before = [w.copy() for w in cached_bert.get_weights()]
    stage(RunConfig(batch_size=6, learning_rate=10.0), mnli_split, bert_tokenizer, cached_bert)
    for old, new in zip(before, cached_bert.get_weights(), strict=True):
        assert old.tobytes() == new.tobytes()


# ------------------------------------------------------------ the course's num_labels=2 on three classes


def test_num_labels_two_nan_rows_are_exactly_the_label_two_rows(mnli_split, bert_tokenizer, two_label_bert):
    config = RunConfig(batch_size=12, num_labels=2, shuffle=False)
    result = stage(config, mnli_split, bert_tokenizer, two_label_bert)["model.nan_rows"]
    batch = build_first_batch(mnli_split, bert_tokenizer, config)
    expected = [i for i, label in enumerate(batch.rows["label"]) if label == 2]
    assert result.status is Status.FAIL
    assert [row["position"] for row in result.evidence["rows"]] == expected
    assert all(row["label"] == 2 and row["loss"] is None and row["decoded"].startswith("[CLS]")
               for row in result.evidence["rows"])
    assert "label >= num_labels" in result.summary and "config.num_labels == 2" in result.summary
    # The head too small for MNLI's three labels is model.config's cause: the rows point there, with no fix of their
    # own.
    assert result.explained_by == "model.config" and result.fix is None and result.evidence["labels_cause"]


def test_non_finite_rows_within_a_threshold_set_for_the_run_pass_and_still_say_what_they_are(
        mnli_split, bert_tokenizer, two_label_bert):
    from diagnostics.core.check import per_run_thresholds

    config = RunConfig(batch_size=12, num_labels=2, shuffle=False)
    with per_run_thresholds({"model.nan_rows": {"max_non_finite_rows": 12}}):
        result = stage(config, mnli_split, bert_tokenizer, two_label_bert)["model.nan_rows"]
    bad = result.evidence["non_finite_rows"]
    assert result.status is Status.PASS and 0 < bad <= 12
    assert result.summary.startswith(f"{bad} of 12 rows have a non-finite loss") and result.summary.endswith(
        "It passes because this run sets max_non_finite_rows to 12 (--threshold; 0 by default).")
    assert "label >= num_labels" in result.summary


ROWS_OF_A_FIT = [{"index": 0, "decoded": "a", "label": 1, "label_name": "b"},
                 {"index": 1, "decoded": "c", "label": 2, "label_name": "(out of range: 2)"}]
WATCHED = {"losses": [0.7, math.nan], "weight_norms": [1.0, 1.0], "learning_rate": 3e-5, "usual_rate": 3e-5}


@pytest.mark.parametrize("allowed", [0, 1])
def test_a_fits_non_finite_loss_blames_its_rows_not_the_weights_whatever_rows_the_run_allows(allowed):
    """DiagnoseCallback's model.nan_rows at the first non-finite loss of a fit whose batch has a row with a non-finite
    loss: the rows' finding, a fail by default and a pass a run's raised threshold allows; never "the weights
    diverged", which holds only when every row of the batch is finite."""
    from diagnostics.checks.model.nan_rows import check_nan_rows, in_fit
    from diagnostics.core.check import per_run_thresholds

    with per_run_thresholds({"model.nan_rows": {"max_non_finite_rows": allowed}}):
        batch = check_nan_rows(np.array([0.5, np.nan]), np.zeros((2, 2)), ROWS_OF_A_FIT, 2, False)
        result = in_fit(batch, 1, [0.7], [], WATCHED)
    assert "diverged" not in result.summary
    assert result.summary.startswith("At step 2, the first non-finite loss. 1 of 2 rows have a non-finite loss")
    assert result.status is (Status.FAIL if allowed == 0 else Status.PASS)
    assert result.summary.count("--threshold") == (0 if allowed == 0 else 1)
    finite = check_nan_rows(np.array([0.5, 0.6]), np.zeros((2, 2)), ROWS_OF_A_FIT[:1] * 2, 2, False)
    diverged = in_fit(finite, 1, [0.7], ["dense/kernel:0"], WATCHED)
    assert diverged.status is Status.FAIL and "the weights diverged" in diverged.summary


def test_a_forward_pass_a_run_allows_some_non_finite_logits_in_says_how_many_it_found():
    from diagnostics.checks.model.forward import check_forward
    from diagnostics.core.check import per_run_thresholds
    from diagnostics.keras.measurement import Forward

    logits = np.zeros((2, 2))
    logits[0, 0] = np.nan
    with per_run_thresholds({"model.forward": {"min_finite_share": 0.5}}):
        result = check_forward(Forward(logits=logits, error=None, fit_call_error=None, trace=[]), 2, 2)
    assert result.status is Status.PASS and "all finite" not in result.summary
    assert result.summary.startswith("25% of the logits are NaN or Inf") and "min_finite_share to 0.5" in \
        result.summary


def test_an_input_the_model_does_not_take_is_named_with_the_call_that_leaves_it_out():
    """huggingface/transformers#2702: DistilBERT fed a batch with token_type_ids (a BERT tokenizer's, or
    return_token_type_ids=True) refuses the keyword; the finding names the input and the fix leaves it out, where a
    forward pass that raises for any other reason keeps its general sentence."""
    from diagnostics.checks.model.forward import check_forward
    from diagnostics.keras.measurement import Forward

    error = ("TypeError: TFDistilBertForSequenceClassification.call() got an unexpected keyword argument "
             "'token_type_ids'")
    result = check_forward(Forward(error=error), 2, 2)
    assert result.status is Status.FAIL and result.condition == "refused_input"
    assert str(result.summary).startswith("The batch holds token_type_ids, which the model does not take")
    assert str(result.fix).startswith("tokenizer(..., return_token_type_ids=False)")
    other = check_forward(Forward(error="ValueError: shapes"), 2, 2)
    assert other.condition == "forward_raises" and str(other.summary) == "The forward pass raised ValueError: shapes."


def test_num_labels_two_config_fails_with_task_label_names(mnli_split, bert_tokenizer, two_label_bert):
    results = stage(RunConfig(batch_size=12, num_labels=2), mnli_split, bert_tokenizer, two_label_bert)
    assert results["model.config"].status is Status.FAIL
    assert "num_labels=3" in results["model.config"].fix and "'contradiction'" in results["model.config"].fix
    assert "Received a label value of 2" in results["model.forward"].summary
    assert results["model.nan_origin"].status is Status.SKIP
    assert "labels" in results["model.nan_origin"].summary
    # Not a PASS "within 0.1% of ln(K) = 0.693" over the rows the short head can score, beside the NaN rows.
    initial = results["model.initial_loss"]
    assert initial.status is Status.SKIP and "(num_labels=2, while mnli has 3; see model.config)" in initial.summary


def test_label_minus_one_rows_are_nan_with_the_test_split_cause(bert_tokenizer, cached_bert):
    split = make_split("mnli", [("the cat sat", "the dog ran", -1)] * 4)
    result = stage(RunConfig(batch_size=4), split, bert_tokenizer, cached_bert)["model.nan_rows"]
    assert result.status is Status.FAIL
    assert len(result.evidence["rows"]) == 4
    assert "label -1" in result.summary


# ------------------------------------------------------------ NaN weights


def test_nan_weights_name_the_first_broken_layer(bert_checkpoint, mnli_split, bert_tokenizer):
    broken = loading.load_model(str(bert_checkpoint), 3)
    target = next(v for v in broken.trainable_variables if "layer_._1/attention/self/query/kernel" in v.name)
    target.assign(np.full(target.shape, np.nan, dtype=np.float32))
    results = stage(RunConfig(batch_size=6), mnli_split, bert_tokenizer, broken)
    origin = results["model.nan_origin"]
    assert origin.status is Status.FAIL
    assert origin.evidence["layer"] == "encoder layer 1 of 2"
    assert origin.evidence["input"]["non_finite_share"] == 0.0
    assert origin.evidence["output"]["non_finite_share"] == 1.0
    assert "bert/encoder/layer_._1/attention/self/query/kernel" in origin.evidence["non_finite_weights"]
    assert results["model.forward"].status is Status.FAIL
    assert "logits are already non-finite" in results["model.nan_rows"].summary


def test_learning_rate_that_breaks_weights_fails_after_step(bert_checkpoint, mnli_split, bert_tokenizer, cached_bert):
    results = stage(RunConfig(batch_size=6, learning_rate=1e39), mnli_split, bert_tokenizer, cached_bert)
    assert results["model.weights_after_step"].status is Status.FAIL
    assert results["model.nan_origin"].evidence["when"] == "after one optimizer step"


# ------------------------------------------------------------ loss configuration


def test_string_loss_on_logits_initial_loss_warn(mnli_split, bert_tokenizer, cached_bert):
    config = RunConfig(batch_size=6, loss="sparse_categorical_crossentropy")
    result = stage(config, mnli_split, bert_tokenizer, cached_bert)["model.initial_loss"]
    assert result.status is Status.WARN
    assert "from_logits=False" in result.summary


def test_keras_loss_from_logits_with_separate_labels_pass(mnli_split, bert_tokenizer, cached_bert):
    config = RunConfig(batch_size=6, loss="SparseCategoricalCrossentropy(from_logits=True)", labels_in="separate")
    results = stage(config, mnli_split, bert_tokenizer, cached_bert)
    assert results["model.initial_loss"].status is Status.PASS
    assert results["model.gradients"].status is Status.PASS


@pytest.mark.parametrize("value, status", [(1.0, Status.PASS), (1.29, Status.PASS), (0.71, Status.PASS),
                                           (1.31, Status.WARN), (0.69, Status.WARN)])
def test_initial_loss_distance_from_ln_k_boundary(value, status):
    assert check_initial_loss(value, 1.0, value, "internal", False).status is status


@pytest.mark.parametrize("reference, status", [(1.0, Status.PASS), (1.095, Status.PASS), (1.12, Status.WARN)])
def test_initial_loss_configured_loss_disagrees_with_logits_boundary(reference, status):
    assert check_initial_loss(1.0, 1.0, reference, "sparse_categorical_crossentropy", False).status is status


# ------------------------------------------------------------ gradients


def test_missing_gradients_fail_names_variables():
    record = StepRecord(loss=1.0, gradients=[("m/bert/pooler/dense/kernel:0", None),
                                                          ("m/classifier/kernel:0", GradientStats.of(np.ones(2)))])
    result = check_gradients(gradient_figures(record), RunConfig())
    assert result.status is Status.FAIL
    assert "bert/pooler/dense/kernel" in result.summary and "No gradients provided" in result.summary


def test_no_gradients_error_explains_the_label_mismatch():
    record = StepRecord(error="ValueError: No gradients provided for any variable")
    result = check_gradients(gradient_figures(record), RunConfig())
    assert result.status is Status.FAIL
    assert "labels inside the input dict" in result.summary


def test_non_finite_gradient_fail():
    record = StepRecord(loss=1.0, gradients=[("m/classifier/kernel:0", GradientStats.of(np.array([np.nan, 1.0])))])
    assert check_gradients(gradient_figures(record), RunConfig()).status is Status.FAIL


# ------------------------------------------------------------ other checkpoints and tasks


def test_regression_task_runs_every_check(bert_checkpoint, bert_tokenizer):
    split = make_split("stsb", [("the cat sat", "a cat sat", 4.5), ("the dog ran", "anna read", 0.5)] * 3)
    regression = loading.load_model(str(bert_checkpoint), 1)
    results = stage(RunConfig(task="stsb", batch_size=6), split, bert_tokenizer, regression)
    assert results["model.config"].status is Status.PASS
    assert results["model.forward"].evidence["logits_shape"] == [6, 1]
    assert results["model.nan_rows"].status is Status.PASS
    assert all(r.status is not Status.ERROR for r in results.values())


def test_regression_task_with_three_outputs_config_fail(bert_tokenizer, cached_bert):
    split = make_split("stsb", [("the cat sat", "a cat sat", 4.5)] * 4)
    result = stage(RunConfig(task="stsb", batch_size=4, num_labels=3), split, bert_tokenizer, cached_bert)[
        "model.config"
    ]
    assert result.status is Status.FAIL
    assert "num_labels=1" in result.fix


def test_non_classification_checkpoint_is_a_clear_fail(t5_config_checkpoint, mnli_split, bert_tokenizer):
    config = RunConfig(checkpoint=str(t5_config_checkpoint), batch_size=4)
    results = stage(config, mnli_split, bert_tokenizer, loader=loading.load_model)
    assert results["model.config"].status is Status.FAIL
    assert "sequence classifier" in results["model.config"].summary
    assert all(results[c].status is Status.SKIP for c in registry.checks_of("model")[1:])


def test_tokenizer_without_pad_token_is_a_clear_fail(gpt2_checkpoint, mnli_split):
    tokenizer = loading.load_tokenizer(str(gpt2_checkpoint))
    config = RunConfig(checkpoint=str(gpt2_checkpoint), batch_size=4)
    results = stage(config, mnli_split, tokenizer, loader=loading.load_model)
    assert results["model.config"].status is Status.FAIL
    assert "pad_token = tokenizer.eos_token" in results["model.config"].fix
    assert results["model.forward"].status is Status.SKIP


# ------------------------------------------------------------ memory


def test_memory_fits_pass_and_too_big_warn():
    figures = {
        "parameters": 1000,
        "training_state_bytes": 16000,
        "activation_bytes_estimate": 1000,
        "total_bytes": 17000,
        "available_ram_bytes": 10**9,
        "gpu_bytes": None,
        "batch_size": 8,
        "sequence_length": 128,
    }
    assert check_memory(figures).status is Status.PASS
    assert check_memory({**figures, "available_ram_bytes": 16999}).status is Status.WARN
    assert check_memory({**figures, "available_ram_bytes": 17000}).status is Status.PASS


def test_memory_counts_adam_state_in_float32(cached_bert):
    figures = memory_figures(cached_bert.count_params(), cached_bert.config, 8, 64)
    assert figures["training_state_bytes"] == cached_bert.count_params() * 16
    assert figures["activation_bytes_estimate"] > 0


@pytest.mark.parametrize("make", [
    lambda keras: keras.optimizers.SGD(0.1), lambda keras: keras.optimizers.SGD(0.1, momentum=0.9),
    lambda keras: keras.optimizers.Adam(amsgrad=True), lambda keras: keras.optimizers.RMSprop(),
    lambda keras: keras.optimizers.RMSprop(momentum=0.9, centered=True), lambda keras: keras.optimizers.Adagrad(),
    lambda keras: keras.optimizers.legacy.SGD(0.1, momentum=0.9), lambda keras: keras.optimizers.legacy.SGD(0.1)])
def test_memory_counts_the_slots_the_optimizer_really_keeps(make, cached_bert):
    # Before, every optimizer was counted and said as "Adam's two slots" (an SGD without momentum keeps none).
    import tensorflow as tf
    import tf_keras

    from diagnostics.keras.parameters import optimizer_slots

    optimizer = make(tf_keras)
    weights = [tf.Variable(tf.zeros((3, 2))), tf.Variable(tf.zeros((2,)))]
    if hasattr(optimizer, "build"):
        optimizer.build(weights)
        kept = [v for v in optimizer.variables if v.shape != ()]
    else:  # a legacy optimizer makes its slots as it applies a first step
        optimizer.apply_gradients(zip([tf.ones_like(w) for w in weights], weights, strict=True))
        kept = [v for v in optimizer.variables() if v.shape != ()]
    assert optimizer_slots(optimizer) == len(kept) // len(weights)
    figures = memory_figures(cached_bert.count_params(), cached_bert.config, 8, 64, optimizer)
    assert figures["training_state_bytes"] == cached_bert.count_params() * 4 * (2 + len(kept) // len(weights))
    summary = str(check_memory(figures).summary)
    assert "Adam's two slots" not in summary  # none of these is Adam with two
    assert f"{type(optimizer).__name__}'s slot variables, {len(kept) // len(weights)} a weight" in summary


# ------------------------------------------------------------ model.divergence (DiagnoseCallback's rule)

LN3 = math.log(3)


def watched(losses, norms=None, chance=LN3, **more):
    norms = norms or [10.0] * (len(losses) + 1)
    return {"losses": losses, "weight_norms": norms, "chance_loss": chance, "learning_rate": 1e-3,
            "usual_rate": 5e-5, **more}


def test_divergence_a_loss_that_falls_passes():
    result = check_divergence(watched([1.1, 1.0, 0.9, 0.8, 0.7, 0.6, 0.5]))
    assert result.status is Status.PASS and "7 steps" in result.summary


def test_divergence_a_loss_rising_past_four_times_its_start_fails_on_the_weights():
    result = check_divergence(watched([1.1, 3.0, 9.0, 20.0, 40.0, 80.0], rows_loss_at_start=1.1))
    assert result.status is Status.FAIL and result.evidence["seen"]["rule"] == "loss"
    assert "the weights diverged" in result.summary and "the learning rate 0.001 is too high" in result.summary
    assert "learning_rate=5e-05" in result.fix and result.evidence["suggested_rate"] == 5e-5


def test_divergence_one_noisy_step_never_counts():
    assert divergence_seen([1.1, 1.0, 1.0, 50.0, 0.9, 0.9], [10.0] * 7, LN3) is None


@pytest.mark.parametrize("recent, diverged", [(4 * 1.1, False), (4 * 1.1 + 1e-9, True)])
def test_divergence_boundary_is_four_times_the_start(recent, diverged):
    seen = divergence_seen([1.1] + [recent] * 5, [10.0] * 7, LN3)
    assert (seen is not None) is diverged


def test_divergence_a_low_start_is_judged_against_guessing_not_four_times_it():
    # A model resumed near convergence: 0.05 -> 0.3 is six times its start, but still far better than guessing.
    assert divergence_seen([0.05] + [0.3] * 5, [10.0] * 7, LN3) is None
    assert divergence_seen([0.05] + [1.7] * 5, [10.0] * 7, LN3)["limit"] == pytest.approx(1.5 * LN3)


def test_divergence_regression_has_no_guessing_floor():
    assert divergence_seen([8.0] + [40.0] * 5, [10.0] * 7, None)["rule"] == "loss"


def test_divergence_weights_growing_while_the_loss_stays_at_its_start_fail():
    figures = watched([1.1, 1.2, 1.1, 1.0, 1.1, 1.1], [10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0], weights_moved=6.5)
    result = check_divergence(figures)
    assert result.status is Status.FAIL and result.evidence["seen"]["rule"] == "weights"
    assert "grew 7.0x" in result.summary and "6.5x their size" in result.summary
    assert "stopped learning" in result.summary


def test_divergence_weights_growing_while_the_loss_falls_pass():
    figures = watched([1.1, 0.9, 0.7, 0.5, 0.4, 0.3], [10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0])
    assert check_divergence(figures).status is Status.PASS


def test_divergence_rows_already_high_on_the_starting_weights_are_blamed():
    figures = watched([8.0, 9.0, 6000.0, 7000.0, 6500.0, 6200.0], chance=None, rows_loss_at_start=6100.0,
                      rows=[{"position": 0, "label": 80.0}])
    result = check_divergence(figures)
    assert result.status is Status.FAIL and "these rows, not the training" in result.summary
    assert "learning_rate" not in result.fix


def test_divergence_too_few_steps_to_say():
    assert divergence_seen([1.1, 50.0, 60.0, 70.0, 80.0], [10.0] * 6, LN3) is None


@pytest.mark.parametrize("rate, usual, suggested", [(1e-3, 5e-5, 5e-5), (5e-5, 5e-5, 5e-6), (None, 3e-3, 3e-3)])
def test_divergence_suggests_the_usual_rate_or_a_tenth_of_one_already_below_it(rate, usual, suggested):
    assert rate_to_suggest(rate, usual) == pytest.approx(suggested)


def test_memory_counts_the_rows_a_batch_really_holds_and_suggests_only_a_smaller_model(demo_model):
    from diagnostics.config.run import RunConfig
    from diagnostics.core.context import RunContext
    from diagnostics.walk.stages import model_stage

    config = RunConfig(batch_size=1024).validated()
    run = RunContext.open(config, model_loader=lambda *args: demo_model)
    memory = next(result for result in model_stage(run) if result.id == "model.memory")
    rows = len(run.split)
    assert memory.evidence["batch_size"] == rows and memory.evidence["configured_batch_size"] == 1024
    assert f"only {rows:,} rows" in memory.summary
    small = {**memory_figures(demo_model.count_params(), demo_model.config, 8, 64),
             "available_ram_bytes": 1, "gpu_bytes": None}
    assert "distilbert-base-cased" not in str(check_memory(small).fix)  # the kit is smaller than it


def test_training_that_will_not_fit_is_not_started_and_points_at_model_memory(demo_model):
    """model.memory's "It will not fit" used to be a sentence only: the measurements went on and trained. Now each
    training unit is skipped, naming model.memory, which holds the one fix. The device's room is shrunk here through
    the check's own threshold (a run's thresholds), so the kit stands for a model too big for the machine."""
    from diagnostics.core.check import per_run_thresholds
    from diagnostics.walk.runner import Settings, run_units
    from diagnostics.config.training import SweepSettings

    run = RunContext.open(RunConfig().validated(), model_loader=lambda *args: demo_model)
    with per_run_thresholds({"model.memory": {"max_memory_share": 1e-9}}):
        results = {result.id: result for result in run_units(run, ("model", "learnability", "training", "overfit"),
                                                             Settings(sweep=SweepSettings(rates=2, steps=1)))}
    assert results["model.memory"].status is Status.WARN and "It will not fit" in results["model.memory"].summary
    for check_id in copy_checks():
        assert results[check_id].status is Status.SKIP and "see model.memory" in results[check_id].summary, \
            (check_id, results[check_id].summary)
    # At the check's own threshold the kit fits, and the same units train.
    trained = {result.id: result for result in run_units(run, ("training",), Settings(sweep=SweepSettings(
        rates=2, steps=1, range_steps=5)))}
    assert "see model.memory" not in trained["hparams.lr_sweep"].summary


@pytest.mark.parametrize("id2label, status, words", [
    ({0: "Invalid", 1: "Valid"}, Status.PASS, "its own names (Invalid, Valid) for cola's (unacceptable, acceptable)"),
    ({0: "unacceptable", 1: "acceptable"}, Status.PASS, "the task's label names"),
    ({0: "Acceptable", 1: "Unacceptable"}, Status.WARN, "differs from cola's label order"),
])
def test_id2label_names_are_compared_as_names(id2label, status, words, tokenizer):
    """Other words for the task's classes are read by id (at most a note); the task's own names in another order
    are a wrong order."""
    from transformers import BertConfig

    from diagnostics.config.tasks import get_task

    config = BertConfig(num_labels=2, id2label=id2label, label2id={v: k for k, v in id2label.items()})
    result = check_config(config, "TFBertForSequenceClassification", get_task("cola"), tokenizer)
    assert result.status is status and words in str(result.summary), result.summary
