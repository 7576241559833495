"""Which devices the training checks (sweep, range test, overfit test, learnability) run on.

One device: TensorFlow's default strategy, as plain Keras uses. Several GPUs: a `MirroredStrategy` over
all of them, so every accelerator of the machine trains; each batch is split by rows across the
replicas and the gradients are summed across them, which gives the same step as one device on the
whole batch. `DEBUGGER_DEVICES=/gpu:0,/gpu:1` names the devices instead (CPU logical devices work too,
which is how the tests exercise the path on a machine without GPUs).
"""

from __future__ import annotations

import contextvars
import functools
import os
import threading

import numpy as np

DEVICES_ENV = "DEBUGGER_DEVICES"


def training_devices() -> list[str]:
    """The devices named in DEBUGGER_DEVICES, else every GPU TensorFlow sees."""
    import tensorflow as tf

    named = [name.strip() for name in os.environ.get(DEVICES_ENV, "").split(",") if name.strip()]
    return named or [device.name for device in tf.config.list_logical_devices("GPU")]


def training_strategy(min_rows: int | None = None):
    """The strategy for training copies: mirrored over several devices, else the default one.

    Args:
        min_rows: the fewest rows in any batch to train on; a batch must give every replica a row,
            so fewer rows than devices fall back to one device.
    """
    import tensorflow as tf

    devices = training_devices()
    if len(devices) > 1 and (min_rows is None or min_rows >= len(devices)):
        return _mirrored(tuple(devices))
    return tf.distribute.get_strategy()


@functools.lru_cache(maxsize=4)
def _mirrored(devices: tuple[str, ...]):
    import tensorflow as tf

    return tf.distribute.MirroredStrategy(list(devices))


def outside_user_strategy(function, *args, **kwargs):
    """`function(*args, **kwargs)`, run outside any `tf.distribute` strategy scope the caller is in.

    A script builds and compiles its model inside `with strategy.scope():` and reaches `fit` there; inside that
    scope a copy's direct `train_step` finds no replica context (`'NoneType' object has no attribute
    'merge_call'`). Scopes belong to a thread, so the checks run in a thread of their own, where TensorFlow's
    default strategy holds, as it does for a script without a scope (the user's variables are only read). The
    caller's context variables (the language, the time budget) go with it; its exceptions come back.
    """
    import tensorflow as tf

    if not tf.distribute.has_strategy():
        return function(*args, **kwargs)
    context = contextvars.copy_context()
    outcome: dict = {}

    def target():
        try:
            outcome["value"] = context.run(function, *args, **kwargs)
        except BaseException as exc:  # handed back to the caller's thread as it is
            outcome["error"] = exc

    worker = threading.Thread(target=target, name="debugger-checks", daemon=True)
    worker.start()
    worker.join()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def batch_rows(tf_batch) -> int:
    """Rows in a batch as `to_tf_dataset` gives it (a dict, or an (inputs, labels) pair)."""
    import tensorflow as tf

    return int(tf.nest.flatten(tf_batch)[0].shape[0])


def per_replica_dataset(batches: list, strategy, *, repeat: bool):
    """The batches as a dataset the strategy can feed: on several replicas, each batch's rows split evenly
    across them (a replica takes one consecutive element per step)."""
    import tensorflow as tf

    replicas = strategy.num_replicas_in_sync
    pieces = []
    for batch in batches:
        if replicas == 1:
            pieces.append(batch)
            continue
        bounds = np.linspace(0, batch_rows(batch), replicas + 1).astype(int)
        pieces += [tf.nest.map_structure(lambda tensor, lo=lo, hi=hi: tensor[lo:hi], batch)
                   for lo, hi in zip(bounds[:-1], bounds[1:], strict=False)]
    dataset = tf.data.Dataset.from_tensors(pieces[0])
    for piece in pieces[1:]:
        dataset = dataset.concatenate(tf.data.Dataset.from_tensors(piece))
    dataset = dataset.repeat() if repeat else dataset
    # Tensors already in memory leave tf.data's autotuning nothing to tune, and its background thread made dropping
    # an iterator wait: 0.6 to 0.8 s, and 6.8 s once, where the overfit test switched to its batch on the real
    # checkpoint (0.01 s without it).
    options = tf.data.Options()
    options.autotune.enabled = False
    dataset = dataset.with_options(options)
    if replicas == 1:
        return dataset
    return strategy.distribute_datasets_from_function(lambda context: dataset)
