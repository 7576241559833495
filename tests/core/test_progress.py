"""The time a computation has left, on a clock the test controls: from the steps that remain at the pace of a step
after the traced first one, over the whole computation; never before there is a pace; within a factor of 2 of the
truth once a quarter of the work is done, whatever the tracing cost and however the phases differ."""

import threading

import pytest

from diagnostics.core.progress import Work, counting, doing, in_sequence, plan, step



class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def tick(self, seconds: float) -> None:
        self.now += seconds


def simulate(phases, *, traces: int = 1):
    """Run `phases` [(steps, seconds each, seconds of the first when traced or None)] through a Work, planned in
    full before it starts; returns [(seconds so far, fraction, estimate)] after every step, and the total time."""
    clock, told = Clock(), []
    work = Work(lambda fraction, text, left: told.append((clock.now, fraction, left)), clock=clock)
    work.plan(sum(steps for steps, _, _ in phases), traces=traces)
    for steps, seconds, traced in phases:
        for index in range(steps):
            first = traced is not None and index == 0
            clock.tick(traced if first else seconds)
            work.step(traced=first)
    return told, clock.now


def test_no_estimate_before_two_steps_past_the_traced_one():
    told, _ = simulate([(10, 1.0, 30.0)])
    assert [left for _, _, left in told[:2]] == [None, None]  # the traced step, then one paced step
    assert told[2][2] is not None


@pytest.mark.parametrize("phases", [
    [(100, 1.0, 40.0)],  # one copy: the traced step costs forty steps
    [(12, 2.0, 25.0), (56, 1.0, None), (40, 1.2, None), (20, 0.8, None)],  # learnability, sweep, range test, overfit
    [(20, 0.5, 60.0), (200, 1.5, None)],  # a slow phase after a fast one
    [(30, 1.0, 10.0), (30, 1.0, 10.0)],  # two copies, each traced (planned as two)
])
def test_past_a_quarter_of_the_work_every_estimate_is_within_a_factor_of_2(phases):
    traces = sum(traced is not None for _, _, traced in phases)
    told, total = simulate(phases, traces=traces)
    checked = 0
    for now, fraction, left in told:
        truth = total - now
        if fraction >= 0.25 and truth > 0:
            assert left is not None, (now, fraction)
            assert truth / 2 <= left <= truth * 2, (now, left, truth)
            checked += 1
    assert checked > len(told) / 2


def test_a_trace_still_to_come_counts_at_the_cost_of_the_one_measured():
    clock = Clock()
    work = Work(lambda *told: None, clock=clock)
    work.plan(20, traces=2)
    clock.tick(21.0)
    work.step(traced=True)
    for _ in range(4):
        clock.tick(1.0)
        work.step()
    assert work.left() == pytest.approx(15 * 1.0 + 20.0)  # 15 steps, and the next trace's 20 s beyond a step


def measure(clock, key: str, *, traced_s: float, step_s: float, steps: int) -> None:
    """A computation of the run `key` that measures its pace: a traced first step, then `steps` steps."""
    with Work(lambda *told: None, clock=clock, key=key) as first:
        first.plan(steps + 1, traces=1)
        clock.tick(traced_s)
        first.step(traced=True)
        for _ in range(steps):
            clock.tick(step_s)
            first.step()


def test_a_later_computation_of_the_same_run_tells_its_time_from_the_first_second():
    """Learnability measured the pace; the sweep that follows on the same model, batch and length says how long it
    has from its start (its copy's trace included), not after a minute of silence; another run learns nothing."""
    from diagnostics.core import progress

    progress.MEASURED.pop("kit|mnli|16|128", None)
    clock = Clock()
    measure(clock, "kit|mnli|16|128", traced_s=25.0, step_s=2.0, steps=11)
    later = Work(lambda *told: None, clock=clock, key="kit|mnli|16|128")
    later.plan(56, traces=1)
    assert later.left() == pytest.approx(56 * 2.0 + (25.0 - 2.0))
    assert Work(lambda *told: None, clock=clock, key="other|rte|8|64").left() is None
    clock.tick(200.0)  # a step under way for longer than the whole estimate: no time is told until it ends
    assert later.left() is None
    progress.MEASURED.pop("kit|mnli|16|128", None)


def test_a_new_process_on_the_same_machine_tells_its_time_from_the_first_second(tmp_path, monkeypatch):
    """Each trace runs in a process of its own, and the app starts again: the pace an earlier process measured on
    this machine is read from the cache folder, so the first computation of a process is not a minute of counter
    only; an unreadable file gives no estimate rather than an error."""
    from diagnostics.core import progress

    monkeypatch.setenv("DEBUGGER_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(progress, "MEASURED", {})
    monkeypatch.setattr(progress, "_read_from_disk", [False])
    clock = Clock()
    measure(clock, "ckpt|rte|8|128", traced_s=30.0, step_s=3.0, steps=3)
    assert (tmp_path / progress.PACES_FILE).is_file()
    monkeypatch.setattr(progress, "MEASURED", {})  # a new process: nothing in memory
    monkeypatch.setattr(progress, "_read_from_disk", [False])
    later = Work(lambda *told: None, clock=clock, key="ckpt|rte|8|128")
    later.plan(10, traces=1)
    assert later.left() == pytest.approx(10 * 3.0 + (30.0 - 3.0))
    (tmp_path / progress.PACES_FILE).write_text("{not json")
    monkeypatch.setattr(progress, "MEASURED", {})
    monkeypatch.setattr(progress, "_read_from_disk", [False])
    assert Work(lambda *told: None, clock=clock, key="ckpt|rte|8|128").left() is None


def test_steps_spared_are_withdrawn_and_the_fraction_ends_at_one():
    clock = Clock()
    told = []
    work = Work(lambda fraction, text, left: told.append(fraction), clock=clock)
    work.plan(10)
    for _ in range(6):
        clock.tick(1.0)
        work.step()
    work.plan(-4)  # a range test that stopped early
    work.doing("Done")
    assert told[-1] == 1.0 and work.left() is None


def test_the_step_under_way_counts_against_the_estimate_never_below_a_step_and_withdraws_it_once_outrun():
    clock = Clock()
    work = Work(lambda *told: None, clock=clock)
    work.plan(10)
    for _ in range(3):
        clock.tick(2.0)
        work.step()
    assert work.left() == pytest.approx(14.0)
    clock.tick(5.0)
    assert work.left() == pytest.approx(9.0)
    clock.tick(8.5)
    assert work.left() == pytest.approx(2.0)  # 0.5 s of the estimate left: a step's time at least
    clock.tick(100.0)
    assert work.left() is None  # the step has outrun all 14 s: nothing to tell until it ends
    work.step()
    assert work.left() is not None  # a pace again, the stalled step counted into it


def test_steps_and_texts_reach_the_computation_of_the_context_and_nothing_outside_it():
    told = []
    step()  # outside any computation: nothing to count into, nothing raised
    with counting(Work(lambda fraction, text, left: told.append((fraction, text)))) as work:
        plan(2)
        doing("Training")
        step()
        step()
    assert told == [(0.0, "Training"), (0.5, "Training"), (1.0, "Training")] and work.done == 2


def test_the_heartbeat_says_the_status_again_while_a_step_takes_long():
    told = threading.Event()
    with Work(lambda *said: told.set(), heartbeat=0.05):
        assert told.wait(5.0)


def test_a_sequence_of_computations_tells_the_time_left_of_all_of_them_from_the_running_ones_pace():
    planned = [(0, False), (60, True), (20, True)]  # quick checks, the sweep, the overfit test (each its own copy)
    assert in_sequence(planned, 0, 0.5, None) == (0.0, None)  # no steps yet, no pace
    fraction, left = in_sequence(planned, 1, 0.5, 30.0)  # half the sweep's 60 steps done, 30 s left of it: 1 s a step
    assert fraction == pytest.approx(30 / 80) and left == pytest.approx(30.0 + 20 + 10)
    assert in_sequence(planned, 2, 1.0, None) == (1.0, None)


def test_lines_say_a_new_step_within_a_second_and_the_same_one_every_few_seconds(monkeypatch):
    from diagnostics.core import progress

    clock = [0.0]
    monkeypatch.setattr(progress.time, "monotonic", lambda: clock[0])
    lines = progress.Lines(every=3.0, new_after=1.0)
    said = []
    for at, text in [(0.5, "Checking data.columns"), (3.0, "Checking model.forward"), (3.5, "Copying the model"),
                     (4.2, "Copying the model"), (5.0, "Training"), (5.5, "Training"), (8.0, "Training")]:
        clock[0] = at
        if lines.due(text):
            said.append((at, text))
    # Work done within 3 s says nothing; a new text waits a second (the copy is said while it is traced), the same
    # one three.
    assert said == [(3.0, "Checking model.forward"), (4.2, "Copying the model"), (5.5, "Training")]
