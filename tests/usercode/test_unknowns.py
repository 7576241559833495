"""A property of the run builder (issue 70): whatever combination of parts nobody here wrote a script brings (a
tokenizer of the `tokenizers` library, a model whose one input has its own name, a loss of its own, an optimizer
outside Adam's family or a schedule of its own, a dataset that repeats), `diagnose()` builds the run and every check
either runs or skips with its reason: none errors, nothing raises. Hypothesis draws the combinations (derandomized,
so a run is reproducible). The default tier runs the two combinations written below (every part at once, on each
kind of model); the full tier adds ten drawn ones (RUN_SLOW=1)."""

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, example, given, settings, strategies as st

from conftest import ROOT
from diagnostics.core.result import Status

UNKNOWNS = st.fixed_dictionaries({
    "tokenizer": st.sampled_from(["transformers", "tokenizers"]),
    "model": st.sampled_from(["classifier", "input_ids", "input_word_ids"]),
    "loss": st.sampled_from(["builtin", "own"]),
    "optimizer": st.sampled_from(["Adam", "SGD", "own_schedule"]),
    "data": st.sampled_from(["batched", "repeated"]),
})
# Every part at once, the combination a real notebook brought (the default tier's one example); the full tier adds
# drawn ones.
EVERY_UNKNOWN = {"tokenizer": "tokenizers", "model": "input_word_ids", "loss": "own", "optimizer": "own_schedule",
                 "data": "repeated"}


def own_loss(y_true, y_pred):
    """A loss of the script's own: cross-entropy of class ids on logits, or binary cross-entropy on one sigmoid."""
    import tensorflow as tf

    if y_pred.shape[-1] == 1:
        targets = tf.cast(tf.reshape(y_true, [-1, 1]), y_pred.dtype)
        return tf.reduce_mean(tf.keras.backend.binary_crossentropy(targets, y_pred), axis=-1)
    ids = tf.cast(tf.reshape(y_true, [-1]), tf.int32)
    return -tf.gather(tf.nn.log_softmax(y_pred), ids, batch_dims=1)


def build(unknowns: dict):
    """(model, dataset, tokenizer) as a script with these parts builds them, on the demo kit's checkpoint and SST-2
    rows."""
    import json
    import os

    import tensorflow as tf
    import tf_keras
    from transformers import AutoTokenizer, TFAutoModel, TFAutoModelForSequenceClassification

    from diagnostics.keras.loading import demo_checkpoint_dir

    checkpoint = str(demo_checkpoint_dir())
    rows = [json.loads(line) for line in (ROOT / "diagnostics" / "demo_data" / "sst2" / "train.jsonl").open()][:64]
    texts, labels = [row["sentence"] for row in rows], np.array([row["label"] for row in rows])
    if unknowns["tokenizer"] == "tokenizers":
        from tokenizers import BertWordPieceTokenizer

        tokenizer = BertWordPieceTokenizer(os.path.join(checkpoint, "vocab.txt"), lowercase=True)
        tokenizer.enable_padding(length=24)
        tokenizer.enable_truncation(max_length=24)
        ids = np.array([encoding.ids for encoding in tokenizer.encode_batch(texts)])
    else:
        tokenizer = AutoTokenizer.from_pretrained(checkpoint)
        ids = np.array(tokenizer(texts, padding="max_length", truncation=True, max_length=24)["input_ids"])
    if unknowns["model"] == "classifier":
        model = TFAutoModelForSequenceClassification.from_pretrained(checkpoint, num_labels=2)
        x, builtin = {"input_ids": ids, "attention_mask": (ids != 0).astype("int32")}, \
            tf_keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    else:
        word_ids = tf_keras.layers.Input(shape=(24,), dtype=tf.int32, name=unknowns["model"])
        encoded = TFAutoModel.from_pretrained(checkpoint)(word_ids)[0][:, 0, :]
        model = tf_keras.Model(word_ids, tf_keras.layers.Dense(1, activation="sigmoid")(encoded))
        x, builtin = ids, "binary_crossentropy"
    dataset = tf.data.Dataset.from_tensor_slices((x, labels))
    dataset = dataset.repeat().batch(16) if unknowns["data"] == "repeated" else dataset.batch(16)
    if unknowns["optimizer"] == "SGD":
        optimizer = tf_keras.optimizers.SGD(learning_rate=0.05, momentum=0.9)
    elif unknowns["optimizer"] == "own_schedule":
        class Warmup(tf_keras.optimizers.schedules.LearningRateSchedule):
            def __call__(self, step):
                return 1e-3 * tf.minimum(1.0, (tf.cast(step, tf.float32) + 1) / 4)

        optimizer = tf_keras.optimizers.Adam(learning_rate=Warmup())
    else:
        optimizer = tf_keras.optimizers.Adam(learning_rate=1e-3)
    model.compile(optimizer=optimizer, loss=own_loss if unknowns["loss"] == "own" else builtin)
    return model, dataset, tokenizer


def check_every_check_runs_or_skips(unknowns: dict) -> None:
    from diagnostics import diagnose

    model, dataset, tokenizer = build(unknowns)
    report = diagnose(model, dataset, tokenizer, progress=False)
    errors = {result.id: str(result.summary) for result in report.results if result.status is Status.ERROR}
    assert not errors, (unknowns, errors)
    silent = [result.id for result in report.results if result.status is Status.SKIP and not str(result.summary)]
    assert not silent, (unknowns, silent)
    assert {result.id for result in report.results if result.status is not Status.SKIP} >= {
        "data.batch", "model.forward", "model.gradients", "hparams.optimizer", "hparams.lr_sweep"}, unknowns


@settings(phases=(Phase.explicit,), deadline=None, database=None)
@given(unknowns=UNKNOWNS)
@example(unknowns=EVERY_UNKNOWN)
@example(unknowns={**EVERY_UNKNOWN, "tokenizer": "transformers", "model": "classifier", "optimizer": "SGD"})
def test_every_check_runs_or_skips_with_its_reason_with_every_part_nobody_named(unknowns):
    check_every_check_runs_or_skips(unknowns)


@pytest.mark.slow  # full tier: ten drawn combinations; the two above hold the claim for every part at once
@settings(max_examples=10, phases=(Phase.generate,), deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(unknowns=UNKNOWNS)
def test_every_check_runs_or_skips_with_its_reason_whatever_combination_of_parts_nobody_named(unknowns):
    check_every_check_runs_or_skips(unknowns)
