"""The Workshop page's side of the shared results: each scenario's link and first stage, and what a room's warm-up
computes and has kept."""

from __future__ import annotations

from diagnostics.config.scenarios import SCENARIOS
from diagnostics.core.check import STAGE_ORDER
from diagnostics.serve.store import KINDS, Job, overfit_job, training_job
from diagnostics.walk.registry import CHECKS, UNITS, units_of
from ui.caches import hub_reachable
from ui.links import Link, parse_link
from ui.shared import kept, kept_sweep

STAGE_PATHS = {"data": "", "model": "model", "hparams": "hyperparameters", "overfit": "overfit"}


def scenario_link(name: str, checkpoint: str | None) -> Link:
    """The run a scenario's link opens (on `checkpoint`, or the app's default when None or unusable)."""
    params = {"scenario": name, **({"checkpoint": checkpoint} if checkpoint else {})}
    return parse_link(params, hub_reachable())[0]


def first_stage(name: str) -> str:
    """The stage of the walk where the scenario's bug is first flagged (the Data page for a clean one)."""
    stages = [CHECKS[check].stage for check in SCENARIOS[name].expected_ids()]
    return min(stages, key=STAGE_ORDER.index) if stages else "data"


def computed_with(kind: str) -> tuple[str, ...]:
    """The units a room's warm-up computes when `kind` is chosen: a stage's units that do not train go together, as
    their page shows them together (the Data page's batch, label and duplicate checks)."""
    unit = UNITS[kind]
    return (kind,) if unit.copy else tuple(name for name in units_of(unit.stage) if not UNITS[name].copy)


# What a room's warm-up offers: each stage's quick units as one choice, each unit that trains as its own.
WARM_CHOICES = tuple(dict.fromkeys(computed_with(kind)[0] for kind in KINDS))


def warm_jobs(link: Link, kinds=KINDS) -> list[Job]:
    """The jobs a link's pages ask for with their default settings, in the walk's order (the overfit test's key
    holds the sweep's recommended rate, so it is listed once the sweep is kept)."""
    plain = [kind for kind in KINDS if kind in kinds and not UNITS[kind].takes and not UNITS[kind].reads]
    jobs = [Job(kind, link.config) for kind in plain]
    if "training" in kinds:
        jobs.append(training_job(link.config, link.sweep))
    return jobs


def warm_overfit_job(link: Link) -> Job:
    """The overfit test a link's Overfit page asks for first: the walk's, knowing the sweep's measurement."""
    return overfit_job(link.config, link.epochs, None, *kept_sweep(link.config, link.sweep))


def warmth(link: Link) -> tuple[int, int]:
    """(jobs kept, jobs in all) of a link's warm-up."""
    jobs = warm_jobs(link) + [warm_overfit_job(link)]
    return sum(kept(job) is not None for job in jobs), len(jobs)
