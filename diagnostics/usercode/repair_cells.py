"""`report.repair()` in a notebook: each cause's fix as code to run on the objects the user built, in their names.

A notebook cannot be rewritten safely, so the repair is code for the next cell: a new optimizer at the sweep's
measured rate, the head rebuilt with the classes the labels need, `compile` again with the loss that reads the
outputs, all in one `compile` that keeps what was not at fault (the loss and optimizer settings the model had). The
changes are the same ones `trace --repair` writes into a script (`repair.changes_of`, read from each cause's own
fix), so the two never disagree."""

from __future__ import annotations

import html
from dataclasses import dataclass, field

from diagnostics.config.run import RunConfig
from diagnostics.core.fixes import DEFAULT_KERAS, CodeStyle, optimizer_code
from diagnostics.i18n import localize, msg
from diagnostics.usercode.repair import Change, Unrepaired
from diagnostics.usercode.repair_plan import changes_of


@dataclass(frozen=True)
class Cell:
    """Code to run in the next cell, and the causes (their owners) it repairs."""

    owners: tuple[str, ...]
    code: str


@dataclass
class Cells:
    """What `report.repair()` gives: the cells to run, in order, and the causes no code can repair, each with why.
    Print it, or show it in a notebook; `code` is every cell as one."""

    cells: list[Cell] = field(default_factory=list)
    unrepaired: list[Unrepaired] = field(default_factory=list)

    def __iter__(self):
        return iter(self.cells)

    def __len__(self) -> int:
        return len(self.cells)

    @property
    def code(self) -> str:
        return "\n\n".join(cell.code for cell in self.cells)

    def _lines(self) -> list[tuple[str, str]]:
        """(heading, code or reason) for each cell and each cause left unrepaired, in the current language."""
        said = [(localize(msg("Repairs {checks}; then run diagnose() again to see it verified.",
                              checks=", ".join(cell.owners))), cell.code) for cell in self.cells]
        said += [(localize(msg("{check}: not repairable in code: {reason}.", check=item.owner, reason=item.reason)), "")
                 for item in self.unrepaired]
        if not said:
            said.append((localize(msg("Nothing to repair: no cause has a fix in code.")), ""))
        return said

    def __str__(self) -> str:
        return "\n\n".join(f"# {heading}" + (f"\n{code}" if code else "") for heading, code in self._lines())

    __repr__ = __str__

    def _repr_html_(self) -> str:
        return "\n".join(f"<p>{html.escape(heading)}</p>" + (f"<pre><code>{html.escape(code)}</code></pre>"
                                                              if code else "") for heading, code in self._lines())


def repair_cells(causes: list[dict], config: RunConfig, *, model: str = "model", loaded=None,
                 measured: float | None = None) -> Cells:
    """The cells that repair these causes (a report's, as its JSON has them) on the model the user calls `model`,
    checked with `config`. `loaded`: the model object itself, which says whether it was compiled with metrics (kept
    as they were) and from which checkpoint a new head is loaded; `measured`: the rate the report's sweep measured."""
    changes, unrepaired = changes_of(causes, measured)
    unrepaired = [Unrepaired(item.owner, msg(
        "a rate is written in only once hparams.lr_sweep has measured one: run diagnose() with the hparams stage")) if
        item.owner == "hparams.optimizer" else item for item in unrepaired]
    kinds: dict[str, Change] = {change.kind: change for change in changes}
    if "columns" in kinds:  # the dataset's, not the model's: the user's own to_tf_dataset call makes it again
        columns = kinds.pop("columns")
        unrepaired.append(Unrepaired(columns.owner, msg(
            "the columns are the dataset's: build it again with to_tf_dataset(columns={columns}, ...)",
            columns=columns.value)))
    if "collate_fn" in kinds:  # the same: the padding is the dataset's
        collator = kinds.pop("collate_fn")
        unrepaired.append(Unrepaired(collator.owner, msg(
            "the batches are the dataset's: build it again with to_tf_dataset(..., collate_fn={collator})",
            collator=collator.value)))
    lines: list[str] = []
    owners = [change.owner for change in kinds.values()]
    rebuilt = "num_labels" in kinds
    if rebuilt and not _is_transformers_classifier(loaded):
        unrepaired.append(Unrepaired(kinds.pop("num_labels").owner, msg(
            "the head is a layer of your own model: build its last Dense layer with as many outputs as the fix says")))
    elif rebuilt and not _checkpoint(loaded):
        unrepaired.append(Unrepaired(kinds.pop("num_labels").owner, msg(
            "the checkpoint the model was loaded from is not known: load it again with the fix's num_labels")))
    if "num_labels" not in kinds:
        owners = [change.owner for change in kinds.values()]
        rebuilt = False
    if not kinds:
        return Cells([], unrepaired)
    keep_loss = "loss" not in kinds and config.loss != "internal"
    if keep_loss:
        lines.append(f"loss = {model}.loss  # the loss it was compiled with")
    if "learning_rate" in kinds:
        style = CodeStyle.of(config)
        code = optimizer_code(float(kinds["learning_rate"].value), style)
        lines.append(code if code.startswith("optimizer") else f"optimizer = {code}")
    elif rebuilt:  # the old optimizer holds the old model's variables
        lines.append(f"optimizer = {model}.optimizer.from_config({model}.optimizer.get_config())  # its settings, "
                     "new state")
    else:
        lines.append(f"optimizer = {model}.optimizer")
    metrics = _user_metrics(loaded)
    if metrics:
        lines.append(f"metrics = {model}.compiled_metrics._user_metrics  # the metrics it was compiled with")
    if rebuilt:
        lines = ["from transformers import TFAutoModelForSequenceClassification", ""] + lines + [
            f"{model} = TFAutoModelForSequenceClassification.from_pretrained({_checkpoint(loaded)!r}, "
            f"num_labels={int(kinds['num_labels'].value)})"]
    arguments = ["optimizer=optimizer"]
    if "loss" in kinds and kinds["loss"].value is not None:
        arguments.append(f"loss={kinds['loss'].value}")
    elif keep_loss:
        arguments.append("loss=loss")
    if metrics:
        arguments.append("metrics=metrics")
    lines.append(f"{model}.compile({', '.join(arguments)})")
    if config.keras_name == DEFAULT_KERAS and f"{DEFAULT_KERAS}." in "\n".join(lines):
        lines.insert(0, f"import {DEFAULT_KERAS}")  # no name of the notebook's was bound to it: the default, imported
    return Cells([Cell(tuple(owners), "\n".join(lines))], unrepaired)


def _is_transformers_classifier(model) -> bool:
    from diagnostics.keras.keras_model import is_transformers_classifier

    return model is not None and is_transformers_classifier(model)


def _user_metrics(model) -> bool:
    container = getattr(model, "compiled_metrics", None)
    return bool(getattr(container, "_user_metrics", None))


def _checkpoint(model) -> str | None:
    """Where the model was loaded from, as its own config says (None when it does not)."""
    from diagnostics.keras.internals import checkpoint_path

    found = checkpoint_path(model)
    return str(found) if found else None


def caller_name(value, frame) -> str:
    """The name the calling code gives `value` (a notebook's `model`, `bert_classifier`...), else "model"."""
    for scope in (frame.f_locals, frame.f_globals) if frame is not None else ():
        for name, bound in scope.items():
            if bound is value and name.isidentifier() and not name.startswith("_"):
                return name
    return "model"
