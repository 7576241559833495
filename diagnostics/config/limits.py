"""Hosted mode: the limits a public deployment (a Hugging Face Space) puts on every run.

Set `DEBUGGER_HOSTED=1` to turn them on. Each cap can be changed with its own variable, e.g.
`DEBUGGER_MAX_BATCH_SIZE=64`; `DEBUGGER_RUN_BUDGET_S` is the time one run (one stage on a page,
or one command-line run) may take before its remaining checks stop with a `skip` result.
Off (the default), nothing is capped and no time budget applies.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, fields, replace

from diagnostics.i18n import N_, Text, msg

HOSTED_ENV = "DEBUGGER_HOSTED"


@dataclass(frozen=True)
class Limits:
    """The caps of hosted mode; each field is read from `DEBUGGER_<FIELD NAME IN CAPITALS>` when set."""

    max_batch_size: int = 32
    max_length: int = 256
    max_num_labels: int = 10
    max_sweep_rates: int = 9
    max_sweep_steps: int = 20
    max_range_steps: int = 100
    max_overfit_epochs: int = 50
    max_parameters: int = 150_000_000
    max_training_gib: float = 10.0  # training memory estimated from the checkpoint's config (loading.refuse_costly)
    run_budget_s: float = 180.0
    # Where a hosted visitor's address stands in X-Forwarded-For: the proxies with public addresses in front of the
    # app, counted from the right (those of the host's own network are passed over); 0: the header is not read, and
    # a visitor is their browser's cookie (ui/visitors.py).
    proxy_hops: int = 1

    @classmethod
    def from_environment(cls) -> "Limits":
        return from_environment(cls(), "DEBUGGER_")

    def describe(self) -> Text:
        return msg("batch size ≤ {batch}, max length ≤ {length}, sweeps ≤ {rates} rates × {steps} steps, range test ≤ "
                   "{range_steps} steps, overfit ≤ {epochs} epochs, checkpoints ≤ {parameters:.0f}M parameters, "
                   "training ≤ {memory:g} GiB, {budget:g} s a run, Hub checkpoints and data only",
                   batch=self.max_batch_size, memory=self.max_training_gib,
                   length=self.max_length, rates=self.max_sweep_rates, steps=self.max_sweep_steps,
                   range_steps=self.max_range_steps, epochs=self.max_overfit_epochs,
                   parameters=self.max_parameters / 1e6, budget=self.run_budget_s)


def from_environment(base, prefix: str):
    """`base` with each field the environment sets as `<prefix><FIELD NAME IN CAPITALS>` replaced.

    Raises:
        InputError: a value that is not a number of zero or more (a whole one for a count), in one line naming the
            variable (zero is allowed: a budget of 0 s skips every check, as the suite's tests use it).
    """
    values = {}
    for field in fields(base):
        name = f"{prefix}{field.name.upper()}"
        text = os.environ.get(name)
        if text:
            values[field.name] = _positive(name, text.strip(), whole=field.type not in ("float", float))
    return replace(base, **values)


def _positive(name: str, text: str, *, whole: bool) -> float | int:
    from diagnostics.core.errors import InputError

    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0 or (whole and value != int(value)):
        raise InputError(msg("The environment variable {name} must be a whole number, zero or more, not {text}.",
                             name=name, text=repr(text)) if whole else
                         msg("The environment variable {name} must be a number, zero or more, not {text}.", name=name,
                             text=repr(text)))
    return int(value) if whole else value


def hosted() -> Limits | None:
    """The active limits, or None when hosted mode is off."""
    if os.environ.get(HOSTED_ENV, "").strip().lower() in ("", "0", "false", "no", "off"):
        return None
    return Limits.from_environment()


def over_caps(caps) -> list[Text]:
    """"hosted mode caps … (got …)" for each (what, value, cap) whose value is beyond its cap; `what` holds {cap}."""
    return [msg("hosted mode caps {what} (got {value})", what=msg(what, cap=cap), value=value)
            for what, value, cap in caps if value > cap]


def sweep_problems(settings) -> list[str]:
    limits = hosted()
    if limits is None:
        return []
    return over_caps([(N_("the sweep at {cap} rates"), settings.rates, limits.max_sweep_rates),
                      (N_("steps per rate at {cap}"), settings.steps, limits.max_sweep_steps),
                      (N_("the range test at {cap} steps"), settings.range_steps, limits.max_range_steps)])


def epochs_problems(epochs: int) -> list[str]:
    limits = hosted()
    if limits is None:
        return []
    return over_caps([(N_("the overfit test at {cap} epochs"), epochs, limits.max_overfit_epochs)])


def parameters_problem(checkpoint: str, parameters: int) -> str | None:
    limits = hosted()
    if limits is not None and parameters > limits.max_parameters:
        return msg("{checkpoint} has about {parameters:,.0f}M parameters; hosted mode caps checkpoints at {cap:,.0f}M",
                   checkpoint=repr(checkpoint), parameters=parameters / 1e6, cap=limits.max_parameters / 1e6)
    return None


@dataclass(frozen=True)
class FileLimits:
    """What a data file may hold, checked by a streaming pre-scan before `datasets` or pyarrow parses it
    (`keras/file_scan.py`): a row nested thousands of levels deep crashes pyarrow's JSON reader, a hundred thousand
    columns stall `datasets` for minutes, and one cell or one dictionary-encoded text repeated over many rows grows a
    small file into gigabytes. Each field is read from `DEBUGGER_FILE_<FIELD NAME IN CAPITALS>` when set.

    Attributes:
        max_bytes: the file's size on disk.
        max_rows: its lines (text files) or rows (parquet).
        max_columns: its columns (a GLUE split has at most five).
        max_row_chars: the characters of one line of a text file, or of one cell of a parquet file.
        max_depth: how deep a JSON value nests (a GLUE row is flat).
        max_decoded_bytes: a parquet file's text once decoded (dictionary-encoded text repeats there).
    """

    max_bytes: int = 1_000_000_000
    max_rows: int = 5_000_000
    max_columns: int = 100
    max_row_chars: int = 100_000
    max_depth: int = 32
    max_decoded_bytes: int = 2_000_000_000



# A visitor's upload on a shared server (a workshop room), and any file in hosted mode: a tenth of what a user's own
# files on their own machine may be.
SHARED_FILE_LIMITS = FileLimits(max_bytes=200_000_000, max_rows=1_000_000, max_columns=50, max_row_chars=20_000,
                                max_depth=16, max_decoded_bytes=200_000_000)


def file_limits(shared: bool) -> FileLimits:
    """The limits on a data file: a visitor's upload's (or any file's in hosted mode), or a user's own."""
    return from_environment(SHARED_FILE_LIMITS if shared or hosted() is not None else FileLimits(), "DEBUGGER_FILE_")


def environment_problem() -> Text | None:
    """What is wrong with the limits the environment sets (`DEBUGGER_...`), in one line; None when they all read."""
    from diagnostics.core.errors import InputError
    from diagnostics.i18n import message_of

    try:
        hosted()
        file_limits(shared=False)
    except InputError as exc:
        return message_of(exc)
    return None
