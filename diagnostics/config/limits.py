"""Hosted mode: the limits a public deployment (a Hugging Face Space) puts on every run.

Set `DEBUGGER_HOSTED=1` to turn them on. Each cap can be changed with its own variable, e.g.
`DEBUGGER_MAX_BATCH_SIZE=64`; `DEBUGGER_RUN_BUDGET_S` is the time one run (one stage on a page,
or one command-line run) may take before its remaining checks stop with a `skip` result.
Off (the default), nothing is capped and no time budget applies.
"""

from __future__ import annotations

import os
from typing import Annotated, Any

from pydantic import Field, ValidationError, field_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from diagnostics.i18n import N_, Text, msg

HOSTED_ENV = "DEBUGGER_HOSTED"


# A count or a size: a whole number, zero or more. An amount (GiB, seconds): a finite number, zero or more (zero is
# allowed: a budget of 0 s skips every check, as the suite's tests use it).
Count = Annotated[int, Field(ge=0)]
Amount = Annotated[float, Field(ge=0, allow_inf_nan=False)]


class EnvironmentLimits(BaseSettings):
    """Limits read from the environment by pydantic-settings: each field from `<prefix><FIELD NAME IN CAPITALS>`
    when set (an empty value leaves the default), validated by its type; a value that does not read is one line
    naming the variable (`InputError`), never a traceback. Keyword arguments give other defaults, which the
    environment still overrides."""

    model_config = SettingsConfigDict(frozen=True, extra="forbid", env_ignore_empty=True, env_prefix="DEBUGGER_")

    def __init__(self, **defaults: Any) -> None:
        from diagnostics.core.errors import InputError

        try:
            super().__init__(**defaults)
        except ValidationError as exc:
            error = exc.errors()[0]
            field = str(error["loc"][0])
            name = f"{self.model_config['env_prefix']}{field.upper()}"
            text = repr(os.environ.get(name, str(error.get("input"))).strip())
            raise InputError(msg("The environment variable {name} must be a whole number, zero or more, not {text}.",
                                 name=name, text=text) if self._whole(field) else
                             msg("The environment variable {name} must be a number, zero or more, not {text}.",
                                 name=name, text=text)) from None

    @classmethod
    def _whole(cls, field: str) -> bool:
        return cls.model_fields[field].annotation is int

    @field_validator("*", mode="before")
    @classmethod
    def _stripped(cls, value: Any) -> Any:
        return value.strip() if isinstance(value, str) else value

    @classmethod
    def settings_customise_sources(cls, settings_cls: type[BaseSettings], init_settings: PydanticBaseSettingsSource,
                                   env_settings: PydanticBaseSettingsSource,
                                   dotenv_settings: PydanticBaseSettingsSource,
                                   file_secret_settings: PydanticBaseSettingsSource):
        # The environment first: what the deployment sets wins over the defaults a caller gives (a shared server's
        # file limits); no .env file or secrets directory is read.
        return env_settings, init_settings


class Limits(EnvironmentLimits):
    """The caps of hosted mode; each field is read from `DEBUGGER_<FIELD NAME IN CAPITALS>` when set."""

    max_batch_size: Count = 32
    max_length: Count = 256
    max_num_labels: Count = 10
    max_sweep_rates: Count = 9
    max_sweep_steps: Count = 20
    max_range_steps: Count = 100
    max_overfit_epochs: Count = 50
    max_parameters: Count = 150_000_000
    max_training_gib: Amount = 10.0  # training memory estimated from the checkpoint's config (loading.refuse_costly)
    run_budget_s: Amount = 180.0
    # Where a hosted visitor's address stands in X-Forwarded-For: the proxies with public addresses in front of the
    # app, counted from the right (those of the host's own network are passed over). 0, the default, trusts no
    # proxy and reads no header: a visitor is the address the connection comes from (`docker run -p` has no proxy,
    # and a header the client wrote would be read as theirs); the Space sets 1 (docs/hosting.md). ui/visitors.py.
    proxy_hops: Count = 0
    # The block of IPv6 addresses that counts as one visitor (a /64 gave one household 65,536 identities in a /48).
    ipv6_prefix: Count = 56

    @classmethod
    def from_environment(cls) -> "Limits":
        return cls()

    def describe(self) -> Text:
        return msg("batch size ≤ {batch}, max length ≤ {length}, sweeps ≤ {rates} rates × {steps} steps, range test ≤ "
                   "{range_steps} steps, overfit ≤ {epochs} epochs, checkpoints ≤ {parameters:.0f}M parameters, "
                   "training ≤ {memory:g} GiB, {budget:g} s a run, Hub checkpoints and data only",
                   batch=self.max_batch_size, memory=self.max_training_gib,
                   length=self.max_length, rates=self.max_sweep_rates, steps=self.max_sweep_steps,
                   range_steps=self.max_range_steps, epochs=self.max_overfit_epochs,
                   parameters=self.max_parameters / 1e6, budget=self.run_budget_s)


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


class FileLimits(EnvironmentLimits):
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

    model_config = SettingsConfigDict(env_prefix="DEBUGGER_FILE_")

    max_bytes: Count = 1_000_000_000
    max_rows: Count = 5_000_000
    max_columns: Count = 100
    max_row_chars: Count = 100_000
    max_depth: Count = 32
    max_decoded_bytes: Count = 2_000_000_000



# A visitor's upload on a shared server (a workshop room), and any file in hosted mode: a tenth of what a user's own
# files on their own machine may be.
SHARED_FILE_LIMITS = dict(max_bytes=200_000_000, max_rows=1_000_000, max_columns=50, max_row_chars=20_000,
                          max_depth=16, max_decoded_bytes=200_000_000)


def file_limits(shared: bool) -> FileLimits:
    """The limits on a data file: a visitor's upload's (or any file's in hosted mode), or a user's own; what the
    environment sets wins over either."""
    return FileLimits(**SHARED_FILE_LIMITS) if shared or hosted() is not None else FileLimits()


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
