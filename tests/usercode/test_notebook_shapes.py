"""The second generator's notebooks (tests/usercode/notebooks.py: the shapes of public Kaggle-era and tutorial
notebooks, none of them the matrix's), each traced in this process as the tracer's child would: a healthy notebook
traces clean (no fail, no warning, no error, a reason with every skip); a notebook with one injected bug names it
once, as a cause its owner holds, and nothing else fails or warns of its own. The default tier traces the notebooks
whose traces run the short checks alone; the full tier two healthy ones with the long runs, and the rate's bugs."""

from pathlib import Path

import pytest

from tests.usercode.here import trace_here
from tests.usercode.matrix.expect import LONG_RUNS, fits_of, not_passing
from tests.usercode.notebooks import BUGGED, BUGS, HEALTHY, Notebook, write_notebook

DATA = Path(__file__).resolve().parents[2] / "diagnostics" / "demo_data" / "sst2" / "train.jsonl"
LONG = (HEALTHY[0], HEALTHY[1])  # the long runs (learnability, the sweep, the range test, the overfit test) too
# The default tier: every notebook whose trace runs the short checks alone (a second or two each on the kit); the
# long runs and the rate's bugs (the sweep and the overfit test) are the full tier's.
DEFAULT_HEALTHY = tuple(shape for shape in HEALTHY if shape not in LONG)
DEFAULT_BUGGED = tuple(shape for shape in BUGGED if shape.bug != "rate")


def traced(shape: Notebook, tmp_path, *, stages=None, skip=None) -> dict:
    from diagnostics.keras.loading import demo_checkpoint_dir

    script = tmp_path / "train.py"
    script.write_text(write_notebook(shape))
    outcome = trace_here(script, [str(demo_checkpoint_dir()), str(DATA)], stages=stages, skip=skip, cwd=tmp_path)
    report = outcome.report
    assert report is not None, outcome.message
    script_part = report.get("script") or {}
    assert script_part.get("reached_fit"), script_part.get("error")
    return report


def tiered(shapes, default) -> list:
    return [pytest.param(shape, marks=() if shape in default else pytest.mark.slow, id=shape.name)
            for shape in shapes]


@pytest.mark.parametrize("shape", tiered(HEALTHY, DEFAULT_HEALTHY))
def test_a_healthy_notebook_traces_clean(shape, tmp_path):
    report = traced(shape, tmp_path, skip=None if shape in LONG else LONG_RUNS)
    problems = []
    for number, fit in enumerate(fits_of(report), 1):
        problems += [f"fit {number}: {status} {check}: {summary}" for check, (status, summary) in
                     not_passing(fit).items()]
        problems += [f"fit {number}: {check['id']} skipped without saying why" for check in fit.get("checks", [])
                     if check["status"] == "skip" and not check["summary"].strip()]
    assert problems == []
    assert (report.get("script") or {}).get("error") is None  # its own run after the checks raised nothing


@pytest.mark.parametrize("shape", tiered(BUGGED, DEFAULT_BUGGED))
def test_a_notebook_with_one_bug_names_it_once_by_its_owner(shape, tmp_path):
    owner = BUGS[shape.bug]
    if shape.bug == "rate":  # the sweep owns it; the overfit test at that rate must point at it
        report = traced(shape, tmp_path, stages="model,hparams,overfit")
    else:
        report = traced(shape, tmp_path, stages="data,model,hparams", skip=LONG_RUNS)
    fit = fits_of(report)[-1]
    owners = [cause.get("owner") or cause.get("check") for cause in fit.get("causes", [])]
    assert owners == [owner], [cause.get("summary") for cause in fit.get("causes", [])]
    explained = {check["id"] for check in fit["checks"] if check.get("explained_by") == owner}
    assert {check: status for check, (status, _) in not_passing(fit).items()
            if check != owner and check not in explained} == {}
    summaries = " ".join(check["summary"] for check in fit["checks"])
    assert " object at 0x" not in summaries  # a value the script wrote is shown as written, never as a repr
