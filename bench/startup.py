"""Startup: a fresh process rendering the app's first page on the demo kit / a fresh process importing TF and
Transformers.

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


# The first page rendered after the floor's imports (made as the app makes them: Keras 2 selected, the collector
# paused and then frozen), each thread of the script run profiled (AppTest runs the page in
# a thread of its own): where the app's time beyond `import tensorflow, transformers` goes.
PROFILED = (
    "import cProfile, io, pstats, threading; import diagnostics\n"
    "from diagnostics.core.libraries import import_libraries\n"
    "import_libraries(); profiles = []; run = threading.Thread.run\n"
    "def profiled(self):\n"
    "    profile = cProfile.Profile(); profiles.append(profile); profile.enable()\n"
    "    try: run(self)\n"
    "    finally: profile.disable()\n"
    "threading.Thread.run = profiled\n"
    "from streamlit.testing.v1 import AppTest\n"
    f"AppTest.from_file({str(ROOT / 'app.py')!r}, default_timeout=600).run()\n"
    "out = io.StringIO(); stats = pstats.Stats(*profiles, stream=out); stats.sort_stats('cumulative').print_stats("
    "'diagnostics|ui/|app_pages|datasets/(load|arrow_dataset)|tokenization_utils_base', 30)\n"
    "print(out.getvalue())"
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
    parser.add_argument("--profile", action="store_true", help="print where the first page's time goes beyond the "
                        "floor's imports (cProfile of the page's threads), as comment lines")
    args = parser.parse_args()

    timed_process(APP)  # builds the demo checkpoint if needed and warms the file cache for both sides
    floor, app = [], []
    for _ in range(args.repeats):  # interleaved, so drift in the machine's load hits both sides alike
        floor.append(timed_process(FLOOR))
        app.append(timed_process(APP))
    if args.profile:
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "TF_CPP_MIN_LOG_LEVEL": "3"}
        done = subprocess.run([sys.executable, "-c", PROFILED], cwd=ROOT, env=env, check=True, capture_output=True,
                              text=True)
        for line in done.stdout.splitlines():
            if line.strip():
                print(f"# {line}")
    print(f"second_session_first_page_s = {second_session_s():.2f}")
    print(f"import_tf_transformers_s = {statistics.median(floor):.2f}")
    print(f"first_page_s = {statistics.median(app):.2f}")
    print(f"startup_ratio = {statistics.median(app) / statistics.median(floor):.2f}")


if __name__ == "__main__":
    main()
