"""Batches as `model.fit` gets them: several made through one `to_tf_dataset` are the batches each made alone."""

import numpy as np
import pytest

from conftest import make_split
from diagnostics.config.run import RunConfig
from diagnostics.keras.batches import batches_of, build_batch


def rows_of_lengths(count: int):
    """MNLI rows whose lengths all differ (so each batch pads to its own longest row)."""
    return [("the cat sat" + " on the mat" * (index % 5), "the dog ran" + " today" * index, index % 3)
            for index in range(count)]


@pytest.mark.parametrize("batch_size, count", [(4, 12), (4, 10), (8, 3)], ids=["whole", "partial-last", "one"])
def test_batches_of_gives_each_batch_as_it_is_built_alone(bert_tokenizer, batch_size, count):
    split = make_split("mnli", rows_of_lengths(14))
    config = RunConfig(batch_size=batch_size)
    rows = list(np.random.default_rng(0).permutation(14)[:count])
    together = batches_of(split, bert_tokenizer, config, rows)
    alone = [build_batch(split, bert_tokenizer, config, rows[i:i + batch_size]).tf_batch
             for i in range(0, count, batch_size)]
    assert len(together) == len(alone) == -(-count // batch_size)
    for one, other in zip(together, alone, strict=True):
        assert one.keys() == other.keys()
        for key in one:
            np.testing.assert_array_equal(np.asarray(one[key]), np.asarray(other[key]))


def test_batches_of_no_rows_is_no_batches(bert_tokenizer):
    assert batches_of(make_split("mnli", rows_of_lengths(4)), bert_tokenizer, RunConfig(batch_size=4), []) == []


def test_batches_of_a_split_without_its_text_columns_is_none_for_each(bert_tokenizer):
    split = make_split("sst2", [("a film", 1)] * 8)
    assert batches_of(split, bert_tokenizer, RunConfig(task="mnli", batch_size=4), list(range(8))) == [None, None]


def test_shape_probes_sample_enough_rows_to_see_a_rare_length_and_no_more_than_needed():
    from diagnostics.keras.batches import shape_probes

    assert shape_probes([12] * 95 + [14], 96) == 1320  # all samples at length 12: one chance in a million
    assert shape_probes([12] * 96, 96) == 20  # one length: any sample gives the shape
    assert shape_probes(list(range(96)), 96) == 20  # varied lengths: the default 20 already sees two
    assert shape_probes([], 96) == 960  # lengths unknown: ten samples a row


@pytest.mark.parametrize("seed", range(3))
def test_one_longer_row_among_many_of_one_length_still_builds_every_batch(bert_tokenizer, seed):
    """to_tf_dataset fixes a sequence length that all its sampled rows share; a single longer row it missed would fail
    its batch. The probes are drawn at random, so under several seeds of Python's random."""
    import random

    random.seed(seed)
    rows = [("the cat sat", "the dog ran", index % 3) for index in range(63)] + [("the cat sat on the mat",
                                                                                    "the dog ran", 1)]
    split = make_split("mnli", rows)
    batches = batches_of(split, bert_tokenizer, RunConfig(batch_size=8), list(range(64)))
    assert len(batches) == 8 and all(batch is not None for batch in batches)
    assert np.asarray(batches[-1]["input_ids"]).shape[1] > np.asarray(batches[0]["input_ids"]).shape[1]
