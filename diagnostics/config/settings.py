"""Every setting of a run configuration, declared once: its `RunConfig` field, its parser, its bounds, a link's
query parameter, the command line's flag and help, and the sidebar's widget (its kind, label, help, section and when
it shows); and the values the choice settings may take. The links (`ui/links.py`), the sidebar (`ui/sidebar.py` draws
each row's `Widget`; `ui/session.py` gives each its default) and the command line (`diagnostics/__main__.py`) are
generated from `SETTINGS` (`diagnostics/config/forms.py` reads a configuration to and from them), and
`RunConfig.validated` judges every value however it came by its row's `Bounds`; adding a setting is a `RunConfig`
field and a row here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from diagnostics.core.errors import InputError
from diagnostics.config.tasks import TASKS
from diagnostics.i18n import N_, Text, msg

DATA_SOURCES = ("demo", "hub", "files")
LABEL_PLACEMENTS = ("inputs", "separate")
# How the loss reaches model.compile: the model's own loss, or a Keras loss as a string or an object.
LOSSES = {
    "internal": N_("compile(optimizer) with no loss: the model's internal loss"),
    "sparse_categorical_crossentropy":
        N_('compile(loss="sparse_categorical_crossentropy"): a string, from_logits=False'),
    "SparseCategoricalCrossentropy(from_logits=True)": "compile(loss=SparseCategoricalCrossentropy(from_logits=True))",
    "SparseCategoricalCrossentropy(from_logits=False)":
        "compile(loss=SparseCategoricalCrossentropy(from_logits=False))",
    "mse": N_('compile(loss="mse"): mean squared error, for regression (stsb)'),
}
# Losses only a user's own code gives (a Keras model with its own head: one-hot labels, or one binary output).
CODE_LOSSES = {
    "categorical_crossentropy": 'compile(loss="categorical_crossentropy"): one-hot labels, from_logits=False',
    "CategoricalCrossentropy(from_logits=True)": "compile(loss=CategoricalCrossentropy(from_logits=True))",
    "CategoricalCrossentropy(from_logits=False)": "compile(loss=CategoricalCrossentropy(from_logits=False))",
    "binary_crossentropy": 'compile(loss="binary_crossentropy"): from_logits=False',
    "BinaryCrossentropy(from_logits=True)": "compile(loss=BinaryCrossentropy(from_logits=True))",
    "BinaryCrossentropy(from_logits=False)": "compile(loss=BinaryCrossentropy(from_logits=False))",
    "custom": "compile(loss=...) with a loss of the script's own (a function or a class): training uses it as it is; "
              "the checks that judge a loss's kind or its value skip",
}
# How the optimizer reaches model.compile: a string (Keras defaults) or an object with a learning rate.
OPTIMIZERS = {
    "adam": N_('compile(optimizer="adam"): a string, Keras defaults'),
    "Adam": "compile(optimizer=Adam(learning_rate=LR))",
    "AdamW": "compile(optimizer=AdamW(learning_rate=LR, weight_decay=WD))",
    "create_optimizer": "transformers.create_optimizer(LR, num_train_steps, num_warmup_steps, weight_decay_rate=WD)",
}
# Optimizers only a user's own code builds (no link or setting offers them): any other Keras optimizer (SGD,
# RMSprop...), whose copies train with clones of it.
CODE_OPTIMIZERS = {"other": "compile(optimizer=SGD(...)), RMSprop, ... (any other Keras optimizer, cloned as built)"}


# Upper bounds on the numbers of a run, whoever gives them (the sidebar, a link, the command line, diagnose()):
# GLUE tasks have at most three labels, a BERT-family model reads at most 512 tokens, and nothing a check builds
# or shows (label names, counts per label, the first batch, the schedule) may grow with a number past these.
# Hosted mode lowers the first three (limits.Limits).
MAX_NUM_LABELS = 100
MAX_BATCH_SIZE = 1024
MAX_LENGTH = 2048
MAX_SEED = 2**32 - 1  # NumPy's and Keras's seeds
MAX_TRAIN_STEPS = 10_000_000


def parse_flag(text: str) -> bool:
    value = str(text).strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off"):
        return False
    raise InputError(msg("{text} is not a yes/no value; write 1 or 0", text=repr(text)))


def parse_whole(text: str) -> int:
    try:
        number = float(text)
    except (TypeError, ValueError):
        raise InputError(msg("{text} is not a whole number", text=repr(text))) from None
    if not number.is_integer():
        raise InputError(msg("{text} is not a whole number", text=repr(text)))
    return int(number)


def parse_number(text: str) -> float:
    try:
        return float(str(text).strip())
    except ValueError:
        raise InputError(msg("{text} is not a number; write it like 5e-5", text=repr(text))) from None


def parse_optional_whole(text) -> int | None:
    return None if text is None or str(text).strip().lower() in ("", "default") else parse_whole(text)


def parse_columns(text: str) -> tuple[str, ...] | None:
    return tuple(column.strip() for column in str(text).split(",") if column.strip()) or None


@dataclass(frozen=True)
class Bounds:
    """The values a number setting may take, whoever gives it (the sidebar, a link, the command line, `diagnose()`):
    `RunConfig.validated` and the sweep's and epochs' validation judge every value by it, the command line refuses
    the rest when it parses them, and a number widget that clamps starts at `low`.

    Attributes:
        name: how a problem names the setting (a message id).
        low: the lowest value; with `above`, values must be above it (a rate must be positive).
        high: the highest value (None: no upper bound).
        whole: the value is a whole number.
        note: said after the upper bound (a message id), e.g. why it is there.
    """

    name: str
    low: float
    high: float | None = None
    above: bool = False
    whole: bool = False
    note: str = ""

    def problem(self, value) -> Text | None:
        """What is wrong with `value`, or None (a value left unset, None, is the default's and fine)."""
        if value is None:
            return None
        name = msg(self.name)
        if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value) \
                or (self.above and value <= self.low):
            if self.above:
                return msg("{name} must be a positive number, got {value}", name=name, value=repr(value))
            return msg("{name} must be a number, got {value}", name=name, value=repr(value))
        if self.whole and not float(value).is_integer():
            return msg("{name} must be a whole number, got {value}", name=name, value=repr(value))
        if value < self.low:
            return msg("{name} must be at least {low}, got {value}", name=name, low=self._text(self.low),
                       value=repr(value))
        if self.high is not None and value > self.high:
            return msg("{name} must be at most {high}{note}, got {value}", name=name, high=self._text(self.high),
                       note=msg(self.note) if self.note else "", value=_given(value))
        return None

    def _text(self, bound: float) -> str:
        return str(int(bound)) if self.whole else f"{bound:g}"


def _given(value) -> str:
    """A value as given, short: a link's `batch_size=1e99` is a whole number of a hundred digits once parsed."""
    return repr(value) if abs(value) < 1e15 else f"{float(value):.3g}"


def parse_data_files(text: str) -> tuple[tuple[str, str], ...]:
    """SPLIT=PATH entries, one a line or separated by ';' (a link's form), into (split, path) pairs: the one parser
    of the sidebar's box, a link's `files` and the command line's `--data-files`.

    Raises:
        InputError: an entry without a split, an '=' or a path.
    """
    pairs = []
    for line in text.replace(";", "\n").splitlines():
        line = line.strip()
        if not line:
            continue
        split, sep, path = line.partition("=")
        if not sep or not split.strip() or not path.strip():
            raise InputError(msg("Data file line {line} should read SPLIT=PATH, e.g. train=/data/mnli/train.tsv.",
                                 line=repr(line)))
        pairs.append((split.strip(), path.strip()))
    return tuple(pairs)


def rate_text(value: float) -> str:
    """A rate as the sidebar shows it: '5e-05', '0.001'; every digit kept when :g would round it."""
    short = f"{float(value):g}"
    return short if float(short) == float(value) else repr(float(value))


def _files_text(pairs) -> str:
    return "\n".join(f"{split}={path}" for split, path in pairs)


def _same(value):
    return value


@dataclass(frozen=True)
class When:
    """A condition on another setting: it holds one of `values` (the sidebar shows or enables a widget by it)."""

    field: str
    values: tuple

    def __call__(self, value_of: Callable[[str], Any]) -> bool:
        """Args: value_of: a setting's field to the value its widget holds now."""
        return value_of(self.field) in self.values


@dataclass(frozen=True)
class Widget:
    """How the sidebar shows a setting; `ui/sidebar.py` draws it from this alone, but for the few behaviours it
    names there (a checkpoint's defaults, uploads, the splits the data has, the rate a string optimizer means).

    Attributes:
        kind: "text", "area" (several lines), "select", "radio", "number" or "check".
        label, help, placeholder: message ids (translated where drawn).
        section: "run" (the sidebar's top), "options" (its Dataset options) or "training" (its Training setup).
        options: a select's or radio's values (default: the setting's `choices`).
        labels: a message id for each option, shown instead of the value.
        choice_help: a message id for each option, listed as the help.
        pair: drawn beside the next widget of its section, in two columns.
        when: drawn only while this holds.
        enabled: drawn disabled unless this holds.
        under: drawn right after that setting's widget (the data files under their data source).
        clamps: a number widget that starts at its setting's lowest value (`Bounds.low`), a whole number for a
            setting of whole numbers, else a float, as its step is.
        step: a number's (an int for a setting of whole numbers, a float for one of any numbers: 0.05 for a share).
    """

    kind: str
    label: str
    section: str = "run"
    help: str = ""
    placeholder: str = ""
    options: tuple = ()
    labels: Mapping[str, str] | None = None
    choice_help: Mapping[str, str] | None = None
    pair: bool = False
    when: When | None = None
    enabled: When | None = None
    under: str = ""
    clamps: bool = False
    step: int | float | None = None


@dataclass(frozen=True)
class Setting:
    """One setting of a run.

    Attributes:
        field: its `RunConfig` field; the sidebar keeps it in session state under "run.<field>".
        param: a link's query parameter ("" for one no link carries on its own).
        parse: a text (a link's value, the command line's argument) to the value; an InputError when unusable.
        flag: the command line's flag (None: not on the command line).
        help: the command line's help.
        choices: the values it may take, when they are a fixed list.
        bounds: the values a number may take (`Bounds`), judged wherever it comes from.
        widget: the value as the sidebar's widget holds it (a rate as text, the data files as lines).
        from_widget: the widget's value back to the value.
        ui: the sidebar's widget (None: the setting has none there; a page's own setting is drawn by its page).
    """

    field: str
    param: str
    parse: Callable[[str], Any]
    flag: str | None = None
    help: str = ""
    choices: tuple | None = None
    bounds: Bounds | None = None
    widget: Callable[[Any], Any] = _same
    from_widget: Callable[[Any], Any] = _same
    session_key: str = ""
    ui: Widget | None = None

    def cli_parse(self, text: str):
        """The command line's argument to the value, refused at once when out of `bounds`."""
        value = self.parse(text)
        problem = self.bounds.problem(value) if self.bounds is not None else None
        if problem is not None:
            raise InputError(problem)
        return value

    @property
    def key(self) -> str:
        """Its session-state key: "run.<field>" for the sidebar's, the page's own for a page setting."""
        return self.session_key or f"run.{self.field}"


_S, _W = Setting, Widget
DATA_SOURCE_LABELS = {"demo": N_("Bundled demo samples"), "hub": N_("Hugging Face Hub (nyu-mll/glue)"),
                      "files": N_("Local files")}
_FILES = When("data_source", ("files",))
_DECAYS = When("optimizer", ("AdamW", "create_optimizer"))
_SCHEDULED = When("optimizer", ("create_optimizer",))
# In the order a link applies them (the data source after its files, the split after its task and source); the
# sidebar draws them in this order within each section, a widget with `under` right after its parent's.
SETTINGS: tuple[Setting, ...] = (
    _S("checkpoint", "", str.strip, "--checkpoint", "Hub name, local save_pretrained directory, or 'demo' (default: "
       "distilbert-base-uncased, or the demo kit when the Hub cannot be reached)",
       ui=_W("text", N_("Checkpoint"), help=N_("A Hub name, a local directory written by save_pretrained, or 'demo' "
                                               "for the offline kit."))),
    _S("task", "task", str.strip, "--task", "GLUE task (default: mnli)",
       ui=_W("select", N_("GLUE task"), options=tuple(TASKS))),
    _S("data_files", "files", parse_data_files, "--data-files",
       "local files in the task's GLUE schema (csv, tsv, json, jsonl, parquet)",
       widget=_files_text, from_widget=parse_data_files,
       ui=_W("area", N_("Data files (one SPLIT=PATH a line)"), under="data_source", when=_FILES,
             placeholder="train=/data/mnli/train.tsv\nvalidation_matched=/data/mnli/dev.tsv",
             help=N_("csv, tsv with a header row, json/jsonl or parquet, in the task's GLUE schema."))),
    _S("data_source", "data", str.strip, "--data-source", "where the data comes from (default: files when "
       "--data-files is given, else the Hub, else the demo samples)", choices=DATA_SOURCES,
       ui=_W("radio", N_("Data"), labels=DATA_SOURCE_LABELS)),
    _S("split", "split", str.strip, "--split", "split to check (default: train)", from_widget=str.strip,
       ui=_W("select", N_("Split"))),
    _S("num_labels", "num_labels", parse_optional_whole, "--num-labels",
       "num_labels for from_pretrained (default: the task's)",
       bounds=Bounds(N_("num_labels"), 1, MAX_NUM_LABELS, whole=True, note=N_(" (a GLUE task has at most 3 labels)")),
       from_widget=lambda value: None if value is None else int(value),
       ui=_W("number", N_("num_labels"), step=1, placeholder=N_("task default ({count})"),
             help=N_("What from_pretrained(..., num_labels=N) gets. Empty: the task's own count."))),
    _S("batch_size", "batch_size", parse_whole, "--batch-size", "rows per batch, as to_tf_dataset gets them (default "
       "16)", bounds=Bounds(N_("batch size"), 1, MAX_BATCH_SIZE, whole=True), from_widget=int,
       ui=_W("number", N_("Batch size"), step=1, pair=True)),
    _S("max_length", "max_length", parse_whole, "--max-length", "the tokenizer's truncation length (default 128)",
       bounds=Bounds(N_("max length"), 1, MAX_LENGTH, whole=True), from_widget=int,
       ui=_W("number", N_("Max length"), step=1)),
    _S("columns", "columns", parse_columns, "--columns",
       "comma-separated columns= for to_tf_dataset (default: the model's inputs + label)",
       widget=lambda value: ",".join(value) if value else "", from_widget=parse_columns,
       ui=_W("text", N_("columns= for to_tf_dataset"), "options", placeholder=N_("model inputs + label"),
             help=N_("Comma-separated, as in to_tf_dataset(columns=[...]); e.g. input_ids,labels. Empty: the model's "
                     "inputs and label."))),
    _S("labels_in", "labels_in", str.strip, "--labels-in", "labels inside the input dict or Keras (x, y)",
       choices=("inputs", "separate"),
       ui=_W("radio", N_("Labels"), "options", labels={"inputs": N_("inside the input dict"),
                                                        "separate": N_("separate, Keras (x, y)")})),
    _S("shuffle", "shuffle", parse_flag, "--no-shuffle", "take the first rows instead of a shuffled batch",
       from_widget=bool, ui=_W("check", N_("Shuffle (to_tf_dataset(shuffle=True))"), "options")),
    _S("shuffle_labels", "shuffle_labels", parse_flag, None, "", from_widget=bool,
       ui=_W("check", N_("Shuffle the labels apart from their texts (a bug)"), "options")),
    _S("seed", "seed", parse_whole, "--seed", "seeds every random choice (default 0)",
       bounds=Bounds(N_("the seed"), 0, MAX_SEED, whole=True), from_widget=int,
       ui=_W("number", N_("Seed"), "options", clamps=True, step=1)),
    _S("loss", "loss", str.strip, "--loss", "internal (the model's own, default), or a Keras loss as compile() gets "
       "it", choices=tuple(LOSSES), ui=_W("select", N_("Loss"), "training", choice_help=LOSSES)),
    _S("optimizer", "optimizer", str.strip, "--optimizer", "'adam' (a string, Keras defaults), Adam or AdamW "
       "objects, or create_optimizer (default Adam)", choices=tuple(OPTIMIZERS),
       ui=_W("select", N_("Optimizer"), "training", choice_help=OPTIMIZERS)),
    _S("learning_rate", "lr", parse_number, "--learning-rate", "for Adam, AdamW and create_optimizer (default 5e-5)",
       bounds=Bounds(N_("learning rate"), 0, above=True), widget=rate_text,
       from_widget=lambda text: _named_number(msg("learning rate"), text),
       ui=_W("text", N_("Learning rate"), "training", pair=True)),
    _S("weight_decay", "weight_decay", parse_number, "--weight-decay", "for AdamW and create_optimizer (default 0)",
       bounds=Bounds(N_("weight decay"), 0), widget=rate_text,
       from_widget=lambda text: _named_number(msg("weight decay"), text),
       ui=_W("text", N_("Weight decay"), "training", enabled=_DECAYS)),
    _S("train_steps", "train_steps", parse_whole, "--train-steps",
       "planned training steps, for create_optimizer's schedule",
       bounds=Bounds(N_("train steps"), 1, MAX_TRAIN_STEPS, whole=True), from_widget=int,
       ui=_W("number", N_("Planned train steps"), "training", clamps=True, step=100, pair=True, when=_SCHEDULED)),
    _S("warmup_steps", "warmup_steps", parse_whole, "--warmup-steps", "warmup steps, for create_optimizer's schedule",
       bounds=Bounds(N_("warmup steps"), 0, whole=True), from_widget=int,
       ui=_W("number", N_("Warmup steps"), "training", clamps=True, step=10, when=_SCHEDULED)),
)
BY_FIELD = {setting.field: setting for setting in SETTINGS}
# The settings a link carries as its own parameters (the checkpoint it reads first, with the scenario).
LINKED = tuple(setting for setting in SETTINGS if setting.param)


# The pages' own settings (the Hyperparameters page's sweep, the Overfit page's epochs): a `SweepSettings` field,
# or "epochs"; each kept in the session under its page's key and carried by links and the command line.
SWEEP_SETTINGS: tuple[Setting, ...] = (
    _S("min_rate", "min_rate", parse_number, "--sweep-min", "lowest rate of the sweep (default 1e-6)",
       bounds=Bounds(N_("the sweep's lowest rate"), 0, above=True), from_widget=float, session_key="hparams.min_rate"),
    _S("max_rate", "max_rate", parse_number, "--sweep-max", "highest rate of the sweep (default 1e-2)",
       bounds=Bounds(N_("the sweep's highest rate"), 0, above=True), from_widget=float, session_key="hparams.max_rate"),
    _S("rates", "rates", parse_whole, "--sweep-rates", "rates in the sweep's log grid (default 7)",
       bounds=Bounds(N_("the sweep's rates"), 2, 25, whole=True), from_widget=int, session_key="hparams.rates"),
    _S("steps", "steps", parse_whole, "--sweep-steps", "train steps at each rate (default 8)",
       bounds=Bounds(N_("the steps per rate"), 1, 500, whole=True), from_widget=int, session_key="hparams.steps"),
    _S("range_steps", "range_steps", parse_whole, "--range-steps", "steps of the learning-rate range test (default "
       "40)", bounds=Bounds(N_("the range test's steps"), 5, 1000, whole=True), from_widget=int,
       session_key="hparams.range_steps"),
)
EPOCHS = _S("epochs", "epochs", parse_whole, "--epochs", "epochs of the overfit-one-batch test (default 20)",
            bounds=Bounds(N_("the overfit test's epochs"), 1, 1000, whole=True), from_widget=int,
            session_key="overfit.epochs")


def _named_number(name, text) -> float:
    """A number typed in the sidebar ('5e-5', '0.001'); anything else is an InputError naming the field."""
    try:
        return float(str(text).strip())
    except ValueError:
        raise InputError(msg("{name} {text} is not a number; write it like 5e-5 or 0.00005", name=name,
                             text=repr(text))) from None
