"""Loading: checkpoints (Hub, local `save_pretrained` directories, the offline demo kit) and GLUE splits."""

from __future__ import annotations

import functools
import json
import os
import shutil
import tempfile
import threading
import urllib.request
from pathlib import Path

from diagnostics.config import limits
from diagnostics.keras.disk import (  # noqa: F401 (re-exported: where built artifacts live, and their tidying)
    TIDY_EVERY_S, TIDY_FOLDERS, cache_dir, hub_cache_dir, tidy_cache, tidy_cache_in_background)
from diagnostics.keras.parameters import COUNTERS, counted_parameters, training_bytes
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
    """Call a `from_pretrained`, turning 'cannot find or reach it' into an InputError; in hosted mode, what it
    downloaded is counted against the cache's bound at once (`disk.tidy_after_download`)."""
    try:
        return _loaded_from(loader, checkpoint, **kwargs)
    finally:
        if not is_local_path(checkpoint):
            from diagnostics.keras.disk import tidy_after_download

            tidy_after_download()


def _loaded_from(loader, checkpoint: str, **kwargs):
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


# A real checkpoint's config.json or tokenizer_config.json holds a few kilobytes; one of 121 MiB (three million
# labels) took a hosted server to 3,400 MiB and stalled every visitor for up to 36 s while it was parsed.
MAX_CONFIG_FILE_BYTES = 1 << 20
# The files a tokenizer reads besides its config, and the most hosted mode lets one hold: the largest of a real
# classifier's is XLM-RoBERTa-large's tokenizer.json, 17 MB; eight checkpoints each with a 65 MiB one took a hosted
# server from 761 to 4,644 MiB (about 7.5 bytes of memory a byte of file), with health answering in up to 12.3 s.
TOKENIZER_FILES = ("tokenizer.json", "vocab.txt", "vocab.json", "merges.txt", "spiece.model", "sentencepiece.bpe.model",
                   "spm.model", "tokenizer.model", "special_tokens_map.json", "added_tokens.json")
MAX_TOKENIZER_FILE_BYTES = 24 << 20
TOKENIZER_BYTES: dict[str, int] = {}  # each checkpoint's tokenizer files' bytes, as hosted mode measured them
_REFUSED: dict[str, InputError] = {}  # hosted mode's refusals of a checkpoint's own files, said again without a look
_MAX_REFUSED = 256


def _config_file_bytes(checkpoint: str, filename: str) -> int | None:
    """The size of one of the checkpoint's files before it is read: on disk for a directory or the local Hub cache,
    else from the Hub's answer to a HEAD request; None when the checkpoint has no such file."""
    if is_local_path(checkpoint):
        path = Path(resolve_checkpoint(checkpoint)) / filename
        return path.stat().st_size if path.is_file() else None
    from huggingface_hub import get_hf_file_metadata, hf_hub_url, try_to_load_from_cache

    cached = try_to_load_from_cache(checkpoint, filename)
    if isinstance(cached, str):
        return os.path.getsize(cached)
    if not hub_reachable():
        return None
    try:
        return get_hf_file_metadata(hf_hub_url(checkpoint, filename), timeout=10).size
    except Exception:  # noqa: BLE001 - no such file, or no such checkpoint: from_pretrained says which
        return None


def _read_config_file(checkpoint: str, filename: str) -> dict | None:
    """One of the checkpoint's small JSON files, read after its size is known to be small; None when absent."""
    size = _config_file_bytes(checkpoint, filename)
    if size is None:
        return None
    if size > MAX_CONFIG_FILE_BYTES:
        raise InputError(msg("{checkpoint}'s {file} holds {size:,} bytes; hosted mode reads at most {cap:,} from it "
                             "(a real checkpoint's holds a few thousand).", checkpoint=repr(checkpoint), file=filename,
                             size=size, cap=MAX_CONFIG_FILE_BYTES))
    if is_local_path(checkpoint):
        path = Path(resolve_checkpoint(checkpoint)) / filename
    else:
        from huggingface_hub import hf_hub_download

        path = Path(hf_hub_download(checkpoint, filename, local_files_only=not hub_reachable()))
    try:
        data = json.loads(path.read_bytes()[:MAX_CONFIG_FILE_BYTES + 1])
    except ValueError as exc:
        raise InputError(msg("{checkpoint}'s {file} is not JSON: {reason}", checkpoint=repr(checkpoint),
                             file=filename, reason=str(exc).splitlines()[0])) from exc
    return data if isinstance(data, dict) else None


# A tokenizer_config.json field naming a file: from_pretrained reads it as a path when it is one.
_FILE_FIELDS = ("_file", "_path", "_dir", "_directory")


def refuse_hosted_files(checkpoint: str) -> None:
    """In hosted mode, before anything of the checkpoint is parsed: its config.json and tokenizer_config.json must
    be small, and no field of its tokenizer config may name a file outside its repository (a Hub tokenizer config
    whose `vocab_file` named a path of this machine was read in hosted mode, a line of that file shown as a token,
    and existing and missing paths answered differently). A refusal is remembered for the checkpoint and said again
    at once, so a visitor asking again costs nothing.

    Raises:
        InputError: naming the file and what is wrong with it.
    """
    if limits.hosted() is None or checkpoint == DEMO_CHECKPOINT:
        return
    if checkpoint in _REFUSED:
        raise _REFUSED[checkpoint]
    try:
        _read_config_file(checkpoint, "config.json")
        tokenizer_config = _read_config_file(checkpoint, "tokenizer_config.json") or {}
        if checkpoint not in TOKENIZER_BYTES:  # sized once: a Hub checkpoint's missing files cost a request each
            TOKENIZER_BYTES[checkpoint] = _tokenizer_files_bytes(checkpoint)
        while len(TOKENIZER_BYTES) > _MAX_REFUSED:
            TOKENIZER_BYTES.pop(next(iter(TOKENIZER_BYTES)))
        for key, value in tokenizer_config.items():
            if isinstance(value, str) and key.endswith(_FILE_FIELDS) and (
                    os.path.isabs(value) or value.startswith("~") or ".." in Path(value).parts or "\\" in value):
                raise InputError(msg("{checkpoint}'s tokenizer_config.json names a file outside its repository "
                                     "({key}); hosted mode never reads one.", checkpoint=repr(checkpoint), key=key))
    except InputError as exc:
        if len(_REFUSED) >= _MAX_REFUSED:
            _REFUSED.pop(next(iter(_REFUSED)))
        _REFUSED[checkpoint] = exc
        raise


def _tokenizer_files_bytes(checkpoint: str) -> int:
    """The bytes of the checkpoint's tokenizer files, each read from its size before any is parsed.

    Raises:
        InputError: one is larger than `MAX_TOKENIZER_FILE_BYTES`.
    """
    total = 0
    for filename in TOKENIZER_FILES:
        size = _config_file_bytes(checkpoint, filename) or 0
        if size > MAX_TOKENIZER_FILE_BYTES:
            raise InputError(msg("{checkpoint}'s {file} holds {size:,} bytes; hosted mode reads at most {cap:,} from "
                                 "a tokenizer's file (the largest of a real classifier's holds about 17 million).",
                                 checkpoint=repr(checkpoint), file=filename, size=size,
                                 cap=MAX_TOKENIZER_FILE_BYTES))
        total += size
    return total


def tokenizer_bytes(checkpoint: str) -> int:
    """What a loaded tokenizer weighs in a cache bounded by bytes: its files' bytes where hosted mode measured them
    (`TOKENIZER_BYTES`), else one byte (a laptop's caches count entries)."""
    return TOKENIZER_BYTES.get(checkpoint, 1)


def refuse_oversized(checkpoint: str, num_labels: int | None = None) -> None:
    """In hosted mode, refuse a checkpoint past the parameter cap from its config alone (config.json, a few hundred
    bytes), counted for every field that sizes a weight before its tokenizer, its weights or any variable exist; an
    architecture the count does not know is refused rather than built to find out.

    Raises:
        InputError: naming the checkpoint's size and the cap, or the architecture that cannot be counted.
    """
    if limits.hosted() is not None:
        from transformers import AutoConfig

        refuse_hosted_files(checkpoint)
        config = loaded_from(AutoConfig, checkpoint)
        parameters = counted_parameters(config, num_labels)
        if parameters is None:
            raise InputError(msg("Hosted mode counts a checkpoint's parameters from its config before building it, and "
                                 "cannot count {checkpoint} (model type {kind}): it counts {kinds}.",
                                 checkpoint=repr(checkpoint), kind=repr(getattr(config, "model_type", None)),
                                 kinds=", ".join(COUNTERS)))
        refuse_size(checkpoint, parameters)


def refuse_size(checkpoint: str, parameters: int) -> None:
    problem = limits.parameters_problem(checkpoint, parameters)
    if problem:
        raise InputError(msg("{problem}.", problem=problem))


def refuse_costly(config: RunConfig) -> None:
    """In hosted mode, refuse a configuration whose training would need more memory than the cap, estimated from
    the checkpoint's config before anything is built: its layers (every one, shared weights or not), heads and
    width, at the configured batch size and max length. A parameter count under the cap says little of this: ALBERT
    at 96 layers has 4.9M parameters and took 5,960 MiB, BERT-base with 768 heads 8,051 MiB.

    Raises:
        InputError: naming the estimate, the cap and what to lower.
    """
    hosted = limits.hosted()
    if hosted is None or config.checkpoint == DEMO_CHECKPOINT:
        return
    from transformers import AutoConfig

    refuse_hosted_files(config.checkpoint)
    model_config = loaded_from(AutoConfig, config.checkpoint)
    parameters = counted_parameters(model_config, config.effective_num_labels) or 0
    hidden, layers, heads, width = config_size(model_config)
    need = sum(training_bytes(parameters, hidden, layers, heads, config.batch_size, config.max_length,
                              intermediate=width))
    if need > hosted.max_training_gib * 2**30:
        raise InputError(msg("Training {checkpoint} at batch size {batch} and max length {length} needs about "
                             "{need:.1f} GiB ({layers} layers, {heads} attention heads); hosted mode caps a run at "
                             "{cap:g} GiB. Lower the batch size or max length, or pick a smaller checkpoint.",
                             checkpoint=repr(config.checkpoint), batch=config.batch_size, length=config.max_length,
                             need=need / 2**30, layers=layers, heads=heads, cap=hosted.max_training_gib))


def load_tokenizer(checkpoint: str):
    """The checkpoint's tokenizer, through `AutoTokenizer.from_pretrained` (in hosted mode, after its size is
    checked from its config)."""
    from transformers import AutoTokenizer

    refuse_oversized(checkpoint)
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

    refuse_oversized(checkpoint, num_labels)  # before its weights are downloaded or any variable exists
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
        refuse_size(checkpoint, model.count_params())
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
    refuse_costly(config)


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


def config_size(config) -> tuple[int, int, int, int | None]:
    """(hidden size, layers applied, heads, feed-forward width or None) under the names BERT-, DistilBERT- and
    GPT-style configs use; ALBERT applies each of its layers' `inner_group_num` inner layers in turn (8 of them:
    estimated at 2.69 GiB from its layers alone, killed at 5 GiB)."""
    hidden = _first(config, "hidden_size", "dim", "d_model", "n_embd") or 0
    layers = _first(config, "num_hidden_layers", "n_layers", "num_layers", "n_layer") or 0
    heads = _first(config, "num_attention_heads", "n_heads", "n_head") or 1
    width = _first(config, "intermediate_size", "hidden_dim", "d_ff", "n_inner", "ffn_dim")
    inner = getattr(config, "inner_group_num", None) or 1
    return int(hidden), int(layers) * max(1, int(inner)), int(heads), int(width) if width else None


def _first(config, *names):
    return next((getattr(config, name) for name in names if getattr(config, name, None)), None)
