"""A Streamlit server of the app in a child process, and a client that speaks Streamlit's own websocket protocol
(protobuf BackMsg up, ForwardMsg down) the way any visitor's program can, with none of the browser's checks: the
attacks of tests/serve/test_attacks.py are made with it."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
import socket
import subprocess
import sys
import time
import urllib.request

from conftest import ROOT


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def app_server(log_dir: Path, *options: str, env: dict | None = None, module: str = "streamlit"):
    """`streamlit run app.py` on 127.0.0.1 with the project's own config (.streamlit/config.toml) and these command
    line options added (`module="ui.serve"`: as the Space starts it); yields its port once it answers, and ends it
    after."""
    port = free_port()
    log = open(log_dir / f"streamlit-{port}.log", "w")
    process = subprocess.Popen(
        [sys.executable, "-m", module, "run", "app.py", "--server.port", str(port), "--server.address",
         "127.0.0.1", "--server.fileWatcherType", "none", *options],
        cwd=ROOT, env={**os.environ, "HF_HUB_OFFLINE": "1", **(env or {})}, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                if urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2).read() == b"ok":
                    break
            except OSError:
                if time.monotonic() > deadline or process.poll() is not None:
                    raise RuntimeError(f"streamlit did not start: {(log_dir / f'streamlit-{port}.log').read_text()}") \
                        from None
                time.sleep(0.5)
        yield port
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()


class Client:
    """One visitor's session over the websocket, with whatever host name and headers the program chooses (`host`:
    the name the request gives in its Host header, as a page of a site whose name resolves to 127.0.0.1 would;
    `headers`: `Origin`, `Cookie`, ...). `run` asks for a page and returns what the server drew once the run
    finished."""

    def __init__(self, port: int, *, host: str = "127.0.0.1", headers: dict | None = None):
        from websockets.sync.client import connect

        self.socket = connect(f"ws://{host}:{port}/_stcore/stream", sock=socket.create_connection(("127.0.0.1", port)),
                              subprotocols=["streamlit"], additional_headers=headers or {}, open_timeout=30,
                              max_size=None, ping_interval=None,  # no keepalive to time out under load
                              close_timeout=2)  # a session that never read its replies closes without a 10 s wait
        self.widgets: dict[str, object] = {}

    def close(self) -> None:
        self.socket.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def send(self, **fields) -> None:
        """A BackMsg with these fields (e.g. clear_cache=True)."""
        from streamlit.proto.BackMsg_pb2 import BackMsg

        self.socket.send(BackMsg(**fields).SerializeToString())

    def run(self, page: str = "", query: str = "", widget_states=None, timeout: float = 300) -> "Drawn":
        """Run `page` (its URL path; "" for the first page) with this query string; what it drew."""
        from streamlit.proto.ClientState_pb2 import ClientState

        state = ClientState(query_string=query, page_name=page)
        if widget_states is not None:
            state.widget_states.CopyFrom(widget_states)
        self.send(rerun_script=state)
        return self.drawn(timeout)

    def drawn(self, timeout: float = 300) -> "Drawn":
        """The messages until the current run finishes."""
        from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

        drawn, deadline = Drawn(), time.monotonic() + timeout
        while True:
            message = ForwardMsg()
            message.ParseFromString(self.socket.recv(timeout=max(0.1, deadline - time.monotonic())))
            drawn.add(message)
            if message.WhichOneof("type") == "script_finished":
                return drawn


class Drawn:
    """What one run sent: its elements' text, the exceptions it showed, and its widgets' ids by label."""

    def __init__(self):
        self.session_id: str | None = None
        self.texts: list[str] = []
        self.exceptions: list[str] = []
        self.widgets: dict[str, object] = {}

    def add(self, message) -> None:
        if message.WhichOneof("type") == "new_session":
            self.session_id = message.new_session.initialize.session_id
        if message.WhichOneof("type") != "delta" or message.delta.WhichOneof("type") != "new_element":
            return
        element = message.delta.new_element
        kind = element.WhichOneof("type")
        if kind == "exception":
            self.exceptions.append(f"{element.exception.type}: {element.exception.message}")
            return
        inner = getattr(element, kind)
        for field in ("body", "label", "text"):
            value = getattr(inner, field, None)
            if isinstance(value, str) and value:
                self.texts.append(value)
        if getattr(inner, "id", None) and getattr(inner, "label", None):
            self.widgets[inner.label] = inner

    @property
    def text(self) -> str:
        return "\n".join(self.texts)


def upload(port: int, session_id: str, file_id: str, size: int) -> int:
    """PUT a file of `size` bytes to Streamlit's upload endpoint for that session, as any program can: a made-up
    XSRF value serves as both cookie and header. The answer's HTTP status."""
    import http.client
    import secrets

    token, boundary = secrets.token_hex(16), secrets.token_hex(8)
    body = (f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="{file_id}.csv"\r\n'
            "Content-Type: text/csv\r\n\r\n").encode() + b"x" * size + f"\r\n--{boundary}--\r\n".encode()
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        connection.request("PUT", f"/_stcore/upload_file/{session_id}/{file_id}", body=body, headers={
            "Content-Type": f"multipart/form-data; boundary={boundary}", "X-Xsrftoken": token,
            "Cookie": f"_streamlit_xsrf={token}"})
        return connection.getresponse().status
    finally:
        connection.close()


_last_metrics = [-10.0]


def upload_bytes_held(port: int) -> int:
    """What Streamlit's upload store holds in memory, from the server's own metrics endpoint (which keeps an answer
    for 5 s: a second reading waits that long after the first)."""
    import re

    time.sleep(max(0.0, _last_metrics[0] + 5.2 - time.monotonic()))
    _last_metrics[0] = time.monotonic()

    metrics = urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/metrics", timeout=10).read().decode()
    found = re.search(r'cache_memory_bytes\{cache_type="UploadedFileManager",cache=""\} (\d+)', metrics)
    return int(found.group(1)) if found else 0
