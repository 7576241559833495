"""Heavy work in worker processes (diagnostics/serve/worker.py): a checkpoint that costs more than its estimate ends
its own worker at its memory limit, not the server; a job past its time ends its worker; results, errors, progress
and stop requests cross between the processes as they would within one."""

import threading
from pathlib import Path

import pytest

from diagnostics.config.run import RunConfig
from diagnostics.core.errors import InputError
from diagnostics.core.result import Status
from diagnostics.serve import worker
from diagnostics.serve.store import Job, training_job

pytestmark = pytest.mark.subprocess

GIB = 2**30


@pytest.fixture(scope="module")
def pool():
    workers = worker.Workers(2, memory=int(1.5 * GIB), time_limit_s=120)
    yield workers
    workers.close()


@pytest.fixture(scope="module")
def wide_checkpoint(tmp_path_factory, vocab_file) -> Path:
    """A one-layer BERT whose feed-forward is 400,000 wide: 100 MB of weights, and 2 GB of activations a batch of 64
    (the shape of issue 72's `intermediate_size=40000` BERT, at a size a test builds in a second)."""
    from transformers import BertConfig, BertTokenizerFast, TFBertModel

    directory = tmp_path_factory.mktemp("bert-wide")
    tokenizer = BertTokenizerFast(vocab_file=str(vocab_file), model_max_length=128)
    tokenizer.save_pretrained(directory)
    model = TFBertModel(BertConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=1,
                                   num_attention_heads=2, intermediate_size=400_000, max_position_embeddings=128))
    model(model.dummy_inputs)
    model.save_pretrained(directory)
    return directory


def statuses(results) -> list[tuple[str, Status]]:
    return [(result.id, result.status) for result in results]


def test_a_job_in_a_worker_gives_what_it_gives_in_the_server_and_its_progress(pool):
    from diagnostics.serve.loaders import open_run

    heard: list[str] = []
    job = Job("model", RunConfig())
    results = pool.run(job, lambda fraction, text, left=None: heard.append(str(text)))
    assert statuses(results) == statuses(job.run(open_run(job.config)))
    assert heard[:2] == ["Waiting for a worker process", "Starting a worker process (it loads TensorFlow once)"]
    assert "Loading the model…" in heard and "Checking model.forward" in heard
    with pytest.raises(InputError, match="beyond this checkpoint's limit of 128 tokens"):  # the job's own error
        pool.run(Job("model", RunConfig(max_length=512)), lambda *said: None)


def test_a_checkpoint_past_its_workers_memory_ends_that_worker_while_the_other_answers(pool, wide_checkpoint):
    """Issue 72: BERT with `intermediate_size=40000`, estimated at 1.8 GiB, passed the limits and grew the server
    past 5 GiB. Its worker now ends at its limit; a job on the other worker finishes, and the next job runs."""
    ended = pool.ended
    outcome: dict = {}

    def costly():
        try:
            pool.run(Job("model", RunConfig(checkpoint=str(wide_checkpoint), task="sst2", batch_size=64)),
                     lambda *said: None)
        except worker.WorkerEnded as exc:
            outcome["ended"] = str(exc)

    thread = threading.Thread(target=costly)
    thread.start()
    other = pool.run(training_job(RunConfig()), lambda *said: None)
    thread.join(120)
    assert [result.id for result in other] == ["hparams.lr_sweep", "hparams.lr_range_test"]
    assert outcome["ended"].startswith("This computation took 1.")
    assert "GiB of memory after" in outcome["ended"] and "past the 1.5 GiB one computation may use on this server, " \
                                                         "and was ended; a smaller batch size" in outcome["ended"]
    assert pool.ended == ended + 1
    assert statuses(pool.run(Job("setup", RunConfig()), lambda *said: None))[0] == ("hparams.optimizer", Status.PASS)


def test_a_job_past_its_time_ends_its_worker_and_a_stop_request_reaches_the_worker(pool):
    from diagnostics.core.budget import run_budget, stoppable

    pool.run(Job("setup", RunConfig()), lambda *said: None)  # both workers warm: their start is not the job's time
    pool.run(Job("setup", RunConfig()), lambda *said: None)
    asked: list[str] = []

    def reason():
        asked.append("asked")
        return "everyone waiting for it left"

    with run_budget(), stoppable(reason):
        stopped = pool.run(training_job(RunConfig()), lambda *said: None)
    assert asked and all(result.status is Status.SKIP for result in stopped)
    assert "everyone waiting for it left" in stopped[0].summary
    pool.time_limit_s = 1.0
    try:
        with pytest.raises(worker.WorkerEnded, match=r"^This computation ran for 1 s, past the 1 s it may take"):
            pool.run(Job("overfit", RunConfig()), lambda *said: None)
    finally:
        pool.time_limit_s = 120


def test_workers_run_heavy_work_in_hosted_mode_unless_set_and_their_limit_reads_from_the_environment(monkeypatch):
    from diagnostics.config import limits

    monkeypatch.delenv(worker.WORKERS_ENV)
    monkeypatch.delenv(limits.HOSTED_ENV, raising=False)
    assert not worker.enabled()
    monkeypatch.setenv(limits.HOSTED_ENV, "1")
    assert worker.enabled()
    assert worker.memory_limit(1) <= 12 * GIB  # the hosted training cap, 10 GiB, and 2 for the rest
    monkeypatch.setenv(worker.WORKERS_ENV, "off")
    assert not worker.enabled()
    monkeypatch.setenv(worker.MEMORY_ENV, "2.5")
    assert worker.memory_limit(4) == int(2.5 * GIB)
    monkeypatch.setenv(worker.MEMORY_ENV, "lots")
    with pytest.raises(InputError, match="DEBUGGER_WORKER_GIB must be a number, zero or more, not 'lots'"):
        worker.memory_limit(1)


@pytest.fixture
def workers_on(monkeypatch):
    monkeypatch.setenv(worker.WORKERS_ENV, "1")
    monkeypatch.setenv(worker.MEMORY_ENV, "1.5")
    worker.shut_down()
    yield
    worker.shut_down()


def test_the_model_page_shows_a_workers_results_and_its_end_in_one_sentence(workers_on, wide_checkpoint):
    from streamlit.testing.v1 import AppTest

    from conftest import ROOT, rendered

    def said(at) -> str:
        return "\n".join(rendered(element.value) for element in [*at.markdown, *at.error, *at.warning])

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180).run()
    at.switch_page("app_pages/2_model.py").run()
    assert not at.exception and "PASS] `model.gradients`" in said(at)
    at.text_input(key="run.checkpoint").set_value(str(wide_checkpoint)).run()
    at.number_input(key="run.batch_size").set_value(64).run()
    assert not at.exception
    # Ended by the server reading its memory, or by its own address-space limit first (a fast allocation): each says
    # the limit, in one sentence.
    assert "1.5 GiB of memory one computation may use on this server" in said(at) \
        or "past the 1.5 GiB one computation may use on this server" in said(at)
    assert at.text_input(key="run.checkpoint").value == str(wide_checkpoint)  # nothing the visitor gave is lost
