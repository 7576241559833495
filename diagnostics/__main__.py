"""Command line: run the checks headless, print the checklist, write the JSON report.

    python -m diagnostics run --checkpoint NAME_OR_DIR --task TASK [--data-files SPLIT=PATH ...] --json report.json
    python -m diagnostics run ... --lang ko --markdown report.md    the checklist and Markdown in Korean
    python -m diagnostics run ... --threshold data.duplicates.warn_duplicate_share=0.1   a threshold of this run's
    python -m diagnostics checks [--json]      every check: id, stage, title, thresholds
    python -m diagnostics trace train.py [--json PATH] [--junit PATH] [--timeout S] [-- SCRIPT_ARGS...]
                                               your own script, checked at its first fit

Exit status: 0 when no check fails, 1 when one fails (or errs; with --fail-on warn, also warns),
2 for unusable input.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path

from diagnostics.config.run import RunConfig, default_config, task_title
from diagnostics.config.settings import EPOCHS, SETTINGS, SWEEP_SETTINGS
from diagnostics.config.forms import cli_overrides, sweep_from_args
from diagnostics.core.errors import InputError
from diagnostics.i18n import DEFAULT_LANGUAGE, LANGUAGES, Text, _, localize, message_of, msg, set_language
from diagnostics.core.result import Status

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT = 0, 1, 2
_OWN_PROCESS = __name__ == "__main__"  # not main() called from a test or a notebook


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        """One line, like every other unusable input; --help shows the usage."""
        self.exit(EXIT_BAD_INPUT, f"error: {message} (see {self.prog} --help)\n")


def _argument(parse):
    """An argparse type from a settings parser: its InputError becomes argparse's one-line error."""
    def convert(text: str):
        try:
            return parse(text)
        except InputError as exc:
            raise argparse.ArgumentTypeError(localize(message_of(exc))) from None

    convert.__name__ = getattr(parse, "__name__", "value")
    return convert


def add_setting_flags(parser: argparse.ArgumentParser) -> None:
    """The run configuration's flags, from the settings table (`diagnostics/config/settings.py`)."""
    for setting in SETTINGS:
        if setting.flag is None:
            continue
        if setting.field == "shuffle":
            parser.add_argument(setting.flag, dest="shuffle", action="store_true", help=setting.help)
            continue
        options = {"nargs": "+", "metavar": "SPLIT=PATH"} if setting.field == "data_files" else {}
        if setting.choices:
            options["choices"] = list(setting.choices)
        parse = setting.cli_parse if setting.bounds is not None else setting.parse
        parser.add_argument(setting.flag, dest=setting.field, help=setting.help,
                            type=parse if parse in (int, str) else _argument(parse), **options)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m diagnostics", description="Training Pipeline Debugger, headless.")
    commands = parser.add_subparsers(dest="command", required=True)
    language = argparse.ArgumentParser(add_help=False)
    language.add_argument("--lang", choices=list(LANGUAGES), default=DEFAULT_LANGUAGE,
                          help="language of the printed checklist and the Markdown report (the JSON report stays "
                          "English): " + ", ".join(f"{code} {name}" for code, name in LANGUAGES.items()))
    run = commands.add_parser("run", help="run the checks and write a report", parents=[language])
    add_setting_flags(run)
    for setting in SWEEP_SETTINGS:
        run.add_argument(setting.flag, dest=f"sweep_{setting.field}", type=_argument(setting.cli_parse),
                         help=setting.help)
    run.add_argument(EPOCHS.flag, dest="epochs", type=_argument(EPOCHS.cli_parse), help=EPOCHS.help)
    run.add_argument("--fail-on", choices=("warn", "fail"), default="fail",
                     help="which statuses give exit 1: fail (default; also error), or warn and worse")
    run.add_argument("--stages", help="comma-separated stages to run (default: all)")
    run.add_argument("--skip", metavar="CHECKS", help="comma-separated checks to leave out of the run, e.g. "
                     "data.learnability (it trains two copies of the model: a minute or more on a CPU)")
    run.add_argument("--with", dest="asked", metavar="CHECKS", help="comma-separated checks to run that run only "
                     "when asked for: data.learnability on a pretrained checkpoint (it trains two copies of the model "
                     "for a minute or more on a CPU)")
    run.add_argument("--threshold", action="append", default=[], metavar="CHECK.CONDITION=VALUE",
                     help="this run's own threshold, e.g. data.duplicates.warn_duplicate_share=0.1 (repeatable; "
                     "`checks` lists them)")
    run.add_argument("--json", type=Path, metavar="PATH", help="write the JSON report here")
    run.add_argument("--markdown", type=Path, metavar="PATH", help="write the Markdown report here (in --lang)")
    run.add_argument("--junit", type=Path, metavar="PATH",
                     help="write a JUnit XML report here (one test case per check; fail and error are failures)")
    run.add_argument("--scenario", help="a workshop scenario (see the scenarios command); options given "
                     "explicitly override its settings")
    trace = commands.add_parser(
        "trace", help="run your training script with fit intercepted and check what it built",
        description="Runs SCRIPT in a child process. At each model.fit that trains something new the model, "
        "dataset, compile settings and tokenizer it built are checked, then that fit trains 2 steps so the script "
        "reaches its next fit (--then-train trains in full); a training loop without fit is checked at its first "
        "apply_gradients; an error before fit is itself diagnosed. Put the script's own arguments after --.",
        parents=[language])
    trace.add_argument("script", type=Path, help="the training script")
    trace.add_argument("--json", type=Path, metavar="PATH", help="write the JSON report here")
    trace.add_argument("--junit", type=Path, metavar="PATH", help="write a JUnit XML report here")
    trace.add_argument("--markdown", type=Path, metavar="PATH", help="write the Markdown report here (in --lang): the "
                       "first checked fit's checklist, and --repair's edits and verdicts")
    trace.add_argument("--stages", help="comma-separated stages to run (default: all)")
    trace.add_argument("--skip", metavar="CHECKS", help="comma-separated checks to leave out, as for run")
    trace.add_argument("--threshold", action="append", default=[], metavar="CHECK.CONDITION=VALUE",
                       help="this run's own threshold, as for run")
    trace.add_argument("--with", dest="asked", metavar="CHECKS", help="checks to run that run only when asked for, "
                       "as for run")
    trace.add_argument("--tokenizer", help="the tokenizer's name or directory (default: the one the script built)")
    trace.add_argument("--task", help="the GLUE task (default: found from the split's columns)")
    trace.add_argument("--timeout", type=float, default=600.0,
                       help="seconds before a script that has not finished is stopped (default 600)")
    trace.add_argument("--then-train", action="store_true", help="after the checks, let fit train as the script asked")
    trace.add_argument("--fail-on", choices=("warn", "fail"), default="fail",
                       help="which statuses give exit 1: fail (default; also error), or warn and worse")
    trace.add_argument("--repair", nargs="?", const="", default=None, type=str, metavar="OUT.py",
                       help="write the script with each cause's fix made where the script builds that object (default "
                       "SCRIPT.repaired.py beside it, or the next free SCRIPT.repaired-2.py: no file is "
                       "overwritten, no link followed, the script itself never changed), show the diff, and trace "
                       "the repaired script again to say which fixes it verified")
    commands.add_parser("scenarios", help="list the workshop scenarios and the checks owning the causes each injects",
                        parents=[language])
    checks = commands.add_parser("checks", help="list every check: id, stage, title and thresholds", parents=[language])
    checks.add_argument("--json", action="store_true", help="print the listing as JSON")
    return parser


def config_from_args(args) -> RunConfig:
    from diagnostics.keras.loading import hub_reachable

    overrides = cli_overrides(args)
    base = default_config(hub_reachable(), **{k: v for k, v in overrides.items() if k == "checkpoint"})
    if args.scenario:
        from diagnostics.config.scenarios import get_scenario

        base = get_scenario(args.scenario).apply(replace(base, task=overrides.get("task", base.task)))
    return replace(base, **overrides).validated()


def report_paths(args, names: tuple[str, ...]) -> list[Path]:
    """The report paths asked for, each checked before the run: its folder made (or there) and writable, and the
    path itself not a folder, so a run of minutes never ends in a report it cannot write.

    Raises:
        InputError: a path that cannot take the report, and why.
    """
    import tempfile

    paths = [getattr(args, name) for name in names if getattr(args, name, None)]
    for path in paths:
        try:
            if path.is_dir():
                raise IsADirectoryError(msg("it is a folder"))
            path.parent.mkdir(parents=True, exist_ok=True)
            with tempfile.TemporaryFile(dir=path.parent):
                pass
        except OSError as exc:
            reason = exc.args[0] if exc.args and isinstance(exc.args[0], Text) else exc.strerror or str(exc)
            raise InputError(msg("Cannot write the report to {path}: {reason}.", path=str(path), reason=reason)) \
                from None
    return paths


def write_reports(outputs) -> None:
    """Each (path, text) written; a write that fails after all is an InputError naming it, never a traceback."""
    for path, text in outputs:
        if not path:
            continue
        try:
            path.write_text(text(), encoding="utf-8")
        except OSError as exc:
            raise InputError(msg("Cannot write the report to {path}: {reason}.", path=str(path),
                                 reason=exc.strerror or str(exc))) from None
        print(_("Report written to {path}").format(path=path))


def say(text="", **options) -> None:
    """A line for the terminal: a user's text (a file name, an exception's message, a row) with its control
    characters written out, none passed on raw (`report.escape.control_free`)."""
    from diagnostics.report.escape import control_free

    print(control_free(text), **options)


def run_command(args) -> int:
    from diagnostics.keras import loading
    from diagnostics.config.training import DEFAULT_EPOCHS
    from diagnostics.core.context import RunContext
    from diagnostics.core.libraries import import_libraries
    from diagnostics.walk.stages import parse_asked, parse_skip, parse_stages, parse_thresholds, run_stages
    from diagnostics.walk.causes import causes, owners
    from diagnostics.report.formats import build_report, cause_lines, checklist_lines, junit_report, markdown_report
    from diagnostics.usercode.progress_bar import shown_progress

    config = config_from_args(args)
    stages, skip, asked = parse_stages(args.stages), parse_skip(args.skip), parse_asked(args.asked)
    thresholds = parse_thresholds(args.threshold)
    sweep = sweep_from_args(args).validated()
    report_paths(args, ("json", "junit", "markdown"))
    if _OWN_PROCESS:  # the command line's own process, not main() called from a test or a notebook
        import_libraries()
    with shown_progress("checks", notebook=False) as progress:  # lines on stderr: the report goes to stdout
        results = run_stages(RunContext.open(config), stages, sweep=sweep, epochs=args.epochs or DEFAULT_EPOCHS,
                             skip=skip, asked=asked, progress=progress, thresholds=thresholds)
    report = build_report(config, results, resolved_checkpoint=loading.resolve_checkpoint(config.checkpoint))
    say(_("Checked {checkpoint} on {task}/{split} ({source} data), stages: {stages}").format(
        checkpoint=config.checkpoint, task=localize(config.task_title), split=config.split, source=config.data_source,
        stages=", ".join(stages) + (f" (--skip {args.skip})" if skip else "")))
    for line in cause_lines(results) + [""] + checklist_lines(results):
        say(line)
    if args.scenario:
        from diagnostics.config.scenarios import get_scenario

        scenario, named, ran = get_scenario(args.scenario), owners(results), {result.id for result in results}
        def verdict(check: str, ok: bool) -> str:
            looked = any(one in ran for one in check.split(" or "))
            if ok:
                return _("{check} caught it").format(check=check)
            return (_("{check} did NOT catch it") if looked else _("{check} has not run")).format(check=check)

        verdicts = [verdict(check, ok) for check, ok in scenario.caught(named).items()]
        verdicts += [_("{check} names a cause the scenario does not inject").format(check=check)
                     for check in scenario.unexpected(named)]
        print(_("Scenario {name}: {verdicts}").format(name=args.scenario, verdicts="; ".join(verdicts)
                                                       or _("nothing is expected to fail")))
    write_reports(((args.json, lambda: json.dumps(report, indent=2)), (args.junit, lambda: junit_report(report)),
                   (args.markdown, lambda: markdown_report(report, results))))
    return exit_code(causes(results), args.fail_on)


def exit_code(found, fail_on: str) -> int:
    """1 when a cause fails or errs (or, with --fail-on warn, warns), else 0: a finding a cause explains is counted
    once, at its owner."""
    failing = {Status.FAIL, Status.ERROR} | ({Status.WARN} if fail_on == "warn" else set())
    return EXIT_FAILED if any(cause.status in failing for cause in found) else EXIT_OK


def trace_command(args) -> int:
    from diagnostics.walk.causes import causes
    from diagnostics.usercode.repair_run import checked, planned
    from diagnostics.walk.stages import parse_asked, parse_skip, parse_stages, parse_thresholds
    from diagnostics.report.formats import cause_lines, checklist_lines, junit_report, markdown_report
    from diagnostics.core.result import CheckResult
    from diagnostics.usercode.trace import (EXIT_OK as TRACE_OK, fit_reports, phase_title, script_finding, script_fix,
                                   script_notes, trace_script)

    parse_stages(args.stages)
    parse_skip(args.skip)
    parse_asked(args.asked)
    thresholds = parse_thresholds(args.threshold)
    report_paths(args, ("json", "junit", "markdown"))
    target = repair_target(args)
    outcome = trace_script(args.script, args.script_args, stages=args.stages, skip=args.skip, asked=args.asked,
                           timeout=args.timeout, thresholds=thresholds,
                           tokenizer=args.tokenizer, task=args.task, then_train=args.then_train,
                           progress=lambda line: say(f"[trace] {localize(line)}", flush=True))
    if outcome.report is None:
        say(_("error: {message}").format(message=localize(outcome.message)), file=sys.stderr)
        return outcome.exit_code
    report = outcome.report
    say(localize(outcome.message))
    error = report["script"].get("error")
    if error:
        say(f"  {error['where']}: {error['code']}" if error["code"] else f"  at {error['where']}")
        if error.get("fix"):
            say("  " + _("fix: {fix}").format(fix=localize(script_fix(error))))
    fits = fit_reports(report)
    every = []
    for fit in fits:
        if report.get("script", {}).get("reached_fit"):
            say("")
            say("== " + localize(phase_title(fit, len(fits))))
        fit_error = fit.get("error") if fit is not report else None
        if fit_error:
            say("  " + localize(script_finding(fit_error)))
        results = [CheckResult.from_dict(check) for check in fit.get("checks", [])]
        every += results
        if fit.get("run"):
            run = fit["run"]
            say(_("Checked {checkpoint} on {task}/{split} (your script's pipeline)").format(
                checkpoint=run["checkpoint"], task=localize(task_title(run["task"], run.get("task_candidates") or ())),
                split=run["split"]))
            for line in cause_lines(results) + [""]:
                say(line)
        for line in checklist_lines(results):
            say(line)
        for note in script_notes(fit):
            say(_("note: {note}").format(note=localize(note)))
    for note in script_notes(report.get("script") or {}):
        say(_("note: {note}").format(note=localize(note)))
    if target is not None and (checked(report) or planned(Path(args.script).read_text(encoding="utf-8"),
                                                          report).edits):
        report["repair"] = repair_and_trace_again(args, target, thresholds, report)
    elif target is not None:
        say(_("--repair: nothing was repaired, as the script did not reach fit; mend what stopped it (above) "
                "first."))
    def markdown() -> str:  # a script that stopped before fit has no checklist: its finding is the report
        if report.get("run"):
            return markdown_report(report, [CheckResult.from_dict(check) for check in report["checks"]])
        return f"# {_('Training Pipeline Debugger report')}\n\n{localize(outcome.message)}\n"

    write_reports(((args.json, lambda: json.dumps(report, indent=2)), (args.junit, lambda: junit_report(report)),
                   (args.markdown, markdown)))
    if outcome.exit_code != TRACE_OK or args.fail_on != "warn":
        return outcome.exit_code
    return exit_code(causes(every), args.fail_on)


def repair_target(args) -> Path | None:
    """Where --repair writes the repaired script (SCRIPT.repaired.py beside it by default), checked before the trace:
    never the script itself."""
    if args.repair is None:
        return None
    script = Path(args.script)
    target = Path(args.repair) if args.repair else script.with_name(script.stem + ".repaired.py")
    if target.resolve() == script.resolve():
        raise InputError(msg("--repair would write over the script itself; give another path."))
    return target


def repair_and_trace_again(args, target: Path, thresholds: dict, report: dict) -> dict:
    """--repair: the repaired script written to `target` (never over the original), its diff printed, and the
    verdict of tracing it again with the same options: the JSON report's `repair`."""
    from diagnostics.report.formats import verdict_text
    from diagnostics.usercode.repair_run import repair_and_trace

    def written(done, number: int) -> None:
        if number == 1:
            say(_("Repaired script written to {path}:").format(path=done.written))  # a new name if taken
        else:
            say(_("Its trace named more that a repair mends: repaired again (round {number}), the whole change "
                    "now:").format(number=number))
        say(done.diff, end="")
        say(_("Tracing the repaired script again"), flush=True)

    say("")
    done = repair_and_trace(Path(args.script), report, target, on_written=written, said=lambda line: say(
        f"[trace] {localize(line)}", flush=True), script_args=args.script_args, stages=args.stages, skip=args.skip,
        asked=args.asked, timeout=args.timeout, thresholds=thresholds, tokenizer=args.tokenizer, task=args.task)
    if done.written is not None:
        after = done.after.report if done.after is not None else None
        if after is None or not after["script"].get("reached_fit") or after["script"].get("error"):
            say(localize(done.after.message))
    else:
        say(_("Nothing to repair in the script's code."))
    for item in done.causes:
        say(localize(verdict_text(item)))
    return done.to_json()


def scenarios_command() -> int:
    from diagnostics.config.scenarios import SCENARIOS

    for scenario in SCENARIOS.values():
        flagged = scenario.caught(set())
        print(f"{scenario.name:<28} {_(scenario.title)}")
        print(f"{'':<28} " + _("its causes, by the checks that own them: {checks}").format(
            checks=", ".join(flagged) or _("nothing (no check may fail)")))
    return EXIT_OK


def checks_command(as_json: bool) -> int:
    from diagnostics.walk.registry import listing

    checks = listing()
    if as_json:
        print(json.dumps(checks, indent=2))
        return EXIT_OK
    for check in checks:
        print(f"{check['id']:<26} {_(check['stage_title']):<16} {_(check['title'])}")
        for condition in check["conditions"]:
            value = f" = {condition['value']:g}" if condition["value"] is not None else ""
            print(f"{'':<28}{condition['name']}{value}: {condition['meaning']}")
        if check["otherwise"] != "pass":
            print(f"{'':<28}" + _("no rule crossed: {status}").format(status=check["otherwise"]))
        for cause in check["causes"]:
            title, explained = cause["title"], dict.fromkeys(item["check"] for item in cause["explains"])
            print(f"{'':<28}" + _("owns the cause {cause} ({title}), which explains {checks}").format(
                cause=cause["name"], title=_(title), checks=", ".join(explained)))
    return EXIT_OK


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    script_args: list[str] = []
    if argv[:1] == ["trace"] and "--" in argv:  # what follows -- is the traced script's own
        argv, script_args = argv[:argv.index("--")], argv[argv.index("--") + 1:]
    args = build_parser().parse_args(argv)
    args.script_args = script_args
    set_language(args.lang)
    try:
        from diagnostics.core.environment import require_stack

        require_stack()  # before anything imports TensorFlow or Transformers
        from diagnostics.config.limits import environment_problem

        unusable = environment_problem()  # a limit set in the environment that does not read, before any run
        if unusable is not None:
            raise InputError(unusable)
        if args.command == "scenarios":
            return scenarios_command()
        if args.command == "checks":
            return checks_command(args.json)
        if args.command == "trace":
            return trace_command(args)
        return run_command(args)
    except InputError as exc:
        say(_("error: {message}").format(message=localize(message_of(exc))), file=sys.stderr)
        return EXIT_BAD_INPUT


def console() -> None:
    """The console script (`pipeline-debugger`): the command line in its own process, as `python -m diagnostics`."""
    global _OWN_PROCESS
    _OWN_PROCESS = True
    import diagnostics

    diagnostics.own_process()  # Keras 2 for tf.keras and quiet libraries, in the command line's own process
    sys.exit(main())


if __name__ == "__main__":
    console()
