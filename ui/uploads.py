"""A bound on what uploads hold in the server's memory, whoever sends them.

Streamlit keeps every uploaded file in memory until its session ends, and its upload endpoint takes a file for any
live session from any client (any hex value serves as both XSRF cookie and header), with no uploader on the page:
ten uploads of 190 MB took a server from 718 to 2,621 MiB. Bounded here: a session holds at most twice
`server.maxUploadSize` (its oldest files let go first: the app copies an upload to disk as soon as it reads it), and
the server at most `DEBUGGER_UPLOADS_MAX_BYTES` (default 1 GiB) over every session, beyond which an upload is
refused.

`bound_uploads()` is called by app.py on every run, and by `python -m ui.serve` before the server starts (the
Space's command), so that no upload comes before it.
"""

from __future__ import annotations

import os
import threading

_INSTALLED = threading.Lock()
_installed: list[bool] = []


class UploadRefused(Exception):
    """An upload past the server's bound (the endpoint answers with an error; nothing is kept)."""


def session_cap_bytes() -> int:
    from streamlit import config

    return 2 * int(config.get_option("server.maxUploadSize")) * 2**20


def server_cap_bytes() -> int:
    return int(os.environ.get("DEBUGGER_UPLOADS_MAX_BYTES") or 2**30)


def bound_uploads() -> None:
    """Install the bound on Streamlit's in-memory upload store (once per process)."""
    with _INSTALLED:
        if _installed:
            return
        from streamlit.runtime.memory_uploaded_file_manager import MemoryUploadedFileManager

        def bounded_add_file(self, session_id: str, file) -> None:
            """Streamlit's own `add_file` (the same accounting, under its lock), after the bounds."""
            size = len(file.data)
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
        _installed.append(True)
