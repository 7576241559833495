"""Page switch: median seconds to rerun a page whose results are already computed for the configuration.

Every page is run once on the demo kit (the sweep and overfit buttons pressed), then the session walks
the pages in pipeline order `--rounds` times through Streamlit's AppTest, timing each switch-and-rerun
(the script run and the rendering of its elements; AppTest has no browser). The figure is the median of
the slowest page.

    python bench/page_switch.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from streamlit.testing.v1 import AppTest  # noqa: E402

PAGES = ("app_pages/1_data.py", "app_pages/2_model.py", "app_pages/3_hyperparameters.py",
         "app_pages/4_overfit.py", "app_pages/report.py")


def compute_everything(at: AppTest) -> None:
    at.switch_page(PAGES[1]).run()
    at.switch_page(PAGES[2]).run()
    for key, value in {"hparams.rates": 5, "hparams.steps": 4, "hparams.range_steps": 20}.items():
        at.number_input(key=key).set_value(value).run()
    at.button(key="hparams.run").click().run()
    at.switch_page(PAGES[3]).run()
    at.button(key="overfit.run").click().run()
    at.switch_page(PAGES[4]).run()
    assert not at.exception, at.exception


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=600).run()
    compute_everything(at)
    timings: dict[str, list[float]] = {page: [] for page in PAGES}
    for _ in range(args.rounds):
        for page in PAGES:
            start = time.perf_counter()
            at.switch_page(page).run()
            timings[page].append(time.perf_counter() - start)
            assert not at.exception and not at.get("spinner"), page
    medians = {page: statistics.median(values) for page, values in timings.items()}
    for page, value in medians.items():
        print(f"{Path(page).stem}_s = {value:.3f}")
    print(f"page_switch_s = {max(medians.values()):.3f}")


if __name__ == "__main__":
    main()
