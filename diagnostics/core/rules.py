"""A condition's rule as data: small functions of a check's measured evidence, its threshold and its other
thresholds by name, that say whether the condition is crossed. `str()` of a rule is how docs/checks.md shows it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Above:
    """A condition's rule as data: the value the check measured, under `key` of its evidence, is above the threshold
    (`or_equal`: at least it; `of`: another condition's threshold of the same check). A value the check did not
    measure (missing or None) crosses nothing, or, with `unmeasured`, crosses (a bound that does not apply, such as
    a loss against chance for a regression head)."""

    key: str
    or_equal: bool = False
    of: str = ""
    unmeasured: bool = False

    def __call__(self, evidence: dict, threshold: float, values: dict | None = None) -> bool:
        measured, limit = evidence.get(self.key), (values or {}).get(self.of, threshold) if self.of else threshold
        if measured is None:
            return self.unmeasured
        return measured >= limit if self.or_equal else measured > limit

    @property
    def keys(self) -> tuple[str, ...]:
        return (self.key,)

    def __str__(self) -> str:
        bound = f"{self.key} {'>=' if self.or_equal else '>'} {self.of or 'threshold'}"
        return f"({bound}, or {self.key} not measured)" if self.unmeasured else bound


@dataclass(frozen=True)
class AtMost:
    """The measured value under `key` is at most the threshold (e.g. a variance of 0: nothing to learn);
    `below`: under it; `of`: another condition's threshold of the same check."""

    key: str
    below: bool = False
    of: str = ""

    def __call__(self, evidence: dict, threshold: float, values: dict | None = None) -> bool:
        measured, limit = evidence.get(self.key), (values or {}).get(self.of, threshold) if self.of else threshold
        return measured is not None and (measured < limit if self.below else measured <= limit)

    @property
    def keys(self) -> tuple[str, ...]:
        return (self.key,)

    def __str__(self) -> str:
        return f"{self.key} {'<' if self.below else '<='} {self.of or 'threshold'}"


@dataclass(frozen=True)
class ShareAbove:
    """`part` of the evidence is more than the threshold's share of `whole` (a count of rows against all rows);
    `at_most`: at most that share (a loss that fell to a share of its start)."""

    part: str
    whole: str
    at_most: bool = False

    def __call__(self, evidence: dict, threshold: float, values: dict | None = None) -> bool:
        if not evidence.get(self.whole) or evidence.get(self.part) is None:
            return False
        limit = threshold * evidence[self.whole]
        return evidence[self.part] <= limit if self.at_most else evidence[self.part] > limit

    @property
    def keys(self) -> tuple[str, ...]:
        return self.part, self.whole

    def __str__(self) -> str:
        return f"{self.part} {'<=' if self.at_most else '>'} threshold * {self.whole}"


@dataclass(frozen=True)
class Holds:
    """A yes/no the check measured, under `key` of its evidence, is yes (e.g. every row predicted right); `is_`
    False: is no (a yes/no not measured crosses nothing either way)."""

    key: str
    is_: bool = True

    def __call__(self, evidence: dict, threshold: float, values: dict | None = None) -> bool:
        measured = evidence.get(self.key)
        return measured is not None and bool(measured) is self.is_

    @property
    def keys(self) -> tuple[str, ...]:
        return (self.key,)

    def __str__(self) -> str:
        return self.key if self.is_ else f"not {self.key}"


@dataclass(frozen=True)
class All:
    """Every one of `rules` is crossed, each read with the same evidence and threshold."""

    rules: tuple

    def __call__(self, evidence: dict, threshold: float, values: dict | None = None) -> bool:
        return all(rule(evidence, threshold, values) for rule in self.rules)

    @property
    def keys(self) -> tuple[str, ...]:
        return tuple(key for rule in self.rules for key in rule.keys)

    def __str__(self) -> str:
        return " and ".join(str(rule) for rule in self.rules)


@dataclass(frozen=True)
class Not:
    """`rule` is not crossed (a yes/no not measured, which crosses nothing, counts as not crossed)."""

    rule: Any

    def __call__(self, evidence: dict, threshold: float, values: dict | None = None) -> bool:
        return not self.rule(evidence, threshold, values)

    @property
    def keys(self) -> tuple[str, ...]:
        return self.rule.keys

    def __str__(self) -> str:
        return f"not ({self.rule})"
