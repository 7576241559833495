"""One hostile string, as a user could give it (a checkpoint, a column or file name, an exception's message), through
every format the debugger writes: the Markdown report, the JUnit file, the terminal's lines and a page's Markdown."""

from xml.etree import ElementTree as ET

from diagnostics.config.run import RunConfig
from diagnostics.core.result import CheckResult, Status
from diagnostics.i18n import msg
from diagnostics.report.escape import code_block, code_span, control_free, markdown_text, xml_text
from diagnostics.report.formats import build_report, cause_lines, checklist_lines, junit_report, markdown_report

HOSTILE = ("\x1b[31mred\x1b[0m <img src=x onerror=alert(1)> ![seen](http://evil.example/x.png) "
           "[link](javascript:alert(1)) ``` | `tick` \x00\x7f\ufffe")


def _results() -> list[CheckResult]:
    made = CheckResult("data.columns", "data", Status.FAIL, msg("Column {name} is missing.", name=HOSTILE),
                       fix=f"dataset.rename_column({HOSTILE!r}, 'label')")
    read_back = CheckResult("data.batch", "data", Status.WARN, "Read back from JSON: " + HOSTILE, fix=HOSTILE)
    return [made, read_back]


def test_the_markdown_report_shows_a_hostile_string_as_text_and_runs_nothing():
    """Rendered as a Markdown viewer with raw HTML on renders it (the download embedded `<img onerror>` raw, which
    ran its handler, and an image that called an outside address): no tag, image or link comes of the string."""
    from markdown_it import MarkdownIt

    report = build_report(RunConfig(checkpoint=HOSTILE), _results())
    report["repair"] = {"file": HOSTILE, "causes": [], "diff": "+x = '```'\n" + HOSTILE}
    made = markdown_report(report, _results()[:1])
    html = MarkdownIt("commonmark", {"html": True}).enable("table").render(made)
    for raw in ("<img", "<a ", "\x1b", "\x00", "\x7f"):
        assert raw not in html, raw
    assert "onerror" in html and "\\x1b" in made  # shown, escaped, not dropped
    fences = [line for line in made.splitlines() if line.startswith("```")]
    assert fences and all(line.startswith("````") for line in fences)  # longer than the ``` inside


def test_the_junit_file_is_well_formed_with_a_hostile_string_in_every_field():
    report = build_report(RunConfig(checkpoint=HOSTILE), _results())
    report["script"] = {"error": {"finding": HOSTILE, "where": HOSTILE, "code": HOSTILE, "fix": HOSTILE}}
    root = ET.fromstring(junit_report(report).encode("utf-8"))  # raised "not well-formed" on the ESC before
    assert "\\x1b[31mred" in ET.tostring(root, encoding="unicode")


def test_the_terminal_gets_no_control_character():
    lines = cause_lines(_results()) + checklist_lines(_results())
    assert not any(any(ord(char) < 32 or 127 <= ord(char) < 160 for char in line) for line in lines)
    assert any("\\x1b[31mred" in line for line in lines)


def test_each_escape_on_its_own():
    assert control_free("a\tb\nc\x1bd\x9b") == "a\tb\nc\\x1bd\\x9b"
    assert markdown_text("**bold** <b>") == "\\*\\*bold\\*\\* \\<b\\>"
    assert code_span("a``b") == "```a``b```" and code_span("`x") == "`` `x ``"
    assert code_block("```\nrm -rf /", "python") == ["````python", "```\nrm -rf /", "````"]
    assert xml_text("\x1b\ufffe") == "\\x1b\ufffd"


def test_a_long_fix_is_folded_at_its_brackets_and_commas_and_stays_the_same_python():
    """At 1024 px the browser's wrapping broke the model.config fix inside a name ('from_pretrained(checkp' /
    'oint'): the fix is folded where Python allows, never inside a name, a string or a subscript."""
    import ast

    from diagnostics.report.escape import folded_code

    fix = ('model = TFAutoModelForSequenceClassification.from_pretrained(checkpoint, num_labels=3, '
           'id2label={0: "a, b", 1: "c"})')
    folded = folded_code(fix)
    assert folded.splitlines()[0].endswith("from_pretrained(") and '"a, b"' in folded
    assert ast.dump(ast.parse(folded)) == ast.dump(ast.parse(fix))
    short = "tf_keras.optimizers.Adam(learning_rate=2e-03)"
    assert folded_code(short) == short
    subscript = 'tokenizer(rows["premise"], rows["hypothesis"], truncation=True, max_length=128, padding=True)'
    assert 'rows[\n' not in folded_code(subscript, width=30)
