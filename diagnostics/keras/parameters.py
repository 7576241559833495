"""A checkpoint's parameter count from its config alone, before any weight or variable exists: every field that
sizes a weight of its TensorFlow sequence-classification model, counted the way the model builds it.

Only the architectures counted here can be counted; for any other the count is None, and hosted mode refuses the
checkpoint rather than build it to find out (`loading.refuse_oversized`). `tests/keras/test_parameters.py` holds each
count to `count_params()` of the model built from tiny configs of that architecture.
"""

from __future__ import annotations

from typing import Callable


def _encoder(hidden: int, layers: int, ffn: int) -> int:
    """BERT's layers: query, key, value and output (4h² + 4h), two layer norms (4h), the feed-forward block
    (2·h·ffn + ffn + h)."""
    return layers * (4 * hidden * hidden + 4 * hidden + 4 * hidden + 2 * hidden * ffn + ffn + hidden)


def _dense(inputs: int, outputs: int) -> int:
    return inputs * outputs + outputs


def _bert(config, labels: int) -> int:
    """BERT: word, position and token-type embeddings with a layer norm, the layers, the pooler, the classifier."""
    h = config.hidden_size
    embeddings = (config.vocab_size + config.max_position_embeddings + config.type_vocab_size) * h + 2 * h
    return embeddings + _encoder(h, config.num_hidden_layers, config.intermediate_size) + _dense(h, h) \
        + _dense(h, labels)


def _distilbert(config, labels: int) -> int:
    """DistilBERT: word and position embeddings with a layer norm, the layers, pre_classifier, the classifier."""
    h = config.dim
    embeddings = (config.vocab_size + config.max_position_embeddings) * h + 2 * h
    return embeddings + _encoder(h, config.n_layers, config.hidden_dim) + _dense(h, h) + _dense(h, labels)


def _electra(config, labels: int) -> int:
    """ELECTRA: embeddings of `embedding_size` (projected to the hidden size when they differ), the layers, a
    dense + out_proj classification head."""
    e, h = config.embedding_size, config.hidden_size
    embeddings = (config.vocab_size + config.max_position_embeddings + config.type_vocab_size) * e + 2 * e
    projection = _dense(e, h) if e != h else 0
    return embeddings + projection + _encoder(h, config.num_hidden_layers, config.intermediate_size) \
        + _dense(h, h) + _dense(h, labels)


def _albert(config, labels: int) -> int:
    """ALBERT: embeddings of `embedding_size`, their mapping to the hidden size, one set of layers per hidden group
    (shared across the layers), the pooler, the classifier."""
    e, h = config.embedding_size, config.hidden_size
    embeddings = (config.vocab_size + config.max_position_embeddings + config.type_vocab_size) * e + 2 * e
    groups = config.num_hidden_groups * config.inner_group_num
    return embeddings + _dense(e, h) + _encoder(h, groups, config.intermediate_size) + _dense(h, h) \
        + _dense(h, labels)


def _mpnet(config, labels: int) -> int:
    """MPNet: word and position embeddings with a layer norm, the layers, their shared relative-position bias, the
    pooler (built though the classifier does not read it), a dense + out_proj classification head."""
    h = config.hidden_size
    embeddings = (config.vocab_size + config.max_position_embeddings) * h + 2 * h
    bias = config.relative_attention_num_buckets * config.num_attention_heads
    return embeddings + _encoder(h, config.num_hidden_layers, config.intermediate_size) + bias + 2 * _dense(h, h) \
        + _dense(h, labels)


# RoBERTa's family builds BERT's embeddings and layers; its classification head (dense + out_proj) has the pooler's
# and classifier's sizes.
COUNTERS: dict[str, Callable[..., int]] = {
    "bert": _bert, "roberta": _bert, "xlm-roberta": _bert, "camembert": _bert, "distilbert": _distilbert,
    "electra": _electra, "albert": _albert, "mpnet": _mpnet,
}


def counted_parameters(config, num_labels: int | None = None) -> int | None:
    """The parameters of the sequence classifier `config` describes, with `num_labels` outputs (the config's own
    when None); None for an architecture not counted here, or a config missing a field that sizes a weight."""
    counter = COUNTERS.get(getattr(config, "model_type", None))
    if counter is None:
        return None
    labels = num_labels if num_labels is not None else getattr(config, "num_labels", 2)
    try:
        count = counter(config, int(labels))
    except (AttributeError, TypeError, ValueError):
        return None
    return int(count) if isinstance(count, int) and count > 0 else None


def optimizer_slots(optimizer) -> int:
    """The slot variables a Keras optimizer keeps for each weight: Adam's family two (three with amsgrad), SGD one
    (the legacy one only with momentum), RMSprop one, one more with momentum and one more centered, Adagrad one; two for
    an optimizer not known here (Adam's, the usual case)."""
    inner = getattr(optimizer, "inner_optimizer", optimizer)  # a LossScaleOptimizer keeps the inner one's
    name = type(inner).__name__
    config = {}
    try:
        config = inner.get_config()
    except Exception:
        pass
    momentum = bool(config.get("momentum") or getattr(inner, "momentum", 0) or 0)
    if name == "SGD":  # tf-keras's SGD keeps its momentum slot even at momentum 0; the legacy one only above 0
        return 1 if momentum or "legacy" not in type(inner).__module__ else 0
    if name == "RMSprop":
        return 1 + int(momentum) + int(bool(config.get("centered")))
    if name in ("Adagrad", "Lion"):
        return 1
    if name.startswith(("Adam", "Nadam", "Adamax")) and config.get("amsgrad"):
        return 3
    return 2


def training_bytes(parameters: int, hidden: int, layers: int, heads: int, batch_size: int, sequence_length: int,
                   slots: int = 2, intermediate: int | None = None) -> tuple[int, int]:
    """(weights, gradients and the optimizer's slots, Adam's two unless `slots` says; activations) in bytes for
    training in float32.

    Activations per layer follow Korthikanti et al. (2022): s*b*h*(34 + 5*a*s/h) bytes in 16-bit, doubled for
    float32, where the 34 holds a feed-forward width of 4h (16 of it: the GeLU's input and the second linear's,
    2 bytes each of the width); a layer of another `intermediate` width counts s*b*(18h + 4i) instead (BERT with
    intermediate_size=40,000, 64M parameters, was estimated at 1.82 GiB and killed at 5 GiB). Every layer counts,
    shared weights or not: ALBERT's 96 layers of one set of weights keep 96 layers of activations (4.9M parameters
    took 5,960 MiB), and the attention scores grow with the heads whatever the width.
    """
    state = int(parameters) * 4 * (2 + slots)
    activations = 0
    if hidden:
        width = intermediate or 4 * hidden
        activations = int(2 * layers * sequence_length * batch_size * (18 * hidden + 4 * width
                                                                       + 5 * heads * sequence_length))
    return state, activations
