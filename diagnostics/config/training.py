"""What the training checks are asked to do beyond the run's configuration: the learning-rate sweep's and range
test's settings, and the overfit test's epochs."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from diagnostics.config import limits
from diagnostics.i18n import joined, msg

DEFAULT_EPOCHS = 20


@dataclass(frozen=True)
class SweepSettings:
    """The learning-rate sweep and range test; every value settable on the page and the command line."""

    min_rate: float = 1e-6
    max_rate: float = 1e-2
    rates: int = 7
    steps: int = 8
    range_start: float = 1e-7
    range_end: float = 1.0
    range_steps: int = 40

    def grid(self) -> list[float]:
        return np.geomspace(self.min_rate, self.max_rate, self.rates).tolist()

    def validated(self) -> "SweepSettings":
        from diagnostics.core.errors import InputError

        problems = []
        if not (0 < self.min_rate < self.max_rate) or not all(map(math.isfinite, (self.min_rate, self.max_rate))):
            problems.append(msg("the sweep needs 0 < lowest rate < highest rate, got {low:g} and {high:g}",
                                low=self.min_rate, high=self.max_rate))
        if not 2 <= self.rates <= 25:
            problems.append(msg("the sweep needs 2 to 25 rates, got {rates}", rates=self.rates))
        if not 1 <= self.steps <= 500:
            problems.append(msg("steps per rate must be 1 to 500, got {steps}", steps=self.steps))
        if not (0 < self.range_start < self.range_end) or not 5 <= self.range_steps <= 1000:
            problems.append(msg("the range test needs 0 < start rate < end rate and 5 to 1000 steps"))
        problems += limits.sweep_problems(self)
        if problems:
            raise InputError(msg("{problems}.", problems=joined(problems, "; ")))
        return self
