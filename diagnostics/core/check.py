"""The check model: a check (its id, title, conditions and what it measures with), the causes checks own, the
units of the walk that run them, and the stages. The checks themselves are declared each in its own module under
`diagnostics.checks.<stage>`; the registry (`diagnostics.walk.registry`) collects them."""

from __future__ import annotations

import contextlib
import contextvars
from dataclasses import KW_ONLY, dataclass, replace
import types
from typing import Any, Callable, Iterator, Mapping

from diagnostics.i18n import N_

# The unit of the checks that watch a user's own model.fit: no stage runs them (DiagnoseCallback calls them).
FIT = "fit"

# What a check says, as a function of its evidence and the facts its measurement names beside it (the task, the
# split's name: `result.judge(check, evidence, **facts)`, read as attributes): a condition's (finding, fix) when its
# rule is crossed; a check's finding when none is (`Check.otherwise_says`, or its (finding, fix)).
Says = Callable[[Mapping[str, Any], types.SimpleNamespace], Any]


@dataclass(frozen=True)
class Condition:
    """A named threshold: `name` is its one name (its value is read with `Check.value`, and a run's own is set
    with `--threshold check.name=value`), `meaning` says what crossing it does.

    A condition that judges has a `rule`, a small function of the check's measured evidence, the threshold and
    the check's other thresholds by name (`Above`, `AtMost`, `ShareAbove`, `Holds`, `All` of them), the
    `status` it gives when crossed (a pass, for a check that fails unless a rule finds it well), and what it
    `says` then: `says(evidence, facts) -> (finding, fix)`, a function of the check's evidence and the facts its
    measurement names (`result.judge`), so the condition, its verdict and its sentence are declared in one place.
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
    says: Says | None = None


@dataclass(frozen=True)
class Check:
    """One check of the walk.

    Attributes:
        id: "<stage>.<check>", stable: the report format and the scenarios use it.
        title: what it checks, in a few words.
        trains: it takes optimizer steps (on a copy), so it costs seconds to minutes.
        conditions: its thresholds.
        unit: the unit of the walk that runs it (default: the one named as its stage; the Hyperparameters stage
            has two, "setup" at once and "training" on request); `FIT` for a check that watches the user's own
            `model.fit` (DiagnoseCallback), which no unit runs.
        requires: what of the run it needs beyond its unit's needs (the runner skips it alone, with the reason;
            of a unit with a function, it keeps the function's results for the others).
        measure: its own `measure(run) -> CheckResult`, for a check of a unit without a function (its checks share
            only what the run context caches, so each measures alone).
        otherwise: the status when none of its conditions' rules is crossed ("pass"; "fail" for a check that fails
            unless a rule finds it well; "skip" for one whose measurement can find nothing to judge).
        otherwise_says: what it says then (`Says`: the finding, or the finding and its fix).
        evidence: the shape of its evidence (a TypedDict: every key it may put there, which its rules, the charts,
            the pages and the JSON report read).
    """

    id: str
    title: str
    trains: bool = False
    conditions: tuple[Condition, ...] = ()
    unit: str = ""
    requires: tuple[str, ...] = ()
    measure: Callable | None = None
    otherwise: str = "pass"
    otherwise_says: Says | None = None
    evidence: type | None = None

    @property
    def stage(self) -> str:
        return self.id.split(".", 1)[0]

    @property
    def runs_in(self) -> str | None:
        """The name of the unit that runs it; None for a check that watches a user's own fit."""
        return None if self.unit == FIT else self.unit or self.stage

    def value(self, name: str) -> float | None:
        """A condition's threshold by its name (this run's own where `per_run_thresholds` set one)."""
        self.condition(name)
        return self.values()[name]

    def condition(self, name: str) -> Condition:
        """A condition by its name (a KeyError names the check and the name)."""
        for condition in self.conditions:
            if condition.name == name:
                return condition
        raise KeyError(f"{self.id} has no condition {name!r}")

    def with_values(self, **values: float) -> "Check":
        """This check with some conditions' thresholds replaced by name (a KeyError for a name it lacks)."""
        unknown = set(values) - {condition.name for condition in self.conditions}
        if unknown:
            raise KeyError(f"{self.id} has no condition {', '.join(sorted(unknown))}")
        return replace(self, conditions=tuple(replace(condition, value=values.get(condition.name, condition.value))
                                              for condition in self.conditions))

    def values(self) -> dict[str, float | None]:
        """Every condition's threshold by name (what a rule reads with `of=`), this run's own where set."""
        own = _PER_RUN.get().get(self.id, {})
        return {condition.name: own.get(condition.name, condition.value) for condition in self.conditions}


# Thresholds set for one run (`diagnose(thresholds=...)`, `--threshold`): {check id: {condition: value}}, validated by
# `walk.stages.parse_thresholds`. A context variable, so a run in one thread or session never changes another's.
_PER_RUN: contextvars.ContextVar[Mapping[str, dict[str, float]]] = contextvars.ContextVar(
    "debugger_thresholds", default=types.MappingProxyType({}))  # read-only: a run sets its own (per_run_thresholds)


@contextlib.contextmanager
def per_run_thresholds(thresholds: dict[str, dict[str, float]]) -> Iterator[None]:
    """Within this block every check reads these thresholds instead of its declared ones."""
    token = _PER_RUN.set({check_id: dict(values) for check_id, values in (thresholds or {}).items()})
    try:
        yield
    finally:
        _PER_RUN.reset(token)


@dataclass(frozen=True)
class Stage:
    name: str
    title: str


STAGES = (Stage("data", N_("Data")), Stage("model", N_("Model")), Stage("hparams", N_("Hyperparameters")),
          Stage("overfit", N_("Overfit test")))
STAGE_ORDER = tuple(stage.name for stage in STAGES)
STAGE_TITLES = {stage.name: stage.title for stage in STAGES}


@dataclass(frozen=True)
class Explains:
    """A finding of another check that a cause explains: `check`'s verdict by one of `conditions` (none named: any
    verdict but a pass or a skip, its fallback included), while `when` (a rule on that check's own evidence) holds.

    Attributes:
        measured: the owner measured the same question itself, so its verdict stands whatever it is: the finding
            (a rule of thumb) points at the owner even when the owner passed.
        before_owner: the finding is the owner's cause by what it measured (its condition says so), so it points at
            the owner, as pending, while the owner has not run (a page of the walk opened before the owner's): it
            never names the owner's fix itself.
    """

    check: str
    conditions: tuple[str, ...] = ()
    when: Callable[..., bool] | None = None
    measured: bool = False
    before_owner: bool = False


@dataclass(frozen=True)
class Cause:
    """A cause the report names once: owned by the check whose `conditions` name it (its verdict, sentence and fix
    are the cause's), with the findings of other checks it explains. Those keep their evidence and point at the
    owner instead of failing again. A warn or fail verdict no cause declares is a cause of its own, explaining
    nothing else.

    Attributes:
        precedence: where it stands among the causes, lowest first: a finding two present causes explain points at
            the one of lower precedence, and the report lists them in this order. Each cause has its own number
            (the registry refuses two alike); `python -m diagnostics checks` lists them in order.
    """

    name: str
    owner: str
    conditions: tuple[str, ...]
    title: str
    explains: tuple[Explains, ...] = ()
    _: KW_ONLY
    precedence: int


@dataclass(frozen=True)
class Unit:
    """A unit of the walk: the checks that one function answers for together, because they share its work (a
    decoded batch, a forward pass, a trained copy).

    Attributes:
        name: its key (the app's shared store keeps each unit's results apart).
        stage: the stage it belongs to.
        function: `function(run, **inputs) -> list[CheckResult]`, for checks that share its work; None when each of
            its checks measures alone (`Check.measure`).
        needs: what of the run it needs, in the order their reasons are given when missing (see
            `runner.REASONS`: "columns", "texts", "tokenizes", "decodes", "label_column", "counted", "labels", "range",
            "readable", "model", "batch", "forward", "scored", "stepped", "rows", "flows").
        takes: the run settings it is called with (fields of `runner.Settings`: "sweep", "epochs", "rate").
        reads: outputs of other checks it is called with, as "check_id:key" (an evidence key of that check's
            result; the key is also the keyword), so the runner runs that check's unit first when both run.
        heavy: it loads the model or trains a copy (the app queues it for one of the server's heavy slots).
        copy: it trains a copy of the model, the one its call of the runner shares between such units (it is called
            with `copies=`, a `training.SharedCopy`), so the copy is made and traced once a call.
        plan: `plan(run, settings) -> steps`, the training steps it will take (`runner.Settings`), so the runner
            can tell how long the whole call has left from the pace of a step (`core.progress`); None: none.
        on_request: `on_request(run) -> reason or None`: why, on this run, it runs only when asked for
            (`runner.Settings.asked`); its checks are skipped with that reason otherwise. None: it always runs.
    """

    name: str
    stage: str
    function: Callable | None = None
    needs: tuple[str, ...] = ()
    takes: tuple[str, ...] = ()
    reads: tuple[str, ...] = ()
    heavy: bool = True
    copy: bool = False
    plan: Callable | None = None
    on_request: Callable | None = None


class RegistryError(ImportError):
    """A declaration of the walk that does not hold: one line naming the module, the field and what is wrong."""


def _tuple_of(value, kind: type, module: str, field: str) -> tuple:
    """`value`, checked to be a tuple of `kind` (one alone, a one-item tuple written without its comma, is named as
    such)."""
    if not isinstance(value, tuple) or not all(isinstance(item, kind) for item in value):
        alone = " (one alone needs its trailing comma: (item,))" if isinstance(value, kind) else ""
        raise RegistryError(f"{module}: {field} is a {type(value).__name__}, not a tuple of {kind.__name__}{alone}")
    return value


def collect(*modules: types.ModuleType) -> tuple[tuple[Check, ...], tuple[Cause, ...]]:
    """The checks and causes of a stage package's check modules, given in walk order: each module's `CHECK` and
    any `CAUSES` it declares (a cause's place among all of them is its own `precedence`), each declaration's shape
    checked here, where its module is known.

    Raises:
        RegistryError: a module without a `Check` as CHECK, a check id or cause name declared twice, or a field that
            should be a tuple (`conditions`, `requires`, `CAUSES`, a cause's `conditions` and `explains`) that is not
            one of what it holds; one line naming the module and the field.
    """
    checks, causes, ids, names = [], [], {}, {}
    for module in modules:
        where = module.__name__
        check = getattr(module, "CHECK", None)
        if not isinstance(check, Check):
            raise RegistryError(f"{where}: CHECK is {type(check).__name__}, not a Check")
        if check.id in ids:
            raise RegistryError(f"{where}: check id {check.id!r} is already declared by {ids[check.id]}")
        ids[check.id] = where
        _tuple_of(check.conditions, Condition, where, f"{check.id}'s conditions")
        _tuple_of(check.requires, str, where, f"{check.id}'s requires")
        for cause in _tuple_of(getattr(module, "CAUSES", ()), Cause, where, "CAUSES"):
            if cause.name in names:
                raise RegistryError(f"{where}: cause {cause.name!r} is already declared by {names[cause.name]}")
            names[cause.name] = where
            _tuple_of(cause.conditions, str, where, f"cause {cause.name!r}'s conditions")
            _tuple_of(cause.explains, Explains, where, f"cause {cause.name!r}'s explains")
            causes.append(cause)
        checks.append(check)
    return tuple(checks), tuple(causes)
