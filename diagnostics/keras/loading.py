"""Loading: checkpoints (Hub, local `save_pretrained` directories, the offline demo kit) and GLUE splits."""

from __future__ import annotations


import functools
import json
import os
import shutil
import tempfile
import threading
import time
import urllib.request
from pathlib import Path


from diagnostics.config import limits
from diagnostics.i18n import msg
from diagnostics.config.run import DEMO_CHECKPOINT, DEMO_LEARNING_RATE, RunConfig, is_local_path
from diagnostics.core.errors import InputError, NotClassifierError
from diagnostics.config.tasks import TASKS


DEMO_DATA_DIR = Path(__file__).resolve().parents[1] / "demo_data"


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
    every ten minutes unless `force`. In hosted mode the Hub's cache of checkpoints and datasets counts too, each
    repository by its last download, dropped only to keep the total under `max_bytes` (eight distinct checkpoints
    a visitor asked for grew it from 88 to 700 MiB, with nothing to tidy it); a checkpoint dropped is downloaded
    again by the next visitor who asks for it.

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
    # (last written, bytes, path, whether age alone drops it) of each upload folder, Arrow copy and Hub repository
    items = [(*_written_and_size(item), item, True) for name in TIDY_FOLDERS
             for item in _children(cache_dir() / name)]
    if hosted:
        items += [(*_written_and_size(item), item, False) for item in _children(hub_cache_dir())
                  if item.name.startswith(("models--", "datasets--"))]
    removed, total = [], sum(size for _, size, _, _ in items)
    for written, size, item, ages in sorted(items, key=lambda entry: entry[0]):
        if ((not ages or moment - written <= max_age_s) and total <= max_bytes) or item == keep:
            continue
        shutil.rmtree(item, ignore_errors=True) if item.is_dir() else item.unlink(missing_ok=True)
        removed.append(item)
        total -= size
    return removed


def _children(folder: Path) -> list[Path]:
    return list(folder.iterdir()) if folder.is_dir() else []


def _written_and_size(item: Path) -> tuple[float, int]:
    """When anything under `item` was last written, and the bytes its files take (a link counted once, as the Hub
    cache's snapshots link to its blobs)."""
    files = [item] if item.is_file() else [path for path in item.rglob("*") if path.is_file() and not path.is_symlink()]
    stats = [path.stat() for path in files]
    return max((stat.st_mtime for stat in stats), default=item.stat().st_mtime), sum(stat.st_size for stat in stats)


def hub_cache_dir() -> Path:
    """Where `from_pretrained` and `load_dataset` keep what they download from the Hub."""
    from huggingface_hub import constants

    return Path(constants.HF_HUB_CACHE)


def tidy_cache_in_background() -> threading.Thread | None:
    """`tidy_cache()` on a thread of its own, so that no page waits while a large cache is listed (0.4 s for this
    machine's, of some 1,300 entries); None when it ran in the last ten minutes. A file another session removes
    while it lists them ends this tidying quietly; the next one goes on."""
    if time.time() - _tidied[0] < TIDY_EVERY_S:
        return None

    def tidy() -> None:
        try:
            tidy_cache()
        except OSError:
            pass

    thread = threading.Thread(target=tidy, name="debugger-tidy-cache", daemon=True)
    thread.start()
    return thread


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


def loaded_from(loader, checkpoint: str, **kwargs):
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


def load_tokenizer(checkpoint: str):
    """The checkpoint's tokenizer, through `AutoTokenizer.from_pretrained` (in hosted mode, after its size is
    checked from its config)."""
    from transformers import AutoTokenizer

    from diagnostics.keras import refusals

    refusals.refuse_oversized(checkpoint)
    try:
        return loaded_from(AutoTokenizer, checkpoint)
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

    from diagnostics.keras import refusals

    refusals.refuse_oversized(checkpoint, num_labels)  # before its weights are downloaded or any variable exists
    try:
        with _LOAD_LOCK:  # the seed is process-wide: two loads at once would draw each other's head weights
            tf_keras.utils.set_random_seed(seed)
            model = loaded_from(TFAutoModelForSequenceClassification, checkpoint, num_labels=num_labels)
    except InputError:
        raise
    except ValueError as exc:
        raise NotClassifierError(
            f"{checkpoint!r} has no TensorFlow sequence-classification model: {str(exc).splitlines()[0]}"
        ) from exc
    if limits.hosted() is not None:
        refusals.refuse_size(checkpoint, model.count_params())
    return model


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
    from diagnostics.keras import refusals

    refusals.refuse_costly(config)


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


UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")


def config_size(config) -> tuple[int, int, int]:
    """(hidden size, layers, heads) under the names BERT-, DistilBERT- and GPT-style configs use."""
    hidden = _first(config, "hidden_size", "dim", "d_model", "n_embd") or 0
    layers = _first(config, "num_hidden_layers", "n_layers", "num_layers", "n_layer") or 0
    heads = _first(config, "num_attention_heads", "n_heads", "n_head") or 1
    return int(hidden), int(layers), int(heads)


def _first(config, *names):
    return next((getattr(config, name) for name in names if getattr(config, name, None)), None)
