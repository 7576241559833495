"""Results shared by configuration: kept, bounded, computed once however many sessions ask at once."""

import threading
import time

import pytest

from diagnostics.config.run import RunConfig
from diagnostics.core.errors import InputError
from diagnostics.config.training import SweepSettings
from diagnostics.serve.store import Entry, Job, SharedResults, overfit_job, training_job
from test_concurrency import at_once


def counting(results=("done",), pause_s=0.3):
    """A computation that counts its runs and takes a moment, so concurrent askers overlap it."""
    calls = []

    def compute(progress):
        calls.append(threading.get_ident())
        progress(0.5, "half way")
        time.sleep(pause_s)
        return list(results)

    return compute, calls


def test_many_sessions_asking_at_once_compute_once_and_share_the_entry():
    store = SharedResults()
    compute, calls = counting()
    entries = []
    failures = at_once(lambda number: entries.append(store.result("key", compute)), 8)
    assert not failures
    assert len(calls) == 1 and store.runs == 1
    assert len(entries) == 8 and all(entry is entries[0] for entry in entries)
    assert entries[0].results == ["done"]


def test_a_kept_entry_is_returned_without_computing_again():
    store = SharedResults()
    compute, calls = counting(pause_s=0)
    first = store.result("key", compute)
    assert store.result("key", compute) is first
    assert len(calls) == 1


def test_a_waiting_session_sees_the_computations_progress():
    store = SharedResults()
    release = threading.Event()

    def compute(progress):
        progress(0.4, "rate 3 of 7")
        release.wait(5)
        return ["done"]

    seen = []
    store.start("key", compute)

    def watch(fraction, text, left):
        seen.append((fraction, text))
        release.set()

    store.result("key", compute, progress=watch, poll_s=0.05)
    assert (0.4, "rate 3 of 7") in seen


def test_an_error_reaches_every_waiter_and_is_not_kept():
    store = SharedResults()
    calls = []

    def compute(progress):
        calls.append(1)
        time.sleep(0.2)
        raise InputError("the checkpoint cannot be loaded")

    raised = at_once(lambda number: store.result("key", compute), 3)
    assert len(raised) == 3 and all(isinstance(exc, InputError) for exc in raised)
    assert len(calls) == 1 and store.get("key") is None
    with pytest.raises(InputError):
        store.result("key", compute)
    assert len(calls) == 2


def test_the_store_keeps_at_most_its_bound_dropping_the_least_recently_used():
    store = SharedResults(max_entries=2)
    for key in ("a", "b"):
        store.result(key, lambda progress, key=key: [key])
    store.get("a")  # used: "b" is now the oldest
    store.result("c", lambda progress: ["c"])
    assert len(store) == 2
    assert store.get("b") is None and store.get("a") is not None and store.get("c") is not None


def test_computing_again_replaces_the_entry_and_keeps_the_old_one_until_done():
    store = SharedResults()
    old = store.result("key", lambda progress: ["old"])
    release = threading.Event()

    def slow(progress):
        release.wait(5)
        return ["new"]

    flight = store.start("key", slow, again=True)
    assert store.get("key") is old
    release.set()
    flight.done.wait(5)
    assert store.get("key").results == ["new"] and store.runs == 2


def test_a_session_that_leaves_does_not_stop_the_computation():
    store = SharedResults()
    compute, calls = counting(pause_s=0.1)
    store.start("key", compute)  # the asking session goes away without waiting
    for _ in range(50):
        if store.get("key"):
            break
        time.sleep(0.05)
    assert store.get("key").results == ["done"]


@pytest.mark.parametrize("seconds, said", [(10, "just now"), (120, "2 minutes ago"), (60 * 60 * 3, "3 hours ago"),
                                           (86400 * 2, "2 days ago")])
def test_an_entry_says_how_old_it_is(seconds, said):
    assert Entry([], computed_at=1000.0, seconds=1.0).age(now=1000.0 + seconds) == said


def test_jobs_are_keyed_by_the_full_configuration_and_settings():
    config = RunConfig()
    assert Job("data", config) == Job("data", RunConfig())
    assert training_job(config, SweepSettings(rates=3)) != training_job(config, SweepSettings(rates=4))
    assert training_job(config, SweepSettings(rates=7)) == training_job(config, SweepSettings(rates=7.0))
    assert overfit_job(config, 20) != overfit_job(config, 30)
    assert Job("model", config) != Job("model", RunConfig(seed=1))


def test_two_sessions_sweeping_one_configuration_train_once_and_see_the_same_curves():
    """The pages' own calls in two threads (sessions), on the demo kit: one sweep is trained, both get it."""
    from ui.shared import shared_results
    from ui.caches import open_run

    store = shared_results()
    config = RunConfig(batch_size=16, learning_rate=3e-3).validated()
    job = training_job(config, SweepSettings(rates=3, steps=3, range_steps=8))
    run = open_run(config)
    sweeps = []

    def compute(progress):
        sweeps.append(1)
        return job.run(run, progress)

    runs_before = store.runs
    entries = {}
    failures = at_once(lambda number: entries.setdefault(number, store.result(job, compute)), 2)
    assert not failures, failures
    assert len(sweeps) == 1 and store.runs == runs_before + 1
    first, second = entries[0].results, entries[1].results
    assert first is second
    assert {result.id for result in first} == {"hparams.lr_sweep", "hparams.lr_range_test"}
    assert all(result.status.value in ("pass", "warn", "fail") or result.status.value == "skip" and
               result.evidence.get("losses") for result in first)  # measured: an uninformative curve is a skip


# ------------------------------------------------------------ admission, bounds, budgets, stuck computations


def blocking(gate: threading.Event, running: list, results=("done",)):
    def compute(progress):
        running.append(1)
        try:
            gate.wait(10)
            return list(results)
        finally:
            running.pop()
    return compute


def wait_until(condition, seconds=5.0):
    deadline = time.time() + seconds
    while not condition() and time.time() < deadline:
        time.sleep(0.02)
    return condition()


def test_heavy_computations_are_admitted_one_slot_at_a_time_in_order_with_their_place_shown():
    store = SharedResults(heavy_slots=1)
    gates = [threading.Event() for _ in range(3)]
    running = []
    flights = [store.start(f"k{i}", blocking(gates[i], running), heavy=True) for i in range(3)]
    assert wait_until(lambda: flights[0].admitted is not None and "2 heavy computations ahead" in flights[2].text)
    assert "1 heavy computations ahead" in flights[1].text and len(running) == 1
    gates[1].set()  # the second is ready but waits for the first: order is kept
    time.sleep(0.3)
    assert flights[1].admitted is None
    gates[0].set()
    gates[2].set()
    assert all(flight.done.wait(5) for flight in flights)
    assert store.heavy_peak == 1 and [flight.entry.results for flight in flights] == [["done"]] * 3


def test_light_computations_never_wait_for_a_heavy_slot():
    store = SharedResults(heavy_slots=1)
    gate = threading.Event()
    store.start("heavy", blocking(gate, []), heavy=True)
    assert store.result("light", lambda progress: ["quick"]).results == ["quick"]
    gate.set()


def test_a_session_may_queue_only_so_many_heavy_computations():
    from diagnostics.serve.store import Busy

    store = SharedResults(heavy_slots=1, per_session=2)
    gate = threading.Event()
    store.start("a", blocking(gate, []), heavy=True, owner="visitor")
    store.start("b", blocking(gate, []), heavy=True, owner="visitor")
    with pytest.raises(Busy, match="already have 2 computations"):
        store.start("c", blocking(gate, []), heavy=True, owner="visitor")
    store.start("a", blocking(gate, []), heavy=True, owner="visitor")  # joining one under way is no more work
    store.start("c", blocking(gate, []), heavy=True, owner="someone else")
    gate.set()


def test_results_cut_short_by_the_budget_are_shown_but_not_kept(monkeypatch):
    from diagnostics.core.budget import BudgetExceeded, check_deadline

    monkeypatch.setenv("DEBUGGER_HOSTED", "1")
    monkeypatch.setenv("DEBUGGER_RUN_BUDGET_S", "0.2")
    store = SharedResults()

    def slow(progress):
        time.sleep(0.4)
        try:
            check_deadline("in a test")
        except BudgetExceeded:
            return ["skipped: budget"]
        return ["whole"]

    assert store.result("key", slow).results == ["skipped: budget"]
    assert store.get("key") is None  # the next visitor computes it again


def test_the_budget_starts_when_a_heavy_computation_is_admitted(monkeypatch):
    from diagnostics.core.budget import check_deadline

    monkeypatch.setenv("DEBUGGER_HOSTED", "1")
    monkeypatch.setenv("DEBUGGER_RUN_BUDGET_S", "0.5")
    store = SharedResults(heavy_slots=1)

    def step(progress):
        time.sleep(0.3)
        check_deadline("in a test")
        return ["whole"]

    flights = [store.start(key, step, heavy=True) for key in ("first", "second", "third")]
    assert all(flight.done.wait(5) for flight in flights)
    # The third waited 0.6 s in the queue, past the budget, yet ran whole: its budget began at admission.
    assert [flight.error for flight in flights] == [None] * 3 and store.get("third").results == ["whole"]


def test_the_store_is_bounded_in_bytes_and_keeps_pinned_entries():
    store = SharedResults(max_entries=100, max_bytes=30_000)
    store.start("pinned", lambda progress: ["p" * 10_000], pin=True).done.wait(5)
    for key in ("a", "b", "c", "d"):
        store.result(key, lambda progress, key=key: [key * 10_000])
    assert store.nbytes <= 30_000 and store.get("pinned") is not None
    assert store.get("d") is not None and store.get("a") is None


def test_pinned_entries_count_in_the_bounds_and_nothing_is_pinned_in_hosted_mode(monkeypatch):
    """A warm-up of every scenario for any checkpoint kept 41 pinned entries against a bound of 4: pins are kept
    before anything else, never past the bounds; and a hosted visitor pins nothing."""
    store = SharedResults(max_entries=4)
    for number in range(10):
        store.start(f"warm{number}", lambda progress, number=number: [number], pin=True).done.wait(5)
    assert (
        len(store) == 4 and [store.get(f"warm{number}") is not None for number in range(10)] == [False] * 6 + [True] * 4
    )
    store.result("visitor", lambda progress: ["v"])
    assert len(store) == 4 and store.get("visitor") is not None  # the oldest pin made room
    monkeypatch.setenv("DEBUGGER_HOSTED", "1")
    hosted = SharedResults(max_entries=2)
    hosted.start("pin", lambda progress: ["p"], pin=True).done.wait(5)
    for key in ("a", "b"):
        hosted.result(key, lambda progress, key=key: [key])
    assert hosted.get("pin") is None


def test_a_stuck_computation_is_given_up_and_asking_again_starts_afresh():
    store = SharedResults(time_limit_s=0.3)
    forever = threading.Event()
    stuck = store.start("key", lambda progress: forever.wait(60) and ["never"])
    with pytest.raises(TimeoutError, match="given up"):
        store.result("key", lambda progress: ["unused"], poll_s=0.05)  # a waiter times out with a message
    assert stuck.done.is_set() and stuck.abandoned
    assert store.result("key", lambda progress: ["fresh"]).results == ["fresh"] and store.runs == 2
    forever.set()
    time.sleep(0.1)
    assert store.get("key").results == ["fresh"]  # what the stuck one returns at last is dropped


def test_a_stuck_heavy_computation_frees_its_slot():
    store = SharedResults(heavy_slots=1, time_limit_s=0.3)
    forever = threading.Event()
    store.start("stuck", lambda progress: forever.wait(60) and ["never"], heavy=True)
    time.sleep(0.4)
    assert store.result("next", lambda progress: ["ran"], heavy=True, poll_s=0.05).results == ["ran"]
    forever.set()


def test_a_waiting_page_reads_the_computations_own_estimate_counting_down_from_when_it_was_said():
    import time as clock

    from diagnostics.serve.store import Flight

    flight = Flight()
    assert flight.remaining() is None  # nothing said yet: no estimate
    flight.report(0.25, "Training at learning rate 1e-04 (2 of 8)", None)
    assert flight.remaining() is None  # no pace yet: none shown, whatever the fraction
    flight.report(0.3, "Training at learning rate 1e-04 (2 of 8)", 30.0)
    flight.seconds_left_at = clock.monotonic() - 10.0  # said ten seconds ago
    assert flight.remaining() == pytest.approx(20.0, rel=0.05)


def test_time_left_is_said_in_seconds_then_minutes_in_the_readers_language():
    from diagnostics.core.budget import time_left_text
    from diagnostics.i18n import localize

    assert str(time_left_text(0.2)) == "about 1 s left" and str(time_left_text(89)) == "about 89 s left"
    assert str(time_left_text(200)) == "about 3 min left"
    assert "3" in localize(time_left_text(200), "ru") and localize(time_left_text(200), "ru") != "about 3 min left"


def stepping(steps: int, done: list):
    """A computation that checks for a reason to stop at each of its steps, as training does."""
    from diagnostics.core.budget import BudgetExceeded, check_deadline

    def compute(progress):
        try:
            for step in range(steps):
                check_deadline(f"at step {step + 1}")
                time.sleep(0.05)
        except BudgetExceeded as exc:
            done.append(str(exc))
            return ["stopped"]
        done.append("finished")
        return ["finished"]

    return compute


def test_work_everyone_left_stops_at_its_next_step_and_a_rerun_within_the_grace_keeps_it():
    store = SharedResults(heavy_slots=1, leave_grace_s=0.3)
    done: list = []
    flight = store.start("left", stepping(400, done), heavy=True, owner="a")
    time.sleep(0.2)
    store.leave("left", flight)  # the tab closed
    assert flight.done.wait(5) and len(done) == 1 and done[0].startswith("Stopped at step ")
    assert "everyone waiting for it left" in done[0] and store.get("left") is None  # not kept
    kept: list = []
    rerun = store.start("rerun", stepping(30, kept), heavy=True, owner="b")
    store.leave("rerun", rerun)
    assert store.start("rerun", stepping(30, kept), heavy=True, owner="b") is rerun  # back within the grace
    assert rerun.done.wait(10) and kept == ["finished"] and store.get("rerun") is not None


def test_a_computation_given_up_stops_at_its_next_step_instead_of_training_on():
    store = SharedResults(heavy_slots=1, time_limit_s=0.3)
    done: list = []
    flight = store.start("slow", stepping(400, done), heavy=True, owner="a")
    time.sleep(0.5)
    store.give_up_if_stuck("slow", flight)
    deadline = time.monotonic() + 5
    while not done and time.monotonic() < deadline:
        time.sleep(0.05)
    assert done and "given up" in done[0]


def test_a_full_queue_says_so_and_one_visitor_is_bounded_across_tabs():
    from diagnostics.serve.store import Busy
    from ui.visitors import visitor_of

    store = SharedResults(heavy_slots=1, max_queue=2)
    hold = threading.Event()
    store.start("running", lambda progress: hold.wait(10) and ["r"], heavy=True, owner="v0")
    time.sleep(0.2)
    for number in (1, 2):
        store.start(f"queued{number}", lambda progress: ["q"], heavy=True, owner=f"v{number}")
    with pytest.raises(Busy, match="The server is full: 2 heavy computations are waiting for its 1 slot"):
        store.start("one too many", lambda progress: ["x"], heavy=True, owner="v3")
    hold.set()
    # Two tabs of one browser share its XSRF cookie: one visitor, bounded as one.
    token = bytes.fromhex("00112233")
    masked = [
        (mask, bytes(a ^ b for a, b in zip(mask, token, strict=True)))
        for mask in (b"\x01\x02\x03\x04", b"\xff\x00\xaa\x55")
    ]
    first, second = ({"_streamlit_xsrf": f"2|{mask.hex()}|{value.hex()}|1700000000"} for mask, value in masked)
    assert first != second  # written anew on each page load, with a fresh mask
    assert visitor_of(first, "tab-1") == visitor_of(second, "tab-2") != visitor_of({}, "tab-1") == "tab-1"
    # Where the server sees the machine a connection comes from (a room's app), that is the visitor, whatever
    # cookie a program makes up for each of its sessions (twelve made-up cookies were twelve visitors).
    made_up = [{"_streamlit_xsrf": f"{number:032x}"} for number in range(12)]
    assert {visitor_of(cookies, f"tab-{number}", "192.168.1.20") for number, cookies in enumerate(made_up)} == {
        "address:192.168.1.20"}
    assert visitor_of(first, "tab-1", "192.168.1.21") != visitor_of(first, "tab-1", "192.168.1.20")


@pytest.mark.parametrize("values, hops, visitor", [
    (["81.2.69.160"], 1, "81.2.69.160"),
    (["1.2.3.4, 81.2.69.160"], 1, "81.2.69.160"),  # what the client sent stands left: never read
    (["1.2.3.4", "81.2.69.160"], 1, "81.2.69.160"),  # one header a proxy
    (["1.2.3.4, 81.2.69.160, 10.16.3.80, 172.17.0.1"], 1, "81.2.69.160"),  # the host's own proxies passed over
    (["1.2.3.4, 81.2.69.160, 100.64.0.9"], 1, "81.2.69.160"),  # shared (carrier) space is no visitor's either
    (["1.2.3.4, 81.2.69.160, 52.95.110.1, 10.0.0.2"], 2, "81.2.69.160"),  # a public proxy in front: PROXY_HOPS=2
    (["10.0.0.2, 192.168.1.4"], 1, None),  # no public entry: the cookie decides
    ([], 1, None),
    (["81.2.69.160, unknown"], 1, None),  # an entry no proxy would write: nothing left of it is trusted
    (["81.2.69.160"], 0, None),  # DEBUGGER_PROXY_HOPS=0: the header is not read
    (["2a00:1450:4001:81a::1"], 1, "2a00:1450:4001:800::/56"),  # one household's IPv6 block, whichever address in it
    (["2a00:1450:4001:8ff:ffff::9"], 1, "2a00:1450:4001:800::/56"),
    (["::ffff:81.2.69.160"], 1, "81.2.69.160"),
])
def test_a_hosted_visitor_is_the_public_address_the_proxies_forwarded(values, hops, visitor):
    from ui.visitors import forwarded_address

    assert forwarded_address(values, hops) == visitor


@pytest.mark.parametrize("forwarded, connection, hops, visitor", [
    # `docker run -p`, which docs/hosting.md offers: no proxy, so the header is the client's own words and is never
    # read; the visitor is the connection's address however many headers it forges.
    (["81.2.69.160"], "203.0.113.7", 0, "203.0.113.7"),
    (["81.2.69.1, 81.2.69.2", "81.2.69.3"], "203.0.113.7", 0, "203.0.113.7"),
    ([], "2001:db8:abcd:12ff::1", 0, "2001:db8:abcd:1200::/56"),  # a /48 is 256 visitors, not 65,536
    ([], None, 0, None),  # no address known: the cookie decides
    # The Space names its one proxy hop (DEBUGGER_PROXY_HOPS=1): the address it forwarded, not its own.
    (["1.2.3.4, 81.2.69.160, 10.16.3.80"], "10.16.3.1", 1, "81.2.69.160"),
])
def test_a_hosted_visitor_is_the_connection_unless_the_deployment_names_its_proxies(forwarded, connection, hops,
                                                                                     visitor):
    from ui.visitors import hosted_address

    assert hosted_address(forwarded, connection, hops) == visitor
