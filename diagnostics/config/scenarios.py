"""Workshop scenarios: named presets that each inject one known bug, with the symptom and the checks that must flag
it."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from diagnostics.config.run import RunConfig
from diagnostics.core.errors import InputError
from diagnostics.i18n import N_, msg


@dataclass(frozen=True)
class Scenario:
    """One known bug.

    Attributes:
        name: the preset's name, as `--scenario NAME` takes it.
        title: one line for a picker.
        symptom: what a user sees in `model.fit()`.
        settings: RunConfig fields the scenario sets (over the default configuration).
        expected: the checks owning the causes it injects, one cause each (a tuple inside: any one of them owns it):
            a run of every stage names exactly these causes, and every other finding points at one of them.
    """

    name: str
    title: str
    symptom: str
    settings: dict[str, Any] = field(default_factory=dict)
    expected: tuple = ()

    def apply(self, config: RunConfig) -> RunConfig:
        """The configuration with this scenario's settings; a split the task lacks becomes its test split."""
        settings = dict(self.settings)
        if settings.get("split") == "test":
            settings["split"] = next(s for s in config.glue_task.splits if s.startswith("test"))
        return replace(config, **settings)

    def changed(self, config: RunConfig) -> list[str]:
        """The settings this scenario injects that `config` no longer holds (its fix, or part of it, is in)."""
        injected = self.apply(config)
        return [name for name in self.settings if getattr(config, name) != getattr(injected, name)]

    def expected_ids(self) -> list[str]:
        """Every check id named, alternatives included."""
        return [check for item in self.expected for check in (item if isinstance(item, tuple) else (item,))]

    def caught(self, owners: set[str]) -> dict[str, bool]:
        """For each expected cause, whether a check owning it named a cause (`causes.owners` of the explained
        results; keys join alternatives with ' or ')."""
        return {" or ".join(item) if isinstance(item, tuple) else item:
                any(check in owners for check in (item if isinstance(item, tuple) else (item,)))
                for item in self.expected}

    def unexpected(self, owners: set[str]) -> list[str]:
        """The checks naming a cause this scenario does not inject, in the walk's order."""
        from diagnostics.walk.registry import CHECKS

        return [check for check in CHECKS if check in owners and check not in self.expected_ids()]


SCENARIOS: dict[str, Scenario] = {s.name: s for s in (
    Scenario(
        "course-script", N_("The course's script as written"),
        N_("columns=['input_ids', 'labels'], compile(loss='sparse_categorical_crossentropy', optimizer='adam') and "
           "from_pretrained(checkpoint) with its default two labels on MNLI: on CPU model.fit stops with "
           "'Received a label value of 2 which is outside the valid range of [0, 2)'; on a GPU it prints loss: nan."),
        {"task": "mnli", "columns": ("input_ids", "labels"), "loss": "sparse_categorical_crossentropy",
         "optimizer": "adam", "num_labels": 2, "labels_in": "inputs"},
        ("data.columns", "model.config", "hparams.loss", "hparams.optimizer"),
    ),
    Scenario(
        "labels-in-dict-keras-loss", N_("Labels inside the input dict plus a Keras loss"),
        N_("The labels stay in the input dict while compile(loss=...) gets a Keras loss. Older Transformers "
           "raised 'No gradients provided for any variable'; the installed one moves the labels out for you."),
        {"labels_in": "inputs", "loss": "SparseCategoricalCrossentropy(from_logits=True)"},
        ("hparams.loss",),
    ),
    Scenario(
        "num-labels-too-small", N_("num_labels=2 on MNLI's three labels"),
        N_("from_pretrained(checkpoint, num_labels=2) on MNLI: every row labelled 2 (contradiction) has no output, "
           "so its loss is NaN on a GPU and an InvalidArgumentError on CPU."),
        {"task": "mnli", "num_labels": 2},
        ("model.config",),
    ),
    Scenario(
        "adam-string-default-lr", N_("optimizer=\"adam\" as a string"),
        N_("compile(optimizer='adam') hides the learning rate: it always trains at Keras's default 0.001, whatever "
           "the fit needs. On a pretrained transformer that is twenty times the usual 5e-5: the loss jumps about or "
           "the model forgets its pretraining."),
        {"optimizer": "adam"},
        # The string's rate 1e-3: on random weights (the demo kit) the sweep passes it and the string is the cause;
        # on a pretrained checkpoint the sweep measures it as too high and owns the cause.
        (("hparams.optimizer", "hparams.lr_sweep"),),
    ),
    Scenario(
        "probabilities-not-logits", N_("A loss that reads logits as probabilities"),
        N_("compile(loss=SparseCategoricalCrossentropy(from_logits=False)) on a model that outputs logits: the "
           "loss starts above ln(K) and falls very slowly."),
        {"loss": "SparseCategoricalCrossentropy(from_logits=False)", "labels_in": "separate"},
        ("hparams.loss",),
    ),
    Scenario(
        "test-split-labels", N_("Training on the test split"),
        N_("GLUE's test splits carry label -1: on CPU model.fit stops with 'Received a label value of -1', on a "
           "GPU the loss is NaN from the first batch."),
        {"split": "test"},
        ("data.label_range",),
    ),
    Scenario(
        "shuffled-labels", N_("Labels shuffled apart from their texts"),
        N_("The labels were permuted (e.g. one column shuffled on its own): training runs and the loss moves a "
           "little, but validation accuracy stays at chance."),
        {"shuffle_labels": True},
        ("data.learnability",),
    ),
    Scenario(
        "lr-too-high", N_("A learning rate of 0.1"),
        N_("Adam(learning_rate=0.1): the loss jumps up after a few steps, or turns NaN."),
        {"optimizer": "Adam", "learning_rate": 0.1},
        ("hparams.lr_sweep",),
    ),
    Scenario(
        "fixed", N_("The course's fixed script"),
        N_("num_labels=3, the model's internal loss, Adam with a learning rate chosen for the checkpoint (5e-5 for "
           "a pretrained one; the demo kit's 3e-3 for its random weights): nothing should fail."),
        {"num_labels": None, "loss": "internal", "optimizer": "Adam", "labels_in": "inputs", "columns": None},
        (),
    ),
)}


def get_scenario(name: str) -> Scenario:
    if name not in SCENARIOS:
        raise InputError(msg("Unknown scenario {name}; choose one of: {scenarios}.", name=repr(name),
                             scenarios=", ".join(SCENARIOS)))
    return SCENARIOS[name]
