"""The shared sidebar: one widget per setting, drawn from its row of `diagnostics/config/settings.py`; uploads kept as
data files, a new checkpoint's defaults, and the configuration the widgets make."""

from __future__ import annotations

from typing import Any, Callable

import streamlit as st

from diagnostics.config import limits

from diagnostics.keras import data_files
from diagnostics.config.run import DEMO_CHECKPOINT, RunConfig, default_config
from diagnostics.config.settings import parse_data_files
from diagnostics.core.errors import InputError
from diagnostics.config.tasks import get_task
from diagnostics.i18n import _, localize, message_of, msg
from diagnostics.config.settings import BY_FIELD, SETTINGS, Setting
from diagnostics.keras.training import effective_rate
from ui.address import link_copy, link_problems
from ui.caches import hub_reachable
from ui.render import markdown_text, shown
from ui.scenario_panel import scenario_picker
from ui.widgets import range_help, widget
from ui.session import CONFIG_ERROR_KEY, CONFIG_KEY, config_from_state, language_picker

UPLOADS_KEY, UPLOAD_PROBLEMS_KEY = "data.uploads", "data.upload_problems"
UPLOADED_KEY = "data.uploaded"  # the paths of the lines the uploads wrote, so that a file taken back takes its line
FOLLOWS_CHECKPOINT = ("learning_rate", "data_source")  # the settings whose default depends on the checkpoint
SECTIONS = ("run", "options", "training")


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
        setting_widgets(hosted)
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


def held(field: str) -> Any:
    """What a setting's widget holds now."""
    return st.session_state[BY_FIELD[field].key]


def setting_widgets(hosted) -> None:
    """Every setting's widget, section by section, in the table's order (a widget declared `under` another right
    after it; one declared `pair` beside the next of its section)."""
    for section in SECTIONS:
        rows = [setting for setting in SETTINGS
                if setting.ui and setting.ui.section == section and not setting.ui.under]
        if section == "options":
            where = st.expander(_("Dataset options"))
        else:
            where = st.container()
            if section == "training":
                where.subheader(_("Training setup"))
        with where:
            _draw_rows(rows, hosted)


def _shown(setting: Setting) -> bool:
    """Whether its widget is drawn now (a row declared `when` only while that holds)."""
    return setting.ui.when is None or setting.ui.when(held)


def _draw_rows(rows: list[Setting], hosted) -> None:
    shown_rows = [setting for setting in rows if _shown(setting)]
    index = 0
    while index < len(shown_rows):
        setting = shown_rows[index]
        if setting.ui.pair and index + 1 < len(shown_rows):
            left, right = st.columns(2)
            draw(setting, left, hosted)
            draw(shown_rows[index + 1], right, hosted)
            index += 2
            continue
        draw(setting, st, hosted)
        index += 1


def draw(setting: Setting, where, hosted) -> None:
    """One setting's widget (then those declared under it), in `where` (the sidebar, or one of its columns)."""
    spec = setting.ui
    special = SPECIAL.get(setting.field)
    options = dict(key=setting.key, help=_(spec.help) if spec.help else None)
    if spec.choice_help:
        options["help"] = "\n\n".join(f"**{key}**: {_(text)}" for key, text in spec.choice_help.items())
    if spec.enabled is not None:
        options["disabled"] = not spec.enabled(held)
    if (span := range_help(setting, hosted)) is not None:
        options["help"] = f"{options['help']}\n\n{span}" if options["help"] else span
    if spec.clamps and setting.bounds is not None:
        options["min_value"] = int(setting.bounds.low) if setting.bounds.whole else float(setting.bounds.low)
    if special is None or special(setting, where, options, hosted):
        widget(spec, where, options, list(spec.options or setting.choices or ()))
    for child in SETTINGS:
        if child.ui and child.ui.under == setting.field and _shown(child):
            draw(child, where, hosted)


def _checkpoint(setting, where, options, hosted) -> bool:
    options["on_change"] = follow_checkpoint
    return True


def _data_source(setting, where, options, hosted) -> bool:
    """A hosted server reads no local files, so it offers the rest."""
    choices = [source for source in setting.choices if not (hosted and source == "files")]
    widget(setting.ui, where, options, choices)
    return False


def _data_files(setting, where, options, hosted) -> bool:
    """The files' lines, then uploads that become lines of their own."""
    widget(setting.ui, where, options, [])
    where.file_uploader(_("Or upload them"), type=[suffix[1:] for suffix in data_files.LOCAL_FORMATS],
                        accept_multiple_files=True, key=UPLOADS_KEY, on_change=take_uploads,
                        help=_("Each file is kept on this machine and gets a SPLIT=PATH line above; its name before "
                               "the type names the split (dev.tsv: split 'dev'), which you can edit there."))
    for problem in st.session_state.get(UPLOAD_PROBLEMS_KEY) or ():
        where.warning(shown(problem), icon=":material/upload_file:")
    return False


def _split(setting, where, options, hosted) -> bool:
    """The splits the data has (its files' lines, or the task's); one it lacks gives way to its first."""
    if held("data_source") == "files":
        splits = [split for split, _ in _parse_quietly(held("data_files"))]
    else:
        splits = list(get_task(held("task")).splits)
    if not splits:
        return False
    if held("split") not in splits:
        gone = held("split")
        st.session_state[setting.key] = splits[0]
        if gone:
            where.caption(_("There is no split {gone} here; showing {shown}.").format(
                gone=markdown_text(repr(gone)), shown=markdown_text(repr(splits[0]))))
    widget(setting.ui, where, options, splits)
    return False


def _num_labels(setting, where, options, hosted) -> bool:
    options["placeholder"] = _(setting.ui.placeholder).format(count=get_task(held("task")).num_labels)
    return True


def _learning_rate(setting, where, options, hosted) -> bool:
    """The string "adam" shows the rate it means instead of the one typed for the other optimizers (kept for them,
    see `session.init_state`)."""
    if held("optimizer") != "adam":
        return True
    where.text_input(_(setting.ui.label), value=f"{effective_rate(RunConfig(optimizer='adam')):g}", disabled=True,
                     key="run.learning_rate_in_effect",
                     help=_('The string "adam" always means 0.001, whatever rate is typed for the other optimizers.'))
    return False


# The settings whose widget does more than its row says: each returns whether the plain widget is still drawn.
SPECIAL: dict[str, Callable[..., bool]] = {"checkpoint": _checkpoint, "data_source": _data_source,
                                           "data_files": _data_files, "split": _split, "num_labels": _num_labels,
                                           "learning_rate": _learning_rate}


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
    text, problems, split, kept = state["run.data_files"], [], None, []
    for upload in state.get(UPLOADS_KEY) or ():
        try:
            path = data_files.keep_upload(upload.name, upload.getvalue())
        except (InputError, OSError) as exc:
            problems.append(msg("{name} was not kept: {reason}", name=upload.name, reason=message_of(exc)))
            continue
        split = data_files.split_for_upload(upload.name)
        text = data_files.with_data_file(text, split, str(path))
        kept.append(str(path))
    # A file taken back with its ✕ takes its line with it (lines typed by hand stay).
    text = data_files.without_data_files(text, set(state.get(UPLOADED_KEY) or ()) - set(kept))
    state["run.data_files"], state[UPLOAD_PROBLEMS_KEY], state[UPLOADED_KEY] = text, problems, kept
    if split:
        state["run.split"] = split


def _parse_quietly(text: str) -> tuple[tuple[str, str], ...]:
    try:
        return parse_data_files(text)
    except InputError:
        return ()
