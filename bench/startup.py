"""Startup: a fresh process rendering the app's first page on the demo kit / a fresh process importing TF and Transformers.

Both sides are timed from process start to exit, offline (HF_HUB_OFFLINE=1), with the demo checkpoint
already on disk (one untimed run builds it first). The app side renders the Data page, first batch and
split-wide checks included, through Streamlit's AppTest; the floor is `import tensorflow, transformers`.

    python bench/startup.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

FLOOR = "import tensorflow, transformers"
APP = (
    "from streamlit.testing.v1 import AppTest; "
    f"at = AppTest.from_file({str(ROOT / 'app.py')!r}, default_timeout=600).run(); "
    "assert not at.exception and at.dataframe, at.exception"
)
# A second session opening the first page of a running app (a laptop's or a Space's server after its first visitor).
SECOND = APP + (
    "; import time; start = time.perf_counter(); "
    f"at = AppTest.from_file({str(ROOT / 'app.py')!r}, default_timeout=600).run(); "
    "assert not at.exception and at.dataframe, at.exception; "
    "print('second', time.perf_counter() - start)"
)


def timed_process(code: str) -> float:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TF_CPP_MIN_LOG_LEVEL": "3"}
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, check=True, capture_output=True)
    return time.perf_counter() - start


def second_session_s() -> float:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TF_CPP_MIN_LOG_LEVEL": "3"}
    done = subprocess.run([sys.executable, "-c", SECOND], cwd=ROOT, env=env, check=True, capture_output=True, text=True)
    return float(next(line for line in done.stdout.splitlines() if line.startswith("second")).split()[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    timed_process(APP)  # builds the demo checkpoint if needed and warms the file cache for both sides
    floor, app = [], []
    for _ in range(args.repeats):  # interleaved, so drift in the machine's load hits both sides alike
        floor.append(timed_process(FLOOR))
        app.append(timed_process(APP))
    print(f"second_session_first_page_s = {second_session_s():.2f}")
    print(f"import_tf_transformers_s = {statistics.median(floor):.2f}")
    print(f"first_page_s = {statistics.median(app):.2f}")
    print(f"startup_ratio = {statistics.median(app) / statistics.median(floor):.2f}")


if __name__ == "__main__":
    main()
