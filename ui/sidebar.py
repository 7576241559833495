"""The shared sidebar: the widgets of the run under test (one per setting of `diagnostics/settings.py`), uploads
kept as data files, a new checkpoint's defaults, and the configuration they make."""

from __future__ import annotations

import streamlit as st

from diagnostics import limits, loading
from diagnostics.config import DATA_SOURCES, DEMO_CHECKPOINT, LOSSES, OPTIMIZERS, RunConfig, default_config, parse_data_files
from diagnostics.errors import InputError
from diagnostics.glue import TASKS, get_task
from diagnostics.i18n import N_, _, localize, message_of, msg, said
from diagnostics.settings import BY_FIELD
from diagnostics.training import effective_rate
from ui.address import link_copy, link_problems
from ui.caches import hub_reachable
from ui.render import markdown_text, shown
from ui.scenario_panel import scenario_picker
from ui.session import CONFIG_ERROR_KEY, CONFIG_KEY, config_from_state, language_picker

UPLOADS_KEY, UPLOAD_PROBLEMS_KEY = "data.uploads", "data.upload_problems"
DATA_SOURCE_LABELS = {"demo": N_("Bundled demo samples"), "hub": N_("Hugging Face Hub (nyu-mll/glue)"),
                      "files": N_("Local files")}
FOLLOWS_CHECKPOINT = ("learning_rate", "data_source")  # the settings whose default depends on the checkpoint


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


def follow_checkpoint() -> None:
    """A new checkpoint brings its own defaults (the demo kit's samples and 3e-3, or 5e-5 for a pretrained model)
    to every setting the user has not changed; one they set stays (a widget callback, so it runs first)."""
    state = st.session_state
    before = default_config(hub_reachable(), checkpoint=state["run.defaults_for"])
    after = default_config(hub_reachable(), checkpoint=state["run.checkpoint"])
    for field in FOLLOWS_CHECKPOINT:
        setting = BY_FIELD[field]
        if state[setting.key] == setting.widget(getattr(before, field)):
            state[setting.key] = setting.widget(getattr(after, field))
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
