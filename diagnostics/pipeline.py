"""Runs the stages of the walk for one configuration, loading what they need."""

from __future__ import annotations

from diagnostics import loading
from diagnostics.config import RunConfig
from diagnostics.data import run_data_checks
from diagnostics.errors import InputError
from diagnostics.result import CheckResult

STAGES = ("data",)


def parse_stages(text: str | None) -> tuple[str, ...]:
    """'data,model' -> ('data', 'model'); None -> every stage; unknown names are an InputError."""
    if not text:
        return STAGES
    names = tuple(name.strip() for name in text.split(",") if name.strip())
    unknown = [name for name in names if name not in STAGES]
    if unknown:
        raise InputError(f"Unknown stage(s) {', '.join(unknown)}; available: {', '.join(STAGES)}.")
    return names


def run_stages(config: RunConfig, stages: tuple[str, ...] = STAGES, *, tokenizer=None, split=None) -> list[CheckResult]:
    """Run the chosen stages in pipeline order.

    Args:
        tokenizer, split: already-loaded artifacts to reuse (the app passes its cached ones).

    Raises:
        InputError: the configuration, checkpoint or data cannot be used.
    """
    config = config.validated()
    tokenizer = tokenizer if tokenizer is not None else loading.load_tokenizer(config.checkpoint)
    split = split if split is not None else loading.load_split(config)
    results: list[CheckResult] = []
    if "data" in stages:
        results += run_data_checks(config, split, tokenizer)
    return results
