"""`report.repair()` in a notebook: each cause's fix as code on the user's own objects, in their names, which run
as they are and leave a model whose causes are gone when diagnosed again."""

import pytest

from diagnostics.config.run import RunConfig
from diagnostics.usercode.repair_cells import repair_cells
from tests.usercode.test_own_code import classifier, features_labels


def cause(owner, fix):
    return {"owner": owner, "status": "fail", "summary": "", "fix": fix, "explains": []}


def test_a_rate_the_sweep_measured_is_a_new_optimizer_in_the_users_keras_and_the_loss_is_kept():
    config = RunConfig(loss="SparseCategoricalCrossentropy(from_logits=True)", keras_name="keras")
    cells = repair_cells([cause("hparams.lr_sweep", "keras.optimizers.Adam(learning_rate=2e-05)")], config,
                         model="bert_classifier")
    assert len(cells) == 1 and cells.cells[0].owners == ("hparams.lr_sweep",)
    assert cells.code.splitlines() == [
        "loss = bert_classifier.loss  # the loss it was compiled with",
        "optimizer = keras.optimizers.Adam(learning_rate=2e-05)",
        "bert_classifier.compile(optimizer=optimizer, loss=loss)"]
    compile(cells.code, "cell", "exec")


def test_create_optimizer_keeps_its_schedule_and_the_internal_loss_stays_internal():
    config = RunConfig(optimizer="create_optimizer", train_steps=300, warmup_steps=30, weight_decay=0.01)
    cells = repair_cells([cause("hparams.lr_sweep", "optimizer, schedule = create_optimizer(init_lr=3e-05, "
                                "num_train_steps=300, num_warmup_steps=30, weight_decay_rate=0.01)")], config)
    assert cells.code.splitlines() == [
        "optimizer, schedule = create_optimizer(init_lr=3e-05, num_train_steps=300, num_warmup_steps=30, "
        "weight_decay_rate=0.01)",
        "model.compile(optimizer=optimizer)"]


def test_labels_that_are_wrong_in_the_data_and_a_head_of_the_users_own_say_why_no_code_repairs_them():
    cells = repair_cells([cause("data.label_range", "Drop or relabel these rows"),
                          cause("model.config", "TFAutoModelForSequenceClassification.from_pretrained(checkpoint, "
                                                "num_labels=3)")], RunConfig(), loaded=None)
    assert len(cells) == 0 and [item.owner for item in cells.unrepaired] == ["data.label_range", "model.config"]
    assert "not repairable in code" in str(cells) and "Dense" in str(cells)


def test_repair_cells_run_on_the_users_model_and_diagnose_then_finds_the_causes_gone(bert_checkpoint, bert_tokenizer,
                                                                                     mnli_split):
    """A two-label head on three-class MNLI, compiled with a loss that reads its logits as probabilities: the cells,
    written for the name the notebook gives the model, rebuild the head and compile the loss that reads logits; run
    as they are, diagnose() finds neither cause."""
    import tf_keras

    from diagnostics import diagnose

    tf_keras.utils.set_random_seed(0)
    bert_classifier = classifier(bert_checkpoint, 2)
    bert_classifier.compile(optimizer=tf_keras.optimizers.Adam(3e-3), loss="sparse_categorical_crossentropy",
                            metrics=["accuracy"])
    data = features_labels(mnli_split, bert_tokenizer)
    report = diagnose(bert_classifier, data, bert_tokenizer, task="mnli", stages="model", progress=False)
    owners = [cause.owner for cause in report.causes]
    assert "model.config" in owners, [(cause.owner, str(cause.summary)) for cause in report.causes]
    cells = report.repair()
    assert cells.cells and "bert_classifier = TFAutoModelForSequenceClassification.from_pretrained(" in cells.code
    assert "num_labels=3" in cells.code and "metrics=metrics" in cells.code
    namespace = {"bert_classifier": bert_classifier}
    exec(cells.code, namespace)  # noqa: S102 - the cell, run as the notebook would run it
    repaired = namespace["bert_classifier"]
    assert repaired is not bert_classifier and repaired.config.num_labels == 3
    assert [metric for metric in repaired.compiled_metrics._user_metrics] == ["accuracy"]
    again = diagnose(repaired, data, bert_tokenizer, task="mnli", stages="model", progress=False)
    assert not {"model.config"} & {cause.owner for cause in again.causes}, again.causes
    assert again["model.config"].status.value == "pass"


@pytest.mark.slow  # full tier: trains the sweep; the other repair-cell tests run the cells
def test_a_loss_repaired_in_a_cell_is_the_loss_hparams_loss_then_passes(bert_checkpoint, bert_tokenizer, mnli_split):
    import tf_keras

    from diagnostics import diagnose

    tf_keras.utils.set_random_seed(0)
    model = classifier(bert_checkpoint, 3)
    model.compile(optimizer=tf_keras.optimizers.Adam(3e-3),
                  loss=tf_keras.losses.SparseCategoricalCrossentropy(from_logits=False))
    data = features_labels(mnli_split, bert_tokenizer)
    report = diagnose(model, data, bert_tokenizer, task="mnli", stages="model,hparams", progress=False)
    assert "hparams.loss" in {cause.owner for cause in report.causes}
    cells = report.repair()
    assert "from_logits=True" in cells.code and "hparams.loss" in cells.cells[0].owners, str(cells)
    namespace = {"model": model}
    exec(cells.code, namespace)  # noqa: S102
    assert namespace["model"] is model
    again = diagnose(model, data, bert_tokenizer, task="mnli", stages="model,hparams", progress=False)
    assert again["hparams.loss"].status.value == "pass", again["hparams.loss"].summary
