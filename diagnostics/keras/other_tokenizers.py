"""Tokenizers the user did not build with Transformers, or did not give at all: one of the `tokenizers` library read
through a Transformers fast tokenizer over a copy of it, a KerasHub (or KerasNLP) WordPiece tokenizer read through one
built on its vocabulary, and the stand-in that shows token ids when no tokenizer is
given or found (the checks that read text skip on it: runner need "decodes")."""

from __future__ import annotations

import functools


# The special tokens a tokenizer of the `tokenizers` library may hold, by role, in the spellings of BERT's WordPiece
# and of BPE vocabularies.
SPECIAL_SPELLINGS = {"pad_token": ("[PAD]", "<pad>"), "unk_token": ("[UNK]", "<unk>"), "cls_token": ("[CLS]", "<s>"),
                     "sep_token": ("[SEP]", "</s>"), "mask_token": ("[MASK]", "<mask>")}


def from_tokenizers_library(value):
    """A tokenizer of the `tokenizers` library (a `Tokenizer`, or an implementation around one such as
    `BertWordPieceTokenizer`) as a Transformers fast tokenizer over a copy of it, its special tokens those its
    vocabulary holds (the padding token its `enable_padding` set first); None for anything else. The script's own
    tokenizer is not changed."""
    try:
        from tokenizers import Tokenizer
    except ImportError:
        return None
    raw = value if isinstance(value, Tokenizer) else getattr(value, "_tokenizer", None)
    if not isinstance(raw, Tokenizer):
        return None
    from transformers import PreTrainedTokenizerFast

    vocabulary = raw.get_vocab()
    padding = raw.padding or {}
    specials = {}
    for role, spellings in SPECIAL_SPELLINGS.items():
        chosen = [padding.get("pad_token")] if role == "pad_token" else []
        found = next((token for token in [*chosen, *spellings] if token in vocabulary), None)
        if found is not None:
            specials[role] = found
    return PreTrainedTokenizerFast(tokenizer_object=raw, **specials)  # it tokenizes with a deep copy of `raw`


# The modules of the libraries whose tokenizers `adapted` reads.
OTHER_LIBRARIES = ("tokenizers", "keras_hub", "keras_nlp")


def adapted(value):
    """A tokenizer of another library as a Transformers fast tokenizer (`from_tokenizers_library`,
    `from_keras_hub`); None for anything it cannot read."""
    module = type(value).__module__
    if module.startswith("tokenizers"):
        return from_tokenizers_library(value)
    if module.startswith(("keras_hub", "keras_nlp")):
        return from_keras_hub(value)
    return None


def from_keras_hub(value):
    """A KerasHub (or KerasNLP) `WordPieceTokenizer` as a Transformers fast tokenizer over its own vocabulary, its
    lowercasing and accent stripping, and no special tokens added (KerasHub's tokenizer adds none; a preprocessor
    layer adds them in the model); None for its other tokenizers (byte-pair, SentencePiece), whose text is then shown
    as token ids."""
    if "WordPiece" not in type(value).__name__ or not hasattr(value, "get_vocabulary"):
        return None
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers

    vocabulary = {token: index for index, token in enumerate(value.get_vocabulary())}
    unknown = getattr(value, "oov_token", None) or "[UNK]"
    if unknown not in vocabulary:
        return None
    raw = Tokenizer(models.WordPiece(vocab=vocabulary, unk_token=unknown,
                                     continuing_subword_prefix=getattr(value, "suffix_indicator", None) or "##"))
    raw.normalizer = normalizers.BertNormalizer(lowercase=bool(getattr(value, "lowercase", False)),
                                                strip_accents=bool(getattr(value, "strip_accents", False)))
    raw.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    return from_tokenizers_library(raw)


# The most token ids a stand-in tokenizer names (a model's vocabulary beyond it is read as unknown ids).
MAX_STAND_IN_VOCABULARY = 300_000


def token_ids_tokenizer(vocabulary_size: int | None, pad_token_id: int | None):
    """A stand-in for a tokenizer nobody gave and none loads: it decodes each id as itself ("[101] [2023]"), so
    rows are shown and compared as token ids and never as text; its padding token is the model's own
    `pad_token_id` where its config has one. `is_token_ids(tokenizer)` tells it apart, and the checks that read
    text skip with that reason (runner need "decodes")."""
    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel
    from tokenizers.pre_tokenizers import WhitespaceSplit

    size = min(int(vocabulary_size or 0) or 2 ** 16, MAX_STAND_IN_VOCABULARY)
    vocabulary = {f"[{index}]": index for index in range(size)}
    vocabulary["[?]"] = size  # an id beyond the vocabulary
    raw = Tokenizer(WordLevel(vocabulary, unk_token="[?]"))
    raw.pre_tokenizer = WhitespaceSplit()
    pad = f"[{pad_token_id}]" if pad_token_id is not None and 0 <= int(pad_token_id) < size else None
    return _token_ids_class()(tokenizer_object=raw, unk_token="[?]", pad_token=pad)


def is_token_ids(tokenizer) -> bool:
    """Whether this tokenizer is the stand-in that shows token ids (`token_ids_tokenizer`)."""
    return isinstance(tokenizer, _token_ids_class())


@functools.cache
def _token_ids_class():
    """The stand-in's class, made on first use (Transformers is imported late)."""
    from transformers import PreTrainedTokenizerFast

    class TokenIdsTokenizer(PreTrainedTokenizerFast):
        """Token ids shown as themselves (see `token_ids_tokenizer`)."""

        model_input_names = ["input_ids", "attention_mask"]

    return TokenIdsTokenizer
