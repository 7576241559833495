"""The matrix of script shapes, each with one injected bug (drawn in turn from `shapes.BUGS`): the bug is named once,
as a cause its owner holds, and no other check fails or warns of its own (`expect.problems_bugged`); and the repair
of it (`trace --repair`'s) changes the script only where the bug was injected, or says why no code can repair it.
The default tier traces each bug once (`expect.each_bug_once`); the full tier every script."""

import difflib
from dataclasses import replace

import pytest

from tests.usercode.matrix.build import healthy_rate
from tests.usercode.matrix.expect import BUG_CHECKS, each_bug_once, problems_bugged
from tests.usercode.matrix.fixtures import checkpoints, trace_shape  # noqa: F401  (fixtures)
from tests.usercode.matrix.shapes import BUGS, bugged, write_script

SHAPES = bugged()
DEFAULT_TIER = each_bug_once(SHAPES)


def changed_lines(original: str, other: str) -> set[int]:
    """The original's line numbers (from 1) that `other` replaces or deletes, and those it inserts before."""
    found = set()
    for tag, i1, i2, _, _ in difflib.SequenceMatcher(a=original.splitlines(), b=other.splitlines(),
                                                     autojunk=False).get_opcodes():
        if tag != "equal":
            found.update(range(i1 + 1, max(i2, i1 + 1) + 1))
    return found


def repair_problems(shape, report: dict, source: str) -> list[str]:
    """What is wrong with the repair of a bugged script: an edit where no bug was (the lines where the script differs
    from the same shape without the bug), a repaired script that is not Python, a stray label rewritten in code."""
    from diagnostics.usercode.repair_run import planned

    fixed = planned(source, report)
    owner = BUGS[shape.bug]
    if shape.bug == "stray_label":
        return [] if not fixed.edits and owner in {item.owner for item in fixed.unrepaired} else \
            [f"a stray label is the data's, not code to rewrite: edits {fixed.edits}"]
    problems = [] if any(edit.owner == owner for edit in fixed.edits) else \
        [f"no edit for {owner}: {fixed.edits}, unrepaired {fixed.unrepaired}"]
    healthy = write_script(replace(shape, bug=None), rate=healthy_rate(shape))
    allowed = changed_lines(source, healthy)
    problems += [f"line {line} changed where no bug was: {before!r} -> {after!r}"
                 for line, before, _, after in fixed.places(source) if line not in allowed]
    try:
        compile(fixed.source, "train.repaired.py", "exec")
    except SyntaxError as exc:
        problems.append(f"the repaired script is not Python: {exc}")
    return problems


@pytest.mark.parametrize("shape", [pytest.param(shape, marks=() if shape in DEFAULT_TIER else pytest.mark.slow)
                                   for shape in SHAPES], ids=[shape.name for shape in SHAPES])
def test_a_script_with_one_bug_names_it_once_by_its_owner_and_its_repair_changes_only_the_bug(
        shape, trace_shape, tmp_path):  # noqa: F811
    stages, skip = BUG_CHECKS[shape.bug]
    outcome = trace_shape(shape, stages=stages, skip=skip)
    assert problems_bugged(shape, outcome) == []
    assert repair_problems(shape, outcome["report"], (tmp_path / shape.name / "train.py").read_text()) == []
