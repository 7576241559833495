"""The second generator of script shapes: notebooks in the shapes public Kaggle-era and tutorial notebooks write
(issue 70), none of them the matrix's (tests/usercode/matrix/shapes.py). Each axis is a part the debugger did not
name before it met them:

- tokenizer: Transformers' `AutoTokenizer`, the `tokenizers` library's `BertWordPieceTokenizer` over the
  checkpoint's vocab.txt with `enable_truncation`/`enable_padding(length=)` and `encode_batch`, or KerasHub's
  `WordPieceTokenizer` over it (no special tokens, padded to its `sequence_length`);
- input: a functional model's one input named `input_word_ids` (TF Hub's name) or `input_ids`, fed a bare array;
- head: `Dense(1, sigmoid)` with binary cross-entropy, or `Dense(2, softmax)` with sparse cross-entropy;
- loss: a Keras loss, or a function of the notebook's own;
- optimizer: `Adam(learning_rate=...)`, or Adam over a warmup `LearningRateSchedule` class of the notebook's own;
- data: numpy arrays with `batch_size`, a `tf.data` pipeline that `.repeat()`s with `steps_per_epoch`, or a pandas
  DataFrame with its own column names (`text`, `target`);
- loop: `compile` and `fit`, or a `@tf.function` step run by `strategy.run` over
  `strategy.experimental_distribute_dataset` (the default strategy, as TPU boilerplate falls back to on a CPU).

Each script reads the demo kit's SST-2 rows and its DistilBERT (`python train.py CHECKPOINT DATA`). A healthy one
traces clean; one with an injected bug names it once, by its owner (`BUGS`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

AXES: dict[str, tuple[str, ...]] = {
    "tokenizer": ("transformers", "wordpiece", "keras_hub"),
    "input": ("input_word_ids", "input_ids"),
    "head": ("sigmoid", "softmax"),
    "loss": ("keras", "own_function"),
    "optimizer": ("adam", "warmup_class"),
    "data": ("numpy", "repeat", "pandas"),
    "loop": ("fit", "strategy_run"),
}

# The bug, and the check that must name it.
BUGS: dict[str, str] = {
    "rate": "hparams.lr_sweep",        # Adam at 0.1, a hundred times the healthy rate
    "lr_keyword": "hparams.optimizer",  # Adam(lr=...), which tf-keras drops (it trains at 1e-3)
    "stray_label": "data.label_range",  # three rows labelled 2 in a two-class task
    "from_logits": "hparams.loss",      # a linear head under a loss that reads probabilities
}

# A head of the notebook's own over the kit's DistilBERT trains well at 1e-3 (tests/usercode/matrix/build.py).
RATE = 1e-3
MAX_LEN = 24


@dataclass(frozen=True)
class Notebook:
    tokenizer: str
    input: str
    head: str
    loss: str
    optimizer: str
    data: str
    loop: str
    bug: str | None = None

    @property
    def name(self) -> str:
        return "-".join(getattr(self, axis) for axis in AXES) + (f"+{self.bug}" if self.bug else "")

    def with_bug(self, bug: str) -> "Notebook":
        return replace(self, bug=bug)


# Healthy notebooks, every axis value in at least one (each pair is not needed: the axes meet in the debugger's
# builder, which tests/usercode/test_unknowns.py draws at random).
HEALTHY = (
    Notebook("wordpiece", "input_word_ids", "sigmoid", "keras", "warmup_class", "repeat", "fit"),
    Notebook("transformers", "input_ids", "softmax", "own_function", "adam", "pandas", "fit"),
    Notebook("wordpiece", "input_ids", "softmax", "keras", "adam", "numpy", "fit"),
    Notebook("transformers", "input_word_ids", "sigmoid", "own_function", "warmup_class", "numpy", "fit"),
    Notebook("wordpiece", "input_word_ids", "sigmoid", "keras", "adam", "repeat", "strategy_run"),
    Notebook("transformers", "input_ids", "softmax", "keras", "warmup_class", "pandas", "strategy_run"),
    Notebook("keras_hub", "input_word_ids", "softmax", "own_function", "adam", "numpy", "fit"),
)

# Each bug in two notebooks of different shapes (a from_logits bug needs a Keras loss to carry it).
BUGGED = (
    HEALTHY[0].with_bug("rate"), HEALTHY[1].with_bug("rate"),
    HEALTHY[2].with_bug("lr_keyword"), HEALTHY[3].with_bug("lr_keyword"),
    HEALTHY[0].with_bug("stray_label"), HEALTHY[1].with_bug("stray_label"),
    HEALTHY[2].with_bug("from_logits"), HEALTHY[5].with_bug("from_logits"),
    HEALTHY[6].with_bug("stray_label"),
)


def write_notebook(shape: Notebook) -> str:
    """The notebook's code, as a script that runs on its own."""
    sigmoid = shape.head == "sigmoid"
    lines = ["import json", "import sys", "", "import numpy as np", "import tensorflow as tf",
             "import tf_keras as keras", "from transformers import TFAutoModel"]
    if shape.data == "pandas":
        lines.append("import pandas as pd")
    # KerasHub's tokenizer adds no [CLS] and [SEP]: the kit's longest row is 11 tokens, padded to 12 as a notebook
    # sets its length from its rows (24 would make 67% of each batch padding, which data.truncation rightly warns of).
    length = 12 if shape.tokenizer == "keras_hub" else MAX_LEN
    lines += ["", "checkpoint, data = sys.argv[1], sys.argv[2]", f"MAX_LEN = {length}",
              "records = [json.loads(line) for line in open(data)]"]
    if shape.data == "pandas":
        lines.append('df = pd.DataFrame({"text": [r["sentence"] for r in records], "target": [r["label"] for r in '
                     'records]})')
        if shape.bug == "stray_label":
            lines.append('df.loc[[5, 17, 40], "target"] = 2')
        lines.append('texts, labels = df["text"].tolist(), df["target"].values')
    else:
        lines += ['texts = [r["sentence"] for r in records]', 'labels = np.array([r["label"] for r in records])']
        if shape.bug == "stray_label":
            lines.append("labels[[5, 17, 40]] = 2")
    if shape.tokenizer == "wordpiece":
        lines += ["from tokenizers import BertWordPieceTokenizer", "",
                  'tokenizer = BertWordPieceTokenizer(checkpoint + "/vocab.txt", lowercase=True)',
                  "tokenizer.enable_truncation(max_length=MAX_LEN)", "tokenizer.enable_padding(length=MAX_LEN)",
                  "ids = np.array([encoding.ids for encoding in tokenizer.encode_batch(texts)], dtype=np.int32)"]
    elif shape.tokenizer == "keras_hub":
        lines += ["import keras_hub", "", 'tokenizer = keras_hub.tokenizers.WordPieceTokenizer(vocabulary=checkpoint + '
                  '"/vocab.txt", sequence_length=MAX_LEN, lowercase=True)',
                  "ids = np.asarray(tokenizer(texts)).astype(np.int32)"]
    else:
        lines += ["from transformers import AutoTokenizer", "", "tokenizer = AutoTokenizer.from_pretrained(checkpoint)",
                  'ids = tokenizer(texts, padding="max_length", truncation=True, max_length=MAX_LEN, '
                  'return_tensors="np")["input_ids"].astype(np.int32)']
    if shape.optimizer == "warmup_class":
        lines += ["", "", "class Warmup(keras.optimizers.schedules.LearningRateSchedule):",
                  "    def __init__(self, peak, warmup):", "        self.peak, self.warmup = peak, warmup", "",
                  "    def __call__(self, step):", "        step = tf.cast(step, tf.float32)",
                  "        return self.peak * tf.minimum(1.0, (step + 1) / self.warmup)"]
    if shape.loss == "own_function":
        lines += ["", ""]
        if sigmoid:
            lines += ["def loss_fn(y_true, y_pred):",
                      "    y_true = tf.reshape(tf.cast(y_true, tf.float32), [-1, 1])",
                      "    return tf.reduce_mean(keras.losses.binary_crossentropy(y_true, y_pred))"]
        else:
            lines += ["def loss_fn(y_true, y_pred):",
                      "    return tf.reduce_mean(keras.losses.sparse_categorical_crossentropy(y_true, y_pred))"]
    rate = 0.1 if shape.bug == "rate" else 3e-4 if shape.bug == "lr_keyword" else RATE
    keyword = "lr" if shape.bug == "lr_keyword" else "learning_rate"
    schedule = f"Warmup({rate!r}, 4)" if shape.optimizer == "warmup_class" else repr(rate)
    activation = None if shape.bug == "from_logits" else "sigmoid" if sigmoid else "softmax"
    loss = "loss_fn" if shape.loss == "own_function" else \
        '"binary_crossentropy"' if sigmoid else "keras.losses.SparseCategoricalCrossentropy()"
    model = ["encoder = TFAutoModel.from_pretrained(checkpoint)",
             f'word_ids = keras.Input(shape=(MAX_LEN,), dtype=tf.int32, name="{shape.input}")',
             "cls = encoder(word_ids)[0][:, 0, :]",
             f"outputs = keras.layers.Dense({1 if sigmoid else 2}, activation={activation!r})(cls)",
             "model = keras.Model(inputs=word_ids, outputs=outputs)",
             f"optimizer = keras.optimizers.Adam({keyword}={schedule})"]
    if shape.data == "repeat" or shape.loop == "strategy_run":
        data = ["dataset = tf.data.Dataset.from_tensor_slices((ids, labels)).shuffle(256, seed=0).batch(16)"]
        if shape.data == "repeat":
            data = [data[0] + ".repeat()", "steps = len(ids) // 16"]
    else:
        data = []
    lines += ["", "", *data]
    if shape.loop == "fit":
        lines += [*model, f"model.compile(optimizer=optimizer, loss={loss}, metrics=['accuracy'])"]
        if shape.data == "repeat":
            lines.append("model.fit(dataset, steps_per_epoch=steps, epochs=2)")
        else:
            lines.append("model.fit(ids, labels, batch_size=16, epochs=2)")
        return "\n".join(lines) + "\n"
    # TPU boilerplate that falls back to the default strategy on a CPU, a step run by strategy.run.
    lines += ["try:", "    resolver = tf.distribute.cluster_resolver.TPUClusterResolver()",
              "    tf.config.experimental_connect_to_cluster(resolver)",
              "    tf.tpu.experimental.initialize_tpu_system(resolver)",
              "    strategy = tf.distribute.TPUStrategy(resolver)", "except (ValueError, tf.errors.NotFoundError):",
              "    strategy = tf.distribute.get_strategy()", "",
              "with strategy.scope():", *(f"    {line}" for line in model)]
    if shape.loss == "keras":
        objects = "keras.losses.BinaryCrossentropy()" if sigmoid else loss
        lines.append(f"    loss_object = {objects}")
        compute = "loss_object(y, predictions)"
    else:
        compute = "loss_fn(y, predictions)"
    target = "tf.reshape(tf.cast(y, tf.float32), [-1, 1])" if sigmoid and shape.loss == "keras" else "y"
    lines += ["distributed = strategy.experimental_distribute_dataset(dataset)", "", "",
              "@tf.function", "def train_step(x, y):", "    with tf.GradientTape() as tape:",
              "        predictions = model(x, training=True)",
              f"        loss = {compute.replace('(y,', f'({target},')}",
              "    gradients = tape.gradient(loss, model.trainable_variables)",
              "    optimizer.apply_gradients(zip(gradients, model.trainable_variables))", "    return loss", "", "",
              "for epoch in range(2):"]
    if shape.data == "repeat":
        lines += ["    for step, (x, y) in enumerate(distributed):", "        if step == steps:", "            break",
                  "        strategy.run(train_step, args=(x, y))"]
    else:
        lines += ["    for x, y in distributed:", "        strategy.run(train_step, args=(x, y))"]
    return "\n".join(lines) + "\n"
