"""Every check, declared once: its id, stage, title, whether it trains, and its thresholds; and
every unit of the walk that runs them: its function, what of the run it needs, which settings it takes and which
other checks' outputs it reads.

The one runner (`diagnostics.core.runner`) runs units from here: it orders them by what they read, skips a unit whose
needs are not met with the reason its owning check gives, and calls its function inside the guard. The command
line, `diagnose()`, the trace and the app's pages (through their shared store) all run checks through it. The
Report's order, `python -m diagnostics checks` and the check table of docs/checks.md read this module too. A check function
takes its thresholds as keyword arguments whose defaults come from here (`threshold(id, name)`), so a threshold is
changed in one place and listed with what it means.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from diagnostics.i18n import N_


@dataclass(frozen=True)
class Above:
    """A condition's rule as data: the value the check measured, under `key` of its evidence, is above the threshold
    (`or_equal`: at least it; `of`: another condition's threshold of the same check). A value the check did not
    measure (missing or None) crosses nothing, or, with `unmeasured`, crosses (a bound that does not apply, such as
    a loss against chance for a regression head)."""

    key: str
    or_equal: bool = False
    of: str = ""
    unmeasured: bool = False

    def __call__(self, evidence: dict, threshold: float, values: dict | None = None) -> bool:
        measured, limit = evidence.get(self.key), (values or {}).get(self.of, threshold) if self.of else threshold
        if measured is None:
            return self.unmeasured
        return measured >= limit if self.or_equal else measured > limit

    @property
    def keys(self) -> tuple[str, ...]:
        return (self.key,)

    def __str__(self) -> str:
        bound = f"{self.key} {'>=' if self.or_equal else '>'} {self.of or 'threshold'}"
        return f"({bound}, or {self.key} not measured)" if self.unmeasured else bound


@dataclass(frozen=True)
class AtMost:
    """The measured value under `key` is at most the threshold (e.g. a variance of 0: nothing to learn);
    `below`: under it; `of`: another condition's threshold of the same check."""

    key: str
    below: bool = False
    of: str = ""

    def __call__(self, evidence: dict, threshold: float, values: dict | None = None) -> bool:
        measured, limit = evidence.get(self.key), (values or {}).get(self.of, threshold) if self.of else threshold
        return measured is not None and (measured < limit if self.below else measured <= limit)

    @property
    def keys(self) -> tuple[str, ...]:
        return (self.key,)

    def __str__(self) -> str:
        return f"{self.key} {'<' if self.below else '<='} {self.of or 'threshold'}"


@dataclass(frozen=True)
class ShareAbove:
    """`part` of the evidence is more than the threshold's share of `whole` (a count of rows against all rows);
    `at_most`: at most that share (a loss that fell to a share of its start)."""

    part: str
    whole: str
    at_most: bool = False

    def __call__(self, evidence: dict, threshold: float, values: dict | None = None) -> bool:
        if not evidence.get(self.whole) or evidence.get(self.part) is None:
            return False
        limit = threshold * evidence[self.whole]
        return evidence[self.part] <= limit if self.at_most else evidence[self.part] > limit

    @property
    def keys(self) -> tuple[str, ...]:
        return self.part, self.whole

    def __str__(self) -> str:
        return f"{self.part} {'<=' if self.at_most else '>'} threshold * {self.whole}"


@dataclass(frozen=True)
class Holds:
    """A yes/no the check measured, under `key` of its evidence, is yes (e.g. every row predicted right); `is_`
    False: is no (a yes/no not measured crosses nothing either way)."""

    key: str
    is_: bool = True

    def __call__(self, evidence: dict, threshold: float, values: dict | None = None) -> bool:
        measured = evidence.get(self.key)
        return measured is not None and bool(measured) is self.is_

    @property
    def keys(self) -> tuple[str, ...]:
        return (self.key,)

    def __str__(self) -> str:
        return self.key if self.is_ else f"not {self.key}"


@dataclass(frozen=True)
class All:
    """Every one of `rules` is crossed, each read with the same evidence and threshold."""

    rules: tuple

    def __call__(self, evidence: dict, threshold: float, values: dict | None = None) -> bool:
        return all(rule(evidence, threshold, values) for rule in self.rules)

    @property
    def keys(self) -> tuple[str, ...]:
        return tuple(key for rule in self.rules for key in rule.keys)

    def __str__(self) -> str:
        return " and ".join(str(rule) for rule in self.rules)


@dataclass(frozen=True)
class Condition:
    """A named threshold: `name` is the check function's keyword, `meaning` says what crossing it does.

    A condition that judges has a `rule`, a small function of the check's measured evidence, the threshold and
    the check's other thresholds by name (`Above`, `AtMost`, `ShareAbove`, `Holds`, `All` of them), and the
    `status` it gives when crossed (a pass, for a check that fails unless a rule finds it well):
    `result.judge` reads a check's rules in declared order and the first one crossed gives the verdict (every
    check's verdict is judged so). Without a rule the threshold is a setting of the measurement itself (a window, a
    trim) or of another condition's rule (`of=`). A condition with no value (None) is a finding, yes or no, that
    its rule reads from the evidence (`Holds`): it has no threshold to set.
    """

    name: str
    value: float | None
    meaning: str
    rule: Callable[..., bool] | None = None
    status: str = "warn"


@dataclass(frozen=True)
class Check:
    """One check of the walk.

    Attributes:
        id: "<stage>.<check>", stable: the report format and the scenarios use it.
        title: what it checks, in a few words.
        trains: it takes optimizer steps (on a copy), so it costs seconds to minutes.
        part: the Hyperparameters stage runs "setup" checks at once and "training" ones on request; a "fit"
            check watches the user's own `model.fit` (DiagnoseCallback), so no stage runs it.
        conditions: its thresholds.
        unit: the unit of the walk that runs it (default: its stage's, or for Hyperparameters its part's).
        requires: what of the run it needs beyond its unit's needs (the runner skips it alone, with the reason;
            of a unit with a function, it keeps the function's results for the others).
        measure: the importable dotted name of its own `measure(run) -> CheckResult`, for a check of a unit
            without a function (its checks share only what the run context caches, so each measures alone).
        otherwise: the status when none of its conditions' rules is crossed ("pass"; "fail" for a check that fails
            unless a rule finds it well; "skip" for one whose measurement can find nothing to judge).
    """

    id: str
    title: str
    trains: bool = False
    part: str = "setup"
    conditions: tuple[Condition, ...] = ()
    unit: str = ""
    requires: tuple[str, ...] = ()
    measure: str = ""
    otherwise: str = "pass"

    @property
    def stage(self) -> str:
        return self.id.split(".", 1)[0]

    @property
    def runs_in(self) -> str | None:
        """The name of the unit that runs it; None for a check that watches a user's own fit."""
        if self.part == FIT:
            return None
        return self.unit or (self.part if self.stage == "hparams" else self.stage)

    @property
    def needs(self) -> tuple[str, ...]:
        """What of the run it needs, the ones the runner acts on: its unit's needs, then its own (none for a check
        that watches a user's own fit, which has what it needs when it is called)."""
        return UNITS[self.runs_in].needs + self.requires if self.runs_in else ()

    @property
    def function(self) -> str:
        """The importable dotted name of the function that produces its result."""
        return self.measure or (UNITS[self.runs_in].function if self.runs_in else FIT_FUNCTION)


@dataclass(frozen=True)
class Stage:
    name: str
    title: str


STAGES = (Stage("data", N_("Data")), Stage("model", N_("Model")), Stage("hparams", N_("Hyperparameters")),
          Stage("overfit", N_("Overfit test")))
STAGE_ORDER = tuple(stage.name for stage in STAGES)
STAGE_TITLES = {stage.name: stage.title for stage in STAGES}

# Weight drift a step (median over pretrained kernels of |change| / |kernel|). Above 1e-3 a step, a few hundred
# steps overwrite what pretraining learned. Measured on all-MiniLM-L6-v2 with Adam (bench/lr_truth.py): 1e-4
# gives about 7e-4 a step and fine-tunes well; 3e-4 gives about 2e-3 and ends well below the best held-out
# accuracy; 1e-3 gives about 6e-3 and collapses to one class.
WARN_DRIFT = 1e-3
FAIL_DRIFT = 3e-3

_C = Condition
_WALK = "diagnostics.checks.units."  # where the units' and checks' own functions are
_ON_BATCH = ("model", "batch")  # what the Model checks of the first batch need beyond their unit
_AFTER_FORWARD = _ON_BATCH + ("forward",)  # and those after model.forward: a pass that raises stops the step too
# The part of the checks that watch a user's own model.fit: no stage runs them.
FIT = "fit"
CHECKS: dict[str, Check] = {check.id: check for check in (
    Check("data.columns", N_("the task's columns and the columns given to to_tf_dataset exist"),
          requires=("tokenizes",), measure=_WALK + "data_columns", conditions=(
        # Judged in this order.
        _C("missing_columns", None, "fail when the split lacks a column the task needs",
           Holds("missing_in_split"), status="fail"),
        _C("bad_text_cells", None, "fail when a text cell is empty or not text (the tokenizer stops on it)",
           Holds("text_cells"), status="fail"),
        _C("missing_requested", None, "fail when to_tf_dataset asks for a column the tokenized split lacks",
           Holds("missing_requested"), status="fail"),
        _C("inputs_left_out", None, "warn when the batches leave out an input the model takes that changes what it "
                                    "computes (attention_mask; token_type_ids for sentence pairs)",
           Holds("model_inputs_left_out")))),
    Check("data.batch", N_("the first batch builds, with the expected shapes and dtypes"), requires=("texts",),
          measure=_WALK + "data_batch", conditions=(
        _C("batch_raises", None, "fail when tokenizing or batching the first rows raises", Holds("error"),
           status="fail"),
        _C("no_labels", None, "fail when the batch holds no labels at all", Holds("no_labels"), status="fail"),
        _C("min_batch_fill", 1.0, "warn when the first batch holds less than this share of the batch size (the "
                                  "split is smaller)", AtMost("batch_fill", below=True)))),
    Check("data.decoded_samples", N_("the first batch decoded beside its label names"),
          requires=("texts", "tokenizes"), measure=_WALK + "data_decoded_samples", conditions=(
        # Judged in this order.
        _C("warn_not_prose_share", 0.2, "warn when more than this share of a text column's cells hold no words "
                                        "(digits or punctuation only, or one word repeated; of the first 20,000 rows)",
           Above("not_prose_share")),
        _C("warn_unknown_share", 0.05, "warn when more than this share of the batch's tokens are unknown",
           Above("unknown_share")))),
    Check("data.label_range", N_("labels lie in [0, num_labels) and among the task's classes (or the regression "
                                 "range)"), unit="labels", measure=_WALK + "data_label_range", conditions=(
        _C("max_invalid_labels", 0, "fail when more labels than this, of the split or the first batch, lie outside "
                                    "the task's classes (the range, for a task not known)", Above("invalid_labels"),
           status="fail"),
        _C("labels_beyond_head", None, "fail when rows hold labels of the task that the head has no output for "
                                       "(num_labels below the task's classes: model.config's cause)",
           Holds("beyond_head"), status="fail"),
        _C("warn_rare_share", 0.25, "task not known: warn when a label value's share is below this fraction of the "
                                    "other values' mean share, those being within 2x of each other (its rows are "
                                    "the stray rows)", Holds("stray_rows")))),
    Check("data.label_balance", N_("the label balance of the batch and the split"), unit="labels",
          requires=("counted",), measure=_WALK + "data_label_balance", conditions=(
        _C("warn_dominant_share", 0.8, "warn when one label (or one bin of scores) holds more than this share of the "
                                       "split", Above("top_share")),
        _C("max_chance", 1e-3, "warn when a shuffled batch of the first batch's size shows its label mix (a label "
                               "missing, or one crowding it) less often than this (the exact binomial tail against "
                               "the split's shares)", AtMost("mix_chance", below=True)))),
    Check("data.baselines", N_("the accuracy of a random and of a constant predictor"), unit="labels",
          requires=("counted",), measure=_WALK + "data_baselines", conditions=(
        _C("constant_scores", 0.0, "regression: warn when always predicting the mean score has an error of at most "
                                   "this (every score the same: nothing to learn)", AtMost("mean_predictor_mse")),
        _C("warn_majority_accuracy", 0.9, "warn when always predicting the commonest label scores above this",
           Above("majority_accuracy")))),
    Check("data.truncation", N_("rows cut at max_length, and padding in the batch"),
          requires=("texts", "tokenizes"), measure=_WALK + "data_truncation", conditions=(
        _C("warn_truncated_share", 0.1, "warn when more than this share of the rows are truncated",
           Above("truncated_share")),
        _C("warn_padding_share", 0.6, "warn when the pipeline pads every batch to one length and more than this share "
                                      "of the batch's tokens are padding (padding per batch is the fix, not a finding)",
           All((Holds("fixed_padding"), Above("padding_share")))))),
    Check("data.duplicates", N_("duplicate and conflicting rows of the split"), unit="duplicates",
          measure=_WALK + "data_duplicates", conditions=(
        _C("max_conflicting_rows", 0, "warn when more rows than this share a text with a different label",
           Above("conflicting_rows")),
        _C("warn_duplicate_share", 0.05, "warn when more than this share of the rows repeat another row's text",
           ShareAbove("duplicate_rows", "rows_scanned")))),
    Check("data.learnability", N_("the given labels are learned better than the same labels shuffled"),
          trains=True, unit="learnability", otherwise="skip", conditions=(
        # Judged in this order; when none is crossed the run cannot tell (a skip that says so, with the numbers).
        _C("min_accuracy_gain", 0.1, "pass when held-out accuracy beats the shuffled run and the majority by this",
           All((Above("accuracy_gain", or_equal=True), AtMost("p_value", of="max_p_value"))), status="pass"),
        _C("max_p_value", 0.01, "and when that many right answers come by chance at most this often (binomial tail)"),
        _C("max_error_ratio", 0.8, "regression: pass when held-out error is below this share of the shuffled run's",
           AtMost("error_ratio", below=True), status="pass"),
        _C("fit_margin", 0.1, "pass when the given labels' training loss ends more than this share below the shuffled "
                              "run's", Above("fit_gain"), status="pass"),
        _C("random_weights", None, "warn when neither separates them on a randomly initialised model (it learns "
                                   "labels that carry signal within the run)", Holds("pretrained", False)))),
    Check("model.config", N_("the checkpoint's head, num_labels and label names fit the task"),
          measure=_WALK + "model_config", conditions=(
        # Judged in this order; a head no rule finds fault with passes.
        _C("not_a_classifier", None, "fail when the checkpoint cannot be loaded as a sequence classifier",
           Holds("error"), status="fail"),
        _C("no_pad_token", None, "fail when the tokenizer has no padding token (batches cannot be padded)",
           Holds("no_pad_token"), status="fail"),
        _C("regression_head", None, "fail when a regression task's head has more than one output or a "
                                    "classification problem_type", Holds("wrong_regression_head"), status="fail"),
        _C("regression_fits", None, "pass a regression task's head with one output", Holds("regression"),
           status="pass"),
        _C("missing_outputs", None, "fail when some of the task's labels have no output (or the head regresses)",
           Holds("head_short"), status="fail"),
        _C("max_unused_outputs", 0, "warn when more outputs than this never get a positive example (beyond the "
                                    "task's labels, or, for a task not known, no row of the split holds them)",
           Above("unused_outputs")),
        _C("label_order", None, "warn when id2label names the task's labels in another order",
           Holds("names_out_of_order")))),
    Check("model.forward", N_("one batch through the model: logits of the right shape, all finite"),
          requires=_ON_BATCH, measure=_WALK + "model_forward", conditions=(
        _C("forward_raises", None, "fail when the forward pass raises", Holds("error"), status="fail"),
        _C("wrong_shape", None, "fail when the logits are not (rows, num_labels)", Holds("wrong_shape"),
           status="fail"),
        _C("min_finite_share", 1.0, "fail when less than this share of the logits is finite",
           AtMost("finite_share", below=True), status="fail"),
        _C("fit_call_raises", None, "fail when calling the model with the labels in the input dict, as fit does, "
                                    "raises", Holds("fit_call_error"), status="fail"))),
    Check("model.nan_rows", N_("the loss of every row, and the shared cause of NaN rows"), requires=_AFTER_FORWARD,
          measure=_WALK + "model_nan_rows", conditions=(
        _C("max_non_finite_rows", 0, "fail when more rows than this have a NaN or infinite loss",
           Above("non_finite_rows"), status="fail"),
        _C("non_finite_in_fit", None, "DiagnoseCallback: fail when the loss turned non-finite during fit though every "
                                      "row of that batch has a finite loss on the starting weights (the weights "
                                      "diverged)", Holds("non_finite_in_fit"), status="fail"))),
    Check("model.initial_loss", N_("the untrained loss against ln K and against the loss from its logits"),
          requires=_AFTER_FORWARD + ("scored",), measure=_WALK + "model_initial_loss", conditions=(
        _C("warn_loss_disagreement", 0.1, "warn when the model's loss and the loss from its logits differ by this",
           Above("disagreement")),
        _C("warn_relative_gap", 0.3, "warn when the untrained loss is this far (relatively) from ln K",
           Above("relative_gap")))),
    Check("model.gradients", N_("one train step: every trainable weight gets a finite, non-zero gradient"),
          trains=True, requires=_AFTER_FORWARD, measure=_WALK + "model_gradients", conditions=(
        _C("step_raises", None, "fail when the train step raises", Holds("error"), status="fail"),
        _C("no_gradient", None, "fail when a trainable variable gets no gradient (not connected to the loss)",
           Holds("no_gradient"), status="fail"),
        _C("zero_gradient", None, "fail when a trainable variable gets an all-zero gradient and none a non-finite "
                                  "one", All((Holds("zero_gradient"), Holds("non_finite", False))), status="fail"),
        _C("non_finite_gradient", None, "fail when a variable gets a NaN or infinite gradient",
           Holds("non_finite"), status="fail"))),
    Check("model.weights_after_step", N_("weights stay finite and move after one step"), trains=True,
          requires=_AFTER_FORWARD + ("stepped",), measure=_WALK + "model_weights_after_step", conditions=(
        # Judged in this order.
        _C("stale_train_step", None, "fail when a traced fit reuses the train step Keras built at an earlier fit, "
                                     "before trainable changed (no compile since): the weights unfrozen since stay "
                                     "as they are", Holds("stale_train_step"), status="fail"),
        _C("non_finite_weights", None, "fail when a weight holds NaN or Inf after the step", Holds("non_finite"),
           status="fail"),
        _C("warmup_step", 0.0, "pass a step whose scheduled rate is at most this (warmup's first step moves nothing "
                               "by design)", AtMost("rate_at_step"), status="pass"),
        _C("min_moved", 0, "fail when the step moves no more than this many of the trainable variables",
           All((Above("variables"), AtMost("moved"))), status="fail"))),
    Check("model.nan_origin", N_("the first layer whose output turns NaN"), trains=True,
          requires=_AFTER_FORWARD, measure=_WALK + "model_nan_origin", otherwise="skip", conditions=(
        # No layer crossing it: a skip that says why there is nothing to trace.
        _C("non_finite_layer", None, "fail naming the first layer whose output holds NaN or Inf, fresh or after one "
                                     "step", Holds("layer"), status="fail"),)),
    Check("model.memory", N_("parameters and training memory at this batch size"), requires=("model",),
          measure=_WALK + "model_memory", conditions=(
        _C("max_memory_share", 1.0, "warn when training needs more than this share of the device's memory (GPU, or "
                                    "the RAM available)", ShareAbove("total_bytes", "room_bytes")),)),
    Check("model.divergence", N_("during model.fit (DiagnoseCallback): the loss and the weights' size stay bounded"),
          part=FIT, conditions=(
        # Judged in this order on the median loss of the last `window` steps ("recent"); either is a divergence.
        _C("rise_factor", 4.0, "diverging when the recent loss is above this multiple of the first step's",
           All((Above("loss_rise"), Above("chance_rise", of="chance_multiple", unmeasured=True))), status="fail"),
        _C("chance_multiple", 1.5, "and, for a classifier, above this multiple of ln K (its loss when it guesses)"),
        _C("window", 5, "the steps whose median loss is judged, so that one noisy step never counts"),
        _C("weight_growth", 5.0, "diverging when the weights' global norm grows past this multiple of its start",
           All((Above("growth"), Above("loss_rise", or_equal=True, of="stalled_share"))), status="fail"),
        _C("stalled_share", 0.9, "while the recent loss is at least this share of the first step's"))),
    Check("hparams.optimizer", N_("the optimizer Keras builds, each setting set or left at its default"),
          measure=_WALK + "hparams_optimizer", conditions=(
        # Judged in this order.
        _C("string_adam", None, "warn when the optimizer is given as the string 'adam' (every setting, the rate "
                                "1e-3 included, silently a Keras default)", Holds("string_adam")),
        _C("head_only", None, "pass any rate on a fit that trains only a head on a frozen pretrained encoder: the "
                              "ceiling is for pretrained weights, and the sweep measures the rest", Holds("head_only"),
           status="pass"),
        _C("random_weights", None, "pass any rate on a checkpoint with random weights (the demo kit): the ceiling is "
                                   "for pretrained ones, and the sweep measures the rest", Holds("pretrained", False),
           status="pass"),
        _C("warn_learning_rate", 1e-4, "warn when a pretrained checkpoint is fine-tuned above this rate",
           Above("learning_rate")))),
    Check("hparams.loss", N_("the loss matches what the model outputs (logits or probabilities)"),
          requires=("forward",), measure=_WALK + "hparams_loss", conditions=(
        # Judged in this order; a loss no rule finds fault with passes.
        _C("step_raises", None, "fail when a real train step with this loss and these labels raises",
           Holds("train_step_error"), status="fail"),
        _C("classification_loss", None, "fail when a regression task is given a classification loss",
           Holds("classification_loss"), status="fail"),
        _C("regression_loss", None, "fail when a classification task is given mean squared error",
           Holds("regression_loss"), status="fail"),
        _C("warn_disagreement", 0.1, "fail when the model outputs logits and the configured loss and the loss from "
                                     "logits differ by more than this share (on the batch, or on probe logits)",
           All((Holds("outputs_are_probabilities", False), Above("disagreement"))), status="fail"),
        _C("probabilities_as_logits", None, "fail when the model outputs probabilities (its final activation) and "
                                            "a from_logits=True loss differs from cross-entropy by more than "
                                            "warn_disagreement's share",
           Holds("reads_probabilities_as_logits"), status="fail"),
        _C("keras_loss_on_input_labels", None, "warn when a Keras loss is given with the labels inside the input "
                                               "dict (it trains on this Transformers version only)",
           Holds("keras_loss_on_input_labels")))),
    Check("hparams.schedule", N_("the create_optimizer schedule: warmup and decay"),
          measure=_WALK + "hparams_schedule", conditions=(
        _C("warn_warmup_share", 0.5, "warn when create_optimizer's warmup takes more than this share of the steps",
           All((Holds("warms_up"), ShareAbove("warmup_steps", "train_steps")))),)),
    Check("hparams.lr_sweep", N_("a learning-rate sweep scored on held-out rows and weight drift"),
          trains=True, part="training", conditions=(
        _C("blowup_factor", 2.0, "a rate blew up when its smoothed loss ends above this multiple of its start"),
        _C("held_out_rise", 0.1, "a rate is bad when its held-out loss rises this share above the untrained one"),
        _C("warn_drift", WARN_DRIFT, "a rate is bad when a step moves pretrained kernels by more than this"),
        _C("min_held_out_gain", 0.01, "rank good rates by training loss when none lowers held-out loss by this"),
        # The configured rate's verdict, judged in this order (the sweep rate nearest it stands for it):
        _C("no_good_rate", None, "fail when every rate is bad (the problem is not the rate)", Holds("no_good_rate"),
           status="fail"),
        _C("broke", None, "fail when the configured rate's loss turned NaN or blew up", Holds("configured_broke"),
           status="fail"),
        _C("fail_drift", FAIL_DRIFT, "fail when a step at the configured rate moves pretrained kernels beyond this",
           All((Holds("pretrained"), Above("configured_drift"))), status="fail"),
        _C("too_high", None, "warn when the configured rate is bad for a milder reason (held-out loss rose, or drift "
                             "above warn_drift)", Holds("configured_too_high")),
        _C("warn_decades", 1.0, "warn when the configured rate is more than this many powers of ten below the "
                                "recommended", Above("decades_below")),
        _C("thin_held_out_rows", 16, "say the evidence is thin with fewer held-out rows than this"))),
    Check("hparams.lr_range_test", N_("a range test on the smoothed loss, with its suggested rates"),
          trains=True, part="training", conditions=(
        # Judged in this order.
        _C("min_points", 5, "warn when fewer finite points than this came before the loss blew up",
           AtMost("finite_points", below=True)),
        _C("disagree_factor", 30.0, "pass the curve as uninformative (no rate proposed) when its suggestion rules are "
                                    "more than this factor apart", Above("spread"), status="pass"),
        _C("trim", 1, "points left out at each end before any rule runs"))),
    Check("overfit.one_batch", N_("one batch holding every label memorised by plain model.fit"),
          trains=True, otherwise="fail", conditions=(
        # Judged in this order; a curve no rule finds well is a fail (the loss rose, stayed put or fell too slowly).
        _C("fit_raises", None, "fail when model.fit on the batch raises", Holds("error"), status="fail"),
        _C("no_finite_start", None, "fail when the loss is NaN from the first epoch (no curve to judge)",
           Holds("nan_from_start"), status="fail"),
        _C("max_non_finite_epochs", 0, "fail when more epochs than this end on a NaN or infinite loss",
           Above("non_finite_epochs"), status="fail"),
        _C("spike_share", 0.25, "fail when the loss rises above its lowest point by this share of its start",
           ShareAbove("spike", "first_loss"), status="fail"),
        _C("warn_drift", WARN_DRIFT, "warn when an epoch moves pretrained kernels by more than this",
           Above("drift_per_step")),
        _C("memorised_share", 0.5, "memorised: every row right and the loss at most this share of its start",
           All((Holds("all_right"), ShareAbove("final_loss", "first_loss", at_most=True))), status="pass"),
        _C("memorised_value", 0.05, "memorised: every row right and the loss below this",
           All((Holds("all_right"), AtMost("final_loss", below=True))), status="pass"),
        _C("learning_progress", 0.05, "learning: every row right and the loss fell at least this share of its start",
           All((Holds("all_right"), Above("progress", or_equal=True),
                Above("falling_share", or_equal=True, of="learning_falls"))), status="pass"),
        _C("learning_falls", 0.8, "learning: and at least this share of the epochs lowered the smoothed loss"))),
)}


FIT_FUNCTION = "diagnostics.usercode.api.DiagnoseCallback"


@dataclass(frozen=True)
class Explains:
    """A finding of another check that a cause explains: `check`'s verdict by one of `conditions` (none named: any
    verdict but a pass or a skip, its fallback included), while `when` (a rule on that check's own evidence) holds.

    Attributes:
        measured: the owner measured the same question itself, so its verdict stands whatever it is: the finding
            (a rule of thumb) points at the owner even when the owner passed.
    """

    check: str
    conditions: tuple[str, ...] = ()
    when: Callable[..., bool] | None = None
    measured: bool = False


@dataclass(frozen=True)
class Cause:
    """A cause the report names once: owned by the check whose `conditions` name it (its verdict, sentence and fix
    are the cause's), with the findings of other checks it explains. Those keep their evidence and point at the
    owner instead of failing again. A warn or fail verdict no cause declares is a cause of its own, explaining
    nothing else."""

    name: str
    owner: str
    conditions: tuple[str, ...]
    title: str
    explains: tuple[Explains, ...] = ()


_E = Explains
_OUT_OF_RANGE = Above("out_of_range_labels")  # the first batch holds labels the head cannot take
_LABELS_STOP = (_E("model.forward", ("fit_call_raises",), _OUT_OF_RANGE),
                _E("model.nan_rows", ("max_non_finite_rows",), Holds("labels_cause")),
                _E("model.gradients", ("step_raises",), _OUT_OF_RANGE),
                _E("overfit.one_batch", ("fit_raises", "no_finite_start"), _OUT_OF_RANGE))
_NOTHING_LEARNS = (_E("model.weights_after_step", ("min_moved",)), _E("data.learnability"),
                   _E("hparams.lr_sweep", ("no_good_rate",)), _E("hparams.lr_range_test"), _E("overfit.one_batch"))
# In this order: a finding two present causes explain points at the first (labels outside the task's classes before
# a head too small for them, a loss before the gradients it stops, any cause before the rate).
CAUSES: dict[str, Cause] = {cause.name: cause for cause in (
    Cause("stray_labels", "data.label_range", ("max_invalid_labels",), N_("labels outside the task's classes"),
          _LABELS_STOP),
    Cause("head_short", "model.config", ("missing_outputs",),
          N_("a head with fewer outputs than the task has labels"),
          (_E("data.label_range", ("labels_beyond_head",)),) + _LABELS_STOP),
    Cause("loss_mismatch", "hparams.loss", ("step_raises", "classification_loss", "regression_loss",
                                            "warn_disagreement", "probabilities_as_logits"),
          N_("a loss that does not match what the model outputs"),
          (_E("model.initial_loss"), _E("model.gradients", ("step_raises", "no_gradient", "zero_gradient")),
           _E("hparams.lr_sweep")) + _NOTHING_LEARNS),
    Cause("no_gradient", "model.gradients", ("no_gradient", "zero_gradient"),
          N_("weights the loss's gradient never reaches"), _NOTHING_LEARNS),
    Cause("broken_weights", "model.nan_origin", ("non_finite_layer",), N_("a layer whose output is not finite"),
          (_E("model.forward", ("min_finite_share",)), _E("model.nan_rows", ("max_non_finite_rows",),
                                                          Holds("logits_cause")),
           _E("model.gradients", ("non_finite_gradient",)), _E("model.weights_after_step", ("non_finite_weights",)))),
    # Labels that carry no signal: every rate's held-out loss rises or stays, so the sweep's ranking of rates by it
    # (and its verdict on the configured rate, short of a loss that broke) says nothing about the rate.
    Cause("random_labels", "data.learnability", ("random_weights",), N_("labels that do not match their texts"),
          (_E("hparams.lr_sweep", ("too_high", "warn_decades", "no_good_rate"), Holds("configured_broke", False)),)),
    # A fit that reuses the train step of an earlier fit trains what that step trained, with that step's optimizer:
    # what the rate rules read into the rate for the weights unfrozen since is for after the compile that fixes it.
    Cause("stale_train_step", "model.weights_after_step", ("stale_train_step",),
          N_("trainable changed without compiling again"),
          (_E("hparams.optimizer", ("warn_learning_rate", "string_adam")), _E("hparams.lr_sweep"),
           _E("hparams.lr_range_test"), _E("overfit.one_batch"))),
    Cause("rate", "hparams.lr_sweep", ("broke", "fail_drift", "too_high", "warn_decades"), N_("the learning rate"),
          (_E("hparams.optimizer", ("warn_learning_rate",), measured=True), _E("hparams.optimizer", ("string_adam",)),
           _E("model.weights_after_step", ("non_finite_weights",)),
           _E("model.nan_origin", ("non_finite_layer",), Holds("after_step")),
           _E("overfit.one_batch", (), Holds("at_configured_rate")))),
)}


@dataclass(frozen=True)
class Unit:
    """A unit of the walk: the checks that one function answers for together, because they share its work (a
    decoded batch, a forward pass, a trained copy).

    Attributes:
        name: its key (the app's shared store keeps each unit's results apart).
        stage: the stage it belongs to.
        function: the importable dotted name of `function(run, **inputs) -> list[CheckResult]`, for checks that
            share its work; "" when each of its checks measures alone (`Check.measure`).
        needs: what of the run it needs, in the order their reasons are given when missing (see
            `runner.REASONS`: "columns", "texts", "tokenizes", "label_column", "counted", "labels", "range", "readable",
            "model", "batch", "forward", "scored", "stepped", "rows", "flows").
        takes: the run settings it is called with (fields of `runner.Settings`: "sweep", "epochs", "rate").
        reads: outputs of other checks it is called with, as "check_id:key" (an evidence key of that check's
            result; the key is also the keyword), so the runner runs that check's unit first when both run.
        heavy: it loads the model or trains a copy (the app queues it for one of the server's heavy slots).
        progress: it reports its progress (it is called with `progress=`).
        copy: it trains a copy of the model, the one its call of the runner shares between such units (it is called
            with `copies=`, a `training.SharedCopy`), so the copy is made and traced once a call.
    """

    name: str
    stage: str
    function: str = ""
    needs: tuple[str, ...] = ()
    takes: tuple[str, ...] = ()
    reads: tuple[str, ...] = ()
    heavy: bool = True
    progress: bool = False
    copy: bool = False

    @property
    def checks(self) -> tuple[str, ...]:
        return tuple(check.id for check in CHECKS.values() if check.runs_in == self.name)


UNITS: dict[str, Unit] = {unit.name: unit for unit in (
    Unit("data", "data", heavy=False),
    Unit("labels", "data", needs=("label_column",), heavy=False),
    Unit("duplicates", "data", needs=("columns",), heavy=False),
    Unit("model", "model", needs=("columns", "readable")),
    Unit("setup", "hparams", needs=("columns", "model", "batch")),
    # The units that train come last and together, so their one shared copy of the model (see `copy`) is never alive
    # beside the Model checks' own copies.
    Unit("learnability", "data", _WALK + "measure_learnability",
         ("columns", "labels", "range", "model", "batch", "rows", "flows"), copy=True),
    Unit("training", "hparams", _WALK + "measure_training", ("columns", "model", "batch", "range", "flows"),
         takes=("sweep",), progress=True, copy=True),
    Unit("overfit", "overfit", _WALK + "measure_overfit",
         ("columns", "labels", "range", "model", "batch", "flows"), takes=("epochs", "rate"),
         reads=("hparams.lr_sweep:best_rate", "hparams.lr_sweep:configured_broke"), progress=True, copy=True),
)}


def units_of(stage: str) -> tuple[str, ...]:
    """The names of a stage's units, in walk order."""
    return tuple(unit.name for unit in UNITS.values() if unit.stage == stage)


def checks_of(stage: str, part: str | None = None) -> tuple[str, ...]:
    """The ids of a stage's checks in walk order; `part` ("setup"/"training") narrows the Hyperparameters stage.
    The checks that watch a user's own fit are left out unless `part` is FIT."""
    return tuple(check.id for check in CHECKS.values()
                 if check.stage == stage and (check.part == part if part is not None else check.part != FIT))


def run_check_ids() -> tuple[str, ...]:
    """Every check a run of all the stages answers for (all but the ones that watch a user's own fit)."""
    return tuple(check.id for check in CHECKS.values() if check.part != FIT)


def threshold(check_id: str, name: str) -> float:
    """A check's threshold by its keyword name."""
    return next(condition.value for condition in CHECKS[check_id].conditions if condition.name == name)


def listing() -> list[dict]:
    """Every check as plain data, for `python -m diagnostics checks --json` and docs/checks.md's table."""
    return [{"id": check.id, "stage": check.stage, "stage_title": STAGE_TITLES[check.stage], "title": check.title,
             "needs": list(check.needs), "trains": check.trains, "part": check.part, "unit": check.runs_in,
             "function": check.function, "otherwise": check.otherwise,
             "conditions": [{"name": c.name, "value": c.value, "meaning": c.meaning,
                             **({"rule": str(c.rule), "status": c.status} if c.rule else {})}
                            for c in check.conditions],
             "causes": [{"name": cause.name, "title": cause.title, "conditions": list(cause.conditions),
                         "explains": [{"check": e.check, "conditions": list(e.conditions),
                                       **({"when": str(e.when)} if e.when else {}),
                                       **({"measured": True} if e.measured else {})} for e in cause.explains]}
                        for cause in CAUSES.values() if cause.owner == check.id]}
            for check in CHECKS.values()]
