"""Who is asking: the visitor behind a page's session, so the shared store bounds one person's heavy work however
many tabs they open."""

from __future__ import annotations

import hashlib

import streamlit as st


def visitor_id() -> str | None:
    """Who is asking, so the store bounds how much heavy work one visitor queues however many tabs they open: the
    machine the connection comes from where the server sees it (a room's app, served to the network: the address
    cannot be made up, a cookie can), else the browser's cookie that Streamlit's XSRF protection sets (one for
    every tab of a browser), else this tab's session. A hosted app sees its proxy's address for everyone, so it
    goes by the cookie."""
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    from diagnostics.config import limits

    context = get_script_run_ctx()
    session = context.session_id if context is not None else None
    try:
        cookies = dict(st.context.cookies)
        address = st.context.ip_address if limits.hosted() is None else None  # None for this machine's own
    except Exception:  # no browser behind this run (AppTest, a bare script)
        cookies, address = {}, None
    return visitor_of(cookies, session, address)


def visitor_of(cookies: dict, session: str | None, address: str | None = None) -> str | None:
    """The visitor a request comes from: the address of the machine it comes from when known, else its browser's
    XSRF token when it sends one, else its session. The cookie is written anew with a fresh mask on each page load
    ("2|mask|masked token|time"), so the token is unmasked first: every tab of one browser has the same."""
    if address:
        return f"address:{address}"
    value = (cookies.get("_streamlit_xsrf") or "").strip("\"'")
    parts = value.split("|")
    try:
        if len(parts) == 4 and parts[0] == "2":
            mask, masked = bytes.fromhex(parts[1]), bytes.fromhex(parts[2])
            token = bytes(left ^ right for left, right in zip(mask, masked, strict=True)).hex()
        else:
            token = value
    except ValueError:
        token = value
    return f"browser:{hashlib.sha256(token.encode()).hexdigest()[:16]}" if token else session
