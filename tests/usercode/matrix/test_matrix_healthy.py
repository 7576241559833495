"""The matrix of script shapes, healthy: each generated script (tests/usercode/matrix/shapes.py) traced as it is,
every stage of checks on every fit it checks. A healthy script passes clean: no fail, no error, no warning but the
ones its shape truly earns (`expect.true_findings`), a reason with every skip, nothing crashing."""

import pytest

from tests.usercode.matrix.expect import problems_healthy
from tests.usercode.matrix.shapes import all_pairs

SHAPES = all_pairs()


@pytest.mark.parametrize("shape", SHAPES, ids=[shape.name for shape in SHAPES])
def test_a_healthy_script_of_each_shape_traces_clean(shape, trace_shape):
    assert problems_healthy(shape, trace_shape(shape)) == []
