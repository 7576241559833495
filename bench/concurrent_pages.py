"""Another user's page while one user trains: seconds to open the Data page for a new task, alone and during
a long overfit test in a second session, on one `streamlit run` server driven by Debian's Chromium.

    python bench/concurrent_pages.py [--epochs 1000]
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_server(port: int, env: dict | None = None, log=subprocess.DEVNULL, module: str = "streamlit") \
        -> subprocess.Popen:
    """`streamlit run app.py` on 127.0.0.1:`port` (with `env` added to this process's), once it answers
    (`module="ui.serve"`: as the Space starts it)."""
    process = subprocess.Popen(
        [sys.executable, "-m", module, "run", "app.py", "--server.headless", "true", "--server.port", str(port),
         "--server.address", "127.0.0.1", "--server.fileWatcherType", "none", "--browser.gatherUsageStats", "false"],
        cwd=ROOT, env={**os.environ, "HF_HUB_OFFLINE": "1", **(env or {})}, stdout=log, stderr=subprocess.STDOUT)
    for _ in range(240):
        try:
            if urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2).read() == b"ok":
                return process
        except OSError:
            time.sleep(0.5)
    process.kill()
    raise SystemExit("streamlit did not start")


def open_data_page(browser, url: str, task: str) -> float:
    """Seconds from a new session's first request to the Data page rendered for `task`."""
    page = browser.new_context(viewport={"width": 1400, "height": 1400}).new_page()
    start = time.perf_counter()
    page.goto(url)
    page.get_by_text("The first batch, decoded").wait_for(timeout=300_000)
    page.get_by_role("combobox", name="GLUE task").first.click()
    page.get_by_role("option", name=task).first.click()
    page.wait_for_timeout(300)
    page.locator("[data-testid='stStatusWidget']").wait_for(state="detached", timeout=300_000)
    page.get_by_text("The first batch, decoded").wait_for(timeout=300_000)
    return time.perf_counter() - start


def main() -> None:
    from playwright.sync_api import sync_playwright

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", default="1000")
    args = parser.parse_args()

    port = free_port()
    server = start_server(port)
    url = f"http://127.0.0.1:{port}"
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            open_data_page(browser, url, "mnli")  # the server's first page: imports and demo kit, untimed
            alone = open_data_page(browser, url, "sst2")
            trainer = browser.new_context(viewport={"width": 1400, "height": 1400}).new_page()
            trainer.goto(f"{url}/overfit")
            trainer.get_by_text("Press the button").first.wait_for(timeout=300_000)
            epochs = trainer.get_by_role("spinbutton", name="Epochs")
            epochs.fill(args.epochs)
            epochs.press("Enter")
            trainer.wait_for_timeout(1500)
            trainer.get_by_role("button", name="Run the overfit test").click()
            trainer.get_by_text("Epoch ").first.wait_for(timeout=300_000)  # its progress bar: training has begun
            during = open_data_page(browser, url, "qnli")
            still_training = trainer.get_by_text("Epoch ").count() > 0
            browser.close()
    finally:
        server.terminate()
    if not still_training:
        raise SystemExit("the overfit test ended before the other page opened: raise --epochs")
    print(f"data_page_alone_s = {alone:.2f}")
    print(f"data_page_while_training_s = {during:.2f}")
    print(f"page_while_training_ratio = {during / alone:.2f}")


if __name__ == "__main__":
    main()
