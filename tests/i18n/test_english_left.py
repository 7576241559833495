"""No English left in the other languages: every catalog entry, and every finding of a failing scenario rendered with
its real values, is read for English words of its own English sentence that the translation kept. Code stays as it
is (placeholders, quoted text, calls, options, command lines, `name=` arguments, identifiers), and so do the names
every language keeps (libraries, formats, API names) and the loanwords a language's own technical writing uses."""

from __future__ import annotations

import re

import pytest

from diagnostics.i18n import LANGUAGES, DEFAULT_LANGUAGE, localize, use_language

TRANSLATED = [language for language in LANGUAGES if language != DEFAULT_LANGUAGE]

QUOTED = re.compile(r"'[^'\n]*'|\"[^\"\n]*\"|`[^`\n]*`|«[^»\n]*»|“[^”\n]*”|‘[^’\n]*’|「[^」\n]*」")
PLACEHOLDER = re.compile(r"\{[^}]*\}")
CALL = re.compile(r"[\w.]+\([^()]*\)")
# A command line or an option with what follows it, up to the end of its clause; Keras's own progress line.
COMMAND = re.compile(r"(python -m|pip install|streamlit run|apt-get|iconv|--[a-z])[^\n;。；，,]*|loss: nan")
# An English gloss of one or two words in brackets after the translated term: "зерно (seed)", "轮数（epochs）".
GLOSS = re.compile(r"(?<![A-Za-z0-9_.])[(（][A-Za-z][A-Za-z\-]*( [A-Za-z][A-Za-z\-]*)?[)）]")
CODE_LINE = re.compile(r"\s*(from |import |[\w.]+ ?=[^=])")
CODE_WORD = re.compile(r"[._=()\[\]/0-9:<>*+]|^-|[a-z][A-Z]")

# Names every language keeps: libraries, products, formats, and the API's own words (Keras's fit, compile and
# trainable, the labels/label columns, logits as Keras names its argument).
NAMES = set("""fit compile trainable labels label logits seed Keras TensorFlow Transformers Hugging Face Hub tf-keras
datasets pandas plotly Python Streamlit Chromium Playwright Markdown Excel Word Office PowerPoint OpenDocument Parquet
parquet gzip csv tsv JSON-lines Adam AdamW Dense Column DistilBERT BERT Inf NaN True False None ln hparams stsb STS-B
GiB MiB KiB id Training Pipeline Debugger""".split())
# Loanwords each language's own machine-learning writing uses as they are (checked against the catalog: each is the
# term used throughout that language's catalog, never beside a translation of it).
LOANWORDS = {
    "it": set("""loss batch script rate split label file learning task test output input checkpoint tokenizer dataset
padding sweep warmup link scenario pipeline app server layer encoder fine-tuning transformer collator demo token
debugger workshop schedule report overfit checklist preset bug mix kit run seed repository shuffle join weight decay
cross-entropy min Report Loss Scenario Test Task Script Checkpoint Learning Seed Split Workshop Weight in per zero
separate default duplicate schema cause range diverge""".split()),  # diverge: Italian too (divergere)
    "ru": set(),
    "zh": set("epoch epochs token transformer Transformer".split()),
    "ko": set(),
}


def prose_words(text: str) -> list[str]:
    """The words of `text` outside code, names, and anything in capitals."""
    text = GLOSS.sub(" ", COMMAND.sub(" ", QUOTED.sub(" ", PLACEHOLDER.sub(" ", text))))
    for _ in range(3):
        text = CALL.sub(" ", text)
    lines = [line for line in text.split("\n") if not CODE_LINE.match(line)]
    kept = [token for token in " ".join(lines).split() if not CODE_WORD.search(token)]
    return [word for word in re.findall(r"[A-Za-z][A-Za-z\-]*[A-Za-z]", " ".join(kept))
            if word not in NAMES and not word.isupper()]


PROSE = re.compile(r"[A-Za-z]+ [a-z]{2,} [a-z]{2,} [a-z]{2,}")  # four words in a row, no code or punctuation between


def raw_values(text) -> set[str]:
    """The words of the values a sentence was given as they are, not as sentences: column, label or setting names, a
    shape, a path, or an error's own message (`error`), which are the code's or the data's and never translated. A
    value that reads as an English sentence and is not an error gets nothing: it should have been a `Text`."""
    from diagnostics.i18n import Text

    if not isinstance(text, Text):
        return set()
    found = set()
    for name, value in text.params.items():
        for item in (value if isinstance(value, (list, tuple)) else [value]):
            if isinstance(item, Text):
                found |= raw_values(item)
            elif isinstance(item, str) and (name == "error" or not PROSE.search(item)):
                found |= set(re.findall(r"[A-Za-z][A-Za-z\-]*[A-Za-z]", item))
    return found


def english_left(english: str, translated: str, language: str, allowed: set[str] = frozenset()) -> list[str]:
    """The words of `translated` that are words of `english` too, and neither a name nor the language's loanword."""
    own = {word.lower() for word in prose_words(english)}
    return sorted({word for word in prose_words(translated) if word.lower() in own
                   and word not in LOANWORDS[language] and word not in allowed})


def catalog(language: str):
    """The language's catalog as scripts/catalogs.py reads it."""
    import sys

    from conftest import ROOT

    sys.path.insert(0, str(ROOT / "scripts"))
    import catalogs

    return catalogs.read(catalogs.po_path(language), language)


def test_prose_words_keep_sentences_and_leave_code_out():
    assert prose_words("Loss каждой строки") == ["Loss"]
    assert prose_words("compile(optimizer='adam') с loss= и --with data.learnability, затем model.fit") == []
    assert prose_words("зерно (seed) · python -m diagnostics run --stages hparams") == []
    assert english_left("the range test's steps", "шаги range test", "ru") == ["range", "test"]
    assert english_left("the range test's steps", "i passi del range test", "it") == []


@pytest.mark.slow  # full tier: a sentence not yet translated is English while a change is written (tests/i18n)
@pytest.mark.parametrize("language", TRANSLATED)
def test_no_catalog_entry_keeps_english_words_of_its_own_sentence(language):
    left = {}
    for message in catalog(language):
        if not message.id or not message.string:
            continue
        ids = message.id if isinstance(message.id, tuple) else (message.id,)
        strings = message.string if isinstance(message.string, tuple) else (message.string,)
        for string in strings:
            found = english_left(" ".join(ids), string, language)
            if found:
                left[ids[0][:80]] = (found, string[:160])
    assert left == {}, left


@pytest.mark.slow  # full tier, as the catalogs' completeness
@pytest.mark.parametrize("scenario", ["course-script", "num-labels-too-small", "probabilities-not-logits"])
def test_every_finding_of_a_failing_scenario_reads_without_english_in_every_language(scenario):
    """A failing scenario's findings (data, model and the setup checks), each sentence rendered with its real values:
    a sentence put into another (a reason, a list of findings) must be translated too; a value given as it is (a
    library's error, column names, the task) is the code's or the data's."""
    from diagnostics.config.run import RunConfig
    from diagnostics.config.scenarios import SCENARIOS
    from diagnostics.core.context import RunContext
    from diagnostics.walk.stages import data_stage, hparams_stage, model_stage

    run = RunContext.open(SCENARIOS[scenario].apply(RunConfig(checkpoint="demo")))
    results = data_stage(run) + model_stage(run) + hparams_stage(run, parts=("setup",))
    data_names = {run.config.task, *run.config.glue_task.label_names, *run.split.data.column_names}
    left = {}
    for result in results:
        for part in (result.summary, result.fix):
            if part is None:
                continue
            for language in TRANSLATED:
                with use_language(language):
                    said = localize(part)
                found = english_left(str(part), said, language, data_names | raw_values(part))
                if found:
                    left[(result.id, language)] = (found, said[:200])
    assert len(results) >= 15 and left == {}, left


def test_a_sentence_passed_as_plain_english_is_found():
    """What the test above exists for: an English reason put into a translated sentence as a plain string."""
    from diagnostics.i18n import msg

    stopped = msg("{name} was stopped after {timeout:g} s{reached}; give it a longer time limit ({limit}) if it is "
                  "just slow.", name="train.py", timeout=3, reached=" before reaching fit (a loop that never ends)",
                  limit="--timeout")
    with use_language("ru"):
        said = localize(stopped)
    assert english_left(str(stopped), said, "ru", raw_values(stopped)) == ["before", "loop", "never", "reaching",
                                                                              "that"]
