"""The app's loaders, shared by every session of the server (`diagnostics.serve.loaders`)."""

from diagnostics.serve.loaders import (TOKENIZER_CACHE_BYTES, cached_model, cached_split, cached_tokenizer,  # noqa: F401
                                       hub_reachable, load_inputs, open_run)
