"""What a notebook or a terminal shows while `diagnose()` or the callback runs the checks: a progress bar in a
notebook with ipywidgets (`tqdm.notebook`, the bar notebook users know), one line rewritten in place in a notebook
without them (tqdm's text bar there prints a new output at every update), plain lines in a terminal or a log (a bar
redrawn with carriage returns garbles a log file)."""

from __future__ import annotations

import contextlib
import sys
from typing import Callable, Iterator

from diagnostics.core.budget import time_left_text
from diagnostics.core.progress import Lines, Report
from diagnostics.i18n import localize

# Seconds of work before a terminal's first line, and between two lines.
LINE_EVERY_S = 3.0
# Seconds between two rewrites of a notebook's line (each is a message to the notebook).
LINE_IN_PLACE_S = 0.5


def widgets_available() -> bool:
    """Whether a notebook can show a widget bar: ipywidgets is installed (Lightning's tuner asks the same)."""
    import importlib.util

    return importlib.util.find_spec("ipywidgets") is not None


def in_notebook() -> bool:
    """Whether this runs in a Jupyter kernel (IPython's shell for a notebook front end)."""
    shell = sys.modules.get("IPython")
    try:
        return shell is not None and type(shell.get_ipython()).__name__ == "ZMQInteractiveShell"
    except Exception:
        return False


@contextlib.contextmanager
def shown_progress(title: str, *, notebook: bool | None = None, write: Callable[[str], None] | None = None
                   ) -> Iterator[Report]:
    """A `core.progress.Report` that shows the checks' progress: a widget bar in a notebook with ipywidgets, one
    line rewritten in place in one without, lines (to `write`, default stderr) elsewhere; the bar is closed on
    leaving, whatever happened."""
    notebook = in_notebook() if notebook is None else notebook
    if notebook and not widgets_available():
        with _line_in_place(title) as report:
            yield report
        return
    if notebook:
        from tqdm.notebook import tqdm

        bar = tqdm(total=100, desc=title, bar_format="{desc}: {percentage:3.0f}%|{bar}| {postfix}")
        done = [0]

        def report(fraction: float, text, left: float | None) -> None:
            percent = int(fraction * 100)
            if percent > done[0]:
                bar.update(percent - done[0])
                done[0] = percent
            bar.set_postfix_str(localize(text) + ("" if left is None else f" · {localize(time_left_text(left))}"))

        try:
            yield report
        finally:
            bar.close()
        return

    out = write or (lambda line: print(line, file=sys.stderr, flush=True))
    lines = Lines(every=LINE_EVERY_S)

    def line(fraction: float, text, left: float | None) -> None:
        if lines.due(localize(text)):
            out(_said(title, fraction, text, left))

    yield line


@contextlib.contextmanager
def _line_in_place(title: str) -> Iterator[Report]:
    """One output line in the notebook, rewritten in place (IPython's display with an id), at most every
    LINE_IN_PLACE_S seconds and once more at the end."""
    import time

    from IPython.display import Pretty, display

    handle = display(Pretty(f"{title}: …"), display_id=True)
    last = [0.0, ""]

    def report(fraction: float, text, left: float | None) -> None:
        said = last[1] = _said(title, fraction, text, left)
        if time.monotonic() - last[0] >= LINE_IN_PLACE_S:
            last[0] = time.monotonic()
            handle.update(Pretty(said))

    try:
        yield report
    finally:
        if last[1]:
            handle.update(Pretty(last[1]))


def _said(title: str, fraction: float, text, left: float | None) -> str:
    """One progress line: what runs, how far, and how long is left when known."""
    return f"{title}: {localize(text)} ({fraction:.0%}" + (
        "" if left is None else f", {localize(time_left_text(left))}") + ")"
