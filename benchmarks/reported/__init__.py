"""A benchmark of reported fine-tuning bugs: real public reports of TensorFlow + Transformers text-classification
training problems, each reproduced on today's pinned stack as two scripts, `case.py` (the reporter's code shape,
adapted only where running offline needs it, each such line marked `# adapted:`) and `fixed.py` (the accepted fix,
marked `# fix`), with `case.toml` saying where the report is, what it said, the fix and where it comes from, and
which check owns the cause.

    python -m benchmarks.reported truth [--checkpoint DIR] [--cases SLUG,...]   each script run plainly
    python -m benchmarks.reported score [--checkpoint DIR] [--cases SLUG,...]   each traced, repaired and judged
    python -m benchmarks.reported rejudge                                     the verdicts again from kept reports
    python -m benchmarks.reported table                                       CASES.md from the kept results

Every script takes `--checkpoint DIR` and `--data FILE` and ends by printing
`held-out accuracy A on N rows; majority class M`, or stops with the error its report is about. The truth and the
score are kept in `results/` (JSON), and `CASES.md` is written from them.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
CASES_DIR = HERE / "cases"
RESULTS = HERE / "results"
CATEGORIES = ("lr_too_high", "lr_too_low", "loss_from_logits", "labels_out_of_range", "num_labels", "columns",
              "label_format", "shapes", "keras3_vs_tfkeras", "frozen_weights", "leakage", "wrong_labels", "other")


@dataclass(frozen=True)
class Case:
    """One reported bug.

    Attributes:
        slug: the case's folder name (repository, number, what it is about).
        owner: the check that owns the cause; `error:KIND` for a script that stops before fit, where the trace's
            diagnosis of the error must be of that kind (`script_errors`: "column", "stack", "keyword", ...); None
            for a cause no check of the pipeline can see, which counts against the score when it is a bug.
        fix_matches: a regular expression the owner's fix must match to count as the accepted one.
        shortfall: why the debugger gets the case wrong, where the score says it does.
    """

    slug: str
    source: str
    date: str
    symptom: str
    fix: str
    fix_source: str
    category: str
    error_before_fit: bool
    owner: str | None
    fix_matches: str | None
    data: str
    shortfall: str = ""  # why the debugger gets this case wrong, where it does (CASES.md lists it beside the verdicts)

    @property
    def folder(self) -> Path:
        return CASES_DIR / self.slug

    def script(self, fixed: bool = False) -> Path:
        return self.folder / ("fixed.py" if fixed else "case.py")

    def arguments(self, checkpoint: Path) -> list[str]:
        return ["--checkpoint", str(checkpoint), "--data", str(ROOT / self.data)]


def load(folder: Path) -> Case:
    """The case of a folder, its `case.toml` checked against what a case must say.

    Raises:
        ValueError: a field missing or unknown, a category not in CATEGORIES, or a script missing.
    """
    spec = tomllib.loads((folder / "case.toml").read_text(encoding="utf-8"))
    fields = set(Case.__dataclass_fields__) - {"slug"}
    if set(spec) - fields or {name for name in fields if name not in ("owner", "fix_matches", "shortfall")} - set(spec):
        raise ValueError(f"{folder.name}/case.toml: fields {sorted(spec)}, expected {sorted(fields)}")
    case = Case(slug=folder.name, **{"owner": None, "fix_matches": None, **spec})
    if case.category not in CATEGORIES:
        raise ValueError(f"{folder.name}: category {case.category!r} is not one of {CATEGORIES}")
    for fixed in (False, True):
        if not case.script(fixed).is_file():
            raise ValueError(f"{folder.name}: {case.script(fixed).name} is missing")
    return case


def cases(only: str = "") -> list[Case]:
    """Every case, by slug; `only`: a comma-separated list of slugs."""
    wanted = {slug.strip() for slug in only.split(",") if slug.strip()}
    found = [load(folder) for folder in sorted(CASES_DIR.iterdir()) if (folder / "case.toml").is_file()]
    unknown = wanted - {case.slug for case in found}
    if unknown:
        raise ValueError(f"no such case: {', '.join(sorted(unknown))}")
    return [case for case in found if not wanted or case.slug in wanted]
