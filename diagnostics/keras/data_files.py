"""The split a run reads: the bundled demo files, a GLUE split from the Hub, or a local or uploaded file
(CSV, TSV, JSON Lines, Parquet), with its text and labels normalised to the task's schema."""

from __future__ import annotations

import glob

import codecs
import contextlib
import json
import logging
import os
from pathlib import Path

import numpy as np

from diagnostics.config import limits
from diagnostics.config.run import RunConfig
from diagnostics.config.tasks import GlueTask, get_task
from diagnostics.core.errors import InputError
from diagnostics.i18n import N_, Text, msg
from diagnostics.keras.batches import LABEL, LABEL_AS_WRITTEN, SHUFFLED_LABELS_BUG, UNUSABLE_LABEL, shuffled_labels
from diagnostics.keras.file_scan import scan_file
from diagnostics.keras.loading import DEMO_DATA_DIR, UTF16_BOMS, cache_dir, hub_reachable, tidy_cache


LOCAL_FORMATS = {".csv": "csv", ".tsv": "csv", ".json": "json", ".jsonl": "json", ".parquet": "parquet"}


def split_files(config: RunConfig) -> dict[str, str]:
    """The local files that hold each split, for the demo kit or the user's files."""
    if config.data_source == "demo":
        task = get_task(config.task)
        return {split: str(DEMO_DATA_DIR / task.name / f"{split}.jsonl") for split in task.splits}
    return dict(config.data_files)


def load_split(config: RunConfig):
    """The configured split as a `datasets.Dataset`, with the task's labels as integers (floats for stsb).

    Raises:
        InputError: the split does not exist, a file is missing, empty or unreadable, or the Hub is unreachable.
    """
    task = get_task(config.task)
    if config.data_source == "hub":
        dataset = _load_hub_split(task, config.split)
    else:
        files = split_files(config)
        if config.split not in files:
            raise InputError(msg("No data file for split {split}; the files given cover: {splits}.",
                                 split=repr(config.split), splits=", ".join(files) or msg("nothing")))
        dataset = load_demo_file(files[config.split]) if config.data_source == "demo" else load_local_file(
            files[config.split])
    if len(dataset) == 0:
        raise InputError(msg("Split {split} of {task} has no rows.", split=repr(config.split), task=task.name))
    dataset = normalise_labels(normalise_text(dataset, task), task)
    return shuffled_labels(dataset, config.seed, SHUFFLED_LABELS_BUG) if config.shuffle_labels else dataset


def load_demo_file(path: str):
    """A bundled JSON-lines sample, read by Arrow straight into memory (no `load_dataset` cache to write)."""
    from datasets import Dataset
    from pyarrow import json as pa_json

    return Dataset(pa_json.read_json(path))


def _load_hub_split(task: GlueTask, split: str):
    from datasets import load_dataset

    if not hub_reachable():
        raise InputError(msg("The Hugging Face Hub cannot be reached, so GLUE cannot be downloaded; use the bundled "
                             "demo samples or local files in the GLUE schema."))
    try:
        return load_dataset("nyu-mll/glue", task.name, split=split)
    except ValueError as exc:
        raise InputError(msg("GLUE {task} has no split {split}: {reason}", task=task.name, split=repr(split),
                             reason=str(exc).splitlines()[0])) from exc
    except Exception as exc:
        raise InputError(msg("Could not download GLUE {task}/{split}: {error}: {reason}", task=task.name, split=split,
                             error=type(exc).__name__, reason=exc)) from exc


@contextlib.contextmanager
def _quiet_datasets():
    """Silence `datasets`' own log lines (e.g. "Failed to read file ..."): the message that follows says it better."""
    logger = logging.getLogger("datasets")
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        logger.setLevel(level)


# What a file is, by its first bytes (its signature), for a file whose name promises text or Parquet but is not.
SIGNATURES = [
    (b"\x89PNG\r\n\x1a\n", N_("a PNG image")), (b"\xff\xd8\xff", N_("a JPEG image")), (b"GIF8", N_("a GIF image")),
    (b"%PDF-", N_("a PDF document")), (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", N_("an old Office file (.xls or .doc)")),
    (b"\x1f\x8b", N_("a gzip archive")), (b"7z\xbc\xaf\x27\x1c", N_("a 7-Zip archive")), (b"Rar!", N_("a RAR archive")),
    (b"PAR1", N_("a Parquet file")), (b"PK\x03\x04", N_("a ZIP archive")),
]
ZIP_CONTENTS = [("xl/", N_("an Excel spreadsheet (.xlsx)")), ("word/", N_("a Word document (.docx)")),
                ("ppt/", N_("a PowerPoint file (.pptx)")), ("content.xml", N_("an OpenDocument file (.ods or .odt)"))]


def file_kind(file: Path) -> str | None:
    """What the file is by its signature (a PNG, a ZIP, a spreadsheet...), or None for one without a known one
    (text, most likely)."""
    import zipfile

    with file.open("rb") as handle:
        start = handle.read(8)
    for signature, kind in SIGNATURES:
        if start.startswith(signature):
            if signature == b"PK\x03\x04":
                try:
                    with zipfile.ZipFile(file) as archive:
                        names = archive.namelist()[:200]
                except (zipfile.BadZipFile, OSError):
                    return kind
                return next((inside for prefix, inside in ZIP_CONTENTS if any(n.startswith(prefix) for n in names)),
                            kind)
            return kind
    return None


def _kind_problem(file: Path, builder: str) -> Text | None:
    """A file whose signature says it is not what its name promises (a PNG renamed .csv, an Excel file saved as
    .csv, text named .parquet is left to the reader): what it is, and what to give instead."""
    kind = file_kind(file)
    if kind is None or (builder == "parquet" and kind == N_("a Parquet file")):
        return None
    with file.open("rb") as handle:
        start = handle.read(4).hex(" ")
    if kind == N_("a Parquet file"):
        return msg("it is {kind} (its first bytes are {start}): name it .parquet", kind=msg(kind), start=start)
    fix = msg("save it as CSV (in Excel or LibreOffice: Save As, CSV UTF-8) and give that file") \
        if "spreadsheet" in kind or "Office" in kind or "OpenDocument" in kind else \
        msg("give the data as a CSV, TSV, JSON-lines or Parquet file in the GLUE schema")
    return msg("it is {kind}, not a {type} file (its first bytes are {start}): {fix}", kind=msg(kind),
               type=file.suffix.lower().lstrip("."), start=start, fix=fix)


def _encoding_problem(file: Path) -> str | None:
    """Where a text file stops being UTF-8 (line and bytes), with how to convert it; None when it is UTF-8."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    line = 1
    with file.open("rb") as handle:
        while chunk := handle.read(1 << 20):
            try:
                decoder.decode(chunk)
            except UnicodeDecodeError as exc:
                line += chunk.count(b"\n", 0, exc.start)
                bad = chunk[exc.start:exc.start + 4].hex(" ")
                return msg("line {line} holds bytes that are not UTF-8 ({bad}); the file is in another encoding "
                           "(Latin-1 or Windows-1252 are common): convert it with {command} and give that file",
                           line=line, bad=bad, command=f"iconv -f latin1 -t utf-8 {file.name} > utf8-{file.name}")
            line += chunk.count(b"\n")
    return None


def _broken_json_line(file: Path) -> str | None:
    """The first line of a JSON-lines file that is not one JSON value, or None."""
    with file.open(encoding="utf-8", errors="replace") as handle:
        for number, line in enumerate(handle, start=1):
            if line.strip():
                try:
                    json.loads(line)
                except json.JSONDecodeError as exc:
                    return msg("line {number} is not valid JSON ({error} at column {column}): {text}", number=number,
                               error=exc.msg, column=exc.colno, text=repr(line.strip()[:80]))
    return None


def load_local_file(path: str):
    """One local file in the GLUE schema (csv, tsv with a header row, json/jsonl, parquet).

    Raises:
        InputError: one line saying why the file cannot be read (type, missing, a directory, empty, its encoding,
            a broken JSON line, or what the reader said).
    """
    from datasets import load_dataset

    file = Path(path).expanduser()
    suffix = file.suffix.lower()
    builder = LOCAL_FORMATS.get(suffix)
    if builder is None:
        raise InputError(msg("{path}: unknown file type {suffix}; use one of {types}.", path=path,
                             suffix=repr(file.suffix), types=", ".join(LOCAL_FORMATS)))
    if file.is_dir():
        raise InputError(msg("Data file {path} is a directory, not a file: give the path of the {kind} file in it.",
                             path=path, kind=suffix[1:]))
    if not file.is_file():
        raise InputError(msg("Data file {path} does not exist.", path=path))
    if file.stat().st_size == 0:
        raise InputError(msg("Data file {path} is empty.", path=path))
    # GLUE's own tsv files hold unbalanced quotes, so quoting is off for tsv (csv.QUOTE_NONE).
    options = {"delimiter": "\t", "quoting": 3} if suffix == ".tsv" else {}
    if problem := _kind_problem(file, builder):
        raise InputError(msg("Could not read {path}: {problem}.", path=path, problem=problem))
    uploaded = file.resolve().is_relative_to((cache_dir() / "uploads").resolve())
    scan_file(file, builder, limits.file_limits(shared=uploaded), delimiter=options.get("delimiter", ","))
    if builder != "parquet":
        with file.open("rb") as handle:
            start = handle.read(2)
        if start in UTF16_BOMS:
            options["encoding"] = "utf-16"
        elif problem := _encoding_problem(file):
            raise InputError(msg("Could not read {path}: {problem}.", path=path, problem=problem))
    try:
        with _quiet_datasets():
            # A pattern to `datasets`: a name with glob characters ('train[1].tsv') is read as itself.
            dataset = load_dataset(builder, data_files=glob.escape(str(file)), split="train",
                                   cache_dir=str(cache_dir() / "datasets"), **options)
    except Exception as exc:
        if "corresponds to no data" in str(exc):
            raise InputError(msg("Data file {path} has no rows (a header at most).", path=path)) from exc
        if builder == "json" and (broken := _broken_json_line(file)):
            raise InputError(msg("Could not read {path} as JSON lines: {problem}.", path=path, problem=broken)) from exc
        cause = exc.__cause__ or exc
        raise InputError(msg("Could not read {path} as {kind}: {error}: {reason}", path=path, kind=suffix[1:],
                             error=type(cause).__name__,
                             reason=str(cause).splitlines()[0] if str(cause) else "")) from exc
    if len(dataset) == 0:
        raise InputError(msg("Data file {path} has no rows (a header at most).", path=path))
    return dataset


def safe_file_name(name: str, default: str) -> str:
    """A visitor's file name reduced to a plain base name, usable as a path only inside a folder of ours: no folders
    ("../", "/etc/", "C:\\"), no NUL or other control characters, no leading dots; `default` when nothing is left."""
    import re

    base = re.sub(r"[\x00-\x1f\x7f]", "", str(name)).replace("\\", "/").rsplit("/", 1)[-1]
    return base.strip().lstrip(".").strip()[:200] or default


def keep_upload(name: str, content: bytes, root: Path | None = None) -> Path:
    """Write an uploaded data file where the loader can read it, under a folder named by its contents' hash (the
    same bytes always land at the same path, so a link or a shared result names them, and two files with one name
    never overwrite each other).

    Raises:
        InputError: the name has no file type the loader reads.
    """
    import hashlib

    base = safe_file_name(name, "upload")
    if Path(base).suffix.lower() not in LOCAL_FORMATS:
        raise InputError(msg("{path}: unknown file type {suffix}; use one of {types}.", path=base,
                             suffix=repr(Path(base).suffix), types=", ".join(LOCAL_FORMATS)))
    folder = (root or cache_dir() / "uploads") / hashlib.sha256(content).hexdigest()[:16]
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / base
    if not target.is_file() or target.read_bytes() != content:
        target.write_bytes(content)
    else:
        os.utime(target)  # used again: young again
    tidy_cache(force=True, keep=folder)
    return target


def split_for_upload(name: str) -> str:
    """The split an uploaded file stands for, from its name: 'dev.tsv' -> 'dev', 'train (2).csv' -> 'train_2'."""
    import re

    stem = Path(Path(name).name).stem
    return re.sub(r"\W+", "_", stem).strip("_") or "train"


def with_data_file(text: str, split: str, path: str) -> str:
    """SPLIT=PATH lines with this split's line replaced (or added at the end)."""
    lines = [line for line in text.splitlines() if line.strip() and line.partition("=")[0].strip() != split]
    return "\n".join(lines + [f"{split}={path}"])


def without_data_files(text: str, paths) -> str:
    """SPLIT=PATH lines without those naming one of `paths` (uploads taken back)."""
    gone = {str(path) for path in paths}
    return "\n".join(line for line in text.splitlines() if line.strip() and line.partition("=")[2].strip() not in gone)


NUMBER = r"^\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*$"


def normalise_text(dataset, task: GlueTask):
    """Text columns read as numbers (every cell digits) become the strings they were written as; other columns that
    are not plain values (objects, lists, JSON cells of mixed types) become their JSON text, which every later step
    can carry (a text column of those stays as read: data.columns names its cells)."""
    import pyarrow as pa

    from datasets import Value

    for column in dataset.column_names:
        kind = dataset.features[column]
        dtype = getattr(kind, "dtype", "") if isinstance(kind, Value) else ""
        if column in task.text_columns and dtype.startswith(("int", "uint", "float", "bool")):
            cells = [None if value is None else str(value) for value in dataset.data.column(column).to_pylist()]
        elif column not in task.text_columns and column != LABEL and not isinstance(kind, Value):
            values = dataset.data.column(column)
            json_text = "json" in str(values.type)
            cells = [None if value is None else value if json_text else json.dumps(value)
                     for value in values.to_pylist()]
        else:
            continue
        dataset = dataset.remove_columns(column).add_column(column, pa.array(cells, pa.string()))
    return dataset


def normalise_labels(dataset, task: GlueTask):
    """Labels as the checks read them: integer ids for classification (names written as text, e.g. 'entailment' as
    in GLUE's own tsv files, become their ids), floats for STS-B.

    A classification label that is empty, not a whole number, or text that is not one of the task's names becomes
    UNUSABLE_LABEL (-2), so data.label_range reports it, and the file's own text of every label is kept in the
    column LABEL_AS_WRITTEN for it to quote; an STS-B score that is empty or not a number becomes NaN.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    if LABEL not in dataset.column_names:
        return dataset
    column = dataset.data.column(LABEL).combine_chunks()
    if column.null_count == 0 and (pa.types.is_integer(column.type) if not task.regression
                                   else pa.types.is_floating(column.type)):
        return dataset  # already what the checks read; out-of-range ids are data.label_range's to report
    if not (pa.types.is_string(column.type) or pa.types.is_large_string(column.type) or pa.types.is_integer(column.type)
            or pa.types.is_floating(column.type) or pa.types.is_boolean(column.type)):
        # Mixed JSON values (numbers and strings), objects or lists: read each as the text it would print as.
        column = pa.array([None if value is None else str(value) for value in column.to_pylist()], pa.string())
    if pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
        stripped = pc.utf8_trim_whitespace(column)
        number = pc.cast(pc.if_else(pc.match_substring_regex(stripped, NUMBER), stripped, None), pa.float64())
        if task.regression:
            labels = number
        else:
            as_name = pc.index_in(stripped, value_set=pa.array(list(task.label_names)))
            labels = pc.coalesce(pc.cast(as_name, pa.float64()), number)
    else:
        labels = pc.cast(column, pa.float64())
    values = labels.to_numpy(zero_copy_only=False).astype(np.float64)  # nulls arrive as NaN
    written = None
    if not task.regression:
        whole = np.isfinite(values) & (np.floor(values) == values)
        values = np.where(whole, values, UNUSABLE_LABEL).astype(np.int64)
        if not whole.all() and LABEL_AS_WRITTEN not in dataset.column_names:
            written = pa.array([None if value is None else str(value) for value in column.to_pylist()], pa.string())
    dataset = dataset.remove_columns(LABEL).add_column(LABEL, values)
    return dataset if written is None else dataset.add_column(LABEL_AS_WRITTEN, written)
