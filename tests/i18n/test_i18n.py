"""The app's languages: complete catalogs, sentences translated with their numbers, the language chosen in the
sidebar, a link or the command line, and every page drawn in every language."""

from __future__ import annotations

import copy
import json
import pickle
import sys

import pytest

from conftest import ROOT, rendered
from diagnostics.i18n import (
    DEFAULT_LANGUAGE,
    LANGUAGES,
    Text,
    _,
    language_from_locale,
    localize,
    msg,
    msgn,
    placeholders,
    use_language,
)

sys.path.insert(0, str(ROOT / "scripts"))
import catalogs  # noqa: E402

TRANSLATED = [language for language in LANGUAGES if language != DEFAULT_LANGUAGE]


# Complete catalogs are a claim of the full tier (CI): while a change is written, a sentence not yet translated reads
# in English (gettext's fallback), and `python scripts/catalogs.py --check` lists what is missing.
@pytest.mark.slow
def test_every_message_has_a_translation_with_its_placeholders_in_every_catalog():
    assert catalogs.problems() == []


@pytest.mark.slow
def test_every_catalog_holds_the_same_messages_as_the_code():
    ids = {message.id for message in catalogs.extract() if message.id}
    assert len(ids) > 250
    for language in TRANSLATED:
        catalog = catalogs.read(catalogs.po_path(language), language)
        assert {message.id for message in catalog if message.id} == ids


# 12345 and 53% as each language writes them (Babel's CLDR data: a narrow no-break space in Russian).
GROUPED = {"ru": ("12\u00a0345", "53\u00a0%"), "zh": ("12,345", "53%"), "it": ("12.345", "53%"),
           "ko": ("12,345", "53%")}


@pytest.mark.parametrize("language", TRANSLATED)
def test_a_sentence_is_said_in_each_language_with_its_numbers(language):
    from babel.numbers import format_decimal, format_percent

    sentence = msg("Split-wide checks scanned {rows:,} rows.", rows=12345)
    said = localize(sentence, language)
    grouped = format_decimal(12345, format="#,##0", locale=language)
    assert grouped in said and said != str(sentence)
    assert grouped.replace("\u202f", "\u00a0") == GROUPED[language][0].replace("\u202f", "\u00a0")
    assert localize(sentence, "en") == str(sentence) == "Split-wide checks scanned 12,345 rows."
    share = msg("{text} ({fraction:.0%})", text="Training", fraction=0.53)
    assert format_percent(0.53, format="#,##0%", locale=language) in localize(share, language)
    assert localize(share, "en") == "Training (53%)"


@pytest.mark.parametrize("language, loss, share", [("it", "0,693", "3,8%"), ("ru", "0,693", "3,8%"),
                                                   ("zh", "0.693", "3.8%"), ("ko", "0.693", "3.8%")])
def test_one_sentence_writes_all_its_decimals_with_one_sign(language, loss, share):
    """A fixed-point number takes the reader's decimal sign as a percentage beside it does (Italian read "0.693"
    beside "3,8%"); a value that is not a number, and English, stay as Python writes them."""
    sentence = msg("loss {loss:.3f}, moved {moved:.1%}, {left:.0f} s, {gap:.2f}, rate {rate:g} or {small:g}",
                   loss=0.6931, moved=0.038, left=12.0, gap=float("nan"), rate=0.1, small=2e-5)
    said = localize(sentence, language).replace("\u202f", "\u00a0")
    assert said == f"loss {loss}, moved {share}, 12 s, nan, rate 0{loss[1]}1 or 2e-05"  # 0,1 where 0,693
    assert localize(sentence, "en") == "loss 0.693, moved 3.8%, 12 s, nan, rate 0.1 or 2e-05"


@pytest.mark.parametrize("count, english, russian", [(1, "1 minute ago", "1 минуту назад"),
                                                     (3, "3 minutes ago", "3 минуты назад"),
                                                     (5, "5 minutes ago", "5 минут назад"),
                                                     (21, "21 minutes ago", "21 минуту назад")])
def test_a_count_takes_each_languages_plural_form(count, english, russian):
    from diagnostics.i18n import from_data, msgn, to_data

    sentence = msgn("{count} minute ago", "{count} minutes ago", count)
    assert str(sentence) == english and localize(sentence, "ru") == russian
    assert localize(from_data(json.loads(json.dumps(to_data(sentence)))), "ru") == russian
    assert localize(pickle.loads(pickle.dumps(sentence)), "ru") == russian


def test_values_that_are_sentences_are_translated_too():
    inner = msgn("{count} minute ago", "{count} minutes ago", 7)
    outer = msg("Computed {age} in {seconds:.1f} s, and kept for everyone who opens this configuration.",
                age=inner, seconds=1.25)
    assert str(outer).startswith("Computed 7 minutes ago in 1.2 s")
    russian = localize(outer, "ru")
    assert "7 минут назад" in russian and "1,2 с" in russian  # the Russian decimal sign


def test_a_sentence_is_plain_english_text_for_json_copies_and_pickles():
    sentence = msgn("{count} minute ago", "{count} minutes ago", 3)
    assert isinstance(sentence, str) and json.dumps({"s": sentence}) == '{"s": "3 minutes ago"}'
    for again in (copy.deepcopy(sentence), pickle.loads(pickle.dumps(sentence))):
        assert isinstance(again, Text) and localize(again, "ko") == "3분 전"


def test_code_and_unknown_text_stay_as_they_are():
    assert localize("model.compile(optimizer=Adam(5e-5))", "zh") == "model.compile(optimizer=Adam(5e-5))"
    assert localize(None, "ru") is None
    assert localize(msg("not a catalog message {x}", x=1), "it") == "not a catalog message 1"


def test_underscore_follows_the_current_language():
    assert _("Learning rate") == "Learning rate"
    with use_language("it"):
        assert _("Learning rate") == "Learning rate"  # the course's Italian keeps the English term
        assert _("Batch size") == "Dimensione del batch"
    with use_language("ru"):
        assert _("Batch size") == "Размер батча"
    with use_language("xx"):
        assert _("Batch size") == "Batch size"


@pytest.mark.parametrize("locale, language", [
    ("ko-KR", "ko"), ("ru", "ru"), ("zh-CN", "zh"), ("zh_TW", "zh"), ("it-IT", "it"), ("en-US", "en"),
    ("fr-FR", "en"), ("fr-FR,ru;q=0.8,en;q=0.5", "ru"), ("", "en"), (None, "en"),
])
def test_a_browser_locale_picks_the_language(locale, language):
    assert language_from_locale(locale) == language


def test_placeholders_are_the_names_a_template_fills():
    assert placeholders("{rows:,} of {total} in {split!r}") == {"rows", "total", "split"}


# ---------------------------------------------------------------- the command line


@pytest.mark.parametrize("language, checked", [("ko", "검사함"), ("ru", "Проверен"), ("zh", "已检查"),
                                                ("it", "Controllato"), ("en", "Checked")])
def test_the_command_line_prints_and_writes_markdown_in_the_chosen_language(tmp_path, capsys, language, checked):
    from diagnostics.__main__ import main

    markdown, report = tmp_path / "report.md", tmp_path / "report.json"
    # The Data stage without its one training run (what is said, not what is trained, is under test here).
    code = main(["run", "--checkpoint", "demo", "--task", "mrpc", "--split", "validation", "--stages", "data",
                 "--skip", "data.learnability", "--lang", language, "--markdown", str(markdown), "--json",
                 str(report)])
    printed = capsys.readouterr().out
    assert code in (0, 1) and checked in printed
    written = markdown.read_text(encoding="utf-8")
    with use_language(language):
        assert _("Training Pipeline Debugger report") in written
    data = json.loads(report.read_text())
    assert data["run"]["language"] == language
    assert data["checks"][0]["summary"].isascii()  # the JSON report stays English


def test_an_unknown_language_on_the_command_line_is_a_clear_error(capsys):
    from diagnostics.__main__ import main

    with pytest.raises(SystemExit) as stopped:
        main(["scenarios", "--lang", "xx"])
    assert stopped.value.code == 2
    assert "--lang: invalid choice: 'xx'" in capsys.readouterr().err


# ---------------------------------------------------------------- the pages

PAGES = ["app_pages/1_data.py", "app_pages/2_model.py", "app_pages/3_hyperparameters.py", "app_pages/4_overfit.py",
         "app_pages/report.py", "app_pages/script.py", "app_pages/workshop.py"]


def _app():
    from streamlit.testing.v1 import AppTest

    return AppTest.from_file(str(ROOT / "app.py"), default_timeout=180)


@pytest.mark.parametrize("language", list(LANGUAGES))
def test_every_page_opens_in_each_language(language):
    at = _app()
    at.query_params["lang"] = language
    at.run()
    assert not at.exception
    assert at.selectbox(key="ui.lang").value == language
    with use_language(language):
        assert at.title[0].value == _("1 · Data")
        expected_batch_label = _("Batch size")
    assert at.number_input(key="run.batch_size").label == expected_batch_label
    for page in PAGES[1:]:
        at.switch_page(page).run()
        assert not at.exception, (page, at.exception)
        assert at.selectbox(key="ui.lang").value == language


@pytest.mark.slow  # full tier: every page twice; test_picking_a_language_keeps_every_setting holds the setting
def test_switching_language_on_each_page_from_a_language_link_then_opening_the_next_keeps_the_session():
    """Opened from a ?lang= link with a scenario, the language is switched on every page in turn and the next page
    opened: no page shows an exception, and the scenario, task and data source stay what the session chose (the
    browser's own half of this, a choice's stale label, is tested in Chromium: tests/app/test_browser.py)."""
    at = _app()
    at.query_params["lang"] = "ru"
    at.query_params["scenario"] = "num-labels-too-small"
    at.run()
    languages = ["en", "ko", "it", "zh", "ru", "en", "ko"]
    for page, language, following in zip(PAGES, languages, PAGES[1:] + PAGES[:1], strict=True):
        at.switch_page(page).run()
        assert not at.exception, (page, at.exception)
        at.selectbox(key="ui.lang").set_value(language).run()
        assert not at.exception, (page, language, at.exception)
        at.switch_page(following).run()
        assert not at.exception, (following, language, at.exception)
        assert at.session_state["run.scenario"] == "num-labels-too-small"
        assert at.session_state["run.task"] == "mnli" and at.session_state["run.data_source"] == "demo"
        assert at.selectbox(key="ui.lang").value == language


def test_picking_a_language_keeps_every_setting_and_writes_it_into_the_link():
    at = _app().run()
    at.number_input(key="run.batch_size").set_value(8).run()
    at.selectbox(key="run.task").set_value("rte").run()
    at.selectbox(key="ui.lang").set_value("ko").run()
    assert not at.exception
    assert at.number_input(key="run.batch_size").value == 8 and at.selectbox(key="run.task").value == "rte"
    assert at.number_input(key="run.batch_size").label == "배치 크기"
    assert at.title[0].value == "1 · 데이터"
    assert at.query_params["lang"] == "ko"
    at.selectbox(key="ui.lang").set_value("en").run()
    assert "lang" not in at.query_params and at.title[0].value == "1 · Data"


def test_an_unknown_language_in_a_link_is_named_and_the_page_stays_in_english():
    at = _app()
    at.query_params["lang"] = "klingon"
    at.run()
    assert not at.exception
    assert "lang='klingon'" in "\n".join(rendered(warning.value) for warning in at.warning)
    assert at.selectbox(key="ui.lang").value == "en"


# ---------------------------------------------------------------- the findings


@pytest.mark.parametrize("language", TRANSLATED)
def test_a_checks_finding_is_said_in_each_language_with_its_numbers(language):
    from diagnostics.checks.data.duplicates import check_duplicates

    result = check_duplicates({"rows_scanned": 1234, "duplicate_rows": 56, "conflicting_rows": 7,
                               "conflict_examples": []})
    from babel.numbers import format_decimal, format_percent

    said, english = localize(result.summary, language), str(result.summary)
    assert said != english and said.strip()
    for number in ("1,234", "56", "7", "4.5%"):
        assert number in english
    # Written the reader's way: 1 234 and 4,5 % in Russian, 1.234 and 4,5% in Italian.
    for number in (format_decimal(1234, format="#,##0", locale=language), "56", "7",
                   format_percent(0.045, format="#,##0.0%", locale=language)):
        assert number in said, (number, said)


@pytest.mark.slow  # full tier, as the catalogs' completeness
def test_every_finding_of_a_failing_scenario_can_be_translated(tmp_path):
    """Every summary (and prose fix) the Data, Model and setup checks give on the course's script is a sentence the
    catalogs know, so no finding stays English on a translated page."""
    from diagnostics.core.context import RunContext
    from diagnostics.walk.stages import data_stage, hparams_stage, model_stage
    from diagnostics.config.scenarios import SCENARIOS
    from diagnostics.config.run import RunConfig

    config = SCENARIOS["course-script"].apply(RunConfig(checkpoint="demo", split="validation_matched"))
    run = RunContext.open(config)
    results = data_stage(run) + model_stage(run) + hparams_stage(run, parts=("setup",))
    assert len(results) >= 15
    for result in results:
        assert isinstance(result.summary, Text), (result.id, result.summary)
        with use_language("zh"):
            assert localize(result.summary) != str(result.summary), result.id


@pytest.mark.parametrize("language, says", [("ru", "не существует"), ("zh", "不存在"), ("it", "non esiste"),
                                             ("ko", "없습니다"), ("en", "does not exist")])
def test_an_unusable_input_is_explained_in_the_chosen_language(tmp_path, capsys, language, says):
    from diagnostics.__main__ import main

    missing = tmp_path / "nowhere.tsv"
    code = main(["run", "--checkpoint", "demo", "--task", "rte", "--data-files", f"validation={missing}", "--split",
                 "validation", "--stages", "data", "--lang", language])
    error = capsys.readouterr().err
    assert code == 2 and says in error and str(missing) in error


def test_a_bad_link_is_explained_in_the_pages_language():
    at = _app()
    at.query_params["lang"] = "it"
    at.query_params["batch_size"] = "lots"
    at.run()
    assert not at.exception
    warning = "\n".join(rendered(element.value) for element in at.warning)
    assert "batch_size='lots'" in warning and "non è un numero intero" in warning


def test_a_report_read_back_from_json_can_still_be_translated():
    import numpy as np

    from diagnostics.checks.model.forward import check_forward
    from diagnostics.checks.model.nan_rows import check_nan_rows
    from diagnostics.core.result import CheckResult
    from diagnostics.keras.measurement import Forward

    results = [
        check_nan_rows(np.array([0.5, np.nan]), np.zeros((2, 2)), [
            {"index": 0, "decoded": "a", "label": 1, "label_name": "b"},
            {"index": 1, "decoded": "c", "label": np.int64(2), "label_name": "(out of range: 2)"}], 2, False),
        check_forward(Forward(logits=np.zeros((2, 3)), error=None, fit_call_error=None, trace=[]), 2, 2),
    ]
    for result in results:
        data = json.loads(json.dumps(result.to_dict()))
        assert data["summary"] == str(result.summary) and "sentences" in data
        back = CheckResult.from_dict(data)
        assert str(back.summary) == str(result.summary)
        assert localize(back.summary, "zh") == localize(result.summary, "zh") != str(result.summary)


def test_a_report_without_sentences_reads_back_as_english():
    from diagnostics.core.result import CheckResult

    data = {"id": "data.batch", "stage": "data", "status": "pass", "summary": "Fine.", "fix": None, "evidence": {}}
    assert CheckResult.from_dict(data).summary == "Fine."
    tampered = {**data, "sentences": {"summary": {"template": "{missing}", "params": {}}}}
    assert CheckResult.from_dict(tampered).summary == "Fine."


@pytest.mark.subprocess
def test_a_traced_script_is_reported_in_the_chosen_language(tmp_path):
    """The child writes English with its sentences; the parent says the outcome, the error's finding and fix, the
    progress lines and every check in another language."""
    from diagnostics.core.result import CheckResult
    from diagnostics.usercode.course_scripts import COURSE_SCRIPTS
    from diagnostics.usercode.trace import script_finding, trace_script

    lines = []
    outcome = trace_script(COURSE_SCRIPTS["course_script"].path, stages="data", timeout=300, progress=lines.append,
                           cwd=tmp_path)
    assert outcome.report is not None, outcome.message
    error = outcome.report["script"]["error"]
    finding = script_finding(error)
    assert isinstance(finding, Text) and "to_tf_dataset raised" in str(finding)
    assert localize(finding, "ko").startswith("to_tf_dataset이") and localize(outcome.message, "ko") != str(
        outcome.message)
    assert any(isinstance(line, Text) and localize(line, "ru") != str(line) for line in lines)
    checks = [CheckResult.from_dict(check) for check in outcome.report["checks"]]
    assert checks and all(isinstance(check.summary, Text) for check in checks)


def test_sentences_joined_with_plus_keep_both_templates():
    first = msg("{count} causes fail", count=2)
    together = first + "; " + msg("Random guessing gives loss ln(2) = 0.693.")
    assert isinstance(together, Text) and str(together) == "2 causes fail; Random guessing gives loss ln(2) = 0.693."
    assert isinstance("Found: " + first, Text)
    russian = localize("Found: " + msgn("{count} cause fails", "{count} causes fail", 2), "ru")
    assert russian == "Found: 2 причины — провал"


def test_a_sentence_put_in_an_f_string_is_refused_under_the_suites_strict_mode(monkeypatch):
    sentence = msgn("{count} cause fails", "{count} causes fail", 2)
    with pytest.raises(TypeError, match="loses its translation"):
        f"Found: {sentence}"
    with pytest.raises(TypeError, match="loses its translation"):
        "Found: {}".format(sentence)
    inside = msg("Found: {found}", found=sentence)  # as a value of another sentence it keeps its template
    assert str(inside) == "Found: 2 causes fail" and localize(inside, "ru") == "Found: 2 причины — провал"
    monkeypatch.delenv("DEBUGGER_STRICT_TEXT")
    assert f"Found: {sentence}" == "Found: 2 causes fail"  # a user's process: the English, never a crash


def test_sentences_built_from_parts_read_whole_in_korean_and_russian():
    """A sentence nested in another reads as one sentence (Korean once put a whole clause before a particle), and a
    ratio is not declined as a count (Russian once said "в 94 раз")."""
    from diagnostics.i18n import joined, localize, msg

    left_out = msg("{what} leaves out {costs}.", what=msg("columns="),
                   costs=joined([msg("attention_mask, so the model attends to padding")], "; "))
    korean = localize(left_out, "ko")
    assert "기울입니다이(가)" not in korean and "attention_mask가 빠져 있어" in korean
    diverged = msg("By step {step} the loss rose to {recent:.3g}, {ratio}x its start ({start:.3g}), while the rows "
                   "themselves give {rows} on the weights training started from: the weights diverged (their norm grew "
                   "{growth}x and they moved {moved}), so the learning rate {rate} is too high for this model.",
                   step=9, recent=64.1, ratio=94, start=0.68, rows="0.7", growth=3.2, moved="0.5", rate=0.1)
    russian = localize(diverged, "ru")
    assert "94×" in russian and "в 94 раз" not in russian


def test_a_sentence_filled_in_at_the_end_of_another_ends_on_one_stop():
    """The trace's "checked what it built: {found}." once read "... (shape [16, 1, 128]).." where found was a
    sentence of its own; in Chinese "。。" likewise. An ellipsis stays."""
    from diagnostics.i18n import one_stop

    inner = msg("The dataset's input_ids are not batches of rows (shape {shape}).", shape=[16, 1, 128])
    outer = msg("{name} reached fit at {where}; checked what it built: {found}.", name="a.py", where="a.py:3",
                found=inner)
    assert str(outer).endswith("[16, 1, 128]).") and not str(outer).endswith("..")
    for language in TRANSLATED:
        said = localize(outer, language)
        assert not said.endswith("..") and not said.endswith("。。"), said
    assert one_stop("Wait...") == "Wait..." and one_stop("done。。") == "done。"
