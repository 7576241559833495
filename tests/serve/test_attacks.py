"""What one client can do to the server, made as a program would make it: through Streamlit's own websocket
protocol (tests/serve/client.py), with none of the browser's checks. Each test is an attack that worked on an
earlier release (issue 57's review) and must not work now."""

import time

import pytest

from serve.client import Client, app_server

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
