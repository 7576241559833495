"""A run configuration to and from the places that give it: the sidebar's widgets, the pages' sweep and epochs
inputs, and the command line's parsed arguments, each from the rows of `diagnostics.config.settings`."""

from __future__ import annotations

from dataclasses import replace
import os
from typing import Any, Mapping

from diagnostics.config.run import RunConfig
from diagnostics.config.settings import SETTINGS, SWEEP_SETTINGS
from diagnostics.config.training import SweepSettings


def sweep_from_widgets(values: Mapping[str, Any]) -> SweepSettings:
    """The sweep the Hyperparameters page's inputs (or a link's) hold, not yet validated."""
    return SweepSettings(**{setting.field: setting.from_widget(values[setting.key]) for setting in SWEEP_SETTINGS})


def sweep_widget_values(sweep: SweepSettings) -> dict[str, Any]:
    return {setting.key: getattr(sweep, setting.field) for setting in SWEEP_SETTINGS}


def sweep_from_args(args) -> SweepSettings:
    """The sweep the command line asks for (argparse's namespace: each flag's value under "sweep_<field>")."""
    return SweepSettings(**{setting.field: value for setting in SWEEP_SETTINGS
                            if (value := getattr(args, f"sweep_{setting.field}", None)) is not None})


def widget_values(config: RunConfig) -> dict[str, Any]:
    """What each of the sidebar's widgets holds for this configuration, by session key."""
    return {setting.key: setting.widget(getattr(config, setting.field)) for setting in SETTINGS}


def config_from_widgets(values: Mapping[str, Any]) -> RunConfig:
    """The validated configuration the sidebar's widgets hold (data files only when they are the data source).

    Raises:
        InputError: a value that cannot be used, named.
    """
    config = RunConfig(**{setting.field: setting.from_widget(values[setting.key]) for setting in SETTINGS})
    if config.data_source != "files":
        config = replace(config, data_files=())
    return replace(config, data_stamp=data_stamp(config.data_files)).validated()


def data_stamp(data_files) -> tuple[tuple[str, int, int], ...]:
    """Each data file's (path, size, modification time in ns); (path, -1, -1) for one that cannot be read, which
    validation names. A page reads it on every run, so an edited file is a new configuration at the next reload."""
    stamps = []
    for _, path in data_files:
        try:
            status = os.stat(path)
            stamps.append((path, status.st_size, status.st_mtime_ns))
        except (OSError, ValueError):
            stamps.append((path, -1, -1))
    return tuple(stamps)


def cli_overrides(args) -> dict[str, Any]:
    """The settings given on the command line (argparse's namespace), by field; `--data-files` also makes the data
    source "files" unless `--data-source` says otherwise."""
    overrides = {}
    for setting in SETTINGS:
        value = getattr(args, setting.field, None)
        if setting.field == "shuffle":
            value = False if value else None  # --no-shuffle
        if value is not None and value != ():
            # Each --data-files argument is parsed as the sidebar's box is (one SPLIT=PATH, or several split by ';').
            overrides[setting.field] = tuple(pair for pairs in value for pair in pairs) \
                if setting.field == "data_files" else value
    if "data_files" in overrides and "data_source" not in overrides:
        overrides["data_source"] = "files"
    return overrides
