"""A shared server under load: a real `streamlit run` on loopback, many visitors at once in Chromium.

`--distinct` visitors each open a page on a configuration of their own (another seed, so another model copy to
train) and `--same` visitors open one configuration together, all at once: the Hyperparameters page, where each
presses "Run the sweep" (a short sweep: 3 rates x 4 steps, a 10-step range test), or with `--page model` the Model
page, which computes on opening. With `--tabs N` each distinct visitor opens N tabs of one browser (one cookie jar,
so the server counts them as one visitor), each on a configuration of its own. Every visitor asks for heavy work at
about the same moment. The server writes its heavy-work counters to
$DEBUGGER_STATS_FILE; the bench samples the server's memory (its process and children) meanwhile.

Prints:
  heavy_jobs_peak   the most heavy computations that ran at once (the server's own count)
  heavy_jobs_cap    the server's heavy slots
  answered_share    the share of tabs whose page showed their results, or a clear queue, budget, full-server or
                    time message, before --timeout
  bounded_tabs      the tabs told their visitor already has computations waiting (the per-visitor bound)
  queued_seen_share the share of visitors whose page showed their place in the queue on the way
  server_peak_mib   the server's peak resident memory
  seconds           until the last visitor was answered

Traffic goes to 127.0.0.1 only; the visitors and the run are bounded by --distinct, --same and --timeout.

    python bench/shared_server.py [--distinct 20] [--same 5] [--tabs 1] [--page hparams|model] [--timeout 600]
                                  [--hosted]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from concurrent_pages import free_port, start_server  # the bench beside this one: same server, same start

CHROMIUM = "/usr/bin/chromium"
DONE = {"model": "model.nan_rows", "hparams": "hparams.lr_sweep"}
MESSAGES = ("computations waiting or running", "time budget", "was given up", "The server is full")
PAGES = {"model": "model?batch_size=8", "hparams": "hyperparameters?batch_size=8&rates=3&steps=4&range_steps=10"}
RUN_BUTTON = "Run the sweep and the range test"


def start_counting_server(port: int, stats: Path, hosted: bool) -> subprocess.Popen:
    env = {"DEBUGGER_STATS_FILE": str(stats), **({"DEBUGGER_HOSTED": "1"} if hosted else {})}
    return start_server(port, env, open(stats.with_suffix(".log"), "w"))


def sample_memory(pid: int, stop: threading.Event, peak: list[int]) -> None:
    import psutil

    process = psutil.Process(pid)
    while not stop.is_set():
        try:
            rss = process.memory_info().rss + sum(child.memory_info().rss for child in process.children(True))
            peak[0] = max(peak[0], rss)
        except psutil.Error:
            pass
        time.sleep(0.25)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--distinct", type=int, default=20, help="visitors with a configuration each (1 to 40)")
    parser.add_argument("--same", type=int, default=5, help="visitors sharing one configuration (0 to 40)")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds a visitor waits (at most 900)")
    parser.add_argument("--page", choices=sorted(PAGES), default="hparams", help="the page every visitor opens")
    parser.add_argument("--hosted", action="store_true", help="run the server in hosted mode")
    parser.add_argument("--tabs", type=int, default=1, help="tabs of one browser for each distinct visitor (1 to 14)")
    args = parser.parse_args()
    if not (1 <= args.distinct <= 40 and 0 <= args.same <= 40 and 0 < args.timeout <= 900 and 1 <= args.tabs <= 14):
        raise SystemExit("--distinct 1..40, --same 0..40, --tabs 1..14, --timeout up to 900 s")
    from playwright.sync_api import sync_playwright

    folder = Path(tempfile.mkdtemp(prefix="tpd-bench-"))
    stats = folder / "stats.jsonl"
    port = free_port()
    server = start_counting_server(port, stats, args.hosted)
    stop, peak = threading.Event(), [0]
    sampler = threading.Thread(target=sample_memory, args=(server.pid, stop, peak), daemon=True)
    sampler.start()
    base = f"http://127.0.0.1:{port}/{PAGES[args.page]}"
    answered = (DONE[args.page], *MESSAGES)
    # Each visitor: its tabs' addresses (one browser context, so one cookie jar, for all of a visitor's tabs).
    visitors = [[f"{base}&seed={visitor * 100 + tab}" for tab in range(args.tabs)]
                for visitor in range(1, args.distinct + 1)] + [[f"{base}&seed=0"]] * args.same
    urls = [url for tabs in visitors for url in tabs]
    outcomes = [{} for _ in urls]
    start = time.time()
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=[
                "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update"])
            # Playwright's sync API is bound to its thread: visitors open together, then are polled in turn.
            pages = []
            for tabs in visitors:
                context = browser.new_context(viewport={"width": 1200, "height": 900})
                for url in tabs:
                    page = context.new_page()
                    page.goto(url, wait_until="commit", timeout=args.timeout * 1000)
                    pages.append(page)
            while time.time() - start < args.timeout and not all(outcome.get("answered") for outcome in outcomes):
                for page, outcome in zip(pages, outcomes, strict=True):
                    if outcome.get("answered"):
                        continue
                    try:
                        text = page.locator("body").inner_text(timeout=5000)
                    except Exception as exc:
                        outcome["error"] = f"{type(exc).__name__}"
                        continue
                    outcome["queued"] = outcome.get("queued", False) or "Queued:" in text
                    button = page.get_by_role("button", name=RUN_BUTTON)
                    if args.page == "hparams" and not outcome.get("pressed") and button.count():
                        button.first.click()
                        outcome["pressed"] = True
                    if any(sign in text for sign in answered):
                        outcome["answered"], outcome["seconds"] = True, time.time() - start
                        outcome["bounded"] = "computations waiting or running" in text
                time.sleep(1.0)
            browser.close()
    finally:
        stop.set()
        server.terminate()
        server.wait(timeout=30)
    lines = [json.loads(line) for line in stats.read_text().splitlines()] if stats.is_file() else []
    answered = [outcome for outcome in outcomes if outcome.get("answered")]
    print(f"visitors: {len(visitors)} with {len(urls)} tabs on the {args.page} page ({args.distinct} distinct, "
          f"{args.tabs} tab(s) each, {args.same} sharing one configuration)"
          f"{', hosted mode' if args.hosted else ''}")
    print(f"heavy_jobs_peak = {max((line['heavy_peak'] for line in lines), default=0)}")
    print(f"heavy_jobs_cap = {lines[-1]['heavy_slots'] if lines else 'unknown'}")
    print(f"answered_share = {len(answered) / len(urls):.2f}")
    print(f"bounded_tabs = {sum(bool(outcome.get('bounded')) for outcome in outcomes)}")
    print(f"queued_seen_share = {sum(bool(outcome.get('queued')) for outcome in outcomes) / len(urls):.2f}")
    print(f"server_peak_mib = {peak[0] / 2**20:.0f}")
    print(f"seconds = {max((outcome['seconds'] for outcome in answered), default=float('nan')):.1f}")
    errors = [outcome["error"] for outcome in outcomes if "error" in outcome and not outcome.get("answered")]
    if errors:
        print(f"unanswered visitors' errors: {errors[:5]}")


if __name__ == "__main__":
    main()
