"""Hosted mode: the limits a public deployment (a Hugging Face Space) puts on every run.

Set `DEBUGGER_HOSTED=1` to turn them on. Each cap can be changed with its own variable, e.g.
`DEBUGGER_MAX_BATCH_SIZE=64`; `DEBUGGER_RUN_BUDGET_S` is the time one run (one stage on a page,
or one command-line run) may take before its remaining checks stop with a `skip` result.
Off (the default), nothing is capped and no time budget applies.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import time
from dataclasses import dataclass, fields

HOSTED_ENV = "DEBUGGER_HOSTED"


@dataclass(frozen=True)
class Limits:
    """The caps of hosted mode; each field is read from `DEBUGGER_<FIELD NAME IN CAPITALS>` when set."""

    max_batch_size: int = 32
    max_length: int = 256
    max_sweep_rates: int = 9
    max_sweep_steps: int = 20
    max_range_steps: int = 100
    max_overfit_epochs: int = 50
    max_parameters: int = 150_000_000
    run_budget_s: float = 180.0

    @classmethod
    def from_environment(cls) -> "Limits":
        values = {}
        for field in fields(cls):
            text = os.environ.get(f"DEBUGGER_{field.name.upper()}")
            if text:
                cast = float if field.type in ("float", float) else int
                values[field.name] = cast(text)
        return cls(**values)

    def describe(self) -> str:
        return (f"batch size ≤ {self.max_batch_size}, max length ≤ {self.max_length}, sweeps ≤ {self.max_sweep_rates} "
                f"rates × {self.max_sweep_steps} steps, range test ≤ {self.max_range_steps} steps, overfit ≤ "
                f"{self.max_overfit_epochs} epochs, checkpoints ≤ {self.max_parameters / 1e6:.0f}M parameters, "
                f"{self.run_budget_s:g} s a run, Hub checkpoints and data only")


def hosted() -> Limits | None:
    """The active limits, or None when hosted mode is off."""
    if os.environ.get(HOSTED_ENV, "").strip().lower() in ("", "0", "false", "no", "off"):
        return None
    return Limits.from_environment()


def _over_caps(caps) -> list[str]:
    """"hosted mode caps … (got …)" for each (what, value, cap) whose value is beyond its cap; `what` holds {cap}."""
    return [f"hosted mode caps {what.format(cap=cap)} (got {value})" for what, value, cap in caps if value > cap]


def config_problems(config) -> list[str]:
    """What a RunConfig asks for beyond the hosted limits (nothing when hosted mode is off)."""
    from diagnostics.loading import DEMO_CHECKPOINT, is_local_path

    limits = hosted()
    if limits is None:
        return []
    problems = _over_caps([("the batch size at {cap}", config.batch_size, limits.max_batch_size),
                           ("max length at {cap}", config.max_length, limits.max_length)])
    if config.checkpoint.strip() != DEMO_CHECKPOINT and is_local_path(config.checkpoint.strip()):
        problems.append(f"hosted mode refuses local checkpoint paths ({config.checkpoint!r}): give a Hub name or 'demo'")
    if config.data_source == "files":
        problems.append("hosted mode refuses local data files: use the Hub or the bundled samples")
    return problems


def sweep_problems(settings) -> list[str]:
    limits = hosted()
    if limits is None:
        return []
    return _over_caps([("the sweep at {cap} rates", settings.rates, limits.max_sweep_rates),
                       ("steps per rate at {cap}", settings.steps, limits.max_sweep_steps),
                       ("the range test at {cap} steps", settings.range_steps, limits.max_range_steps)])


def epochs_problems(epochs: int) -> list[str]:
    limits = hosted()
    if limits is None:
        return []
    return _over_caps([("the overfit test at {cap} epochs", epochs, limits.max_overfit_epochs)])


def parameters_problem(checkpoint: str, parameters: int) -> str | None:
    limits = hosted()
    if limits is not None and parameters > limits.max_parameters:
        return (f"{checkpoint!r} has about {parameters / 1e6:,.0f}M parameters; hosted mode caps checkpoints at "
                f"{limits.max_parameters / 1e6:,.0f}M")
    return None


def estimated_parameters(config) -> int:
    """A transformer's parameter count from its config alone, before any weights are downloaded.

    Embeddings plus, for each layer, attention (4·h²) and the feed-forward block (2·h·ffn). Within a
    few percent for BERT-style encoders; the exact count is checked again once the model is built.
    """
    hidden = _first(config, "hidden_size", "dim", "d_model", "n_embd") or 0
    layers = _first(config, "num_hidden_layers", "n_layers", "num_layers", "n_layer") or 0
    ffn = _first(config, "intermediate_size", "hidden_dim", "d_ff", "n_inner") or 4 * hidden
    vocab = getattr(config, "vocab_size", 0) or 0
    positions = _first(config, "max_position_embeddings", "n_positions") or 0
    return int((vocab + positions) * hidden + layers * (4 * hidden * hidden + 2 * hidden * ffn))


def _first(config, *names):
    return next((getattr(config, name) for name in names if getattr(config, name, None)), None)


class BudgetExceeded(BaseException):
    """The run's time budget ran out. A BaseException, so checks that turn errors into findings let it through."""


_deadline: contextvars.ContextVar[tuple[float, float] | None] = contextvars.ContextVar("run_deadline", default=None)


@contextlib.contextmanager
def run_budget():
    """Start the per-run time budget in hosted mode; nested runs share the outermost one's deadline."""
    limits = hosted()
    if limits is None or _deadline.get() is not None:
        yield
        return
    token = _deadline.set((time.monotonic() + limits.run_budget_s, limits.run_budget_s))
    try:
        yield
    finally:
        _deadline.reset(token)


def check_deadline(where: str = "") -> None:
    """Raise BudgetExceeded when the current run is past its deadline (a no-op outside hosted mode)."""
    deadline = _deadline.get()
    if deadline is not None and time.monotonic() > deadline[0]:
        raise BudgetExceeded(
            f"Stopped: this run used up hosted mode's time budget of {deadline[1]:g} s"
            + (f" {where}" if where else "")
            + ". Try fewer rates, steps or epochs, or run the app on your own machine."
        )
