"""Loading: checkpoints (Hub, local `save_pretrained` directories, the offline demo kit) and GLUE splits."""

from __future__ import annotations

import codecs
import contextlib
import functools
import json
import logging
import os
import shutil
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

import numpy as np

from diagnostics.config import limits
from diagnostics.i18n import msg
from diagnostics.config.run import DEMO_CHECKPOINT, DEMO_LEARNING_RATE, RunConfig, is_local_path
from diagnostics.core.errors import InputError, NotClassifierError
from diagnostics.keras.batches import LABEL, LABEL_AS_WRITTEN, SHUFFLED_LABELS_BUG, UNUSABLE_LABEL, shuffled_labels
from diagnostics.config.tasks import TASKS, GlueTask, get_task

DEMO_DATA_DIR = Path(__file__).resolve().parents[1] / "demo_data"
LOCAL_FORMATS = {".csv": "csv", ".tsv": "csv", ".json": "json", ".jsonl": "json", ".parquet": "parquet"}

# The demo checkpoint's shape: a DistilBERT small enough to train on a laptop CPU in seconds, without
# dropout so that memorising one batch (the overfit test) works within 20 epochs from random weights.
# Bump DEMO_VERSION whenever the recipe changes so old cached builds are not reused.
DEMO_VERSION = 2
DEMO_MODEL = {"dim": 128, "n_layers": 2, "n_heads": 4, "hidden_dim": 256, "max_position_embeddings": 128,
              "dropout": 0.0, "attention_dropout": 0.0, "seq_classif_dropout": 0.0}

DEMO_VOCAB_SIZE = 1000
DEMO_SEED = 1234


def cache_dir() -> Path:
    """Where built artifacts live: $DEBUGGER_CACHE_DIR, else ~/.cache/training-pipeline-debugger."""
    root = os.environ.get("DEBUGGER_CACHE_DIR") or Path.home() / ".cache" / "training-pipeline-debugger"
    return Path(root)


# What visitors leave on disk (uploads, the Arrow copies of local data files) is dropped past an age and a size;
# hosted mode keeps less. $DEBUGGER_CACHE_MAX_AGE_S and $DEBUGGER_CACHE_MAX_BYTES set them.
TIDY_FOLDERS = ("uploads", "datasets")
TIDY_EVERY_S = 600.0
_tidied = [0.0]


def tidy_cache(max_age_s: float | None = None, max_bytes: int | None = None, *, now: float | None = None,
               force: bool = False, keep: Path | None = None) -> list[Path]:
    """Drop uploads and Arrow copies older than `max_age_s`, then the oldest until they take at most `max_bytes`
    (defaults: 7 days and 2 GiB; hosted: 1 day and 1 GiB), never `keep` (the upload just written). At most once
    every ten minutes unless `force`.

    Returns:
        the folders and files removed.
    """
    moment = time.time() if now is None else now
    if not force and moment - _tidied[0] < TIDY_EVERY_S:
        return []
    _tidied[0] = moment
    hosted = limits.hosted() is not None
    max_age_s = max_age_s if max_age_s is not None else float(
        os.environ.get("DEBUGGER_CACHE_MAX_AGE_S") or (86400 if hosted else 7 * 86400))
    max_bytes = max_bytes if max_bytes is not None else int(
        os.environ.get("DEBUGGER_CACHE_MAX_BYTES") or (2**30 if hosted else 2 * 2**30))
    items = []  # (last written, bytes, path) of each upload folder and each Arrow copy's top folder
    for name in TIDY_FOLDERS:
        folder = cache_dir() / name
        for item in (folder.iterdir() if folder.is_dir() else ()):
            files = [item] if item.is_file() else [path for path in item.rglob("*") if path.is_file()]
            stats = [path.stat() for path in files]
            items.append((max((stat.st_mtime for stat in stats), default=item.stat().st_mtime),
                          sum(stat.st_size for stat in stats), item))
    removed, total = [], sum(size for _, size, _ in items)
    for written, size, item in sorted(items, key=lambda entry: entry[0]):
        if (moment - written <= max_age_s and total <= max_bytes) or item == keep:
            continue
        shutil.rmtree(item, ignore_errors=True) if item.is_dir() else item.unlink(missing_ok=True)
        removed.append(item)
        total -= size
    return removed


@functools.lru_cache(maxsize=1)
def hub_reachable(timeout: float = 3.0) -> bool:
    """Whether the Hugging Face Hub answers; False at once when HF_HUB_OFFLINE is set."""
    if os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes", "on"):
        return False
    endpoint = os.environ.get("HF_ENDPOINT", "https://huggingface.co").rstrip("/")
    try:
        with urllib.request.urlopen(f"{endpoint}/api/models/distilbert-base-uncased", timeout=timeout):
            return True
    except Exception:
        return False


def resolve_checkpoint(checkpoint: str) -> str:
    """The path or Hub name `from_pretrained` gets; the demo kit is built on first use.

    Raises:
        InputError: a local directory that does not exist or has no config.json.
    """
    if checkpoint == DEMO_CHECKPOINT:
        return str(demo_checkpoint_dir())
    if is_local_path(checkpoint):
        path = Path(checkpoint).expanduser()
        if not path.is_dir():
            raise InputError(msg("Checkpoint directory {checkpoint} does not exist.", checkpoint=checkpoint))
        if not (path / "config.json").is_file():
            raise InputError(msg("{checkpoint} has no config.json, so it was not written by save_pretrained; point at "
                                 "the directory you passed to model.save_pretrained(...).", checkpoint=checkpoint))
        return str(path)
    return checkpoint


def _from_pretrained(loader, checkpoint: str, **kwargs):
    """Call a `from_pretrained`, turning 'cannot find or reach it' into an InputError."""
    path = resolve_checkpoint(checkpoint)
    if not is_local_path(path) and not hub_reachable():
        # Only the local Hugging Face cache can serve it; without this, each file retries for ~20 s.
        kwargs["local_files_only"] = True
    try:
        return loader.from_pretrained(path, trust_remote_code=False, **kwargs)
    except (OSError, EnvironmentError) as exc:
        hint = "" if hub_reachable() or is_local_path(checkpoint) else msg(
            " The Hugging Face Hub cannot be reached from here: use a local directory or the demo kit ('demo').")
        reason = str(exc).splitlines()[0]
        raise InputError(
            msg("Cannot load directory {checkpoint}: {reason}{hint}", checkpoint=repr(checkpoint), reason=reason,
                hint=hint) if is_local_path(checkpoint) else
            msg("Cannot load Hub checkpoint {checkpoint}: {reason}{hint}", checkpoint=repr(checkpoint), reason=reason,
                hint=hint)) from exc
    except ValueError as exc:
        if "custom code" in str(exc) or "trust_remote_code" in str(exc):
            raise InputError(msg("{checkpoint} needs its own Python code to load; this app never runs a checkpoint's "
                                 "code (trust_remote_code stays off). Use a checkpoint of a Transformers architecture.",
                                 checkpoint=repr(checkpoint))) from exc
        raise


def refuse_oversized(checkpoint: str) -> None:
    """In hosted mode, refuse a checkpoint past the parameter cap from its config alone (config.json, a few hundred
    bytes), before its tokenizer or weights are fetched.

    Raises:
        InputError: naming the checkpoint's estimated size and the cap.
    """
    if limits.hosted() is not None:
        from transformers import AutoConfig

        _refuse_size(checkpoint, estimated_parameters(_from_pretrained(AutoConfig, checkpoint)))


def load_tokenizer(checkpoint: str):
    """The checkpoint's tokenizer, through `AutoTokenizer.from_pretrained` (in hosted mode, after its size is
    checked from its config)."""
    from transformers import AutoTokenizer

    refuse_oversized(checkpoint)
    try:
        return _from_pretrained(AutoTokenizer, checkpoint)
    except InputError:
        raise
    except ValueError as exc:
        raise InputError(msg("Cannot load a tokenizer from {checkpoint}: {reason}", checkpoint=repr(checkpoint),
                             reason=str(exc).splitlines()[0])) from exc


_LOAD_LOCK = threading.Lock()


def load_model(checkpoint: str, num_labels: int, seed: int = 0):
    """A fresh sequence-classification model, as `TFAutoModelForSequenceClassification.from_pretrained`.

    The random seed is set first so a newly initialised head is the same on every load.

    Raises:
        InputError: the checkpoint cannot be found, or has no sequence-classification head class.
    """
    import tf_keras
    from transformers import TFAutoModelForSequenceClassification

    refuse_oversized(checkpoint)  # before its weights are downloaded
    try:
        with _LOAD_LOCK:  # the seed is process-wide: two loads at once would draw each other's head weights
            tf_keras.utils.set_random_seed(seed)
            model = _from_pretrained(TFAutoModelForSequenceClassification, checkpoint, num_labels=num_labels)
    except InputError:
        raise
    except ValueError as exc:
        raise NotClassifierError(
            f"{checkpoint!r} has no TensorFlow sequence-classification model: {str(exc).splitlines()[0]}"
        ) from exc
    if limits.hosted() is not None:
        _refuse_size(checkpoint, model.count_params())
    return model


def _refuse_size(checkpoint: str, parameters: int) -> None:
    problem = limits.parameters_problem(checkpoint, parameters)
    if problem:
        raise InputError(msg("{problem}.", problem=problem))


def validate_for_tokenizer(config: RunConfig, tokenizer) -> None:
    """Settings that only the checkpoint can rule out: a max length beyond its position embeddings.

    Raises:
        InputError: naming the limit.
    """
    limit = getattr(tokenizer, "model_max_length", None)
    # Tokenizers without a limit report a huge sentinel (int(1e30)).
    if limit and limit < 1_000_000 and config.max_length > limit:
        raise InputError(msg("max length {length} is beyond this checkpoint's limit of {limit} tokens (its position "
                             "embeddings); use at most {limit}.", length=config.max_length, limit=limit))


def demo_texts() -> list[str]:
    """Every text of the bundled samples, in a fixed order (the demo tokenizer is trained on them)."""
    texts: list[str] = []
    for name, task in TASKS.items():
        for split in task.splits:
            with open(DEMO_DATA_DIR / name / f"{split}.jsonl") as handle:
                rows = [json.loads(line) for line in handle]
            texts.extend(row[column] for row in rows for column in task.text_columns)
    return texts


def demo_checkpoint_dir() -> Path:
    """The offline demo checkpoint's directory, built deterministically on first use.

    A WordPiece tokenizer is trained on the bundled samples and a small DistilBERT is built
    from a fixed seed, both written with `save_pretrained`. Building goes to a temporary
    directory that is renamed into place, so concurrent first uses never see half a checkpoint.
    """
    target = cache_dir() / f"demo-distilbert-v{DEMO_VERSION}"
    if (target / "config.json").is_file() and (target / "tokenizer_config.json").is_file():
        return target
    return build_directory(target, _build_demo_checkpoint)


def build_directory(target: Path, build) -> Path:
    """`build(staging)` fills a temporary directory that is then renamed to `target`, so concurrent first uses
    never see half a checkpoint; when another process got there first, its copy is kept."""
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix="build-", dir=target.parent))
    try:
        build(staging)
        try:
            staging.rename(target)
        except OSError:
            if not (target / "config.json").is_file():
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


def _build_demo_checkpoint(directory: Path) -> None:
    import tf_keras
    from transformers import DistilBertConfig, DistilBertTokenizerFast, TFDistilBertModel

    (directory / "vocab.txt").write_text("\n".join(demo_vocabulary(demo_texts())) + "\n")
    tokenizer = DistilBertTokenizerFast(
        vocab_file=str(directory / "vocab.txt"), model_max_length=DEMO_MODEL["max_position_embeddings"]
    )
    tokenizer.save_pretrained(str(directory))

    tf_keras.utils.set_random_seed(DEMO_SEED)
    config = DistilBertConfig(vocab_size=len(tokenizer), demo_kit=True,
                              demo_kit_learning_rate=DEMO_LEARNING_RATE, **DEMO_MODEL)
    model = TFDistilBertModel(config)
    model(model.dummy_inputs)
    model.save_pretrained(str(directory))
    (directory / "DEMO_KIT.json").write_text(json.dumps({
        "what": "Offline demo checkpoint of the Training Pipeline Debugger (random weights, not pretrained)",
        "version": DEMO_VERSION,
        "model": DEMO_MODEL,
        "seed": DEMO_SEED,
        "learning_rate": DEMO_LEARNING_RATE,
    }, indent=2))


def demo_vocabulary(texts: list[str], size: int = DEMO_VOCAB_SIZE) -> list[str]:
    """A WordPiece vocabulary for the demo tokenizer: special tokens, every character (alone and as a
    continuation piece), then whole words by frequency. Sorted explicitly, so the build is reproducible
    (the `tokenizers` WordPiece trainer breaks frequency ties differently from run to run)."""
    from collections import Counter

    from tokenizers.normalizers import BertNormalizer
    from tokenizers.pre_tokenizers import BertPreTokenizer

    normalizer, splitter = BertNormalizer(lowercase=True), BertPreTokenizer()
    words: Counter[str] = Counter()
    for text in texts:
        words.update(piece for piece, _ in splitter.pre_tokenize_str(normalizer.normalize_str(text)))
    characters = sorted({char for word in words for char in word})
    vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + characters + [f"##{c}" for c in characters]
    ranked = sorted((word for word in words if len(word) > 1), key=lambda word: (-words[word], word))
    return vocabulary + ranked[: max(0, size - len(vocabulary))]


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


UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")


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
                           line=line, bad=bad, command=f"`iconv -f latin1 -t utf-8 {file.name} > utf8-{file.name}`")
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
    if builder != "parquet":
        with file.open("rb") as handle:
            start = handle.read(2)
        if start in UTF16_BOMS:
            options["encoding"] = "utf-16"
        elif problem := _encoding_problem(file):
            raise InputError(msg("Could not read {path}: {problem}.", path=path, problem=problem))
    try:
        with _quiet_datasets():
            dataset = load_dataset(builder, data_files=str(file), split="train",
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


def estimated_parameters(config) -> int:
    """A transformer's parameter count from its config alone, before any weights are downloaded.

    Embeddings plus, for each layer, attention (4·h²) and the feed-forward block (2·h·ffn). Within a
    few percent for BERT-style encoders; the exact count is checked again once the model is built.
    """
    hidden, layers, _ = config_size(config)
    ffn = _first(config, "intermediate_size", "hidden_dim", "d_ff", "n_inner") or 4 * hidden
    vocab = getattr(config, "vocab_size", 0) or 0
    positions = _first(config, "max_position_embeddings", "n_positions") or 0
    return int((vocab + positions) * hidden + layers * (4 * hidden * hidden + 2 * hidden * ffn))


def config_size(config) -> tuple[int, int, int]:
    """(hidden size, layers, heads) under the names BERT-, DistilBERT- and GPT-style configs use."""
    hidden = _first(config, "hidden_size", "dim", "d_model", "n_embd") or 0
    layers = _first(config, "num_hidden_layers", "n_layers", "num_layers", "n_layer") or 0
    heads = _first(config, "num_attention_heads", "n_heads", "n_head") or 1
    return int(hidden), int(layers), int(heads)


def _first(config, *names):
    return next((getattr(config, name) for name in names if getattr(config, name, None)), None)
