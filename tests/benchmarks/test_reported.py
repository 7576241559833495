"""The benchmark of reported bugs (benchmarks/reported): its cases are well formed (a fixed script differs from its
case only where marked), its verdicts are judged again from the recorded trace reports and match the kept score,
the committed table is the one the kept results write, and a case runs and is traced on the demo kit."""

import difflib
import json

import pytest

from benchmarks.reported import RESULTS, Case, cases
from benchmarks.reported.__main__ import README, SCORE, TRUTH, headline, kept, table, with_headline
from benchmarks.reported.score import REPORTS, judge
from benchmarks.reported.truth import plain_run, training_bug

CASES = cases()


def code(text: str) -> list[str]:
    """A script's lines after its docstring."""
    return text.split('"""', 2)[2].splitlines()


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.slug)
def test_a_fixed_script_differs_from_its_case_only_where_marked(case: Case):
    buggy, fixed = code(case.script().read_text()), code(case.script(fixed=True).read_text())
    changed = [fixed[j1:j2] for tag, _, _, j1, j2 in difflib.SequenceMatcher(a=buggy, b=fixed).get_opcodes()
               if tag != "equal"]
    assert changed, "the fixed script is the case itself"
    assert all(any("# fix" in line for line in lines) for lines in changed), changed
    assert case.source.startswith("https://") and case.fix and case.fix_source and case.symptom


def test_the_verdicts_judged_again_from_the_recorded_reports_are_the_kept_ones():
    score = kept(SCORE)
    assert set(score) <= {case.slug for case in CASES}
    for case in CASES:
        if case.slug not in score:
            continue
        recorded = json.loads((REPORTS / f"{case.slug}.json").read_text())
        again = judge(case, recorded["buggy"], recorded["fixed"], recorded["repaired_run"], recorded["fixed_truth"])
        assert {key: again[key] for key in again} == {key: score[case.slug][key] for key in again}, case.slug


def test_the_committed_table_is_the_one_the_kept_results_write():
    assert (RESULTS.parent / "CASES.md").read_text() == table(CASES, kept(TRUTH), kept(SCORE))
    readme = README.read_text()  # the README's headline rates are written with the table
    assert readme == with_headline(readme, headline(CASES, kept(TRUTH), kept(SCORE)))


def test_a_bug_is_one_its_fix_measurably_mends():
    fixed = {"accuracy": 0.85, "majority": 0.58}
    assert training_bug({"accuracy": 0.58, "majority": 0.58}, fixed)
    assert training_bug({"error": "ValueError: ..."}, fixed)  # stopped before it trained
    assert not training_bug({"accuracy": 0.83, "majority": 0.58}, fixed)  # within the margin: no measured bug
    assert training_bug({"error": "x"}, {"accuracy": 0.31, "majority": 0.39})  # the error mended, learning or not
    assert not training_bug({"accuracy": 0.57, "majority": 0.58}, {"accuracy": 0.60, "majority": 0.58})  # nor it
    assert not training_bug({"error": "x"}, {"error": "y"})


def test_a_case_stopped_before_fit_runs_and_is_named_by_its_owner_on_the_kit(tmp_path):
    """The tutorial's `dataset["text"]` (transformers PR #21201) on the demo kit: the plain run stops on the error
    its report is about, the fixed one runs, and the trace names the missing column with the accepted fix."""
    from diagnostics.keras.loading import demo_checkpoint_dir
    from benchmarks.reported.score import slim, traced

    case = next(case for case in CASES if case.slug == "transformers-21201-text-column")
    arguments = case.arguments(demo_checkpoint_dir())
    buggy = plain_run(case.script(), arguments, timeout=300)
    assert buggy["exit"] != 0 and "Column 'text' doesn't exist" in buggy["error"]
    report = slim(traced(case.script(), arguments, tmp_path, timeout=300))
    verdict = judge(case, report, {"checks": [], "causes": [], "script": {"reached_fit": True}}, None, None)
    assert verdict["detected"] and verdict["named_right"] and verdict["one_voice"], report
    assert report["script"]["error"]["fix"] == 'tokenized_data = tokenizer(list(dataset["sentence"]), ' \
                                               'return_tensors="np", padding=True)'
