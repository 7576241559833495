"""The matrix of script shapes, each with one injected bug (drawn in turn from `shapes.BUGS`): the bug is named once,
as a cause its owner holds, and no other check fails or warns of its own (`expect.problems_bugged`)."""

import pytest

from tests.usercode.matrix.expect import BUG_CHECKS, problems_bugged
from tests.usercode.matrix.fixtures import checkpoints, trace_shape  # noqa: F401  (fixtures)
from tests.usercode.matrix.shapes import bugged

SHAPES = bugged()


@pytest.mark.parametrize("shape", SHAPES, ids=[shape.name for shape in SHAPES])
def test_a_script_with_one_bug_names_it_once_by_its_owner(shape, trace_shape):  # noqa: F811
    stages, skip = BUG_CHECKS[shape.bug]
    assert problems_bugged(shape, trace_shape(shape, stages=stages, skip=skip)) == []
