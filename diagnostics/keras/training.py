"""Training helpers: fresh copies of a model, the configured loss and optimizer, and one real train step."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from diagnostics.config.run import RunConfig, usual_rate
from diagnostics.keras.devices import batch_rows, per_replica_dataset, training_strategy
from diagnostics.core import progress
from diagnostics.core.budget import check_deadline
from diagnostics.i18n import msg
from diagnostics.keras.internals import is_pretrained_kernel, keras_step_function, make_optimizer_state
from diagnostics.keras.keras_model import (  # noqa: F401 (re-exported)
    Forward, Traced, call, class_ids, class_logits, copy_weights, encoder_variables, fresh_copy, head_of, model_config,
    pretrained_variables, unused_by_output)
from diagnostics.keras.optimizers import clone_optimizer, current_rate, until_applied

LABEL_KEYS = ("labels", "label")


def build_loss(name: str, user_loss=None):
    """What `model.compile(loss=...)` gets for a loss name of `config.LOSSES`; "custom": the user's own loss
    (`user_loss`), as it is."""
    import tf_keras

    if name == "internal":
        return "auto"
    if name == "custom":
        return user_loss
    if name.endswith(")") and "(from_logits=" in name:  # SparseCategoricalCrossentropy(from_logits=True)...
        return getattr(tf_keras.losses, name.split("(")[0])(from_logits="from_logits=True" in name)
    return name


def build_optimizer(config: RunConfig):
    """What `model.compile(optimizer=...)` gets: the string as given, or a fresh optimizer object (a clone of the
    user's own, every setting kept, when the pipeline is the user's code)."""
    import tf_keras

    if config.user_optimizer is not None:
        return clone_optimizer(config.user_optimizer)

    if config.optimizer == "adam":
        return tf_keras.optimizers.get("adam")
    if config.optimizer == "Adam":
        return tf_keras.optimizers.Adam(learning_rate=config.learning_rate)
    if config.optimizer == "AdamW":
        return tf_keras.optimizers.AdamW(learning_rate=config.learning_rate, weight_decay=config.weight_decay)
    optimizer, _ = config.schedule.build(config.learning_rate)
    return optimizer


def split_batch(tf_batch) -> tuple[dict, Any]:
    """(model inputs without labels, labels or None) of a batch in either layout."""
    if isinstance(tf_batch, tuple):
        inputs, labels = tf_batch
        return dict(inputs), labels
    inputs = {key: value for key, value in tf_batch.items() if key not in LABEL_KEYS}
    labels = next((tf_batch[key] for key in LABEL_KEYS if key in tf_batch), None)
    return inputs, labels


def labels_in_range(tf_batch, num_labels: int, seed: int = 0):
    """The batch with every label outside [0, num_labels) replaced by one drawn in range, and how many were.

    Checks that judge something other than the labels (the loss, a train step) use it, so an out-of-range label,
    which is data.label_range's finding, does not hide theirs.
    """
    import tensorflow as tf

    inputs, labels = split_batch(tf_batch)
    if labels is None:
        return tf_batch, 0
    values = np.asarray(labels)
    if not np.issubdtype(values.dtype, np.integer):
        return tf_batch, 0
    bad = (values < 0) | (values >= num_labels)
    if not bad.any():
        return tf_batch, 0
    drawn = np.where(bad, np.random.default_rng(seed).integers(0, num_labels, size=values.shape), values)
    replaced = tf.constant(drawn.astype(values.dtype))
    if isinstance(tf_batch, tuple):
        return (inputs, replaced), int(bad.sum())
    key = next(key for key in LABEL_KEYS if key in tf_batch)
    return {**inputs, key: replaced}, int(bad.sum())


@dataclass(frozen=True)
class GradientStats:
    """One variable's gradient, summarised where it is computed (a full copy would double the memory)."""

    sum_squares: float
    finite: bool
    zero: bool = False  # every entry exactly 0

    @classmethod
    def of(cls, grad) -> "GradientStats":
        """From a gradient tensor (dense or IndexedSlices) or a numpy array."""
        import tensorflow as tf

        dense = tf_to_dense(grad) if not isinstance(grad, np.ndarray) else tf.constant(grad)
        return cls(sum_squares=float(tf.reduce_sum(tf.square(tf.cast(dense, tf.float64)))),
                   finite=bool(tf.reduce_all(tf.math.is_finite(dense))),
                   zero=not bool(tf.reduce_any(tf.not_equal(dense, 0))))


@dataclass
class StepRecord:
    """What one `train_step` did.

    Attributes:
        loss: the loss it minimised (None when it failed before).
        gradients: (variable name, its GradientStats or None when it got no gradient) for every trainable variable.
        sizes: each of those variables' number of weights.
        rate: the learning rate the step applied (a schedule read at step 0), when it can be read.
        error: "Type: message" when the step raised.
    """

    loss: float | None = None
    gradients: list[tuple[str, GradientStats | None]] = field(default_factory=list)
    sizes: list[int] = field(default_factory=list)
    rate: float | None = None
    error: str | None = None
    unused: list[str] = field(default_factory=list)  # variables without gradient that the output never uses


def one_train_step(copy, tf_batch, config: RunConfig) -> StepRecord:
    """One real `train_step` (Transformers' own, as `model.fit` runs it) on a copy, recording the gradients.

    The copy is compiled with the configured loss and optimizer; the gradients are read where
    `optimizer.minimize` hands them to `apply_gradients`, then applied as usual.
    """
    optimizer = build_optimizer(config)
    copy.compile(optimizer=optimizer, loss=build_loss(config.loss, config.user_loss), run_eagerly=True)
    record = StepRecord()
    optimizer = copy.optimizer
    apply = optimizer.apply_gradients

    def recording_apply(grads_and_vars, *args, **kwargs):
        pairs = list(grads_and_vars)
        record.gradients = [(var.name, None if grad is None else GradientStats.of(grad)) for grad, var in pairs]
        record.sizes = [int(np.prod(var.shape)) for _, var in pairs]
        return apply(pairs, *args, **kwargs)

    optimizer.apply_gradients = recording_apply
    record.rate = current_rate(copy)
    try:
        # Under mixed_float16 the step measured is the first the LossScaleOptimizer applies (`until_applied`).
        metrics = until_applied(lambda: copy.train_step(tf_batch), optimizer,
                                lambda: [grad.finite for _, grad in record.gradients if grad is not None])
        record.loss = float(np.asarray(metrics["loss"])) if "loss" in metrics else None
    except Exception as exc:
        record.error = f"{type(exc).__name__}: {first_line(exc)}"
    finally:
        optimizer.apply_gradients = apply
    if any(grad is None for _, grad in record.gradients):
        unused = unused_by_output(copy, split_batch(tf_batch)[0])
        record.unused = [name for name, grad in record.gradients if grad is None and name in unused]
    return record


def decoupled_decay(config: RunConfig) -> float:
    """The weight-decay rate the configured optimizer applies apart from the gradient (AdamW, create_optimizer)."""
    return config.weight_decay if config.optimizer in ("AdamW", "create_optimizer", "other") else 0.0


def moved_variables(source, copy, rate: float | None, weight_decay: float) -> dict[str, Any]:
    """Which trainable variables one step moved on `copy` (trained from `source`'s weights), beyond what decoupled
    weight decay alone does (each weight shrunk by rate x decay); a gradient step moves each weight it reaches by
    about the rate (Adam), far more than that.

    Returns: {"variables": count, "moved": count, "unmoved": [names of those that did not move], "max_change"}.
    """
    import tensorflow as tf

    shrink = (rate or 0.0) * max(weight_decay, 0.0)
    moved, unmoved, largest = 0, [], 0.0
    for before, after in zip(source.trainable_variables, copy.trainable_variables, strict=True):
        change = tf.abs(tf.cast(after, tf.float64) - tf.cast(before, tf.float64))
        allowed = shrink * 1.01 * tf.abs(tf.cast(before, tf.float64)) + 1e-12
        largest = max(largest, float(tf.reduce_max(change)) if change.shape.num_elements() else 0.0)
        if bool(tf.reduce_any(change > allowed)):
            moved += 1
        else:
            unmoved.append(after.name)
    return {"variables": moved + len(unmoved), "moved": moved, "unmoved": unmoved, "max_change": largest}


def tf_to_dense(grad):
    import tensorflow as tf

    return tf.convert_to_tensor(grad)


def first_line(exc: BaseException) -> str:
    """The first meaningful line of an exception message.

    Keras wraps errors raised inside a layer in "Exception encountered when calling layer ...", and
    TensorFlow prefixes op errors with "{{function_node ...}}" and suffixes "[Op:...]"; both are dropped.
    """
    text = str(exc).strip()
    noise = ("Exception encountered when calling layer", "[[", "Traceback", "Graph execution error", "Detected at node",
             "File ", "<stack traces unavailable>", "~", "^")
    for line in text.splitlines():
        line = re.sub(r"\{\{[^}]*\}\}\s*", "", line).strip()
        line = line.split(" [Op:")[0].strip()
        if line and not line.startswith(noise):
            return line[:400]
    return text[:400] or type(exc).__name__




def is_pretrained(model) -> bool:
    """False for checkpoints with random weights (the demo kit), where drift from the start means nothing."""
    config = model_config(model)
    keras_head = getattr(config, "keras_head", None)
    if keras_head is not None and keras_head.encoder is None:
        return False  # a Keras model with no Transformers part: nothing here was pretrained
    return not getattr(config, "demo_kit", False)


def trains_pretrained(model) -> bool:
    """Whether a fit of the model as it stands trains pretrained weights: False for random weights and for a frozen
    encoder under a head of its own (the first phase of freeze-then-fine-tune), where the rules for fine-tuning
    pretrained weights do not apply."""
    if not is_pretrained(model):
        return False
    encoder = encoder_variables(model)
    return any(id(variable) in encoder for variable in model.trainable_variables) if encoder else True


def head_only(model) -> bool:
    """A pretrained encoder left frozen: the fit trains only what sits on it."""
    return is_pretrained(model) and not trains_pretrained(model)


def usual_rate_of(model) -> float:
    """The rate a fit of the model as it stands trains well at (`config.usual_rate`)."""
    return usual_rate(trains_pretrained(model), head_only(model))


def weight_drift(source, copy) -> float:
    """How far the copy's pretrained kernels moved from the source's: the median over kernels of
    ||W_copy - W_source|| / ||W_source|| (the new task head left out)."""
    import tensorflow as tf

    ratios = []
    encoder = pretrained_variables(source)  # a Keras model's Transformers part, when it is not a Transformers model
    for original, trained in zip(source.trainable_variables, copy.trainable_variables, strict=True):
        # The task head's variables, which from_pretrained initialises at random, say nothing of what pretraining
        # learned: drift is measured on every other kernel.
        if not is_pretrained_kernel(original) or (encoder is not None and id(original) not in encoder):
            continue
        size = float(tf.norm(original))
        if size > 0:
            ratios.append(float(tf.norm(tf.cast(trained, original.dtype) - original)) / size)
    return float(np.median(ratios)) if ratios else 0.0


def effective_rate(config: RunConfig) -> float:
    """The rate training runs at: the string "adam" means 0.001; create_optimizer's peak rate otherwise."""
    return 0.001 if config.optimizer == "adam" else config.learning_rate


def sweep_optimizer(config: RunConfig, rate: float | None = None):
    """The optimizer a sweep or an overfit run uses: the configured family at a constant, settable rate.

    The string "adam" and `create_optimizer` both train with Adam; AdamW keeps its weight decay. The
    rate lives in a variable, so changing it never retraces the train step.
    """
    import tf_keras

    rate = effective_rate(config) if rate is None else rate
    if config.user_optimizer is not None:
        return clone_optimizer(config.user_optimizer, rate=rate)
    if config.optimizer == "AdamW" or (config.optimizer == "create_optimizer" and config.weight_decay):
        return tf_keras.optimizers.AdamW(learning_rate=rate, weight_decay=config.weight_decay)
    return tf_keras.optimizers.Adam(learning_rate=rate)


class Trainer:
    """A copy of a model compiled once, with Keras's own traced train step (what `model.fit` runs per step).

    `reset(rate)` puts back the initial weights, zeroes the optimizer's state and sets the rate, so
    many rates or runs are tried from the same start without reloading the checkpoint or retracing.
    The model it was made from is never modified.
    """

    def __init__(self, model, batches: list, config: RunConfig, *, metrics: list | None = None):
        inputs, _ = split_batch(batches[0])
        # Every device of the machine trains (a MirroredStrategy over several GPUs); one device otherwise.
        self.strategy = training_strategy(min_rows=min(batch_rows(batch) for batch in batches))
        with self.strategy.scope():
            self.model = fresh_copy(model, inputs)
            self.optimizer = sweep_optimizer(config)
            self.model.compile(optimizer=self.optimizer, loss=build_loss(config.loss, config.user_loss),
                               metrics=metrics)
            # The optimizer's slots made now, not inside the first traced step, which TensorFlow would then trace
            # twice (creating them, then without): about 3 s less a copy of a six-layer transformer on a CPU.
            make_optimizer_state(self.optimizer, self.model.trainable_variables)
            if metrics and self.strategy.num_replicas_in_sync == 1:
                self._build_metrics(batches[0])
        self.source = model  # read, never written: each reset copies its weights back in
        self.config, self.metrics = config, metrics
        self.use(batches)
        # Keras's own step, traced as `fit` would trace it but without AutoGraph (see `Traced`); `fit` on the copy
        # (the overfit test) runs this same function.
        self.train_function = self.model.train_function = Traced(keras_step_function(self.model),
                                                                  reduce_retracing=True)
        self.forward = Forward(self.model)  # the copy scored on held-out rows, as often as a sweep has rates

    def _build_metrics(self, batch) -> None:
        """Make the compiled metrics' variables now, in one eager evaluation of a batch (the weights unchanged).
        Keras makes them inside the first traced train step otherwise, and a tf.function that makes variables is
        traced twice: 2.5 s more on the demo kit's copy, about 5 s on a six-layer transformer."""
        try:
            self.model.test_step(batch)
        except Exception:  # noqa: BLE001 - the traced step then makes them, as in any fit
            pass
        self.model.reset_metrics()

    def takes(self, model, batches: list, config: RunConfig) -> bool:
        """Whether this copy can train on these batches as a new Trainer would: the same model and configuration,
        and no batch with fewer rows than its replicas."""
        return (self.source is model and self.config == config and self.config.user_optimizer is config.user_optimizer
                and min(batch_rows(batch) for batch in batches) >= self.strategy.num_replicas_in_sync)

    def use(self, batches: list) -> None:
        """Train on these batches (no fewer rows each than the copy's replicas), in order and cycling,
        from the next `reset` on."""
        # Built from tensors, not `from_generator`: TensorFlow keeps a generator's state in a
        # process-wide registry, which would keep this copy (weights, optimizer slots) alive for good.
        self._dataset = per_replica_dataset(batches, self.strategy, repeat=True)
        self._iterator = iter(self._dataset)

    def fit(self, batch, epochs: int, callbacks: list | None = None):
        """Plain `model.fit` on one batch for `epochs` epochs (one step each), on every replica."""
        # The batch repeated, one step an epoch: Keras keeps one iterator across the epochs instead of making and
        # dropping one an epoch; the same steps on the same batch (the kit's losses equal, epoch for epoch;
        # 0.88 -> 0.62 s for 20 epochs).
        return self.model.fit(per_replica_dataset([batch], self.strategy, repeat=True), epochs=epochs,
                              steps_per_epoch=1, verbose=0, callbacks=[*(callbacks or []), _Steps(self)])

    def traces(self) -> int:
        """How many times the train step has been traced (a new input shape traces it again)."""
        counted = getattr(self.model.train_function, "experimental_get_tracing_count", None)
        return counted() if counted is not None else 0

    def reset(self, rate: float) -> None:
        """Initial weights, fresh optimizer state, the given learning rate, and back to the first batch."""
        import tensorflow as tf

        copy_weights(self.source, self.model)
        # Legacy optimizers (AdamWeightDecay) list their variables with a method.
        variables = self.optimizer.variables
        for variable in (variables() if callable(variables) else variables):
            variable.assign(tf.zeros(variable.shape, dtype=variable.dtype))
        self.optimizer.learning_rate = rate
        # A new iterator, from the first batch (the datasets run without tf.data's autotuning, whose thread made
        # dropping the old one wait for seconds at times: see `per_replica_dataset`).
        self._iterator = iter(self._dataset)

    def run(self, steps: int, rates: list[float] | None = None) -> list[float]:
        """`steps` training steps on the next batches; returns each step's loss.

        Keras reports a running mean of the loss; it is reset once here and each step's own loss is
        recovered from consecutive means, so nothing waits on the device between steps.

        Args:
            rates: a learning rate for each step (the range test); None keeps the current rate.
        """
        self.model.reset_metrics()
        means = []
        for index in range(steps):
            check_deadline(f"at training step {index + 1} of {steps}")
            if rates is not None:
                self.optimizer.learning_rate = rates[index]
            traces = self.traces()
            means.append(self.train_function(self._iterator)["loss"])
            progress.step(traced=self.traces() > traces)
        running = np.asarray([float(np.asarray(mean)) for mean in means], dtype=np.float64)
        counts = np.arange(1, steps + 1)
        totals = running * counts
        with np.errstate(invalid="ignore"):
            return np.diff(totals, prepend=0.0).tolist()


_STEPS: list = []  # the callback class, made on first use (tf_keras is imported only when training)


def _Steps(trainer: Trainer):
    """A callback counting each step of a `fit` into the current computation's progress (`core.progress`); it
    lets the copy go when the fit ends, so nothing the fit keeps holds the copy."""
    if not _STEPS:
        import tf_keras

        class Steps(tf_keras.callbacks.Callback):
            def __init__(self, trainer):
                super().__init__()
                self.trainer, self.traces = trainer, 0

            def on_train_batch_begin(self, batch, logs=None):
                self.traces = self.trainer.traces()

            def on_train_batch_end(self, batch, logs=None):
                progress.step(traced=self.trainer.traces() > self.traces)

            def on_train_end(self, logs=None):
                self.trainer = None

        _STEPS.append(Steps)
    return _STEPS[0](trainer)


class SharedCopy:
    """One copy of the model, traced once, for every training measurement of one call of the runner.

    Copying a six-layer transformer and tracing its train step takes 8 to 11 s on a CPU; the learnability runs,
    the sweep, the range test and the overfit test each start from `reset` (the model's weights, zeroed optimizer
    state, their own rate), so they share one copy instead of making four. It belongs to one call, never to a
    context the app shares between sessions: two threads must not train the same copy.
    """

    def __init__(self):
        self._trainer: Trainer | None = None

    def trainer(self, model, batches: list, config: RunConfig) -> Trainer:
        """The copy, set to train on `batches` from its next reset; a new one when the held one cannot. It is
        compiled with accuracy for classification, which the overfit test reads."""
        held = self._trainer
        if held is not None and held.takes(model, batches, config):
            held.use(batches)
            progress.idle()  # building the batches is not a step's time
            return held
        self._trainer = None  # the old copy goes before the new one is made
        progress.doing(msg("Copying the model and tracing its train step"))
        self._trainer = Trainer(model, batches, config, metrics=None if config.glue_task.regression else ["accuracy"])
        return self._trainer

    def close(self) -> bool:
        """Let the copy go; whether there was one (the runner then collects it at the end of its call)."""
        held, self._trainer = self._trainer is not None, None
        return held
