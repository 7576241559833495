"""What Keras sees of a model: any Keras model, a Transformers sequence classifier or a functional, Sequential or
subclassed model with a Transformers encoder (or none) inside.

The checks read a model through here: how many outputs its output layer has and whether they are logits or
probabilities (its final activation, confirmed by behaviour), the class logits of a batch, a config for the head
(the Transformers model's own, or one written from the output layer and the encoder found among the layers), and
a fresh copy to train. Nothing here changes the user's model.
"""

from __future__ import annotations

import copy as copying
import weakref
from dataclasses import dataclass
from typing import Any

import numpy as np

from diagnostics.i18n import msg, to_data

# Probabilities are clipped as Keras's cross-entropy clips them before their log (backend.epsilon()).
EPSILON = 1e-7
# Final activations whose outputs are probabilities.
PROBABILITIES = ("softmax", "sigmoid")

_HEADS: "weakref.WeakKeyDictionary[Any, Head]" = weakref.WeakKeyDictionary()
_CONFIGS: "weakref.WeakKeyDictionary[Any, Any]" = weakref.WeakKeyDictionary()


@dataclass(frozen=True)
class Head:
    """A model's output layer as the checks read it.

    Attributes:
        outputs: the output layer's width (1 for a binary sigmoid head or a regression head).
        activation: its final activation ("softmax", "sigmoid", "linear" for logits, or another name).
        transformers: a Transformers sequence classifier (outputs `.logits`, may compute its own loss).
        binary: one output read as two classes (a sigmoid head, or a binary cross-entropy loss on one logit).
        encoder: the Transformers model or main layer among the layers (None when there is none).
    """

    outputs: int
    activation: str = "linear"
    transformers: bool = True
    binary: bool = False
    encoder: Any = None

    @property
    def num_labels(self) -> int:
        """The classes the head tells apart (2 for one binary output)."""
        return 2 if self.binary else self.outputs

    @property
    def probabilities(self) -> bool:
        return self.activation in PROBABILITIES

    def describe(self) -> str:
        """The head in words, for a model that is not a Transformers classifier ("Dense(2, softmax)")."""
        return f"Dense({self.outputs}, {self.activation})"


def is_transformers_classifier(model) -> bool:
    from transformers import TFPreTrainedModel

    return isinstance(model, TFPreTrainedModel) and hasattr(getattr(model, "config", None), "num_labels")


def head_of(model, loss: str | None = None) -> Head:
    """The model's head, read once per model (a loss given the first time says whether one output is binary)."""
    if model in _HEADS:
        return _HEADS[model]
    head = _read_head(model, loss)
    _HEADS[model] = head
    return head


def _read_head(model, loss: str | None) -> Head:
    if is_transformers_classifier(model):
        return Head(int(model.config.num_labels), "linear", True, False, model)
    outputs = getattr(model, "outputs", None) or []
    width = None
    if outputs:
        shape = outputs[0].shape
        width = int(shape[-1]) if shape.rank and shape[-1] is not None else None
    last = _output_layer(model)
    activation = getattr(getattr(last, "activation", None), "__name__", None) or "linear"
    if width is None:
        width = int(getattr(last, "units", 0) or 0) or None
    if width is None:
        raise ValueError("the model's output layer has no known width: build or call the model before fit")
    binary = width == 1 and (activation == "sigmoid" or bool(loss and "binary" in loss.lower()))
    return Head(width, activation, False, binary, transformers_part(model))


def _output_layer(model):
    """The layer whose output is the model's (a functional model's last), or the last layer of the list."""
    history = getattr((getattr(model, "outputs", None) or [None])[0], "_keras_history", None)
    if history is not None:
        return history.layer
    layers = getattr(model, "layers", None) or []
    return layers[-1] if layers else None


def transformers_part(model):
    """The Transformers model or main layer inside a Keras model (its config, tokenizer and encoder), or None."""
    from transformers import PretrainedConfig

    seen: set[int] = set()
    stack = list(getattr(model, "layers", None) or [])
    while stack:
        layer = stack.pop(0)
        if id(layer) in seen:
            continue
        seen.add(id(layer))
        if isinstance(getattr(layer, "config", None), PretrainedConfig):
            return layer
        stack += list(getattr(layer, "layers", None) or [])
    return None


def model_config(model):
    """A config for the checks: a Transformers classifier's own; for any other Keras model, the encoder's config
    (a copy) with `num_labels` from the output layer, or a bare one when there is no Transformers part. The copy
    carries `keras_head` (the Head), so the checks word their fixes for a Keras head."""
    if is_transformers_classifier(model):
        return model.config
    if model in _CONFIGS:
        return _CONFIGS[model]
    from transformers import PretrainedConfig

    head = head_of(model)
    encoder = head.encoder
    config = copying.deepcopy(encoder.config) if encoder is not None else PretrainedConfig()
    config.num_labels = head.num_labels
    config.problem_type = None
    config.architectures = [describe_model(model)]
    config.keras_head = head
    _CONFIGS[model] = config
    return config


def describe_model(model) -> str:
    """"Functional around TFBertModel, Dense(2, softmax)", or a Transformers classifier's class name."""
    if is_transformers_classifier(model):
        return type(model).__name__
    head = head_of(model)
    inside = f" around {type(head.encoder).__name__}" if head.encoder is not None else ""
    return f"{type(model).__name__}{inside}, {head.describe()}"


def raw_output(output):
    """What the loss reads of a model's output: `.logits` of a Transformers output, else the (first) tensor."""
    if hasattr(output, "logits"):
        return output.logits
    if isinstance(output, dict):
        return next(iter(output.values()))
    if isinstance(output, (list, tuple)):
        return output[0]
    return output


def class_logits(model, output) -> np.ndarray:
    """A batch's output as (rows, classes) logits, whatever the head: logits as they are, log-probabilities for a
    softmax head (softmax gives the probabilities back), [0, logit] for one binary output."""
    head = head_of(model)
    values = np.asarray(raw_output(output), dtype=np.float64)
    if values.ndim == 1:
        values = values[:, None]
    with np.errstate(all="ignore"):
        if head.activation == "softmax" or (head.activation != "sigmoid" and head.activation not in ("linear", None)
                                            and _rows_are_probabilities(values)):
            values = np.log(np.clip(values, EPSILON, 1.0))
        elif head.activation == "sigmoid":
            clipped = np.clip(values, EPSILON, 1 - EPSILON)
            values = np.log(clipped) - np.log1p(-clipped)
    if head.binary:
        values = np.concatenate([np.zeros_like(values[:, :1]), values[:, :1]], axis=1)
    return values


def as_output(head: Head, logits: np.ndarray) -> np.ndarray:
    """Class logits back as the head outputs them (the inverse of `class_logits`), for a loss to read."""
    logits = np.asarray(logits, dtype=np.float64)
    if head.binary:
        logits = logits[:, 1:2] - logits[:, :1]
    if head.activation == "softmax":
        shifted = logits - logits.max(axis=1, keepdims=True)
        return np.exp(shifted) / np.exp(shifted).sum(axis=1, keepdims=True)
    if head.activation == "sigmoid":
        return 1.0 / (1.0 + np.exp(-logits))
    return logits


def _rows_are_probabilities(values: np.ndarray) -> bool:
    return bool(values.size and (values >= 0).all() and np.allclose(values.sum(axis=1), 1.0, atol=1e-3))


def call(model, inputs, *, hidden_states: bool = False):
    """The model on a batch's inputs, as in inference; a Transformers model also gives its hidden states when
    asked (other Keras models take no such argument)."""
    if hidden_states and is_transformers_classifier(model):
        return model(inputs, training=False, output_hidden_states=True)
    return model(_fed(model, inputs), training=False)


class Traced:
    """`tf.function(function)` traced without AutoGraph, and with it only when that trace fails.

    AutoGraph rewrites the Python source of every layer's `call` before the first trace, once a process: about 2 s
    of the first traced step on the demo kit's copy and 4 s on a six-layer transformer's (measured on a 2-core
    machine; the same losses step for step either way). Transformers' layers hold no Python control flow on a
    tensor's value, which is what AutoGraph is for; a model whose own layer does (`if tf.reduce_sum(x) > 0:`)
    fails its trace without it, and that call is traced again with AutoGraph, as Keras would have from the start.
    An error raised after a trace succeeded (running the step) is raised as it is.
    """

    def __init__(self, function, **options):
        import tensorflow as tf

        self._python, self._options = function, options
        self._function = tf.function(function, autograph=False, **options)
        self.autograph = False

    def __call__(self, *args, **kwargs):
        traces = self.experimental_get_tracing_count()
        try:
            return self._function(*args, **kwargs)
        except Exception:
            if self.autograph or self.experimental_get_tracing_count() != traces:
                raise
        import tensorflow as tf

        self._function, self.autograph = tf.function(self._python, autograph=True, **self._options), True
        return self._function(*args, **kwargs)

    def experimental_get_tracing_count(self) -> int:
        """How many times the function has been traced (tf.function's own count, of the one in use)."""
        return self._function.experimental_get_tracing_count()


class Forward:
    """A model's output on a batch's inputs, as in inference, through one traced function: a sweep scores every rate
    on the same held-out rows, and eagerly each pass costs as much again in dispatching the layers one by one
    (measured on a six-layer transformer, 32 rows: 0.29 s eagerly, 0.12 s traced, 0.7 s to trace once).

    A model that cannot be traced this way is called eagerly.
    """

    def __init__(self, model):
        self.model, self._function = model, None

    def __call__(self, inputs):
        if self._function is None:
            model = self.model
            self._function = Traced(lambda given: raw_output(call(model, given)), reduce_retracing=True)
        if self._function is not False:
            try:
                return self._function(inputs)
            except Exception:  # noqa: BLE001 - a layer that only runs eagerly: score it eagerly from now on
                self._function = False
        return raw_output(call(self.model, inputs))


def input_names(model) -> list[str] | None:
    """A functional or Sequential model's input names, in order (None for a model that takes a dict of any names,
    a Transformers classifier's)."""
    names = [getattr(tensor, "name", "").split(":")[0] for tensor in (getattr(model, "inputs", None) or [])]
    return names if names and all(names) and not is_transformers_classifier(model) else None


def input_roles(names: list[str] | None) -> dict[str, str] | None:
    """A model's own input names as the keys the checks give a batch's parts, by what each name says it holds (a
    TF Hub encoder's input_mask is attention_mask, input_type_ids token_type_ids, input_word_ids input_ids); None
    for the checks' own names or names that do not read as one part each."""
    roles = {name: "attention_mask" if "mask" in name.lower() else "token_type_ids" if any(
        word in name.lower() for word in ("type", "segment")) else "input_ids" for name in names or ()}
    parts = list(roles.values())
    return roles if "input_ids" in parts and len(set(parts)) == len(parts) and "input_ids" not in roles else None


def _fed(model, inputs):
    """A batch's input dict as a functional model takes it: only the inputs it names, in its order when it takes a
    list; a model whose inputs have names of their own (`input_roles`) gets each part under its own name."""
    names = input_names(model)
    if not isinstance(inputs, dict) or not names:
        return inputs
    keys = {name: name for name in names}
    if not set(names) <= set(inputs):  # names of its own (`input_roles`): each part under its name
        keys = input_roles(names) or keys
    return {name: inputs[key] for name, key in keys.items()} if set(keys.values()) <= set(inputs) else inputs


def _inputs_named_as_fed(model, inputs) -> list | None:
    """For `clone_model`: new input tensors named as the checks key a batch's parts, for a model whose inputs have
    names of their own (`input_roles`: one `input_word_ids` the script fed a bare tensor of ids, or a TF Hub
    encoder's three); None when the model's own inputs take the batches as they are."""
    import tf_keras

    names = input_names(model)
    roles = input_roles(names)
    if isinstance(inputs, dict) and roles and set(roles.values()) <= set(inputs) and not set(names) <= set(inputs):
        return [tf_keras.Input(shape=tensor.shape[1:], dtype=tensor.dtype, name=roles[name])
                for name, tensor in zip(names, model.inputs, strict=True)]
    return None


def fresh_copy(model, inputs):
    """A new instance of the model with the same architecture and weights; the original is never touched.

    A Transformers classifier is rebuilt from its config (`clone_model` does not take Transformers' subclassed
    models); a functional or Sequential model by `clone_model` (its Transformers layers rebuilt from their configs).
    Both are called once to create their variables, then given the original's weights.

    Raises:
        ValueError: a subclassed Keras model, which cannot be rebuilt without its code.
    """
    import tf_keras

    if is_transformers_classifier(model):
        copy = type(model)(model.config)
    elif isinstance(model, tf_keras.Sequential) or getattr(model, "_is_graph_network", False):
        named = _inputs_named_as_fed(model, inputs)
        copy = tf_keras.models.clone_model(model, input_tensors=named)
        if named is not None and not isinstance(model, tf_keras.Sequential):  # a dict-input clone keeps its keys:
            copy = tf_keras.Model(named, copy.outputs, name=copy.name)  # the same layers, keyed by the new names
    else:
        raise ValueError(f"a subclassed Keras model ({type(model).__name__}) cannot be copied to train without "
                         "its code: build it with the functional API or Sequential to have it trained on a copy")
    call(copy, inputs)
    copy_trainable(model, copy)  # first: Keras lists a model's weights trainable first, so the flags set the order
    copy_weights(model, copy)
    if model in _HEADS:
        _HEADS[copy] = _HEADS[model]
    return copy


def copy_trainable(source, target) -> None:
    """The source's `trainable` flags on the copy's layers (a frozen encoder stays frozen: the copy trains what fit
    trains), layer by layer in the order Keras walks them, parents before their sublayers."""
    sources, targets = list(source._flatten_layers()), list(target._flatten_layers())
    if len(sources) != len(targets):
        return
    for of, to in zip(sources, targets, strict=True):
        if to.trainable != of.trainable:
            to.trainable = of.trainable


def unused_by_output(model, inputs) -> set[str]:
    """Names of the trainable variables the model's output does not depend on at all (a Transformers encoder's
    pooler under a head that reads the hidden states): Keras leaves them as they are, which is the architecture,
    not a loss that misses them."""
    import tensorflow as tf

    variables = list(model.trainable_variables)
    with tf.GradientTape() as tape:
        output = tf.cast(raw_output(call(model, inputs)), tf.float32)
        total = tf.reduce_sum(output)
    gradients = tape.gradient(total, variables, unconnected_gradients=tf.UnconnectedGradients.NONE)
    return {variable.name for variable, gradient in zip(variables, gradients, strict=True) if gradient is None}


def copy_weights(source, target) -> None:
    """`target.set_weights(source.get_weights())`, variable by variable, without a host copy of them all."""
    if len(source.weights) != len(target.weights):
        raise ValueError(f"cannot copy {len(source.weights)} weights into a model with {len(target.weights)}")
    for to, of in zip(target.weights, source.weights, strict=True):
        to.assign(of)


def pretrained_variables(model) -> set[int] | None:
    """ids of the variables of the Transformers encoder inside a Keras model (None for a Transformers classifier,
    whose variable names say which are its head's)."""
    if is_transformers_classifier(model):
        return None
    encoder = head_of(model).encoder
    return {id(variable) for variable in encoder.weights} if encoder is not None else set()


def encoder_variables(model) -> set[int]:
    """ids of the variables of the pretrained encoder: a Transformers classifier's main layer (its
    `base_model_prefix` attribute), or the Transformers part inside a Keras model (empty when there is none)."""
    if is_transformers_classifier(model):
        encoder = getattr(model, getattr(model, "base_model_prefix", "") or "", None)
    else:
        encoder = head_of(model).encoder
    return {id(variable) for variable in encoder.weights} if encoder is not None else set()


def encoder_frozen(model) -> bool:
    """A Transformers encoder whose weights this fit leaves as they are (trainable=False): only what sits on it
    trains."""
    encoder = encoder_variables(model)
    return bool(encoder) and not any(id(variable) in encoder for variable in model.trainable_variables)


def what_trains(model) -> dict[str, int]:
    """The trainable weights a fit of the model as it stands updates, counted: {"encoder": ..., "other": ...}
    (the encoder's, and the head's with anything else around it)."""
    encoder = encoder_variables(model)
    counts = {"encoder": 0, "other": 0}
    for variable in model.trainable_variables:
        counts["encoder" if id(variable) in encoder else "other"] += int(np.prod(variable.shape))
    return counts


def what_it_trains(model, stale: tuple[int, int, int] | None = None) -> dict:
    """What a fit trains, in words and counts: the encoder and the head, the head alone (the encoder frozen), or a
    model with no Transformers encoder; for a fit that reuses an older train step, what that step trains."""
    try:
        counts, has_encoder = what_trains(model), bool(encoder_variables(model))
    except Exception:  # a model the checks cannot read says so in its own report
        return {"trains": None, "trains_encoder": None}
    if stale is not None:
        trains = msg("trains what fit {fit} trained ({count:,} weights), not what the layers now mark trainable (see "
                     "model.weights_after_step)", fit=stale[0], count=stale[1])
        return {"trains": str(trains), "trains_sentence": to_data(trains), "trains_encoder": None, **counts}
    if not has_encoder:
        trains = msg("trains {count:,} weights (no Transformers encoder)", count=counts["other"])
    elif counts["encoder"]:
        trains = msg("trains the encoder and the head ({count:,} weights)", count=counts["encoder"] + counts["other"])
    else:
        trains = msg("trains the head only ({count:,} weights; the encoder is frozen)", count=counts["other"])
    return {"trains": str(trains), "trains_sentence": to_data(trains),
            "trains_encoder": bool(counts["encoder"]) if has_encoder else None, **counts}


def class_ids(labels) -> np.ndarray:
    """Labels as `fit` got them, as class ids: one-hot rows by their one, a column of one label flattened; others
    (ids, scores) as they are."""
    values = np.asarray(labels)
    if values.ndim == 2 and values.shape[1] > 1:
        return values.argmax(axis=1)
    if values.ndim == 2:
        return values[:, 0]
    return values


def labels_for_loss(labels: np.ndarray, loss: str, head: Head):
    """Class ids as the configured loss takes them: one-hot rows for a categorical cross-entropy, a float column
    for a binary cross-entropy on one output, the ids themselves otherwise."""
    labels = np.asarray(labels)
    lowered = loss.lower()
    if "categorical" in lowered and "sparse" not in lowered:
        return np.eye(head.num_labels, dtype=np.float32)[labels.astype(int)]
    if "binary" in lowered:
        if head.outputs == 1:
            return labels.astype(np.float32)[:, None]
        return np.eye(head.num_labels, dtype=np.float32)[labels.astype(int)]
    return labels
