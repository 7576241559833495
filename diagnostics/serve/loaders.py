"""The loaders shared by every session of a process: tokenizers, splits, models and run contexts, each read-only
(checks train copies), and whether the Hugging Face Hub can be reached. They are kept by `serve.memo`, not
`st.cache_resource`, which any client's "clear cache" message empties for everyone. The app's server and each of
its worker processes (`serve.worker`) have their own."""

from __future__ import annotations

import diagnostics  # noqa: E402
diagnostics.own_process()  # Keras 2 for tf.keras, quiet libraries, before TensorFlow loads
from diagnostics.keras import loading
from diagnostics.keras.data_files import load_split
from diagnostics.config.run import RunConfig
from diagnostics.core.context import RunContext
from diagnostics.core.libraries import import_libraries
from diagnostics.serve.memo import kept


@kept()
def hub_reachable() -> bool:
    return loading.hub_reachable()


# Tokenizers kept, by their files' bytes in hosted mode (about 7.5 bytes of memory a byte of file): 32 MiB of files
# is about 240 MiB of memory, however many checkpoints visitors name.
TOKENIZER_CACHE_BYTES = 32 << 20


@kept(max_entries=8, max_bytes=TOKENIZER_CACHE_BYTES, weigh=loading.tokenizer_bytes)
def cached_tokenizer(checkpoint: str):
    """Shared by every session; read-only."""
    return loading.load_tokenizer(checkpoint)


@kept(max_entries=16)
def cached_split(task: str, split: str, data_source: str, data_files: tuple, shuffle_labels: bool, seed: int,
                 data_stamp: tuple = ()):
    """Shared by every session; datasets are immutable (select/map return new objects). Local files are kept by
    path, size and modification time (`data_stamp`): an edited file is read again."""
    return load_split(RunConfig(task=task, split=split, data_source=data_source, data_files=data_files,
                                        shuffle_labels=shuffle_labels, seed=seed))


@kept(max_entries=4)
def cached_model(checkpoint: str, num_labels: int, seed: int):
    """Shared by every session and never trained, compiled or given new weights: checks work on copies."""
    return loading.load_model(checkpoint, num_labels, seed)


@kept(max_entries=16)
def open_run(config: RunConfig) -> RunContext:
    """The run context of a configuration, shared by every page and session: its first batch and training batches
    are built once; its model comes from the shared cache and is never trained (checks train copies)."""
    tokenizer, split = load_inputs(config)
    return RunContext(config, tokenizer, split, cached_model)


def load_inputs(config: RunConfig):
    """The tokenizer and split of a configuration, from the shared caches."""
    import_libraries()  # the first page of the server's process pays TensorFlow's import here, collector paused
    tokenizer = cached_tokenizer(config.checkpoint)
    split = cached_split(config.task, config.split, config.data_source, config.data_files, config.shuffle_labels,
                         config.seed, config.data_stamp)
    loading.validate_for_tokenizer(config, tokenizer)
    return tokenizer, split
