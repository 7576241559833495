"""Evidence as tables on a page: rows in the page's language, decoded rows with their text fields, a row in full."""

from __future__ import annotations

import streamlit as st

from diagnostics.i18n import _, localize
from ui.render import markdown_text


def frame(rows: list[dict], columns: list[str] | None = None):
    """Evidence rows as a table in the page's language (a cell that is a sentence, such as a label name that says
    '(out of range: 2)', is translated; numbers, text and code stay as they are)."""
    import pandas as pd

    table = pd.DataFrame([{key: localize(value) for key, value in row.items()} for row in rows])
    return table[columns] if columns else table


def field_frame(rows: list[dict], columns: list[str]):
    """Decoded rows as a table with one column for each text field put before `decoded`: the text as the split holds
    it (`raw`) where the rows carry it, else what the model reads of it (`fields`); returns (the table, the field
    names)."""
    key = "raw" if rows and rows[0].get("raw") else "fields"
    fields = list((rows[0].get(key) or {}) if rows else {})
    flat = [{**{name: value for name, value in row.items() if name not in ("fields", "raw")}, **(row.get(key) or {})}
            for row in rows]
    at = columns.index("decoded") if "decoded" in columns else len(columns)
    return frame(flat, columns[:at] + fields + columns[at:]), fields


def field_columns(fields: list[str], *, decoded_width: int = 300) -> dict:
    """Column settings for `field_frame`'s text columns."""
    return {**{field: st.column_config.TextColumn(field, width=360) for field in fields},
            "decoded": st.column_config.TextColumn(_("what the model reads (tokenizer.decode)"), width=decoded_width)}


def row_in_full(row: dict) -> None:
    """One decoded row in full: each text field as the split holds it, then what the model reads of it (special
    tokens left out), then `tokenizer.decode` of the whole row."""
    raw, read = row.get("raw") or {}, row.get("fields") or {}
    for field in dict.fromkeys([*raw, *read]):
        st.markdown(f"**{markdown_text(field)}**")
        if field in raw:
            st.caption(_("As the split holds it"))
            st.markdown(markdown_text(raw[field]))
        if field in read:
            st.caption(_("What the model reads of it"))
            st.markdown(markdown_text(read[field]))
    st.markdown("**" + _("decoded (tokenizer.decode)") + "**")
    st.markdown(markdown_text(row.get("decoded", "")))
