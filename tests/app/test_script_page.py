"""The Your script page (AppTest): tracing the course's script from the app and showing its results on the walk's
pages and in the Report; absent in hosted mode."""

import pytest
from streamlit.testing.v1 import AppTest

from conftest import ROOT, rendered
from diagnostics.config import limits

APP = str(ROOT / "app.py")
PAGE = "app_pages/script.py"


def test_hosted_mode_offers_no_script_and_says_how_to_run_one_locally(monkeypatch):
    monkeypatch.setenv(limits.HOSTED_ENV, "1")
    at = AppTest.from_file(APP, default_timeout=120).run()
    at.switch_page(PAGE).run()
    assert not at.exception
    assert [button for button in at.button if button.key == "script.run"] == []
    assert not [widget for widget in list(at.radio) + list(at.text_area) if (widget.key or "").startswith("script.")]
    assert any(
        "never runs code" in rendered(info.value) and "python -m diagnostics trace" in rendered(info.value)
        for info in at.info
    )


@pytest.mark.subprocess
def test_tracing_the_course_script_fills_the_walk_and_the_report(monkeypatch):
    monkeypatch.delenv(limits.HOSTED_ENV, raising=False)
    at = AppTest.from_file(APP, default_timeout=300).run()
    at.switch_page(PAGE).run()
    assert at.radio(key="script.source").value == "course"
    at.button(key="script.run").click().run()
    assert not at.exception
    assert any("stopped before fit at course_script.py:" in rendered(error.value) for error in at.error)
    assert any("DataCollatorWithPadding" in code.value for code in at.code)
    # The sidebar, drawn before the page, names the script just traced in the same click.
    assert any("traced script **course_script.py**" in rendered(info.value) for info in at.sidebar.info)
    at.switch_page("app_pages/1_data.py").run()
    assert not at.exception
    assert any("traced from your script **course_script.py**" in rendered(info.value) for info in at.info)
    assert any("`data.columns`" in rendered(md.value) and "asks for labels" in rendered(md.value) for md in at.markdown)
    at.switch_page("app_pages/report.py").run()
    assert not at.exception
    assert any(
        "`model.config`" in rendered(md.value) and "stopped before fit" in rendered(md.value) for md in at.markdown
    )
    at.switch_page("app_pages/2_model.py").run()
    at.sidebar.button(key="script.back").click().run()  # back to the sidebar's own pipeline
    assert not any("traced from your script" in rendered(info.value) for info in at.info)


def test_a_path_that_is_not_a_file_is_a_message_and_keeps_the_input(monkeypatch):
    monkeypatch.delenv(limits.HOSTED_ENV, raising=False)
    at = AppTest.from_file(APP, default_timeout=120).run()
    at.switch_page(PAGE).run()
    at.radio(key="script.source").set_value("path").run()
    at.text_input(key="script.path").input("/no/such/train.py").run()
    assert any("No file at /no/such/train.py" in rendered(error.value) for error in at.error)
    assert at.text_input(key="script.path").value == "/no/such/train.py"
    assert at.button(key="script.run").disabled


def test_the_pages_inputs_outlast_a_visit_to_another_page(monkeypatch):
    monkeypatch.delenv(limits.HOSTED_ENV, raising=False)
    at = AppTest.from_file(APP, default_timeout=120).run()
    at.switch_page(PAGE).run()
    at.radio(key="script.source").set_value("paste").run()
    at.text_area(key="script.paste").set_value("print('hello')").run()
    at.text_input(key="script.args").set_value("--epochs 1").run()
    at.selectbox(key="script.task").set_value("rte").run()
    at.switch_page("app_pages/2_model.py").run()
    at.switch_page(PAGE).run()
    assert not at.exception
    assert at.radio(key="script.source").value == "paste"
    assert at.text_area(key="script.paste").value == "print('hello')"
    assert at.text_input(key="script.args").value == "--epochs 1"
    assert at.selectbox(key="script.task").value == "rte"


@pytest.mark.slow  # full tier: a second trace from the page
@pytest.mark.subprocess
def test_the_task_chosen_on_the_page_is_the_one_the_trace_judges_against(monkeypatch, tmp_path):
    import csv
    import json

    from diagnostics.keras.loading import demo_checkpoint_dir
    from ui.script import FOUND

    monkeypatch.delenv(limits.HOSTED_ENV, raising=False)
    rows = [json.loads(line) for line in (ROOT / "diagnostics" / "demo_data" / "rte" / "train.jsonl").read_text()
            .splitlines()]
    with open(tmp_path / "train.csv", "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=["sentence1", "sentence2", "label"])
        writer.writeheader()
        writer.writerows({key: row[key] for key in ("sentence1", "sentence2", "label")} for row in rows)
    at = AppTest.from_file(APP, default_timeout=300).run()
    at.switch_page(PAGE).run()
    assert at.selectbox(key="script.task").value == FOUND
    at.radio(key="script.source").set_value("path").run()
    at.text_input(key="script.path").input(str(ROOT / "tests" / "scripts" / "glue_classifier.py")).run()
    at.text_input(key="script.args").input(f"--model_name_or_path {demo_checkpoint_dir()} --train_file train.csv "
                                           "--output_dir out --learning_rate 3e-3").run()
    at.text_input(key="script.workdir").input(str(tmp_path)).run()
    at.multiselect(key="script.stages").set_value(["data"]).run()
    at.selectbox(key="script.task").set_value("rte").run()
    at.button(key="script.run").click().run()
    assert not at.exception
    report = at.session_state["script.traced"]["report"]
    assert (report["run"]["task"], report["run"]["task_candidates"]) == ("rte", [])
    assert "entailment" in next(check["summary"] for check in report["checks"] if check["id"] == "data.label_balance")


@pytest.mark.parametrize(
    "name, kept",
    [
        ("../../evil.py", "evil.py"),
        ("/etc/cron.d/x.py", "x.py"),
        ("a\x00b.py", "ab.py"),
        ("..\\..\\win.py", "win.py"),
        ("", "uploaded_script.py"),
        ("..", "uploaded_script.py"),
        ("train", "train.py"),
        (".hidden.py", "hidden.py"),
    ],
)
def test_an_uploaded_scripts_name_is_only_a_base_name(tmp_path, name, kept):
    from ui.script import script_file_name

    assert script_file_name(name) == kept
    (tmp_path / script_file_name(name)).write_text("print(1)\n")  # lands inside the folder, whatever the name
    assert [path.name for path in tmp_path.iterdir()] == [kept]


def test_an_uploaded_data_files_name_is_only_a_base_name(tmp_path):
    from diagnostics.keras.data_files import keep_upload

    path = keep_upload("../../x\x00.csv", b"premise,hypothesis,label\na,b,0\n", root=tmp_path)
    assert path.name == "x.csv" and path.resolve().is_relative_to(tmp_path.resolve())


@pytest.mark.slow  # full tier: a trace of two fits
@pytest.mark.subprocess
def test_tracing_a_two_fit_script_shows_each_fit_with_what_it_trains(monkeypatch):
    from diagnostics.keras.loading import demo_checkpoint_dir

    monkeypatch.delenv(limits.HOSTED_ENV, raising=False)
    at = AppTest.from_file(APP, default_timeout=300).run()
    at.switch_page(PAGE).run()
    at.radio(key="script.source").set_value("path").run()
    at.text_input(key="script.path").set_value(str(ROOT / "tests" / "scripts" / "freeze_then_fine_tune.py")).run()
    at.text_input(key="script.args").set_value(
        f"{demo_checkpoint_dir()} {ROOT / 'tests' / 'data' / 'mrpc' / 'validation.tsv'}").run()
    at.multiselect(key="script.stages").set_value(["data", "model"]).run()
    at.button(key="script.run").click().run()
    assert not at.exception
    headings = [rendered(md.value) for md in at.markdown if md.value.startswith("#### ")]
    assert len(headings) == 2, headings
    assert "fit 1 at freeze_then_fine_tune.py:" in headings[0] and "trains the head only" in headings[0]
    assert "fit 2 at freeze_then_fine_tune.py:" in headings[1] and "trains the encoder and the head" in headings[1]
    assert any("reached fit 2 times" in rendered(item.value) for item in list(at.success) + list(at.error))
    at.switch_page("app_pages/2_model.py").run()
    assert any("the first of 2 checked fits" in rendered(info.value) for info in at.info)


@pytest.mark.subprocess
def test_a_trace_that_reached_fit_shows_each_edit_beside_its_line_and_offers_the_repair(monkeypatch):
    """The repair's plan on the page after one trace (the Data and Model stages): the original line and beside it the
    line with the head the labels need, and the button that repairs and traces again (pressed in the test below, the
    full tier's)."""
    from diagnostics.usercode.course_scripts import COURSE_SCRIPTS

    monkeypatch.delenv(limits.HOSTED_ENV, raising=False)
    folder = COURSE_SCRIPTS["course_script_repaired"].path.parent
    before = sorted(path.name for path in folder.iterdir())
    at = AppTest.from_file(APP, default_timeout=300).run()
    at.switch_page(PAGE).run()
    at.selectbox(key="script.course").set_value("course_script_repaired").run()
    at.multiselect(key="script.stages").set_value(["data", "model"]).run()
    at.button(key="script.run").click().run()
    assert not at.exception
    codes = [code.value for code in at.code]
    assert any("from_pretrained(" in codes[i] and "num_labels" not in codes[i] and "num_labels=3" in codes[i + 1]
               for i in range(len(codes) - 1)), codes
    assert any(button.key == "script.repair" for button in at.button)
    assert sorted(path.name for path in folder.iterdir()) == before


@pytest.mark.slow  # full tier: traces twice
@pytest.mark.subprocess
def test_repair_and_recheck_shows_the_edits_side_by_side_verifies_them_and_leaves_the_course_script_alone(monkeypatch):
    """The course script with its first error repaired reaches fit with a head too small and a loss that reads
    logits as probabilities: the page shows each edit beside the original line, and Repair and re-check traces the
    repaired script, says each repaired cause is verified, shows the checklist before and after and offers the
    repaired script; nothing is left beside the course's script."""
    from diagnostics.usercode.course_scripts import COURSE_SCRIPTS

    monkeypatch.delenv(limits.HOSTED_ENV, raising=False)
    folder = COURSE_SCRIPTS["course_script_repaired"].path.parent
    before = sorted(path.name for path in folder.iterdir())
    at = AppTest.from_file(APP, default_timeout=400).run()
    at.switch_page(PAGE).run()
    at.selectbox(key="script.course").set_value("course_script_repaired").run()
    at.multiselect(key="script.stages").set_value(["data", "model", "hparams"]).run()
    at.button(key="script.run").click().run()
    assert not at.exception
    codes = [code.value for code in at.code]
    pairs = [(codes[i], codes[i + 1]) for i in range(len(codes) - 1) if "from_pretrained(" in codes[i]
             and "num_labels=3" in codes[i + 1] and "num_labels" not in codes[i]]
    assert pairs, codes  # the original line, and beside it the same line with the head the labels need
    assert any(button.key == "script.repair" for button in at.button)
    # The checks the small head stops, for one same reason, share one card.
    stopped = [rendered(md.value) for md in at.markdown if "`hparams.lr_sweep`" in rendered(md.value)]
    assert any("`hparams.lr_sweep`, `hparams.lr_range_test`" in text for text in stopped), stopped
    at.button(key="script.repair").click().run()
    assert not at.exception
    verified = [rendered(box.value) for box in at.success]
    assert any(text.startswith("model.config: repaired and verified") for text in verified), verified
    assert any(text.startswith("hparams.loss: repaired and verified") for text in verified), verified
    # The same click's second round: the sweep, no longer stopped by the head, measured a rate, written into 'adam'.
    assert any(text.startswith("hparams.optimizer: repaired and verified") for text in verified), verified
    # The preview above showed the first round's edits: the page says the rest came from later rounds.
    assert repaired_rounds(at) == at.session_state["script.repaired"]["rounds"] >= 2
    assert any("Before" in rendered(md.value) for md in at.markdown) and any("After" in rendered(md.value)
                                                                              for md in at.markdown)
    assert [element.proto.label for element in at.get("download_button")] == ["Download the repaired script"]
    repaired = at.session_state["script.repaired"]
    assert repaired["name"] == "course_script_repaired.repaired.py" and "num_labels=3" in repaired["source"]
    assert "optimizers.Adam(learning_rate=" in repaired["source"]
    # The next round: the repaired script is the traced one, its results on the walk's pages.
    at.button(key="script.repair.continue").click().run()
    assert not at.exception
    traced = at.session_state["script.traced"]
    assert traced["name"] == "course_script_repaired.repaired.py" and traced["source"] == repaired["source"]
    assert any("Traced: course_script_repaired.repaired.py" in rendered(header.value) for header in at.subheader)
    # All green: nothing left to repair, no repair box waiting on a rate, and the Report names no cause.
    assert not any(button.key == "script.repair" for button in at.button)
    assert not any("which it did not in this trace" in rendered(box.value) for box in at.info)
    at.switch_page("app_pages/report.py").run()
    assert not at.exception
    assert any(rendered(header.value).startswith("No cause found") for header in at.subheader), [
        rendered(header.value) for header in at.subheader]
    assert sorted(path.name for path in folder.iterdir()) == before


def repaired_rounds(at) -> int:
    """The rounds the page says the repair took (0 when it says none)."""
    import re

    said = [re.search(r"The repair took (\d+) rounds", rendered(box.value)) for box in at.info]
    return next((int(found.group(1)) for found in said if found), 0)
