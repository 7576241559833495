"""What every check's evidence shares: rows of a table, and an `error` result's keys. Each check declares the shape
of its own evidence beside its measurement (`Evidence` in its module, `Check.evidence`), and
`tests/walk/test_registry.py` holds both sides to it: a demo run's evidence has no undeclared key, and every key
the charts (`plots.py`) and the pages read is declared. Renaming a key on one side only fails there at once, not
in a chart at run time.
"""

from __future__ import annotations

from typing import Any, TypedDict

Rows = list[dict[str, Any]]


class Error(TypedDict, total=False):
    """An `error` result's evidence (see `result.error_result`)."""
    exception: str
    message: str
    where: str
    traceback: str
