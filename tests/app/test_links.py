"""Links that reproduce a run: the configuration, scenario and page settings in the URL, and results shared by
configuration across sessions."""

from dataclasses import replace

import pytest
from streamlit.testing.v1 import AppTest

from conftest import ROOT, rendered
from diagnostics.config.run import RunConfig
from diagnostics.config.training import SweepSettings
from diagnostics.config.scenarios import SCENARIOS
from ui.links import CONFIG_PARAMS, Link, base_config, config_fields, link_params, parse_link

APP = str(ROOT / "app.py")
TIMEOUT = 240


def round_trip(link: Link) -> Link:
    params = link_params(link, hub_reachable=False)
    parsed, problems = parse_link(params, hub_reachable=False)
    assert not problems, problems
    return parsed


def test_the_page_paths_a_link_may_carry_are_the_apps():
    import re

    from ui.address import PAGE_PATHS

    assert set(PAGE_PATHS) == set(re.findall(r'url_path="(\w+)"', (ROOT / "app.py").read_text()))


def test_every_configuration_field_has_a_link_parameter():
    assert config_fields() == {"checkpoint"} | {field for field, _ in CONFIG_PARAMS.values()}


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_a_scenario_link_is_just_its_name_and_opens_the_scenario(scenario):
    link = Link(base_config(False, None, scenario).validated(), scenario)
    assert link_params(link, hub_reachable=False) == {"scenario": scenario}
    assert round_trip(link) == link


@pytest.mark.parametrize("changes", [
    {"task": "mrpc", "split": "train", "num_labels": 2, "learning_rate": 5e-5},
    {"task": "rte", "split": "validation", "batch_size": 8, "max_length": 64, "seed": 3},
    {"columns": ("input_ids", "labels"), "labels_in": "separate", "shuffle": False, "shuffle_labels": True},
    {"optimizer": "create_optimizer", "weight_decay": 0.01, "train_steps": 500, "warmup_steps": 50},
    {"data_source": "files", "split": "dev", "data_files": (("dev", "/data/mrpc/dev.tsv"), ("train", "/d/t.tsv"))},
    {"loss": "SparseCategoricalCrossentropy(from_logits=True)", "learning_rate": 1.2345678e-5},
])
@pytest.mark.parametrize("scenario", [None, "test-split-labels", "course-script"])
def test_any_run_survives_the_link(changes, scenario):
    config = replace(base_config(False, None, scenario), **changes).validated()
    link = Link(config, scenario, SweepSettings(min_rate=1e-5, rates=5), epochs=30)
    assert round_trip(link) == link


def test_a_deep_link_sets_what_it_names_and_defaults_the_rest():
    link, problems = parse_link({"task": "mrpc", "num_labels": "2", "lr": "5e-5"}, hub_reachable=False)
    assert not problems
    assert link.config == replace(RunConfig(), task="mrpc", num_labels=2, learning_rate=5e-5).validated()


def test_bad_and_unknown_parameters_get_messages_and_the_rest_still_applies():
    link, problems = parse_link({"task": "nope", "lr": "fast", "batch_size": "0", "colour": "red", "scenario": "x",
                                 "num_labels": "3", "epochs": "5000"}, hub_reachable=False)
    said = "\n".join(problems)
    assert "task='nope'" in said and "Unknown GLUE task" in said
    assert "lr='fast'" in said and "not a number" in said
    assert "batch size must be at least 1" in said
    assert "'colour' is not one this app reads" in said
    assert "scenario 'x' is not one of" in said
    assert "epochs='5000'" in said
    assert len(problems) == 6
    assert link.config == replace(RunConfig(), num_labels=3, learning_rate=3e-3).validated()


def test_hosted_caps_apply_to_link_values(monkeypatch):
    monkeypatch.setenv("DEBUGGER_HOSTED", "1")
    link, problems = parse_link({"batch_size": "512", "checkpoint": "/home/me/model", "rates": "50", "data": "files",
                                 "max_length": "64"}, hub_reachable=False)
    said = "\n".join(problems)
    assert "hosted mode caps the batch size at 32" in said
    assert "refuses local checkpoint paths" in said
    assert "hosted mode caps the sweep at 9 rates" in said
    assert "data='files'" in said
    assert (link.config.batch_size, link.config.checkpoint, link.sweep.rates) == (16, "demo", 7)
    assert link.config.max_length == 64


# ---------------------------------------------------------------- the app

def open_link(params: dict, page: str | None = None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.query_params.update(params)
    if page:
        at.switch_page(page)
    return at.run()


def test_a_scenario_link_fills_the_sidebar_and_the_url_keeps_it():
    at = open_link({"scenario": "course-script"})
    assert not at.exception
    state = at.session_state
    assert (state["run.task"], state["run.columns"], state["run.loss"], state["run.optimizer"],
            state["run.num_labels"]) == ("mnli", "input_ids,labels", "sparse_categorical_crossentropy", "adam", 2)
    assert at.selectbox(key="run.scenario").value == "course-script"
    assert at.query_params == {"scenario": "course-script"}
    shown = "\n".join(rendered(element.value) for element in at.markdown)
    assert "PENDING] `data.label_range`" in shown and "`data.columns`: :green[caught]" in shown
    assert "`model.config`: :blue[pending: found by data.label_range, not run yet]" in shown
    assert "names a cause the scenario does not inject" not in shown


def test_a_deep_link_opens_its_page_with_its_configuration():
    at = open_link({"task": "mrpc", "num_labels": "2", "lr": "5e-5"}, "app_pages/3_hyperparameters.py")
    assert not at.exception
    assert at.title[0].value == "3 · Hyperparameters"
    assert (at.selectbox(key="run.task").value, at.number_input(key="run.num_labels").value,
            at.text_input(key="run.learning_rate").value) == ("mrpc", 2, "5e-05")


def test_changing_the_sidebar_updates_the_url_and_the_copy_link():
    at = open_link({})
    assert at.query_params == {}
    at.selectbox(key="run.task").set_value("rte").run()
    at.text_input(key="run.learning_rate").set_value("1e-4").run()
    assert at.query_params == {"task": "rte", "lr": "0.0001"}
    assert any(code.value == "http://localhost:8501/?task=rte&lr=0.0001" for code in at.sidebar.code)


def test_a_link_with_numbers_past_their_bounds_is_refused_before_anything_runs():
    at = open_link({"num_labels": "10000000000", "seed": "-5", "batch_size": "99999999999", "max_length": "1e20"})
    assert not at.exception
    warning = rendered(at.sidebar.warning[0].value)
    assert "num_labels must be at most 100" in warning and "the seed must be at least 0, got -5" in warning
    assert "batch size must be at most 1024" in warning and "max length must be at most 2048" in warning
    assert (at.number_input(key="run.num_labels").value, at.number_input(key="run.seed").value,
            at.number_input(key="run.batch_size").value) == (None, 0, 16)  # the defaults (10^7 labels took 2.5 GB)


def test_link_values_are_shown_as_typed_never_as_markdown():
    bait = "[Session expired: sign in](http://127.0.0.1:9/login) ![x](http://127.0.0.1:9/x.png)"
    at = open_link({"lr": bait})
    warning = at.sidebar.warning[0].value
    assert "](http" not in warning and "![" not in warning  # escaped: no link and no image in the Markdown
    assert bait in rendered(warning)  # yet it reads as typed


def test_a_link_with_bad_parameters_says_so_and_opens_on_the_rest():
    at = open_link({"task": "nope", "batch_size": "8", "lr": "fast"})
    assert not at.exception
    warning = rendered(at.sidebar.warning[0].value)
    assert "task='nope'" in warning and "lr='fast'" in warning
    assert (at.selectbox(key="run.task").value, at.number_input(key="run.batch_size").value) == ("mnli", 8)
    assert at.query_params == {"batch_size": "8"}
    at.button(key="link.dismiss").click().run()
    assert not at.sidebar.warning


def test_page_settings_live_in_the_link_and_outlast_their_page():
    at = open_link({"rates": "5", "epochs": "30"}, "app_pages/3_hyperparameters.py")
    assert at.number_input(key="hparams.rates").value == 5
    at.number_input(key="hparams.steps").set_value(4).run()
    at.switch_page("app_pages/2_model.py").run()
    assert at.query_params == {"rates": "5", "steps": "4", "epochs": "30"}
    at.switch_page("app_pages/4_overfit.py").run()
    assert at.number_input(key="overfit.epochs").value == 30
    at.switch_page("app_pages/3_hyperparameters.py").run()
    assert at.number_input(key="hparams.steps").value == 4


@pytest.mark.slow  # full tier: trains a sweep; tests/serve/test_shared.py holds the store's sharing
def test_a_second_session_on_the_same_link_sees_the_sweep_without_training_it():
    from ui.shared import shared_results

    params = {"scenario": "adam-string-default-lr", "rates": "3", "steps": "3", "range_steps": "8"}
    first = open_link(params, "app_pages/3_hyperparameters.py")
    runs = shared_results().runs
    first.button(key="hparams.run").click().run()
    assert not first.exception
    assert shared_results().runs == runs + 1
    assert len(first.get("plotly_chart")) >= 3

    second = open_link(params, "app_pages/3_hyperparameters.py")  # a reload, another tab, or another person
    assert not second.exception
    assert shared_results().runs == runs + 1  # the setup checks and the sweep were both kept
    assert len(second.get("plotly_chart")) == len(first.get("plotly_chart"))
    assert any("Computed just now" in rendered(caption.value) for caption in second.caption)
    assert not any(rendered(info.value).startswith("Press the button") for info in second.info)

    second.button(key="shared.again.training").click().run()  # "Compute again" trains it once more, for all
    assert shared_results().runs == runs + 2


@pytest.mark.slow  # full tier: warms up every scenario
def test_the_workshop_page_links_every_scenario_and_warms_them_up():
    at = open_link({}, "app_pages/workshop.py")
    assert not at.exception
    codes = [code.value for code in at.code]
    for name in SCENARIOS:
        assert any(code.endswith(f"?scenario={name}") for code in codes), name
    at.multiselect(key="workshop.kinds").set_value(["data", "model"])
    at.button(key="workshop.warm_up").click().run()
    assert not at.exception
    assert sum("4 of 8 computed" in rendered(caption.value) for caption in at.caption) == len(SCENARIOS)

    opened = open_link({"scenario": "num-labels-too-small"}, "app_pages/2_model.py")
    assert any("Computed just now" in rendered(caption.value) for caption in opened.caption)
    shown = "\n".join(rendered(element.value) for element in opened.markdown)
    assert "FAIL] `model.config`" in shown and "SEE] `model.nan_rows`" in shown  # the head's cause, named once


def test_a_hosted_visitor_cannot_warm_up_the_room(monkeypatch):
    monkeypatch.setenv("DEBUGGER_HOSTED", "1")
    at = open_link({}, "app_pages/workshop.py")
    assert not at.exception and at.button(key="workshop.warm_up").disabled
    assert any("The warm-up is the presenter's" in rendered(caption.value) for caption in at.caption)


def test_a_precise_rate_in_a_link_is_kept_exactly():
    at = open_link({"lr": "1.2345678e-05", "weight_decay": "0.0123456789"})
    assert at.query_params == {"lr": "1.2345678e-05", "weight_decay": "0.0123456789"}


def test_thousands_of_unknown_link_parameters_are_one_short_message():
    from ui.links import parse_link

    params = {f"p{i}{'x' * 100}": "1" for i in range(2000)}
    _, problems = parse_link({**params, "task": "rte"}, hub_reachable=False)
    assert len(problems) == 1
    said = str(problems[0])
    assert said.startswith("The link has 2000 parameters this app does not read: 'p0xxx") and "x...', " in said
    assert ", ... (it reads " in said
    assert len(said) < 1000


def test_the_docs_table_of_link_parameters_names_every_parameter_a_link_reads():
    """docs/links-and-rooms.md's table is written by hand: it names exactly the parameters `ui.links` reads."""
    import re

    from ui.links import KNOWN

    text = (ROOT / "docs" / "links-and-rooms.md").read_text()
    table = text[text.index("| parameter | sets |"):]
    rows = table[:table.index("\n\n")].splitlines()[2:]
    named = {name for row in rows for index, cell in enumerate(row.split("|")) if index in (1, 3)
             for name in re.findall(r"`([a-z_]+)`", cell)}
    assert named == set(KNOWN), (sorted(named - set(KNOWN)), sorted(set(KNOWN) - named))



@pytest.mark.parametrize("origin, host, hosted, allowed, refused", [
    ("http://localhost:8501", "localhost:8501", False, (), False),  # the app's own page
    ("http://localhost:8888", "localhost:8501", False, (), True),  # a notebook server's page on another port
    ("http://127.0.0.1:3000", "127.0.0.1:8501", False, (), True),
    ("https://evil.example", "localhost:8501", False, (), True),
    ("http://localhost:8888", "localhost:8501", True, (), False),  # the Space: reached through its proxy, no code run
    ("https://hub.example", "localhost:8501", False, ("https://hub.example/",), False),  # listed by its owner
    (None, "localhost:8501", False, (), False),  # not a browser: no Origin
])
def test_a_laptops_app_opens_sessions_for_its_own_pages_only(origin, host, hosted, allowed, refused):
    """Streamlit trusts a page of any localhost port: one served from localhost:8888 could open a session on the
    laptop's app and drive the Your script page, which runs code as its user."""
    from ui.origins import foreign_origin

    headers = {"Host": host, **({"Origin": origin} if origin else {})}
    assert (foreign_origin(headers, hosted, allowed) is not None) is refused


def test_a_finding_explained_on_its_owners_own_page_names_the_owner_without_sending_the_reader_there():
    """num-labels-too-small opened on the Model page: the NaN rows and the checklist's SEE card name model.config,
    which is on this very page; neither says "on the Model page" nor links to it (the walk read that as a loop)."""
    at = open_link({"scenario": "num-labels-too-small"}, "app_pages/2_model.py")
    assert not at.exception
    shown = "\n".join(rendered(element.value) for element in at.markdown)
    assert "FAIL] `model.config`" in shown and "SEE] `model.nan_rows`" in shown
    links = [link.proto.label for link in at.get("page_link")]
    assert not any("model.config" in label for label in links), links
    assert sum(rendered(caption.value) == "Explained by model.config" for caption in at.caption) >= 2
    report = open_link({"scenario": "num-labels-too-small"}, "app_pages/report.py")  # every card on one page
    assert not report.exception and "SEE] `model.nan_rows`" in "\n".join(rendered(m.value) for m in report.markdown)
    assert not any("Explained by model.config, on" in link.proto.label for link in report.get("page_link"))
