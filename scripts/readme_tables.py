"""Writes the reference parts of docs/ from the code: the table of every check in docs/checks.md and each stage
page's checks in docs/pages.md from the check registry (`diagnostics/walk/registry.py`), and the command line's
options in docs/command-line.md from its `--help`.

    python scripts/readme_tables.py            rewrite them between their markers
    python scripts/readme_tables.py --check    exit 1 when one is not what the code gives

The performance table (docs/performance.md) is written by `bench/run_all.py` from the benches' output, between
markers of its own.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from diagnostics.walk.registry import listing  # noqa: E402

CHECKS_DOC = ROOT / "docs" / "checks.md"
CLI_DOC = ROOT / "docs" / "command-line.md"
PAGES_DOC = ROOT / "docs" / "pages.md"


def replace_between(text: str, name: str, body: str) -> str:
    """`text` with what lies between `<!-- name:start -->` and `<!-- name:end -->` replaced by `body`."""
    pattern = re.compile(rf"(<!-- {name}:start[^>]*-->\n).*?(<!-- {name}:end -->)", re.S)
    if not pattern.search(text):
        raise SystemExit(f"no <!-- {name}:start --> ... <!-- {name}:end --> markers")
    return pattern.sub(lambda match: match.group(1) + body + match.group(2), text, count=1)


def checks_table() -> str:
    lines = ["| check | stage | what it checks | thresholds (condition names as in `python -m diagnostics checks`) |",
             "|---|---|---|---|"]
    for check in listing():
        thresholds = "; ".join(f"`{c['name']}`" + (f" = {c['value']:g}" if c["value"] is not None else "")
                               + f": {c['meaning']}"
                               + (f" ({c['status']} when `{c['rule']}`)" if c.get("rule") else "")
                               for c in check["conditions"])
        if check["otherwise"] != "pass":
            thresholds += f"; no rule crossed: {check['otherwise']}"
        trains = " (trains a copy)" if check["trains"] else ""
        lines.append(f"| `{check['id']}` | {check['stage_title']} | {check['title']}{trains} | {thresholds or '-'} |")
    return "\n".join(lines) + "\n"


def page_checks() -> str:
    """Each stage page's checks in walk order, as the registry runs them there (docs/pages.md)."""
    from diagnostics.walk.registry import STAGE_ORDER, STAGE_TITLES, checks_of

    lines = ["| page | checks |", "|---|---|"]
    lines += [f"| {number} · {STAGE_TITLES[stage]} | " + ", ".join(f"`{check}`" for check in checks_of(stage)) + " |"
              for number, stage in enumerate(STAGE_ORDER, start=1)]
    return "\n".join(lines) + "\n"


def cli_help() -> str:
    """`run --help` and `trace --help`, at a fixed width."""
    import os

    os.environ["COLUMNS"] = "110"
    from diagnostics.__main__ import build_parser

    parser = build_parser()
    commands = next(action for action in parser._actions if action.__class__.__name__ == "_SubParsersAction")
    return (
        "".join(f"```text\n{commands.choices[name].format_help()}```\n\n" for name in ("run", "trace")).rstrip() + "\n"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only say whether docs/checks.md is up to date")
    args = parser.parse_args()
    stale = []
    for path, name, body in ((CHECKS_DOC, "checks", checks_table()), (CLI_DOC, "cli", cli_help()),
                             (PAGES_DOC, "page-checks", page_checks())):
        text = path.read_text()
        updated = replace_between(text, name, body)
        if updated != text:
            stale.append(path.relative_to(ROOT))
            if not args.check:
                path.write_text(updated)
    if args.check and stale:
        print(f"out of date: {', '.join(map(str, stale))}: run python scripts/readme_tables.py")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
