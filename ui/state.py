"""The shared sidebar: one run configuration for every page, kept in session state, and cached loaders."""

from __future__ import annotations

from dataclasses import replace
from urllib.parse import urlencode

import streamlit as st

import diagnostics  # noqa: F401  (selects Keras 2 before TensorFlow loads)
from diagnostics import limits, loading
from diagnostics.context import RunContext
from diagnostics.config import (DATA_SOURCES, DEMO_CHECKPOINT, LOSSES, OPTIMIZERS, RunConfig, default_config,
                                parse_data_files)
from diagnostics.errors import InputError
from diagnostics.glue import TASKS, get_task
from diagnostics.hyperparams import SweepSettings
from diagnostics.i18n import (DEFAULT_LANGUAGE, LANGUAGES, N_, _, language_from_locale, localize, message_of, msg, said,
                             set_language)
from diagnostics.overfit import DEFAULT_EPOCHS
from diagnostics.scenarios import SCENARIOS
from diagnostics.training import effective_rate
from ui.links import Link, link_params, parse_link
from ui.render import markdown_text, shown

UPLOADS_KEY, UPLOAD_PROBLEMS_KEY = "data.uploads", "data.upload_problems"
DATA_SOURCE_LABELS = {"demo": N_("Bundled demo samples"), "hub": N_("Hugging Face Hub (nyu-mll/glue)"),
                      "files": N_("Local files")}
CONFIG_KEY = "run.config"
NO_SCENARIO = N_("(none)")
CONFIG_ERROR_KEY = "run.config_error"
LINK_WRITTEN_KEY = "link.written"  # the query parameters this session last put in the URL
LINK_PROBLEMS_KEY = "link.problems"  # what the opened link asked for that could not be used
# The pages' own settings: kept in the session and the link while their page is not open (Streamlit forgets the
# value of a widget that a run does not draw).
SWEEP_KEYS = {"hparams.min_rate": "min_rate", "hparams.max_rate": "max_rate", "hparams.rates": "rates",
              "hparams.steps": "steps", "hparams.range_steps": "range_steps"}
EPOCHS_KEY = "overfit.epochs"
LANG_KEY = "ui.lang"


@st.cache_resource(show_spinner=False)
def hub_reachable() -> bool:
    return loading.hub_reachable()


def init_state() -> None:
    """Every sidebar key gets its default once, in this one place."""
    defaults = default_config(hub_reachable())
    initial = {
        "run.checkpoint": defaults.checkpoint,
        "run.task": defaults.task,
        "run.split": defaults.split,
        "run.data_source": defaults.data_source,
        "run.data_files": "",
        "run.num_labels": None,
        "run.batch_size": defaults.batch_size,
        "run.max_length": defaults.max_length,
        "run.columns": "",
        "run.labels_in": defaults.labels_in,
        "run.shuffle": defaults.shuffle,
        "run.seed": defaults.seed,
        "run.loss": defaults.loss,
        "run.optimizer": defaults.optimizer,
        "run.learning_rate": f"{defaults.learning_rate:g}",
        "run.weight_decay": f"{defaults.weight_decay:g}",
        "run.train_steps": defaults.train_steps,
        "run.warmup_steps": defaults.warmup_steps,
        "run.shuffle_labels": defaults.shuffle_labels,
        "run.scenario": NO_SCENARIO,
        "run.defaults_for": defaults.checkpoint,
        **{key: getattr(SweepSettings(), name) for key, name in SWEEP_KEYS.items()},
        EPOCHS_KEY: DEFAULT_EPOCHS,
        LINK_PROBLEMS_KEY: [],
        LANG_KEY: browser_language(),
    }
    from ui.script import SCRIPT_DEFAULTS  # the Your script page's inputs

    for key, value in {**initial, **SCRIPT_DEFAULTS}.items():
        st.session_state.setdefault(key, value)
    # Kept while their page is closed, or (the rate) while a string optimizer shows the rate it means instead.
    for key in (*SWEEP_KEYS, EPOCHS_KEY, *SCRIPT_DEFAULTS, "run.learning_rate"):
        st.session_state[key] = st.session_state[key]
    loading.tidy_cache()  # old uploads and Arrow copies: at the server's first run, then every ten minutes at most


def browser_language() -> str:
    """The app's language the reader's browser asks for (its locale, else its Accept-Language), else English."""
    try:
        return language_from_locale(st.context.locale or st.context.headers.get("Accept-Language"))
    except Exception:  # no browser behind this run (a bare script run)
        return DEFAULT_LANGUAGE


def apply_language() -> str:
    """Speak this session's language for the rest of the run (call before any text is drawn)."""
    return set_language(st.session_state.get(LANG_KEY))


def language_picker() -> None:
    st.selectbox(_("Language"), list(LANGUAGES), key=LANG_KEY, format_func=LANGUAGES.get,
                 help=_("Every page, finding and fix in this language; code, column names and check ids stay as "
                        "they are."))


def sweep_from_state() -> SweepSettings:
    """The sweep settings of this session (the Hyperparameters page's inputs, or the link's)."""
    state = st.session_state
    return SweepSettings(min_rate=float(state["hparams.min_rate"]), max_rate=float(state["hparams.max_rate"]),
                         rates=int(state["hparams.rates"]), steps=int(state["hparams.steps"]),
                         range_steps=int(state["hparams.range_steps"]))


def load_link() -> None:
    """Fill the session from the URL's query parameters on the session's first run, and whenever a link inside the
    app opens other parameters. (Moving between pages empties the URL's parameters; the sidebar writes them back.)"""
    state = st.session_state
    params = st.query_params.to_dict()
    written = state.get(LINK_WRITTEN_KEY)
    if written is not None and (not params or params == written):
        return
    link, problems = parse_link(params, hub_reachable())
    state[LINK_PROBLEMS_KEY] = problems
    state[LINK_WRITTEN_KEY] = params
    if written is None and not params:
        return  # a first visit without a link: the defaults
    config = link.config
    state.update({
        "run.checkpoint": config.checkpoint, "run.task": config.task, "run.split": config.split,
        "run.data_source": config.data_source, "run.num_labels": config.num_labels,
        "run.data_files": "\n".join(f"{split}={path}" for split, path in config.data_files),
        "run.batch_size": config.batch_size, "run.max_length": config.max_length,
        "run.columns": ",".join(config.columns) if config.columns else "", "run.labels_in": config.labels_in,
        "run.shuffle": config.shuffle, "run.seed": config.seed, "run.loss": config.loss,
        "run.optimizer": config.optimizer, "run.learning_rate": repr(float(config.learning_rate)),
        "run.weight_decay": repr(float(config.weight_decay)), "run.train_steps": config.train_steps,
        "run.warmup_steps": config.warmup_steps, "run.shuffle_labels": config.shuffle_labels,
        "run.scenario": link.scenario or NO_SCENARIO, "run.defaults_for": config.checkpoint,
        **{key: getattr(link.sweep, name) for key, name in SWEEP_KEYS.items()}, EPOCHS_KEY: link.epochs,
    })
    if link.lang:
        state[LANG_KEY] = link.lang


def current_link() -> Link | None:
    """This session's run as a link (None while the configuration is invalid)."""
    config = st.session_state.get(CONFIG_KEY)
    if config is None:
        return None
    scenario = st.session_state["run.scenario"]
    try:
        sweep = sweep_from_state()
    except (TypeError, ValueError):
        sweep = SweepSettings()
    return Link(config, None if scenario == NO_SCENARIO else scenario, sweep, int(st.session_state[EPOCHS_KEY]),
                st.session_state.get(LANG_KEY))


def write_link() -> dict[str, str] | None:
    """Put this session's run in the URL (a valid one only: a typo being fixed leaves the last good link)."""
    link = current_link()
    if link is None:
        return None
    params = link_params(link, hub_reachable())
    if params != st.query_params.to_dict():
        st.query_params.from_dict(params)
    st.session_state[LINK_WRITTEN_KEY] = params
    return params


PAGE_PATHS = ("model", "hyperparameters", "overfit", "report", "script", "workshop")  # app.py's url_paths


def app_url(path: str, params: dict[str, str]) -> str:
    """The full address of one of the app's pages (its url_path; "" for the Data page) with `params`."""
    root = (st.context.url or "http://localhost:8501").rstrip("/")
    # Streamlit trims the open page's path once; a session opened at a page's address can report it twice.
    while root.rsplit("/", 1)[-1] in PAGE_PATHS:
        root = root.rsplit("/", 1)[0]
    return f"{root}/{path}" + ("?" + urlencode(params) if params else "")


def link_problems() -> None:
    """What the opened link asked for that could not be used, until dismissed."""
    problems = st.session_state.get(LINK_PROBLEMS_KEY) or []
    if problems:
        st.warning("\n\n".join(shown(problem) for problem in problems), icon=":material/link_off:")
        st.button(_("Dismiss"), key="link.dismiss", on_click=lambda: st.session_state.update({LINK_PROBLEMS_KEY: []}))


def link_copy(page_path: str) -> None:
    """Write the run into the URL, and offer the link to this page to copy."""
    params = write_link()
    with st.popover(_("Copy link to this run"), icon=":material/link:", width="stretch"):
        if params is None:
            st.caption(_("The configuration above cannot be used yet, so there is no link to it."))
        else:
            st.code(app_url(page_path, params), language=None, wrap_lines=True)
            st.caption(_("The copy button is at the code block's right. Whoever opens the link gets this "
                         "configuration, scenario and page settings, and the results already computed for them."))


FOLLOWS_CHECKPOINT = {"run.learning_rate": lambda c: f"{c.learning_rate:g}", "run.data_source": lambda c: c.data_source}


def follow_checkpoint() -> None:
    """A new checkpoint brings its own defaults (the demo kit's samples and 3e-3, or 5e-5 for a pretrained model)
    to every setting the user has not changed; one they set stays (a widget callback, so it runs first)."""
    state = st.session_state
    before = default_config(hub_reachable(), checkpoint=state["run.defaults_for"])
    after = default_config(hub_reachable(), checkpoint=state["run.checkpoint"])
    for key, value in FOLLOWS_CHECKPOINT.items():
        if state[key] == value(before):
            state[key] = value(after)
    state["run.defaults_for"] = after.checkpoint


def take_uploads() -> None:
    """Keep each uploaded data file on this machine and point a SPLIT=PATH line at it (a widget callback, so the
    text area and the split box show the new lines on this run); the last file's split becomes the one checked."""
    state = st.session_state
    text, problems, split = state["run.data_files"], [], None
    for upload in state.get(UPLOADS_KEY) or ():
        try:
            path = loading.keep_upload(upload.name, upload.getvalue())
        except (InputError, OSError) as exc:
            problems.append(msg("{name} was not kept: {reason}", name=upload.name, reason=message_of(exc)))
            continue
        split = loading.split_for_upload(upload.name)
        text = loading.with_data_file(text, split, str(path))
    state["run.data_files"], state[UPLOAD_PROBLEMS_KEY] = text, problems
    if split:
        state["run.split"] = split


def _parse_quietly(text: str) -> tuple[tuple[str, str], ...]:
    try:
        return parse_data_files(text)
    except InputError:
        return ()


def apply_scenario() -> None:
    """Fill the sidebar with the chosen scenario's settings (a widget callback, so it runs before the widgets)."""
    name = st.session_state["run.scenario"]
    if name == NO_SCENARIO:
        return
    defaults = default_config(hub_reachable(), checkpoint=st.session_state["run.checkpoint"])
    config = SCENARIOS[name].apply(replace(defaults, task=st.session_state["run.task"]))
    state = st.session_state
    state["run.task"], state["run.split"] = config.task, config.split
    state["run.num_labels"] = config.num_labels
    state["run.columns"] = ",".join(config.columns) if config.columns else ""
    state["run.labels_in"], state["run.loss"], state["run.optimizer"] = config.labels_in, config.loss, config.optimizer
    state["run.learning_rate"] = f"{config.learning_rate:g}"
    state["run.shuffle_labels"] = config.shuffle_labels
    if config.data_source != "files":
        state["run.data_source"] = state["run.data_source"] if state["run.data_source"] != "files" else defaults.data_source


def scenario_picker() -> None:
    """The workshop picker and the chosen scenario's symptom (before the page, so the choice is never lost)."""
    st.selectbox(_("Workshop scenario"), [NO_SCENARIO, *SCENARIOS], key="run.scenario", on_change=apply_scenario,
                 format_func={NO_SCENARIO: _(NO_SCENARIO), **{name: f"{name}: {_(scenario.title)}"
                                                              for name, scenario in SCENARIOS.items()}}.get,
                 help=_("Each preset injects one known bug into the configuration above."))
    name = st.session_state["run.scenario"]
    if name != NO_SCENARIO:
        st.caption(_("**Symptom:** {symptom}").format(symptom=_(SCENARIOS[name].symptom)))


def scenario_panel(slot) -> None:
    """Which of the chosen scenario's expected checks have caught it so far (after the page has run)."""
    name = st.session_state.get("run.scenario", NO_SCENARIO)
    if name == NO_SCENARIO:
        return
    from ui.shared import recalled_statuses  # ui.shared builds on this module

    scenario = SCENARIOS[name]
    config = st.session_state.get(CONFIG_KEY)
    statuses = recalled_statuses(config) if config is not None else {}
    lines = []
    for checks, caught in scenario.caught(statuses).items():
        ran = any(check in statuses for check in checks.split(" or "))
        mark = _(":green[caught]") if caught else (_(":red[missed]") if ran else _(":gray[not run yet]"))
        lines.append(f"- `{checks}`: {mark}")
    slot.markdown(_("**Must be flagged by:**") + "\n" + (
        "\n".join(lines) if lines else "- " + _("nothing: no check may fail")))
    if name in ("course-script", "fixed") and not limits.hosted():
        slot.page_link("app_pages/script.py", label=_("Trace the course's own script"), icon=":material/code:")


def sidebar(page_path: str = ""):
    """Render the run configuration and store the validated RunConfig (or the reason it is invalid).

    Args:
        page_path: the open page's url_path, for the link to this run.

    Returns:
        the sidebar slot for the scenario panel, filled by `scenario_panel` once the page has run.
    """
    with st.sidebar:
        language_picker()
        st.header(_("Run under test"))
        link_problems()
        traced = st.session_state.get("script.traced")
        if st.session_state.get("script.active") and traced:
            st.info(_("The pages show your traced script **{name}**, not the settings below.").format(
                name=markdown_text(traced["name"])), icon=":material/code:")
            st.button(_("Back to these settings"), key="script.back", on_click=lambda: st.session_state.update(
                {"script.active": False}))
        if not hub_reachable():
            on_kit = st.session_state["run.checkpoint"].strip() == DEMO_CHECKPOINT
            st.info(_("Offline: the Hugging Face Hub cannot be reached, so the app runs on the bundled demo kit (a "
                      "tiny DistilBERT built here and GLUE-schema samples).") if on_kit else _(
                "Offline: the Hugging Face Hub cannot be reached, so checkpoints and data come from this machine: a "
                "directory written by save_pretrained, and local files or the bundled samples."),
                icon=":material/cloud_off:")
        hosted = limits.hosted()
        if hosted:
            st.caption(_("**Hosted mode** limits every run: {limits}.").format(limits=localize(hosted.describe())))
        data_widgets(hosted)
        training_widgets()
    try:
        st.session_state[CONFIG_KEY] = config_from_state()
        st.session_state[CONFIG_ERROR_KEY] = None
    except InputError as exc:
        st.session_state[CONFIG_KEY] = None
        st.session_state[CONFIG_ERROR_KEY] = message_of(exc)
    with st.sidebar:
        link_copy(page_path)
        st.divider()
        scenario_picker()
        return st.container()


def data_widgets(hosted) -> None:
    """The checkpoint, the task and its data, and how the batches are built."""
    st.text_input(_("Checkpoint"), key="run.checkpoint", on_change=follow_checkpoint,
                  help=_("A Hub name, a local directory written by save_pretrained, or 'demo' for the offline kit."))
    st.selectbox(_("GLUE task"), list(TASKS), key="run.task")
    sources = [source for source in DATA_SOURCES if not (hosted and source == "files")]
    source = st.radio(_("Data"), sources, key="run.data_source", format_func=said(DATA_SOURCE_LABELS).get)
    if source == "files":
        st.text_area(_("Data files (one SPLIT=PATH a line)"), key="run.data_files",
                     placeholder="train=/data/mnli/train.tsv\nvalidation_matched=/data/mnli/dev.tsv",
                     help=_("csv, tsv with a header row, json/jsonl or parquet, in the task's GLUE schema."))
        st.file_uploader(_("Or upload them"), type=[suffix[1:] for suffix in loading.LOCAL_FORMATS],
                         accept_multiple_files=True, key=UPLOADS_KEY, on_change=take_uploads,
                         help=_("Each file is kept on this machine and gets a SPLIT=PATH line above; its name before "
                                "the type names the split (dev.tsv: split 'dev'), which you can edit there."))
        for problem in st.session_state.get(UPLOAD_PROBLEMS_KEY) or ():
            st.warning(shown(problem), icon=":material/upload_file:")
        splits = [split for split, _ in _parse_quietly(st.session_state["run.data_files"])]
    else:
        splits = list(get_task(st.session_state["run.task"]).splits)
    if splits:
        if st.session_state["run.split"] not in splits:
            gone = st.session_state["run.split"]
            st.session_state["run.split"] = splits[0]
            if gone:
                st.caption(_("There is no split {gone} here; showing {shown}.").format(
                    gone=markdown_text(repr(gone)), shown=markdown_text(repr(splits[0]))))
        st.selectbox(_("Split"), splits, key="run.split")
    task = get_task(st.session_state["run.task"])
    st.number_input("num_labels", step=1, key="run.num_labels",
                    placeholder=_("task default ({count})").format(count=task.num_labels),
                    help=_("What from_pretrained(..., num_labels=N) gets. Empty: the task's own count."))
    left, right = st.columns(2)
    left.number_input(_("Batch size"), step=1, key="run.batch_size")
    right.number_input(_("Max length"), step=1, key="run.max_length")
    with st.expander(_("Dataset options")):
        st.text_input(_("columns= for to_tf_dataset"), key="run.columns",
                      placeholder=_("model inputs + label"),
                      help=_("Comma-separated, as in to_tf_dataset(columns=[...]); e.g. input_ids,labels. "
                             "Empty: the model's inputs and label."))
        labels_in = {"inputs": _("inside the input dict"), "separate": _("separate, Keras (x, y)")}
        st.radio(_("Labels"), ("inputs", "separate"), key="run.labels_in", format_func=labels_in.get)
        st.checkbox(_("Shuffle (to_tf_dataset(shuffle=True))"), key="run.shuffle")
        st.checkbox(_("Shuffle the labels apart from their texts (a bug)"), key="run.shuffle_labels")
        st.number_input(_("Seed"), min_value=0, step=1, key="run.seed")


def training_widgets() -> None:
    """The loss, the optimizer and its rate and schedule under test."""
    st.subheader(_("Training setup"))
    st.selectbox(_("Loss"), list(LOSSES), key="run.loss",
                 help="\n\n".join(f"**{k}**: {_(v)}" for k, v in LOSSES.items()))
    st.selectbox(_("Optimizer"), list(OPTIMIZERS), key="run.optimizer",
                 help="\n\n".join(f"**{k}**: {_(v)}" for k, v in OPTIMIZERS.items()))
    left, right = st.columns(2)
    if st.session_state["run.optimizer"] == "adam":
        # The rate in effect, not the one typed for the other optimizers (kept for them, see init_state).
        left.text_input(_("Learning rate"), value=f"{effective_rate(RunConfig(optimizer='adam')):g}", disabled=True,
                        key="run.learning_rate_in_effect",
                        help=_('The string "adam" always means 0.001, whatever rate is typed for the other '
                               'optimizers.'))
    else:
        left.text_input(_("Learning rate"), key="run.learning_rate")
    right.text_input(_("Weight decay"), key="run.weight_decay",
                     disabled=st.session_state["run.optimizer"] not in ("AdamW", "create_optimizer"))
    if st.session_state["run.optimizer"] == "create_optimizer":
        left, right = st.columns(2)
        left.number_input(_("Planned train steps"), min_value=1, step=100, key="run.train_steps")
        right.number_input(_("Warmup steps"), min_value=0, step=10, key="run.warmup_steps")


def config_from_state() -> RunConfig:
    state = st.session_state
    source = state["run.data_source"]
    columns = tuple(c.strip() for c in state["run.columns"].split(",") if c.strip()) or None
    return RunConfig(
        checkpoint=state["run.checkpoint"],
        task=state["run.task"],
        split=state["run.split"].strip(),
        data_source=source,
        data_files=parse_data_files(state["run.data_files"]) if source == "files" else (),
        num_labels=int(state["run.num_labels"]) if state["run.num_labels"] is not None else None,
        batch_size=int(state["run.batch_size"]),
        max_length=int(state["run.max_length"]),
        columns=columns,
        labels_in=state["run.labels_in"],
        shuffle=bool(state["run.shuffle"]),
        seed=int(state["run.seed"]),
        loss=state["run.loss"],
        optimizer=state["run.optimizer"],
        learning_rate=parse_number(msg("learning rate"), state["run.learning_rate"]),
        weight_decay=parse_number(msg("weight decay"), state["run.weight_decay"]),
        train_steps=int(state["run.train_steps"]),
        warmup_steps=int(state["run.warmup_steps"]),
        shuffle_labels=bool(state["run.shuffle_labels"]),
    ).validated()


def parse_number(name: str, text: str) -> float:
    """A number typed in the sidebar ('5e-5', '0.001'); anything else is an InputError naming the field."""
    try:
        return float(str(text).strip())
    except ValueError:
        raise InputError(msg("{name} {text} is not a number; write it like 5e-5 or 0.00005", name=name,
                             text=repr(text))) from None


def current_config() -> RunConfig | None:
    """The validated configuration; when invalid, the page shows why and stops."""
    config = st.session_state.get(CONFIG_KEY)
    if config is None:
        st.error(_("The run configuration cannot be used: {reason}").format(
            reason=shown(st.session_state.get(CONFIG_ERROR_KEY))))
        st.caption(_("Change it in the sidebar; everything else you entered is kept."))
        st.stop()
    return config


@st.cache_resource(show_spinner=False, max_entries=8)
def cached_tokenizer(checkpoint: str):
    """Shared by every session; read-only."""
    return loading.load_tokenizer(checkpoint)


@st.cache_resource(show_spinner=False, max_entries=16)
def cached_split(task: str, split: str, data_source: str, data_files: tuple, shuffle_labels: bool, seed: int):
    """Shared by every session; datasets are immutable (select/map return new objects)."""
    return loading.load_split(RunConfig(task=task, split=split, data_source=data_source, data_files=data_files,
                                        shuffle_labels=shuffle_labels, seed=seed))


@st.cache_resource(show_spinner=False, max_entries=4)
def cached_model(checkpoint: str, num_labels: int, seed: int):
    """Shared by every session and never trained, compiled or given new weights: checks work on copies."""
    return loading.load_model(checkpoint, num_labels, seed)


@st.cache_resource(show_spinner=False, max_entries=16)
def open_run(config: RunConfig) -> RunContext:
    """The run context of a configuration, shared by every page and session: its first batch and training batches
    are built once; its model comes from the shared cache and is never trained (checks train copies)."""
    tokenizer, split = load_inputs(config)
    return RunContext(config, tokenizer, split, cached_model)


def load_inputs(config: RunConfig):
    """The tokenizer and split of a configuration, from the shared caches."""
    tokenizer = cached_tokenizer(config.checkpoint)
    split = cached_split(config.task, config.split, config.data_source, config.data_files, config.shuffle_labels,
                         config.seed)
    loading.validate_for_tokenizer(config, tokenizer)
    return tokenizer, split
