"""The app and its pages, offline, through Streamlit's AppTest."""

import pytest
from streamlit.testing.v1 import AppTest

from conftest import ROOT, rendered

APP = str(ROOT / "app.py")
TIMEOUT = 120  # importing TensorFlow alone takes seconds


@pytest.fixture
def app():
    return AppTest.from_file(APP, default_timeout=TIMEOUT).run()


def texts(at) -> str:
    return "\n".join(
        rendered(element.value) for element in list(at.markdown) + list(at.caption) + list(at.error) + list(at.info)
    )


def test_app_opens_offline_on_the_demo_kit(app):
    assert not app.exception
    assert app.text_input(key="run.checkpoint").value == "demo"
    assert "Offline" in "\n".join(rendered(info.value) for info in app.sidebar.info)


def test_data_page_shows_decoded_table_and_checks(app):
    assert not app.exception
    table = app.dataframe[0].value
    assert {"decoded", "label_name"} <= set(table.columns)
    assert table["decoded"].str.startswith("[CLS]").all()
    assert "`data.label_range`" in texts(app)
    assert len(app.get("plotly_chart")) == 2


def test_data_page_flags_num_labels_two_on_mnli_as_model_configs_cause_pending_until_it_runs(app):
    app.number_input(key="run.num_labels").set_value(2).run()
    assert not app.exception
    # The head is model.config's cause: from the first page on, the finding points there, with no fix of its own.
    # Its card waits on model.config (PENDING), counted once in the header: 7 PASS, it and learnability's button
    # (the header once counted model.config, a card of no page here, beside the card pointing at it: 10 over 9).
    assert "PENDING] `data.label_range`" in texts(app) and "FAIL] `data.label_range`" not in texts(app)
    assert "num_labels=3" not in "\n".join(block.value for block in app.get("code"))
    assert "PASS] 7  " in texts(app) and "PENDING] 2" in texts(app) and "SEE] 1" not in texts(app)
    assert "PENDING] `data.learnability`" in texts(app)  # its button's note carries the mark the header counts
    app.switch_page("app_pages/2_model.py").run()
    app.switch_page("app_pages/1_data.py").run()
    assert not app.exception  # model.config has run, on its own page: the card points at it, learnability waits
    assert "SEE] `data.label_range`" in texts(app) and "SEE] 1  " in texts(app) and "PENDING] 1" in texts(app)


def test_data_page_test_split_flags_minus_one(app):
    app.selectbox(key="run.split").set_value("test_matched").run()
    assert "-1 x64" in texts(app)


def test_bad_checkpoint_gives_a_message_and_keeps_the_sidebar(app):
    app.number_input(key="run.batch_size").set_value(8).run()
    app.text_input(key="run.checkpoint").set_value("/no/such/checkpoint").run()
    assert not app.exception
    assert "does not exist" in texts(app)
    assert app.number_input(key="run.batch_size").value == 8
    app.text_input(key="run.checkpoint").set_value("demo").run()
    assert not app.error and app.dataframe


def test_untouched_settings_follow_the_checkpoint_and_set_ones_stay(app, bert_checkpoint):
    assert app.text_input(key="run.learning_rate").value == "0.003"
    app.text_input(key="run.checkpoint").set_value(str(bert_checkpoint)).run()
    assert app.text_input(key="run.learning_rate").value == "5e-05"  # a pretrained model's rate, not the kit's
    banner = "\n".join(rendered(info.value) for info in app.sidebar.info)
    assert "Offline" in banner and "demo kit" not in banner
    app.text_input(key="run.learning_rate").set_value("2e-5").run()
    app.text_input(key="run.checkpoint").set_value("demo").run()
    assert app.text_input(key="run.learning_rate").value == "2e-5"  # the user's own rate stays
    assert "demo kit" in "\n".join(rendered(info.value) for info in app.sidebar.info)
    assert not app.exception


def test_with_the_hub_reachable_the_demo_checkpoint_still_gets_the_kit(monkeypatch):
    from diagnostics.keras import loading
    from ui import caches

    monkeypatch.setattr(loading, "hub_reachable", lambda timeout=3.0: True)
    caches.hub_reachable.clear()
    try:
        at = AppTest.from_file(APP, default_timeout=TIMEOUT).run()
        assert at.text_input(key="run.checkpoint").value == "distilbert-base-uncased"
        assert (at.radio(key="run.data_source").value, at.text_input(key="run.learning_rate").value) == ("hub", "5e-05")
        assert not at.sidebar.info  # no offline banner
        assert not at.exception  # the Hub checkpoint cannot load here (HF_HUB_OFFLINE): a message, not a crash
        at.text_input(key="run.checkpoint").set_value("demo").run()
        assert (at.radio(key="run.data_source").value, at.text_input(key="run.learning_rate").value) == (
            "demo",
            "0.003",
        )
        assert at.dataframe and not at.exception
    finally:
        caches.hub_reachable.clear()


def test_missing_data_file_gives_a_message(app, tmp_path):
    app.radio(key="run.data_source").set_value("files").run()
    app.text_area(key="run.data_files").set_value(f"train={tmp_path / 'missing.csv'}").run()
    assert not app.exception
    assert "does not exist" in texts(app)


def test_a_local_data_file_edited_since_is_read_again_at_the_next_run(app, tmp_path):
    """The split was kept by its path alone: after the user edited the file, a reload and Compute again both showed
    the old contents' passing results. Kept by path, size and modification time, the edit is read at once."""
    path = tmp_path / "train.csv"
    path.write_text("sentence,label\n" + "".join(f"a fine film number {i},{i % 2}\n" for i in range(40)))
    app.selectbox(key="run.task").set_value("sst2").run()
    app.radio(key="run.data_source").set_value("files").run()
    app.text_area(key="run.data_files").set_value(f"train={path}").run()
    assert not app.exception and "40 rows" in texts(app), texts(app)[:2000]
    path.write_text(path.read_text() + "".join(f"one more film {i},7\n" for i in range(5)))  # 5 stray labels
    app.run()
    assert not app.exception and "45 rows" in texts(app) and "40 rows" not in texts(app)
    assert "data.label_range" in texts(app) and "5 of 45" in texts(app), texts(app)[:3000]


def test_configuration_survives_a_rerun(app):
    app.selectbox(key="run.task").set_value("sst2").run()
    app.run()
    assert app.selectbox(key="run.task").value == "sst2"
    assert app.selectbox(key="run.split").value == "train"
    assert set(app.dataframe[0].value["label_name"]) <= {"negative", "positive"}


def test_model_page_runs_clean_on_the_demo_kit(app):
    app.switch_page("app_pages/2_model.py").run()
    assert not app.exception
    assert "PASS] `model.gradients`" in texts(app)
    assert len(app.get("plotly_chart")) == 2


def test_model_page_shows_the_nan_drilldown_for_num_labels_two(app):
    app.switch_page("app_pages/2_model.py").run()
    app.number_input(key="run.num_labels").set_value(2).run()
    assert not app.exception
    assert "every one has a label >= num_labels" in texts(app)
    drilldown = app.dataframe[0].value
    assert set(drilldown["label"]) == {2}
    assert drilldown["decoded"].str.startswith("[CLS]").all()


def test_bad_learning_rate_gives_a_message_and_keeps_the_rest(app):
    app.number_input(key="run.batch_size").set_value(8).run()
    app.text_input(key="run.learning_rate").set_value("-1").run()
    assert not app.exception
    assert "learning rate must be a positive number" in texts(app)
    assert app.number_input(key="run.batch_size").value == 8


def test_hyperparameters_page_flags_string_adam_and_draws_the_sweep(app):
    app.switch_page("app_pages/3_hyperparameters.py").run()
    app.selectbox(key="run.optimizer").set_value("adam").run()
    assert "WARN] `hparams.optimizer`" in texts(app)
    app.number_input(key="hparams.rates").set_value(3).run()
    app.number_input(key="hparams.steps").set_value(2).run()
    app.number_input(key="hparams.range_steps").set_value(8).run()
    # The verdict comes first, above the evidence, and says the rate's checks have not run until they have.
    headers = [rendered(header.value) for header in app.subheader]
    assert headers.index("Checks") < headers.index("Learning-rate sweep and range test"), headers
    waiting = "Not run yet: hparams.lr_sweep and hparams.lr_range_test"
    assert any(waiting in rendered(box.value) for box in app.info)
    app.button(key="hparams.run").click().run()
    assert not app.exception
    assert "`hparams.lr_sweep`" in texts(app) and "`hparams.lr_range_test`" in texts(app)
    assert not any(waiting in rendered(box.value) for box in app.info)
    assert "hparams.run" not in [button.key for button in app.button]  # drawn again from the kept result
    assert len(app.get("plotly_chart")) == 4


def test_overfit_page_runs_and_gives_a_verdict(app):
    app.switch_page("app_pages/4_overfit.py").run()
    app.number_input(key="overfit.epochs").set_value(20).run()
    app.button(key="overfit.run").click().run()
    assert not app.exception
    assert "the pipeline can learn" in rendered(app.success[0].value)
    assert "thrown away" in texts(app)
    assert "overfit.run" not in [button.key for button in app.button]  # drawn again from the kept result
    app.number_input(key="overfit.epochs").set_value(21).run()  # another run: its button comes back
    assert "overfit.run" in [button.key for button in app.button]


def test_report_page_runs_every_stage_and_offers_downloads(app):
    app.switch_page("app_pages/report.py").run()
    assert "Not run yet for this configuration: Data (data.learnability), Model, Hyperparameters, Overfit test" in \
        texts(app)
    app.button(key="report.run_all").click().run()
    assert not app.exception
    downloads = app.get("download_button")
    assert len(downloads) == 2
    assert "`overfit.one_batch`" in texts(app) and "`data.columns`" in texts(app)
    assert "Not run yet" not in texts(app)
    assert "report.run_all" not in [button.key for button in app.button]  # nothing left for it to run
    # What the Report ran shows on the stage's own page (learnability, run only there or here), and stays.
    app.switch_page("app_pages/1_data.py").run()
    assert not app.exception
    assert "`data.learnability`" in texts(app)
    app.switch_page("app_pages/report.py").run()
    assert "`data.learnability`" in texts(app)


def test_scenario_picker_fills_the_sidebar_and_reports_what_caught_it(app):
    app.selectbox(key="run.scenario").set_value("course-script").run()
    assert not app.exception
    assert app.text_input(key="run.columns").value == "input_ids,labels"
    assert app.selectbox(key="run.optimizer").value == "adam"
    assert app.number_input(key="run.num_labels").value == 2
    sidebar = "\n".join(rendered(m.value) for m in app.sidebar.markdown)
    assert "`data.columns`: :green[caught]" in sidebar
    assert "`hparams.loss`: :gray[not run yet]" in sidebar


def test_a_sidebar_choice_too_long_for_its_select_is_said_whole_below_it(app):
    app.selectbox(key="run.scenario").set_value("course-script").run()
    assert app.selectbox(key="run.loss").value == "sparse_categorical_crossentropy"  # cut in the select's one line
    captions = [rendered(caption.value) for caption in app.sidebar.caption]
    assert 'compile(loss="sparse_categorical_crossentropy"): a string, from_logits=False' in captions
    assert not any(caption == "adam" or caption.startswith("compile(optimizer") for caption in captions)  # short
    title = next(caption for caption in captions if caption.startswith("course-script: "))  # the scenario's, too
    assert app.selectbox(key="run.scenario").format_func("course-script") == title


def test_the_report_says_not_yet_known_while_the_check_that_owns_the_bug_has_not_run(app):
    """lr=0.1 on the kit, pages 1 to 3 opened without pressing the sweep's button: the sweep, the only check that
    catches the rate there, has not run, so the Report names it as not run and calls nothing clean."""
    app.selectbox(key="run.scenario").set_value("lr-too-high").run()
    for page in ("app_pages/2_model.py", "app_pages/3_hyperparameters.py", "app_pages/report.py"):
        app.switch_page(page).run()
        assert not app.exception
    shown = texts(app) + "\n".join(rendered(box.value) for box in app.warning)
    assert "Not yet known" in [rendered(header.value) for header in app.subheader]
    assert "hparams.lr_sweep" in shown and "No cause found" not in shown
    assert "have not run yet for this configuration" in shown


def test_the_scenario_panel_says_fixed_once_the_fix_is_in_and_names_what_changed(app):
    app.selectbox(key="run.scenario").set_value("num-labels-too-small").run()
    app.switch_page("app_pages/2_model.py").run()
    assert "`model.config`: :green[caught]" in "\n".join(rendered(m.value) for m in app.sidebar.markdown)
    app.number_input(key="run.num_labels").set_value(3).run()  # the scenario's fix
    assert not app.exception
    sidebar = "\n".join(rendered(m.value) for m in app.sidebar.markdown)
    assert "`model.config`: :green[fixed: passes with num_labels changed]" in sidebar, sidebar
    assert ":red[missed]" not in sidebar


@pytest.mark.slow  # full tier: walks a scenario twice; tests/config/test_apply_fix.py holds the fix itself
def test_apply_the_fix_takes_a_scenario_from_red_to_green_in_one_click(app):
    """num_labels=2 on MNLI, its Model page seen: the Report's cause offers "Apply the fix", which sets the sidebar's
    num_labels back to the task's, runs every stage, and says what the causes were before and are now."""
    app.selectbox(key="run.scenario").set_value("num-labels-too-small").run()
    app.switch_page("app_pages/2_model.py").run()
    app.switch_page("app_pages/report.py").run()
    assert app.button(key="report.apply.model.config").label == "Apply the fix"
    app.button(key="report.apply.model.config").click().run()
    assert not app.exception
    assert app.number_input(key="run.num_labels").value is None or app.number_input(key="run.num_labels").value == 3
    said = "\n".join(rendered(box.value) for box in app.success)
    assert "Applied the fix of `model.config` (`num_labels=3`) and ran every stage again." in said, said
    assert "Before: `model.config` FAIL. Now: no cause." in said
    assert "No cause found: no check fails or warns." in [rendered(header.value) for header in app.subheader]
    sidebar = "\n".join(rendered(m.value) for m in app.sidebar.markdown)
    assert ":red[missed]" not in sidebar and "fixed" in sidebar


def test_max_length_beyond_the_checkpoint_gives_a_message(app):
    app.number_input(key="run.max_length").set_value(1000).run()
    assert not app.exception
    assert "beyond this checkpoint's limit of 128 tokens" in texts(app)
    assert app.number_input(key="run.max_length").value == 1000


def test_scenario_choice_survives_a_page_that_stops_early(app):
    app.selectbox(key="run.scenario").set_value("lr-too-high").run()
    app.switch_page("app_pages/4_overfit.py").run()
    app.run()
    assert app.selectbox(key="run.scenario").value == "lr-too-high"
    assert app.text_input(key="run.learning_rate").value == "0.1"


def test_data_page_learnability_check_catches_shuffled_labels(app):
    app.selectbox(key="run.scenario").set_value("shuffled-labels").run()
    assert "`data.learnability`: :gray[not run yet]" in "\n".join(rendered(m.value) for m in app.sidebar.markdown)
    app.button(key="data.learnability_run").click().run()
    assert not app.exception
    assert "WARN] `data.learnability`" in texts(app)
    assert list(app.dataframe[-1].value["labels"]) == ["given", "shuffled"]
    assert "`data.learnability`: :green[caught]" in "\n".join(rendered(m.value) for m in app.sidebar.markdown)
    app.switch_page("app_pages/report.py").run()
    assert "`data.learnability`" in texts(app)


def test_the_sidebar_shows_the_rate_a_string_optimizer_means_and_keeps_the_typed_one(app):
    app.text_input(key="run.learning_rate").set_value("0.002").run()
    app.selectbox(key="run.optimizer").set_value("adam").run()
    assert not app.exception
    shown = app.text_input(key="run.learning_rate_in_effect")
    assert shown.value == "0.001" and shown.disabled
    app.selectbox(key="run.optimizer").set_value("Adam").run()
    assert app.text_input(key="run.learning_rate").value == "0.002"


def test_a_newcomer_sees_the_three_ways_in_until_a_run_is_chosen(app):
    assert not app.exception
    assert "New here? Three ways in:" in texts(app)
    app.selectbox(key="run.scenario").set_value("course-script").run()
    assert not app.exception and "New here?" not in texts(app)


def test_the_start_text_goes_away_when_dismissed(app):
    app.button(key="start.dismiss").click().run()
    assert not app.exception and "New here?" not in texts(app)
    app.switch_page("app_pages/2_model.py").run()
    app.switch_page("app_pages/1_data.py").run()
    assert "New here?" not in texts(app)


def test_decoded_rows_show_the_raw_text_beside_what_the_model_reads_and_read_in_full(app):
    from diagnostics.config.run import RunConfig
    from diagnostics.keras.data_files import load_split

    table = app.dataframe[0].value
    assert {"premise", "hypothesis", "decoded"} <= set(table.columns)  # MNLI's two sentences, each in its own column
    split = load_split(RunConfig())
    for row in range(len(table)):  # each sentence as the split holds it, not as the tokenizer decodes it
        assert table["hypothesis"][row] == split[int(table["index"][row])]["hypothesis"]
    assert table["decoded"].str.contains(r"\[CLS\]").all()
    app.selectbox(key="data.read_row").set_value(2).run()
    assert not app.exception
    texts = [md.value for md in app.markdown]
    captions = [caption.value for caption in app.caption]
    assert rendered(texts[texts.index("**hypothesis**") + 1]) == table["hypothesis"][2]
    assert "As the split holds it" in captions and "What the model reads of it" in captions


def test_the_sidebar_draws_every_settings_row_and_follows_its_conditions():
    """Each row of the settings table with a widget is drawn under its session key, holding the session's value;
    a row shown only for one optimizer or data source is drawn only then, and one enabled only for some is disabled
    otherwise."""
    from diagnostics.config.settings import BY_FIELD, SETTINGS
    from diagnostics.config.forms import widget_values
    from diagnostics.config.run import RunConfig

    everything = RunConfig(checkpoint="demo", data_source="files", data_files=(("dev", "nowhere/dev.tsv"),),
                           split="dev", optimizer="create_optimizer", weight_decay=0.01, train_steps=500,
                           warmup_steps=50, seed=7, shuffle_labels=True)
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    for key, value in widget_values(everything).items():
        at.session_state[key] = value
    at.run()
    assert not at.exception
    kinds = {"text": at.text_input, "area": at.text_area, "number": at.number_input, "check": at.checkbox,
             "select": at.selectbox, "radio": at.radio}
    drawn = {setting.field: kinds[setting.ui.kind](key=setting.key) for setting in SETTINGS if setting.ui}
    held = widget_values(everything)
    for field, widget in drawn.items():
        assert widget.value == held[BY_FIELD[field].key], field
        assert not widget.disabled, field
    at.selectbox(key="run.optimizer").set_value("Adam").run()
    assert not at.exception
    assert at.text_input(key="run.weight_decay").disabled
    for key in ("run.train_steps", "run.warmup_steps"):
        with pytest.raises(KeyError):
            at.number_input(key=key)
    at.radio(key="run.data_source").set_value("demo").run()
    with pytest.raises(KeyError):
        at.text_area(key="run.data_files")
    assert at.text_input(key="run.weight_decay").value == "0.01"  # kept while it is disabled


def test_a_model_loads_only_once_its_computation_is_admitted(app, monkeypatch):
    """One visitor asking for ten seeds loaded all ten models before eight were refused: a model now loads inside
    its admitted computation, so a visitor the store turns away loads nothing."""
    from diagnostics.keras import loading
    from diagnostics.serve.store import Busy
    import ui.shared

    loads = []
    real_load = loading.load_model
    monkeypatch.setattr(loading, "load_model", lambda *args, **kwargs: loads.append(args) or real_load(*args,
                                                                                                        **kwargs))

    class Refusing(ui.shared.SharedResults):
        def start(self, *args, **kwargs):
            raise Busy("You already have 2 computations waiting or running on this server.")

    monkeypatch.setattr(ui.shared, "shared_results", lambda: Refusing())
    app.number_input(key="run.seed").set_value(48_611).run()  # a seed no other test loads: the cache holds none
    app.switch_page("app_pages/2_model.py").run()
    assert not app.exception
    assert "You already have 2 computations" in texts(app) + "\n".join(rendered(w.value) for w in app.warning)
    assert loads == []
