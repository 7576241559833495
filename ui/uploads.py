"""A bound on what uploads hold in the server's memory, whoever sends them.

Streamlit keeps every uploaded file in memory until its session ends, and its upload endpoint takes a file for any
live session from any client (any hex value serves as both XSRF cookie and header), with no uploader on the page:
ten uploads of 190 MB took a server from 718 to 2,621 MiB. Bounded here: a session holds at most twice
`server.maxUploadSize` (its oldest files let go first: the app copies an upload to disk as soon as it reads it), and
the server at most `DEBUGGER_UPLOADS_MAX_BYTES` (default 1 GiB) over every session, beyond which an upload is
refused. Nor are they kept past their session: Streamlit keeps a closed tab's session for a reconnect
(`server.disconnectedSessionTTL`), then drops it without ending it, and its files stayed in memory for good (3 MB
still held a minute after a session with a 5 s TTL closed). The files of a session the server no longer knows are
let go at the next upload and every `PURGE_S` seconds.

`bound_uploads()` is called by app.py on every run, and by `python -m ui.serve` before the server starts (the
Space's command), so that no upload comes before it.
"""

from __future__ import annotations

import os
import threading
import time

_INSTALLED = threading.Lock()
_installed: list[bool] = []
PURGE_S = 15.0


def _http_error() -> type[Exception]:
    """The error the server answers with its own status: Starlette's (recent Streamlit's server), else Tornado's."""
    try:
        from starlette.exceptions import HTTPException

        return HTTPException
    except ImportError:  # an older Streamlit, on Tornado
        from tornado.web import HTTPError

        return HTTPError


_HTTP_ERROR = _http_error()


class UploadRefused(_HTTP_ERROR):
    """An upload past the server's bound: the endpoint answers 413 with the reason, logs no traceback (80 of them in
    one run, each a 500, before), and keeps nothing."""

    def __init__(self, reason: str):
        if _HTTP_ERROR.__module__.startswith("starlette"):
            super().__init__(status_code=413, detail=reason)
        else:
            super().__init__(413, reason=reason)
        self.reason_text = reason

    def __str__(self) -> str:
        return self.reason_text


def session_cap_bytes() -> int:
    from streamlit import config

    return 2 * int(config.get_option("server.maxUploadSize")) * 2**20


def server_cap_bytes() -> int:
    return int(os.environ.get("DEBUGGER_UPLOADS_MAX_BYTES") or 2**30)


def purge_ended(manager) -> int:
    """Let go of the files of every session the server no longer knows (ended, or dropped after its reconnect time);
    returns how many sessions' files went."""
    from streamlit.runtime import Runtime

    if not Runtime.exists():
        return 0
    # The websocket session manager: the active sessions and those kept for a reconnect (none in AppTest's runtime).
    sessions = getattr(Runtime.instance(), "_session_mgr", None)
    if not callable(getattr(sessions, "get_session_info", None)):
        return 0
    with manager._lock:
        held = list(manager.file_storage)
    ended = [session_id for session_id in held if sessions.get_session_info(session_id) is None]
    for session_id in ended:
        manager.remove_session_files(session_id)
    return len(ended)


def _purge_every(seconds: float) -> None:
    from streamlit.runtime import Runtime

    while True:
        time.sleep(seconds)
        try:
            if Runtime.exists():
                purge_ended(Runtime.instance().uploaded_file_mgr)
        except Exception:  # a server shutting down: the next look tries again
            pass


def bound_uploads() -> None:
    """Install the bound on Streamlit's in-memory upload store (once per process)."""
    with _INSTALLED:
        if _installed:
            return
        from streamlit.runtime.memory_uploaded_file_manager import MemoryUploadedFileManager

        def bounded_add_file(self, session_id: str, file) -> None:
            """Streamlit's own `add_file` (the same accounting, under its lock), after the bounds."""
            size = len(file.data)
            purge_ended(self)
            with self._lock:
                held = self.file_storage[session_id]
                replaced = held.pop(file.file_id, None)
                if replaced is not None:
                    self._total_bytes -= len(replaced.data)
                    self._file_count -= 1
                kept, cap = sum(len(rec.data) for rec in held.values()), session_cap_bytes()
                going = []  # the session's oldest files that make room for this one (a dict keeps arrival order)
                for file_id, rec in held.items():
                    if kept + size <= cap:
                        break
                    going.append(file_id)
                    kept -= len(rec.data)
                freed = sum(len(held[file_id].data) for file_id in going)
                if self._total_bytes - freed + size > server_cap_bytes():
                    raise UploadRefused(f"uploads hold {self._total_bytes} bytes; the server keeps at most "
                                        f"{server_cap_bytes()}")
                for file_id in going:
                    held.pop(file_id)
                    self._file_count -= 1
                self._total_bytes -= freed
                held[file.file_id] = file
                self._total_bytes += size
                self._file_count += 1

        MemoryUploadedFileManager.add_file = bounded_add_file
        threading.Thread(target=_purge_every, args=(PURGE_S,), daemon=True, name="uploads-purge").start()
        _installed.append(True)
