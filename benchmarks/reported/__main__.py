"""`python -m benchmarks.reported truth|score|rejudge|table`: see benchmarks/reported/__init__.py."""

from __future__ import annotations

import argparse
import json
import re
import sys
import tomllib
from datetime import date
from pathlib import Path

from benchmarks.reported import HERE, RESULTS, ROOT, Case, cases

TRUTH, SCORE = RESULTS / "truth.json", RESULTS / "score.json"
VERDICTS = ("detected", "named_right", "one_voice", "clean_fixed", "repaired")


def kept(path: Path) -> dict:
    return json.loads(path.read_text()) if path.is_file() else {}


def write(path: Path, results: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(dict(sorted(results.items())), indent=1) + "\n")


def stack() -> str:
    from importlib.metadata import version

    return ", ".join(f"{name} {version(name)}" for name in ("tensorflow", "tf-keras", "transformers", "datasets"))


def rates(every: list[Case], truth: dict, score: dict) -> dict[str, tuple[int, int]]:
    """Each verdict's (yes, of): detection, naming and one voice over the training bugs and the errors the truth
    confirmed, a clean fixed script over every case scored, a verified repair over those a repair could be judged on."""
    confirmed = [case.slug for case in every if case.slug in score and is_bug(truth.get(case.slug))]
    counted = {"detected": confirmed, "named_right": confirmed, "one_voice": confirmed,
               "clean_fixed": [case.slug for case in every if case.slug in score],
               "repaired": [slug for slug in confirmed if score[slug].get("repaired") is not None]}
    return {verdict: (sum(bool(score[slug][verdict]) for slug in slugs), len(slugs))
            for verdict, slugs in counted.items()}


def is_bug(found: dict | None) -> bool:
    """Whether a case's truth runs confirm it (`truth.training_bug`, read from the kept runs)."""
    from benchmarks.reported.truth import training_bug

    return bool(found) and training_bug(found["buggy"], found["fixed"])


def unaided(case: Case, found: dict | None) -> tuple[str, bool | None]:
    """What a user has without the debugger, from the buggy script's plain run: the error it stopped on (does its
    message name the accepted fix?), or its finished run (nothing names a cause; Keras's TerminateOnNaN acts only on a
    loss of nan, and then says "Invalid loss, terminating training", no cause either). (text, whether it names the
    fix), None where the run is not kept."""
    buggy = (found or {}).get("buggy")
    if not buggy:
        return "not run", None
    nan = {True: "; TerminateOnNaN would stop it (a loss of nan), naming no cause",
           False: "; no loss of nan, so TerminateOnNaN stays silent"}.get(buggy.get("loss_nan"), "")
    if buggy.get("accuracy") is not None:
        return "it finishes, saying nothing of a cause" + nan, False
    names = bool(case.fix_matches and re.search(case.fix_matches, buggy.get("error") or ""))
    return ("its error names the fix" if names else "its error does not name the fix") + nan, names


def mark(value) -> str:
    return "n/a" if value is None else "yes" if value else "**no**"


def run_line(run: dict | None) -> str:
    if not run:
        return "not run"
    if run.get("accuracy") is not None:
        return f"accuracy {run['accuracy']:.3f} (majority {run['majority']:.3f})"
    return f"stops: `{run.get('error', '?')[:120]}`"


def table(every: list[Case], truth: dict, score: dict) -> str:
    """CASES.md: the rates, then one row a case."""
    lines = ["# Reported bugs: the cases and the debugger's score", "",
             "Written by `python -m benchmarks.reported table` from `results/` (do not edit by hand). How each rate is "
             "counted: `benchmarks/reported/score.py`; a case counts as a bug only when its fixed script measurably "
             "beats it in the truth run (`truth.py`).", "",
             f"{len(every)} cases; measured on {stack()}, on all-MiniLM-L6-v2 (the suite's real checkpoint) and "
             "the real GLUE rows in tests/data.", "",
             "How each verdict is judged, from the trace's JSON report and the plain runs: **detected**, the check "
             "that owns the cause (or, for a script stopped by an error, the trace's diagnosis of that error) fails "
             "or warns; **named right**, detected with a fix that matches the accepted one; **one voice**, no second "
             "cause proposes the accepted fix; **clean fixed**, the fixed script's trace fails nothing; **repaired**, "
             "the script `trace --repair` writes, run plainly, learns within 0.05 of the fixed script (judged only "
             "where the fixed script learns). Detection, naming and one voice are counted over the confirmed bugs; "
             "clean fixed over every case scored. **Without the debugger**: whether the buggy script's own output "
             "(its error message) names the accepted fix, and whether Keras's TerminateOnNaN would act (a loss of "
             "nan in its output).", "",
             "Each plain run is one run, unseeded, as its reporter ran it: a fixed script that barely learns in its "
             "epochs (a rate of 1e-5 for 3 epochs) scores differently from one run to the next, and a repair judged "
             "against it can turn on that noise. Seeded runs over three seeds are still to come.", "",
             "| rate | cases |", "|---|---|"]
    for verdict, (yes, of) in rates(every, truth, score).items():
        lines.append(f"| {verdict.replace('_', ' ')} | {yes} of {of} |")
    confirmed = [case for case in every if case.slug in score and is_bug(truth.get(case.slug))]
    lines.append(f"| without the debugger: the script's own output names the fix | "
                 f"{sum(bool(unaided(case, truth.get(case.slug))[1]) for case in confirmed)} of {len(confirmed)} |")
    lines += ["", "| case | source | reported | category | truth: buggy | truth: fixed | bug? | without the debugger | "
              + " | ".join(verdict.replace("_", " ") for verdict in VERDICTS) + " | what the trace named |",
              "|" + "---|" * (9 + len(VERDICTS))]
    for case in every:
        found, judged = truth.get(case.slug, {}), score.get(case.slug)
        verdicts = " | ".join(mark(judged.get(verdict)) if judged else "not scored" for verdict in VERDICTS)
        named = ", ".join(f"`{owner}`" for owner in (judged or {}).get("causes", [])) or "nothing"
        warned = [flag.split(" ", 1)[1] for flag in (judged or {}).get("fixed_flags", []) if flag.startswith("warn")]
        named += f"; on the fixed script it warns: {', '.join(f'`{check}`' for check in warned)}" if warned else ""
        lines.append(f"| `{case.slug}` | [{case.date}]({case.source}) | {case.symptom} | {case.category} | "
                     f"{run_line(found.get('buggy'))} | {run_line(found.get('fixed'))} | "
                     f"{mark(is_bug(found)) if found else 'not run'} | {unaided(case, found)[0]} | {verdicts} | "
                     f"{named} |")
    wrong = [(case, [verdict for verdict in VERDICTS if score[case.slug].get(verdict) is False])
             for case in every if case.slug in score]
    lines += ["", "## Where the debugger falls short", ""]
    lines += [f"- `{case.slug}`: {', '.join(verdict.replace('_', ' ') for verdict in missed)} "
              f"(the repaired script's plain run: {run_line(score[case.slug].get('repaired_run'))}"
              + ("" if is_bug(truth.get(case.slug)) else "; not a bug the truth runs confirm, so not counted") + ")"
              + (f". Why: {case.shortfall}" if case.shortfall else "")
              for case, missed in wrong if missed] or ["- nothing in these cases"]
    dropped = tomllib.loads((HERE / "dropped.toml").read_text(encoding="utf-8")).get("dropped", [])
    lines += ["", "## Reports looked at and dropped", ""]
    lines += [f"- <{item['source']}>: {item['why']}" for item in dropped] or ["- none"]
    lines += ["", "## The fixes and where they come from", ""]
    lines += [f"- `{case.slug}`: {case.fix} ({case.fix_source}); owner: `{case.owner or 'none'}`." for case in every]
    return "\n".join(lines) + "\n"


README = ROOT / "README.md"
README_MARKERS = ("<!-- reported-rates:start -->\n", "<!-- reported-rates:end -->")


def headline(every: list[Case], truth: dict, score: dict) -> str:
    """The README's lines on the benchmark (between its markers): the rates, the date and the stack, where to read
    more; written with CASES.md, so the two never disagree."""
    found = rates(every, truth, score)
    confirmed = [case for case in every if case.slug in score and is_bug(truth.get(case.slug))]
    unaided_named = sum(bool(unaided(case, truth.get(case.slug))[1]) for case in confirmed)
    dates = sorted({entry["date"] for entry in score.values() if entry.get("date")})
    said = {verdict: f"{yes} of {of}" for verdict, (yes, of) in found.items()}
    return (f"On {len(every)} real public reports of TensorFlow + Transformers fine-tuning bugs, reproduced on "
            f"{stack()} ({len(score)} scored, {len(confirmed)} confirmed as bugs by their fixed scripts; "
            f"measured {dates[-1] if dates else 'never'}): the owning check **detected** {said['detected']} and "
            f"**named the accepted fix** for {said['named_right']}, in **one voice** for {said['one_voice']}; "
            f"**fixed scripts traced clean** {said['clean_fixed']}; `trace --repair` wrote a script that "
            f"**learns as the fixed one does** for {said['repaired']} (judged where the fixed script learns). "
            f"Without the debugger, the script's own output named the fix for {unaided_named} of {len(confirmed)}. "
            "Every case, how each verdict is judged and where the debugger falls short: "
            "[benchmarks/reported/CASES.md](benchmarks/reported/CASES.md).\n")


def with_headline(text: str, body: str) -> str:
    """The README `text` with `body` between the benchmark's markers."""
    start, end = README_MARKERS
    before, rest = text.split(start, 1)
    return before + start + body + end + rest.split(end, 1)[1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.reported", description=__doc__)
    parser.add_argument("command", choices=("truth", "score", "rejudge", "table"))
    parser.add_argument("--checkpoint", type=Path, help="a save_pretrained directory (default: the real checkpoint, "
                                                        "scripts/real_checkpoint.py)")
    parser.add_argument("--cases", default="", help="comma-separated case folders (default: every case)")
    args = parser.parse_args(argv)
    every = cases(args.cases)
    truth, score = kept(TRUTH), kept(SCORE)
    if args.command in ("truth", "score"):
        checkpoint = args.checkpoint or real_checkpoint()
        for case in every:
            print(f"{args.command}: {case.slug}", flush=True)
            if args.command == "truth":
                from benchmarks.reported.truth import truth as run_truth

                truth[case.slug] = {**run_truth(case, checkpoint), "date": date.today().isoformat()}
                write(TRUTH, truth)
            else:
                from benchmarks.reported.score import score as run_score

                fixed = truth.get(case.slug, {}).get("fixed")
                score[case.slug] = {**run_score(case, checkpoint, fixed), "date": date.today().isoformat()}
                write(SCORE, score)
            print(json.dumps({"truth": truth, "score": score}[args.command][case.slug]), flush=True)
    if args.command == "rejudge":  # the verdicts again from the kept reports, after a change to how they are judged
        from benchmarks.reported.score import REPORTS, judge

        for case in every:
            if (REPORTS / f"{case.slug}.json").is_file():
                recorded = json.loads((REPORTS / f"{case.slug}.json").read_text())
                score[case.slug].update(judge(case, recorded["buggy"], recorded["fixed"], recorded["repaired_run"],
                                              recorded["fixed_truth"]))
        write(SCORE, score)
    (HERE / "CASES.md").write_text(table(cases(), truth, score))
    README.write_text(with_headline(README.read_text(), headline(cases(), truth, score)))
    return 0


def real_checkpoint() -> Path:
    sys.path.insert(0, str(ROOT / "scripts"))
    from real_checkpoint import real_checkpoint_dir

    return real_checkpoint_dir()


if __name__ == "__main__":
    sys.exit(main())
