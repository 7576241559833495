"""The heavy libraries imported once in the debugger's own processes, with Python's cycle collector kept off them.

`import tensorflow, transformers` leaves some 365,000 objects that the cycle collector tracks and will never free
(modules, classes, functions, registered ops). The collector walks all of them at each full collection: six times
while they are imported (0.5 s of a 3.1 s import on 2 cores), once more at exit (0.85 s), and again after every
Streamlit rerun (the script runner collects) and after every unit that trains (the runner collects to free the
copy). Importing them with the collector paused, then freezing what exists (`gc.freeze`), spares all of that: the
Data page of a fresh app process renders in 4.4 s instead of 6.3 s. Objects freed by their reference count are freed
as before, and every object made later is collected as before.

Only for processes the debugger owns (the app's server, the command line, a traced script's child before the script
starts): a user's notebook keeps its collector as it is.
"""

from __future__ import annotations

import gc
import threading

_LOCK = threading.Lock()
_imported = False


def import_libraries() -> None:
    """Import TensorFlow with Keras 2, Transformers' tokenizer and collator classes and `datasets`, once a process,
    with the cycle collector paused, then freeze every object alive (the later calls return at once)."""
    global _imported
    with _LOCK:
        if _imported:
            return
        enabled = gc.isenabled()
        gc.disable()
        try:
            import datasets  # noqa: F401
            import tensorflow  # noqa: F401
            import tf_keras  # noqa: F401
            from transformers import AutoTokenizer, DataCollatorWithPadding  # noqa: F401
        finally:
            gc.freeze()
            if enabled:
                gc.enable()
            _imported = True


def libraries_imported() -> bool:
    """Whether this process has imported them (a first page of a fresh server has not: it says why it waits)."""
    return _imported
