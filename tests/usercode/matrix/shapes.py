"""The matrix of script shapes: training scripts written from independent axes (the model, its inputs, the labels,
the data pipeline, the compile call, the optimizer, how it trains, the strategy and precision around it), every pair
of axis values in at least one script, each script complete and runnable on its own (docs/testing.md)."""

from __future__ import annotations

from dataclasses import dataclass, replace
import itertools

# Each axis and its values, in the order a script is written. A value's script text lives in `write_script`.
AXES: dict[str, tuple[str, ...]] = {
    "model": ("classifier", "functional_cls_softmax", "functional_pooled_logits", "main_layer_cls_logits"),
    "inputs": ("dict", "list", "ids_only", "batch_encoding"),
    "labels": ("sparse", "one_hot", "binary", "in_dict"),
    "data": ("to_tf_dataset", "prepare_tf_dataset", "from_tensor_slices", "from_generator", "sequence",
             "numpy", "numpy_class_weight"),
    "compile": ("internal_loss", "loss_string", "loss_object", "loss_object_metrics", "hf_compute_loss", "no_compile"),
    "optimizer": ("string", "object", "schedule", "create_optimizer"),
    "training": ("one_fit", "two_fits", "tape", "train_step"),
    "strategy": ("none", "one_device", "mirrored"),
    "precision": ("float32", "mixed_float16"),
}

# The rate a head trains at over a frozen encoder (freeze-then-fine-tune's first fit).
HEAD_RATE = 1e-3

# The bugs a healthy script is traced with, one at a time, and the check that must name each (its owner).
BUGS: dict[str, str] = {
    "rate": "hparams.lr_sweep",            # Adam at 100 times the healthy rate (1e-3 for a pretrained encoder's 1e-5)
    "stray_label": "data.label_range",     # a few rows labelled outside the classes
    "from_logits": "hparams.loss",         # a loss that reads logits as probabilities, or probabilities as logits
    "small_head": "model.config",          # a head with fewer outputs than the task has classes
    "labels_in_dict_keras_loss": "hparams.loss",  # labels inside the input dict with a Keras loss
}


@dataclass(frozen=True)
class Shape:
    model: str
    inputs: str
    labels: str
    data: str
    compile: str
    optimizer: str
    training: str
    strategy: str
    precision: str
    bug: str | None = None

    @property
    def name(self) -> str:
        parts = [getattr(self, axis) for axis in AXES]
        return "-".join(parts) + (f"+{self.bug}" if self.bug else "")

    @property
    def classes(self) -> int:
        return 2 if self.labels == "binary" else 3

    @property
    def task(self) -> str:
        """The kit's samples the script reads: SST-2's two classes for a binary column, MNLI's three otherwise."""
        return "sst2" if self.labels == "binary" else "mnli"

    @property
    def softmax(self) -> bool:
        return self.model == "functional_cls_softmax"

    def with_bug(self, bug: str) -> "Shape":
        return replace(self, bug=bug)


def valid(values: dict[str, str]) -> bool:
    """Whether a (partial) set of axis values makes a script a user could write and run."""
    get = values.get
    classifier = get("model") == "classifier"
    rules = [
        # Only a Transformers classifier computes its own loss, takes labels inside its input dict, and has
        # prepare_tf_dataset.
        (get("compile") == "internal_loss", classifier),
        # A Transformers model's own loss takes class ids (one-hot rows raise in its train step).
        (get("compile") == "internal_loss", get("labels") in (None, "sparse", "in_dict")),
        # Transformers' older docs gave the classifier's own loss to compile (`loss=model.hf_compute_loss`): class
        # ids beside the inputs, on its logits. (A partial set that names no model can still be completed with a
        # classifier, so its pairs with every other axis are wanted.)
        (get("compile") == "hf_compute_loss",
         get("model") in (None, "classifier") and get("labels") in (None, "sparse")),
        (get("labels") == "in_dict", classifier and get("compile") in (None, "internal_loss", "no_compile")),
        (get("data") == "prepare_tf_dataset", classifier),
        # One sigmoid output is a Keras head's; a classifier with num_labels=1 is a regression.
        (get("labels") == "binary", get("model") not in (None, "classifier")),
        # A GradientTape loop compiles nothing, and nothing else goes without compile.
        (get("training") == "tape", get("compile") in (None, "no_compile")),
        (get("compile") == "no_compile", get("training") in (None, "tape")),
        (get("training") == "tape", get("strategy") in (None, "none")),
        # A loss given as a string reads probabilities (from_logits=False): a softmax or sigmoid output's.
        (get("compile") == "loss_string",
         get("model") in (None, "functional_cls_softmax") or get("labels") == "binary"),
        (get("training") == "tape", get("data") not in ("numpy", "numpy_class_weight")),
        (get("training") == "tape", get("labels") != "in_dict" or classifier),
        # A model overriding train_step is a Keras model of the user's class.
        (get("training") == "train_step",
         not classifier and get("compile") not in ("internal_loss", "hf_compute_loss")),
        # What each pipeline yields.
        (get("data") in ("to_tf_dataset", "prepare_tf_dataset"), get("inputs") in (None, "dict", "ids_only")),
        (get("data") in ("to_tf_dataset", "prepare_tf_dataset"),
         get("labels") in (None, "sparse", "in_dict", "binary")),
        (get("inputs") == "batch_encoding", get("data") in (None, "numpy", "numpy_class_weight")),
        (get("inputs") == "list", get("data") not in ("to_tf_dataset", "prepare_tf_dataset")),
        (get("data") == "numpy_class_weight", get("labels") in (None, "sparse", "one_hot", "binary")),
        (get("labels") == "in_dict", get("data") not in ("numpy", "numpy_class_weight", "sequence") or
         get("inputs") in (None, "dict")),
        (get("labels") == "in_dict", get("inputs") in (None, "dict", "ids_only")),
        # create_optimizer's AdamWeightDecay is a legacy optimizer: no LossScaleOptimizer for mixed precision.
        (get("optimizer") == "create_optimizer", get("precision") in (None, "float32")),
    ]
    return all(then for given, then in rules if given)


def all_pairs(axes: dict[str, tuple[str, ...]] = AXES, fits=valid) -> list[Shape]:
    """Shapes covering every valid pair of axis values at least once (greedy: each new shape takes, axis by axis, the
    value that covers the most pairs not yet covered, first the pair most in need); deterministic."""
    names = list(axes)
    wanted = {((a, x), (b, y)) for a, b in itertools.combinations(names, 2) for x in axes[a] for y in axes[b]
              if fits({a: x, b: y})}
    shapes: list[Shape] = []
    while wanted:
        (a, x), (b, y) = min(wanted, key=lambda pair: (names.index(pair[0][0]), pair))
        chosen = {a: x, b: y}
        for axis in names:
            if axis in chosen:
                continue
            best = None
            for value in axes[axis]:
                trial = {**chosen, axis: value}
                if not fits(trial) or not completable(trial, axes, fits):
                    continue
                gain = sum(1 for other, have in chosen.items()
                           if tuple(sorted(((axis, value), (other, have)), key=lambda p: names.index(p[0]))) in wanted)
                if best is None or gain > best[0]:
                    best = (gain, value)
            if best is None:
                break
            chosen[axis] = best[1]
        if len(chosen) < len(names) or not fits(chosen):
            wanted.discard(((a, x), (b, y)))  # no complete script holds this pair
            continue
        shape = Shape(**chosen)
        shapes.append(shape)
        covered = {tuple(sorted(((p, chosen[p]), (q, chosen[q])), key=lambda v: names.index(v[0])))
                   for p, q in itertools.combinations(names, 2)}
        wanted -= covered
    return shapes


def completable(partial: dict[str, str], axes, fits) -> bool:
    """Whether some value of each remaining axis still makes a valid script (a depth-first search)."""
    rest = [axis for axis in axes if axis not in partial]
    if not rest:
        return fits(partial)
    axis = rest[0]
    return any(fits({**partial, axis: value}) and completable({**partial, axis: value}, axes, fits)
               for value in axes[axis])


# ---------------------------------------------------------------- writing a script


def write_script(shape: Shape, *, rate: float) -> str:
    """A complete training script of this shape (argv: checkpoint directory, data file), with its bug if any.

    Args:
        rate: the rate a healthy script trains at (the checkpoint's usual one); the "rate" bug multiplies it by 100.
    """
    s = shape
    bug = s.bug
    k = s.classes
    head = k - 1 if bug == "small_head" else (1 if s.labels == "binary" else k)
    lr = rate * 100 if bug == "rate" else rate
    # A loss that matches the outputs; the from_logits bug flips it.
    logits_out = not s.softmax and s.labels != "binary"
    if s.labels == "binary":
        # A sigmoid output: probabilities (from_logits=False); with the bug, read as logits.
        loss_name, loss_class, from_logits = "binary_crossentropy", "BinaryCrossentropy", bug == "from_logits"
    elif s.labels == "one_hot":
        loss_name, loss_class, from_logits = "categorical_crossentropy", "CategoricalCrossentropy", logits_out
    else:
        loss_name, loss_class = "sparse_categorical_crossentropy", "SparseCategoricalCrossentropy"
        from_logits = logits_out
    if bug == "from_logits" and s.labels != "binary":
        from_logits = not from_logits
    text_columns = ("sentence",) if s.task == "sst2" else ("premise", "hypothesis")
    bert = s.model == "main_layer_cls_logits"
    names = ["input_ids"] if s.inputs == "ids_only" else (
        ["input_ids", "attention_mask", "token_type_ids"] if bert else ["input_ids", "attention_mask"])
    lines = [f'"""Generated by tests/usercode/matrix/shapes.py: {s.name}."""',
             "import json", "import sys", "", "import numpy as np", "import tensorflow as tf",
             "import tf_keras as keras",
             "from transformers import AutoTokenizer, TFAutoModel, TFAutoModelForSequenceClassification, TFBertModel",
             "", "CHECKPOINT, DATA = sys.argv[1], sys.argv[2]",
             f"MAX_LENGTH, BATCH, CLASSES = {32 if s.task == 'mnli' else 16}, 16, {k}",
             "rows = [json.loads(line) for line in open(DATA)]"]
    if bug == "stray_label":
        lines.append(f"for row in rows[5:8]:\n    row['label'] = {k}  # a value outside the classes")
    if s.labels == "binary" and bug != "stray_label":
        lines.append("rows = [row for row in rows if row['label'] in (0, 1)]")
    lines += ["tokenizer = AutoTokenizer.from_pretrained(CHECKPOINT)",
              f"TEXTS = {list(text_columns)!r}",
              "",
              "def encode(chunk, padding='max_length'):",
              "    return tokenizer(*[[row[c] for row in chunk] for c in TEXTS], padding=padding, truncation=True,",
              "                     max_length=MAX_LENGTH, return_tensors='np')",
              ""]
    if s.precision == "mixed_float16":
        lines.append("keras.mixed_precision.set_global_policy('mixed_float16')")
    strategy = {"none": None, "one_device": "tf.distribute.OneDeviceStrategy('/cpu:0')",
                "mirrored": "tf.distribute.MirroredStrategy()"}[s.strategy]
    lines.append(f"strategy = {strategy or 'tf.distribute.get_strategy()'}")
    lines.append("with strategy.scope():")
    # Freeze-then-fine-tune trains the head alone at Keras's default Adam rate first (the Keras transfer-learning
    # guide's), then everything at the fine-tuning rate.
    first_lr = HEAD_RATE if s.training == "two_fits" else lr
    body = _model_lines(s, head, names, bert) + _compile_lines(s, first_lr, loss_name, loss_class, from_logits)
    lines += ["    " + line if line else "" for line in body]
    lines += _data_lines(s, names, k)
    lines += _training_lines(s, lr, loss_class, from_logits, loss_name)
    return "\n".join(lines) + "\n"


def _model_lines(s: Shape, head: int, names: list[str], bert: bool) -> list[str]:
    freeze = ["", "# Freeze, then fine-tune: the head alone first."] if s.training == "two_fits" else []
    if s.model == "classifier":
        return [f"model = TFAutoModelForSequenceClassification.from_pretrained(CHECKPOINT, num_labels={head})"] + \
            (freeze + ["encoder = model.layers[0]", "encoder.trainable = False"] if freeze else [])
    lines = ["encoder = TFBertModel.from_pretrained(CHECKPOINT)" if bert else
             "encoder = TFAutoModel.from_pretrained(CHECKPOINT)"]
    # The model's own input names are the user's to choose where nothing keys them (a list): the tutorial's
    # `attention_masks`, which DataCollatorWithPadding does not know as a mask.
    layer_names = {"attention_mask": "attention_masks"} if bert and s.inputs == "list" else {}
    lines += [f"{name} = keras.Input(shape=(MAX_LENGTH,), dtype='int32', name='{layer_names.get(name, name)}')"
              for name in names]
    call = ", ".join(f"{name}={name}" for name in names)
    if bert:
        lines.append(f"hidden = encoder.bert({call}).last_hidden_state")
    else:
        lines.append(f"hidden = encoder({call}).last_hidden_state")
    if s.model == "functional_pooled_logits":
        lines.append("pooled = keras.layers.GlobalAveragePooling1D()(hidden)")
    else:
        lines.append("pooled = hidden[:, 0, :]")
    activation = "'sigmoid'" if s.labels == "binary" else ("'softmax'" if s.softmax else "None")
    lines.append("pooled = keras.layers.Dropout(0.1)(pooled)")
    # A softmax or sigmoid output in float32 under mixed precision, as Keras's mixed-precision guide says.
    lines.append(f"outputs = keras.layers.Dense({head}, activation={activation}, dtype='float32')(pooled)")
    inputs = f"[{', '.join(names)}]"
    if s.training == "train_step":
        lines += ["", "class Classifier(keras.Model):",
                  "    def train_step(self, data):",
                  "        x, y = data[0], data[1]",
                  "        with tf.GradientTape() as tape:",
                  "            predictions = self(x, training=True)",
                  "            loss = self.compute_loss(x, y, predictions)",
                  "        self.optimizer.apply_gradients(zip(tape.gradient(loss, self.trainable_variables),",
                  "                                           self.trainable_variables))",
                  "        return self.compute_metrics(x, y, predictions, None)",
                  "",
                  f"model = Classifier(inputs={inputs}, outputs=outputs)"]
    else:
        lines.append(f"model = keras.Model(inputs={inputs}, outputs=outputs)")
    return lines + (freeze + ["encoder.trainable = False"] if freeze else [])


def _optimizer_expr(s: Shape, lr: float) -> tuple[list[str], str]:
    if s.optimizer == "string":
        # Only Adam's default 1e-3 as a string: a healthy script at another rate needs an object, as a user's does.
        return [], "'adam'"
    if s.optimizer == "object":
        return [], f"keras.optimizers.Adam(learning_rate={lr!r})"
    if s.optimizer == "schedule":
        return [f"schedule = keras.optimizers.schedules.PolynomialDecay({lr!r}, decay_steps=100, "
                "end_learning_rate=0.0)"], \
            "keras.optimizers.Adam(learning_rate=schedule)"
    return ["from transformers import create_optimizer",
            f"optimizer, schedule = create_optimizer(init_lr={lr!r}, num_train_steps=100, num_warmup_steps=0)"], \
        "optimizer"


def _compile_lines(s: Shape, lr: float, loss_name: str, loss_class: str, from_logits: bool) -> list[str]:
    if s.compile == "no_compile":
        setup, expr = _optimizer_expr(s, lr)
        expr = "keras.optimizers.get('adam')" if expr == "'adam'" else expr
        return setup + ([f"optimizer = {expr}"] if expr != "optimizer" else []) + [
                        f"loss_fn = keras.losses.{loss_class}(from_logits={from_logits})"]
    setup, expr = _optimizer_expr(s, lr)
    metrics = {"loss_string": "['accuracy']", "loss_object": "None",
               "loss_object_metrics": "[keras.metrics.SparseCategoricalAccuracy()]" if "sparse" in loss_name else
               "[keras.metrics.CategoricalAccuracy()]" if loss_class == "CategoricalCrossentropy" else
               "[keras.metrics.BinaryAccuracy()]", "internal_loss": "['accuracy']",
               "hf_compute_loss": "['accuracy']"}[s.compile]
    if s.bug == "labels_in_dict_keras_loss":
        return setup + [f"model.compile(optimizer={expr}, loss='{loss_name}', metrics={metrics})"]
    if s.compile == "internal_loss":
        return setup + [f"model.compile(optimizer={expr}, metrics={metrics})"]
    if s.compile == "hf_compute_loss":
        return setup + [f"model.compile(optimizer={expr}, loss=model.hf_compute_loss, metrics={metrics})"]
    if s.compile == "loss_string" and not (from_logits and loss_name != "binary_crossentropy"):
        loss = f"'{loss_name}'"
    else:
        loss = f"keras.losses.{loss_class}(from_logits={from_logits})"
    return setup + [f"model.compile(optimizer={expr}, loss={loss}, metrics={metrics})"]


def _inputs_expr(s: Shape, names: list[str], encoded: str) -> str:
    """The model's inputs from a BatchEncoding, as the shape gives them."""
    if s.inputs == "batch_encoding":
        return encoded
    if s.inputs == "ids_only":
        return f"{encoded}['input_ids']"
    if s.inputs == "list":
        return "[" + ", ".join(f"{encoded}[{name!r}]" for name in names) + "]"
    return "{" + ", ".join(f"{name!r}: {encoded}[{name!r}]" for name in names) + "}"


def _labels_expr(s: Shape, values: str) -> str:
    if s.labels == "one_hot":
        return f"keras.utils.to_categorical({values}, CLASSES)"
    if s.labels == "binary":
        return f"np.asarray({values}, dtype='float32').reshape(-1, 1)"
    return f"np.asarray({values})"


def _data_lines(s: Shape, names: list[str], k: int) -> list[str]:
    in_dict = s.labels == "in_dict" or s.bug == "labels_in_dict_keras_loss"
    lines = [""]
    if s.data in ("to_tf_dataset", "prepare_tf_dataset"):
        lines += ["import datasets", "from transformers import DataCollatorWithPadding", "",
                  "split = datasets.Dataset.from_list(rows)",
                  "split = split.map(lambda batch: tokenizer(*[batch[c] for c in TEXTS], truncation=True, "
                  "max_length=MAX_LENGTH), batched=True)"]
        if s.data == "prepare_tf_dataset":
            lines.append("train = model.prepare_tf_dataset(split, batch_size=BATCH, shuffle=True, tokenizer=tokenizer)")
        else:
            columns = names + (["label"] if in_dict else [])
            labels = "" if in_dict else ", label_cols='label'"
            # A Keras model's inputs are MAX_LENGTH wide: its pipeline pads every batch to that length.
            padding = "" if s.model == "classifier" else "padding='max_length', max_length=MAX_LENGTH, "
            lines.append(f"train = split.to_tf_dataset(columns={columns!r}{labels}, batch_size=BATCH, shuffle=True, "
                         f"collate_fn=DataCollatorWithPadding(tokenizer, {padding}return_tensors='np'))")
        lines.append("fit_args, fit_kwargs = (train,), {}")
        return lines
    labels = _labels_expr(s, "[row['label'] for row in rows]")
    if s.data == "sequence":
        lines += ["", "class Batches(keras.utils.Sequence):",
                  "    def __len__(self):",
                  "        return len(rows) // BATCH", "",
                  "    def __getitem__(self, index):",
                  "        chunk = rows[index * BATCH:(index + 1) * BATCH]",
                  "        encoded = encode(chunk)",
                  f"        x = {_inputs_expr(s, names, 'encoded')}",
                  "        y = " + _labels_expr(s, "[row['label'] for row in chunk]")]
        if in_dict:
            lines += ["        x['labels'] = y", "        return x"]
        else:
            lines += ["        return x, y"]
        lines += ["", "train = Batches()", "fit_args, fit_kwargs = (train,), {}"]
        return lines
    lines += ["encoded = encode(rows)", f"x = {_inputs_expr(s, names, 'encoded')}", f"y = {labels}"]
    if in_dict:
        lines += ["x = dict(x)", "x['labels'] = y"]
    if s.inputs == "list" and s.data in ("from_tensor_slices", "from_generator"):
        lines.append("x = tuple(x)  # tf.data reads a list as one tensor to stack, a tuple as a structure")
    if s.data == "from_tensor_slices":
        element = "x" if in_dict else "(x, y)"
        lines.append(f"train = tf.data.Dataset.from_tensor_slices({element}).shuffle(len(rows), seed=0).batch(BATCH)")
        lines.append("fit_args, fit_kwargs = (train,), {}")
    elif s.data == "from_generator":
        lines += ["", "def rows_of():",
                  "    for i in range(len(rows)):",
                  "        pick = lambda value: value[i]",
                  "        xi = tf.nest.map_structure(pick, dict(x) if hasattr(x, 'keys') else x)",
                  "        yield xi if " + ("True" if in_dict else "False") + " else (xi, y[i])",
                  "",
                  "def spec_of(value):",
                  "    value = np.asarray(value)",
                  "    return tf.TensorSpec(shape=value.shape[1:], dtype=tf.as_dtype(value.dtype))",
                  "",
                  "x_spec = tf.nest.map_structure(spec_of, dict(x) if hasattr(x, 'keys') else x)",
                  "signature = x_spec if " + ("True" if in_dict else "False") + " else (x_spec, spec_of(y))",
                  "train = tf.data.Dataset.from_generator(rows_of, output_signature=signature).batch(BATCH)",
                  "fit_args, fit_kwargs = (train,), {}"]
    elif s.data == "numpy":
        lines.append("fit_args, fit_kwargs = " + ("(x,)" if in_dict else "(x, y)") +
                     ", {'batch_size': BATCH, 'validation_split': 0.1}")
    else:
        weights = ", ".join(f"{i}: 1.0" for i in range(2 if s.labels == "binary" else k))
        lines.append("fit_args, fit_kwargs = (x, y), {'batch_size': BATCH, 'class_weight': {" + weights + "}}")
    return lines


def _training_lines(s: Shape, lr: float, loss_class: str, from_logits: bool, loss_name: str) -> list[str]:
    lines = [""]
    if s.training == "tape":
        in_dict = s.labels == "in_dict"
        lines += ["for step, batch in enumerate(train):",
                  "    if step == 4:",
                  "        break",
                  "    x_batch, y_batch = (batch, None) if isinstance(batch, dict) else batch",
                  "    with tf.GradientTape() as tape:",
                  "        outputs = model(x_batch, training=True)"]
        if in_dict:
            lines.append("        loss = tf.reduce_mean(outputs.loss)")
        else:
            lines.append("        outputs = getattr(outputs, 'logits', outputs)")
            lines.append("        loss = loss_fn(y_batch, outputs)")
        lines += ["    gradients = tape.gradient(loss, model.trainable_variables)",
                  "    optimizer.apply_gradients(zip(gradients, model.trainable_variables))"]
        return lines
    lines.append("model.fit(*fit_args, epochs=2, **fit_kwargs)")
    if s.training == "two_fits":
        setup, expr = _optimizer_expr(s, lr)
        compile_line = next(line for line in _compile_lines(s, lr, loss_name, loss_class, from_logits)
                            if line.startswith("model.compile"))
        lines += ["", "# Fine-tune everything.", "encoder.trainable = True", "with strategy.scope():"]
        lines += ["    " + line for line in setup + [compile_line]]
        lines.append("model.fit(*fit_args, epochs=2, **fit_kwargs)")
    return lines


def applies(shape: Shape, bug: str) -> bool:
    """Whether a bug can be injected into a script of this shape as a user would make it."""
    if bug == "rate":
        return shape.optimizer != "string"  # the string's rate is Adam's default, not the script's to set
    if bug == "stray_label":
        return shape.labels != "one_hot"  # to_categorical itself refuses a value outside the classes
    if bug == "from_logits":
        return shape.compile not in ("internal_loss", "hf_compute_loss") and shape.labels != "in_dict"
    if bug == "small_head":
        return shape.labels != "binary"
    if bug == "labels_in_dict_keras_loss":  # the course's bug: class ids in the dict, a Keras loss at compile
        return shape.model == "classifier" and shape.inputs == "dict" and shape.labels == "sparse" and \
            shape.training in ("one_fit", "two_fits")
    raise KeyError(bug)


def bugged(shapes: list[Shape] | None = None) -> list[Shape]:
    """Each healthy shape with one bug, drawn in turn from BUGS (the next that applies to it)."""
    names = list(BUGS)
    used = dict.fromkeys(names, 0)
    found = []
    for index, shape in enumerate(shapes if shapes is not None else all_pairs()):
        order = names[index % len(names):] + names[:index % len(names)]
        fitting = [bug for bug in order if applies(shape, bug)]
        if fitting:
            bug = min(fitting, key=lambda name: used[name])  # the least drawn so far, then the next in turn
            used[bug] += 1
            found.append(shape.with_bug(bug))
    return found
