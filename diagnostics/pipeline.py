"""Runs the stages of the walk for one configuration, loading what they need."""

from __future__ import annotations

from typing import Callable

from diagnostics import loading
from diagnostics.config import RunConfig
from diagnostics.data import build_first_batch, run_data_checks
from diagnostics.errors import InputError, NotClassifierError
from diagnostics.model import not_classification_results, run_model_checks
from diagnostics.result import CheckResult

STAGES = ("data", "model")


def parse_stages(text: str | None) -> tuple[str, ...]:
    """'data,model' -> ('data', 'model'); None -> every stage; unknown names are an InputError."""
    if not text:
        return STAGES
    names = tuple(name.strip() for name in text.split(",") if name.strip())
    unknown = [name for name in names if name not in STAGES]
    if unknown:
        raise InputError(f"Unknown stage(s) {', '.join(unknown)}; available: {', '.join(STAGES)}.")
    return names


def run_stages(config: RunConfig, stages: tuple[str, ...] = STAGES, *, tokenizer=None, split=None,
               model_loader: Callable = loading.load_model) -> list[CheckResult]:
    """Run the chosen stages in pipeline order.

    Args:
        tokenizer, split: already-loaded artifacts to reuse (the app passes its cached ones).
        model_loader: `(checkpoint, num_labels, seed) -> model`; the app passes its shared cache.
            The model it returns is never modified.

    Raises:
        InputError: the configuration, checkpoint or data cannot be used.
    """
    config = config.validated()
    tokenizer = tokenizer if tokenizer is not None else loading.load_tokenizer(config.checkpoint)
    split = split if split is not None else loading.load_split(config)
    results: list[CheckResult] = []
    if "data" in stages:
        results += run_data_checks(config, split, tokenizer)
    if "model" in stages:
        results += model_stage(config, tokenizer, split, model_loader)
    return results


def model_stage(config: RunConfig, tokenizer, split, model_loader: Callable = loading.load_model) -> list[CheckResult]:
    """The Model stage on the Data stage's first batch; a checkpoint with no classifier is a clear fail."""
    try:
        model = model_loader(config.checkpoint, config.effective_num_labels, config.seed)
    except NotClassifierError as exc:
        return not_classification_results(config.checkpoint, str(exc))
    batch = build_first_batch(split, tokenizer, config)
    return run_model_checks(config, model, tokenizer, batch)
