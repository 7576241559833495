"""A data file's streaming pre-scan, before `datasets` or pyarrow parses it: its size, rows, columns, the length of
its lines (or cells) and, for JSON, how deep its values nest, each against `config.limits.FileLimits`. Every refusal
is one line naming the limit and what the file holds."""

from __future__ import annotations

import csv
from pathlib import Path

from diagnostics.config.limits import FileLimits
from diagnostics.core.errors import InputError
from diagnostics.i18n import msg

_OPEN, _CLOSE = frozenset(b"[{"), frozenset(b"]}")


def scan_file(file: Path, kind: str, limits: FileLimits, *, delimiter: str = ",") -> None:
    """Refuse `file` (of builder `kind`: csv, json or parquet) past any of `limits`.

    Raises:
        InputError: naming the limit the file is past.
    """
    size = file.stat().st_size
    if size > limits.max_bytes:
        _refuse(
            file, msg("{size:,} bytes, past the limit of {limit:,}", size=size, limit=limits.max_bytes), "max_bytes"
        )
    if kind == "parquet":
        _scan_parquet(file, limits)
    else:
        _scan_text(file, kind, limits, delimiter)


def _refuse(file: Path, what, limit: str) -> None:
    raise InputError(msg("Data file {path} is not read: {what} ({variable} sets the limit).", path=file.name, what=what,
                         variable=f"DEBUGGER_FILE_{limit.upper()}"))


def _scan_text(file: Path, kind: str, limits: FileLimits, delimiter: str) -> None:
    depth = 0
    with file.open("rb") as handle:
        for number, line in enumerate(handle, start=1):
            if number > limits.max_rows:
                _refuse(file, msg("more than {limit:,} lines", limit=limits.max_rows), "max_rows")
            if len(line) > limits.max_row_chars and len(line.decode("utf-8", "replace")) > limits.max_row_chars:
                _refuse(file, msg("line {number} holds more than {limit:,} characters", number=number,
                                  limit=limits.max_row_chars), "max_row_chars")
            if kind == "json":
                depth = _json_depth(file, line, number, depth, limits.max_depth)
                if line.count(b'":') > limits.max_columns:
                    _count_keys(file, line, number, limits.max_columns)
            elif number == 1:
                header = next(csv.reader([line.decode("utf-8", "replace")], delimiter=delimiter), [])
                if len(header) > limits.max_columns:
                    _refuse(file, msg("{count:,} columns, past the limit of {limit}", count=len(header),
                                      limit=limits.max_columns), "max_columns")


def _json_depth(file: Path, line: bytes, number: int, depth: int, limit: int) -> int:
    """The nesting depth after `line` (carried across lines for a JSON file that is not JSON lines); refuses past
    `limit` before a parser recurses into it."""
    opens = line.count(b"{") + line.count(b"[")
    if depth == 0 and opens <= limit and opens == line.count(b"}") + line.count(b"]"):
        return 0  # a balanced line (a JSON-lines row) cannot nest past the limit, nor leave any depth open
    inside, escaped = False, False
    for byte in line:
        if inside:
            if escaped:
                escaped = False
            elif byte == 0x5C:  # a backslash
                escaped = True
            elif byte == 0x22:  # a quote
                inside = False
        elif byte == 0x22:
            inside = True
        elif byte in _OPEN:
            depth += 1
            if depth > limit:
                _refuse(
                    file, msg("line {number} nests deeper than {limit} levels", number=number, limit=limit), "max_depth"
                )
        elif byte in _CLOSE:
            depth = max(depth - 1, 0)
    return depth


def _count_keys(file: Path, line: bytes, number: int, limit: int) -> None:
    import json

    try:
        row = json.loads(line)
    except ValueError:
        return  # a broken line: the reader names it
    if isinstance(row, dict) and len(row) > limit:
        _refuse(file, msg("line {number} holds {count:,} columns, past the limit of {limit}", number=number,
                          count=len(row), limit=limit), "max_columns")


def _scan_parquet(file: Path, limits: FileLimits) -> None:
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    try:
        parquet = pq.ParquetFile(file)
    except Exception as exc:  # not a parquet file: the reader names it
        raise InputError(msg("Could not read {path} as parquet: {error}: {reason}", path=file.name,
                             error=type(exc).__name__, reason=str(exc).splitlines()[0] if str(exc) else "")) from exc
    meta = parquet.metadata
    if meta.num_columns > limits.max_columns:
        _refuse(file, msg("{count:,} columns, past the limit of {limit}", count=meta.num_columns,
                          limit=limits.max_columns), "max_columns")
    if meta.num_rows > limits.max_rows:
        _refuse(
            file,
            msg("{count:,} rows, past the limit of {limit:,}", count=meta.num_rows, limit=limits.max_rows),
            "max_rows",
        )
    decoded = 0
    for batch in parquet.iter_batches(batch_size=4096):
        for column in batch.columns:
            if pa.types.is_dictionary(column.type):
                column = column.cast(column.type.value_type)
            if pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
                longest = pc.max(pc.utf8_length(column)).as_py() or 0
                if longest > limits.max_row_chars:
                    _refuse(file, msg("a cell holds {count:,} characters, past the limit of {limit:,}",
                                      count=longest, limit=limits.max_row_chars), "max_row_chars")
            decoded += column.nbytes
        if decoded > limits.max_decoded_bytes:
            _refuse(
                file, msg("more than {limit:,} bytes once decoded", limit=limits.max_decoded_bytes), "max_decoded_bytes"
            )
