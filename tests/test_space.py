"""The Docker Space: the Dockerfile's and the README front matter's invariants (no container runtime runs here),
and the app started exactly as the Dockerfile starts it, its Data page loaded in Chromium."""

import json
import os
import re
import shlex
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from conftest import ROOT

pytestmark = [pytest.mark.subprocess]

DOCKERFILE = ROOT / "Dockerfile"
CHROMIUM = "/usr/bin/chromium"


def instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of the Dockerfile, continuation lines joined, comments dropped."""
    text = re.sub(r"\\\n\s*", " ", DOCKERFILE.read_text())
    return [(line.split(None, 1)[0].upper(), line.split(None, 1)[1].strip() if " " in line.strip() else "")
            for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def environment() -> dict[str, str]:
    """The ENV the image sets (KEY=VALUE pairs)."""
    found = {}
    for name, arguments in instructions():
        if name == "ENV":
            for pair in shlex.split(arguments):
                key, _, value = pair.partition("=")
                found[key] = value
    return found


def command() -> list[str]:
    return json.loads(next(arguments for name, arguments in instructions() if name == "CMD"))


def front_matter() -> dict[str, str]:
    text = (ROOT / "README.md").read_text()
    block = text.split("---\n")[1]
    return dict(line.split(": ", 1) for line in block.strip().splitlines())


def test_front_matter_is_a_docker_space_on_the_apps_port():
    matter = front_matter()
    assert matter["sdk"] == "docker"
    assert matter["app_port"] == "8501"
    assert "sdk_version" not in matter and "app_file" not in matter  # Gradio-only, and not read by Docker Spaces


def test_dockerfile_pins_its_base_runs_as_uid_1000_in_hosted_mode():
    steps = instructions()
    base = next(arguments for name, arguments in steps if name == "FROM")
    assert re.fullmatch(r"python:3\.11\.\d+-slim(-\w+)?(@sha256:[0-9a-f]{64})?", base), base
    assert any(name == "RUN" and "useradd" in arguments and "--uid 1000" in arguments for name, arguments in steps)
    users = [arguments for name, arguments in steps if name == "USER"]
    assert users and users[-1] == "user"
    env = environment()
    assert env["DEBUGGER_HOSTED"] == "1" and env["HOME"] == "/home/user"
    assert env["DEBUGGER_CACHE_DIR"].startswith("/home/user/")  # the user who runs the app owns the kit
    assert ("EXPOSE", "8501") in steps
    health = next(arguments for name, arguments in steps if name == "HEALTHCHECK")
    assert "/_stcore/health" in health and ":8501" in health
    cmd = command()
    assert cmd[:5] == ["python", "-m", "ui.serve", "run", "app.py"]  # streamlit run, the upload bound installed first
    options = dict(zip(cmd[5::2], cmd[6::2], strict=True))
    assert options["--server.port"] == "8501" and options["--server.address"] == "0.0.0.0"
    # The Space answers at its own host names (the project's config accepts only this machine's): hosted mode runs
    # no code, so a page of another site reaching it gets no more than any visitor.
    assert options["--server.allowedHosts"] == "*"
    assert int(options["--server.maxUploadSize"]) <= 50  # MB a file; ui/uploads.py bounds a session and the server
    assert options["--browser.gatherUsageStats"] == "false" and options["--server.headless"] == "true"
    # The kit is built after the code is copied in and before the app starts, by the user who runs it.
    order = [arguments for name, arguments in steps if name in ("COPY", "RUN", "USER")]
    assert order.index("python scripts/build_demo_kit.py") > order.index("--chown=user . .") > order.index("user")


def test_dockerignore_keeps_local_state_out_of_the_image():
    ignored = (ROOT / ".dockerignore").read_text().split()
    assert {".git", ".venv", ".cache-test", "screenshots"} <= set(ignored)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.browser
@pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="needs Debian's chromium (.ci/run installs it)")
def test_the_app_starts_as_the_dockerfile_starts_it(tmp_path):
    """HOME a fresh empty directory, the image's environment, the kit built by the image's own build step, then
    the image's command (its port swapped for a free one, so tests never collide); Chromium loads the Data page."""
    from playwright.sync_api import sync_playwright

    home = tmp_path / "home"
    home.mkdir()
    env = {**{key: value.replace("/home/user", str(home)) for key, value in environment().items() if key != "PATH"},
           "PATH": os.environ["PATH"], "HF_HUB_OFFLINE": "1"}
    run = {key: value for key, value in os.environ.items() if key in ("PATH", "LANG", "SYSTEMROOT")}
    run.update(env)
    build = next(arguments for name, arguments in instructions() if name == "RUN" and "build_demo_kit" in arguments)
    subprocess.run([sys.executable, *shlex.split(build)[1:]], cwd=ROOT, env=run, check=True, timeout=300)
    assert any((home / "kit").iterdir())
    port = str(_free_port())
    cmd = command()
    cmd[cmd.index("--server.port") + 1] = port
    log = open(tmp_path / "streamlit.log", "w")
    server = subprocess.Popen([sys.executable, *cmd[1:]], cwd=ROOT, env=run, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.time() + 120
        while time.time() < deadline:
            try:
                if urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2).read() == b"ok":
                    break
            except OSError:
                time.sleep(0.5)
        else:
            pytest.fail("the app did not answer /_stcore/health within 120 s")
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
            page = browser.new_page(viewport={"width": 1400, "height": 1600})
            page.goto(f"http://127.0.0.1:{port}/")
            page.get_by_text("The first batch, decoded").wait_for(timeout=180_000)
            assert page.get_by_text("Hosted mode").first.is_visible()
            browser.close()
    finally:
        server.terminate()
        server.wait(timeout=20)
        log.close()
    assert not (home / ".cache").exists() or not any((home / ".cache").rglob("demo-distilbert-*")), \
        "the app built the kit again instead of using the image's"


def _listening(pid: int) -> set[str]:
    import psutil

    return {conn.laddr.ip for conn in psutil.Process(pid).net_connections(kind="inet")
            if conn.status == psutil.CONN_LISTEN}


def test_the_readmes_app_listens_on_this_machine_only(tmp_path):
    """`streamlit run app.py` as the README gives it (a free port added) answers on loopback and on no other
    interface; the Dockerfile's command names 0.0.0.0 for the Space (test above)."""
    port = str(_free_port())
    log = open(tmp_path / "streamlit.log", "w")
    server = subprocess.Popen([sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", port],
                              cwd=ROOT, env={**os.environ, "HF_HUB_OFFLINE": "1"}, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.time() + 60
        while not _listening(server.pid) and time.time() < deadline:
            time.sleep(0.3)
        assert _listening(server.pid) and _listening(server.pid) <= {"127.0.0.1", "::1"}, _listening(server.pid)
    finally:
        server.terminate()
        server.wait(timeout=20)
        log.close()


def test_the_spaces_command_installs_both_bounds_then_hands_its_arguments_to_streamlit(monkeypatch, capsys):
    """`python -m ui.serve` (the Dockerfile's command) installs the upload and rerun bounds, then runs Streamlit's own
    command line with the arguments it was given: here `--version`, which Streamlit answers and exits on. That the
    bounds hold against a server started this way is the full tier's (tests/serve/test_attacks.py)."""
    import streamlit

    from ui import reruns, serve, uploads

    monkeypatch.setattr(sys, "argv", ["python -m ui.serve", "--version"])
    with pytest.raises(SystemExit) as exited:
        serve.main()
    assert exited.value.code in (0, None)
    assert uploads._installed == [True] and reruns._installed == [True]
    assert streamlit.__version__ in capsys.readouterr().out
