"""What a person running the checks sees while they run: lines in a terminal (a few, not one a step), a
widget bar in a notebook with ipywidgets and one line rewritten in place without them, `diagnose()` saying what it
runs, and a traced script that says it still runs while it is silent."""

import io

import pytest

from diagnostics.core import progress as core_progress
from diagnostics.usercode import progress_bar
from diagnostics.usercode.progress_bar import shown_progress


def test_a_terminal_gets_a_line_at_most_every_few_seconds_with_the_time_left(monkeypatch):
    clock = [100.0]
    monkeypatch.setattr(core_progress.time, "monotonic", lambda: clock[0])
    lines = []
    with shown_progress("diagnose", notebook=False, write=lines.append) as report:
        report(0.0, "Checking data.columns", None)  # at once: work done within seconds says nothing
        clock[0] += 4
        report(0.1, "Training at learning rate 1.0e-05 (1 of 8)", None)
        clock[0] += 1
        report(0.2, "Training at learning rate 1.0e-05 (1 of 8)", 50.0)  # within the interval: not said
        clock[0] += 3
        report(0.3, "Training at learning rate 4.6e-05 (2 of 8)", 40.0)
    assert lines == ["diagnose: Training at learning rate 1.0e-05 (1 of 8) (10%)",
                     "diagnose: Training at learning rate 4.6e-05 (2 of 8) (30%, about 40 s left)"]


def test_a_notebook_with_widgets_gets_a_tqdm_bar_that_closes_whatever_happens(monkeypatch):
    import tqdm.notebook
    import tqdm.std

    made = []

    class Bar(tqdm.std.tqdm):  # tqdm.notebook's bar draws an ipywidgets widget; this one the same counts as text
        def __init__(self, *args, **kwargs):
            super().__init__(*args, file=io.StringIO(), **kwargs)
            made.append(self)

    monkeypatch.setattr(progress_bar, "widgets_available", lambda: True)
    monkeypatch.setattr(tqdm.notebook, "tqdm", Bar)
    with pytest.raises(KeyboardInterrupt):
        with shown_progress("diagnose", notebook=True) as report:
            report(0.25, "Training on the given labels (36 steps)", 60.0)
            raise KeyboardInterrupt
    bar = made[0]
    assert bar.n == 25 and "about 60 s left" in bar.postfix and bar.disable  # closed (a closed bar is disabled)


# The user's imports (Transformers' own tqdm.auto warns of the missing widgets as it is imported, in any notebook),
# then the cell that runs the checks.
IMPORTS_CELL = "from transformers import DataCollatorWithPadding"
NOTEBOOK_CELL = """
from diagnostics import diagnose
from diagnostics.config.run import RunConfig
from diagnostics.keras.data_files import load_split
from diagnostics.keras.loading import load_model, load_tokenizer

tokenizer, split = load_tokenizer("demo"), load_split(RunConfig())
tokenized = split.map(lambda rows: tokenizer(rows["premise"], rows["hypothesis"]), batched=True)
dataset = tokenized.to_tf_dataset(columns=["input_ids", "attention_mask", "label"], batch_size=16,
                                  collate_fn=DataCollatorWithPadding(tokenizer, return_tensors="np"))
report = diagnose(load_model("demo", 3), dataset, tokenizer, stages="model")
"""


@pytest.mark.slow  # full tier: starts a Jupyter kernel
@pytest.mark.subprocess
def test_a_notebook_without_widgets_gets_one_line_rewritten_in_place():
    """A real Jupyter kernel without ipywidgets (this environment has none): one progress output, updated in
    place, and no tqdm warning or stream of text bars on stderr."""
    import importlib.util

    import nbformat
    from nbclient import NotebookClient

    from conftest import ROOT

    assert importlib.util.find_spec("ipywidgets") is None
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(IMPORTS_CELL),
                                               nbformat.v4.new_code_cell(NOTEBOOK_CELL)])
    NotebookClient(notebook, timeout=600, kernel_name="python3",
                   resources={"metadata": {"path": str(ROOT)}}).execute()
    outputs = notebook.cells[1].outputs
    shown = [output for output in outputs if output.output_type == "display_data"
             and output.data.get("text/plain", "").startswith("diagnose: ")]
    assert len(shown) == 1, outputs
    assert "(" in shown[0].data["text/plain"] and shown[0].data["text/plain"].endswith(")")
    streams = "".join(output.get("text", "") for output in outputs if output.output_type == "stream")
    assert "TqdmWarning" not in streams and "%|" not in streams, streams[-2000:]


def test_diagnose_says_what_it_runs_on_stderr_outside_a_notebook(demo_inputs, demo_model, monkeypatch, capsys):
    from transformers import DataCollatorWithPadding

    from diagnostics import diagnose

    tokenizer, split = demo_inputs
    tokenized = split.map(lambda rows: tokenizer(rows["premise"], rows["hypothesis"]), batched=True)
    dataset = tokenized.to_tf_dataset(columns=["input_ids", "attention_mask", "label"], batch_size=16,
                                      collate_fn=DataCollatorWithPadding(tokenizer, return_tensors="np"))
    monkeypatch.setattr(progress_bar, "LINE_EVERY_S", 0.0)  # every report a line
    diagnose(demo_model, dataset, tokenizer, stages="model")
    said = capsys.readouterr().err
    assert "diagnose: Reading the model and the dataset (0%)" in said and "diagnose: Checking model.config" in said


@pytest.mark.slow  # full tier: waits out a silent script
@pytest.mark.subprocess
def test_a_traced_script_that_is_silent_is_said_to_still_run(tmp_path, monkeypatch):
    from diagnostics.usercode import trace
    from diagnostics.i18n import localize

    monkeypatch.setattr(trace, "QUIET_S", 1.0)
    script = tmp_path / "slow.py"
    script.write_text("import time\ntime.sleep(4)\n")
    said = []
    trace.trace_script(script, progress=said.append, timeout=60)
    lines = [localize(line) for line in said]
    assert lines[0] == "Running slow.py"
    quiet = [line for line in lines if line.startswith("Still running, nothing new for ")]
    assert quiet and all(line.endswith(" s: Running slow.py") for line in quiet), lines
    # Each notice counts from the child's last line, not from the notice before it.
    waits = [int(line.split("for ")[1].split(" s")[0]) for line in quiet]
    assert waits == sorted(waits) and waits[-1] >= 2, lines
