"""Many users at once: sessions share the cached model (ui.caches, kept by serve.memo) and must not disturb each
other."""

import pytest

import threading

import numpy as np
from streamlit.testing.v1 import AppTest

from conftest import ROOT
from diagnostics.config.run import RunConfig
from diagnostics.config.training import SweepSettings
from diagnostics.core.context import RunContext
from diagnostics.walk.stages import hparams_stage, overfit_stage
from ui.caches import cached_model, load_inputs

pytestmark = [pytest.mark.slow]

APP = str(ROOT / "app.py")


def training_session() -> dict:
    """One user's training checks, through the same calls and shared caches the pages use.

    Sessions are threads here, as in a Streamlit server. Two AppTest instances cannot run at once in one
    process (AppTest installs one global mock runtime per run), so the pages' own calls are made directly.
    """
    config = RunConfig(batch_size=16, learning_rate=3e-3).validated()
    tokenizer, split = load_inputs(config)
    run = RunContext(config, tokenizer, split, cached_model)  # one per session: sharing it is tested apart
    training = hparams_stage(run, sweep=SweepSettings(rates=3, steps=3, range_steps=8), parts=("training",))
    overfit = overfit_stage(run, epochs=8)
    results = {result.id: result for result in training + overfit}
    # Each measured (an uninformative range test is a skip with its curve as evidence).
    assert all(result.status.value != "error" and (result.status.value != "skip" or result.evidence)
               for result in results.values()), results
    return {
        "sweep": results["hparams.lr_sweep"].evidence["losses"],
        "range": results["hparams.lr_range_test"].evidence["losses"],
        "overfit": results["overfit.one_batch"].evidence["losses"],
    }


def at_once(session, count: int) -> list[BaseException]:
    """Run `session(number)` in `count` threads at once; what they raised (a thread's exception would vanish)."""
    failures: list[BaseException] = []

    def run(number: int) -> None:
        try:
            session(number)
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=run, args=(number,)) for number in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=600)
    return failures


def assert_same_curves(first: dict, second: dict) -> None:
    assert first.keys() == second.keys()
    for name in first:
        a, b = first[name], second[name]
        a = np.asarray(list(a.values()) if isinstance(a, dict) else a, dtype=float)
        b = np.asarray(list(b.values()) if isinstance(b, dict) else b, dtype=float)
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6, equal_nan=True, err_msg=name)


def test_two_sessions_at_once_get_what_each_gets_alone_and_the_cached_model_never_changes():
    alone = training_session()
    shared = cached_model("demo", 3, 0)  # the object every session gets from the cache
    before = [weight.copy() for weight in shared.get_weights()]

    outcomes: dict[int, dict] = {}

    def session(number: int) -> None:
        outcomes[number] = training_session()

    failures = at_once(session, 2)
    assert not failures, failures
    assert len(outcomes) == 2
    for outcome in outcomes.values():
        assert_same_curves(alone, outcome)
    assert cached_model("demo", 3, 0) is shared
    for kept, now in zip(before, shared.get_weights(), strict=True):
        np.testing.assert_array_equal(kept, now)


class StopTraining(Exception):
    """Ends the background session's training once the other page has rendered."""


def test_a_heavy_check_in_one_session_does_not_block_another_sessions_page(demo_inputs):
    tokenizer, split = demo_inputs
    model = cached_model("demo", 3, 0)
    started, stop = threading.Event(), threading.Event()
    epochs_done: list[int] = []

    def progress(fraction: float, text: str, left) -> None:
        epochs_done.append(1)
        started.set()
        if stop.is_set():
            raise StopTraining

    heavy = threading.Thread(
        target=lambda: overfit_stage(
            RunContext(RunConfig(batch_size=16), tokenizer, split, lambda *args: model), epochs=1000, progress=progress
        )
    )
    heavy.start()
    try:
        assert started.wait(timeout=300), "the heavy check never started"
        other = AppTest.from_file(APP, default_timeout=300).run()  # another user opens the Data page
        other.selectbox(key="run.task").set_value("sst2").run()
        rendered_while_training = heavy.is_alive()
        epochs_at_render = len(epochs_done)
    finally:
        stop.set()
        heavy.join(timeout=300)
    assert not other.exception
    assert set(other.dataframe[0].value["label_name"]) <= {"negative", "positive"}
    assert rendered_while_training, "the heavy check ended before the other page rendered: make it longer"
    assert epochs_at_render < 1000


def test_one_tokenizer_shared_by_sessions_is_never_borrowed_twice(demo_inputs):
    """A fast tokenizer raises "Already borrowed" when two threads call it at once; the app's calls take turns."""
    from diagnostics.keras import batches as data
    from diagnostics.config.tasks import get_task

    tokenizer, split = demo_inputs
    task = get_task("mnli")
    rows = split.select(range(64)).to_dict()

    def session(number: int) -> None:
        for step in range(150):
            data.tokenize(tokenizer, task, rows, None if step % 2 else 8 + number)
            if step % 25 == 0:
                batch = data.build_first_batch(split, tokenizer, RunConfig(batch_size=8, max_length=16 + number))
                data.decoded_rows(batch, tokenizer, task)

    failures = at_once(session, 4)
    assert not failures, failures
