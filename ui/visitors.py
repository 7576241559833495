"""Who is asking: the visitor behind a page's session, so the shared store bounds one person's heavy work however
many tabs they open."""

from __future__ import annotations

import hashlib
import ipaddress
import logging

import streamlit as st

LOG = logging.getLogger(__name__)


def visitor_id() -> str | None:
    """Who is asking, so the store bounds how much heavy work one visitor queues however many tabs they open: the
    machine the connection comes from where the server sees it (a room's app, served to the network: the address
    cannot be made up, a cookie can), else the browser's cookie that Streamlit's XSRF protection sets (one for
    every tab of a browser), else this tab's session. A hosted app reads the address its proxies forwarded when the
    deployment says how many stand in front (DEBUGGER_PROXY_HOPS, the Space's 1), else the connection's own:
    behind `docker run -p` there is no proxy, and a forwarded header would be the client's own words."""
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    from diagnostics.config import limits

    context = get_script_run_ctx()
    session = context.session_id if context is not None else None
    try:
        cookies = dict(st.context.cookies)
        hosted = limits.hosted()
        if hosted is None:
            address = st.context.ip_address  # None for this machine's own
        else:
            address = hosted_address(st.context.headers.get_all("X-Forwarded-For"), st.context.ip_address,
                                     hosted.proxy_hops, hosted.ipv6_prefix)
    except Exception:  # no browser behind this run (AppTest, a bare script)
        cookies, address = {}, None
    return visitor_of(cookies, session, address)


def hosted_address(forwarded: list[str], connection: str | None, hops: int, ipv6_prefix: int = 56) -> str | None:
    """A hosted visitor's address: the one its proxies forwarded when the deployment says how many stand in front
    (`hops`), else the connection's own, whatever X-Forwarded-For the client wrote (`docker run -p`: no proxy)."""
    if hops:
        return forwarded_address(forwarded, hops, ipv6_prefix)
    return keyed_address(connection, ipv6_prefix)


def keyed_address(text: str | None, ipv6_prefix: int = 56) -> str | None:
    """An address as a visitor's key: an IPv4 address as it is, an IPv6 one as its block of `ipv6_prefix` bits
    (what one household or machine is given); None for none or what is not an address."""
    try:
        address = ipaddress.ip_address((text or "").strip())
    except ValueError:
        return None
    if address.version == 6 and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    if address.version == 4:
        return str(address)
    return str(ipaddress.ip_network(f"{address}/{min(max(ipv6_prefix, 0), 128)}", strict=False))


def forwarded_address(values: list[str], hops: int, ipv6_prefix: int = 56) -> str | None:
    """The visitor's address from the X-Forwarded-For headers their request came through (`values`, in the order
    received). Each proxy adds the address it was reached from at the right, so a client can put what it likes only
    left of what the proxies wrote. Read from the right, entries of the host's own network (private, loopback,
    link-local, shared) are its internal proxies and are passed over; the `hops`-th public address is the visitor's
    as the outermost public proxy saw it (1: no proxy with a public address of its own stands in between). None
    when there is no such entry, or `hops` is 0. An IPv6 address stands for its block (`keyed_address`)."""
    entries = [entry.strip() for value in values for entry in value.split(",") if entry.strip()]
    _say_once(len(entries), hops)
    public = []
    for entry in reversed(entries):
        try:
            address = ipaddress.ip_address(entry)
        except ValueError:
            return None  # not an address: no proxy wrote it, and nothing left of it can be trusted
        if address.version == 6 and address.ipv4_mapped is not None:
            address = address.ipv4_mapped
        if address.is_global:
            public.append(address)
            if len(public) == hops:
                break
    if hops <= 0 or len(public) < hops:
        return None
    return keyed_address(str(public[-1]), ipv6_prefix)


_said = set()


def _say_once(count: int, hops: int) -> None:
    """The server's log says once how many X-Forwarded-For entries a hosted visitor's request carried (not what they
    were), so whoever deploys it can set DEBUGGER_PROXY_HOPS to the proxies in front of it."""
    if (count, hops) not in _said and len(_said) < 16:  # a client choosing its own counts gets a few lines at most
        _said.add((count, hops))
        LOG.warning("visitors: a request carried %d X-Forwarded-For entries; the visitor is public address %d from "
                    "the right (DEBUGGER_PROXY_HOPS)", count, hops)


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
