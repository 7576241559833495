"""model.memory: parameters and training memory at this batch size."""

from __future__ import annotations

import functools
import shutil
import subprocess
from typing import Any, TypedDict

from diagnostics.core.check import Check, Condition
from diagnostics.core.context import RunContext
from diagnostics.core.result import CheckResult, judge
from diagnostics.core.rules import ShareAbove
from diagnostics.i18n import N_, msg
from diagnostics.keras import keras_model
from diagnostics.keras.loading import config_size
from diagnostics.keras.parameters import optimizer_slots, training_bytes


@functools.lru_cache(maxsize=1)
def gpu_memory_bytes() -> int | None:
    """Total memory of the first GPU, when one exists and nvidia-smi can say; asked once a process (model.memory and
    the training units' `fits` need both read it, each run)."""
    import tensorflow as tf

    if not tf.config.list_physical_devices("GPU") or not shutil.which("nvidia-smi"):
        return None
    try:
        output = subprocess.run(["nvidia-smi", "--query-gpu=memory.total", "--format=csv,noheader,nounits"],
                                capture_output=True, text=True, timeout=10).stdout
        return int(output.split()[0]) * 1024 * 1024
    except Exception:
        return None


def memory_figures(param_count: int, model_config, batch_size: int, sequence_length: int,
                   optimizer=None) -> dict[str, Any]:
    """Memory training needs: float32 weights, gradients and the optimizer's slots (Adam's two when `optimizer` is
    None), plus an activation estimate (`parameters.training_bytes`)."""
    import psutil

    slots = 2 if optimizer is None else optimizer_slots(optimizer)
    hidden, layers, heads, width = config_size(model_config)
    state, activations = training_bytes(param_count, hidden, layers, heads, batch_size, sequence_length, slots,
                                        intermediate=width)
    named = optimizer is not None and not (slots == 2 and type(getattr(optimizer, "inner_optimizer", optimizer)
                                                                 ).__name__.startswith("Adam"))
    return {
        "optimizer_slots": slots,
        "slots_of": type(getattr(optimizer, "inner_optimizer", optimizer)).__name__ if named else None,
        "parameters": int(param_count),
        "weights_bytes": param_count * 4,
        "training_state_bytes": state,
        "activation_bytes_estimate": activations,
        "total_bytes": state + activations,
        "available_ram_bytes": int(psutil.virtual_memory().available),
        "gpu_bytes": gpu_memory_bytes(),
        "batch_size": batch_size,
        "sequence_length": sequence_length,
    }


# distilbert-base-cased's size: suggested as a smaller checkpoint only to a model larger than it.
SMALLER_CHECKPOINT_PARAMETERS = 66_000_000


def _gib(count: float) -> str:
    return f"{count / 2**30:.2f} GiB" if count >= 2**28 else f"{count / 2**20:.1f} MiB"


def check_memory(figures: dict[str, Any]) -> CheckResult:
    """Whether training fits in the memory of the device it would run on."""
    return judge(CHECK, {**figures, "room_bytes": figures["gpu_bytes"] or figures["available_ram_bytes"]})


def _needs(e) -> Any:
    """What every verdict of model.memory says first: the memory training needs against the device's, and the rows
    a batch really holds when the split has fewer than the batch size."""
    figures = dict(parameters=e["parameters"], total=_gib(e["total_bytes"]), state=_gib(e["training_state_bytes"]),
                   batch=e["batch_size"], length=e["sequence_length"],
                   activations=_gib(e["activation_bytes_estimate"]), room=_gib(e["room_bytes"]),
                   device="GPU" if e["gpu_bytes"] else "RAM")
    if e.get("slots_of"):  # an optimizer other than Adam's family: its own slots, counted
        summary = msg("{parameters:,} parameters: training needs about {total} (weights, gradients and {optimizer}'s "
                      "slot variables, {slots} a weight, {state}; activations for batch {batch} x max_length {length} "
                      "about {activations}) against {room} of {device}.", optimizer=e["slots_of"],
                      slots=e["optimizer_slots"], **figures)
    else:
        summary = msg("{parameters:,} parameters: training needs about {total} (weights, gradients and Adam's two "
                      "slots {state}, activations for batch {batch} x max_length {length} about {activations}) "
                      "against {room} of {device}.", **figures)
    configured = e.get("configured_batch_size") or e["batch_size"]
    if configured > e["batch_size"]:
        summary = msg("{summary} The batch size is {configured:,}, but the split has only {rows:,} rows, so a batch "
                      "holds {rows:,}.", summary=summary, configured=configured, rows=e["batch_size"])
    return summary


def run_figures(run: RunContext) -> dict[str, Any]:
    """The figures of the run's model at the batch fit builds: no more rows than the split has."""
    model, config, rows = run.classifier[0], run.config, len(run.split)
    return {**memory_figures(model.count_params(), keras_model.model_config(model), min(config.batch_size, rows) or
                             config.batch_size, config.max_length, config.user_optimizer),
            "configured_batch_size": config.batch_size}


def measure(run: RunContext) -> CheckResult:
    return check_memory(run_figures(run))


def will_not_fit(run: RunContext) -> bool:
    """Whether training needs more than the device's memory, as model.memory judges it (the training measurements
    then do not start: they would end the process, or the machine, on memory)."""
    figures = run_figures(run)
    room = figures["gpu_bytes"] or figures["available_ram_bytes"]
    return figures["total_bytes"] > CHECK.value("max_memory_share") * room


class Evidence(TypedDict, total=False):
    """What model.memory puts in its evidence (the charts, tables and JSON report read it)."""

    activation_bytes_estimate: int
    available_ram_bytes: int
    batch_size: int  # the rows a batch holds (no more than the split has)
    configured_batch_size: int
    gpu_bytes: int
    optimizer_slots: int  # the slot variables the optimizer keeps a weight (Adam's two)
    slots_of: str | None  # the optimizer's class, where it is not Adam's family (its slots are said)
    parameters: int
    sequence_length: int
    total_bytes: int
    training_state_bytes: int
    weights_bytes: int
    room_bytes: int  # the device's memory: the GPU's, or the RAM available


CHECK = Check("model.memory", N_("parameters and training memory at this batch size"), requires=("model",),
              measure=measure, conditions=(
    Condition("max_memory_share", 1.0, "warn when training needs more than this share of the device's memory (GPU, or "
                                       "the RAM available)", ShareAbove("total_bytes", "room_bytes"),
              says=lambda e, f: (
                  msg("{summary} It will not fit.", summary=_needs(e)),
                  msg("Halve the batch size, shorten max_length, or pick a smaller checkpoint such as "
                      "distilbert-base-cased.") if e["parameters"] > SMALLER_CHECKPOINT_PARAMETERS else
                  msg("Halve the batch size or shorten max_length."))),),
              otherwise_says=lambda e, f: _needs(e), evidence=Evidence)
