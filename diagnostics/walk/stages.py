"""The stages as callers ask for them (all of them, or each alone), and the parsing of which to run or skip; every
call goes through the one runner (`diagnostics.walk.runner`)."""

from __future__ import annotations

import math
from typing import Iterable, Mapping

from diagnostics.config.training import DEFAULT_EPOCHS, SweepSettings
from diagnostics.core.check import per_run_thresholds
from diagnostics.core.context import RunContext
from diagnostics.core.errors import InputError
from diagnostics.core.result import CheckResult
from diagnostics.i18n import msg
from diagnostics.keras.devices import outside_user_strategy
from diagnostics.walk import registry
from diagnostics.walk.causes import explain
from diagnostics.walk.runner import Settings, run_units


__all__ = ["STAGES", "parse_stages", "parse_skip", "parse_asked", "parse_thresholds", "run_stages", "data_stage",
           "learnability_stage", "model_stage", "hparams_stage", "overfit_stage"]

STAGES = registry.STAGE_ORDER
LEARNABILITY = "data.learnability"
PARTS = ("setup", "training")


def parse_stages(text: str | None) -> tuple[str, ...]:
    """'data,model' -> ('data', 'model'); None -> every stage; unknown names are an InputError."""
    if not text:
        return STAGES
    names = tuple(name.strip() for name in text.split(",") if name.strip())
    unknown = [name for name in names if name not in STAGES]
    if unknown:
        raise InputError(msg("Unknown stage(s) {unknown}; available: {stages}.", unknown=", ".join(unknown),
                             stages=", ".join(STAGES)))
    return names


def parse_skip(text: str | None) -> tuple[str, ...]:
    """'data.learnability' -> the units those checks run in ('learnability',), to be left out of a run; a check
    that runs with others in one unit (the range test with the sweep) is left out with all of them or not at all.

    Raises:
        InputError: an unknown check, or a check named without the others of its unit.
    """
    return _units_named(text, asked=False)


def parse_asked(text: str | None) -> tuple[str, ...]:
    """'data.learnability' -> the units of those checks, to run even where they run only on request
    (`Unit.on_request`); the same rules as `parse_skip`, its errors saying "to run"."""
    return _units_named(text, asked=True)


def _units_named(text: str | None, *, asked: bool) -> tuple[str, ...]:
    names = [name.strip() for name in (text or "").split(",") if name.strip()]
    unknown = [name for name in names if name not in registry.CHECKS or registry.CHECKS[name].runs_in is None]
    if unknown:
        raise InputError(msg("Unknown check(s) {unknown} to run; `python -m diagnostics checks` lists them.",
                             unknown=", ".join(unknown)) if asked else
                         msg("Unknown check(s) {unknown} to skip; `python -m diagnostics checks` lists them.",
                             unknown=", ".join(unknown)))
    units = tuple(dict.fromkeys(registry.CHECKS[name].runs_in for name in names))
    for unit in units:
        if left := [check for check in registry.unit_checks(unit) if check not in names]:
            checks = ", ".join(registry.unit_checks(unit))
            raise InputError(msg("{checks} run together in one unit: ask for them all or none (add {left}).",
                                 checks=checks, left=", ".join(left)) if asked else
                             msg("{checks} run together in one unit: skip them all or none (add {left}).",
                                 checks=checks, left=", ".join(left)))
    return units


def parse_thresholds(given: Mapping[str, Mapping[str, float]] | Iterable[str] | None) -> dict[str, dict[str, float]]:
    """This run's thresholds: {"data.duplicates": {"warn_duplicate_share": 0.1}} (`diagnose(thresholds=...)`) or
    ["data.duplicates.warn_duplicate_share=0.1", ...] (`--threshold`), checked against the registry.

    Raises:
        InputError: an unknown check or threshold (naming the known ones), or a value that is not a finite number.
    """
    if not given:
        return {}
    pairs: list[tuple[str, str, object]] = []
    if isinstance(given, Mapping):
        for check_id, values in given.items():
            if not isinstance(values, Mapping):
                raise InputError(msg("Thresholds of {check} must be given by name, e.g. {example}.", check=check_id,
                                     example="{'data.duplicates': {'warn_duplicate_share': 0.1}}"))
            pairs += [(check_id, name, value) for name, value in values.items()]
    else:
        for item in given:
            where, _, value = str(item).partition("=")
            check_id, _, name = where.strip().rpartition(".")
            if not value.strip() or not check_id:
                raise InputError(msg("A threshold is written check.condition=value, e.g. {example}; not {given}.",
                                     example="data.duplicates.warn_duplicate_share=0.1", given=item))
            pairs.append((check_id, name, value.strip()))
    found: dict[str, dict[str, float]] = {}
    for check_id, name, value in pairs:
        check = registry.CHECKS.get(check_id)
        if check is None:
            raise InputError(msg("Unknown check {check} for a threshold; the checks with thresholds: {known}.",
                                 check=check_id, known=", ".join(
                                     c.id for c in registry.CHECKS.values() if _settable(c))))
        if name not in _settable(check):
            raise InputError(msg("{check} has no threshold {name}; its thresholds: {known}.", check=check_id,
                                 name=name, known=", ".join(_settable(check)) or "-"))
        try:
            number = float(value)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            number = math.nan
        if not math.isfinite(number) or isinstance(value, bool):
            raise InputError(msg("The threshold {check}.{name} must be a finite number, not {value}.",
                                 check=check_id, name=name, value=value))
        found.setdefault(check_id, {})[name] = number
    return found


def _settable(check) -> list[str]:
    """A check's thresholds a run may set (its conditions with a number; a yes-or-no finding has none)."""
    return [condition.name for condition in check.conditions if condition.value is not None]


def run_stages(run: RunContext, stages: tuple[str, ...] = STAGES, *, sweep: SweepSettings = SweepSettings(),
               progress=None, epochs: int = DEFAULT_EPOCHS, skip: tuple[str, ...] = (),
               asked: tuple[str, ...] = (), thresholds: dict[str, dict[str, float]] | None = None, finished=None
               ) -> list[CheckResult]:
    """Run the chosen stages in pipeline order on one run context (every stage shares its batches and model), outside
    any strategy scope the caller is in (`devices.outside_user_strategy`); `skip`: units left out (`parse_skip`);
    `asked`: units run even where they run only on request (`parse_asked`; a unit asked for runs with its stage
    or alone); `thresholds`: this run's own (`parse_thresholds`); `finished`: `runner.run_units`'s. A finding that
    is the cause of a check of a stage not run points at that check as pending (`causes.explain`)."""
    units = [unit for stage in stages for unit in registry.units_of(stage) if unit not in skip]
    units += [unit for unit in asked if unit not in units and unit not in skip]
    with per_run_thresholds(thresholds or {}):
        results = outside_user_strategy(run_units, run, units, Settings(sweep=sweep, epochs=epochs,
                                                                        asked=tuple(asked)), progress, finished)
    return explain(results)  # what is shown: a cause of a stage not run is pending at its owner, never named here


# ---------------------------------------------------------------- each stage alone

def data_stage(run: RunContext) -> list[CheckResult]:
    """The Data stage's checks on the batch and the split (learnability, which trains, runs apart)."""
    return run_units(run, [unit for unit in registry.units_of("data") if not registry.UNITS[unit].copy])


def learnability_stage(run: RunContext) -> list[CheckResult]:
    """data.learnability, asked for: a short run on the given labels against shuffled ones (trains two copies)."""
    return run_units(run, ("learnability",), Settings(asked=("learnability",)))


def model_stage(run: RunContext) -> list[CheckResult]:
    """The Model stage on the first batch."""
    return run_units(run, ("model",))


def hparams_stage(run: RunContext, *, sweep: SweepSettings = SweepSettings(), progress=None,
                  parts: tuple[str, ...] = PARTS) -> list[CheckResult]:
    """The Hyperparameters stage: "setup" checks take seconds, "training" ones (the sweep and the range test) train
    a copy."""
    return run_units(run, parts, Settings(sweep=sweep), progress)


def overfit_stage(run: RunContext, *, epochs: int = DEFAULT_EPOCHS, rate: float | None = None,
                  best_rate: float | None = None, configured_broke: bool | None = None,
                  progress=None) -> list[CheckResult]:
    """The overfit-one-batch test; `rate` overrides the configured one (e.g. the sweep's best); with the sweep's
    measurement (`best_rate`, `configured_broke`) it never trains at a rate the sweep measured as broken."""
    return run_units(run, ("overfit",), Settings(epochs=epochs, rate=rate, best_rate=best_rate,
                                                 configured_broke=configured_broke), progress)
