"""Keras models the checks were not designed around, in the shapes tutorials and forum posts use: a Transformers
encoder inside a functional model with its own head (a softmax, or one sigmoid output), fed by a
`keras.utils.Sequence` that tokenizes each batch or by numpy arrays with y=, with one-hot or binary labels. Checked
in a notebook (diagnose) on the kit, and traced as scripts on the real checkpoint and real MRPC text."""

import json

import numpy as np
import pytest

from conftest import ROOT
from diagnostics.core.result import Status

MAX_LENGTH = 48


def kit_rows(split="train"):
    path = ROOT / "diagnostics" / "demo_data" / "rte" / f"{split}.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture(scope="module")
def kit():
    """(encoder checkpoint, tokenizer) of the kit."""
    from diagnostics.keras.loading import demo_checkpoint_dir, load_tokenizer

    return demo_checkpoint_dir(), load_tokenizer("demo")


def functional(checkpoint, outputs=2, activation="softmax", *, from_pretrained=True):
    """A tutorial's model: the encoder's hidden states, pooled, into a Dense head."""
    import tf_keras as keras
    from transformers import TFAutoModel

    encoder = TFAutoModel.from_pretrained(str(checkpoint))
    input_ids = keras.Input(shape=(MAX_LENGTH,), dtype="int32", name="input_ids")
    attention_mask = keras.Input(shape=(MAX_LENGTH,), dtype="int32", name="attention_mask")
    hidden = encoder(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
    pooled = keras.layers.GlobalAveragePooling1D()(hidden)
    output = keras.layers.Dense(outputs, activation=activation)(keras.layers.Dropout(0.1)(pooled))
    return keras.Model(inputs=[input_ids, attention_mask], outputs=output)


def pair_sequence(tokenizer, rows, *, one_hot=True, batch_size=8):
    """A keras.utils.Sequence that tokenizes each batch as it is asked for, padded to MAX_LENGTH."""
    import tf_keras as keras

    class Pairs(keras.utils.Sequence):
        def __len__(self):
            return int(np.ceil(len(rows) / batch_size))

        def __getitem__(self, index):
            chunk = rows[index * batch_size:(index + 1) * batch_size]
            encoded = tokenizer([row["sentence1"] for row in chunk], [row["sentence2"] for row in chunk],
                                padding="max_length", truncation=True, max_length=MAX_LENGTH, return_tensors="np")
            labels = np.array([row["label"] for row in chunk])
            y = keras.utils.to_categorical(labels, num_classes=2) if one_hot else labels
            return [encoded["input_ids"], encoded["attention_mask"]], y

    return Pairs()


def statuses(report):
    return {result.id: result.status for result in report.results}


def not_passing(report):
    """What fails, errs or warns; on the kit, whose template sentences repeat, data.duplicates's warning aside."""
    return {result.id: str(result.summary) for result in report.results
            if result.status in (Status.FAIL, Status.ERROR, Status.WARN)
            and not (result.id == "data.duplicates" and result.status is Status.WARN)}


# ---------------------------------------------------------------- what Keras sees


def test_the_head_is_read_from_the_output_layer_and_outputs_become_class_logits(kit):
    from diagnostics.keras.keras_model import as_output, class_logits, describe_model, head_of, model_config

    checkpoint, tokenizer = kit
    softmax = functional(checkpoint, 3)
    head = head_of(softmax)
    assert (head.outputs, head.activation, head.transformers, head.num_labels) == (3, "softmax", False, 3)
    assert type(head.encoder).__name__ == "TFDistilBertModel"
    assert describe_model(softmax) == "Functional around TFDistilBertModel, Dense(3, softmax)"
    config = model_config(softmax)
    assert config.num_labels == 3 and config.model_type == "distilbert"
    assert config is not head.encoder.config  # the encoder's own config is never changed
    probabilities = np.array([[0.7, 0.2, 0.1]])
    logits = class_logits(softmax, probabilities)
    assert np.allclose(np.exp(logits), probabilities)
    assert np.allclose(as_output(head, logits), probabilities)

    sigmoid = functional(checkpoint, 1, "sigmoid")
    binary = head_of(sigmoid)
    assert (binary.outputs, binary.binary, binary.num_labels) == (1, True, 2)
    two = class_logits(sigmoid, np.array([[0.8]]))
    assert two.shape == (1, 2) and np.isclose(np.exp(two[0, 1]) / np.exp(two[0]).sum(), 0.8)


def test_a_copy_of_a_functional_model_trains_apart_from_it(kit):
    import tensorflow as tf

    from diagnostics.keras.keras_model import fresh_copy

    checkpoint, tokenizer = kit
    model = functional(checkpoint)
    inputs = {"input_ids": tf.ones((2, MAX_LENGTH), tf.int32), "attention_mask": tf.ones((2, MAX_LENGTH), tf.int32)}
    copy = fresh_copy(model, inputs)
    assert copy is not model and len(copy.weights) == len(model.weights)
    assert not {id(v) for v in copy.weights} & {id(v) for v in model.weights}
    before = [w.numpy().copy() for w in model.weights]
    copy.weights[-2].assign(copy.weights[-2] + 1.0)
    assert all(np.array_equal(b, w.numpy()) for b, w in zip(before, model.weights, strict=True))


# ---------------------------------------------------------------- diagnose() on the kit


@pytest.mark.slow  # full tier: a whole walk; the matrix's slice holds a Sequence with one-hot labels
def test_a_functional_softmax_model_on_a_sequence_with_one_hot_labels_passes_clean(kit):
    import tf_keras as keras

    from diagnostics import diagnose

    checkpoint, tokenizer = kit
    model = functional(checkpoint)
    model.compile(optimizer=keras.optimizers.Adam(3e-3), loss="categorical_crossentropy", metrics=["accuracy"])
    report = diagnose(model, pair_sequence(tokenizer, kit_rows()), tokenizer, task="rte", stages="data,model")
    # The kit's short template rows padded to MAX_LENGTH: most of each batch is padding, measured on the batches the
    # Sequence really builds (padding per batch would be no finding).
    # The kit's random encoder starts a fresh head wherever it lands, so model.initial_loss may warn (a kit
    # measurement, not a verdict): what it measured is Keras's own categorical cross-entropy on the first batch.
    found = not_passing(report)
    assert "data.truncation" in found and set(found) <= {"data.truncation", "model.initial_loss"}, found
    (first_inputs, first_y) = pair_sequence(tokenizer, kit_rows())[0]
    expected = keras.losses.categorical_crossentropy(first_y, model(first_inputs, training=False))
    assert np.isclose(report["model.initial_loss"].evidence["loss"], float(np.mean(expected)), rtol=1e-3)
    padding = report["data.truncation"].evidence
    assert padding["fixed_padding"] and padding["padded_length"] == MAX_LENGTH and padding["padding_share"] > 0.6
    config = report["model.config"].evidence
    assert config["num_labels"] == 2 and config["model_class"].startswith("Functional around TFDistilBertModel")
    batch = report["data.batch"].summary
    assert f"(8, {MAX_LENGTH})" in batch and "label (8, 2) float32" in batch  # padded and one-hot, as fit gets them
    truncation = report["data.truncation"].evidence
    assert truncation["max_length"] == MAX_LENGTH  # the Sequence's own tokenizer call, seen as it was read back
    assert "pooler" not in str(report["model.gradients"].summary) or "not used by the model's output" in str(
        report["model.gradients"].summary)


def test_a_loss_that_reads_a_softmax_output_as_logits_is_named_once_by_hparams_loss(kit):
    import tf_keras as keras

    from diagnostics import diagnose

    checkpoint, tokenizer = kit
    model = functional(checkpoint)
    model.compile(optimizer=keras.optimizers.Adam(3e-3),
                  loss=keras.losses.CategoricalCrossentropy(from_logits=True))
    report = diagnose(model, pair_sequence(tokenizer, kit_rows()), tokenizer, task="rte", stages="model")
    # The loss check alone (the Hyperparameters stage would also sweep rates, the real-checkpoint trace's part).
    from diagnostics.usercode.api import capture
    from diagnostics.usercode.own_code import build_run
    from diagnostics.checks.hparams.loss import measure as hparams_loss

    run = build_run(capture(model, pair_sequence(tokenizer, kit_rows()), tokenizer, "rte"))
    result = hparams_loss(run)
    assert result.status is Status.FAIL and result.condition == "probabilities_as_logits", result.summary
    assert "outputs probabilities (Dense(2, softmax)" in str(result.summary)
    assert "CategoricalCrossentropy(from_logits=False)" in str(result.fix)
    assert statuses(report)["model.config"] is Status.PASS


@pytest.mark.slow  # full tier: a whole walk; the matrix's slice holds a binary sigmoid head on numpy arrays
def test_a_binary_sigmoid_head_on_numpy_arrays_with_y_passes_clean(kit):
    import tf_keras as keras

    from diagnostics import diagnose

    checkpoint, tokenizer = kit
    rows = kit_rows()
    encoded = tokenizer([row["sentence1"] for row in rows], [row["sentence2"] for row in rows],
                        padding="max_length", truncation=True, max_length=MAX_LENGTH, return_tensors="np")
    x = {"input_ids": encoded["input_ids"], "attention_mask": encoded["attention_mask"]}
    y = np.array([row["label"] for row in rows], dtype="float32")
    model = functional(checkpoint, 1, "sigmoid")
    model.compile(optimizer=keras.optimizers.Adam(3e-3), loss="binary_crossentropy", metrics=["accuracy"])
    report = diagnose(model, (x, y), tokenizer, task="rte", stages="data,model")
    # The kit's random encoder starts a fresh sigmoid head wherever it lands, so model.initial_loss may warn here
    # (a measurement, not a verdict on the kit): the loss it measured is Keras's own on the same rows.
    found = not_passing(report)
    assert set(found) <= {"model.initial_loss", "data.truncation"}, found
    first = report["model.initial_loss"].evidence
    assert report.config.batch_size == 32  # fit(x, y)'s batches, as Keras makes them
    expected = keras.losses.binary_crossentropy(y[:32, None], model({k: v[:32] for k, v in x.items()}, training=False))
    assert np.isclose(first["loss"], float(np.mean(expected)), rtol=1e-4), (first, float(np.mean(expected)))
    assert report["model.config"].evidence["num_labels"] == 2
    assert report["data.label_range"].status is Status.PASS
    assert "matches rte's 2 labels" in str(report["model.config"].summary)


def test_a_keras_model_with_no_transformers_part_is_checked_as_not_pretrained(kit):
    import tf_keras as keras

    from diagnostics import diagnose
    from diagnostics.keras.training import is_pretrained

    _, tokenizer = kit
    model = keras.Sequential([keras.Input(shape=(MAX_LENGTH,), dtype="int32", name="input_ids"),
                              keras.layers.Embedding(len(tokenizer), 16), keras.layers.GlobalAveragePooling1D(),
                              keras.layers.Dense(2)])
    model.compile(optimizer=keras.optimizers.Adam(1e-3),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    sequence = pair_sequence(tokenizer, kit_rows(), one_hot=False)
    report = diagnose(model, sequence, tokenizer, task="rte", stages="model")
    assert not is_pretrained(model)
    assert report["model.config"].status is Status.PASS and "Sequential, Dense(2, linear)" in str(
        report["model.config"].summary)
    assert report["model.gradients"].status is Status.PASS, report["model.gradients"].summary


def test_an_uncompiled_functional_model_is_refused_with_what_to_do(kit):
    from diagnostics import diagnose
    from diagnostics.core.errors import InputError

    checkpoint, tokenizer = kit
    with pytest.raises(InputError, match="has no loss of its own"):
        diagnose(functional(checkpoint), pair_sequence(tokenizer, kit_rows()), tokenizer, task="rte", stages="data")


# ---------------------------------------------------------------- traced scripts on the real checkpoint

SCRIPT = '''
# Fine-tune a sentence-pair classifier: a pretrained encoder, mean-pooled, with a softmax head (Keras functional API).
import sys
import numpy as np
import pandas as pd
import tensorflow as tf
import tf_keras as keras
from transformers import AutoTokenizer, TFAutoModel

checkpoint, data_file, loss_name = sys.argv[1], sys.argv[2], sys.argv[3]
frame = pd.read_csv(data_file, sep="\\t")
tokenizer = AutoTokenizer.from_pretrained(checkpoint)


class PairBatches(keras.utils.Sequence):
    def __init__(self, frame, batch_size=8):
        self.frame, self.batch_size = frame, batch_size

    def __len__(self):
        return int(np.ceil(len(self.frame) / self.batch_size))

    def __getitem__(self, index):
        rows = self.frame.iloc[index * self.batch_size:(index + 1) * self.batch_size]
        enc = tokenizer(list(rows["sentence1"]), list(rows["sentence2"]), padding="max_length", truncation=True,
                        max_length=64, return_tensors="np")
        return {"input_ids": enc["input_ids"], "attention_mask": enc["attention_mask"]}, \\
            keras.utils.to_categorical(rows["label"].values, num_classes=2)


encoder = TFAutoModel.from_pretrained(checkpoint)
input_ids = keras.Input(shape=(64,), dtype="int32", name="input_ids")
attention_mask = keras.Input(shape=(64,), dtype="int32", name="attention_mask")
hidden = encoder(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
pooled = keras.layers.Dropout(0.1)(keras.layers.GlobalAveragePooling1D()(hidden))
model = keras.Model(inputs=[input_ids, attention_mask], outputs=keras.layers.Dense(2, activation="softmax")(pooled))
loss = keras.losses.CategoricalCrossentropy(from_logits=True) if loss_name == "from_logits" else \\
    "categorical_crossentropy"
model.compile(optimizer=keras.optimizers.Adam(learning_rate=2e-5), loss=loss, metrics=["accuracy"])
model.fit(PairBatches(frame), epochs=3)
'''


def trace_functional(tmp_path, checkpoint, loss_name):
    from tests.usercode.here import trace_here

    script = tmp_path / "pairs.py"
    script.write_text(SCRIPT)
    outcome = trace_here(script, [str(checkpoint), str(ROOT / "tests" / "data" / "mrpc" / "validation.tsv"), loss_name],
                         task="mrpc", stages="data,model,hparams",
                         skip="data.learnability,hparams.lr_sweep,hparams.lr_range_test", cwd=tmp_path)
    assert outcome.report is not None and outcome.report["script"]["reached_fit"], (
        outcome.message + outcome.output[-3000:]
    )
    assert not outcome.report["script"]["error"], outcome.report["script"]["error"]
    return outcome, {check["id"]: check for check in outcome.report["checks"]}


def test_trace_a_healthy_functional_script_on_the_real_checkpoint_passes_clean(tmp_path, real_checkpoint):
    outcome, checks = trace_functional(tmp_path, real_checkpoint, "categorical_crossentropy")
    found = {
        check_id: check["summary"] for check_id, check in checks.items() if check["status"] in ("fail", "error", "warn")
    }
    assert found == {}, found
    assert outcome.exit_code == 0 and outcome.report["causes"] == []
    assert "Functional around TFBertModel, Dense(2, softmax)" in checks["model.config"]["summary"]
    assert "not used by the model's output" in checks["model.gradients"]["summary"]  # the pooler, measured
    assert "max_length=64 (your tokenizer call's)" in checks["data.truncation"]["summary"]


def test_trace_a_from_logits_loss_on_a_softmax_head_is_one_cause_on_the_real_checkpoint(tmp_path, real_checkpoint):
    outcome, checks = trace_functional(tmp_path, real_checkpoint, "from_logits")
    causes = outcome.report["causes"]
    assert [(cause["owner"], cause["status"]) for cause in causes] == [("hparams.loss", "fail")], causes
    assert checks["hparams.loss"]["condition"] == "probabilities_as_logits"
    assert "CategoricalCrossentropy(from_logits=False)" in checks["hparams.loss"]["fix"]
    assert outcome.exit_code == 1


# ---------------------------------------------------------------- errors the stack causes, named with their fix


def raised(call):
    try:
        call()
    except Exception as exc:
        return exc
    raise AssertionError("it did not raise")


def test_a_datasets_column_given_to_the_tokenizer_is_named_with_its_fix(kit):
    from datasets import Dataset

    from diagnostics.usercode.script_errors import stack_change

    _, tokenizer = kit
    split = Dataset.from_dict({"sentence1": ["a b", "c d"], "sentence2": ["e", "f"], "label": [0, 1]})
    exc = raised(lambda: tokenizer(split["sentence1"], split["sentence2"], truncation=True))
    finding, fix = stack_change(exc)
    assert "lazy Column" in str(finding) and "list(dataset['sentence1'])" in fix
    # The same message on a value that is not a Column is not this change.
    assert stack_change(raised(lambda: tokenizer(3.5))) is None


def test_removed_tokenizer_and_fit_arguments_and_keras_3_objects_are_named_with_their_fix(kit):
    import keras
    import tf_keras
    from transformers import TFAutoModelForSequenceClassification

    from diagnostics.usercode.script_errors import stack_change

    checkpoint, tokenizer = kit
    finding, fix = stack_change(raised(lambda: tokenizer(["a b"], pad_to_max_length=True, max_length=8)))
    assert "pad_to_max_length" in str(finding) and "padding='max_length'" in fix
    small = tf_keras.Sequential([tf_keras.layers.Dense(2)])
    small.compile(loss="mse")
    finding, fix = stack_change(raised(lambda: small.fit(np.ones((4, 3)), np.ones((4, 2)), workers=-1, verbose=0)))
    assert "workers=-1" in str(finding) and "workers=1" in fix
    model = TFAutoModelForSequenceClassification.from_pretrained(str(checkpoint), num_labels=2)
    finding, fix = stack_change(raised(lambda: model.compile(optimizer=keras.optimizers.Adam(1e-3))))
    assert "Keras 3" in str(finding) and fix.startswith("import tf_keras as keras")


def test_a_keras_3_input_given_to_a_transformers_encoder_is_named_with_its_fix(kit):
    """`keras.Input` (Keras 3, TensorFlow's default since 2.16) called through TFAutoModel, the functional-model shape
    of many tutorials: tf-keras wraps the cause in "Exception encountered when calling layer ...", which names none."""
    import keras
    from transformers import TFAutoModel

    from diagnostics.usercode.script_errors import stack_change

    checkpoint, _ = kit
    encoder = TFAutoModel.from_pretrained(str(checkpoint))
    input_ids = keras.Input(shape=(16,), dtype="int32", name="input_ids")
    exc = raised(lambda: encoder(input_ids))
    assert "Exception encountered when calling layer" in str(exc)
    finding, fix = stack_change(exc)
    assert "A Keras 3 object was given to a tf-keras (Keras 2) model" in str(finding)
    assert "KerasTensor given to TFDistilBertModel" in str(finding)
    assert fix.startswith("import tf_keras as keras") and "TF_USE_LEGACY_KERAS" in fix
    # The same layer given a tf-keras Input builds: no change to name.
    import tf_keras

    assert encoder(tf_keras.Input(shape=(16,), dtype="int32")).last_hidden_state.shape[-1] > 0
