"""Split-wide checks against the least Arrow itself needs for the same answers, on the same in-memory table.

A GLUE-schema MNLI split of N rows (default 400,000, about MNLI's train size) is written as parquet, the
format the Hub serves GLUE in, and loaded as a `datasets.Dataset` the way the app loads local files
(loading is not timed: the app loads a split once and caches it for every session). The checks (label range,
label balance, duplicates) then scan the whole split as the Data page does. The floor runs on the very
Arrow table the checks read: `pyarrow.compute.value_counts` of the label column (the label figures) plus one
hash group-by of the text columns counting labels (the duplicate figures), the least work that answers
the same questions.

    python bench/split_scan.py [--rows 400000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402
import pyarrow.compute as pc  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

import diagnostics  # noqa: E402
diagnostics.own_process()  # Keras 2 for tf.keras, quiet libraries, before TensorFlow loads
from diagnostics.keras import data_files  # noqa: E402
from diagnostics.config.run import RunConfig  # noqa: E402
from diagnostics.checks.data.duplicates import check_duplicates, duplicate_figures  # noqa: E402
from diagnostics.checks.data.label_balance import check_label_balance  # noqa: E402
from diagnostics.checks.data.label_range import check_label_range  # noqa: E402
from diagnostics.keras.batches import split_labels  # noqa: E402


def write_split(path: Path, rows: int, seed: int = 0) -> None:
    """MNLI-schema rows: premises of 8 to 30 words, hypotheses of 4 to 14, 1% of rows repeated."""
    rng = np.random.default_rng(seed)
    words = np.array([f"w{i}" for i in range(20_000)])

    def sentences(count, low, high):
        lengths = rng.integers(low, high, count)
        tokens = words[rng.integers(0, len(words), lengths.sum())]
        return [" ".join(chunk) for chunk in np.split(tokens, np.cumsum(lengths)[:-1])]

    premise, hypothesis = sentences(rows, 8, 30), sentences(rows, 4, 14)
    label = rng.integers(0, 3, rows)
    repeats = rng.choice(rows, rows // 100, replace=False)
    for index in repeats:
        source = (index * 7919) % rows
        premise[index], hypothesis[index] = premise[source], hypothesis[source]
    table = pa.table({"premise": premise, "hypothesis": hypothesis, "label": label.astype(np.int64),
                      "idx": np.arange(rows, dtype=np.int32)})
    pq.write_table(table, path)


def scan(split, config: RunConfig, *, cached: bool = True) -> list:
    task, num_labels = config.glue_task, config.effective_num_labels
    labels = split_labels(split)
    batch_labels = labels[: config.batch_size].tolist()
    return [
        check_label_range(labels, batch_labels, task, num_labels, config.split),
        check_label_balance(labels, batch_labels, task, num_labels),
        check_duplicates(duplicate_figures(split, task, cached=cached)),
    ]


def floor(table: pa.Table, text_columns: list[str]) -> None:
    """The least Arrow work for the same figures: label counts, and text groups with their label counts."""
    pc.value_counts(table.column("label"))
    table.select(text_columns + ["label"]).group_by(text_columns, use_threads=True).aggregate([("label", "count")])


def timed(function) -> float:
    start = time.perf_counter()
    function()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=400_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "train.parquet"
        write_split(path, args.rows)
        config = RunConfig(task="mnli", data_source="files", data_files=(("train", str(path)),))
        split = data_files.load_split(config)
        table, texts = split.data.table, list(config.glue_task.text_columns)  # what the checks read
        results = scan(split, config, cached=False)  # warm
        floor(table, texts)
        first_times, floor_times = [], []
        for _ in range(args.repeats):  # interleaved, so drift in the machine's speed hits both sides alike
            first_times.append(timed(lambda: scan(split, config, cached=False)))
            floor_times.append(timed(lambda: floor(table, texts)))
        again = statistics.median(timed(lambda: scan(split, config)) for _ in range(args.repeats))
    first, least = statistics.median(first_times), statistics.median(floor_times)
    print(f"rows = {len(split)}")
    for result in results:
        print(f"# {result.id}: {result.status.value}: " + str(result.summary))
    print(f"arrow_floor_s = {least:.4f}")
    print(f"split_checks_first_scan_s = {first:.4f}")
    print(f"split_checks_rescan_s = {again:.4f}")
    print(f"split_scan_ratio_rescan = {again / least:.2f}")
    print(f"split_scan_ratio = {statistics.median(f / s for f, s in zip(first_times, floor_times, strict=True)):.2f}")


if __name__ == "__main__":
    main()
