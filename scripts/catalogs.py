"""The translation catalogs: extract every message with Babel, merge it into each language's .po, compile the .mo.

    python scripts/catalogs.py            # extract, update every .po (new messages arrive untranslated), compile
    python scripts/catalogs.py --check    # exit 1 naming what is missing, stale or broken; changes nothing

Messages are the first argument of `_("...")`, `N_("...")` and `msg("...", **values)`, and the two of
`msgn("...", "...", count)` (a message with plural forms, each language as many as its Plural-Forms say), in
diagnostics/, ui/, app_pages/ and app.py. A translation must keep its message's {placeholders}, in every form.
"""

from __future__ import annotations

import argparse
import gettext
import io
import sys
from datetime import datetime, timezone
from pathlib import Path

from babel.messages.catalog import Catalog
from babel.messages.extract import extract_from_dir, extract_from_file
from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po, write_po

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from diagnostics.i18n import DEFAULT_LANGUAGE, DOMAIN, LANGUAGES, LOCALE_DIR, placeholders  # noqa: E402

SOURCES = ("diagnostics", "ui", "app_pages")
KEYWORDS = {"_": None, "N_": None, "msg": None, "msgn": (1, 2)}
TEMPLATE = LOCALE_DIR / f"{DOMAIN}.pot"
CREATED = datetime(2026, 1, 1, tzinfo=timezone.utc)


def extract() -> Catalog:
    """Every message of the code, with where it is used."""
    # A fixed creation date: the header changes only when the project does, not each time the catalogs are made.
    catalog = Catalog(project="Training Pipeline Debugger", domain=DOMAIN, charset="utf-8", creation_date=CREATED)
    found = [(ROOT / source, extract_from_dir(ROOT / source, keywords=KEYWORDS,
                                              directory_filter=lambda path: "__pycache__" not in path))
             for source in SOURCES]
    for base, messages in found:
        for filename, line, message, _comments, _context in messages:
            catalog.add(message, locations=[(f"{base.name}/{filename}", line)], flags=("python-brace-format",))
    for line, message, _comments, _context in extract_from_file("python", ROOT / "app.py", keywords=KEYWORDS):
        catalog.add(message, locations=[("app.py", line)], flags=("python-brace-format",))
    return catalog


def po_path(language: str) -> Path:
    return LOCALE_DIR / language / "LC_MESSAGES" / f"{DOMAIN}.po"


def read(path: Path, language: str | None = None) -> Catalog:
    with path.open("rb") as handle:
        return read_po(handle, locale=language)


def _po_bytes(catalog: Catalog) -> bytes:
    buffer = io.BytesIO()
    # Files without line numbers: a code edit moves lines, and would rewrite every location of every catalog.
    write_po(buffer, catalog, width=120, omit_header=False, sort_output=True, include_previous=False,
             include_lineno=False)
    return buffer.getvalue()


def _mo_bytes(catalog: Catalog) -> bytes:
    buffer = io.BytesIO()
    write_mo(buffer, catalog, use_fuzzy=False)
    return buffer.getvalue()


def _messages(mo: bytes) -> dict:
    """What a compiled catalog says, as gettext reads it: the same for any Babel that wrote the bytes.

    Of the header, only what gettext acts on (the charset and the plural rule): the rest is metadata that Babel
    versions write differently from the same .po.
    """
    messages = dict(gettext.GNUTranslations(io.BytesIO(mo))._catalog)
    header = messages.pop("", "")
    messages[""] = "\n".join(line for line in header.splitlines()
                              if line.startswith(("Content-Type:", "Plural-Forms:")))
    return messages


def translated_languages() -> list[str]:
    return [language for language in LANGUAGES if language != DEFAULT_LANGUAGE]


def problems() -> list[str]:
    """What is missing, stale or broken in the catalogs (nothing when they are complete and compiled)."""
    template = extract()
    found = []
    ids = {message.id for message in template if message.id}
    for language in translated_languages():
        path = po_path(language)
        if not path.exists():
            found.append(f"{language}: no catalog at {path.relative_to(ROOT)}")
            continue
        catalog = read(path, language)
        for message in template:
            if not message.id:
                continue
            entry = catalog.get(message.id)
            forms = list(entry.string) if entry is not None and isinstance(entry.string, (tuple, list)) else \
                [entry.string] if entry is not None else []
            wanted = placeholders(message.id[-1] if isinstance(message.id, (tuple, list)) else message.id)
            if entry is None or not forms or not all(forms) or entry.fuzzy:
                found.append(f"{language}: no translation for {message.id!r}")
            # A plural form may leave the count out ("одна строка"); every other placeholder stays.
            elif any(placeholders(form) - wanted or wanted - placeholders(form) - (
                    {"count"} if isinstance(message.id, (tuple, list)) else set()) for form in forms):
                found.append(f"{language}: {message.id!r} is translated with placeholders "
                             f"{[sorted(placeholders(form)) for form in forms]}, not {sorted(wanted)}")
        stale = [message.id for message in catalog if message.id and message.id not in ids]
        found += [f"{language}: {message!r} is no longer in the code" for message in stale]
        compiled = path.with_suffix(".mo")
        if not compiled.exists() or _messages(compiled.read_bytes()) != _messages(_mo_bytes(catalog)):
            found.append(f"{language}: {compiled.relative_to(ROOT)} is not compiled from its .po")
    return found


def update() -> None:
    """Extract, merge into each .po (keeping translations, dropping messages gone from the code), compile."""
    template = extract()
    TEMPLATE.parent.mkdir(parents=True, exist_ok=True)
    TEMPLATE.write_bytes(_po_bytes(template))
    for language in translated_languages():
        path = po_path(language)
        path.parent.mkdir(parents=True, exist_ok=True)
        catalog = read(path, language) if path.exists() else Catalog(locale=language, domain=DOMAIN)
        catalog.update(template, no_fuzzy_matching=True)
        catalog.obsolete.clear()
        path.write_bytes(_po_bytes(catalog))
        path.with_suffix(".mo").write_bytes(_mo_bytes(catalog))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="report what is missing; change nothing")
    args = parser.parse_args(argv)
    if args.check:
        found = problems()
        print("\n".join(found) if found else "Every catalog is complete and compiled.")
        return 1 if found else 0
    update()
    return 0


if __name__ == "__main__":
    sys.exit(main())
