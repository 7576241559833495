import pytest

from diagnostics.config.run import RunConfig, default_config
from diagnostics.core.errors import InputError


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"num_labels": 0}, "num_labels must be at least 1"),
        ({"num_labels": -3}, "num_labels must be at least 1"),
        ({"batch_size": 0}, "batch size must be at least 1"),
        ({"max_length": 0}, "max length must be at least 1"),
        ({"num_labels": 101}, "num_labels must be at most 100"),
        ({"num_labels": 10**20}, "num_labels must be at most 100"),
        ({"batch_size": 1025}, "batch size must be at most 1024"),
        ({"max_length": 2049}, "max length must be at most 2048"),
        ({"seed": -5}, "the seed must be at least 0, got -5"),
        ({"seed": 2**32}, "the seed must be at most 4294967295, got 4294967296"),
        ({"train_steps": 10**8}, "train steps must be at most 10000000, got 100000000"),
        ({"task": "imdb"}, "Unknown GLUE task 'imdb'"),
        ({"split": "dev"}, "has no split 'dev'"),
        ({"data_source": "files"}, "needs at least one SPLIT=PATH"),
        ({"checkpoint": "  "}, "checkpoint is empty"),
    ],
)
def test_validated_rejects_bad_values_with_a_clear_message(overrides, message):
    with pytest.raises(InputError, match=message):
        RunConfig(**overrides).validated()


def test_validated_normalises_task_name():
    assert RunConfig(task=" MNLI ").validated().task == "mnli"


def test_default_config_uses_demo_kit_offline_and_hub_online():
    assert default_config(False).checkpoint == "demo" and default_config(False).data_source == "demo"
    assert default_config(True).checkpoint == "distilbert-base-uncased" and default_config(True).data_source == "hub"


@pytest.mark.parametrize("hub", [False, True])
def test_settings_follow_the_checkpoint_whether_or_not_the_hub_answers(hub):
    demo = default_config(hub, checkpoint="demo")
    assert (demo.data_source, demo.learning_rate) == ("demo", 3e-3)
    pretrained = default_config(hub, checkpoint="/models/all-MiniLM-L6-v2")
    assert pretrained.learning_rate == 5e-5 and pretrained.data_source == ("hub" if hub else "demo")
    assert default_config(hub).learning_rate == (5e-5 if hub else 3e-3)
    assert default_config(hub, checkpoint="demo", learning_rate=1e-4).learning_rate == 1e-4  # what is given stays


def test_command_line_demo_checkpoint_gets_the_kit_with_the_hub_reachable(monkeypatch):
    from diagnostics.keras import loading
    from diagnostics.__main__ import build_parser, config_from_args

    monkeypatch.setattr(loading, "hub_reachable", lambda timeout=3.0: True)
    config = config_from_args(build_parser().parse_args(["run", "--checkpoint", "demo"]))
    assert (config.data_source, config.learning_rate) == ("demo", 3e-3)
    config = config_from_args(build_parser().parse_args(["run"]))
    assert (config.checkpoint, config.data_source, config.learning_rate) == ("distilbert-base-uncased", "hub", 5e-5)


def test_requested_columns_follow_label_placement():
    inputs = ["input_ids", "attention_mask"]
    assert RunConfig(labels_in="inputs").requested_columns(inputs) == inputs + ["label"]
    assert RunConfig(labels_in="separate").requested_columns(inputs) == inputs
    assert RunConfig(labels_in="separate").label_columns() == ["label"]
    assert RunConfig(columns=("input_ids", "labels")).requested_columns(inputs) == ["input_ids", "labels"]


def test_effective_num_labels_defaults_to_task():
    assert RunConfig(task="mnli").effective_num_labels == 3
    assert RunConfig(task="stsb").effective_num_labels == 1
    assert RunConfig(task="mnli", num_labels=2).effective_num_labels == 2


@pytest.mark.parametrize("overrides", [{"num_labels": 100}, {"batch_size": 1024}, {"max_length": 2048},
                                       {"seed": 2**32 - 1}, {"seed": 0}, {"train_steps": 10**7}])
def test_validated_accepts_each_bound_itself(overrides):
    assert RunConfig(**overrides).validated()


def test_hosted_mode_caps_num_labels_lower(monkeypatch):
    monkeypatch.setenv("DEBUGGER_HOSTED", "1")
    with pytest.raises(InputError, match=r"hosted mode caps num_labels at 10 \(got 11\)"):
        RunConfig(num_labels=11).validated()
