"""`python -m ui.serve run app.py [streamlit options]`: `streamlit run`, with the app's bounds on the server
installed before it takes its first request, and its worker processes started (the Space's command: see the
Dockerfile). `streamlit run app.py` installs them at the first page instead."""

from __future__ import annotations

import contextlib
import sys


def main() -> None:
    from streamlit.web import cli

    from ui.reruns import bound_reruns
    from ui.uploads import bound_uploads

    bound_uploads()
    bound_reruns()
    from diagnostics.core.errors import InputError
    from diagnostics.serve import worker
    from diagnostics.serve.store import heavy_capacity

    with contextlib.suppress(InputError):  # a limit that does not read is said on the first page that needs it
        worker.pool(heavy_capacity())  # hosted mode: the workers warm up before the first visitor asks for them
    sys.argv = ["streamlit", *sys.argv[1:]]
    cli.main(prog_name="streamlit")


if __name__ == "__main__":
    main()
