"""How a training curve is read: its exponential moving average, and a rate rounded down as a fix names it."""

from __future__ import annotations

import math

import numpy as np


def round_down_rate(rate: float) -> float:
    """A rate rounded down to one significant digit (1.4e-4 -> 1e-4), as a fix should name it."""
    exponent = math.floor(math.log10(rate))
    return math.floor(rate / 10 ** exponent) * 10 ** exponent


def smoothed(losses: list[float], beta: float = 0.98) -> list[float]:
    """Exponential moving average with bias correction (fastai's and Lightning's finders); NaN stays NaN."""
    average, out = 0.0, []
    for index, loss in enumerate(losses, start=1):
        if not np.isfinite(loss):
            out.append(float("nan"))
            continue
        average = beta * average + (1 - beta) * loss
        out.append(average / (1 - beta ** index))
    return out
