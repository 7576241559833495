"""One setting's widget in the sidebar, drawn from its declaration (`diagnostics/config/settings.py`'s `Widget`): the
widget of its kind with its label, placeholder, step and choices' names, and a choice too long for a select's one
line said whole below it."""

from __future__ import annotations

from diagnostics.i18n import _, display_width, said
from ui.render import choice, shown


def widget(spec, where, options: dict, choices: list) -> None:
    """The widget of `spec`'s kind in `where` (the sidebar, or one of its columns), with `options` (key, help)."""
    label = _(spec.label)
    if spec.placeholder and "placeholder" not in options and spec.kind in ("text", "area", "number"):
        options["placeholder"] = _(spec.placeholder)
    if spec.kind == "number" and spec.step is not None:
        options["step"] = spec.step
    if spec.labels and spec.kind in ("select", "radio"):
        options["format_func"] = said(spec.labels).get
        choice(options["key"])
    draw_kind = {"text": where.text_input, "area": where.text_area, "number": where.number_input,
                 "check": where.checkbox, "select": where.selectbox, "radio": where.radio}[spec.kind]
    if spec.kind in ("select", "radio"):
        chosen = draw_kind(label, choices, **options)
        if spec.kind == "select" and chosen is not None:
            # A select shows one line of the sidebar's width and cuts the rest ('sparse_categorical_crossentr…'): a
            # long choice is said whole below it, with what it means where the setting says so.
            displayed = str(options["format_func"](chosen) if "format_func" in options else chosen)
            if shows_cut(displayed):
                meaning = (spec.choice_help or {}).get(chosen)
                where.caption(shown(_(meaning) if meaning and "format_func" not in options else displayed))
    else:
        draw_kind(label, **options)


# The width of a choice that a sidebar select shows whole, in Latin letters (a Chinese or Korean one counts two).
LONG_CHOICE = 28


def shows_cut(text: str) -> bool:
    """Whether a sidebar select shows `text` cut (wider than `LONG_CHOICE`)."""
    return display_width(text) > LONG_CHOICE


def range_help(setting, hosted) -> str | None:
    """A bounded number's range, for its help: the browser refuses a number past its own range itself, red, with a
    tooltip in English only ("Number is above the allowed range"), so the range is said in the visitor's language
    before anything is typed; hosted mode's lower cap of the same name where it has one."""
    bounds = setting.bounds
    if setting.ui.kind != "number" or bounds is None or bounds.high is None:
        return None
    cap = getattr(hosted, setting.field if setting.field.startswith("max_") else f"max_{setting.field}", None)
    high = min(bounds.high, cap) if isinstance(cap, (int, float)) else bounds.high
    return _("From {low} to {high}.").format(low=_number(bounds.low), high=_number(high))


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"
