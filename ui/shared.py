"""The pages' side of the shared results: compute a job once for every session (or wait for the session already
computing it, watching its progress), say how old a result is, and offer to compute it again."""

from __future__ import annotations

import math

import streamlit as st

from diagnostics.core.budget import time_left_text
from ui.visitors import visitor_id
from diagnostics.walk.causes import explain
from diagnostics.core.errors import InputError
from diagnostics.config.training import DEFAULT_EPOCHS, SweepSettings
from diagnostics.i18n import _, localize, msg, msgn
from diagnostics.walk.registry import units_of
from diagnostics.core.check import STAGE_ORDER
from diagnostics.core.result import CheckResult
from diagnostics.serve import worker
from diagnostics.serve.memo import kept
from diagnostics.serve.store import NEEDS_MODEL, Entry, Flight, Job, SharedResults, overfit_job, training_job
from diagnostics.keras.training import effective_rate
from ui.render import run_stage, shown
from ui.caches import open_run
from ui.session import EPOCHS_KEY, sweep_from_state

AGAIN_KEY = "shared.again"  # the job kinds whose "Compute again" was pressed (a callback, before the page runs)
MAX_ENTRIES = 256  # a few hundred KB of evidence each: bounded well under the Space's memory


@kept()
def shared_results() -> SharedResults:
    """The one store of every session's results on this server (kept where no client's "clear cache" reaches)."""
    return SharedResults(max_entries=MAX_ENTRIES)


def waiting_text(label: str, flight: Flight) -> str:
    others = " · " + localize(msgn("{count} session waiting for it", "{count} sessions waiting for it",
                                   flight.waiters)) if flight.waiters > 1 else ""
    left = flight.remaining()
    horizon = "" if left is None else " · " + localize(time_left_text(left))
    elapsed = localize(msg("{seconds} s so far", seconds=round(flight.elapsed())))
    return f"{label} {shown(flight.text)} ({elapsed}{horizon}{others})"


def computed(job: Job, label: str, *, again: bool = False, pin: bool = False, watch=None) -> Entry | None:
    """The job's shared entry: kept, computed now, or awaited while another session computes it (or while it waits
    its turn for one of the server's heavy slots), with its progress on this page. Unusable input, a visitor with
    too much work queued and a computation past its time limit are messages on the page, and None.

    Args:
        pin: keep the entry however many others are computed after it (the Workshop's warm-up).
        watch: called with the flight at each look while waiting (the Report's bar over every stage).
    """
    requested = st.session_state.get(AGAIN_KEY, set())
    again = again or job.kind in requested
    requested.discard(job.kind)
    if not again and (entry := kept(job)) is not None:
        return entry

    def wait() -> Entry:
        # Spinners show only when loading takes a while (a first load; the caches answer at once after it).
        with st.spinner(_("Loading the tokenizer and the split…")):
            run = open_run(job.config)

        store = shared_results()

        def compute(progress):  # the model loads once admitted, in its heavy slot (ten seeds loaded ten models)
            if job.kind in NEEDS_MODEL and (pool := worker.pool(store.heavy_slots)) is not None:
                return pool.run(job, progress)  # in a worker process with a memory limit (hosted mode)
            if job.kind in NEEDS_MODEL:
                progress(0.0, msg("Loading the model…"))
                _loaded = run.classifier
            return job.run(run, progress)

        flight = store.start(job, compute, again=again, heavy=job.kind in NEEDS_MODEL, owner=visitor_id(), pin=pin)
        try:  # a closed tab or a rerun stops this script at its next call: it stops waiting here
            if not flight.done.is_set():
                bar = st.progress(0.0, text=waiting_text(label, flight))
                while not flight.done.wait(0.25):
                    bar.progress(flight.fraction, text=waiting_text(label, flight))
                    if watch is not None:
                        watch(flight)
                    store.give_up_if_stuck(job, flight)
                bar.empty()
        finally:
            store.leave(job, flight)
        if isinstance(flight.error, TimeoutError):
            raise InputError(flight.error.args[0]) from None
        if flight.error is not None:
            raise flight.error
        return flight.entry

    return run_stage(job.stage, wait)


def again_requested(kind: str) -> bool:
    """Whether "Compute again" was pressed for this kind of job on this run."""
    return kind in st.session_state.get(AGAIN_KEY, set())


def wanted(job: Job) -> bool:
    """Whether a button-driven job is shown without its button: kept, under way in any session, or asked again."""
    return kept(job) is not None or under_way(job) or again_requested(job.kind)


def under_way(job: Job) -> bool:  # whether some session is computing the job now
    return shared_results().flight(job) is not None


def kept(job: Job) -> Entry | None:  # the job's entry when some session has computed it (nothing computed here)
    return shared_results().get(job)


def freshness(entry: Entry, job: Job, also=()) -> None:
    """When the result was computed, in how long, and a button to compute it (and the jobs `also`) again for all."""
    # A row that wraps: the button keeps its whole label at any width and language (columns cut it at 1024 px).
    row = st.container(horizontal=True, vertical_alignment="center", wrap=True)
    row.caption(":material/history: " + localize(msg("Computed {age} in {seconds:.1f} s, and kept for everyone who "
                                                     "opens this configuration.", age=entry.age(),
                                                     seconds=entry.seconds)))  # 0,8 s in Italian
    row.button(_("Compute again"), key=f"shared.again.{job.kind}", icon=":material/refresh:",
               on_click=lambda: st.session_state.setdefault(AGAIN_KEY, set()).update(
                   other.kind for other in (job, *also)))


def stage_jobs(stage: str, config) -> list[Job]:
    """The jobs of a stage for this session's settings, one for each of its units (`registry.UNITS`), in order."""
    return [job for unit in units_of(stage) if (job := session_job(unit, config)) is not None]


def session_job(unit: str, config) -> Job | None:
    """A unit's job with this session's settings (None when the sweep's settings on the page are unusable)."""
    if unit == "training":
        try:
            return training_job(config, sweep_from_state())
        except (TypeError, ValueError):
            return None
    if unit == "overfit":
        return overfit_jobs(config)["walk"]
    return Job(unit, config)


def kept_sweep(config, settings: SweepSettings) -> tuple[float | None, bool | None]:
    """The sweep's recommended rate and whether it measured the configured rate as broken (its loss NaN or blown
    up), for these sweep settings, when some session has run that sweep ((None, None) when not)."""
    entry = kept(training_job(config, settings))
    sweep = next((result for result in entry.results if result.id == "hparams.lr_sweep"), None) if entry else None
    evidence = sweep.evidence if sweep is not None else {}
    return evidence.get("best_rate"), evidence.get("configured_broke")


def sweep_measured(config) -> tuple[float | None, bool | None]:
    """`kept_sweep` for this session's sweep settings."""
    try:
        return kept_sweep(config, sweep_from_state())
    except (TypeError, ValueError):
        return None, None


def best_rate(config) -> float | None:
    """The sweep's recommended rate for this session's sweep settings, when the sweep has run."""
    return sweep_measured(config)[0]


def overfit_jobs(config) -> dict[str, Job]:
    """The overfit test of the walk ("walk": at the configured rate, or at the checkpoint's usual one when the sweep
    measured the configured rate as broken) and, when the sweep recommends another rate, the rerun at it ("rerun"),
    for this session's epochs."""
    epochs = int(st.session_state.get(EPOCHS_KEY, DEFAULT_EPOCHS))
    best, broke = sweep_measured(config)
    walk, before = overfit_job(config, epochs, None, best, broke), overfit_job(config, epochs)
    if walk != before and kept(walk) is None and not under_way(walk) and kept(before) is not None:
        walk = before  # run before the sweep, at the configured rate: it stands (what it found of the rate too)
    jobs = {"walk": walk}
    if best and not math.isclose(best, effective_rate(config), rel_tol=1e-6):
        jobs["rerun"] = overfit_job(config, epochs, best, best, broke)
    return jobs


def recalled(stage: str, config) -> list[CheckResult]:
    """Every kept result of a stage for this configuration and this session's settings (the overfit test of the
    walk, not a rerun at another rate)."""
    return [result for job in stage_jobs(stage, config) if (entry := kept(job)) for result in entry.results]


def recalled_all(config) -> list[CheckResult]:
    """Every kept result of every stage for this configuration, each finding a cause explains pointing at its owner
    (`causes.explain` across the stages: a label the head has no output for, found on the Data page, points at
    model.config once the Model page has run)."""
    return explain([result for stage in STAGE_ORDER for result in recalled(stage, config)])


def explained_here(results: list[CheckResult], config) -> list[CheckResult]:
    """A page's results with every cause the kept results of this configuration name: each finding one explains
    points at its owner (`recalled_all`), in the page's order."""
    ids = {result.id for result in results}
    others = [result for stage in STAGE_ORDER for result in recalled(stage, config) if result.id not in ids]
    resolved = {result.id: result for result in explain(list(results) + others)}
    return [resolved[result.id] for result in results]


def ran_for(results: list[CheckResult], config) -> set[str]:
    """The checks that have looked for this configuration: a page's own results and every stage's kept ones (an
    owner run on its own page has run, wherever its finding is shown)."""
    return {result.id for result in results} | {result.id for stage in STAGE_ORDER
                                                 for result in recalled(stage, config)}
