"""Hosted mode's refusals of a checkpoint, each made from its small files before anything is built: files too large
to parse, a tokenizer config naming a file outside its repository, more parameters than the cap, or a training
run that would need more memory than the cap. Off hosted mode, none applies: a laptop is its owner's to fill, and
model.memory says whether training fits."""

from __future__ import annotations

import json
import os
from pathlib import Path

from diagnostics.config import limits
from diagnostics.config.run import DEMO_CHECKPOINT, RunConfig, is_local_path
from diagnostics.core.errors import InputError
from diagnostics.i18n import msg
from diagnostics.keras import loading
from diagnostics.keras.parameters import COUNTERS, counted_parameters, training_bytes


# A real checkpoint's config.json or tokenizer_config.json holds a few kilobytes; one of 121 MiB (three million
# labels) took a hosted server to 3,400 MiB and stalled every visitor for up to 36 s while it was parsed.
MAX_CONFIG_FILE_BYTES = 1 << 20
_REFUSED: dict[str, InputError] = {}  # hosted mode's refusals of a checkpoint's own files, said again without a look
_MAX_REFUSED = 256


def _config_file_bytes(checkpoint: str, filename: str) -> int | None:
    """The size of one of the checkpoint's files before it is read: on disk for a directory or the local Hub cache,
    else from the Hub's answer to a HEAD request; None when the checkpoint has no such file."""
    if is_local_path(checkpoint):
        path = Path(loading.resolve_checkpoint(checkpoint)) / filename
        return path.stat().st_size if path.is_file() else None
    from huggingface_hub import get_hf_file_metadata, hf_hub_url, try_to_load_from_cache

    cached = try_to_load_from_cache(checkpoint, filename)
    if isinstance(cached, str):
        return os.path.getsize(cached)
    if not loading.hub_reachable():
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
        path = Path(loading.resolve_checkpoint(checkpoint)) / filename
    else:
        from huggingface_hub import hf_hub_download

        path = Path(hf_hub_download(checkpoint, filename, local_files_only=not loading.hub_reachable()))
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
        config = loading.loaded_from(AutoConfig, checkpoint)
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
    model_config = loading.loaded_from(AutoConfig, config.checkpoint)
    parameters = counted_parameters(model_config, config.effective_num_labels) or 0
    hidden, layers, heads = loading.config_size(model_config)
    need = sum(training_bytes(parameters, hidden, layers, heads, config.batch_size, config.max_length))
    if need > hosted.max_training_gib * 2**30:
        raise InputError(msg("Training {checkpoint} at batch size {batch} and max length {length} needs about "
                             "{need:.1f} GiB ({layers} layers, {heads} attention heads); hosted mode caps a run at "
                             "{cap:g} GiB. Lower the batch size or max length, or pick a smaller checkpoint.",
                             checkpoint=repr(config.checkpoint), batch=config.batch_size, length=config.max_length,
                             need=need / 2**30, layers=layers, heads=heads, cap=hosted.max_training_gib))
