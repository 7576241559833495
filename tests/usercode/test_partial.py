"""A trace its time limit stops while the checks run keeps the checks it finished: the child writes its report after
each unit of the walk, with the checks still to come marked as not reached, and the parent reads the last one."""

import pytest

from conftest import ROOT, checks_of_units

SCRIPT = ROOT / "diagnostics" / "demo_data" / "scripts" / "course_script_fixed.py"


class Stopped(BaseException):
    """Where the parent ends the child at its time limit (nothing of the child's runs after it)."""


def test_runner_says_what_it_finished_after_each_unit_and_what_is_still_to_run():
    from diagnostics.config.run import RunConfig
    from diagnostics.core.context import RunContext
    from diagnostics.walk.runner import run_units

    heard = []
    run = RunContext.open(RunConfig(checkpoint="demo"))
    results = run_units(run, ["data", "labels", "model"], finished=lambda done, pending: heard.append(
        ([result.id for result in done], list(pending))))
    assert [pending for _, pending in heard] == [["labels", "model"], ["model"]]
    assert "data.batch" in heard[0][0] and "data.label_range" not in heard[0][0]
    assert "data.label_range" in heard[1][0] and not any(check.startswith("model.") for check in heard[1][0])
    assert {result.id for result in results} >= set(heard[1][0])


def test_a_trace_stopped_while_its_checks_run_keeps_those_it_finished(tmp_path, monkeypatch):
    from diagnostics.usercode import trace_report
    from diagnostics.usercode.trace import _judged, _read_report
    from diagnostics.usercode.trace_child import run_in_process

    written = trace_report.Reports.write_partial

    def then_stopped(self, phase, report, notes):
        written(self, phase, report, notes)
        checks = {check["id"]: check for check in report["checks"]}
        if not checks["hparams.optimizer"]["summary"].startswith("Not reached"):
            raise Stopped  # the limit comes once the setup checks are done, before the sweep

    monkeypatch.setattr(trace_report.Reports, "write_partial", then_stopped)
    spec = {"script": str(SCRIPT), "args": [], "stages": None, "skip": "data.learnability", "asked": None,
            "tokenizer": None, "task": None, "then_train": False, "parent": 0,
            "report": str(tmp_path / "report.json"), "progress": str(tmp_path / "progress.txt")}
    monkeypatch.chdir(tmp_path)
    with pytest.raises(Stopped):
        run_in_process(spec)
    outcome = _judged(SCRIPT.name, _read_report(tmp_path / "report.json"), timed_out=True, timeout=60, status=None,
                      output="", seen=[])
    assert "It was stopped after 60 s: these are the checks it finished." in outcome.message
    checks = {check["id"]: check for check in outcome.report["checks"]}
    for check_id in ("data.batch", "data.label_range", "model.forward", "model.gradients", "hparams.optimizer"):
        assert checks[check_id]["status"] == "pass", (check_id, checks[check_id]["summary"])
    for check_id in checks_of_units("training", "overfit"):
        assert checks[check_id]["status"] == "skip"
        assert checks[check_id]["summary"].startswith("Not reached: the trace ended before this check's turn")
    assert outcome.report["script"]["reached_fit"] and outcome.report["causes"] == []
