"""The course's training script under the demo kit, as written, with its first error repaired, and fixed: the
workshop scenarios for `python -m diagnostics trace` and the app's Your script page."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from diagnostics.i18n import N_

SCRIPTS_DIR = Path(__file__).resolve().parents[1] / "demo_data" / "scripts"


@dataclass(frozen=True)
class CourseScript:
    """One bundled script: what it is, and the checks owning the causes the checks must name on it."""

    path: Path
    title: str
    about: str
    flagged: tuple[str, ...]


COURSE_SCRIPTS = {
    "course_script": CourseScript(
        SCRIPTS_DIR / "course_script.py", N_("The course's script as written"),
        N_("to_tf_dataset(columns=['input_ids', 'labels']) stops it before fit: the column is 'label', and only a "
           "padding collator makes 'labels'."), ("data.columns",)),
    "course_script_repaired": CourseScript(
        SCRIPTS_DIR / "course_script_repaired.py", N_("Its first error repaired, the other bugs kept"),
        N_("A padding collator and 'label' get it to fit, where num_labels=2 on three labels, the string loss on "
           "logits and the string 'adam' remain."), ("model.config", "hparams.loss", "hparams.optimizer")),
    "course_script_fixed": CourseScript(
        SCRIPTS_DIR / "course_script_fixed.py", N_("The course's fixed script"),
        N_("num_labels=3, the model's internal loss, and Adam at a rate that suits the checkpoint: nothing may fail."),
        ()),
}
