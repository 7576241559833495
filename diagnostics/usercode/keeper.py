"""`python -m diagnostics.usercode.keeper COMMAND...`: run COMMAND, then end every process it left, however it
left (a trace's child runs under one).

On Linux the keeper adopts the orphans of everything below it (a child subreaper), so a daemon the traced script
started stays its descendant even when it took a session of its own, cleared its environment (no trace token left
for a sweep to find), double-forked, and the traced process itself ended with `os._exit` before it could end it:
such a daemon outlived the trace before. The keeper runs no user code, so nothing can end it early but its parent
(it dies with its parent, ending its descendants first). It exits as COMMAND did, with its code or its signal.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys

KEEPER_ENV = "DEBUGGER_TRACE_KEEPER"  # the keeper's pid, which the child ties its life to


def end_descendants() -> None:
    """End every process below this one (the keeper's adopted orphans included)."""
    import psutil

    family = psutil.Process().children(recursive=True)
    for process in family:
        with contextlib.suppress(psutil.Error):
            process.kill()
    psutil.wait_procs(family, timeout=5)


def tie_to_parent(parent: int) -> None:
    """On Linux: adopt the orphans of every process below this one (a child subreaper), so `end_descendants` finds
    them, and die with `parent` (even a killed one), ending them first. The keeper and the trace's child both."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    pr_set_pdeathsig, pr_set_child_subreaper = 1, 36
    libc.prctl(pr_set_child_subreaper, 1)
    libc.prctl(pr_set_pdeathsig, signal.SIGTERM)
    signal.signal(signal.SIGTERM, lambda *_: (end_descendants(), os._exit(143)))
    if os.getppid() != parent:  # the parent was gone before the death signal was set
        end_descendants()
        os._exit(143)


def main(command: list[str]) -> int:
    tie_to_parent(os.getppid())
    child = subprocess.Popen(command, env={**os.environ, KEEPER_ENV: str(os.getpid())})
    try:
        code = child.wait()
    finally:
        end_descendants()
    if code < 0:  # ended by a signal: end the same way, so the caller reads what happened (e.g. -9, memory)
        with contextlib.suppress(OSError, ValueError):  # SIGKILL and SIGSTOP take no handler: none to put back
            signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
        return 128 - code  # the shell's code for it, should the signal not end this process
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
