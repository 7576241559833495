"""Churn: visitors come and go for a long while on one server; does its memory level off?

A real `python -m ui.serve` (the Space's command) on loopback, and a stream of visitors in Chromium, one after the
other: each opens one page of the walk on one of a fixed set of configurations (the kit's tasks, two seeds), waits
for it to finish drawing, and closes its tab, which ends its session. The server's resident memory (its process and
children) is sampled after every page. A server that keeps what each visitor leaves grows page after page; one that
keeps only what its bounded caches hold levels off once the configurations have all been seen.

Prints, for the run's second half (after every configuration was opened at least once):
  pages                  pages opened
  rss_first_mib          the server's memory after the first page
  rss_half_mib           at the middle of the run
  rss_end_mib            at the end
  churn_slope_mib_per_100_pages   the least-squares slope of memory over the second half's pages

Traffic goes to 127.0.0.1 only; the run is bounded by --pages and --minutes, whichever comes first.

    python bench/churn.py [--pages 600] [--minutes 45] [--hosted] [--csv churn.csv]
"""

from __future__ import annotations

import argparse
import itertools
import tempfile
import time
from pathlib import Path

from concurrent_pages import free_port, start_server  # the bench beside this one: same server, same start

CHROMIUM = "/usr/bin/chromium"
PAGES = ("", "model", "report", "workshop", "hyperparameters", "overfit", "script")
TASKS = ("mnli", "mrpc", "sst2", "cola", "rte", "qnli")
SEEDS = (1, 2)


def visits():
    """Page and query of each visit, round after round: every page on every configuration, in a fixed order."""
    configurations = [f"task={task}&seed={seed}&batch_size=8" for task, seed in itertools.product(TASKS, SEEDS)]
    round_ = [(page, query) for query in configurations for page in PAGES]
    return itertools.cycle(round_), len(round_)


def rss_mib(pid: int) -> float:
    import psutil

    process = psutil.Process(pid)
    total = process.memory_info().rss
    for child in process.children(recursive=True):
        try:
            total += child.memory_info().rss
        except psutil.Error:
            pass
    return total / 2**20


def visit(browser, url: str) -> None:
    """One visitor: a tab of its own, the page drawn to the end, the tab closed (its session ends)."""
    context = browser.new_context(viewport={"width": 1280, "height": 1200})
    try:
        page = context.new_page()
        page.goto(url)
        page.locator("[data-testid='stSidebarNav']").wait_for(timeout=180_000)  # the script has run this far
        # Drawn to the end: for a second and a half, no "running" badge and no element still a placeholder.
        busy = page.locator("[data-testid='stStatusWidget'], [data-testid='stSkeleton']")
        deadline, quiet_since = time.monotonic() + 180, time.monotonic()
        while time.monotonic() - quiet_since < 1.5 and time.monotonic() < deadline:
            if busy.count():
                quiet_since = time.monotonic()
            page.wait_for_timeout(200)
    finally:
        context.close()


def slope(points: list[tuple[int, float]]) -> float:
    """Least-squares slope of (page, MiB) points, in MiB a page."""
    count = len(points)
    mean_x = sum(x for x, _ in points) / count
    mean_y = sum(y for _, y in points) / count
    spread = sum((x - mean_x) ** 2 for x, _ in points)
    return sum((x - mean_x) * (y - mean_y) for x, y in points) / spread if spread else 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=600)
    parser.add_argument("--minutes", type=float, default=45)
    parser.add_argument("--hosted", action="store_true", help="the server in hosted mode, as on the Space")
    parser.add_argument("--csv", type=Path, help="write page, seconds, MiB for every page")
    args = parser.parse_args()

    from playwright.sync_api import sync_playwright

    port = free_port()
    log = open(Path(tempfile.mkdtemp()) / "churn-server.log", "w")
    server = start_server(port, {"DEBUGGER_HOSTED": "1"} if args.hosted else {}, log, module="ui.serve")
    points: list[tuple[int, float]] = []
    started = time.monotonic()
    stream, round_length = visits()
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=[
                "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                "--disable-sync", "--no-first-run", "--disable-quic"])
            for number, (page, query) in enumerate(stream, start=1):
                visit(browser, f"http://127.0.0.1:{port}/{page}?{query}")
                points.append((number, rss_mib(server.pid)))
                if number % 25 == 0:
                    print(f"page {number}: {points[-1][1]:.0f} MiB after {time.monotonic() - started:.0f} s",
                          flush=True)
                if number >= args.pages or time.monotonic() - started > args.minutes * 60:
                    break
            browser.close()
    finally:
        server.terminate()
        server.wait(timeout=30)
    if args.csv:
        args.csv.write_text("page,mib\n" + "".join(f"{page},{mib:.1f}\n" for page, mib in points))
    half = points[len(points) // 2:] if len(points) >= 2 * round_length else points
    print(f"pages = {len(points)} (a round of every page on every configuration is {round_length})")
    print(f"minutes = {(time.monotonic() - started) / 60:.1f}")
    print(f"rss_first_mib = {points[0][1]:.0f}")
    print(f"rss_half_mib = {points[len(points) // 2][1]:.0f}")
    print(f"rss_end_mib = {points[-1][1]:.0f}")
    print(f"slope_signed_mib_per_100_pages = {100 * slope(half):+.2f}")
    print(f"churn_slope_mib_per_100_pages = {max(0.0, 100 * slope(half)):.2f}")


if __name__ == "__main__":
    main()
