"""DiagnoseCallback: the quick checks before a user's own `fit` trains, and the watch on its loss and
weights while it does (the NaN-row drilldown at the first non-finite loss, the divergence drilldown)."""

from __future__ import annotations


import math
import sys
from typing import Any

import numpy as np


from diagnostics.core.context import RunContext
from diagnostics.core.fixes import CodeStyle, code_style
from diagnostics.i18n import localize, msg
from diagnostics.keras.internals import fit_argument
from diagnostics.keras.keras_model import call, class_ids, class_logits, head_of, what_it_trains
from diagnostics.usercode.read_back import arrays_as_dataset
from diagnostics.usercode.own_code import build_run
from diagnostics.report.formats import cause_lines
from diagnostics.usercode.api import HTML_ROWS, PipelineError, Report, capture, quick_checks
from diagnostics.usercode.progress_bar import shown_progress


def _tf_keras_callback():
    import tf_keras

    return tf_keras.callbacks.Callback


class DiagnoseCallback(_tf_keras_callback()):
    """`model.fit(ds, callbacks=[DiagnoseCallback(tokenizer=tok)])`.

    Before the first step it runs the quick checks (`quick_checks`) on the data `fit` got and a copy of the model,
    and prints the failures (or raises `PipelineError` with `strict=True`). During training it watches each step's
    loss and the size of the weights:

    - at the first non-finite loss it stops training and reports which rows of that very batch gave it and why
      (`self.nan_report`, check `model.nan_rows`), instead of `TerminateOnNaN`'s bare stop;
    - when the run diverges while its loss stays finite (the loss far above its start, or the weights growing
      without bound while the loss does not fall; `model.divergence`) it reports the step, the loss curve, the rate,
      how far the weights moved, whether the rows or the weights make the loss high, and a rate to use
      (`self.divergence_report`), and stops training with `strict=True` (without, training goes on).

    Args:
        tokenizer: decodes the rows (default: the one saved with the model's checkpoint).
        task: the GLUE task (default: found from the data).
        dataset: the data to check before training (default: what `fit` got).
        strict: raise instead of printing when a quick check fails, and stop a diverging run.
        quick: run the quick checks before the first step.
    """

    def __init__(self, tokenizer=None, task: str | None = None, *, dataset=None, strict: bool = False,
                 quick: bool = True, out=None):
        from diagnostics.core.environment import require_stack

        require_stack()
        super().__init__()
        self.tokenizer, self.task, self.dataset, self.strict, self.quick = tokenizer, task, dataset, strict, quick
        self._given = dataset  # None: each fit's own data
        self.out = out
        self.report: Report | None = None  # the last fit's quick checks
        self.reports: list[Report] = []  # each fit's, in order (freeze-then-fine-tune: one a phase)
        self.fits = 0
        self.nan_report: Report | None = None
        self.divergence_report: Report | None = None
        self.losses: list[float] = []
        self.weight_norms: list[float] = []  # before the first step, then after each
        self._mean = 0.0  # the epoch's running mean of the loss, as Keras logs it
        self._run: RunContext | None = None
        self._notes: list = []
        self._stash = None
        self._structure = None
        self._start_weights = None
        self._norm = None
        self._diverged = False
        self._restore: _Watch | None = None
        self._armed = False

    def _print(self, text: str) -> None:
        print(text, file=self.out or sys.stdout)

    def set_model(self, model):
        from diagnostics.core.environment import require_tf_keras_model

        require_tf_keras_model(model)
        super().set_model(model)
        if self._given is None:
            self.dataset = _fit_data(model)

    def _watch_batches(self, model) -> None:
        """Keep each step's batch on the device (in variables of no fixed shape) so the drilldowns read the very
        batch that gave the first non-finite or diverging loss: `model.train_step` is wrapped for this fit only
        (from its on_train_begin; set_model, which evaluate and predict call too, changes nothing).

        It is taken off when training ends, when a step raises (a data error, a KeyboardInterrupt), when this
        callback stops the run with `strict=True`, and otherwise at the next step of any later fit (another
        callback's exception between steps): a step this callback did not see begin finds the watch left over.
        What the model held before is put back, a train_step of the user's own on the instance included."""
        import tensorflow as tf

        _unwatch(model)  # a watch a previous fit left (it raised between steps)
        original = model.train_step
        callback = self

        def train_step(data):
            flat = tf.nest.flatten(data)
            if callback._stash is None:
                with tf.init_scope():
                    callback._stash = [tf.Variable(tf.zeros([0] * len(t.shape), t.dtype), shape=tf.TensorShape(None),
                                                   trainable=False) for t in flat]
                callback._structure = data
            for variable, tensor in zip(callback._stash, flat, strict=True):
                variable.assign(tensor)
            return original(data)

        train_step.watched_by = self
        self._restore = _Watch(model, own_step=model.__dict__.get("train_step"), wrapper=train_step)
        model.train_step = train_step
        self._watch_steps(model.make_train_function(force=True))  # fit built its own before on_train_begin

    def on_train_batch_begin(self, batch, logs=None):
        self._armed = True  # the next step is this fit's: the watch is wanted for it

    def _watch_steps(self, built) -> None:
        """Wrap the watching train function (fit looks it up and calls it once a step, after every callback's
        on_train_batch_begin) so that a step that raises takes the watch off before the exception leaves fit, and a
        step no callback of this fit armed (a later fit without it) takes it off and runs unwatched."""
        callback, model = self, self.model

        def train_function(iterator):
            if not callback._armed:
                callback._unwatch()
                model.train_function = model.make_train_function()
                return model.train_function(iterator)
            callback._armed = False
            try:
                return built(iterator)
            except BaseException:
                callback._unwatch()
                raise

        train_function.watched_by = self
        model.train_function = train_function

    def _unwatch(self) -> None:
        if self._restore is not None:
            self._restore.undo()
            self._restore = None

    def on_train_begin(self, logs=None):
        self.fits += 1
        if self._given is None:  # this fit's data (set_model also runs for evaluate and predict)
            self.dataset = _fit_data(self.model)
        self._run = None  # each fit is checked on what it trains, with its optimizer and rate
        self.losses, self.weight_norms = [], []
        self.nan_report = self.divergence_report = None
        self._diverged = False
        self._watch_batches(self.model)
        self._start_weights = [np.array(w.numpy()) for w in self.model.weights]
        self._norm = _global_norm_function(self.model.trainable_weights)
        self.weight_norms.append(float(self._norm()))
        if not self.quick:
            return
        if self.dataset is None:
            self._print(
                "DiagnoseCallback: no dataset to check before training (pass dataset=); watching the loss only."
            )
            return
        try:
            with shown_progress("DiagnoseCallback", write=self._print) as report:
                report(0.0, msg("Reading the model and the dataset"), None)
                self._run = self._build_run()
                results = quick_checks(self._run, report)
        except Exception as exc:  # the callback never stops a training run it cannot check
            self._print(f"DiagnoseCallback: cannot check this pipeline: {type(exc).__name__}: {exc}")
            return
        self.report = Report(self._run.config, results, self._notes, model=self.model)
        self.reports.append(self.report)
        found = self.report.causes
        which = f"fit {self.fits}, " if self.fits > 1 else ""
        if not found:
            self._print(f"DiagnoseCallback, {which}{_trains(self.model)}: {len(results)} quick checks pass.")
            return
        lines = [f"DiagnoseCallback, {which}{_trains(self.model)}, before the first step: " + cause_lines(results)[0]]
        lines += cause_lines(results)[1:]
        lines += [f"  fix {cause.owner}: {localize(cause.fix)}" for cause in found if cause.fix]
        self._print("\n".join(lines))
        if self.strict and self.report.failed:
            self._unwatch()
            raise PipelineError(self.report)

    def _build_run(self) -> RunContext:
        captured = capture(self.model, self.dataset, self.tokenizer, self.task, origin="DiagnoseCallback")
        self._notes = captured.notes
        return build_run(captured)

    def on_train_batch_end(self, batch, logs=None):
        from diagnostics.checks.model.divergence import divergence_seen

        mean = float(np.asarray((logs or {}).get("loss", np.nan)))
        step = len(self.losses)
        # Keras logs the epoch's running mean: the step's own loss is recovered from consecutive means.
        own = mean * (batch + 1) - self._mean * batch if batch > 0 else mean
        self._mean = mean
        self.losses.append(own)
        if not math.isfinite(mean):
            self.model.stop_training = True
            self._report_at(step, "nan_report", self._nan_drilldown, stopped=True)
            return
        self.weight_norms.append(float(self._norm()))
        if not self._diverged and divergence_seen(self.losses, self.weight_norms, self._chance_loss()) is not None:
            self._diverged = True  # reported once a run, even when its drilldown cannot look
            if self.strict:
                self.model.stop_training = True
            self._report_at(step, "divergence_report", self._divergence_drilldown, stopped=self.strict)

    def _report_at(self, step: int, name: str, drilldown, *, stopped: bool) -> None:
        """Run a drilldown, keep its report as `self.<name>` and print it; a drilldown that fails says why."""
        try:
            self._run = self._run or self._build_run()
            with code_style(CodeStyle.of(self._run.config)):  # fixes in the names the user's code uses
                setattr(self, name, drilldown(step))
        except Exception as exc:  # the stop stands; the drilldown says why it could not look
            what = "became non-finite" if name == "nan_report" else "diverged"
            self._print(f"DiagnoseCallback: the loss {what} at step {step + 1}"
                        f"{'; training stopped' if stopped else ''}. The rows could not be examined: "
                        f"{type(exc).__name__}: {exc}")
            return
        self._print(repr(getattr(self, name)) + ("" if stopped else "\nDiagnoseCallback: training goes on "
                                                 "(strict=True stops a diverging run)."))

    def on_train_end(self, logs=None):
        self._unwatch()

    # ------------------------------------------------------------ drilldowns

    def _chance_loss(self) -> float | None:
        """ln K, a classifier's loss when it guesses; None for a regression head."""
        labels = head_of(self.model).num_labels
        return math.log(labels) if labels > 1 else None

    def _watched(self) -> dict[str, Any]:
        """What the watch saw so far: the curve, the weights' norms and movement, the rate and the usual one."""
        from diagnostics.keras.optimizers import current_rate
        from diagnostics.keras.training import usual_rate_of

        trainable = {id(v) for v in self.model.trainable_weights}
        moved = start = 0.0
        for variable, before in zip(self.model.weights, self._start_weights, strict=True):
            if id(variable) in trainable:
                moved += float(np.sum((np.asarray(variable.numpy(), np.float64) - before) ** 2))
                start += float(np.sum(np.asarray(before, np.float64) ** 2))
        return {"losses": [float(loss) for loss in self.losses], "weight_norms": list(self.weight_norms),
                "chance_loss": self._chance_loss(), "learning_rate": current_rate(self.model),
                "usual_rate": usual_rate_of(self.model),
                "weights_moved": math.sqrt(moved / start) if start > 0 else None}

    def _batch_rows(self):
        """The watched batch: the run context, the task, its inputs and labels, and each row's logits and loss on
        the weights training started from, beside the row decoded."""
        from diagnostics.keras.batches import FirstBatch, decoded_rows
        from diagnostics.keras.scoring import per_sample_losses
        from diagnostics.keras.training import fresh_copy, split_batch
        import tensorflow as tf

        batch = tf.nest.pack_sequence_as(self._structure, [tf.identity(v) for v in self._stash])
        run = self._run or self._build_run()
        task = run.config.glue_task
        inputs, labels = split_batch(batch)
        labels = class_ids(labels)
        ids = np.asarray(inputs["input_ids"])
        mask = np.asarray(inputs["attention_mask"]) if "attention_mask" in inputs else np.ones_like(ids)
        rows = FirstBatch(indices=list(range(len(ids))), rows={"label": labels.tolist()},
                          input_ids=[row[:int(m.sum())].tolist() for row, m in zip(ids, mask, strict=True)],
                          full_lengths=[int(m.sum()) for m in mask], requested_columns=list(inputs),
                          label_columns=None, tf_batch=batch)
        start = fresh_copy(self.model, inputs)
        for variable, value in zip(start.weights, self._start_weights, strict=True):
            variable.assign(value)
        logits = class_logits(start, call(start, inputs))
        decoded = decoded_rows(rows, self.tokenizer or run.tokenizer, task)
        return run, task, inputs, labels, logits, per_sample_losses(logits, labels, task.regression), decoded

    def _nan_drilldown(self, step: int) -> Report:
        """The first non-finite loss: the batch's rows are judged on the weights training started from (the
        weights of the step that gave it are gone: the step applied NaN gradients). A row that is non-finite
        there is the data's fault; when none is, the weights diverged."""
        from diagnostics.checks.model.nan_rows import check_nan_rows, in_fit
        from diagnostics.keras.measurement import non_finite_weights

        run, task, _, _, logits, losses, decoded = self._batch_rows()
        result = check_nan_rows(losses, logits, decoded, head_of(self.model).num_labels, task.regression)
        result = in_fit(result, step, self.losses[:-1], non_finite_weights(self.model), self._watched())
        return Report(run.config, [result], extra={"nan_step": step + 1})

    def _divergence_drilldown(self, step: int) -> Report:
        """A run that diverges with a finite loss: the batch's rows on the weights training started from and on
        the weights now say whether the rows or the weights make the loss high."""
        from diagnostics.checks.model.divergence import check_divergence
        from diagnostics.keras.scoring import per_sample_losses

        run, task, inputs, labels, _, at_start, decoded = self._batch_rows()
        now = per_sample_losses(class_logits(self.model, call(self.model, inputs)), labels, task.regression)
        rows = [{"position": i, "index": row["index"], "decoded": row["decoded"], "label": row["label"],
                 "label_name": row["label_name"], "loss_at_start": float(at_start[i]), "loss_now": float(now[i])}
                for i, row in enumerate(decoded)]
        rows.sort(key=lambda row: -row["loss_now"] if math.isfinite(row["loss_now"]) else math.inf)
        result = check_divergence({**self._watched(), "rows": rows[:HTML_ROWS],
                                   "rows_loss_at_start": float(np.mean(at_start)),
                                   "rows_loss_now": float(np.mean(now))})
        return Report(run.config, [result], extra={"divergence_step": step + 1})


def _fit_data(model):
    """What the `fit` running now got: its x, or (x, y) when it was given y (callbacks are not handed the data)."""
    x, y = fit_argument(model, "x"), fit_argument(model, "y")
    if y is None or x is None:
        return x
    return arrays_as_dataset(x, y, fit_argument(model, "batch_size"))  # batched as this fit batches them


def _trains(model) -> str:
    """"trains the head only (...)" or "trains the encoder and the head (...)", for the callback's lines (the
    trace's words for a fit, `keras_model.what_it_trains`)."""
    return what_it_trains(model)["trains"] or "trains a model the checks cannot read"


class _Watch:
    """What a DiagnoseCallback put on a model, and what it replaced there, to be put back once."""

    def __init__(self, model, own_step, wrapper):
        self.model, self.own_step, self.wrapper = model, own_step, wrapper

    def undo(self) -> None:
        model = self.model
        if model.__dict__.get("train_step") is self.wrapper:
            if self.own_step is None:
                del model.__dict__["train_step"]
            else:
                model.train_step = self.own_step
        model.train_function = None  # rebuilt from the model's own train_step by the next fit


def _unwatch(model) -> None:
    """Take off a watch a DiagnoseCallback left on the model."""
    step = model.__dict__.get("train_step")
    owner = getattr(step, "watched_by", None)
    if owner is not None:
        owner._unwatch()


def _global_norm_function(variables):
    """A compiled function giving the global norm of `variables`, scaled by their largest value so that weights
    blown up to 1e30 give a number rather than float32's overflow."""
    import tensorflow as tf

    @tf.function
    def norm():
        largest = tf.reduce_max(tf.stack([tf.reduce_max(tf.abs(tf.cast(v, tf.float32))) for v in variables]))
        scale = tf.where(largest > 0, largest, 1.0)
        return scale * tf.sqrt(tf.add_n([tf.reduce_sum(tf.square(tf.cast(v, tf.float32) / scale)) for v in variables]))

    return norm
