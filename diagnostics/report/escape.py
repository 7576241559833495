"""User text made safe for each place it is written: a page's or a report's Markdown, a JUnit file's XML, a
terminal. Every string a user gave (a file or column name, a row, a checkpoint name, an exception's message) goes
through the function of its format, one each:

- `markdown_text`: shown in Markdown exactly as typed; no link, image, raw HTML, heading or emphasis comes of it;
- `code_span` and `code_block`: user text as code, in a fence longer than any run of backticks it holds;
- `xml_text`: what XML 1.0 may hold (an ESC in a message made the JUnit file not well-formed);
- `control_free`: control characters written out (`\\x1b`), so none reaches a terminal raw.
"""

from __future__ import annotations

import re

# Control characters other than tab and newline (C0, DEL and C1), written out as escapes rather than passed on.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
# Every ASCII punctuation mark: escaped with a backslash, CommonMark shows it as itself.
_MARKDOWN_SIGNS = re.compile(r"([!-/:-@\[-`{-~])")
# What GitHub-flavoured Markdown turns into a link even when escaped: "scheme://", "www." and e-mail addresses.
# A zero-width space breaks each without changing what the reader sees.
_AUTOLINKS = re.compile(r"(?i)(?<=:)(?=//)|(?<=\bwww)(?=\.)|(?=@)")
ZERO_WIDTH_SPACE = "\u200b"
# What XML 1.0 cannot hold at all, even escaped (surrogates, U+FFFE and U+FFFF), besides the control characters.
_NOT_XML = re.compile("[\ud800-\udfff\ufffe\uffff]")


def control_free(text) -> str:
    """`text` with each control character but tab and newline written as `\\xNN`."""
    return _CONTROL.sub(lambda found: f"\\x{ord(found.group()):02x}", str(text))


def markdown_text(text) -> str:
    """Text shown in Markdown exactly as typed: nothing in it becomes a link, an image, raw HTML, a heading,
    emphasis or a Streamlit directive (a link's value, a file name, a row of an uploaded file, an exception's
    message)."""
    return _MARKDOWN_SIGNS.sub(r"\\\1", _AUTOLINKS.sub(ZERO_WIDTH_SPACE, control_free(text)))


def _fence(text: str, least: int) -> str:
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    return "`" * max(least, longest + 1)


def code_span(text) -> str:
    """`text` as inline code on one line, its fence longer than any run of backticks in it."""
    text = control_free(text).replace("\n", " ")
    fence = _fence(text, 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def code_block(text, language: str = "") -> list[str]:
    """`text` as a fenced code block (its lines), the fence longer than any run of backticks in it."""
    text = control_free(text).rstrip("\n")
    fence = _fence(text, 3)
    return [fence + language, text, fence]


def xml_text(text) -> str:
    """`text` as XML 1.0 may hold it: control characters written out, what it cannot hold at all replaced."""
    return _NOT_XML.sub("\ufffd", control_free(text))


def folded_code(code: str, width: int = 56) -> str:
    """Python `code` with each line longer than `width` folded after a comma inside brackets (outside strings),
    the next part indented under the bracket's line: the same code, which a narrow box shows without breaking a
    name in two."""
    out = []
    for line in code.split("\n"):
        indent = len(line) - len(line.lstrip())
        while len(line) > width:
            cut = _last_fold(line, width)
            if cut is None:
                break
            out.append(line[:cut].rstrip())
            line = " " * (indent + 4) + line[cut:].lstrip()
        out.append(line)
    return "\n".join(out)


def _last_fold(line: str, width: int) -> int | None:
    """Where to fold `line`: just after the last opening parenthesis or comma inside brackets (outside a string) at or
    before `width`, else the first one after it (None: nowhere, or only at the line's very end)."""
    depth, quote, points = 0, None, []
    for index, char in enumerate(line):
        if quote:
            quote = None if char == quote and line[index - 1] != "\\" else quote
        elif char in "'\"":
            quote = char
        elif char in "([{":
            depth += 1
            if char == "(":  # after a call's bracket; never inside a subscript's
                points.append(index + 1)
        elif char in ")]}":
            depth -= 1
        elif char == "," and depth > 0:
            points.append(index + 1)
    points = [point for point in points if line[point:].strip() and line[point:].strip()[0] not in ")]}"]
    within = [point for point in points if point <= width]
    return within[-1] if within else points[0] if points else None
