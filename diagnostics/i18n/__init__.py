"""The app's languages: gettext catalogs, the current language, and sentences that can be said again in another.

A finding is made once and shown to many people (the shared results, the JSON report), so it keeps its English
template and its values (`msg`), and each page, the command line and the Markdown report translate it when they
show it (`localize`), filling the numbers and names in after translation. A sentence about a count has its plural
forms (`msgn`, gettext's ngettext: Russian has three), and grouped numbers and percentages are written the reader's
way (Babel: "12 345" in Russian, "12,345" in English). Fixed texts of the interface go through `_` at the moment
they are drawn, in the language of the run that draws them.

Catalogs: `diagnostics/i18n/locale/<lang>/LC_MESSAGES/debugger.po` (edited) and `.mo` (compiled by
`python scripts/catalogs.py`, which also extracts new messages with Babel).
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import gettext
import math
import os
import string
from pathlib import Path
from typing import Any, Callable

DOMAIN = "debugger"
LOCALE_DIR = Path(__file__).resolve().parent / "locale"
LANGUAGES = {"en": "English", "ru": "Русский", "zh": "中文", "it": "Italiano", "ko": "한국어"}
DEFAULT_LANGUAGE = "en"

_current: contextvars.ContextVar[str] = contextvars.ContextVar("debugger_language", default=DEFAULT_LANGUAGE)


class Text(str):
    """An English sentence that remembers its template and values, so `localize` can say it in another language.

    It is a str (the English sentence), so the JSON report, the tests and every caller that only reads text see
    plain English. A sentence about a count keeps its plural template too (`plural`; the count is
    `params["count"]`).
    """

    template: str
    params: dict[str, Any]
    plural: str | None

    def __new__(cls, template: str, params: dict[str, Any], plural: str | None = None):
        english = template if plural is None or params.get("count") == 1 else plural
        self = super().__new__(cls, one_stop(english.format(**{name: _plain(value) for name, value in params.items()})))
        self.template, self.params, self.plural = template, params, plural
        return self

    def __reduce__(self):
        return Text, (self.template, self.params, self.plural)

    # Joined with another text, a sentence stays a sentence: both parts keep their templates (`joined`), where str's
    # own + would leave plain English that no page can translate.
    def __add__(self, other):
        return joined([self, other], "") if isinstance(other, str) else NotImplemented

    def __radd__(self, other):
        return joined([other, self], "") if isinstance(other, str) else NotImplemented

    # Put into an f-string or str.format, a sentence would become plain English that no page can translate. Under
    # $DEBUGGER_STRICT_TEXT (the test suite sets it) that is refused; elsewhere the English is kept, never a crash.
    def __format__(self, spec: str) -> str:
        if os.environ.get(STRICT_ENV):
            raise TypeError(f"the sentence {self.template!r} was formatted into a plain string, which loses its "
                            "translation: pass it to msg(...) as a value, join it with + or joined(), or localize() it")
        return str.__format__(str.__str__(self), spec)


STRICT_ENV = "DEBUGGER_STRICT_TEXT"


def one_stop(text: str) -> str:
    """`text` ending on one full stop where a sentence filled in at its end brought its own ("... built: the
    dataset's rows are (16, 1, 128).."); an ellipsis stays."""
    if len(text) >= 2 and text[-1] in ".。" and text[-2] in ".。" and not text.endswith("..."):
        return text[:-1]
    return text


def _plain(value: Any) -> Any:
    """A value as a template fills it in: a sentence as its English (it keeps its own template in `params`)."""
    return str.__str__(value) if isinstance(value, Text) else value


def msg(template: str, **params) -> Text:
    """A translatable sentence: `template` is the message id in the catalogs, filled with `params` (str.format)."""
    return Text(template, params)


def msgn(singular: str, plural: str, count: int, **params) -> Text:
    """A translatable sentence about `count` things: "1 row" / "{count} rows" in English, each language's own plural
    forms elsewhere (ngettext). Both templates fill `{count}` and `params`."""
    return Text(singular, {"count": count, **params}, plural=plural)


def joined(parts: list, separator: str = ", ") -> Text:
    """Sentences (or plain texts) joined by `separator`, each translated when the whole is shown."""
    names = [f"part{index}" for index in range(len(parts))]
    template = separator.join("{" + name + "}" for name in names)
    return Text(template, dict(zip(names, parts, strict=True)))


def N_(text: str) -> str:
    """Mark a fixed text for the catalogs where it is declared; `_` translates it where it is shown."""
    return text


@functools.lru_cache(maxsize=None)
def translations(language: str) -> gettext.NullTranslations:
    """The compiled catalog of `language` (English and an unknown language: the messages as written)."""
    if language == DEFAULT_LANGUAGE:
        return gettext.NullTranslations()
    return gettext.translation(DOMAIN, LOCALE_DIR, languages=[language], fallback=True)


def current_language() -> str:
    return _current.get()


def set_language(language: str | None) -> str:
    """Make `language` the current one for this run (an unknown one falls back to English); returns it."""
    chosen = language if language in LANGUAGES else DEFAULT_LANGUAGE
    _current.set(chosen)
    return chosen


@contextlib.contextmanager
def use_language(language: str | None):
    """Within the block, `_` and `localize` speak `language`."""
    token = _current.set(language if language in LANGUAGES else DEFAULT_LANGUAGE)
    try:
        yield
    finally:
        _current.reset(token)


def _(text: str) -> str:
    """A fixed text of the interface in the current language."""
    return translations(current_language()).gettext(text) if text else text


def said(labels: dict[str, str]) -> dict[str, str]:
    """Each label in the current language, as a dict a widget's format_func can read (a dict, not a function that
    translates when called, so the labels are fixed in the language of the run that draws the widget)."""
    return {key: _(label) for key, label in labels.items()}


def localize(value: Any, language: str | None = None, escape: Callable[[str], str] | None = None) -> Any:
    """A `Text` (or a list of them) in `language` (the current one when None), values translated too where they are
    `Text`; any other value as it is (code, column names, plain English written before the catalogs knew it).

    Args:
        escape: applied to every plain text the sentence is filled with (and to a plain text given alone), never to
            the template: a page passes Markdown escaping, so a file name or a link's value shows as typed.
    """
    if isinstance(value, list):
        return [localize(item, language, escape) for item in value]
    if not isinstance(value, Text):
        return escape(value) if escape is not None and isinstance(value, str) else value
    language = language or current_language()
    if language == DEFAULT_LANGUAGE and escape is None:
        return str(value)
    catalog = translations(language)
    if value.plural is not None:
        template = catalog.ngettext(value.template, value.plural, _count(value.params.get("count")))
    else:
        template = catalog.gettext(value.template)
    params = {name: localize(item, language, escape) for name, item in value.params.items()}
    try:
        return one_stop(_with_numbers(template, params, language).format(**params))
    except (KeyError, IndexError, ValueError, TypeError):  # placeholders that drifted: English, never a crash
        return str(value) if escape is None else escape(str(value))


def _count(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return 2


def _with_numbers(template: str, params: dict[str, Any], language: str) -> str:
    """The template with each grouped number ({count:,}) and percentage ({share:.0%}) written the reader's way by
    Babel, filled in as text (into `params`, under names of their own); English keeps Python's own formatting."""
    if language == DEFAULT_LANGUAGE:
        return template
    from babel.numbers import format_decimal, format_percent, get_decimal_symbol

    parts = []
    for index, (literal, field, spec, conversion) in enumerate(string.Formatter().parse(template)):
        parts.append(literal.replace("{", "{{").replace("}", "}}"))
        if field is None:
            continue
        value = params.get(field)
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        digits = spec.rsplit(".", 1)[-1].rstrip("f%") if "." in (spec or "") else ""
        if number and spec and spec.endswith("%"):
            pattern = "#,##0" + ("." + "0" * int(digits) if digits.isdigit() and int(digits) else "") + "%"
            params[f"_number{index}"] = format_percent(value, format=pattern, locale=language)
        elif number and spec and "," in spec:
            decimals = int(digits) if digits.isdigit() else 0
            pattern = "#,##0" + ("." + "0" * decimals if decimals else "")
            params[f"_number{index}"] = format_decimal(value, format=pattern, locale=language)
        elif number and spec and spec.endswith("f") and digits.isdigit() and math.isfinite(value):
            # A fixed-point number ({loss:.3f}) with the reader's decimal sign, as its percentages beside it have:
            # Italian read "0.693" beside "3,8%" in one sentence. No code is written this way (a rate in a fix is
            # {rate} or {rate:.0e}), so nothing pasted changes.
            pattern = "0" + ("." + "0" * int(digits) if int(digits) else "")
            params[f"_number{index}"] = format_decimal(value, format=pattern, locale=language)
        elif number and spec and spec.endswith("g") and "e" not in format(value, spec):
            # A rate or limit written shortest ({rate:g}: 0.1, 0.003) with the reader's decimal sign too; one in
            # scientific notation (2e-05) is the same in every language.
            params[f"_number{index}"] = format(value, spec).replace(".", get_decimal_symbol(language))
        else:
            parts.append("{" + field + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "") + "}")
            continue
        parts.append("{" + f"_number{index}" + "}")
    return "".join(parts)


def message_of(exc: BaseException) -> str:
    """An exception's message, still translatable when it was raised with a `msg` (InputError(msg(...)))."""
    first = exc.args[0] if exc.args else None
    return first if isinstance(first, Text) else str(exc)


def to_data(value: Any) -> Any:
    """A sentence as JSON data ({"template", "params"}, values likewise), so a report written in one process can be
    translated in another; any other value as it is."""
    if isinstance(value, Text):
        return {"template": value.template, "params": {name: to_data(item) for name, item in value.params.items()},
                **({"plural": value.plural} if value.plural is not None else {})}
    if hasattr(value, "item") and callable(value.item) and getattr(value, "ndim", 1) == 0:
        value = value.item()  # a NumPy scalar
    if isinstance(value, list):
        return [to_data(item) for item in value]
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return str(value)  # a tuple or dict prints as it would in the sentence


def from_data(data: Any) -> Any:
    """The sentence `to_data` wrote (an unreadable one: None)."""
    if isinstance(data, dict) and isinstance(data.get("template"), str):
        try:
            plural = data.get("plural") if isinstance(data.get("plural"), str) else None
            return Text(data["template"], {name: from_data(item) for name, item in (data.get("params") or {}).items()},
                        plural=plural)
        except (KeyError, IndexError, ValueError, TypeError):
            return None
    if isinstance(data, list):
        return [from_data(item) for item in data]
    return data


def display_width(text: str) -> int:
    """How wide `text` shows, in Latin letters: a Chinese, Japanese or Korean letter takes two."""
    import unicodedata

    return sum(2 if unicodedata.east_asian_width(char) in ("W", "F") else 1 for char in text)


def placeholders(template: str) -> set[str]:
    """The names a template fills in ({count:,} -> 'count')."""
    return {field.split(".")[0].split("[")[0] for _, field, _, _ in string.Formatter().parse(template) if field}


def language_from_locale(locale: str | None) -> str:
    """The app's language for a browser locale or an Accept-Language header ('ko-KR', 'ru,en;q=0.8'); English when
    none of its languages is listed."""
    for part in (locale or "").split(","):
        code = part.split(";")[0].strip().lower().replace("_", "-").split("-")[0]
        if code in LANGUAGES:
            return code
    return DEFAULT_LANGUAGE
