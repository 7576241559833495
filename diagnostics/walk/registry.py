"""Every check, cause and unit of the walk, collected from the stage packages (`diagnostics.checks.<stage>`), each
declared once in its own module.

The one runner (`diagnostics.walk.runner`) runs units from here: it orders them by what they read, skips a unit whose
needs are not met with the reason its owning check gives, and calls its function inside the guard. The command
line, `diagnose()`, the trace and the app's pages (through their shared store) all run checks through it. The
Report's order, `python -m diagnostics checks` and the check table of docs/checks.md read this module too.
"""

from __future__ import annotations

from diagnostics.checks import data, hparams, model, overfit
from diagnostics.core.evidence import Error
from diagnostics.core.check import FIT, STAGE_ORDER, STAGE_TITLES, STAGES, Cause, Check, Unit
from diagnostics.walk import validate

__all__ = ["CHECKS", "CAUSES", "UNITS", "FIT", "STAGES", "STAGE_ORDER", "STAGE_TITLES", "units_of", "checks_of",
           "run_check_ids", "collect", "EVIDENCE", "declared_keys", "needs_of", "function_name", "listing"]

_STAGES = (data, model, hparams, overfit)  # in walk order, as `STAGE_ORDER` names them


def collect(stages) -> tuple[dict[str, Check], dict[str, Cause], dict[str, Unit]]:
    """The checks, causes and units the stage packages declare (`CHECKS`, `CAUSES`, `UNITS` of each), built only
    from declarations that hold (walk/validate.py): a broken one raises `RegistryError` naming its module.

    The units that train come last and together, so their one shared copy of the model (see `Unit.copy`) is never
    alive beside the Model checks' own copies. Causes come in their declared precedence (`Cause.precedence`): a
    finding two present causes explain points at the first (columns the batches cannot be built without, labels
    outside the task's classes before a head too small for them, a loss before the gradients it stops, any cause
    before the rate)."""
    checks = {}
    for stage in stages:  # a check id of one stage declared again in another (within a stage: core.check.collect)
        for check in stage.CHECKS:
            if check.id in checks:
                validate.hold([f"{validate.module_of(check)}: check id {check.id!r} is already declared by "
                               f"{validate.module_of(checks[check.id])}"])
            checks[check.id] = check
    units = {unit.name: unit for unit in sorted((unit for stage in stages for unit in stage.UNITS),
                                                key=lambda unit: unit.copy)}
    declared = [cause for stage in stages for cause in stage.CAUSES]
    validate.hold(validate.problems(checks, declared, units))
    return checks, {cause.name: cause for cause in sorted(declared, key=lambda cause: cause.precedence)}, units


CHECKS, CAUSES, UNITS = collect(_STAGES)
# The shape of each check's evidence, declared beside its measurement.
EVIDENCE: dict[str, type] = {check.id: check.evidence for check in CHECKS.values()}
# What watches a user's own fit (the checks of the FIT unit), for the listing.
FIT_FUNCTION = "diagnostics.usercode.callback.DiagnoseCallback"


def declared_keys(check_id: str) -> set[str]:
    """The keys a check's evidence may hold (an error result's keys for every check)."""
    return set(EVIDENCE[check_id].__annotations__) | set(Error.__annotations__)


def unit_checks(name: str) -> tuple[str, ...]:
    """The ids of the checks a unit runs, in walk order."""
    return tuple(check.id for check in CHECKS.values() if check.runs_in == name)


def needs_of(check: Check) -> tuple[str, ...]:
    """What of the run a check needs, the ones the runner acts on: its unit's needs, then its own (none for a check
    that watches a user's own fit, which has what it needs when it is called)."""
    return UNITS[check.runs_in].needs + check.requires if check.runs_in else ()


def function_name(check: Check) -> str:
    """The dotted name of the function that produces a check's result (for the listing and docs/checks.md)."""
    function = check.measure or (UNITS[check.runs_in].function if check.runs_in else None)
    return f"{function.__module__}.{function.__qualname__}" if function else FIT_FUNCTION


def units_of(stage: str) -> tuple[str, ...]:
    """The names of a stage's units, in walk order."""
    return tuple(unit.name for unit in UNITS.values() if unit.stage == stage)


def checks_of(stage: str, unit: str | None = None) -> tuple[str, ...]:
    """The ids of a stage's checks in walk order; `unit` narrows them to one unit's ("setup" or "training" of the
    Hyperparameters stage). The checks that watch a user's own fit are left out unless `unit` is FIT."""
    return tuple(check.id for check in CHECKS.values() if check.stage == stage and (
        check.unit == FIT if unit == FIT else check.runs_in is not None and unit in (None, check.runs_in)))


def run_check_ids() -> tuple[str, ...]:
    """Every check a run of all the stages answers for (all but the ones that watch a user's own fit)."""
    return tuple(check.id for check in CHECKS.values() if check.runs_in is not None)


def listing() -> list[dict]:
    """Every check as plain data, for `python -m diagnostics checks --json` and docs/checks.md's table."""
    return [{"id": check.id, "stage": check.stage, "stage_title": STAGE_TITLES[check.stage], "title": check.title,
             "needs": list(needs_of(check)), "trains": check.trains, "unit": check.runs_in,
             "function": function_name(check), "otherwise": check.otherwise,
             "conditions": [{"name": c.name, "value": c.value, "meaning": c.meaning,
                             **({"rule": str(c.rule), "status": c.status} if c.rule else {})}
                            for c in check.conditions],
             "causes": [{"name": cause.name, "title": cause.title, "precedence": cause.precedence,
                         "conditions": list(cause.conditions),
                         "explains": [{"check": e.check, "conditions": list(e.conditions),
                                       **({"when": str(e.when)} if e.when else {}),
                                       **({"measured": True} if e.measured else {})} for e in cause.explains]}
                        for cause in CAUSES.values() if cause.owner == check.id]}
            for check in CHECKS.values()]
