"""serve.memo.Kept: the shared loaders' and results store's keeper, out of reach of a client's "clear cache"."""

import threading

import pytest

from diagnostics.serve.memo import Kept, kept


def test_values_are_kept_by_their_arguments_the_least_recently_used_let_go_first():
    calls = []

    @kept(max_entries=2)
    def square(value):
        calls.append(value)
        return value * value

    assert [square(2), square(3), square(2), square(4), square(2), square(3)] == [4, 9, 4, 16, 4, 9]
    assert calls == [2, 3, 4, 3] and len(square) == 2  # 3 was the least recently used when 4 came


def test_values_weighed_in_bytes_are_let_go_past_the_bound_and_the_newest_is_kept_whatever_it_weighs():
    """Tokenizers are kept by their files' bytes in hosted mode: eight checkpoints with large tokenizer files held
    eight of them at once when the cache counted entries."""
    weights = {"small": 1, "large": 20, "huge": 50}

    @kept(max_entries=8, max_bytes=32, weigh=weights.get)
    def load(name):
        return name.upper()

    assert [load("small"), load("large")] == ["SMALL", "LARGE"] and len(load) == 2
    load("huge")  # past the bound alone: kept, the others let go
    assert len(load) == 1 and load._values.popitem()[1] == "HUGE"


def test_callers_of_one_value_wait_for_one_computation_and_a_raising_call_keeps_nothing():
    gate, calls = threading.Event(), []

    def slow(key):
        calls.append(key)
        assert gate.wait(10)
        return key.upper()

    keeper = Kept(slow)
    seen = []
    threads = [threading.Thread(target=lambda: seen.append(keeper("a"))) for _ in range(4)]
    for thread in threads:
        thread.start()
    gate.set()
    for thread in threads:
        thread.join(10)
    assert seen == ["A"] * 4 and calls == ["a"]

    failures = []

    def fails():
        failures.append(1)
        raise OSError("not now")

    keeper = Kept(fails)
    for _ in range(2):
        with pytest.raises(OSError):
            keeper()
    assert len(failures) == 2 and len(keeper) == 0


def test_streamlits_clear_cache_handler_leaves_the_apps_shared_values():
    """What the server runs on a client's `clear_cache` message, called as the server calls it."""
    from types import SimpleNamespace

    from streamlit.runtime.app_session import AppSession
    from ui import caches, shared

    store = shared.shared_results()
    reachable = caches.hub_reachable()
    AppSession._handle_clear_cache_request(SimpleNamespace(_session_state={}))
    assert shared.shared_results() is store and len(caches.hub_reachable) == 1 and caches.hub_reachable() == reachable
