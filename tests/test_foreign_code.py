"""Training code the checks were not designed around: a model built inside a strategy scope, datasets made by
`prepare_tf_dataset` and changed by `tf.data` methods, the user's optimizer with all its settings, labels taken from
the data, a loss that stops the gradients; and `tests/scripts/glue_classifier.py`, a script in a public example's
shape, traced end to end."""

import numpy as np
import pytest

from conftest import make_split
from diagnostics.result import Status


def classifier(checkpoint, num_labels):
    from transformers import TFAutoModelForSequenceClassification

    return TFAutoModelForSequenceClassification.from_pretrained(str(checkpoint), num_labels=num_labels)


def tokenized_mnli(split, tokenizer):
    return split.map(lambda rows: tokenizer(rows["premise"], rows["hypothesis"]), batched=True)


# ---------------------------------------------------------------- strategies


@pytest.mark.parametrize("strategy", ["one_device", "default"])
def test_step_taking_checks_pass_on_a_model_built_inside_a_strategy_scope(strategy, bert_checkpoint, bert_tokenizer,
                                                                           mnli_split):
    import tensorflow as tf
    import tf_keras

    from diagnostics import diagnose

    scope = tf.distribute.OneDeviceStrategy("/cpu:0") if strategy == "one_device" else tf.distribute.get_strategy()
    with scope.scope():
        model = classifier(bert_checkpoint, 3)
        dataset = model.prepare_tf_dataset(tokenized_mnli(mnli_split, bert_tokenizer), batch_size=4, shuffle=True,
                                           tokenizer=bert_tokenizer)
        model.compile(optimizer=tf_keras.optimizers.Adam(learning_rate=1e-3))
        report = diagnose(model, dataset, bert_tokenizer, stages="model,hparams,overfit", epochs=3)
    statuses = {result.id: result.status for result in report.results}
    for check in ("model.gradients", "model.weights_after_step", "hparams.loss", "hparams.lr_sweep",
                  "hparams.lr_range_test", "overfit.one_batch"):
        assert statuses[check] is not Status.ERROR, report[check].summary
        assert "merge_call" not in str(report[check].summary) and "replica" not in str(report[check].summary)
    assert statuses["model.gradients"] is Status.PASS and statuses["hparams.loss"] is Status.PASS


# ---------------------------------------------------------------- the script's own output


def test_tracing_leaves_the_scripts_logging_and_progress_settings_as_they_were(tmp_path):
    import subprocess
    import sys

    from diagnostics.trace import trace_script

    script = tmp_path / "settings.py"
    script.write_text(
        "import logging, os\n"
        "import datasets, transformers\n"
        "from transformers import TFTrainingArguments\n"
        "args = TFTrainingArguments(output_dir='out')\n"
        "print('SETTINGS', transformers.logging.get_verbosity(), datasets.is_progress_bar_enabled(), args.disable_tqdm,"
        " [os.environ.get(key) for key in ('TF_CPP_MIN_LOG_LEVEL', 'TRANSFORMERS_VERBOSITY', "
        "'HF_DATASETS_DISABLE_PROGRESS_BARS', 'TOKENIZERS_PARALLELISM')])\n")
    env = {key: value for key, value in __import__("os").environ.items()
           if key not in __import__("diagnostics").SET_ON_IMPORT}
    plain = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path, env=env,
                           timeout=300)
    traced = trace_script(script, capture_output=True, cwd=tmp_path)
    expected = next(line for line in plain.stdout.splitlines() if line.startswith("SETTINGS"))
    assert "SETTINGS 30 True False" in expected  # Transformers' warnings and the bars on, as a plain run has them
    assert expected in traced.output.splitlines()


# ---------------------------------------------------------------- the user's optimizer, whole


def test_copies_train_with_every_setting_of_the_users_optimizer(bert_checkpoint, bert_tokenizer, mnli_split):
    from transformers import create_optimizer

    from diagnostics import diagnose
    from diagnostics.training import Trainer, build_optimizer, sweep_optimizer

    model = classifier(bert_checkpoint, 3)
    optimizer, _ = create_optimizer(init_lr=2e-3, num_train_steps=40, num_warmup_steps=4, adam_epsilon=1e-8,
                                    weight_decay_rate=0.01, adam_global_clipnorm=1.0)
    model.compile(optimizer=optimizer)
    dataset = model.prepare_tf_dataset(tokenized_mnli(mnli_split, bert_tokenizer), batch_size=4,
                                       tokenizer=bert_tokenizer)
    report = diagnose(model, dataset, bert_tokenizer, stages="hparams")
    config = report.config
    rows = {row["setting"]: row for row in report["hparams.optimizer"].evidence["settings"]}
    assert (rows["global_clipnorm"]["value"], rows["global_clipnorm"]["source"]) == ("1", "set")
    assert (rows["epsilon"]["value"], rows["epsilon"]["source"]) == ("1e-08", "set")
    assert "LayerNorm" in rows["exclude_from_weight_decay"]["value"]
    assert "global_clipnorm=1," in report["hparams.optimizer"].summary
    # The Model stage's step trains with the schedule; the sweep and the overfit test at a constant rate; all clip.
    stepped, swept = build_optimizer(config), sweep_optimizer(config, 1e-3)
    for clone in (stepped, swept):
        assert clone is not optimizer
        assert clone.get_config()["global_clipnorm"] == 1.0 and clone.get_config()["epsilon"] == 1e-8
        assert clone.get_config()["weight_decay_rate"] == 0.01
        assert clone._exclude_from_weight_decay == optimizer._exclude_from_weight_decay
    assert type(stepped.get_config()["learning_rate"]) is dict and swept.get_config()["learning_rate"] == 1e-3
    trainer = Trainer(model, [next(iter(dataset))], config)
    trainer.reset(1e-3)
    assert np.isfinite(trainer.run(2)).all()
    trainer.reset(1e-3)  # the legacy optimizer's state zeroed after it was built
    assert int(trainer.optimizer.iterations.numpy()) == 0
    assert int(optimizer.iterations.numpy()) == 0  # the user's own optimizer never stepped
