"""The registry checks itself when it is built: a declaration that names something that does not exist fails at
import with one line naming the module that declares it and the name, instead of vanishing from every report or
failing at run time (a need misspelt).

What is checked: every cause has a precedence of its own (a whole number no other cause has); a cause's owner and its
conditions exist, and so do the checks and conditions it explains; a check's unit exists; each rule reads keys its
check's evidence declares; each condition that judges says its sentence, one that does not judge says none, and each
check says what it finds when no rule is crossed; a unit's `reads` name a check and a key of its evidence; and, once
the runner is built, every need and setting a unit or check names is one the runner provides (`validate_runner`).
"""

from __future__ import annotations

import sys
from typing import Iterable


from diagnostics.core.check import RegistryError  # noqa: F401  (raised here and by core.check.collect)


def module_of(declared: object) -> str:
    """The module of `diagnostics.checks` that declares this object at its top level, itself or in a tuple there
    (`CAUSES = (...)`, a stage's `UNITS`), the deepest where several hold it (a stage package's `CHECKS` and
    `CAUSES` gather its modules') ("?" when none does)."""
    found = [name for name, module in list(sys.modules.items()) if name.startswith("diagnostics.checks.") and any(
        value is declared or isinstance(value, tuple) and any(item is declared for item in value)
        for value in list(vars(module).values()))]
    return max(found, key=lambda name: name.count("."), default="?")


class _Where:
    """`module_of(declared)`, looked up only when a problem line is written (a sound registry never scans)."""

    def __init__(self, declared: object):
        self.declared = declared

    def __format__(self, spec: str) -> str:
        return format(module_of(self.declared), spec)


def _evidence_keys(check) -> set[str] | None:
    return set(check.evidence.__annotations__) if check.evidence is not None else None


def problems(checks: dict, declared_causes: Iterable, units: dict) -> list[str]:
    """Each broken declaration as one line: "<module>: <what> <name> ...". Empty when the registry holds."""
    found = []
    declared = {cause.name: cause for cause in declared_causes}
    for cause in declared.values():
        where = _Where(cause)
        owner = checks.get(cause.owner)
        if owner is None:
            found.append(f"{where}: cause {cause.name!r} is owned by {cause.owner!r}, which is no check")
            continue
        found += [f"{where}: cause {cause.name!r} names condition {condition!r}, which {owner.id} does not declare"
                  for condition in cause.conditions if condition not in {c.name for c in owner.conditions}]
        for explained in cause.explains:
            other = checks.get(explained.check)
            if other is None:
                found.append(f"{where}: cause {cause.name!r} explains {explained.check!r}, which is no check")
                continue
            found += [f"{where}: cause {cause.name!r} explains condition {condition!r} of {other.id}, which it does "
                      "not declare" for condition in explained.conditions
                      if condition not in {c.name for c in other.conditions}]
    for check in checks.values():
        where = _Where(check)
        if check.runs_in is not None and check.runs_in not in units:
            found.append(f"{where}: {check.id} runs in unit {check.runs_in!r}, which no stage declares")
        elif check.runs_in is not None and units[check.runs_in].function is None and check.measure is None:
            found.append(f"{where}: {check.id}'s measure is None, and its unit {check.runs_in!r} has no function of "
                         "its own to run it: declare measure=")
        if check.otherwise_says is None:
            found.append(f"{where}: {check.id} declares no otherwise_says, so it has nothing to say when no rule is "
                         "crossed")
        keys = _evidence_keys(check)
        for condition in check.conditions:
            if (condition.rule is None) != (condition.says is None):
                found.append(f"{where}: {check.id}'s condition {condition.name!r} "
                             + ("judges but says nothing (declare its says=)" if condition.says is None else
                                "says a sentence but has no rule to judge by"))
            read = getattr(condition.rule, "keys", ()) if condition.rule is not None else ()
            found += [f"{where}: {check.id}'s condition {condition.name!r} reads {key!r}, which its evidence does not "
                      "declare" for key in read if keys is not None and key not in keys]
    taken: dict[int, str] = {}
    for name, cause in declared.items():  # after what is wrong inside a cause, which matters more
        if not isinstance(cause.precedence, int) or isinstance(cause.precedence, bool):
            found.append(f"{module_of(cause)}: cause {name!r} has precedence {cause.precedence!r}, which is not a "
                         "whole number")
        elif cause.precedence in taken:
            found.append(f"{module_of(cause)}: cause {name!r} has precedence {cause.precedence}, as cause "
                         f"{taken[cause.precedence]!r} has, so which of them a finding points at is not declared")
        else:
            taken[cause.precedence] = name
    for unit in units.values():
        for read in unit.reads:
            check_id, _, key = read.partition(":")
            keys = _evidence_keys(checks[check_id]) if check_id in checks else None
            if check_id not in checks or (keys is not None and key not in keys):
                found.append(f"{module_of(unit)}: unit {unit.name!r} reads {read!r}, which no check's evidence holds")
    return found


def runner_problems(checks: dict, units: dict, needs: Iterable[str], settings: Iterable[str]) -> list[str]:
    """Each need or setting a unit or check names that the runner does not provide, as one line."""
    needs, settings = set(needs), set(settings)
    found = []
    for unit in units.values():
        found += [f"{module_of(unit)}: unit {unit.name!r} needs {need!r}, which the runner does not provide (it "
                  f"provides: {', '.join(sorted(needs))})" for need in unit.needs if need not in needs]
        found += [f"{module_of(unit)}: unit {unit.name!r} takes setting {taken!r}, which the runner's Settings do not "
                  "hold" for taken in unit.takes if taken not in settings]
    for check in checks.values():
        found += [f"{module_of(check)}: {check.id} requires {need!r}, which the runner does not provide (it "
                  f"provides: {', '.join(sorted(needs))})" for need in check.requires if need not in needs]
    return found


def hold(found: list[str]) -> None:
    """Raise `RegistryError` with the first problem (and how many more) when there is any."""
    if found:
        more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
        raise RegistryError(found[0] + more)
