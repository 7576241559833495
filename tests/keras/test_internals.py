"""Each private or version-dependent read of diagnostics/keras/internals.py, on the pinned versions: when an upgrade
moves one, the test that fails names it (and what to look at), instead of a check quietly judging wrongly."""

from importlib.metadata import version

import numpy as np
import pytest

from conftest import make_split
from diagnostics.keras import internals


@pytest.mark.parametrize("package", sorted(internals.MEASURED_ON))
def test_the_reads_were_measured_on_the_installed_versions(package):
    assert version(package) == internals.MEASURED_ON[package], (
        f"{package} {version(package)} is installed; diagnostics/keras/internals.py was measured on "
        f"{internals.MEASURED_ON[package]}: run tests/keras/test_internals.py and update MEASURED_ON when all pass")


@pytest.fixture(scope="module")
def tiny_classifier(bert_checkpoint):
    from transformers import TFAutoModelForSequenceClassification

    return TFAutoModelForSequenceClassification.from_pretrained(str(bert_checkpoint), num_labels=3)


@pytest.mark.parametrize("kind", ["new", "legacy", "create_optimizer"])
def test_an_optimizer_is_built_before_any_step_and_its_first_traced_step_makes_nothing(kind):
    import tensorflow as tf
    import tf_keras
    from transformers import create_optimizer

    optimizer = {"new": lambda: tf_keras.optimizers.Adam(1e-3), "legacy": lambda: tf_keras.optimizers.legacy.Adam(1e-3),
                 "create_optimizer": lambda: create_optimizer(init_lr=5e-5, num_train_steps=10, num_warmup_steps=2,
                                                              weight_decay_rate=0.01)[0]}[kind]()
    weights = [tf.Variable(np.ones((3, 2), np.float32)), tf.Variable(np.zeros(2, np.float32))]
    internals.make_optimizer_state(optimizer, weights)
    variables = optimizer.variables() if callable(optimizer.variables) else optimizer.variables
    assert len(variables) >= 1 + 2 * len(weights)  # the step count and Adam's two slots a weight

    @tf.function
    def step():
        optimizer.apply_gradients(zip([tf.ones((3, 2)), tf.ones(2)], weights, strict=True))

    step()
    assert step.experimental_get_tracing_count() == 1 and not step._created_variables


def test_optimizer_rates_new_legacy_and_create_optimizers():
    import tf_keras
    from transformers import create_optimizer

    assert float(internals.optimizer_rate(tf_keras.optimizers.Adam(learning_rate=2e-3))) == pytest.approx(2e-3)
    legacy = tf_keras.optimizers.legacy.Adam(learning_rate=3e-4)
    assert float(internals.optimizer_rate(legacy)) == pytest.approx(3e-4)
    optimizer, _ = create_optimizer(init_lr=5e-5, num_train_steps=10, num_warmup_steps=2, weight_decay_rate=0.01)
    schedule = internals.optimizer_rate(optimizer)
    assert type(schedule).__name__ == "WarmUp" and float(schedule(10)) == pytest.approx(0.0, abs=1e-12)
    selection = internals.decay_selection(optimizer)
    assert "LayerNorm" in selection["exclude_from_weight_decay"]
    copy = type(optimizer).from_config(optimizer.get_config())
    assert internals.decay_selection(copy) != selection  # from_config leaves the selection out...
    internals.copy_decay_selection(optimizer, copy)
    assert internals.decay_selection(copy) == selection  # ...and the copy gets it back
    assert internals.decay_selection(tf_keras.optimizers.Adam()) == {}


def test_the_internal_loss_and_the_checkpoint_path_of_a_transformers_model(tiny_classifier, bert_checkpoint):
    tiny_classifier.compile(optimizer="adam")
    assert internals.uses_internal_loss(tiny_classifier) and internals.is_dummy_loss(tiny_classifier.loss)
    tiny_classifier.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    assert not internals.uses_internal_loss(tiny_classifier) and not internals.is_dummy_loss(tiny_classifier.loss)
    assert internals.checkpoint_path(tiny_classifier) == str(bert_checkpoint)
    assert internals.checkpoint_path(object()) == ""


def test_keras_step_function_is_the_untraced_step_and_leaves_run_eagerly_as_it_was(tiny_classifier):
    import tensorflow as tf
    import tf_keras

    tiny_classifier.compile(optimizer=tf_keras.optimizers.Adam(1e-4))
    step = internals.keras_step_function(tiny_classifier)
    assert callable(step) and not hasattr(step, "experimental_get_tracing_count")  # Python, not a tf.function
    assert tiny_classifier._run_eagerly is None and tiny_classifier.make_train_function(force=True) is not step
    data = tf.data.Dataset.from_tensors(({"input_ids": tf.constant([[5, 6, 7]])}, tf.constant([1]))).repeat()
    assert set(step(iter(data))) == {"loss"}  # one step, eagerly, as Keras runs it


def test_variable_names_show_encoder_layers_kernels_and_the_head(tiny_classifier):
    tiny_classifier(tiny_classifier.dummy_inputs)
    paths = [internals.variable_path(variable.name) for variable in tiny_classifier.trainable_variables]
    assert any(f"encoder/{internals.LAYER_PREFIX}0/" in path and path.endswith(internals.KERNEL) for path in paths)
    assert not any(":" in path or path.startswith("tf_bert_for_sequence_classification") for path in paths)
    heads = [v for v in tiny_classifier.trainable_variables if any(m in v.name for m in internals.HEAD_MARKERS)]
    assert heads and not any(internals.is_pretrained_kernel(variable) for variable in heads)
    assert sum(internals.is_pretrained_kernel(v) for v in tiny_classifier.trainable_variables) >= 12


def test_datasets_fingerprints_and_the_missing_column_error(bert_tokenizer):
    split = make_split("sst2", [("a great film", 1), ("an awful book", 0)])
    mapped = split.map(lambda rows: bert_tokenizer(rows["sentence"]), batched=True)
    assert internals.split_fingerprint(split) and internals.split_fingerprint(mapped) != internals.split_fingerprint(
        split)
    assert internals.split_fingerprint([1, 2]) is None
    with pytest.raises(Exception) as raised:
        mapped.to_tf_dataset(columns=["input_ids", "labels"], batch_size=2)
    assert internals.is_missing_column_error(raised.value), repr(raised.value)
    assert not internals.is_missing_column_error(ValueError("something else"))


def test_tf_data_inputs_lead_back_through_methods():
    import tensorflow as tf

    origin = tf.data.Dataset.from_tensor_slices(np.arange(8))
    assert internals.dataset_inputs(origin) == []
    batched = origin.batch(2)
    assert internals.dataset_inputs(batched.prefetch(1)) == [batched]
    assert len(internals.dataset_inputs(tf.data.Dataset.zip((origin, origin)))) == 2
    assert internals.dataset_inputs([1, 2]) is None


def test_a_repeat_in_a_tf_data_chain_is_found_with_the_batch_after_it():
    import numpy as np
    import tensorflow as tf

    from diagnostics.keras.internals import repeated_input

    rows = tf.data.Dataset.from_tensor_slices(np.arange(10))
    inner, batch = repeated_input(rows.repeat().shuffle(4).batch(3).prefetch(1))
    assert int(inner.cardinality()) == 10 and batch == 3
    inner, batch = repeated_input(rows.padded_batch(2).repeat(3))
    assert int(inner.cardinality()) == 5 and batch is None
    assert repeated_input(rows.batch(3)) is None


def test_the_method_that_drops_an_optimizers_lr_keyword_is_where_it_was():
    import tf_keras

    from diagnostics.keras.internals import optimizer_keyword_reader

    owner, name = optimizer_keyword_reader()
    assert issubclass(tf_keras.optimizers.Adam, owner)
    seen = []
    original = getattr(owner, name)
    setattr(owner, name, lambda self, kwargs: (seen.append(dict(kwargs)), original(self, kwargs))[1])
    try:
        tf_keras.optimizers.Adam(lr=1e-5)
    finally:
        setattr(owner, name, original)
    assert seen == [{"lr": 1e-5}]


def test_a_callback_reads_the_data_fit_was_given(tiny_classifier):
    import tensorflow as tf
    import tf_keras

    seen = []

    class Reader(tf_keras.callbacks.Callback):
        def set_model(self, model):
            super().set_model(model)
            seen.append(internals.fit_argument(model, "x"))

    data = tf.data.Dataset.from_tensor_slices(({"input_ids": np.ones((4, 6), np.int32)}, np.zeros(4, np.int64)))
    data = data.batch(2)
    tiny_classifier.compile(optimizer=tf_keras.optimizers.Adam(1e-4))
    tiny_classifier.fit(data, epochs=1, steps_per_epoch=1, callbacks=[Reader()], verbose=0)
    assert seen and seen[0] is data
