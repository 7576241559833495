"""What a traced script does before it reaches fit, said as it happens: each library it starts to import that takes
seconds to load (with how long it took the last trace on this machine), and each model it loads with
`from_pretrained`. The seconds before fit are mostly these, and a page once showed only "still running" through them.
"""

from __future__ import annotations

import functools
import json
import sys
import time
from pathlib import Path

from diagnostics.i18n import msg

# The libraries a script imports whose import takes seconds, as the trace names them.
HEAVY_IMPORTS = {"tensorflow": "TensorFlow", "transformers": "Transformers", "datasets": "datasets"}


def announce_imports(importing, say) -> None:
    """Through `importing` (the child's `AfterImport`), `say` each heavy library as the script starts to import it,
    with the seconds the last trace here took to import it the same way (`import_times`); keep this one's."""
    times, started = import_times(), {}

    def starting(name: str) -> None:
        key = _import_key(name, started)
        started[name] = (time.monotonic(), key)
        last = times.get(key)
        say(msg("The script imports {library}{estimate}", library=HEAVY_IMPORTS[name],
                estimate=msg(" (about {seconds:.0f} s, as the last time here)", seconds=last)
                if last and last >= 1 else ""))

    def done(name: str) -> None:
        if name in started:
            began, key = started.pop(name)
            times[key] = round(time.monotonic() - began, 1)
            import_times(times)

    for name in HEAVY_IMPORTS:
        importing.before(name, starting)
        importing.when(name, lambda module, name=name: done(name))


def announce_loading(child, owner) -> None:
    """Say each model the script loads with `owner.from_pretrained` (Transformers' TF models); the call itself is the
    script's, unchanged, and the checks' own loads (`child.checking`) say nothing."""
    original = owner.__dict__["from_pretrained"].__func__

    @functools.wraps(original)
    def from_pretrained(cls, *args, **kwargs):
        if not child.checking:
            name = args[0] if args else kwargs.get("pretrained_model_name_or_path", "")
            child.say(msg("The script loads {model} from {checkpoint}", model=cls.__name__,
                          checkpoint=Path(str(name)).name or str(name)))
        return original(cls, *args, **kwargs)

    child._patch(owner, "from_pretrained", classmethod(from_pretrained))


def _import_key(name: str, started: dict) -> str:
    """What an import's time depends on: the library, and which of the others were loaded before it (Transformers
    imported first loads TensorFlow inside its own time)."""
    return "+".join([name, *sorted(other for other in HEAVY_IMPORTS if other != name and other in sys.modules
                                   and other not in started)])


def import_times(times: dict | None = None) -> dict:
    """The seconds each library took to import in the last trace here (`times`: write them), in the cache folder:
    an estimate measured on this machine, or none."""
    from diagnostics.keras.disk import cache_dir

    path = cache_dir() / "trace-import-times.json"
    if times is None:
        try:
            read = json.loads(path.read_text())
            return {str(key): float(value) for key, value in read.items()} if isinstance(read, dict) else {}
        except (OSError, ValueError, TypeError):
            return {}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(times))
    except OSError:
        pass  # no estimate next time; the trace goes on
    return times
