"""What a notebook or a terminal shows while `diagnose()` or the callback runs the checks: a progress bar in a
notebook (`tqdm.auto`, the bar notebook users know), plain lines in a terminal or a log (a bar redrawn with
carriage returns garbles a log file)."""

from __future__ import annotations

import contextlib
import sys
from typing import Callable, Iterator

from diagnostics.core.budget import time_left_text
from diagnostics.core.progress import Lines, Report
from diagnostics.i18n import localize

# Seconds of work before a terminal's first line, and between two lines.
LINE_EVERY_S = 3.0


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
    """A `core.progress.Report` that shows the checks' progress: a `tqdm.auto` bar in a notebook, lines (to
    `write`, default stderr) elsewhere; the bar is closed on leaving, whatever happened."""
    if in_notebook() if notebook is None else notebook:
        from tqdm.auto import tqdm

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
        said = localize(text)
        if not lines.due(said):
            return
        out(f"{title}: {said} ({fraction:.0%}" + ("" if left is None else f", {localize(time_left_text(left))}")
            + ")")

    yield line
