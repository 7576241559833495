"""What the training checks are asked to do beyond the run's configuration: the learning-rate sweep's and range
test's settings, and the overfit test's epochs."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from diagnostics.config import limits
from diagnostics.config.settings import SWEEP_SETTINGS
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

        problems = [problem for setting in SWEEP_SETTINGS
                    if (problem := setting.bounds.problem(getattr(self, setting.field))) is not None]
        if not problems and self.min_rate >= self.max_rate:
            problems.append(msg("the sweep needs 0 < lowest rate < highest rate, got {low:g} and {high:g}",
                                low=self.min_rate, high=self.max_rate))
        if not (0 < self.range_start < self.range_end) or not all(map(math.isfinite, (self.range_start,
                                                                                      self.range_end))):
            problems.append(msg("the range test needs 0 < start rate < end rate"))
        problems += limits.sweep_problems(self)
        if problems:
            raise InputError(msg("{problems}.", problems=joined(problems, "; ")))
        return self
