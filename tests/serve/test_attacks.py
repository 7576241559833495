"""What one client can do to the server, made as a program would make it: through Streamlit's own websocket
protocol (tests/serve/client.py), with none of the browser's checks. Each test is an attack that worked on an
earlier release (issue 57's review) and must not work now."""

import time

import pytest

from serve.client import Client, app_server, upload, upload_bytes_held

pytestmark = [pytest.mark.subprocess, pytest.mark.slow]

NOT_RUN = "Not run yet for this configuration:"


@pytest.fixture(scope="module")
def port(tmp_path_factory):
    with app_server(tmp_path_factory.mktemp("server")) as port:
        yield port


def not_run_line(port: int, query: str = "") -> str:
    """The Report's list of the stages with no kept result, as a new visitor sees it."""
    with Client(port) as visitor:
        drawn = visitor.run("report", query)
    assert drawn.exceptions == []
    return next(text for text in drawn.texts if text.startswith(NOT_RUN))


def test_a_clients_clear_cache_message_drops_no_other_visitors_results(port):
    """`BackMsg(clear_cache=True)` once emptied `st.cache_resource`, where the shared results lived: another
    visitor's kept Data stage was gone, and each clear made a new store with heavy slots of its own."""
    with Client(port) as first:
        drawn = first.run("", "seed=5")
        assert drawn.exceptions == [] and "The first batch, decoded" in drawn.text
    kept_before = not_run_line(port, "seed=5")
    assert "Data," not in kept_before and "Model" in kept_before  # the Data stage is kept for everyone
    with Client(port) as attacker:
        attacker.send(clear_cache=True)
        time.sleep(1)  # handled as it arrives; nothing is sent back
    assert not_run_line(port, "seed=5") == kept_before


def test_a_page_of_another_host_name_resolving_here_gets_no_session(port):
    """DNS rebinding: a page of `rebind.example`, resolved to 127.0.0.1, once opened a session (Host and Origin not
    checked) and traced pasted code on the Your script page as the user. The project's config accepts only this
    machine's names."""
    from websockets.exceptions import InvalidStatus

    for host in ("127.0.0.1", "localhost"):
        with Client(port, host=host, headers={"Origin": f"http://{host}:{port}"}) as visitor:
            drawn = visitor.run("script")
        assert drawn.exceptions == [] and any("runs as you, with your rights" in text for text in drawn.texts)
    for host in ("rebind.example", "192.168.1.20"):
        with pytest.raises(InvalidStatus, match="403"):
            Client(port, host=host, headers={"Origin": f"http://{host}:{port}"})


def test_a_page_of_another_localhost_port_opens_a_session_where_nothing_runs(port):
    """Streamlit trusts a page of any localhost port: one served from localhost:8888 opened a session on the laptop's
    app and could drive the Your script page. The session opens (Streamlit's own check passes it); the app runs
    nothing for it but the refusal."""
    for origin in ("http://localhost:8888", "http://127.0.0.1:3000"):
        with Client(port, headers={"Origin": origin}) as visitor:
            drawn = visitor.run("script")
        assert drawn.exceptions == [] and any("answers its own pages only" in text for text in drawn.texts)
        assert not any("runs as you, with your rights" in text for text in drawn.texts)


def widget_states(*pairs):
    from streamlit.proto.WidgetStates_pb2 import WidgetStates

    states = WidgetStates()
    for widget_id, field, value in pairs:
        state = states.widgets.add()
        state.id = widget_id
        setattr(state, field, value)
    return states


@pytest.mark.parametrize("page, button", [("hyperparameters", "Run the sweep and the range test"),
                                          ("overfit", "Run the overfit test")])
def test_crafted_number_values_get_a_message_never_a_traceback(port, page, button):
    """NaN, infinities and huge whole numbers, sent as any number input's value (the browser's own input would
    refuse them) together with the page's button, raised uncaught ValueError and OverflowError on the sender's
    page, with tracebacks naming server paths."""
    import math

    with Client(port) as visitor:
        widgets = visitor.run(page).widgets
    numbers = {label: widget for label, widget in widgets.items() if type(widget).__name__ == "NumberInput"}
    assert {"Batch size", "Seed"} <= set(numbers) and len(numbers) >= 5, sorted(numbers)
    for label, widget in numbers.items():
        for field, value in (("double_value", math.nan), ("double_value", math.inf), ("int_value", 2 ** 62),
                             ("double_value", -1e308)):
            with Client(port) as visitor:
                drawn = visitor.run(page, widget_states=widget_states((widget.id, field, value),
                                                                      (widgets[button].id, "trigger_value", True)))
            assert drawn.exceptions == [], (label, value, drawn.exceptions)
            assert not any("Traceback" in text or "/site-packages/" in text for text in drawn.texts), (label, value)


@pytest.mark.parametrize("query", ["scenario=nope", "lr=nan", "batch_size=1e99", "epochs=inf", "rates=nan",
                                   "lang=xx"])
def test_crafted_link_values_get_the_sidebars_message_never_a_traceback(port, query):
    from conftest import rendered

    with Client(port) as visitor:
        drawn = visitor.run("", query)
    said = [rendered(text) for text in drawn.texts if text.startswith("The link's")]
    assert drawn.exceptions == [] and len(said) == 1 and query.split("=")[0] in said[0], (query, drawn.text[:2000])


def test_uploads_without_an_uploader_are_bounded_for_a_session_and_for_the_server(tmp_path):
    """Any client could PUT files to Streamlit's upload endpoint for its session (a made-up XSRF value as cookie and
    header): ten 190 MB uploads took the server from 718 to 2,621 MiB. Now a session holds at most twice the
    upload size (its oldest files let go) and the server at most DEBUGGER_UPLOADS_MAX_BYTES. The Space's own command
    (python -m ui.serve), so the bound holds before any page ran."""
    megabyte = 2**20
    with app_server(tmp_path, "--server.maxUploadSize", "2", env={"DEBUGGER_UPLOADS_MAX_BYTES": str(7 * megabyte)},
                    module="ui.serve") as port:
        sessions = []
        for _ in range(3):
            visitor = Client(port)
            sessions.append((visitor, visitor.run("workshop").session_id))
        (first, first_id), (second, second_id), (third, third_id) = sessions
        assert all(upload(port, first_id, f"file{index}", int(1.5 * megabyte)) == 204 for index in range(5))
        assert upload_bytes_held(port) == 3 * megabyte  # twice the 2 MB upload size: the newest two of five
        # Another session's: its own oldest goes to make room, never the first session's.
        assert [upload(port, second_id, f"file{index}", int(1.5 * megabyte)) for index in range(3)] == [204] * 3
        # A third session's past the server's 7 MB: refused, 413 with no traceback in the log (each was a 500 with
        # one), nothing of anyone's dropped for it.
        assert upload(port, third_id, "file0", int(1.5 * megabyte)) == 413
        assert upload_bytes_held(port) == 6 * megabyte
        for visitor, _ in sessions:
            visitor.close()
    log = "".join(path.read_text() for path in tmp_path.glob("streamlit-*.log"))
    assert "Traceback" not in log and "UploadRefused" not in log


def test_uploads_are_let_go_once_their_session_is_gone(tmp_path):
    """Streamlit keeps a closed tab's session for a reconnect, then drops it without ending it: its uploads stayed in
    the server's memory for good (3 MB still held a minute after a session with a 5 s reconnect time closed)."""
    megabyte = 2**20
    with app_server(tmp_path, "--server.maxUploadSize", "2", "--server.disconnectedSessionTTL", "2",
                    module="ui.serve") as port:
        visitor = Client(port)
        session_id = visitor.run("workshop").session_id
        assert [upload(port, session_id, f"file{index}", int(1.5 * megabyte)) for index in range(2)] == [204, 204]
        assert upload_bytes_held(port) == 3 * megabyte
        visitor.close()
        deadline = time.monotonic() + 60
        while upload_bytes_held(port) and time.monotonic() < deadline:
            time.sleep(1)
        assert upload_bytes_held(port) == 0

def test_a_storm_of_reruns_from_one_session_leaves_the_server_answering_everyone(port):
    """3,000 rerun messages in a fraction of a second from one client that never reads its replies once left
    `/_stcore/health` unanswered for over two minutes and a new visitor waiting 413 s. Now a session's reruns past
    its burst wait their turn (only the latest runs): the server answers at once, a new visitor's page draws, and
    the storm's last rerun still runs."""
    import urllib.request

    from streamlit.proto.ClientState_pb2 import ClientState

    storm = Client(port)
    try:
        assert storm.run("workshop").exceptions == []  # the page ran: the server's bounds are in
        message = {"rerun_script": ClientState(query_string="seed=9", page_name="workshop")}
        for _ in range(3000):
            storm.send(**message)
        started = time.monotonic()
        assert urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=10).read() == b"ok"
        with Client(port) as visitor:
            drawn = visitor.run("workshop", timeout=60)
        assert drawn.exceptions == [] and drawn.texts, drawn.text[:500]
        assert time.monotonic() - started < 60
    finally:
        storm.close()


def test_a_room_of_sessions_storming_reruns_leaves_the_server_answering_everyone(port):
    """40 sessions each sending 21 identical reruns left /_stcore/health unanswered for over 60 s twice, and a new
    visitor's page opened after 134 s: each session's own bound let 800 reruns start. The server's bucket holds the
    room to its rate; each session's latest rerun still runs."""
    import urllib.request

    from streamlit.proto.ClientState_pb2 import ClientState

    with Client(port) as first:
        assert first.run("workshop").exceptions == []  # a page ran: the server's bounds are in
    room = [Client(port) for _ in range(40)]
    try:
        for number, client in enumerate(room):
            client.send(rerun_script=ClientState(query_string=f"seed={number}", page_name="workshop"))
        for number, client in enumerate(room):
            for _ in range(21):
                client.send(rerun_script=ClientState(query_string=f"seed={number}", page_name="workshop"))
        started = time.monotonic()
        assert urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=10).read() == b"ok"
        print(f"health answered {time.monotonic() - started:.2f} s after the room's storm")
        with Client(port) as visitor:
            drawn = visitor.run("workshop", timeout=120)
        assert drawn.exceptions == [] and drawn.texts, drawn.text[:500]
        print(f"a new visitor's page drew {time.monotonic() - started:.1f} s after it")
    finally:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(len(room)) as pool:  # each waits for the server's close: all at once
            list(pool.map(Client.close, room))


def test_a_hosted_visitor_is_bounded_by_the_address_its_proxy_forwards_whatever_cookies_and_headers_it_makes_up(
        tmp_path):
    """Behind the Space's proxy every connection comes from the proxy, so a hosted visitor was keyed by the XSRF
    cookie, which a program makes up: twelve sessions with made-up values were twelve visitors, none ever told it
    had computations waiting. Now the visitor is the X-Forwarded-For entry the outermost proxy wrote (the rightmost
    public address: the Space's own proxies sit on its internal network); entries the client put left of it change
    nothing."""

    def ask(clients, first: int):
        """Each session presses "Run the overfit test" for its own number of epochs (from `first`: a run kept or
        under way offers no button), all at once: the first trains, the rest queue behind it (one heavy slot)."""
        from streamlit.proto.ClientState_pb2 import ClientState

        queries = [f"epochs={first + number}" for number in range(len(clients))]
        buttons = [client.run("overfit", query).widgets["Run the overfit test"].id
                   for client, query in zip(clients, queries, strict=True)]
        for client, query, button in zip(clients, queries, buttons, strict=True):
            client.send(rerun_script=ClientState(query_string=query, page_name="overfit",
                                                 widget_states=widget_states((button, "trigger_value", True))))
        return [client.drawn(timeout=300) for client in clients]

    def sessions(forwarded):
        return [Client(port, headers={"Cookie": f"_streamlit_xsrf={number:032x}", "X-Forwarded-For": value})
                for number, value in enumerate(forwarded)]

    refused = "computations waiting or running on this server"
    with app_server(tmp_path, env={"DEBUGGER_HOSTED": "1", "DEBUGGER_HEAVY_JOBS": "1",
                                   "DEBUGGER_PROXY_HOPS": "1"}) as port:  # as the Space sets it
        one_machine = sessions([f"81.2.69.{number}, 81.2.69.160, 10.16.3.80" for number in range(3)])
        drawn = ask(one_machine, 30)
        assert all(page.exceptions == [] for page in drawn)
        # Two of one visitor's computations run or wait; whichever asked third is told so (the threads reach the
        # queue in any order).
        assert sum(refused in page.text for page in drawn) == 1, [page.text[-600:] for page in drawn]
        three_machines = sessions([f"81.2.69.{170 + number}, 10.16.3.80" for number in range(3)])
        assert not any(refused in page.text for page in ask(three_machines, 40))
        for client in one_machine + three_machines:
            client.close()
        assert "a request carried 3 X-Forwarded-For entries" in next(tmp_path.glob("streamlit-*.log")).read_text()
