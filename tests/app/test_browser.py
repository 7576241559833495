"""End to end: `streamlit run app.py` headless, driven by Debian's Chromium through Playwright."""

import os
import shutil
import time
from pathlib import Path

import pytest

from conftest import ROOT


CHROMIUM = "/usr/bin/chromium"
SCREENSHOTS = Path(os.environ.get("SCREENSHOT_DIR", ROOT / "screenshots"))
LAUNCH_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
               "--disable-sync", "--no-first-run", "--disable-quic"]

pytestmark = [pytest.mark.browser, pytest.mark.subprocess, pytest.mark.slow,
              pytest.mark.skipif(not shutil.which(CHROMIUM) and not Path(CHROMIUM).exists(),
                                 reason=f"Chromium not installed at {CHROMIUM} (apt-get install -y chromium)")]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """`streamlit run app.py` with the project's config (tests/serve/client.py): its log goes to a file, since a pipe
    nobody reads fills up and stalls the server mid-page, and it watches no files, since a traced script's child
    touches files under the project and nothing here edits sources."""
    from serve.client import app_server

    with app_server(tmp_path_factory.mktemp("server")) as port:
        yield f"http://127.0.0.1:{port}"


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS)
        yield browser
        browser.close()


def _page_of(browser, viewport):
    """A new page at `viewport` that keeps the browser console's errors (`page.console_errors`), closed after."""
    context = browser.new_context(viewport=viewport)
    page = context.new_page()
    page.console_errors = []
    page.on("console", lambda message: message.type == "error" and page.console_errors.append(message.text))
    yield page
    context.close()


@pytest.fixture
def page(browser):
    yield from _page_of(browser, {"width": 1400, "height": 2200})


@pytest.fixture
def laptop_page(browser):
    """A small laptop's width (1024 px); tall, as the main area scrolls inside the page and a screenshot shows only the
    viewport."""
    yield from _page_of(browser, {"width": 1024, "height": 2400})


def _shot(page, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)
    print(f"screenshot: {SCREENSHOTS / name}.png")


def _choose(page, label: str, option: str) -> None:
    """Pick an option of a Streamlit selectbox by its label."""
    page.get_by_role("combobox", name=label).first.click()
    page.get_by_role("option", name=option).first.click()
    _settle(page)


def _open(page, link: str, text: str) -> None:
    page.get_by_role("link", name=link).click()
    page.get_by_text(text).first.wait_for(timeout=180_000)


def _wait_for_text(page, text: str, timeout: int = 60_000) -> None:
    """Wait for `text`; when it never comes, fail with what the page shows instead."""
    try:
        page.get_by_text(text).first.wait_for(timeout=timeout)
    except Exception:
        shown = page.locator("[data-testid='stMain']").inner_text()
        raise AssertionError(f"{text!r} never appeared; the page shows:\n{shown[:4000]}") from None


def _settle(page) -> None:
    """Until the app has been idle for a second: no status widget (shown while a script runs) at any look over that
    second, the first look 0.3 s after the last action (a rerun a click asked for takes a moment to start)."""
    status = page.locator("[data-testid='stStatusWidget']")
    page.wait_for_timeout(300)
    quiet_since = time.monotonic()
    while time.monotonic() - quiet_since < 1.0:
        if status.count():
            status.wait_for(state="detached", timeout=180_000)
            quiet_since = time.monotonic()
        page.wait_for_timeout(200)


def _has_value(page, label: str, value: str) -> None:
    """A number input reads `value` once it has drawn the session's: under load a redrawn input can read "0" for a
    moment (seen in full CI runs, never alone); a value that never arrives still fails."""
    from playwright.sync_api import expect

    expect(page.get_by_role("spinbutton", name=label)).to_have_value(value, timeout=30_000)


def test_walk_every_page_on_the_demo_kit(server, page):
    page.goto(server)
    page.get_by_text("The first batch, decoded").wait_for(timeout=180_000)
    page.locator("[data-testid='stDataFrame']").first.wait_for(timeout=60_000)
    page.locator(".js-plotly-plot").nth(1).wait_for(timeout=60_000)
    assert page.get_by_text("Offline").first.is_visible()
    _settle(page)
    _shot(page, "1_data")

    _choose(page, "Workshop scenario", "num-labels-too-small: num_labels=2 on MNLI's three labels")
    _has_value(page, "num_labels", "2")
    _open(page, "2 · Model", "Rows with a NaN loss")
    page.get_by_text("every one has a label").first.wait_for(timeout=60_000)
    _settle(page)
    page.locator("[data-testid='stSidebar']").get_by_text("caught").first.wait_for(timeout=60_000)
    _shot(page, "2_model_nan_rows")

    _choose(page, "Workshop scenario", "fixed: The course's fixed script")
    _open(page, "3 · Hyperparameters", "hparams.optimizer")
    for label, value in (("Rates in the grid", "3"), ("Steps at each rate", "4"), ("Range-test steps", "12")):
        field = page.get_by_role("spinbutton", name=label)
        field.fill(value)
        field.press("Enter")
        _settle(page)
    page.get_by_role("button", name="Run the sweep and the range test").click()
    page.get_by_text("hparams.lr_range_test").first.wait_for(timeout=180_000)
    page.get_by_text("Held-out loss against learning rate").first.wait_for(timeout=60_000)
    _settle(page)
    _shot(page, "3_hyperparameters")

    _open(page, "4 · Overfit test", "Press the button")
    page.get_by_role("button", name="Run the overfit test").click()
    page.get_by_text("the pipeline can learn").first.wait_for(timeout=180_000)
    _settle(page)
    _shot(page, "4_overfit")

    _open(page, "Report", "Run every stage now")
    page.get_by_role("button", name="Run every stage now").click()
    # The kept results stay on the page while the run goes on: wait for its progress bar to come and go.
    page.get_by_text("Running the checks").first.wait_for(timeout=60_000)
    page.get_by_text("Running the checks").first.wait_for(state="detached", timeout=600_000)
    _settle(page)
    _wait_for_text(page, "data.learnability")  # the Data stage was never run for this configuration before
    _wait_for_text(page, "overfit.one_batch")
    _shot(page, "5_report")
    assert page.console_errors == []


def test_a_language_link_a_language_switch_and_an_upload_keep_the_session_on_every_page(server, page, tmp_path):
    """A newcomer opens a ?lang=ru link, switches to English, changes the task, uploads a file, switches to Korean and
    walks every page: no page shows an exception, and the uploaded file's rows are still the ones checked (a choice
    drawn with translated labels once came back from the browser as a label the new language does not have, and a
    row picker labelled with the old task's label names as a value no row has)."""
    from diagnostics.i18n import _, use_language

    upload = tmp_path / "train.csv"
    upload.write_text("sentence,label\n" + "".join(f"a quiet review number {i},{i % 2}\n" for i in range(12)))

    def label(text: str, language: str) -> str:
        with use_language(language):
            return _(text)

    def no_exception(where: str) -> None:
        assert page.locator("[data-testid='stException']").count() == 0, (where, page.locator(
            "[data-testid='stMain']").inner_text()[:2000])

    page.goto(f"{server}/?lang=ru")
    _wait_for_text(page, label("The first batch, decoded", "ru"), timeout=180_000)
    _settle(page)
    _choose(page, label("Language", "ru"), "English")
    _wait_for_text(page, "The first batch, decoded")
    _choose(page, "GLUE task", "sst2")
    page.get_by_text("Local files").first.click()
    _settle(page)
    page.set_input_files("[data-testid='stSidebar'] input[type=file]", str(upload))
    # The table is drawn on a canvas: the file's 12 rows show in the split-wide count (the demo samples have more).
    _wait_for_text(page, "Split-wide checks scanned 12 rows.", timeout=120_000)
    no_exception("the Data page after the upload")
    _choose(page, "Language", "한국어")
    _wait_for_text(page, label("The first batch, decoded", "ko"))
    for link, wait in (("2 · Model", "Checks"), ("3 · Hyperparameters", "Checks"), ("4 · Overfit test", "Epochs"),
                       ("Report", "Run every stage now"), ("Your script", "Trace the script"),
                       ("Workshop", "Warm up every scenario"), ("1 · Data", "The first batch, decoded")):
        _open(page, label(link, "ko"), label(wait, "ko"))
        _settle(page)
        no_exception(link)
    with use_language("ko"):
        scanned = _("Split-wide checks scanned {rows:,} rows.").format(rows=12)
    _wait_for_text(page, scanned)  # the upload, not the demo samples
    assert "train.csv" in page.locator("[data-testid='stSidebar'] textarea").first.input_value()
    _shot(page, "13_after_language_and_upload_ko")
    assert page.console_errors == []


def test_bad_input_gives_a_message_and_keeps_the_sidebar(server, page):
    page.goto(server)
    page.get_by_text("The first batch, decoded").wait_for(timeout=180_000)
    _settle(page)
    batch = page.get_by_role("spinbutton", name="Batch size")
    batch.fill("8")
    batch.press("Enter")
    _settle(page)
    rate = page.get_by_role("textbox", name="Learning rate")
    rate.fill("fast")
    rate.press("Enter")
    page.get_by_text("learning rate 'fast' is not a number").first.wait_for(timeout=60_000)
    _settle(page)
    _has_value(page, "Batch size", "8")
    _shot(page, "6_bad_input")
    rate = page.get_by_role("textbox", name="Learning rate")
    rate.fill("0.003")
    rate.press("Enter")
    page.get_by_text("The first batch, decoded").wait_for(timeout=120_000)
    assert page.get_by_text("is not a number").count() == 0
    assert page.console_errors == []


def test_link_values_show_as_text_and_a_huge_number_is_refused(server, page):
    """A link's values are shown as typed: no link, no remote image; a num_labels that would exhaust memory is
    refused with its bound while the page opens on the rest."""
    from urllib.parse import urlencode

    bait = "[Session expired: sign in](http://127.0.0.1:9/login) ![x](http://127.0.0.1:9/x.png)"
    requests = []
    page.on("request", lambda request: requests.append(request.url))
    page.goto(f"{server}/?{urlencode({'lr': bait, 'num_labels': '10000000000', 'batch_size': '8'})}")
    page.get_by_text("The first batch, decoded").wait_for(timeout=180_000)
    _settle(page)
    warning = page.locator("[data-testid='stSidebar'] [data-testid='stAlert']").first
    text = warning.inner_text().replace("\u200b", "")  # a zero-width space keeps URLs from turning into links
    assert "[Session expired: sign in](http://127.0.0.1:9/login)" in text  # as typed
    assert "num_labels must be at most 100" in text
    assert warning.locator("a, img").count() == 0
    assert not [url for url in requests if ":9/" in url]
    _has_value(page, "Batch size", "8")
    _shot(page, "13_link_bait")


def test_trace_the_course_script_and_walk_its_results(server, page):
    page.goto(server)
    page.get_by_text("The first batch, decoded").wait_for(timeout=180_000)
    _settle(page)
    _open(page, "Your script", "Trace the script")
    page.get_by_role("button", name="Trace the script").click()
    _wait_for_text(page, "Traced: course_script.py", timeout=240_000)
    _settle(page)
    _wait_for_text(page, "to_tf_dataset asks for labels, which does not exist")
    _shot(page, "7_your_script")
    _open(page, "1 · Data", "Results traced from your script")
    _wait_for_text(page, "to_tf_dataset asks for labels")
    _settle(page)
    _shot(page, "8_data_traced")
    assert page.console_errors == []


def test_a_scenario_link_reloads_with_its_configuration_and_results(server, page):
    # Opened at a page's path, Streamlit's front end first looks for its server under that path, then at the root.
    missing = []
    page.on("response", lambda response: response.status == 404 and missing.append(response.url))
    link = f"{server}/hyperparameters?scenario=adam-string-default-lr&rates=3&steps=4&range_steps=12"
    page.goto(link)
    _wait_for_text(page, "hparams.optimizer", timeout=180_000)
    _settle(page)
    symptom = "compile(optimizer='adam') hides the learning rate"  # the scenario's, under its picker
    assert symptom in page.locator("[data-testid='stSidebar']").inner_text()
    _has_value(page, "Rates in the grid", "3")
    page.get_by_role("button", name="Run the sweep and the range test").click()
    _wait_for_text(page, "Held-out loss against learning rate", timeout=180_000)
    _settle(page)
    assert "scenario=adam-string-default-lr" in page.url and "rates=3" in page.url

    page.reload()  # a new session: the configuration comes from the URL, the sweep from the shared results
    _wait_for_text(page, "Held-out loss against learning rate", timeout=180_000)
    _settle(page)
    assert symptom in page.locator("[data-testid='stSidebar']").inner_text()
    _has_value(page, "Rates in the grid", "3")
    assert page.get_by_role("button", name="Run the sweep and the range test").count() == 0
    _wait_for_text(page, "Computed")
    page.get_by_role("button", name="Copy link to this run").click()
    _wait_for_text(page, "Whoever opens the link")
    _wait_for_text(page, link)  # the address to copy is the link itself
    _shot(page, "9_link_reloaded")
    page.keyboard.press("Escape")

    _open(page, "Workshop", "Warm up every scenario")
    _settle(page)
    _wait_for_text(page, "?scenario=course-script")
    _shot(page, "10_workshop")
    assert all(url.startswith(f"{server}/hyperparameters/_stcore/") for url in missing), missing
    assert [error for error in page.console_errors if "404 (Not Found)" not in error] == []



def test_the_warm_up_redraws_each_scenarios_badge_as_soon_as_it_is_kept(server, page):
    """During a warm-up of minutes the cards say which scenarios are warm (they kept the counts from before the press
    until the whole warm-up ended: a presenter saw "0 of 8" on every card)."""
    page.goto(f"{server}/workshop")
    _wait_for_text(page, "?scenario=course-script", timeout=180_000)
    _settle(page)
    page.locator("[data-testid='stMultiSelect'] [aria-label='Clear all']").first.click()
    # The Data checks and the Model checks: each scenario's model loads for its unit, so the warm-up lasts long
    # enough to be looked at midway even where earlier tests of this server kept some scenarios' Data units.
    for option in ("Data checks", "Model checks"):
        page.get_by_role("combobox", name="What to compute for every scenario").first.click()
        page.get_by_role("option", name=option).first.click()
        page.keyboard.press("Escape")
    _settle(page)
    cards = page.locator("[data-testid='stMain'] [data-testid='stHorizontalBlock']").filter(has_text="?scenario=")
    # What each card counted before the press (an earlier test of this server may have computed a scenario's unit).
    before = [computed_count(cards.nth(index).inner_text()) for index in range(cards.count())]
    page.get_by_role("button", name="Warm up every scenario").click()
    seen_midway = []
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        main = page.locator("[data-testid='stMain']").inner_text()
        if "Every scenario is warm" in main:
            break
        progress = [line for line in main.splitlines() if line.startswith("Scenario ") and " of " in line]
        number = int(progress[0].split()[1]) if progress else 0
        if number >= 2:  # the cards of the scenarios before it are done; the current one says so
            texts = [cards.nth(index).inner_text() for index in range(number)]
            seen_midway.append((number, texts))
        page.wait_for_timeout(250)
    assert seen_midway, "the warm-up ended before a look at it midway"
    number, texts = seen_midway[0]
    # Each card of a scenario already warmed says so: its Data and Model checks' four units are kept, with whatever
    # it counted before (an earlier test may have computed some of the same units, so the count need not grow by
    # four). The old page showed a card that counted 0 before the press still at 0.
    warmed = list(zip(texts[:-1], before, strict=False))
    assert all("warm (" in text or computed_count(text) >= max(count, 4) for text, count in warmed), (before, texts)
    assert any("Computing…" in text for _number, texts in seen_midway for text in texts), seen_midway


def computed_count(card: str) -> int:
    """The units a Workshop card says are computed ("3 of 8 computed"; "warm (8 of 8)")."""
    import re

    found = re.search(r"(\d+) of \d+", card)
    return int(found.group(1)) if found else 0


# What a reader cannot see in full: a button's label cut short, a one-line placeholder wider than its box, a widget's
# label or a badge cut off (the element's content wider than the element). Selectboxes cut a long choice with an
# ellipsis by design (the whole choice shows in the list), and tables are drawn on a canvas: neither is measured.
CLIPPED = """() => {
  const shown = element => element.getClientRects().length > 0 && getComputedStyle(element).visibility !== "hidden";
  const cut = element => element.clientWidth > 0 && element.scrollWidth > element.clientWidth + 1;
  const found = [];
  for (const button of document.querySelectorAll("button")) {
    const text = button.innerText.trim();
    if (!text || !shown(button)) continue;
    if ([button, ...button.querySelectorAll("p, span, div")].some(cut)) found.push("button: " + text);
  }
  const ruler = document.createElement("canvas").getContext("2d");
  for (const input of document.querySelectorAll("input[placeholder]")) {
    if (!input.placeholder || input.value || !shown(input)) continue;
    const style = getComputedStyle(input);
    ruler.font = `${style.fontStyle} ${style.fontWeight} ${style.fontSize} ${style.fontFamily}`;
    const room = input.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
    if (ruler.measureText(input.placeholder).width > room + 1) found.push("placeholder: " + input.placeholder);
  }
  for (const label of document.querySelectorAll("[data-testid='stWidgetLabel'] p, [data-testid='stMetricValue'] div")) {
    if (shown(label) && cut(label)) found.push("label: " + label.innerText);
  }
  return found;
}"""


@pytest.mark.parametrize("language", ["en", "ru", "zh", "it", "ko"])
def test_every_page_in_each_language_reads_in_full_at_a_laptops_width(server, laptop_page, language):
    """Every page in each language at a laptop's width, with a failing scenario's Report: no button, placeholder or
    label cut short (measured: the element's scroll width against its client width), and a screenshot of each to be
    looked at (CJK text must render in Noto CJK, not as boxes). Results are shared: only the first language computes
    them."""
    from diagnostics.i18n import _, use_language

    with use_language(language):
        decoded, report, checks, failed = _("The first batch, decoded"), _("Report"), _("Checks"), _("FAIL")
        not_run = _("Not run yet for this configuration: {stages}. Open their pages, or run every stage here.")
        not_run = not_run.split("{")[0].strip()
        waits = {"model": checks, "hyperparameters": checks, "overfit": _("Run the overfit test"),
                 "script": _("Trace the script"), "workshop": _("Warm up every scenario")}
    page = laptop_page
    clipped = {}
    scenario = "scenario=probabilities-not-logits"  # a failing Report, with num_labels left to its placeholder
    page.goto(f"{server}/?lang={language}&{scenario}")
    _wait_for_text(page, decoded, timeout=180_000)
    page.locator(".js-plotly-plot").nth(1).wait_for(timeout=60_000)
    _settle(page)
    clipped["data"] = page.evaluate(CLIPPED)
    _shot(page, f"11_data_{language}")
    for path, text in waits.items():
        page.goto(f"{server}/{path}?lang={language}&{scenario}")
        _wait_for_text(page, text, timeout=180_000)
        _settle(page)
        clipped[path] = page.evaluate(CLIPPED)
        _shot(page, f"14_{path}_{language}")
    page.goto(f"{server}/report?lang={language}&{scenario}")
    _wait_for_text(page, "hparams.loss", timeout=180_000)
    _settle(page)
    clipped["report"] = page.evaluate(CLIPPED)
    main = page.locator("[data-testid='stMain']").inner_text()
    assert report in main and failed in main and not_run in main, main[:3000]
    _shot(page, f"12_report_{language}")
    cut = {path: found for path, found in clipped.items() if found}
    assert not cut, __import__("json").dumps(cut, ensure_ascii=False, indent=1)
    # Opened at a page's path, the front end first probes for its server under that path (404s; see above).
    assert [error for error in page.console_errors if "404 (Not Found)" not in error] == []
