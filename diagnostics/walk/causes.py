"""Causes as the unit of the report: each finding a declared cause explains points at the check that owns it
(`registry.CAUSES`), and what is left is the list of causes, each named once with one status, sentence and fix.

Every caller that shows results runs them through `explain` (the runner for one call, the Report for the results of
several), so a cause is named once however its findings were computed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from diagnostics.core.fixes import RateFix
from diagnostics.i18n import Text
from diagnostics.core.check import Cause, Explains
from diagnostics.walk.registry import CAUSES, CHECKS
from diagnostics.core.result import SEVERITY, CheckResult, Status, rank

FLAGGED = (Status.WARN, Status.FAIL)
# A summary's value of this name is what its check reads into the measurement (e.g. "the learning rate is too high"):
# a finding another check's cause explains is said without it, so it never contradicts the owner.
READING = "reading"


@dataclass(frozen=True)
class Found:
    """One cause of a report: the owner's verdict, sentence and fix, and the findings it explains.

    Attributes:
        owner: the check that owns it.
        name: the declared cause (`registry.CAUSES`), or the owner's own condition for one no cause declares.
        title: the declared cause's title, in a few words (None for one no cause declares).
        explains: the ids of the other checks whose findings it explains, in the walk's order.
    """

    owner: str
    name: str | None
    status: Status
    summary: str
    fix: str | None
    explains: tuple[str, ...] = ()
    title: str | None = None
    pending: bool = False  # the owner has not run: the cause is named by what `explains` measured, without a fix

    def to_dict(self) -> dict:
        return {"owner": self.owner, "cause": self.name, "title": self.title, "status": self.status.value,
                "summary": str(self.summary), "fix": None if self.fix is None else str(self.fix),
                "explains": list(self.explains), **({"pending": True} if self.pending else {})}


def _names(cause: Cause, owner: CheckResult) -> bool:
    return owner.status in FLAGGED and owner.condition in cause.conditions


def _applies(explains: Explains, result: CheckResult) -> bool:
    return (explains.check == result.id
            and (not explains.conditions or result.condition in explains.conditions)
            and (explains.when is None or explains.when(result.evidence or {}, 0.0)))


def _explainer(result: CheckResult, by_id: dict[str, CheckResult], pending: bool) -> str | None:
    """The check owning the first declared cause present that explains `result` (None: it stands alone); with
    `pending`, also the owner, not run, of a cause the finding is by what it measured (`Explains.before_owner`)."""
    if result.status not in FLAGGED:
        return None
    for cause in CAUSES.values():
        owner = by_id.get(cause.owner)
        if owner is None or owner is result:
            continue
        for explains in cause.explains:
            if _applies(explains, result) and (_names(cause, owner) or (
                    explains.measured and owner.status in (Status.PASS, *FLAGGED))):
                return cause.owner
    if pending:  # no owner that ran names it: the first that has not run and owns it by what it measured
        for cause in CAUSES.values():
            if cause.owner not in by_id and any(explains.before_owner and _applies(explains, result)
                                                for explains in cause.explains):
                return cause.owner
    return None


def explain(results: list[CheckResult], *, pending: bool = True) -> list[CheckResult]:
    """The results with each finding a present cause explains pointing at that cause's owner (`explained_by`: the
    root, when the owner's own finding is explained in turn), its fix dropped and its summary said without its
    reading. Findings already explained keep their owner.

    With `pending` (what is shown), a finding that is the cause of an owner that has not run points at that owner too
    (`Explains.before_owner`: a page opened before the owner's names no cause of another check's); the runner keeps
    its results without such pointers, so that once the owner runs its own verdict decides."""
    by_id = {result.id: result for result in results}
    direct = {result.id: _explainer(result, by_id, pending) for result in results}

    def root(check_id: str) -> str:
        seen = {check_id}
        while (up := direct.get(check_id)) is not None and up not in seen:
            seen.add(up)
            check_id = up
        return check_id

    best = sweep_rate(by_id)
    out = []
    for result in results:
        owner = result.explained_by or (root(result.id) if direct.get(result.id) else None)
        if owner is not None and result.explained_by is None:
            result = replace(result, explained_by=owner, fix=None, summary=without_reading(result.summary))
        if best is not None and isinstance(result.fix, RateFix) and not math.isclose(result.fix.rate, best):
            result = replace(result, fix=result.fix.with_rate(best))  # one rate, the sweep's, wherever one is named
        out.append(result)
    return out


def sweep_rate(by_id: dict[str, CheckResult]) -> float | None:
    """The rate the sweep recommends, when it ran and found one: the one rate every fix names."""
    sweep = by_id.get("hparams.lr_sweep")
    if sweep is None or sweep.status in (Status.SKIP, Status.ERROR):
        return None
    return (sweep.evidence or {}).get("best_rate")


def without_reading(summary):
    """A summary said without what its check read into the measurement (its `reading` value left empty)."""
    if isinstance(summary, Text) and READING in summary.params:
        return Text(summary.template, {**summary.params, READING: ""}, summary.plural)
    return summary


def causes(results: list[CheckResult]) -> list[Found]:
    """The causes of a report, worst first then in the walk's order: every warn, fail or error that no other check's
    cause explains, with the findings it explains (call on `explain`ed results); a cause whose owner has not run, named
    by the finding that points at it (`explain`'s pending pointer), is listed as pending at that owner, with the
    finding's sentence and no fix, so that neither the finding's check names another's cause nor the report reads
    clean."""
    walk = {check_id: index for index, check_id in enumerate(CHECKS)}
    found = []
    ran = {result.id for result in results}
    for owner in dict.fromkeys(result.explained_by for result in results if result.explained_by not in ran | {None}):
        pointing = [result for result in results if result.explained_by == owner]
        first = min(pointing, key=lambda result: SEVERITY[result.status])
        declared = next((cause for cause in CAUSES.values() if cause.owner == owner and any(
            _applies(explains, first) for explains in cause.explains)), None)
        found.append(Found(owner, declared.name if declared else None, first.status, first.summary, None,
                           tuple(result.id for result in pointing), declared.title if declared else None, True))
    for result in results:
        if result.explained_by is not None or result.status in (Status.PASS, Status.SKIP):
            continue
        declared = next((cause for cause in CAUSES.values()
                         if cause.owner == result.id and result.condition in cause.conditions), None)
        explained = tuple(other.id for other in results if other.explained_by == result.id)
        found.append(Found(result.id, declared.name if declared else result.condition, result.status, result.summary,
                           result.fix, explained, declared.title if declared else None))
    return sorted(found, key=lambda cause: (SEVERITY[cause.status], walk.get(cause.owner, len(walk))))


def owners(results: list[CheckResult]) -> set[str]:
    """The checks owning a cause among these (explained) results."""
    return {cause.owner for cause in causes(results)}


def worst_first(results: list[CheckResult], stage_order: tuple[str, ...]) -> list[CheckResult]:
    """Order results for a checklist: failing and warning checks first, then the findings they explain, then
    pipeline order."""
    position = {stage: index for index, stage in enumerate(stage_order)}
    walk = {check_id: index for index, check_id in enumerate(CHECKS)}  # within a stage, the walk's order
    return sorted(
        results,
        key=lambda result: (rank(result), position.get(result.stage, len(position)), walk.get(result.id, len(walk))),
    )
