"""The matrix of script shapes, healthy: each generated script (tests/usercode/matrix/shapes.py) traced as it is. A
healthy script passes clean: no fail, no error, no warning but the ones its shape truly earns
(`expect.true_findings`), a reason with every skip, nothing crashing. Every script runs the checks that read what it
built (the Data stage, the Model stage, the optimizer, loss and schedule); a few, drawn so that each value of each
axis that changes what they train is among them (`expect.with_long_runs`), run the long ones too (learnability, the
sweep with the range test, the overfit test). The default tier traces a few scripts that hold every axis value
between them (`expect.each_value_once`), with the short checks; the full tier traces every one."""

import pytest

from tests.usercode.matrix.expect import LONG_RUNS, each_value_once, problems_healthy, with_long_runs
from tests.usercode.matrix.fixtures import checkpoints, trace_shape  # noqa: F401  (fixtures)
from tests.usercode.matrix.shapes import all_pairs

SHAPES = all_pairs()
FULL = with_long_runs(SHAPES)
DEFAULT_TIER = each_value_once(SHAPES, FULL)


@pytest.mark.parametrize("shape", [pytest.param(shape, marks=() if shape in DEFAULT_TIER else pytest.mark.slow)
                                   for shape in SHAPES], ids=[shape.name for shape in SHAPES])
def test_a_healthy_script_of_each_shape_traces_clean(shape, trace_shape):  # noqa: F811
    skip = None if shape in FULL else LONG_RUNS
    assert problems_healthy(shape, trace_shape(shape, skip=skip)) == []
