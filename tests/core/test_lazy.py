"""A value computed once per instance: one instance's slow value never holds another's (Python 3.11's
`functools.cached_property` locks every instance of a class at once)."""

import threading

import pytest

from diagnostics.core.lazy import once


class Slow:
    def __init__(self, gate: threading.Event | None = None):
        self.gate, self.calls = gate, 0

    @once
    def value(self) -> int:
        self.calls += 1
        if self.gate is not None:
            assert self.gate.wait(10), "never let through"
        return self.calls


def test_a_value_is_computed_once_and_kept_and_forgotten_on_del():
    slow = Slow()
    assert (slow.value, slow.value, slow.calls) == (1, 1, 1)
    del slow.value
    assert (slow.value, slow.calls) == (2, 2)


def waits_while_held(hold, entered, gate: threading.Event, read) -> bool:
    """Whether `read()` waits while another thread runs `hold()` and stands inside it (`entered()` true) until `gate`
    opens; the gate is opened and the holder ended either way."""
    holder = threading.Thread(target=hold, daemon=True)
    holder.start()
    while not entered():
        holder.join(0.01)
    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(2)
    waited = reader.is_alive()
    gate.set()
    holder.join(10)
    return waited


def test_one_instance_computing_a_slow_value_holds_no_other_instance():
    gate = threading.Event()
    stuck, free = Slow(gate), Slow()
    assert not waits_while_held(lambda: stuck.value, lambda: stuck.calls > 0, gate, lambda: free.value), \
        "another instance's value waited for the slow one"
    assert (stuck.value, free.value) == (1, 1)


def test_readers_of_the_same_value_wait_for_one_computation_and_a_raising_one_is_not_kept():
    gate = threading.Event()
    slow = Slow(gate)
    seen = []
    readers = [threading.Thread(target=lambda: seen.append(slow.value)) for _ in range(4)]
    for reader in readers:
        reader.start()
    gate.set()
    for reader in readers:
        reader.join(10)
    assert seen == [1, 1, 1, 1] and slow.calls == 1

    class Fails:
        tries = 0

        @once
        def value(self):
            Fails.tries += 1
            raise ValueError("not now")

    failing = Fails()
    for _ in range(2):
        with pytest.raises(ValueError):
            _ = failing.value
    assert Fails.tries == 2


def test_one_run_contexts_first_batch_holds_no_other_sessions(monkeypatch):
    """The attack: a crafted tokenizer whose pre-tokenizer backtracks held every other session's Data page (29.7 to
    77.8 s where it takes 1.1 s alone). Here one context's first batch is held at a gate; another's builds."""
    from diagnostics.config.run import RunConfig
    from diagnostics.core import context

    gate, entered = threading.Event(), threading.Event()

    def build(split, tokenizer, config):  # the batch is not what is tested: which context waits is
        if tokenizer == "crafted":
            entered.set()
            assert gate.wait(10)
        return ("batch of", config.seed)

    monkeypatch.setattr(context, "build_first_batch", build)
    stuck = context.RunContext(RunConfig(seed=1), "crafted", split=None)
    other = context.RunContext(RunConfig(seed=2), "kit", split=None)
    assert not waits_while_held(lambda: stuck.first_batch, entered.is_set, gate, lambda: other.first_batch)
    assert other.first_batch == ("batch of", 2) and stuck.first_batch == ("batch of", 1)
