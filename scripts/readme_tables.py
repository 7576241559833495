"""Writes the README's table of every check from the check registry (`diagnostics/registry.py`).

    python scripts/readme_tables.py            rewrite the table between its markers in README.md
    python scripts/readme_tables.py --check    exit 1 when README.md's table is not what the registry gives

The performance table is written by `bench/run_all.py` from the benches' output, between markers of its own.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from diagnostics.registry import listing  # noqa: E402

README = ROOT / "README.md"


def replace_between(text: str, name: str, body: str) -> str:
    """`text` with what lies between `<!-- name:start -->` and `<!-- name:end -->` replaced by `body`."""
    pattern = re.compile(rf"(<!-- {name}:start[^>]*-->\n).*?(<!-- {name}:end -->)", re.S)
    if not pattern.search(text):
        raise SystemExit(f"README.md has no <!-- {name}:start --> ... <!-- {name}:end --> markers")
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only say whether README.md is up to date")
    args = parser.parse_args()
    text = README.read_text()
    updated = replace_between(text, "checks", checks_table())
    if args.check:
        if updated != text:
            print("README.md's check table is out of date: run python scripts/readme_tables.py")
            return 1
        return 0
    README.write_text(updated)
    return 0


if __name__ == "__main__":
    sys.exit(main())
