"""Check results: the status of one check, its finding, evidence and fix, and the runner that never raises."""

from __future__ import annotations

import math
import traceback
import types
from dataclasses import asdict, dataclass, field
from enum import Enum
from typing import Any, Callable

import numpy as np

from diagnostics.core.check import Check
from diagnostics.core.budget import BudgetExceeded, check_deadline
from diagnostics.i18n import Text, from_data, joined, message_of, msg, to_data


class Status(str, Enum):
    PASS = "pass"
    WARN = "warn"
    FAIL = "fail"
    ERROR = "error"
    SKIP = "skip"


# Worst first: the order in which a checklist shows statuses.
SEVERITY = {Status.FAIL: 0, Status.ERROR: 1, Status.WARN: 2, Status.SKIP: 3, Status.PASS: 4}


@dataclass
class CheckResult:
    """What one check found.

    Attributes:
        id: stable "<stage>.<check>" identifier, part of the report format.
        stage: the pipeline stage ("data", "model", "hparams", "overfit").
        status: pass, warn, fail, error or skip.
        summary: one sentence a person can act on, with the number in it.
        fix: an action or code that fixes it; None when there is nothing to fix.
        evidence: JSON-serialisable data (row dicts, series) the page renders.
        condition: the registry condition whose rule gave the verdict (None: the check's `otherwise`, a skip or an
            error); causes are declared by condition (`Cause.conditions`).
        explained_by: the check that owns the cause explaining this finding (`causes.explain`): the finding keeps
            its evidence and points there instead of counting as a failure of its own; None when it stands alone.
    """

    id: str
    stage: str
    status: Status
    summary: str
    fix: str | None = None
    evidence: dict[str, Any] = field(default_factory=dict)
    condition: str | None = None
    explained_by: str | None = None

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "CheckResult":
        """A result read back from a JSON report (its sentences translatable again where the report carries them)."""
        sentences = data.get("sentences") or {}
        summary, fix = (from_data(sentences.get(name)) for name in ("summary", "fix"))
        return cls(data["id"], data["stage"], Status(data["status"]),
                   summary if str(summary) == data["summary"] else data["summary"],
                   fix if fix is not None and str(fix) == data.get("fix") else data.get("fix"),
                   data.get("evidence") or {}, data.get("condition"), data.get("explained_by"))

    def to_dict(self) -> dict[str, Any]:
        """The result as JSON: the finding and fix in English, and under "sentences" their templates and values,
        for translating them later."""
        data = asdict(self)
        data["status"] = self.status.value
        data["summary"], data["fix"] = str(self.summary), None if self.fix is None else str(self.fix)
        data["evidence"] = to_json(self.evidence)
        for name in ("condition", "explained_by"):
            if data[name] is None:
                del data[name]
        sentences = {name: to_data(value) for name, value in (("summary", self.summary), ("fix", self.fix))
                     if isinstance(value, Text)}
        if sentences:
            data["sentences"] = sentences
        return data


def to_json(value: Any) -> Any:
    """Turn numpy scalars/arrays and non-finite floats into plain JSON values (NaN and Inf become None)."""
    if isinstance(value, dict):
        return {str(key): to_json(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_json(item) for item in value]
    if isinstance(value, np.ndarray):
        return to_json(value.tolist())
    if isinstance(value, (np.bool_, bool)):
        return bool(value)
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (np.floating, float)):
        value = float(value)
        return value if math.isfinite(value) else None
    if isinstance(value, Enum):
        return value.value
    return value


def error_result(check_id: str, stage: str, exc: BaseException) -> CheckResult:
    """The result of a check that raised: the exception type and message on the page, the traceback in the
    evidence for the JSON report."""
    message = str(exc).strip().splitlines()[0] if str(exc).strip() else msg("(no message)")
    return CheckResult(
        id=check_id,
        stage=stage,
        status=Status.ERROR,
        summary=msg("The check itself failed with {error}: {message}", error=type(exc).__name__, message=message),
        evidence={
            "exception": type(exc).__name__,
            "message": str(exc)[:2000],
            "where": traceback.format_exception(exc)[-2].strip()[:500] if exc.__traceback__ else "",
            "traceback": "".join(traceback.format_exception(exc))[-8000:],
        },
    )


def run_check(check_id: str, stage: str, check: Callable[..., CheckResult], *args, reraise=(), **kwargs
              ) -> CheckResult:
    """Call one check; an exception becomes an `error` result carrying its type and message (but for the types in
    `reraise`), and a run past hosted mode's time budget a `skip` saying so."""
    try:
        check_deadline(f"before {check_id} could start")
        return check(*args, **kwargs)
    except reraise:
        raise
    except BudgetExceeded as exc:
        return skipped(check_id, stage, message_of(exc))
    except Exception as exc:  # a broken check must never blank the report
        return error_result(check_id, stage, exc)


def crossed(check: Check, evidence: dict) -> list[str]:
    """The names of a check's conditions whose rules the evidence crosses, in declared order."""
    values = check.values()
    return [condition.name for condition in check.conditions
            if condition.rule is not None and condition.rule(evidence, values[condition.name], values)]


def judge(check: Check, evidence: dict, **facts: Any) -> CheckResult:
    """A check's verdict from its conditions: the first whose rule the evidence crosses, in declared order, gives its
    status and says its (finding, fix); else a result of the check's declared `otherwise` status saying its
    `otherwise_says`. Each sentence is written only for the verdict given, from the evidence and `facts` (what the
    measurement names beside its evidence, read as attributes: `says(evidence, facts)`).

    A pass that only a threshold set for this run allows (`allowed_by_this_run`) says what that condition found, and
    the threshold that lets it pass, instead of the check's sentence for nothing found.
    """
    known = types.SimpleNamespace(**facts)
    first = next(iter(crossed(check, evidence)), None)
    if first is None:
        allowed = allowed_by_this_run(check, evidence) if check.otherwise == "pass" else []
        if allowed:
            summary = joined([within_threshold(check, name, check.condition(name).says(evidence, known)[0])
                              for name in allowed], " ")
            return CheckResult(check.id, check.stage, Status.PASS, summary, evidence=evidence)
        said = check.otherwise_says(evidence, known)
        summary, fix = said if isinstance(said, tuple) else (said, None)
        return CheckResult(check.id, check.stage, Status(check.otherwise), summary, fix=fix, evidence=evidence)
    condition = check.condition(first)
    summary, fix = condition.says(evidence, known)
    return CheckResult(check.id, check.stage, Status(condition.status), summary, fix=fix, evidence=evidence,
                       condition=first)


def allowed_by_this_run(check: Check, evidence: dict) -> list[str]:
    """The warn and fail conditions whose rules the evidence crosses at their declared thresholds but not at this
    run's own (`--threshold`, `thresholds=`): what the run chose to allow."""
    declared = {condition.name: condition.value for condition in check.conditions}
    values = check.values()
    return [condition.name for condition in check.conditions
            if condition.rule is not None and condition.status in ("warn", "fail") and condition.value is not None
            and values[condition.name] != condition.value
            and condition.rule(evidence, condition.value, declared)
            and not condition.rule(evidence, values[condition.name], values)]


def within_threshold(check: Check, name: str, finding) -> Text:
    """What a check says when its condition `name` found something that the threshold this run set
    (`--threshold`, `thresholds=`) allows: the finding, and the threshold that lets it pass."""
    return msg("{finding} It passes because this run sets {condition} to {limit:g} (--threshold; {default:g} by "
               "default).", finding=finding, condition=name, limit=check.value(name),
               default=check.condition(name).value)


# The condition of a skip that is not a verdict but a wait: the check runs only when asked for (`Unit.on_request`), or
# a trace ended before its turn, so nothing is known of what it would find; no report calls the pipeline clean while
# one stands.
NOT_RUN = "not_run"


def skipped(check_id: str, stage: str, reason: str, condition: str | None = None) -> CheckResult:
    """A check that could not run because something it needs is missing (`condition=NOT_RUN`: one that has not run
    yet, as it runs only when asked for or its turn did not come)."""
    return CheckResult(check_id, stage, Status.SKIP, reason, condition=condition)


def pending(results: list[CheckResult]) -> list[str]:
    """The checks among `results` that have not looked yet: skipped as not run yet (`NOT_RUN`), or pointing at an
    owner that has not run (`causes.explain`: a finding that is another check's cause, shown before that check runs)."""
    ran = {result.id for result in results}
    return list(dict.fromkeys(
        [result.id for result in results if result.status is Status.SKIP and result.condition == NOT_RUN]
        + [result.explained_by for result in results if result.explained_by and result.explained_by not in ran]))


def rank(result: CheckResult) -> float:
    """Where a result stands in a checklist: its status's severity; a finding another check's cause explains after
    the warnings and before the skips (its cause is counted once, at its owner)."""
    return 2.5 if result.explained_by is not None else SEVERITY[result.status]
