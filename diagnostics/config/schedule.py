"""A run's planned schedule, as one value: what `transformers.create_optimizer` is given (training steps, warmup
steps, weight decay). The settings that give it are read here once; whatever builds the optimizer, draws the
schedule or writes a fix in the user's code reads this value, so a setting that derives the warmup another way (a
share of the steps, say) is one more line in `Schedule.of`, not a change in each reader."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Schedule:
    """create_optimizer's plan: a linear warmup over `warmup_steps` to the peak rate, then a linear decay to 0 at
    `train_steps`, with decoupled weight decay."""

    train_steps: int = 1000
    warmup_steps: int = 0
    weight_decay: float = 0.0

    @classmethod
    def of(cls, config: Any) -> "Schedule":
        """The schedule a run configuration (or anything with its fields) plans."""
        return cls(int(config.train_steps), int(config.warmup_steps), float(config.weight_decay))

    @property
    def warmup_share(self) -> float:
        """The share of the training steps spent warming up."""
        return self.warmup_steps / self.train_steps if self.train_steps else 0.0

    def build(self, learning_rate: float):
        """(optimizer, learning-rate schedule) as `create_optimizer` builds them at this peak rate."""
        from transformers import create_optimizer

        return create_optimizer(learning_rate, num_train_steps=self.train_steps, num_warmup_steps=self.warmup_steps,
                                weight_decay_rate=self.weight_decay)

    def code(self, learning_rate: float) -> str:
        """The line of a user's code that builds it at this rate."""
        return (f"optimizer, schedule = create_optimizer(init_lr={learning_rate:.0e}, "
                f"num_train_steps={self.train_steps}, num_warmup_steps={self.warmup_steps}, "
                f"weight_decay_rate={self.weight_decay:g})")
