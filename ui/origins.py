"""Which pages may drive a laptop's app: its own only.

Streamlit lets a page of any localhost port open a session (`server_util.is_url_from_allowed_origins` trusts the
name "localhost" whatever its port): a page served from `http://localhost:8888` or `http://127.0.0.1:3000` could
open one on the laptop's app and drive the Your script page, which runs code as its user. A session whose page came
from another origin is refused before anything runs, unless the owner lists that origin in Streamlit's
`server.corsAllowedOrigins` (a proxy in front of the app). Hosted mode runs no visitor's code, and the Space is
reached through its proxy: any origin may open it.
"""

from __future__ import annotations

from typing import Mapping
from urllib.parse import urlparse


def foreign_origin(headers: Mapping[str, str], hosted: bool, allowed: list[str] | tuple[str, ...] = ()) -> str | None:
    """The origin of a page of another site or port that opened this session, or None: the app's own page (its
    Origin names the host and port the request went to), no Origin sent (not a browser), hosted mode, or an origin
    the owner allowed."""
    if hosted:
        return None
    lowered = {key.lower(): value for key, value in headers.items()}
    origin, host = lowered.get("origin"), lowered.get("host")
    if not origin or not host:
        return None
    if urlparse(origin).netloc.lower() == host.lower() or origin.rstrip("/") in {item.rstrip("/") for item in allowed}:
        return None
    return origin
