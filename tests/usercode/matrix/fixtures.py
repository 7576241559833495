"""The matrix's fixtures, imported by its test modules (a conftest.py here would shadow tests/conftest.py for the
other modules' `from conftest import ...`): the two kit checkpoints its scripts load, and a tracer that runs one
script in this process (`trace_child.run_in_process`), as the tracer's child would."""

from pathlib import Path

import pytest

from tests.usercode.matrix import build


@pytest.fixture(scope="session")
def checkpoints(tmp_path_factory) -> tuple[Path, Path]:
    """(the demo kit's DistilBERT, a BERT of the same size and vocabulary): both judged by the kit's rules."""
    from diagnostics.keras.loading import demo_checkpoint_dir

    return demo_checkpoint_dir(), build.kit_bert(tmp_path_factory.mktemp("kit-bert"))


@pytest.fixture
def trace_shape(checkpoints, tmp_path):
    """Write a shape's script and trace it here: its report, or what went wrong (`build.outcome`)."""
    def trace(shape, *, stages=None, skip=None):
        kit, bert = checkpoints
        build.prepare(tmp_path, [shape], kit=kit, bert=bert, stages=stages, skip=skip)
        build.trace_here(tmp_path, shape.name)
        return build.outcome(tmp_path, shape.name)
    return trace
