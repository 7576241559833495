"""Repair and re-check: a traced script's causes repaired in its code (`repair.repair_fits`), the repaired script
written where asked (never over the original) and traced again with the same options, and each cause's verdict
(`verdicts`, below). The command line's `trace --repair` and the Your script page both run this."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from diagnostics.core.errors import InputError
from diagnostics.i18n import msg
from diagnostics.usercode.repair import Repair
from diagnostics.usercode.repair_plan import repair_fits


@dataclass
class RepairRun:
    """What a repair did: the repaired source and its edits, where it was written (None when nothing changed), the
    trace of the repaired script (None when there was none), and each cause's verdict."""

    name: str
    original: str
    fixed: Repair
    written: Path | None
    after: Any  # trace.TraceOutcome, or None
    causes: list[dict]

    @property
    def diff(self) -> str:
        return self.fixed.diff(self.original, self.name, self.written.name if self.written else None) \
            if self.fixed.edits else ""

    def to_json(self) -> dict:
        """The JSON report's `repair`: the file, diff, edits, each cause's verdict and what the re-trace named."""
        from diagnostics.usercode.trace import fit_reports

        report = self.after.report if self.after is not None else None
        return {"file": str(self.written) if self.written else None, "diff": self.diff,
                "edits": [vars(edit) for edit in self.fixed.edits], "causes": self.causes,
                "retrace_causes": [[cause["owner"] for cause in fit.get("causes") or []]
                                   for fit in (fit_reports(report) if report is not None else [])]}


# The most traces one repair runs: each round repairs what the last trace named (a cause that stopped the script before
# fit, then what its fits name, then the rate the sweep could measure only once they were mended).
MAX_ROUNDS = 5


def checked(report: dict) -> list[dict]:
    """The parts of a trace report whose causes a repair reads: each checked fit, or, for a script that stopped before
    fit where the Data stage ran on the call that stopped it (a column it asked for), the report itself, at that
    call."""
    from diagnostics.usercode.trace import fit_reports

    script = report.get("script") or {}
    if script.get("reached_fit"):
        return fit_reports(report)
    error = script.get("error") or {}
    return [{**report, "phase": {"at": error.get("where")}}] if report.get("causes") else []


def planned(source: str, report: dict) -> Repair:
    """The repair of `source` for the causes of a trace `report` (each checked fit's, at the calls before it), and,
    for a script that stopped before fit on an error whose fix is code of its own (`repair_errors`), that error's."""
    from diagnostics.usercode.repair_errors import applied, error_repair

    script = report.get("script") or {}
    mended = error_repair(source, script["error"]) if script.get("error") else []  # before fit, or at a fit
    fixed = repair_fits(applied(source, mended), checked(report),
                        (report.get("run") or {}).get("keras_name") or "tf_keras")
    return Repair(fixed.source, mended + fixed.edits, fixed.unrepaired) if mended else fixed


def repair_and_trace(script: Path, report: dict, target: Path, *, source: str | None = None, name: str | None = None,
                     said=None, on_written=None, rounds: int = MAX_ROUNDS, **trace_options) -> RepairRun:
    """Repair the script a trace `report` came from (its `source` when given, else the file), write it to `target`
    and trace it with `trace_options` (`trace.trace_script`'s); while that trace names a cause with a repair not yet
    made, repair the repaired script again and trace it again, up to `rounds` traces, within the trace's time limit in
    all. `on_written(run, round)` hears each repair once written, before its trace (the run without its trace yet);
    `said(text)` each line of the traces.

    Raises:
        InputError: `target` is the script itself, or cannot be written.
    """
    import time

    from diagnostics.usercode.trace import trace_script

    if target.resolve() == script.resolve():
        raise InputError(msg("--repair would write over the script itself; give another path."))
    original = source if source is not None else script.read_text(encoding="utf-8")
    text, edits, after = original, [], None
    fixed = planned(text, report)
    started, limit = time.monotonic(), trace_options.get("timeout")
    for number in range(1, rounds + 1):
        if not fixed.edits or fixed.source == text:
            break
        if number > 1 and limit is not None and time.monotonic() - started > limit / 2:
            break  # half the time limit spent: the next trace would not fit in it
        text, edits = fixed.source, edits + fixed.edits
        target = write_repaired(target, text, made=number > 1)
        if on_written is not None:
            on_written(RepairRun(name or script.name, original, Repair(text, edits, fixed.unrepaired), target, None,
                                 []), number)
        after = trace_script(target, capture_output=True, progress=said, **trace_options)
        if after.report is None:
            break
        fixed = planned(text, after.report)
    made = Repair(text, edits, fixed.unrepaired)  # what the last plan could not repair
    done = RepairRun(name or script.name, original, made, target if edits else None, after, [])
    done.causes = verdicts(made, checked(report), after.report if after is not None else None)
    return done


# Names tried beside a taken one (train.repaired-2.py, ...) before the repair gives up with a message.
FREE_NAMES = 100


def write_repaired(target: Path, text: str, *, made: bool = False) -> Path:
    """Write the repaired script to `target`, or, where a file or a link of that name is there already, to the first
    free `STEM-2.py`, `STEM-3.py`...: created exclusively, never through a link and never over a file (a planted
    link beside a script turned another file into the repaired script, and an existing file was overwritten
    silently). `made`: `target` is this repair's own file from an earlier round, written again, still not through a
    link. Returns the path written.

    Raises:
        InputError: nothing could be written (its reason), or every name is taken.
    """
    import os

    follow = getattr(os, "O_NOFOLLOW", 0)
    candidates = [target] if made else [target, *(target.with_name(f"{target.stem}-{number}{target.suffix}")
                                                  for number in range(2, FREE_NAMES + 1))]
    for path in candidates:
        flags = os.O_WRONLY | follow | (os.O_TRUNC if made else os.O_CREAT | os.O_EXCL)
        try:
            handle = os.open(path, flags, 0o644)
        except FileExistsError:
            continue
        except OSError as exc:
            raise InputError(msg("Cannot write the repaired script to {path}: {reason}.", path=str(path),
                                 reason=exc.strerror or str(exc))) from None
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            file.write(text)
        return path
    raise InputError(msg("Cannot write the repaired script to {path}: {reason}.", path=str(target),
                         reason=msg("{count} names beside it are taken", count=FREE_NAMES)))


def verdicts(fixed: Repair, before: list[dict], after: dict | None) -> list[dict]:
    """Each cause of the original trace: "verified" (repaired, and the trace of the repaired script reached its fits
    and names neither it nor anything new; for an error that stopped the script, anything the checks name once they
    can run is not new), "not_verified" (repaired; what that trace named), "not_reached" (repaired;
    that trace stopped before fit) or "not_repairable" (why). `after`: the repaired script's trace report, None where
    it gave none."""
    reached = after is not None and after.get("script", {}).get("reached_fit") and not after["script"].get("error")
    fits_after = [after, *(after.get("later_fits") or [])] if reached else []  # trace.fit_reports, without its imports
    # What was named before, in the first trace or in a later round's that a repair then mended.
    owners_before = {cause["owner"] for fit in before for cause in fit.get("causes") or []} | {
        edit.owner for edit in fixed.edits}
    causes_after = [cause for fit in fits_after for cause in fit.get("causes") or []]
    owners_after = {cause["owner"] for cause in causes_after}
    # New: a cause neither named before nor explaining one that was (a measurement that now runs and takes over a
    # finding named before, the sweep owning the rate the optimizer's rule warned of, is the same cause).
    new = {cause["owner"] for cause in causes_after
           if cause["owner"] not in owners_before and not set(cause.get("explains") or ()) & owners_before}
    found = []
    script_after = (after or {}).get("script") or {}
    for owner in sorted({edit.owner for edit in fixed.edits}):
        # An error that stopped the script (or its fit) kept the checks from running: what they name once it is
        # mended was never seen before, so it does not unverify the mend; it is the repaired trace's own finding. It
        # is mended once the repaired script reaches fit without it, whatever else stops it there.
        unseen = new if not owner.startswith("error:") else set()
        past_it = owner.startswith("error:") and script_after.get("reached_fit") and (
            f"error:{(script_after.get('error') or {}).get('kind')}" != owner)
        state = "verified" if (reached or past_it) and owner not in owners_after and not unseen \
            else "not_verified" if reached else "not_reached"
        found.append({"owner": owner, "state": state,
                      "named_after": sorted(owners_after) if state == "not_verified" else []})
    repaired = {edit.owner for edit in fixed.edits}
    for item in fixed.unrepaired:
        if item.owner not in repaired:
            found.append({"owner": item.owner, "state": "not_repairable", "reason": item.reason})
    return found
