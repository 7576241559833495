"""Generated data files (hypothesis): whatever shape a file has, the command line's Data stage answers with exit 0, 1
or 2, never a traceback or a check that errors, and a file with an anomaly gets a non-pass finding (or exit 2).

CI runs a fixed, small number of examples (profile "ci"); `HYPOTHESIS_PROFILE=thorough pytest
tests/keras/test_data_file_properties.py` runs many more, with longer files. A case hypothesis finds is kept as an
explicit example in tests/keras/test_data_files.py."""

import csv
import io
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from diagnostics.__main__ import main

settings.register_profile("ci", max_examples=30, derandomize=True, deadline=None, database=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile("thorough", max_examples=400, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
MAX_ROWS = 7 if os.environ.get("HYPOTHESIS_PROFILE", "ci") == "ci" else 40  # 8 rows or more also train (learnability)

NEEDED = ("sentence1", "sentence2", "label")
WORDS = ("a man walks", "the sky is blue", "x", "123", "café au lait", "引号 中文", '"quoted"', "a, b; c", "it's")
GOOD_LABELS = (0, 1, "0", "1", "entailment", "not_entailment")
GOOD_LABEL_TEXT = ("0", "1", "entailment", "not_entailment")


@dataclass
class DataFile:
    name: str
    content: bytes
    anomaly: bool  # something a finding must name (or the file cannot be read at all)


text_cells = st.one_of(st.sampled_from(WORDS), st.text(alphabet="abc xyz", min_size=1, max_size=3000).filter(str.strip))
bad_text_cells = st.one_of(st.none(), st.just(""), st.just("   "), st.integers(-5, 5),
                           st.dictionaries(st.sampled_from("tk"), st.sampled_from(WORDS), min_size=1, max_size=2),
                           st.lists(st.sampled_from(WORDS), max_size=2))
bad_labels = st.one_of(st.none(), st.just(""), st.sampled_from(["yes", "no", "0.5", "2", "-1", "high", "1.5"]),
                       st.floats(allow_nan=True, allow_infinity=True).filter(lambda x: x not in (0.0, 1.0)))


def written_as_text(value) -> str:
    return "" if value is None else value if isinstance(value, str) else json.dumps(value)


def has_anomaly(rows: list[dict], as_text: bool) -> bool:
    """Whether a needed cell is empty or not text, or a label is not one of rte's, as the file holds them (a csv
    cell is always text: a number or an object written there is text, but an empty cell is empty)."""
    for row in rows:
        for column, value in row.items():
            if column == "label":
                if (written_as_text(value).strip() if as_text else value) not in (GOOD_LABEL_TEXT if as_text
                                                                                  else GOOD_LABELS):
                    return True
            elif column in NEEDED:
                text = written_as_text(value) if as_text else value
                if isinstance(text, int) and not any(isinstance(other[column], str) for other in rows):
                    continue  # a JSON column of numbers only is read as the text of those numbers
                if not isinstance(text, str) or not text.strip():
                    return True
    return False


@st.composite
def data_files(draw) -> DataFile:
    columns = draw(st.permutations(list(NEEDED) + draw(st.lists(st.sampled_from(["idx", "extra"]), max_size=1,
                                                                unique=True))))
    dropped = draw(st.sampled_from([None, None, None, "sentence2", "label", "rename"]))
    if dropped == "rename":
        columns = [("lbl" if column == "label" else column) for column in columns]
    elif dropped:
        columns = [column for column in columns if column != dropped]
    rows = []
    for _ in range(draw(st.integers(0, MAX_ROWS))):
        row = {}
        for column in columns:
            broken = draw(st.integers(0, 9)) == 0
            if column == "label":
                row[column] = draw(bad_labels) if broken else draw(st.sampled_from(GOOD_LABELS))
            elif column in NEEDED:
                row[column] = draw(bad_text_cells) if broken else draw(text_cells)
            else:
                row[column] = draw(st.one_of(text_cells, st.integers()))
        rows.append(row)
    kind = draw(st.sampled_from(["csv", "tsv", "jsonl", "json", "semicolon", "noheader"]))
    anomaly = dropped is not None or not rows or has_anomaly(rows, as_text=kind not in ("jsonl", "json"))
    if kind in ("jsonl", "json"):
        text = ("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows) if kind == "jsonl"
                else json.dumps(rows, ensure_ascii=False))
        return DataFile(f"data.{kind}", text.encode("utf-8"), anomaly)
    buffer = io.StringIO()
    if kind == "tsv":  # read with quoting off, as GLUE's tsv files are
        cells = [[written_as_text(row[c]).replace("\t", " ").replace("\n", " ").replace("\r", " ") for c in columns]
                 for row in rows]
        buffer.write("\n".join("\t".join(line) for line in [columns] + cells) + "\n")
    else:
        writer = csv.writer(buffer, delimiter=";" if kind == "semicolon" else ",", lineterminator="\n")
        if kind != "noheader":
            writer.writerow(columns)
        writer.writerows([[written_as_text(row[c]) for c in columns] for row in rows])
        anomaly |= kind in ("semicolon", "noheader")
    encoding = draw(st.sampled_from(["utf-8", "utf-8", "utf-8-sig", "utf-16", "latin-1"]))
    try:
        content = buffer.getvalue().encode(encoding)
    except UnicodeEncodeError:
        encoding, content = "utf-8", buffer.getvalue().encode("utf-8")
    anomaly |= encoding == "latin-1" and not buffer.getvalue().isascii()
    return DataFile(f"data.{'tsv' if kind == 'tsv' else 'csv'}", content, anomaly)


@given(data_files())
def test_any_data_file_gets_a_clear_answer(data_file):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / data_file.name
        path.write_bytes(data_file.content)
        report_path = Path(folder) / "report.json"
        code = main(["run", "--checkpoint", "demo", "--task", "rte", "--data-files", f"validation={path}",
                     "--split", "validation", "--stages", "data", "--json", str(report_path)])
        assert code in (0, 1, 2)
        if code == 2:
            return
        report = json.loads(report_path.read_text())
    statuses = {check["id"]: check["status"] for check in report["checks"]}
    assert "error" not in statuses.values(), [c for c in report["checks"] if c["status"] == "error"]
    if data_file.anomaly:
        assert statuses.get("data.columns") == "fail" or statuses.get("data.label_range") == "fail", statuses
