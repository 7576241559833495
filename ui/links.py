"""Links that reproduce a run: the run configuration, the scenario and the pages' settings as URL query parameters,
and back. A link names only what differs from the defaults (with its scenario applied), so `/?scenario=course-script`
is a whole run; each bad or unknown parameter is a message, and the rest of the link still applies."""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any, Callable

from diagnostics.config.run import CODE_ONLY_FIELDS, DERIVED_FIELDS, RunConfig, default_config
from diagnostics.core.errors import InputError
from diagnostics.config.tasks import get_task
from diagnostics.config.training import DEFAULT_EPOCHS, SweepSettings
from diagnostics.i18n import DEFAULT_LANGUAGE, LANGUAGES, message_of, msg
from diagnostics.walk.runner import validate_epochs
from diagnostics.config.scenarios import SCENARIOS
from diagnostics.config.settings import EPOCHS, LINKED, SWEEP_SETTINGS

RESERVED = {"embed", "embed_options"}  # Streamlit's own


@dataclass(frozen=True)
class Link:
    """What a link carries: the configuration, the scenario it started from, the pages' settings and the language."""

    config: RunConfig
    scenario: str | None = None
    sweep: SweepSettings = SweepSettings()
    epochs: int = DEFAULT_EPOCHS
    lang: str | None = None  # None: the reader's own (the browser's, else English)


def _text(value) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, float):
        return repr(value)
    if value is None:
        return "default"
    if isinstance(value, tuple) and value and isinstance(value[0], tuple):
        return ";".join(f"{split}={path}" for split, path in value)
    if isinstance(value, tuple):
        return ",".join(value)
    return str(value)


# URL parameter -> (RunConfig field, parser), from the settings table, in the order a link applies them.
CONFIG_PARAMS: dict[str, tuple[str, Callable[[str], Any]]] = {setting.param: (setting.field, setting.parse)
                                                               for setting in LINKED}
SWEEP_PARAMS = {setting.param: (setting.field, setting.parse) for setting in SWEEP_SETTINGS}
KNOWN = {"checkpoint", "scenario", EPOCHS.param, "lang", *CONFIG_PARAMS, *SWEEP_PARAMS}


def base_config(hub_reachable: bool, checkpoint: str | None = None, scenario: str | None = None) -> RunConfig:
    """What a link starts from: the defaults for its checkpoint, with its scenario applied."""
    config = default_config(hub_reachable, **({"checkpoint": checkpoint} if checkpoint else {}))
    return SCENARIOS[scenario].apply(config) if scenario else config


def _with_task(config: RunConfig, task: str) -> RunConfig:
    """The configuration on another task; a split that task lacks becomes its split of the same kind."""
    new = get_task(task)
    split = config.split
    if config.data_source != "files" and split not in new.splits:
        kind = split.split("_")[0]
        split = next((name for name in new.splits if name.startswith(kind)), new.splits[0])
    return replace(config, task=new.name, split=split)


def _unknown(names: list[str]):
    """One message for every parameter a link has that the app does not read, however many (the first few named,
    each cut short)."""
    known = ", ".join(sorted(KNOWN))
    shown = [repr(name if len(name) <= 40 else name[:40] + "...") for name in names[:5]]
    if len(names) == 1:
        return msg("The link's parameter {name} is not one this app reads (it reads {known}).", name=shown[0],
                   known=known)
    return msg("The link has {count} parameters this app does not read: {names} (it reads {known}).",
               count=len(names), names=", ".join(shown) + (", ..." if len(names) > 5 else ""), known=known)


def parse_link(params: dict[str, str], hub_reachable: bool) -> tuple[Link, list[str]]:
    """The run a link describes, and one message for each parameter it could not use (that one keeps its default).

    Args:
        params: the URL's query parameters (the last value of a repeated one).
    """
    unknown = [name for name in params if name not in KNOWN and name not in RESERVED]
    problems = [_unknown(unknown)] if unknown else []

    def refused(name: str, exc: Exception) -> None:
        reason = message_of(exc)
        if not str(reason).endswith("."):
            reason = msg("{reason}.", reason=reason)
        problems.append(msg("The link's {name}={value} cannot be used: {reason} Its default is used instead.",
                            name=name, value=repr(params[name]), reason=reason))

    scenario = params.get("scenario", "").strip() or None
    if scenario is not None and scenario not in SCENARIOS:
        problems.append(msg("The link's scenario {scenario} is not one of: {scenarios}. None is applied.",
                            scenario=repr(scenario), scenarios=", ".join(SCENARIOS)))
        scenario = None
    checkpoint = params.get("checkpoint", "").strip() or None
    if checkpoint is not None:
        try:
            base_config(hub_reachable, checkpoint, scenario).validated()
        except InputError as exc:
            refused("checkpoint", exc)
            checkpoint = None
    config = base_config(hub_reachable, checkpoint, scenario)
    for name, (field, parse) in CONFIG_PARAMS.items():
        if name not in params:
            continue
        try:
            value = parse(params[name])
            candidate = _with_task(config, value) if field == "task" else replace(config, **{field: value})
            config = candidate.validated()
        except InputError as exc:
            refused(name, exc)
    sweep = SweepSettings()
    for name, (field, parse) in SWEEP_PARAMS.items():
        if name in params:
            try:
                sweep = replace(sweep, **{field: parse(params[name])}).validated()
            except InputError as exc:
                refused(name, exc)
    epochs = DEFAULT_EPOCHS
    if EPOCHS.param in params:
        try:
            epochs = validate_epochs(EPOCHS.parse(params[EPOCHS.param]))
        except InputError as exc:
            refused(EPOCHS.param, exc)
    lang = params.get("lang", "").strip().lower() or None
    if lang is not None and lang not in LANGUAGES:
        problems.append(msg("The link's lang={value} is not one of: {languages}. The page keeps its language.",
                            value=repr(params["lang"]), languages=", ".join(LANGUAGES)))
        lang = None
    return Link(config, scenario, sweep, epochs, lang), problems


def link_params(link: Link, hub_reachable: bool) -> dict[str, str]:
    """The query parameters of a run: its scenario, and each setting that differs from what the link starts from."""
    config = link.config
    params = {"scenario": link.scenario} if link.scenario else {}
    if config.checkpoint != default_config(hub_reachable).checkpoint:
        params["checkpoint"] = config.checkpoint
    base = base_config(hub_reachable, config.checkpoint, link.scenario)
    for name, (field, _) in CONFIG_PARAMS.items():
        value = getattr(config, field)
        if value != getattr(base, field):
            params[name] = _text(value)
            if field == "task":
                base = _with_task(base, value)
    defaults = SweepSettings()
    for name, (field, _) in SWEEP_PARAMS.items():
        if getattr(link.sweep, field) != getattr(defaults, field):
            params[name] = _text(getattr(link.sweep, field))
    if link.epochs != DEFAULT_EPOCHS:
        params[EPOCHS.param] = str(link.epochs)
    if link.lang and link.lang != DEFAULT_LANGUAGE:
        params["lang"] = link.lang
    return params


def config_fields() -> set[str]:
    """Every RunConfig field a link can carry (all but what only a user's own code fills, or what is derived)."""
    return {field.name for field in fields(RunConfig)} - set(CODE_ONLY_FIELDS) - set(DERIVED_FIELDS)
