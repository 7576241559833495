"""The declared shape of each check's evidence: what the charts, tables and JSON report read.

Every key a check may put in its evidence is declared here, and `tests/test_registry.py` holds both sides to
it: a demo run's evidence has no undeclared key, and every key the charts (`plots.py`) and the pages read is
declared. Renaming a key on one side only fails there at once, not in a chart at run time.
"""

from __future__ import annotations

from typing import Any, TypedDict

Rows = list[dict[str, Any]]


class Error(TypedDict, total=False):
    """An `error` result's evidence (see `result.error_result`)."""
    exception: str
    message: str
    where: str
    traceback: str


class Columns(TypedDict, total=False):
    available_after_tokenizing: list[str]
    missing: list[str]
    model_inputs_left_out: list[str]
    missing_in_split: list[str]  # the task's columns the split lacks
    missing_requested: list[str]  # columns to_tf_dataset asks for that the tokenized split lacks
    needed: list[str]
    requested: list[str]
    split_columns: list[str]
    error: str
    text_cells: dict[str, dict[str, list]]  # each text column's empty and not-text rows, with examples
    rows_scanned: int


class Batch(TypedDict, total=False):
    entries: Rows  # key, in, shape, dtype of each tensor the model receives
    labels_at: str
    rows: int
    error: str
    requested: list[str]
    label_cols: list[str]
    no_labels: bool  # the batch holds no labels at all
    batch_fill: float  # the rows it holds over the batch size


class DecodedSamples(TypedDict, total=False):
    rows: Rows  # position, index, label, label_name, decoded, tokens, unknown_tokens
    unknown_share: float
    not_prose: dict[str, Any]  # per text column: rows with no words (digits or punctuation, one word repeated)
    not_prose_share: float  # the largest share of a text column's scanned cells with no words


class LabelRange(TypedDict, total=False):
    batch_invalid: dict[str, int]
    batch_positions: list[int]
    num_labels: int
    rows_scanned: int
    split_invalid: dict[str, int]
    valid_range: list[float]
    count: int
    label: Any
    rows: list[int]  # rows whose label is not one of the known task's classes (the first 50)
    stray_rows: list[int]  # task not known: the rows of a label value far rarer than the others
    invalid_labels: int  # labels outside the range, in the split and in the first batch
    beyond_head: bool  # rows hold labels of the task that the head has no output for (num_labels below its classes)
    beyond_head_rows: list[int]  # those rows (the first 50)


class LabelBalance(TypedDict, total=False):
    labels: list[str]
    split_counts: list[int]
    batch_counts: list[int]
    regression: bool
    split: dict[str, list[float]]  # regression: histogram edges and counts
    batch: dict[str, list[float]]
    rows_scanned: int
    chance_absent: float  # how often a shuffled batch of this size lacks the labels this one lacks
    chance_crowded: float  # how often it holds as many of its commonest label
    mix_chance: float  # the rarer of the two that the batch shows (a label missing counts only when one is)
    absent: list[str]  # the labels the split has and the first batch lacks
    top_share: float  # the commonest label's (or score bin's) share of the split


class Baselines(TypedDict, total=False):
    classes: int  # the task's classes (for a task not known, the label values the split holds)
    majority_accuracy: float
    majority_label: str
    prior_loss: float
    uniform_accuracy: float
    uniform_loss: float
    valid_rows: int
    mean: float
    mean_predictor_mse: float


class Truncation(TypedDict, total=False):
    lengths: list[int]
    max_length: int
    padded_length: int
    padding_share: float
    fixed_padding: bool  # the batch is padded past its longest row (padding="max_length"), not per batch
    rows: int
    truncated_rows: int
    truncated_share: float
    scope: str  # "split": the user's own tokenization, re-measured on the split's raw text; "unmeasured": no raw text
    cut_source: str  # where that tokenization's length comes from (RunConfig.truncation: "call", "model", ...)
    cut_rows: list[int]  # those rows (the first 50)
    longest: int  # the longest row without truncation


class Duplicates(TypedDict, total=False):
    conflict_examples: Rows
    conflicting_rows: int
    duplicate_rows: int
    rows_scanned: int


class RunScore(TypedDict):
    score: float
    first_train_loss: float
    final_train_loss: float


class Learnability(TypedDict, total=False):
    given: RunScore
    shuffled: RunScore
    chance: float
    held_rows: int
    train_rows: int
    learning_rate: float
    pretrained: bool
    regression: bool
    steps: int
    # What the registry's rules read:
    accuracy_gain: float  # held-out accuracy above the better of the shuffled run's and the majority label's
    p_value: float  # how often that many right answers come by chance at that better accuracy
    error_ratio: float | None  # regression: held-out error over the shuffled run's
    fit_gain: float | None  # the share by which the given labels' final training loss is below the shuffled run's


class ModelConfig(TypedDict, total=False):
    architectures: list[str]
    id2label: dict[str, str]
    label2id: dict[str, int]
    model_class: str
    model_type: str
    num_labels: int
    pad_token: str
    problem_type: str
    task_labels: list[str]
    task_num_labels: int
    labels_present: dict[str, int] | None  # rows of the split holding each label value
    error: str
    # What the registry's rules read:
    no_pad_token: bool
    regression: bool  # the task is regression
    wrong_regression_head: bool  # regression, but not one output or a classification problem_type
    head_short: bool  # classification, but some of the task's labels have no output (or the head regresses)
    unused_outputs: int  # outputs that never get a positive example
    names_out_of_order: bool  # id2label names the task's labels in another order


class Forward(TypedDict, total=False):
    finite_share: float
    fit_call_error: str
    logits: list
    logits_shape: list[int]
    error: str
    wrong_shape: bool  # the logits are not (rows, num_labels)
    out_of_range_labels: int  # labels of the batch outside [0, num_labels) (the fit call raises on them on CPU)


class NanRows(TypedDict, total=False):
    losses: list[float]
    labels: list
    rows: Rows  # position, index, label, label_name, logits, loss, decoded
    cause: str
    non_finite_rows: int  # rows of the batch with a NaN or infinite loss
    labels_cause: bool  # every such row has a label outside [0, num_labels) (or a missing score)
    logits_cause: bool  # every such row has non-finite logits
    # Found by DiagnoseCallback during the user's fit:
    step: int
    losses_before: list[float]
    weights_now_non_finite: list[str]
    curve: list[float | None]  # each step's own loss
    weight_norms: list[float | None]  # before the first step, then after each
    learning_rate: float | None
    suggested_rate: float
    non_finite_in_fit: bool  # the loss turned non-finite during the user's fit


class Divergence(TypedDict, total=False):
    losses: list[float]  # each step's own loss
    weight_norms: list[float]  # before the first step, then after each
    steps: int
    chance_loss: float | None
    learning_rate: float | None
    usual_rate: float
    suggested_rate: float
    weights_moved: float | None  # |W - W0| / |W0| over the trainable weights
    seen: dict[str, Any] | None  # rule, start, recent, limit, growth, loss_rise, chance_rise
    loss_rise: float | None  # the median loss of the last steps over the first step's (None: too few steps)
    chance_rise: float | None  # and over ln K (None also for regression)
    growth: float | None  # the weights' global norm now over its start
    rows: Rows  # position, index, label, label_name, decoded, loss_at_start, loss_now
    rows_loss_at_start: float | None
    rows_loss_now: float | None


class InitialLoss(TypedDict, total=False):
    disagreement: float
    expected: float
    loss: float
    loss_name: str
    reference: float
    relative_gap: float


class Gradients(TypedDict, total=False):
    layer_norms: Rows  # layer, norm
    global_norm: float
    loss: float
    no_gradient: list[str]
    zero_gradient: list[str]
    dead_share: float  # share of the weights held by variables with no or an all-zero gradient
    non_finite: list[str]
    variables: int
    error: str
    out_of_range_labels: int  # labels of the batch outside [0, num_labels) (the step raises on them on CPU)
    unused_by_output: list[str]  # variables the model's output never uses (no gradient whatever the loss)


class WeightsAfterStep(TypedDict, total=False):
    loss: float
    non_finite: list[str]
    rate_at_step: float | None
    moved: int
    unmoved: list[str]
    max_change: float
    variables: int  # trainable variables (when the moves were measured)
    stale_train_step: bool  # a traced fit reuses a train step built before trainable changed
    train_step_built_at_fit: int  # that step's fit, the weights it trains, the weights marked trainable now
    train_step_trains: int
    marked_trainable: int


class NanOrigin(TypedDict, total=False):
    layer: str  # the first layer whose output is non-finite
    input_from: str
    input: dict[str, Any]  # non-finite share of its input and of its output
    output: dict[str, Any]
    when: str
    after_step: bool  # found after one optimizer step (the fresh model's outputs were finite)
    non_finite_weights: list[str]


class Memory(TypedDict, total=False):
    activation_bytes_estimate: int
    available_ram_bytes: int
    batch_size: int  # the rows a batch holds (no more than the split has)
    configured_batch_size: int
    gpu_bytes: int
    parameters: int
    sequence_length: int
    total_bytes: int
    training_state_bytes: int
    weights_bytes: int
    room_bytes: int  # the device's memory: the GPU's, or the RAM available


# Functional form: "class" is a keyword. settings: setting, value, source of each optimizer setting.
Optimizer = TypedDict("Optimizer", {"settings": Rows, "class": str, "learning_rate": float, "given_as": str,
                                    "pretrained": bool, "head_only": bool, "string_adam": bool}, total=False)


class Loss(TypedDict, total=False):
    configured_value: float
    probe_configured_value: float
    probe_cross_entropy: float
    cross_entropy_from_logits: float
    disagreement: float
    labels_drawn_in_range: bool
    labels_owner: str  # the check owning the labels drawn in range: model.config (a head too small) or data.label_range
    labels_in: str
    loss: str
    outputs_are_probabilities: bool
    regression: bool
    train_step_error: str
    train_step_loss: float
    variables_without_gradient: list[str]
    classification_loss: bool  # a classification loss on a regression task
    regression_loss: bool  # mean squared error on class ids
    keras_loss_on_input_labels: bool  # a Keras loss with the labels inside the input dict
    reads_probabilities_as_logits: bool  # a from_logits=True loss on a softmax or sigmoid output that it distorts
    head: str | None  # a Keras model's own output layer ("Dense(2, softmax)"); None for a Transformers classifier


class Schedule(TypedDict, total=False):
    learning_rates: list[float]
    optimizer: str
    warms_up: bool  # create_optimizer's schedule (a constant rate has no warmup)
    steps: list[int]
    train_steps: int
    warmup_steps: int


class HeldOut(TypedDict):
    loss: float | None
    accuracy: float | None
    commonest_share: float | None
    rows: int


class Sweep(TypedDict, total=False):
    learning_rates: list[float]
    steps: list[int]
    losses: list[list[float | None]]
    smoothed: list[list[float | None]]
    held_out_start: HeldOut
    held_out: list[HeldOut]
    held_out_rows: int
    drift_per_step: list[float]
    best_rate: float | None
    configured_rate: float | None
    max_safe_rate: float | None
    diverged: list[float]
    pretrained: bool
    ranked_by: str  # "held-out loss", "training loss", or "usual rate" (no rate moved either loss: the good one nearest it)
    usual_rate: float  # the checkpoint's usual rate (config.usual_rate)
    reasons: dict[str, str]
    broke: list[bool]  # each rate's loss turned NaN or blew up
    # The configured rate's, read by the registry's rules (the runner reads configured_too_high too):
    no_good_rate: bool
    configured_broke: bool
    configured_drift: float | None
    configured_too_high: bool
    decades_below: float | None  # log10(recommended / configured)


class RangeTest(TypedDict, total=False):
    learning_rates: list[float]
    losses: list[float | None]
    smoothed: list[float | None]
    suggested: float | None
    suggestions: dict[str, float]
    max_safe_rate: float | None
    finite_points: int
    dropped_points: int
    spread: float
    uninformative: bool  # the rules disagree: the curve proposes no rate ("suggested" is only the valley rule's)


class Overfit(TypedDict, total=False):
    losses: list[float | None]
    accuracies: list[float | None]
    ln_k: float
    rows: Rows  # position, index, label, label_name, predicted, predicted_name, correct, decoded, tokens
    predictions: list[int]
    # The curve's shape (overfit.curve_shape), which the registry's rules judge:
    first_loss: float
    final_loss: float
    lowest_loss: float
    progress: float  # the share of the first loss shed by the last epoch
    spike: float  # the largest rise above the lowest loss so far
    spike_at: int | None
    falling_share: float  # the share of epochs that lowered the smoothed loss
    non_finite_epochs: int
    all_right: bool  # every row predicted right (always, for regression: judged on the loss alone)
    epochs: int
    final_accuracy: float
    learning_rate: float  # the rate the copy trained at
    configured_rate: float  # the configured one
    rate_source: str  # "configured"; "usual" or "sweep" (the sweep measured the configured rate as too high); "given"
    at_configured_rate: bool  # it trained at the configured rate (a finding the sweep's rate cause can explain)
    num_labels: int  # the head's outputs
    out_of_range_labels: int  # labels of the batch the head cannot take
    best_rate: float | None
    drift_per_step: float | None
    missing_labels: list[str]
    pretrained: bool
    error: str  # model.fit on the batch raised
    nan_from_start: bool  # the loss was NaN from the first epoch: no curve to judge


EVIDENCE: dict[str, type] = {
    "data.columns": Columns, "data.batch": Batch, "data.decoded_samples": DecodedSamples,
    "data.label_range": LabelRange, "data.label_balance": LabelBalance, "data.baselines": Baselines,
    "data.truncation": Truncation, "data.duplicates": Duplicates, "data.learnability": Learnability,
    "model.config": ModelConfig, "model.forward": Forward, "model.nan_rows": NanRows,
    "model.initial_loss": InitialLoss, "model.gradients": Gradients, "model.weights_after_step": WeightsAfterStep,
    "model.nan_origin": NanOrigin, "model.memory": Memory, "model.divergence": Divergence,
    "hparams.optimizer": Optimizer, "hparams.loss": Loss, "hparams.schedule": Schedule, "hparams.lr_sweep": Sweep,
    "hparams.lr_range_test": RangeTest, "overfit.one_batch": Overfit,
}


def declared_keys(check_id: str) -> set[str]:
    """The keys a check's evidence may hold (an error result's keys for every check)."""
    shape = EVIDENCE[check_id]
    return set(shape.__annotations__) | set(Error.__annotations__)
