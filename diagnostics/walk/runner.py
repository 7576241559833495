"""The one runner: runs units of the walk (`registry.UNITS`) on one run context, in the order of what they read,
each inside the guard, skipping a unit whose needs are not met with the reason its owning check gives.

The command line, `diagnose()`, the trace and the app's pages (through their shared store, which keys and keeps
what this returns) all run checks through `run_units`; nothing else decides what runs or skips.
"""

from __future__ import annotations

import contextlib
import gc
import math
from dataclasses import dataclass, fields, replace

from diagnostics.config import limits
from diagnostics.config.settings import EPOCHS

from diagnostics.walk import registry, validate
from diagnostics.core.check import Unit
from diagnostics.core import progress as progress_of
from diagnostics.core.budget import BudgetExceeded, run_budget
from diagnostics.walk.causes import explain
from diagnostics.core.context import RunContext
from diagnostics.keras.batches import LABEL
from diagnostics.core.errors import InputError
from diagnostics.core.fixes import CodeStyle, code_style
from diagnostics.config.training import DEFAULT_EPOCHS, SweepSettings
from diagnostics.i18n import Text, joined, msg, msgn
from diagnostics.keras.keras_model import head_of
from diagnostics.keras.measurement import configured_loss_value
from diagnostics.core.result import NOT_RUN, CheckResult, error_result, run_check, skipped
from diagnostics.keras.training import SharedCopy


@dataclass(frozen=True)
class Settings:
    """What a run is asked to do beyond its configuration; a unit is called with the fields it `takes`.

    Attributes:
        sweep: the learning-rate sweep and range test.
        epochs: the overfit test's epochs.
        rate: the overfit test's rate, when not the configured one (e.g. the sweep's best).
        best_rate: the sweep's recommended rate when known from elsewhere (a unit reading `best_rate` gets the
            sweep's own when the sweep runs in the same call).
        configured_broke: whether the sweep measured the configured rate's loss turning NaN or blowing up, when
            known from elsewhere (likewise).
        asked: units asked for by name, which run even where they run only on request (`Unit.on_request`).
    """

    sweep: SweepSettings = SweepSettings()
    epochs: int = DEFAULT_EPOCHS
    rate: float | None = None
    best_rate: float | None = None
    configured_broke: bool | None = None
    asked: tuple[str, ...] = ()

    def validated(self, takes: set[str]) -> "Settings":
        """These settings, or an InputError naming what is wrong with one that a unit to run takes."""
        if "sweep" in takes:
            self.sweep.validated()
        if "epochs" in takes:
            return replace(self, epochs=validate_epochs(self.epochs))
        return self


def validate_epochs(epochs) -> int:
    """The overfit test's epoch count, or an InputError saying what it may be."""
    problem = EPOCHS.bounds.problem(epochs)
    if problem is not None:
        raise InputError(msg("{problems}.", problems=problem))
    problems = limits.epochs_problems(int(epochs))
    if problems:
        raise InputError(msg("{problems}.", problems=joined(problems, "; ")))
    return int(epochs)


def ordered(names) -> list[str]:
    """The units named, in walk order, with every unit after the units whose checks' outputs it reads.

    Raises:
        InputError: an unknown unit name.
    """
    unknown = [name for name in names if name not in registry.UNITS]
    if unknown:
        raise InputError(msg("Unknown unit(s) {unknown}; available: {units}.", unknown=", ".join(unknown),
                             units=", ".join(registry.UNITS)))
    left = [name for name in registry.UNITS if name in set(names)]
    done: list[str] = []
    while left:
        ready = next(name for name in left if not set(_read_units(name)) & (set(left) - {name}))
        left.remove(ready)
        done.append(ready)
    return done


def _read_units(name: str) -> list[str]:
    """The units whose checks' outputs unit `name` reads."""
    return [registry.CHECKS[read.split(":", 1)[0]].runs_in for read in registry.UNITS[name].reads]


# Seconds after which a computation says again what it is doing, when no step or new phase has said it since.
HEARTBEAT_S = 5.0


def run_units(run: RunContext, names, settings: Settings = Settings(), progress: progress_of.Report | None = None,
              finished=None) -> list[CheckResult]:
    """Every check of the named units on one run context (they share its batches and model), in order, inside
    hosted mode's time budget; then each finding a cause explains pointing at its owner (`causes.explain`).

    `progress(fraction, text, seconds_left)` hears what runs from the start, every training step, and every
    `HEARTBEAT_S` seconds while nothing else is said; the time left is that of the whole call (every unit's planned
    steps, `Unit.plan`), from the measured pace of a step (`core.progress.Work`). Called inside another call's
    computation, its steps count into that one's. `finished(results, pending)` hears after each unit the results so
    far (explained, in walk order) and the units still to run (a trace writes them, so a trace stopped at its time
    limit keeps what it finished).

    Raises:
        InputError: unusable settings, or an input a unit found unusable.
    """
    names = ordered(names)
    settings = settings.validated({taken for name in names for taken in registry.UNITS[name].takes})
    outer = progress_of.current()
    work = outer if outer is not None else progress_of.Work(progress or progress_of.no_report,
                                                           heartbeat=HEARTBEAT_S if progress else None,
                                                           key=progress_of.run_key(getattr(run, "config", None)))
    with progress_of.counting(work) if outer is None else contextlib.nullcontext():
        work.doing(msg("Starting"))
        unasked = {name: reason for name in names if (reason := not_asked(run, name, settings)) is not None}
        planned_copy = False
        for name in names:  # the plan before any work, so the first estimate already covers all of it
            unit = registry.UNITS[name]
            if unit.plan is not None and name not in unasked:
                work.plan(planned_steps(run, name, settings), traces=int(unit.copy and not planned_copy))
                planned_copy = planned_copy or unit.copy
        return _run_units(run, names, settings, work, unasked, finished)


def planned_steps(run: RunContext, name: str, settings: Settings) -> int:
    """The training steps unit `name` plans on this run (`Unit.plan`); 0 for one that trains nothing, or whose plan
    cannot be made (no split: the unit reports that itself)."""
    unit = registry.UNITS[name]
    try:
        return int(unit.plan(run, settings)) if unit.plan is not None else 0
    except Exception:
        return 0


def planned_jobs(jobs, open_run) -> list[tuple[int, bool]]:
    """For each job (a `serve.store.Job`: a unit's `kind`, `config` and `settings`), the training steps it plans and
    whether it traces a copy of its own, for a bar over all of them (`core.progress.in_sequence`); `open_run(config)`
    gives a job's run context. 0 steps for one whose inputs cannot be opened (its own run says why)."""
    def steps(job) -> int:
        try:
            return planned_steps(open_run(job.config), job.kind, replace(job.settings, asked=(job.kind,)))
        except Exception:
            return 0

    return [(steps(job), registry.UNITS[job.kind].copy) for job in jobs]


def not_asked(run: RunContext, name: str, settings: Settings) -> Text | None:
    """Why unit `name` does not run on this run unless asked for (`Unit.on_request`), or None when it runs."""
    unit = registry.UNITS[name]
    if unit.on_request is None or name in settings.asked:
        return None
    try:
        if blocked(run, unit.needs) is not None:  # a unit that cannot run says why it cannot, not that it was not asked
            return None
        return unit.on_request(run)
    except Exception:  # what stops the question (no model) stops the unit too: its needs say so
        return None


def _run_units(run: RunContext, names: list[str], settings: Settings, work: progress_of.Work,
               unasked: dict[str, Text], finished=None) -> list[CheckResult]:
    results: list[CheckResult] = []
    copies = SharedCopy()  # this call's own: the app's pages may run units of one context in several threads
    try:
        with run_budget(), code_style(CodeStyle.of(run.config)):  # fixes in the names the user's code uses
            for index, name in enumerate(names):
                if name in unasked:
                    stage = registry.UNITS[name].stage
                    results += [skipped(check, stage, unasked[name], NOT_RUN) for check in registry.unit_checks(name)]
                else:
                    results += run_unit(run, name, settings, work, results, copies)
                if finished is not None and index + 1 < len(names):
                    finished(_explained(results), names[index + 1:])
    finally:
        run.let_go_of_step_copy()  # a context the app keeps for every session never holds a trained copy after a call
        if copies.close():  # the trained copy refers to itself through its traced step: only a collection frees it
            gc.collect()
    return _explained(results)


def _explained(results: list[CheckResult]) -> list[CheckResult]:
    """The results in the walk's order, whatever the units, each finding a cause explains pointing at its owner."""
    walk = {check_id: index for index, check_id in enumerate(registry.CHECKS)}
    return explain(sorted(results, key=lambda result: walk.get(result.id, len(walk))), pending=False)


def run_unit(run: RunContext, name: str, settings: Settings, work: progress_of.Work | None = None, earlier=(),
             copies=None) -> list[CheckResult]:
    """One unit's results: each check whose needs are not met skipped with the first unmet need's reason, the others
    its function's results (or, for a unit without one, each check's own `measure`); never raising but for unusable
    input.

    A check that requires more than its unit (`Check.requires`) is skipped alone, and the unit's function
    answers for the others. Anything a need or the unit's shared work raises (a batch, a model copy, a
    decode) becomes an `error` result for each check still to answer, naming the exception, with the traceback in
    the evidence (for a unit without a function, for the check that read it: see `measured_alone`); past the time
    budget they are skips saying so. A trained copy holds its weights, gradients and
    optimizer slots, and refers to itself through Keras's traced train step, so only the cycle collector frees it;
    collecting after a unit that trains frees the largest tensors before the next unit instead of whenever Python
    next collects.
    """
    unit = registry.UNITS[name]
    skips: list[CheckResult] = []
    wanted = registry.unit_checks(unit.name)
    try:
        with run_budget():
            if not unit.function:  # each check measures alone: its needs are read, and it runs, in its own guard
                return [measured_alone(run, check, work) for check in registry.unit_checks(unit.name)]
            reasons = {check: blocked(run, registry.needs_of(registry.CHECKS[check])) for check in wanted}
            skips = [skipped(check, unit.stage, reason) for check, reason in reasons.items() if reason is not None]
            wanted = tuple(check for check, reason in reasons.items() if reason is None)
            if not wanted:
                return skips
            if work is not None:
                work.doing(msg("Checking {checks}", checks=", ".join(wanted)))
            kwargs = inputs(unit, settings, earlier, copies)
            return skips + [result for result in unit.function(run, **kwargs) if result.id in wanted]
    except InputError:
        raise
    except BudgetExceeded as exc:
        return skips + [skipped(check, unit.stage, str(exc)) for check in wanted]
    except Exception as exc:  # one broken piece of shared work must not blank the page
        return skips + [error_result(check, unit.stage, exc) for check in wanted]
    finally:
        if unit.copy or any(registry.CHECKS[check].trains for check in registry.unit_checks(unit.name)):
            gc.collect()


def measured_alone(run: RunContext, check_id: str, work: progress_of.Work | None = None) -> CheckResult:
    """A check of a unit without a function, inside its own guard: skipped with the first unmet need's reason, else
    its own `measure`. A need read here, such as the forward pass or the train step that several checks share, is
    measured once on the run context, inside the guard of the first check that reads it; unusable input (an
    InputError) is raised to the caller, as from any unit."""
    check = registry.CHECKS[check_id]
    if work is not None:
        work.doing(msg("Checking {checks}", checks=check_id))

    def measure() -> CheckResult:
        reason = blocked(run, registry.needs_of(check))
        return skipped(check_id, check.stage, reason) if reason is not None else check.measure(run)

    return run_check(check_id, check.stage, measure, reraise=InputError)


def inputs(unit: Unit, settings: Settings, earlier, copies=None) -> dict:
    """The keywords a unit is called with: the settings it takes, the outputs it reads (from a result of this
    call, else from `settings`), and the call's shared copy of the model. A unit says what it runs, and counts its
    training steps, into the call's computation (`core.progress`)."""
    kwargs = {field.name: getattr(settings, field.name) for field in fields(settings) if field.name in unit.takes}
    for read in unit.reads:
        check_id, key = read.split(":", 1)
        found = next((result for result in earlier if result.id == check_id), None)
        kwargs[key] = (found.evidence or {}).get(key) if found is not None else getattr(settings, key, None)
    if unit.copy:
        kwargs["copies"] = copies if copies is not None else SharedCopy()
    return kwargs


# ---------------------------------------------------------------- what a unit needs of the run, and why it is missing

def _missing(run: RunContext, missing: list[str]) -> Text:
    task = run.config.glue_task
    return msg("The split has no {missing} column (it has {found}; {task} needs {needed}): see data.columns.",
               missing=", ".join(missing), found=", ".join(run.split.column_names), task=task.name,
               needed=", ".join(list(task.text_columns) + ["label"]))


def _texts(run: RunContext) -> Text | None:
    if missing := [column for column in run.config.glue_task.text_columns if column in run.missing_columns]:
        return _missing(run, missing)
    if run.text_problems:
        counts = joined([msgn("{column} in {count:,} row", "{column} in {count:,} rows",
                              len(found["empty"]) + len(found["not_text"]), column=column)
                         for column, found in run.text_problems.items()])
        return msg("Some text cells are empty or not text ({counts}): see data.columns.", counts=counts)
    return None


def _columns(run: RunContext) -> Text | None:
    return _missing(run, run.missing_columns) if run.missing_columns else _texts(run)


def _tokenizes(run: RunContext) -> Text | None:
    """Met when the first batch's texts were tokenized, or when there are no texts to tokenize (data.columns's
    finding, which the "texts" need names)."""
    if _texts(run) is not None or run.batch_exception is None:
        return None
    exc = run.batch_exception
    return msg("Tokenizing the first batch failed ({error}): see data.batch.",
               error=f"{type(exc).__name__}: {str(exc).strip().splitlines()[0]}" if str(exc).strip()
               else type(exc).__name__)


def _decodes(run: RunContext) -> Text | None:
    """Met unless the tokenizer is the stand-in that shows token ids (no tokenizer was given or found)."""
    from diagnostics.keras.other_tokenizers import is_token_ids

    if is_token_ids(run.tokenizer):
        return msg("No tokenizer: none was given, none is among the script's objects and none is saved with the "
                   "model, so the rows are shown as token ids and their text is not judged (pass --tokenizer, or "
                   "tokenizer= to diagnose()).")
    return None


def _label_column(run: RunContext) -> Text | None:
    return msg("The split has no 'label' column.") if LABEL not in run.split.column_names else None


def _labels(run: RunContext) -> Text | None:
    if not run.has_labels:
        return msg("No label of the split is usable (all -1, as in a GLUE test split, or unreadable: see "
                   "data.label_range), so there is nothing to learn.")
    return None


def _counted(run: RunContext) -> Text | None:
    if not run.countable_labels:
        return msg("No label of the split lies in the task's range, so there is nothing to count (see "
                   "data.label_range).")
    return None


def _unusable(run: RunContext) -> Text | None:
    if run.unusable_labels:
        task = run.config.glue_task
        return msg("{count:,} labels are not {task} labels (see data.label_range): every check that feeds labels to "
                   "the model needs ids 0..{last} or {task}'s names, so fix them first.", count=run.unusable_labels,
                   task=task.name, last=task.num_labels - 1)
    return None


def _range(run: RunContext) -> Text | None:
    if run.unreadable_scores:
        return msg("{count:,} scores are empty or not numbers (see data.label_range): a NaN label makes every loss "
                   "NaN, so fix them first.", count=run.unreadable_scores)
    if (unusable := _unusable(run)) is not None:
        return unusable
    if run.out_of_range_labels:
        task = run.config.glue_task
        if run.beyond_head_labels == run.out_of_range_labels:
            return msg("Training stops at the first of {count:,} rows whose label the head has no output for "
                       "(num_labels={num_labels}, while {task} has {classes} labels): fix the head first (see "
                       "model.config).", count=run.out_of_range_labels, num_labels=run.config.effective_num_labels,
                       task=task.name, classes=task.num_labels)
        if run.config.loss == "binary_crossentropy":  # Keras trains on, toward targets no probability reaches
            return msg("{count:,} labels lie outside [0, {num_labels}) (see data.label_range): binary cross-entropy "
                       "trains on them as targets no output reaches, so this check would measure training on wrong "
                       "labels: fix them first.", count=run.out_of_range_labels,
                       num_labels=run.config.effective_num_labels)
        return msg("Training stops at the first of {count:,} labels outside [0, {num_labels}) (see data.label_range): "
                   "fix them first.", count=run.out_of_range_labels, num_labels=run.config.effective_num_labels)
    return None


def _flows(run: RunContext) -> Text | None:
    """Met unless one train step with the first batch's labels drawn in range (`RunContext.in_range_step`, the step
    hparams.loss judges) gave no trainable variable a non-zero gradient: the reason states that measurement and
    names the check owning it (the loss given to compile, else the gradients)."""
    if run.classifier[0] is not None and run.first_batch.tf_batch is not None and run.gradients_stopped:
        owner = "hparams.loss" if run.config.loss != "internal" else "model.gradients"
        return msg("Blocked: one train step on the first batch (its labels drawn in range) gave every trainable "
                   "variable no gradient or an all-zero one with loss {loss}, so no step can move the weights and this "
                   "measurement could only show that (see {owner}).", loss=repr(run.config.loss_shown), owner=owner)
    return None


def _model(run: RunContext) -> Text | None:
    model, problem = run.classifier
    return msg("No model to run: {reason} (see model.config).", reason=problem) if model is None else None


def _batch(run: RunContext) -> Text | None:
    if (unmade := _tokenizes(run)) is not None:
        return unmade
    if run.first_batch.tf_batch is None:
        return msg("No training batches: {error} (see data.batch).", error=run.first_batch.error)
    return None


def _forward(run: RunContext) -> Text | None:
    return msg("The forward pass failed (see model.forward).") if run.forward.logits is None else None


def _scored(run: RunContext) -> Text | None:
    config = run.config
    if not math.isfinite(configured_loss_value(config.loss, run.forward.logits, run.first_labels,
                                               config.glue_task.regression, head_of(run.classifier[0]))):
        return msg("No row has a valid label and a finite loss, so there is no initial loss to judge (see "
                   "model.nan_rows).")
    return None


def _stepped(run: RunContext) -> Text | None:
    if run.batch_step.record.error:
        return msg("The train step did not run (see model.gradients), so no weights were updated.")
    return None


def _fits(run: RunContext) -> Text | None:
    from diagnostics.checks.model.memory import will_not_fit

    if run.classifier[0] is not None and will_not_fit(run):
        return msg("Not started: training this model at this batch size and max_length needs more memory than the "
                   "device has (see model.memory), and would end the process on memory.")
    return None


def _rows(run: RunContext) -> Text | None:
    return msg("The split has {rows} rows, too few to hold some out.", rows=len(run.split)) if len(run.split) < 8 \
        else None


# Each need: why a unit needing it cannot run on this run context, or None when it can. The reasons name the check
# that owns the cause, so a blocked check points there instead of blaming something else.
REASONS = {"columns": _columns, "texts": _texts, "tokenizes": _tokenizes, "decodes": _decodes,
           "label_column": _label_column,
           "counted": _counted, "labels": _labels, "range": _range, "readable": _unusable, "flows": _flows,
           "model": _model, "batch": _batch, "forward": _forward, "scored": _scored, "stepped": _stepped,
           "rows": _rows, "fits": _fits}




def problems(checks: dict, units: dict) -> list[str]:
    """Each need or setting these checks and units name that this runner does not provide, as one line."""
    return validate.runner_problems(checks, units, REASONS, Settings.__dataclass_fields__)


validate.hold(problems(registry.CHECKS, registry.UNITS))


def blocked(run: RunContext, needs) -> Text | None:
    """The reason of the first need in `needs` that this run does not meet, or None."""
    return next((reason for need in needs if (reason := REASONS[need](run)) is not None), None)
