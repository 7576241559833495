"""The checks on a user's own objects: `diagnose()` for a notebook or a script, and `DiagnoseCallback` for
`model.fit`. The user's model is never changed: every check that trains works on a copy."""

from __future__ import annotations


import contextlib
import html
import json
import inspect
import math
from typing import Any, Iterable


from diagnostics.usercode import hooks

from diagnostics.walk import registry
from diagnostics.walk.causes import causes
from diagnostics.core.context import RunContext
from diagnostics.keras.devices import outside_user_strategy
from diagnostics.config.training import DEFAULT_EPOCHS, SweepSettings
from diagnostics.i18n import localize, msg
from diagnostics.usercode.own_code import Captured, build_run
from diagnostics.usercode.progress_bar import shown_progress
from diagnostics.usercode.read_back import arrays_as_dataset
from diagnostics.walk.stages import parse_asked, parse_stages, parse_thresholds, run_stages
from diagnostics.walk.runner import run_units
from diagnostics.core.check import STAGE_ORDER, STAGE_TITLES
from diagnostics.report.formats import STATUS_MARKS, build_report, cause_lines, checklist_lines, markdown_report
from diagnostics.core.result import CheckResult, Status
from diagnostics.walk.causes import worst_first


FAILING = (Status.FAIL, Status.ERROR)


# Evidence tables in the HTML report show this many rows each.
HTML_ROWS = 16


class Report:
    """The results of `diagnose()`: the checklist with its evidence.

    `report.causes` names each cause once, by the check that owns it; `report.failed` lists the failing owners (fail
    or error) and is empty when none fail; `report["data.columns"]`
    is one check's result; `to_json()`, `to_markdown()` and the HTML a notebook shows write the same report.
    """

    def __init__(self, config, results: list[CheckResult], notes: Iterable[str] = (), extra: dict | None = None, *,
                 model=None, model_name: str = "model"):
        self.config = config
        self.results = list(results)
        self.notes = list(notes)
        self.extra = dict(extra or {})
        self.model, self.model_name = model, model_name  # the model checked, and what the caller calls it

    def repair(self):
        """Each cause's fix as code for the next cell, on the model as you named it (`repair_cells.Cells`: print
        it, or show it in a notebook): a new optimizer at the sweep's measured rate, the head rebuilt with the
        classes the labels need, `compile` again with the loss that reads the outputs; the causes no code can repair
        say why. Run the cell, then `diagnose()` again to see the causes gone."""
        from diagnostics.usercode.repair_plan import measured_rate
        from diagnostics.usercode.repair_cells import repair_cells

        report = self.to_dict()
        return repair_cells(report.get("causes") or [], self.config, model=self.model_name, loaded=self.model,
                            measured=measured_rate(report))

    @property
    def failed(self) -> list[CheckResult]:
        """The failing checks that own their cause (a finding another check's cause explains is not counted)."""
        ran = {result.id for result in self.results}
        return [result for result in self.results if result.status in FAILING
                and (result.explained_by is None or result.explained_by not in ran)]  # its owner not run: pending

    @property
    def causes(self) -> list:
        """Each cause once: its owner, status, summary, fix and the checks whose findings it explains."""
        return causes(self.results)

    def __getitem__(self, check_id: str) -> CheckResult:
        for result in self.results:
            if result.id == check_id:
                return result
        raise KeyError(f"{check_id} was not run; run: {', '.join(r.id for r in self.results)}")

    def to_dict(self) -> dict[str, Any]:
        return {**build_report(self.config, self.results), "notes": self.notes, **self.extra}

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    def to_markdown(self) -> str:
        text = markdown_report(self.to_dict())
        if self.notes:
            text += "\n" + "\n".join(f"- {localize(note)}" for note in self.notes) + "\n"
        return text

    def __repr__(self) -> str:
        head = f"Report on {self.config.checkpoint}, {localize(self.config.task_title)}"
        lines = [head] + cause_lines(self.results) + [""] + checklist_lines(self.results)
        lines += [f"  fix {r.id}: {localize(r.fix)}" for r in worst_first(self.results, STAGE_ORDER)
                  if r.fix and r.status in (*FAILING, Status.WARN) and r.explained_by is None]
        return "\n".join(lines + [f"note: {localize(note)}" for note in self.notes])

    def figure(self, check_id: str, index: int = 0):
        """One check's Plotly figure, as its page draws it (`index=1`: the sweep's second, final loss by rate).

        Raises:
            KeyError: the check was not run, or has no chart for what it measured.
        """
        from diagnostics.report.plots import figures_of

        found = figures_of(self[check_id])
        if index >= len(found):
            raise KeyError(f"{check_id} has {len(found)} chart(s) for what it measured")
        return found[index]

    def _repr_html_(self) -> str:
        colours = {Status.PASS: "#1a7f37", Status.WARN: "#9a6700", Status.FAIL: "#cf222e", Status.ERROR: "#cf222e",
                   Status.SKIP: "#656d76"}
        parts = [f"<h4>Training Pipeline Debugger: {html.escape(str(self.config.checkpoint))} on "
                 f"{html.escape(localize(self.config.task_title))}</h4>"]
        parts += [f"<p><i>{html.escape(localize(note))}</i></p>" for note in self.notes]
        parts.append(f"<p><b>{html.escape(cause_lines(self.results)[0])}</b></p>")
        parts.append("<table><tr><th>status</th><th>stage</th><th>check</th><th>finding</th><th>fix</th></tr>")
        for result in worst_first(self.results, STAGE_ORDER):
            explained = f" (explained by {result.explained_by})" if result.explained_by else ""
            parts.append(
                f"<tr><td style='color:{colours[result.status] if not explained else '#656d76'};font-weight:bold'>"
                f"{'SEE' if explained else STATUS_MARKS[result.status]}</td>"
                f"<td>{STAGE_TITLES.get(result.stage, result.stage)}</td><td><code>{result.id}</code></td>"
                f"<td style='text-align:left'>{html.escape(localize(result.summary) + explained)}</td>"
                f"<td style='text-align:left'>" + (f"<code>{html.escape(localize(result.fix))}</code>"
                                                   if result.fix else "") + "</td></tr>")
        parts.append("</table>")
        parts += _charts_html(self.results)
        for result in worst_first(self.results, STAGE_ORDER):
            if result.status is Status.PASS and result.id not in ("data.decoded_samples",):
                continue
            for name, rows in evidence_tables(result.evidence):
                parts.append(f"<details{' open' if result.status in FAILING else ''}><summary><code>{result.id}"
                             f"</code>: {html.escape(name)} ({len(rows)} rows)</summary>{html_table(rows)}</details>")
        return "\n".join(parts)


def _charts_html(results: list[CheckResult]) -> list[str]:
    """Each check's charts, as its page draws them, with Plotly's script inline once (a notebook offline has no
    CDN); a line saying how to get them where Plotly is not installed."""
    try:
        from diagnostics.report.plots import figures_of
    except ImportError:
        missing = msg("Install plotly (pip install plotly) to see the charts here.")
        return [f"<p><i>{html.escape(localize(missing))}</i></p>"]
    parts, script = [], True
    for result in results:  # a check that did not run has no curve to draw (an uninformative one keeps its own)
        for figure in figures_of(result):
            parts.append(f"<details open><summary><code>{result.id}</code></summary>"
                         f"{figure.to_html(full_html=False, include_plotlyjs=script)}</details>")
            script = False
    return parts


def evidence_tables(evidence: dict) -> list[tuple[str, list[dict]]]:
    """The evidence entries that are tables: lists of row dicts."""
    return [(name, value) for name, value in (evidence or {}).items()
            if isinstance(value, list) and value and all(isinstance(row, dict) for row in value)]


def html_table(rows: list[dict]) -> str:
    columns = list(dict.fromkeys(key for row in rows[:HTML_ROWS] for key in row))
    head = "".join(f"<th>{html.escape(str(column))}</th>" for column in columns)
    body = "".join("<tr>" + "".join(f"<td style='text-align:left'>{html.escape(_cell(row.get(column)))}</td>"
                                    for column in columns) + "</tr>" for row in rows[:HTML_ROWS])
    more = f"<p>... {len(rows) - HTML_ROWS} more rows in to_json()</p>" if len(rows) > HTML_ROWS else ""
    return f"<table><tr>{head}</tr>{body}</table>{more}"


def _cell(value) -> str:
    if isinstance(value, float):
        return f"{value:.4g}" if math.isfinite(value) else str(value)
    if isinstance(value, list):
        return "[" + ", ".join(_cell(item) for item in value[:8]) + (", ..." if len(value) > 8 else "") + "]"
    return "" if value is None else str(value)


def capture(model, dataset, tokenizer=None, task: str | None = None, *, origin: str = "diagnose()") -> Captured:
    """What `diagnose` checks: the user's objects, with the `to_tf_dataset` call that made the dataset when seen."""
    if isinstance(dataset, tuple) and len(dataset) == 2 and not hasattr(dataset, "element_spec"):
        dataset = arrays_as_dataset(*dataset)  # diagnose(model, (x, y)): the arrays fit(x, y) would get
    found = hooks.provenance_of(dataset) if dataset is not None else None
    captured = Captured(model=model, dataset=dataset, tokenizer=tokenizer, task=task, origin=origin,
                        tokenization=found.tokenization if found is not None else None)
    if inspect.isgenerator(dataset) or inspect.isasyncgen(dataset):
        captured.notes.append(msg("The data is a generator: reading its batches back uses them up, so give fit a new "
                                  "one (call the function that makes it again)."))
    if found is None:
        return captured
    methods = ", ".join(hooks.method_names(found.steps))
    if found.same_elements:
        captured.source, captured.to_tf_dataset = found.source, found.kwargs
        if methods:
            captured.notes.append(msg("The dataset given to fit is to_tf_dataset's followed by {methods}; the checks "
                                      "batch its split with that call's arguments.", methods=methods))
    else:
        captured.source_hint = found.source
        captured.notes.append(msg("The dataset given to fit is to_tf_dataset's followed by {methods}, which change its "
                                  "batches: the checks read them back, and take the columns and label names from its "
                                  "split.", methods=methods))
    return captured


def diagnose(model, dataset, tokenizer=None, task: str | None = None, stages: str | Iterable[str] | None = None, *,
             loss=None, optimizer=None, sweep: SweepSettings = SweepSettings(), epochs: int = DEFAULT_EPOCHS,
             with_checks: str | Iterable[str] | None = None, progress=None,
             thresholds: dict[str, dict[str, float]] | None = None) -> Report:
    """Run the debugger's checks on your own model and dataset, as the app runs them on its own pipeline.

    Args:
        model: a TF Transformers sequence classifier, compiled or not (its loss and optimizer are read from it), or
            any compiled Keras model (a functional or Sequential model around a Transformers encoder, with its own
            head: logits, softmax or one sigmoid output).
        dataset: what you pass to `fit`: a `tf.data.Dataset` (`to_tf_dataset`'s, or any yielding dicts of token
            ids, with the labels inside or as Keras `(x, y)`), a `keras.utils.Sequence`, or `(x, y)` arrays; labels
            as class ids, one-hot rows or one binary column.
        tokenizer: the tokenizer that made the token ids (default: the one saved with the model's checkpoint).
        task: the GLUE task (default: found from the split's columns or the rows).
        stages: "data", "model", "hparams", "overfit" (a list or a comma-separated string; default: all).
        loss / optimizer: what a custom training loop (a `tf.GradientTape` loop, no `compile`) trains with: the
            loss it calls (a Keras loss, a string Keras knows, or None for a Transformers model's own loss) and
            its optimizer (default: what the model was compiled with).
        with_checks: checks that run only when asked for ("data.learnability" on a pretrained checkpoint: two
            short runs, a minute or more on a CPU), as a list or a comma-separated string.
        thresholds: this run's own thresholds by check and name, e.g. {"data.duplicates": {"warn_duplicate_share": 0.1}}
            (`python -m diagnostics checks` lists them with their defaults).
        progress: None (default) shows what runs and how long is left, a bar in a notebook and lines on stderr
            elsewhere; False shows nothing; a callable is called with (fraction, text, seconds left or None).

    Raises:
        InputError: the objects cannot be checked (no token ids, an optimizer or loss the checks cannot judge).
    """
    from diagnostics.core.environment import require_stack, require_tf_keras_model

    require_stack()
    require_tf_keras_model(model)
    names = parse_stages(stages if isinstance(stages, str) or stages is None else ",".join(stages))
    own_thresholds = parse_thresholds(thresholds)
    asked = parse_asked(with_checks if isinstance(with_checks, str) or with_checks is None else ",".join(with_checks))
    with (contextlib.nullcontext(progress or None) if progress is not None else shown_progress("diagnose")) as report:
        if report is not None:
            report(0.0, msg("Reading the model and the dataset"), None)
        captured = capture(model, dataset, tokenizer, task)
        if loss is not None or optimizer is not None:  # a custom loop's, given as compile would have been
            compiled = getattr(model, "optimizer", None) is not None
            captured.compile_args = {"optimizer": optimizer if optimizer is not None else getattr(model, "optimizer",
                                                                                                   None),
                                     "loss": loss if loss is not None else getattr(model, "loss", None) if compiled
                                     else None}
        run = build_run(captured)
        results = run_stages(run, names, sweep=sweep, progress=report, epochs=epochs, asked=asked,
                             thresholds=own_thresholds)
    from diagnostics.usercode.repair_cells import caller_name

    return Report(run.config, results, captured.notes, model=model,
                  model_name=caller_name(model, inspect.currentframe().f_back))


def quick_checks(run: RunContext, progress=None) -> list[CheckResult]:
    """The checks that take seconds: the Data stage without learnability, the Model stage (one step on a copy),
    and the Hyperparameters stage's setup (optimizer, loss, schedule)."""
    return outside_user_strategy(run_units, run, [name for name, unit in registry.UNITS.items() if not unit.copy],
                                 progress=progress)


class PipelineError(Exception):
    """A quick check failed before training (`DiagnoseCallback(strict=True)`); `.report` holds the results."""

    def __init__(self, report: Report):
        self.report = report
        failed = report.failed
        super().__init__(f"{len(failed)} check(s) fail before training: "
                         + "; ".join(f"{r.id}: {localize(r.summary)}" for r in failed))
