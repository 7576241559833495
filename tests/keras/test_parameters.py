"""A checkpoint's parameters counted from its config equal what building its TensorFlow classifier makes, for every
architecture the count knows, on tiny configs whose every sizing field differs from the others."""

import pytest

import diagnostics  # noqa: E402
diagnostics.own_process()  # Keras 2 for tf.keras, quiet libraries, before TensorFlow loads
from diagnostics.keras.parameters import COUNTERS, counted_parameters

SIZES = dict(vocab_size=97, max_position_embeddings=40, num_attention_heads=2, intermediate_size=23)


def configs():
    from transformers import (AlbertConfig, BertConfig, CamembertConfig, DistilBertConfig, ElectraConfig,
                              MPNetConfig, RobertaConfig, XLMRobertaConfig)

    return [
        BertConfig(hidden_size=16, num_hidden_layers=2, type_vocab_size=7, num_labels=3, **SIZES),
        RobertaConfig(hidden_size=16, num_hidden_layers=2, type_vocab_size=1, num_labels=2, **SIZES),
        XLMRobertaConfig(hidden_size=16, num_hidden_layers=1, type_vocab_size=3, num_labels=2, **SIZES),
        CamembertConfig(hidden_size=16, num_hidden_layers=1, num_labels=2, **SIZES),
        DistilBertConfig(vocab_size=97, dim=16, n_layers=2, n_heads=2, hidden_dim=23, max_position_embeddings=40,
                         num_labels=3),
        ElectraConfig(embedding_size=8, hidden_size=16, num_hidden_layers=2, type_vocab_size=5, num_labels=3, **SIZES),
        ElectraConfig(embedding_size=16, hidden_size=16, num_hidden_layers=2, num_labels=1, **SIZES),
        AlbertConfig(embedding_size=8, hidden_size=16, num_hidden_layers=4, num_hidden_groups=2, inner_group_num=1,
                     type_vocab_size=3, num_labels=3, **SIZES),
        MPNetConfig(hidden_size=16, num_hidden_layers=2, relative_attention_num_buckets=11, num_labels=3, **SIZES),
    ]


@pytest.mark.parametrize("index", range(9))
def test_the_count_from_the_config_is_the_built_classifiers(index):
    from transformers import TFAutoModelForSequenceClassification

    config = configs()[index]
    model = TFAutoModelForSequenceClassification.from_config(config)
    model(model.dummy_inputs)
    assert counted_parameters(config) == model.count_params(), config.model_type
    hidden = getattr(config, "hidden_size", None) or config.dim  # each more output adds a row of the classifier
    assert counted_parameters(config, num_labels=5) == model.count_params() + (5 - config.num_labels) * (hidden + 1)


def test_every_counted_architecture_is_tested_and_any_other_is_not_counted():
    from transformers import GPT2Config

    assert {config.model_type for config in configs()} == set(COUNTERS)
    assert counted_parameters(GPT2Config()) is None
    broken = configs()[0]
    del broken.type_vocab_size
    assert counted_parameters(broken) is None
