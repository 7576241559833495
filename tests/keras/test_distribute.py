"""The training checks under tf.distribute: a MirroredStrategy over two logical CPU devices, as over two GPUs."""

import json
import os
import subprocess
import sys

import pytest

from conftest import ROOT, SEEDS
from diagnostics.keras.devices import DEVICES_ENV, training_strategy

pytestmark = [pytest.mark.subprocess, pytest.mark.slow]

# Logical devices must be configured before TensorFlow starts, so this runs in a fresh process.
SCRIPT = """
import json, os, sys
import diagnostics
from diagnostics.core.libraries import import_libraries
import_libraries()  # as every process of the debugger's own (the logical devices are set before TF's runtime starts)
import tensorflow as tf
cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
from diagnostics.keras import data_files, loading
from diagnostics.config.run import RunConfig
from diagnostics.keras.batches import build_first_batch, training_batches
from diagnostics.checks.data.learnability import learnability_figures
from diagnostics.checks.overfit.one_batch import overfit_one_batch
from diagnostics.keras.training import SharedCopy

out = {}
for seed in json.loads(sys.argv[1]):
    config = RunConfig(batch_size=8, seed=seed).validated()
    tokenizer, split = loading.load_tokenizer("demo"), data_files.load_split(config)
    model = loading.load_model("demo", 3, seed)
    before = [weight.copy() for weight in model.get_weights()]
    batch = build_first_batch(split, tokenizer, config)
    batches = training_batches(split, tokenizer, config, count=3)
    for name, devices in (("one", ""), ("mirrored", "/cpu:0,/cpu:1")):
        os.environ["DEBUGGER_DEVICES"] = devices
        copies = SharedCopy()  # one copy for the three measurements, as one call of the runner makes
        trainer = copies.trainer(model, batches, config)
        trainer.reset(3e-3)
        out[f"{seed} {name}"] = {
            "replicas": trainer.strategy.num_replicas_in_sync,
            "variable_devices": sorted({v.device for v in trainer.model.weights[0].values}) if devices else [],
            "sweep": trainer.run(6),
            "overfit": overfit_one_batch(model, batch, config, 5, copies=copies)["losses"],
            "learnability": learnability_figures(model, tokenizer, config, split, rate=3e-3, epochs=1,
                                                 copies=copies)["given"]["score"],
        }
    out[f"{seed} unchanged"] = all((a == b).all() for a, b in zip(before, model.get_weights()))
print("RESULT " + json.dumps(out))
"""


# The same arithmetic split over two devices: one seed shows it (the seeds' spread is the scenario tests' concern).
DEVICE_SEEDS = SEEDS[:1]


@pytest.fixture(scope="module")
def one_and_mirrored():
    """The sweep, overfit test and learnability on one device and on two, computed in one fresh process."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, json.dumps(DEVICE_SEEDS)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(next(line for line in done.stdout.splitlines() if line.startswith("RESULT "))[7:])


@pytest.mark.parametrize("seed", DEVICE_SEEDS, ids=lambda seed: f"seed{seed}")
def test_sweep_overfit_and_learnability_under_a_mirrored_strategy_match_one_device(one_and_mirrored, seed):
    out = one_and_mirrored
    one, mirrored = out[f"{seed} one"], out[f"{seed} mirrored"]
    assert one["replicas"] == 1 and mirrored["replicas"] == 2
    assert len(mirrored["variable_devices"]) == 2  # each weight lives on both devices
    for name in ("sweep", "overfit"):
        assert len(one[name]) == len(mirrored[name]) > 0
        for a, b in zip(one[name], mirrored[name], strict=True):
            assert abs(a - b) <= 1e-4 * max(1.0, abs(a)), (name, one[name], mirrored[name])
    assert abs(one["learnability"] - mirrored["learnability"]) <= 0.1
    assert out[f"{seed} unchanged"]


def test_fewer_rows_than_devices_fall_back_to_one_device(monkeypatch):
    monkeypatch.setenv(DEVICES_ENV, "/cpu:0,/cpu:1")
    assert training_strategy(min_rows=1).num_replicas_in_sync == 1


def test_one_device_uses_the_default_strategy(monkeypatch):
    monkeypatch.delenv(DEVICES_ENV, raising=False)
    assert training_strategy(min_rows=16).num_replicas_in_sync == 1


# A user's model built and compiled inside their own MirroredStrategy's scope, diagnosed from inside it.
USER_SCOPE = """
import json
import diagnostics
import tensorflow as tf
cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
import tf_keras
from transformers import TFAutoModelForSequenceClassification
from diagnostics import diagnose, watch
from diagnostics.keras import data_files, loading
from diagnostics.config.run import RunConfig

tokenizer, split = loading.load_tokenizer("demo"), data_files.load_split(RunConfig(batch_size=8).validated())
tokenized = split.map(lambda rows: tokenizer(rows["premise"], rows["hypothesis"], truncation=True), batched=True)
strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
with strategy.scope():
    model = TFAutoModelForSequenceClassification.from_pretrained(str(loading.demo_checkpoint_dir()), num_labels=3)
    with watch():
        dataset = model.prepare_tf_dataset(tokenized, batch_size=8, shuffle=True, tokenizer=tokenizer)
    model.compile(optimizer=tf_keras.optimizers.Adam(3e-3))
    before = [weight.copy() for weight in model.get_weights()]
    report = diagnose(model, dataset, tokenizer, stages="model,hparams,overfit", epochs=5)
    unchanged = all((a == b).all() for a, b in zip(before, model.get_weights()))
print("RESULT " + json.dumps({"statuses": {r.id: r.status.value for r in report.results},
                              "summaries": {r.id: str(r.summary) for r in report.results}, "unchanged": unchanged}))
"""


def test_the_checks_run_on_a_model_built_inside_the_users_mirrored_strategy():
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", USER_SCOPE], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(next(line for line in done.stdout.splitlines() if line.startswith("RESULT "))[7:])
    statuses = found["statuses"]
    assert "error" not in statuses.values(), found["summaries"]
    for check in ("model.gradients", "model.weights_after_step", "hparams.loss"):
        assert statuses[check] == "pass", found["summaries"][check]
    assert not any("replica" in summary or "merge_call" in summary for summary in found["summaries"].values())
    assert found["unchanged"]
