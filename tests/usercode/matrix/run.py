"""Trace the matrix's scripts one after another in one process (the tracer's child, in process: `run_in_process`),
each report written beside its script: `python -m tests.usercode.matrix.run WORKDIR NAME...` (from the project
root).
One process for many scripts spends TensorFlow's and Transformers' import once, not once a script."""

from __future__ import annotations

import json
from pathlib import Path
import sys
import time


def trace_one(work: Path, name: str) -> None:
    """Trace the planned script `work/<name>/train.py` in this process, its report written beside it (or what
    crashed the tracer, in crash.txt)."""
    from diagnostics.usercode.trace_child import run_in_process
    from tests.usercode.here import spec_of

    entry = json.loads((work / "plan.json").read_text())[name]
    folder = work / name
    started = time.monotonic()
    spec = spec_of(folder / "train.py", entry["args"], folder, stages=entry.get("stages"), skip=entry.get("skip"),
                   task=entry.get("task"))
    try:
        run_in_process(spec)
    except BaseException as exc:  # the tracer itself failed: the test says so with the error
        (folder / "crash.txt").write_text(f"{type(exc).__name__}: {exc}")
    (folder / "seconds.txt").write_text(f"{time.monotonic() - started:.1f}")


def main(workdir: str, names: list[str]) -> int:
    from diagnostics.core.libraries import import_libraries

    import_libraries()
    for name in names:
        trace_one(Path(workdir), name)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2:]))
