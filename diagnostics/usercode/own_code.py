"""The user's own pipeline: what their code built (a model, the `tf.data.Dataset` given to `fit`, a tokenizer,
the compile settings, the `to_tf_dataset` call that made the dataset), read into the run configuration and run
context every check already runs on. Nothing here changes the user's objects."""

from __future__ import annotations


import sys
from dataclasses import dataclass, field
from typing import Any


from diagnostics.usercode import hooks

from diagnostics.keras import keras_model

from diagnostics.keras import loading, other_tokenizers
from diagnostics.keras.batches import text_columns_of
from diagnostics.i18n import msg
from diagnostics.config.run import Recipe, RunConfig
from diagnostics.config.settings import MAX_TRAIN_STEPS
from diagnostics.core.context import RunContext
from diagnostics.core.errors import InputError
from diagnostics.core.fixes import keras_name_in
from diagnostics.keras.keras_model import (describe_model, head_of, input_names, input_roles,
                                           is_transformers_classifier)
from diagnostics.keras.internals import checkpoint_path
from diagnostics.keras.optimizers import clone_optimizer
from diagnostics.usercode.compile_settings import (UNCOMPILED_RATE, _optimizer_of, loss_object, read_loss,
                                                   read_optimizer)
from diagnostics.usercode.read_back import _class_names, _labels, _names, one_pass, read_back
from diagnostics.usercode.task_finding import find_task, task_choice_text


@dataclass
class Captured:
    """What the user's code built, as found (`diagnose` arguments, or `trace` at the first `fit`).

    Attributes:
        dataset: what `fit` got (a `tf.data.Dataset`), or None when the code stopped before making it.
        source: the `datasets.Dataset` the user's `to_tf_dataset` was called on, when that call was seen.
        to_tf_dataset: that call's keyword arguments (columns, label_cols, batch_size, shuffle, collate_fn...).
        compile_args: `{"optimizer": ..., "loss": ...}` exactly as given to `compile`, when that call was seen.
        source_hint: the split behind a dataset whose batches were changed after `to_tf_dataset` (a `map` or a
            `batch`): the rows are read back, the task and label names still come from it.
        origin: where it came from, in words ("train.py", "diagnose()").
        namespace: the global names of the code that built them (how it names Keras, for the fixes).
        tokenization: the truncation, max_length and padding of the code's last tokenizer call on text, when seen.
    """

    model: Any = None
    dataset: Any = None
    tokenizer: Any = None
    task: str | None = None
    source: Any = None
    to_tf_dataset: dict | None = None
    compile_args: dict | None = None
    source_hint: Any = None
    origin: str = "your code"
    notes: list[str] = field(default_factory=list)
    namespace: dict | None = None  # the code's global names, to write fixes in its names (default: __main__'s)
    tokenization: dict | None = None  # the code's last tokenizer call on text (`hooks.tokenization`)
    stale_train_step: tuple[int, int, int] | None = None  # `RunConfig.stale_train_step`, seen by the trace
    planned_steps: int | None = None  # the steps the fit plans (`fit_steps`), when the trace saw its arguments


def fit_steps(dataset, arguments: dict) -> int | None:
    """The training steps `fit(dataset, **arguments)` plans: its epochs (after `initial_epoch`) times its
    `steps_per_epoch`, else times the batches the data holds (a dataset's known cardinality, a Sequence's length);
    None when the data does not say (a generator, a dataset of unknown or infinite length without
    `steps_per_epoch`)."""
    epochs = arguments.get("epochs", 1)
    epochs = (epochs if isinstance(epochs, int) else 1) - int(arguments.get("initial_epoch") or 0)
    steps = arguments.get("steps_per_epoch")
    if not isinstance(steps, int) or steps < 1:
        steps = None
        try:
            if hasattr(dataset, "cardinality"):
                steps = int(dataset.cardinality())
            elif hasattr(dataset, "__len__") and hasattr(dataset, "__getitem__") and not isinstance(dataset, dict):
                steps = len(dataset)
        except Exception:  # a length the data cannot give is a plan nobody can read
            steps = None
    return steps * epochs if steps is not None and steps > 0 and epochs > 0 else None


def load_tokenizer_for(model, notes: list | None = None):
    """The tokenizer saved with the model's checkpoint, for `diagnose(tokenizer=None)`; where none loads, the
    stand-in that shows token ids (`other_tokenizers.token_ids_tokenizer`), said in `notes`."""
    config = keras_model.model_config(model)
    # The classifier's checkpoint, else the encoder's inside a Keras model of the script's own.
    names = list(dict.fromkeys(name for name in (checkpoint_path(model), getattr(config, "_name_or_path", "")) if name))
    for name in names:
        try:
            return loading.load_tokenizer(name)
        except Exception:  # the next place, else the stand-in below
            continue
    if notes is not None:
        notes.append(msg("No tokenizer was given, none is among the script's objects and none is saved with the "
                         "model{source}: rows are shown as token ids, and the checks that read their text skip "
                         "(pass --tokenizer, or tokenizer= to diagnose()).",
                         source=msg(" ({source})", source=names[0]) if names else ""))
    return other_tokenizers.token_ids_tokenizer(getattr(config, "vocab_size", None),
                                                getattr(config, "pad_token_id", None))


def build_run(captured: Captured) -> RunContext:
    """The run context the checks run on for the user's own objects.

    Raises:
        InputError: nothing to check, or settings the checks cannot judge.
    """
    model, tokenizer = captured.model, captured.tokenizer
    if tokenizer is not None and type(tokenizer).__module__.startswith(other_tokenizers.OTHER_LIBRARIES):
        tokenizer = captured.tokenizer = other_tokenizers.adapted(tokenizer) or tokenizer  # diagnose(tokenizer=...)
    if tokenizer is None:
        if model is None:
            raise InputError(msg("Nothing to check: neither a model nor a tokenizer was found."))
        tokenizer = captured.tokenizer = load_tokenizer_for(model, captured.notes)
    if tokenizer.pad_token is None and tokenizer.eos_token is not None:
        captured.notes.append(msg("The tokenizer has no padding token (see data.batch)."))
    compiled = _compile_fields(captured)
    if captured.planned_steps and "train_steps" not in compiled:  # create_optimizer's schedule plans its own
        compiled["train_steps"] = min(captured.planned_steps, MAX_TRAIN_STEPS)
    if model is not None:
        _keras_model_fits(model, compiled["loss"])
    num_labels = head_of(model, compiled["loss"]).num_labels if model is not None else None
    source, kwargs = captured.source, dict(captured.to_tf_dataset or {})
    model_config = keras_model.model_config(model) if model is not None else None
    if source is not None:
        finding = find_task(captured.task, columns=list(source.column_names), labels=_labels(source),
                            class_names=_class_names(source), model_config=model_config)
        recipe = Recipe(columns=_names(kwargs.get("columns")), label_cols=_names(kwargs.get("label_cols")),
                        collate_fn=kwargs.get("collate_fn"), collate_fn_args=kwargs.get("collate_fn_args"),
                        origin=captured.origin)
        batch_size, shuffle = int(kwargs.get("batch_size") or 8), bool(kwargs.get("shuffle", False))
        source = _read_as_task(source, finding, captured.notes)
    elif captured.dataset is not None:
        dataset = _one_pass_of(captured)
        with hooks.watch():  # a pipeline that tokenizes as it yields (a Sequence, a generator) does so now
            calls = hooks.seen_calls["count"]
            source, recipe, finding, read, total, batch_size = read_back(
                dataset, tokenizer, task=captured.task, model_config=model_config,
                hint=captured.source_hint, input_names=input_names(model) if model is not None else None)
            if captured.tokenization is None and hooks.seen_calls["count"] > calls:
                captured.tokenization = hooks.tokenization()
        shuffle = False  # the rows as read, in the dataset's order
        if total is None or read < total:
            captured.notes.append(
                msg("Read back the first {read:,} rows of the dataset (of {total:,}): the split-level checks count "
                    "those.", read=read, total=total) if total else
                msg("Read back the first {read:,} rows of the dataset: the split-level checks count those.", read=read))
    else:
        raise InputError(msg("Nothing to check: no dataset was found."))
    if finding.candidates:
        captured.notes.append(task_choice_text(finding))
    elif finding.how != "given":
        captured.notes.append(msg("Task {task}, found from {how}; pass the task to set it.", task=finding.name,
                                  how=finding.how))
    config = RunConfig(
        user_optimizer=_user_optimizer(model, captured),
        user_loss=loss_object(model, (captured.compile_args or {}).get("loss"), seen=captured.compile_args is not None)
        if compiled["loss"] == "custom" else None,
        task_candidates=finding.candidates,
        label_names=finding.label_names,
        checkpoint=_checkpoint_name(model, tokenizer),
        task=finding.name,
        split=str(getattr(source, "split", None) or "train"),
        data_source="code",
        num_labels=num_labels,
        batch_size=batch_size,
        **dict(zip(("max_length", "truncation"), _truncation(captured.tokenization, tokenizer, source), strict=False)),
        columns=recipe.columns,
        labels_in="separate" if recipe.label_cols else "inputs",
        shuffle=shuffle,
        recipe=recipe,
        model_inputs=_model_inputs(model),
        keras_name=keras_name_in(
            captured.namespace if captured.namespace is not None else vars(sys.modules["__main__"])
        ),
        stale_train_step=captured.stale_train_step,
        **compiled,
    )
    if model is not None and not is_transformers_classifier(model):
        captured.notes.append(msg("The model is a Keras model with its own head ({model}): the checks read its output "
                                  "layer and train copies of it.", model=describe_model(model)))
    if model is not None and getattr(model, "optimizer", None) is None and not captured.compile_args:
        captured.notes.append(msg("The model is not compiled (fit would raise): checked as {code} with the model's "
                                  "internal loss.", code=f"compile(optimizer=Adam({UNCOMPILED_RATE:g}))"))
    return RunContext(config, tokenizer, source, _loader(model))


def _one_pass_of(captured: Captured):
    """The dataset to read back: one pass of one that repeats (the rows one epoch goes over, not the same rows
    again), said in a note; else the dataset as given."""
    passed = one_pass(captured.dataset)
    if passed is None:
        return captured.dataset
    captured.notes.append(msg("The dataset repeats (.repeat()): the checks read one pass of it, the rows each epoch "
                              "goes over."))
    return passed


def _read_as_task(source, finding, notes: list):
    """The split with its own text columns (`text`, `review`, ...) read as the task's, when the task was found from
    the rows rather than given: a task nobody named never turns the user's `text` into a missing `sentence`. A task
    the user gave is checked against GLUE's names (data.columns names the column to rename)."""
    from diagnostics.config.tasks import get_task

    needed = list(get_task(finding.name).text_columns)
    missing = [column for column in needed if column not in source.column_names]
    if finding.how == "given" or not missing:
        return source
    spare = text_columns_of(source, needed)
    if len(spare) != len(missing):
        return source
    mapping = dict(zip(spare, missing, strict=False))
    notes.append(msg("The split's own text columns are read as the task's: {mapping}.",
                     mapping=", ".join(f"{mine} → {task}" for mine, task in mapping.items())))
    return source.rename_columns(mapping)


def _keras_model_fits(model, loss: str) -> None:
    """Refuse, with what to do, a Keras model the checks cannot read: no known output width, or no loss to train it
    with (only a Transformers model computes its own).

    Raises:
        InputError: as said.
    """
    name = getattr(getattr(model, "config", None), "_name_or_path", "") or "<checkpoint>"  # for a fix's from_pretrained
    if _is_bare_encoder(model):
        raise InputError(msg("{model} is a bare encoder: it has no classification head, so it gives hidden states, "
                             "not logits, and takes no labels; fit cannot train it as a classifier.",
                             model=type(model).__name__), kind="no_head",
                         fix=f'model = TFAutoModelForSequenceClassification.from_pretrained("{name}", '
                             'num_labels=...)  # the class with a classification head, one output a class')
    if is_transformers_classifier(model):
        width, said = _built_head_width(model), int(model.config.num_labels)
        if width is not None:
            raise InputError(msg("The model's config says num_labels={said}, but its classification head has {width} "
                                 "outputs: num_labels was set on the config after from_pretrained, which does not "
                                 "rebuild the head (and the model's own loss follows the config: num_labels=1 is a "
                                 "regression's).", said=said, width=width), kind="num_labels_after_load",
                             fix=f'model = {type(model).__name__}.from_pretrained("{name}", num_labels=...)  '
                                 '# num_labels given here, one output a class; the config left as it loads')
        return
    try:
        head_of(model, loss)
    except ValueError as exc:
        raise InputError(msg("The model's output cannot be read: {reason}.", reason=exc)) from None
    if loss == "internal":
        raise InputError(msg("{model} has no loss of its own (only a Transformers model computes one): compile it "
                             "with a loss, e.g. {code}.", model=describe_model(model),
                             code='compile(optimizer=..., loss="sparse_categorical_crossentropy")'))


def _is_bare_encoder(model) -> bool:
    """A Transformers base model (`TFAutoModel`'s `TFBertModel`): hidden states out, no classification head, no
    labels taken (huggingface/transformers#5151), though its config still says num_labels=2. It is the base class
    `TFAutoModel` maps its config to (a language-model or sequence-to-sequence class with a head is not)."""
    from transformers import TFPreTrainedModel

    if not isinstance(model, TFPreTrainedModel):
        return False
    from transformers.models.auto.modeling_tf_auto import TF_MODEL_MAPPING

    try:
        return TF_MODEL_MAPPING[type(model.config)] is type(model)
    except (KeyError, ValueError, AttributeError):
        return False


def _built_head_width(model) -> int | None:
    """The outputs of a built Transformers classifier's head where they differ from `config.num_labels` (set after
    `from_pretrained`, which does not rebuild the head: huggingface/transformers#2992): the width of its last 2-D
    kernel, when no 2-D kernel of the model has the config's width (a head assigned before the encoder, as CTRL's,
    is not the last kernel); None when they agree or before it is built."""
    if not getattr(model, "built", False):
        return None
    try:
        kernels = [variable for variable in model.weights if "kernel" in variable.name and len(variable.shape) == 2]
    except ValueError:  # weights not created yet
        return None
    said = int(model.config.num_labels)
    if not kernels or any(int(kernel.shape[-1]) == said for kernel in kernels):
        return None
    return int(kernels[-1].shape[-1])


def _compile_fields(captured: Captured) -> dict[str, Any]:
    model, given = captured.model, captured.compile_args
    seen = given is not None
    if model is None and not seen:
        return {"loss": "internal", "optimizer": "Adam"}
    fields_ = read_optimizer(model, (given or {}).get("optimizer"), seen=seen, planned_steps=captured.planned_steps)
    fields_["loss"] = read_loss(model, (given or {}).get("loss"), seen=seen)
    return fields_


def _user_optimizer(model, captured: Captured):
    """The optimizer object the user compiled with, for copies to clone (None for the string 'adam', which Keras
    builds with its defaults as the configuration does, or for no optimizer; another string is the object compile
    built from it)."""
    given = (captured.compile_args or {}).get("optimizer")
    optimizer = _optimizer_of(model, given)
    if optimizer is None or (isinstance(given, str) and given.lower() == "adam"):
        return None
    clone_optimizer(optimizer)  # one that cannot be rebuilt is said now, before any check trains
    return optimizer


def _model_inputs(model) -> tuple[str, ...] | None:
    """The inputs a Keras model with named inputs takes, by the keys the checks give a batch's parts (a TF Hub
    encoder's `input_mask` is its attention mask: `keras_model.input_roles`)."""
    names = input_names(model) if model is not None else None
    if not names:
        return None
    roles = input_roles(names) or {}
    return tuple(roles.get(name, name) for name in names)


def _loader(model):
    """A model loader for the run context that hands out the user's model (checks train copies, never it)."""
    def load(checkpoint: str, num_labels: int, seed: int = 0):
        if model is None:
            raise InputError(msg("The code stopped before it built a model."))
        return model
    return load


def _truncation(call: dict | None, tokenizer, source) -> tuple[int, str]:
    """(the length the user's tokenization truncates at, where it comes from: `RunConfig.truncation`), from the
    code's own tokenizer call: its max_length ("call"; Transformers truncates at it even without truncation=True),
    the tokenizer's maximum for truncation=True without one ("model"), else the split's longest row ("none": the
    call does not truncate; "unknown": no call was seen)."""
    from diagnostics.config.settings import MAX_LENGTH

    longest = _longest(source)
    if call is None:
        return longest, "unknown"
    truncating = call.get("truncation") not in (False, "do_not_truncate")
    if truncating and call.get("max_length"):
        return min(int(call["max_length"]), MAX_LENGTH), "call"
    maximum = call.get("model_max_length") or getattr(tokenizer, "model_max_length", None)
    if call.get("truncation") not in (None, False, "do_not_truncate") and maximum and maximum <= MAX_LENGTH:
        return int(maximum), "model"
    return longest, "none"  # no truncation, or at a maximum no text reaches


def _longest(source) -> int:
    """The longest tokenized row of the split: the user's truncation length, or the longest text when none cut."""
    import pyarrow.compute as pc

    if "input_ids" not in source.column_names or not len(source):
        return 128
    return max(1, int(pc.max(pc.list_value_length(source.data.column("input_ids"))).as_py() or 1))


def _checkpoint_name(model, tokenizer) -> str:
    """Where the model was loaded from (else the tokenizer), for the report."""
    name = checkpoint_path(model) or getattr(tokenizer, "name_or_path", "")
    return str(name) if name else (type(model).__name__ if model is not None else "your model")
