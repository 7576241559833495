import json

import numpy as np
import pandas as pd
import pytest

from diagnostics.keras import data_files, disk, loading
from diagnostics.config.run import RunConfig
from diagnostics.core.errors import InputError
from diagnostics.config.tasks import TASKS


def test_save_pretrained_directory_round_trips(bert_checkpoint):
    tokenizer = loading.load_tokenizer(str(bert_checkpoint))
    model = loading.load_model(str(bert_checkpoint), num_labels=3)
    assert "token_type_ids" in tokenizer.model_input_names
    assert model.config.num_labels == 3
    logits = model(tokenizer(["the cat sat"], return_tensors="tf")).logits
    assert logits.shape == (1, 3)


def test_load_model_is_deterministic_for_a_seed(bert_checkpoint):
    first = loading.load_model(str(bert_checkpoint), num_labels=2, seed=3)
    second = loading.load_model(str(bert_checkpoint), num_labels=2, seed=3)
    for a, b in zip(first.get_weights(), second.get_weights(), strict=True):
        np.testing.assert_array_equal(a, b)


def test_directory_without_config_is_a_clear_error(tmp_path):
    with pytest.raises(InputError, match="has no config.json"):
        loading.load_tokenizer(str(tmp_path))


def test_missing_directory_is_a_clear_error(tmp_path):
    with pytest.raises(InputError, match="does not exist"):
        loading.load_tokenizer(str(tmp_path / "nowhere"))


def test_hub_name_offline_is_a_clear_error():
    with pytest.raises(InputError, match="Cannot load Hub checkpoint 'no-such-org/no-such-model'"):
        loading.load_tokenizer("no-such-org/no-such-model")


@pytest.fixture
def fake_endpoint():
    """A local HTTP server standing in for the Hub's API: it answers every GET with 200."""
    import http.server
    import threading

    class Ok(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"{}")

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Ok)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()


def test_hub_reachability_follows_the_endpoint_and_the_offline_variable(monkeypatch, fake_endpoint):
    def reachable() -> bool:
        loading.hub_reachable.cache_clear()  # asked once per process; each case here asks anew
        return loading.hub_reachable(timeout=2)

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setenv("HF_ENDPOINT", fake_endpoint)
    try:
        assert reachable() is True
        monkeypatch.setenv("HF_HUB_OFFLINE", "1")
        assert reachable() is False  # at once, without asking
        monkeypatch.delenv("HF_HUB_OFFLINE")
        monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # nothing listens on the discard port
        assert reachable() is False
    finally:
        loading.hub_reachable.cache_clear()


ROWS_MRPC = [{"sentence1": f"the cat sat {i}", "sentence2": f"a cat sat {i}", "label": i % 2} for i in range(6)]
ROWS_SST2 = [{"sentence": f"a great film {i}", "label": i % 2} for i in range(6)]


def _write(frame: pd.DataFrame, path):
    suffix = path.suffix
    if suffix == ".csv":
        frame.to_csv(path, index=False)
    elif suffix == ".tsv":
        frame.to_csv(path, index=False, sep="\t")
    elif suffix == ".json":
        frame.to_json(path, orient="records", lines=True)
    elif suffix == ".jsonl":
        frame.to_json(path, orient="records", lines=True)
    else:
        frame.to_parquet(path)


@pytest.mark.parametrize("suffix", [".csv", ".tsv", ".json", ".jsonl", ".parquet"])
@pytest.mark.parametrize("task, rows", [("mrpc", ROWS_MRPC), ("sst2", ROWS_SST2)])
def test_local_files_load_in_the_glue_schema(tmp_path, suffix, task, rows):
    path = tmp_path / f"train{suffix}"
    _write(pd.DataFrame(rows), path)
    split = data_files.load_split(RunConfig(task=task, data_source="files", data_files=(("train", str(path)),)))
    assert split.column_names[: len(TASKS[task].text_columns)] == list(TASKS[task].text_columns)
    assert split["label"] == [row["label"] for row in rows]


def test_label_names_in_a_tsv_become_ids(tmp_path):
    path = tmp_path / "dev.tsv"
    path.write_text('premise\thypothesis\tlabel\nhe said "yes\tsaid yes\tentailment\na b\tc '
                    'd\tcontradiction\nx\ty\tmaybe\n')
    split = data_files.load_split(
        RunConfig(task="mnli", split="dev", data_source="files", data_files=(("dev", str(path)),))
    )
    assert split["label"] == [0, 2, -2]
    assert split["premise"][0] == 'he said "yes'


@pytest.mark.parametrize(
    "content, message",
    [(None, "does not exist"), ("", "is empty"), ("\x00\x01\x02 not json {", "Could not read")],
)
def test_unusable_data_file_is_a_clear_error(tmp_path, content, message):
    path = tmp_path / "train.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(InputError, match=message):
        data_files.load_split(RunConfig(task="sst2", data_source="files", data_files=(("train", str(path)),)))


def test_split_without_a_file_names_the_splits_given(tmp_path):
    path = tmp_path / "train.csv"
    _write(pd.DataFrame(ROWS_SST2), path)
    with pytest.raises(InputError, match="cover: train"):
        data_files.load_split(RunConfig(task="sst2", split="validation", data_source="files",
                                     data_files=(("train", str(path)),)))


@pytest.mark.parametrize("task", list(TASKS))
def test_demo_samples_cover_every_split_with_every_label(task):
    glue = TASKS[task]
    for split in glue.splits:
        path = loading.DEMO_DATA_DIR / task / f"{split}.jsonl"
        rows = [json.loads(line) for line in path.read_text().splitlines()]
        assert len(rows) >= 64
        assert all(column in rows[0] for column in glue.text_columns + ("label", "idx"))
        labels = {row["label"] for row in rows}
        if split.startswith("test"):
            assert labels == {-1}
        elif glue.regression:
            assert all(0 <= label <= 5 for label in labels)
        else:
            assert labels == set(range(glue.num_labels))


def test_demo_checkpoint_loads_through_from_pretrained():
    directory = loading.demo_checkpoint_dir()
    assert (directory / "config.json").is_file()
    model = loading.load_model("demo", num_labels=3)
    tokenizer = loading.load_tokenizer("demo")
    assert type(model).__name__ == "TFDistilBertForSequenceClassification"
    assert model.config.dim == loading.DEMO_MODEL["dim"]
    ids = tokenizer("anna drove a truck at the park .")["input_ids"]
    assert tokenizer.unk_token_id not in ids


def test_demo_checkpoint_build_is_deterministic(tmp_path, monkeypatch):
    first = loading.demo_checkpoint_dir()
    monkeypatch.setenv("DEBUGGER_CACHE_DIR", str(tmp_path))
    second = loading.demo_checkpoint_dir()
    assert second != first
    assert (first / "vocab.txt").read_text() == (second / "vocab.txt").read_text()
    a = loading.load_model(str(first), num_labels=2)
    b = loading.load_model(str(second), num_labels=2)
    for x, y in zip(a.get_weights(), b.get_weights(), strict=True):
        np.testing.assert_array_equal(x, y)


def test_tidy_cache_drops_old_uploads_then_the_oldest_past_the_size_and_keeps_the_newest(tmp_path, monkeypatch):
    import os
    import time

    monkeypatch.setenv("DEBUGGER_CACHE_DIR", str(tmp_path))
    now = time.time()
    made = {}
    for name, age_days, size in (("old", 10, 10), ("middle", 2, 600), ("young", 1, 600), ("new", 0, 600)):
        folder = tmp_path / "uploads" / name
        folder.mkdir(parents=True)
        file = folder / "train.csv"
        file.write_bytes(b"x" * size)
        os.utime(file, (now - age_days * 86400, now - age_days * 86400))
        made[name] = folder
    arrow = tmp_path / "datasets" / "csv"
    arrow.mkdir(parents=True)
    (arrow / "cache.arrow").write_bytes(b"y" * 10)
    removed = loading.tidy_cache(max_age_s=7 * 86400, max_bytes=1300, now=now, force=True, keep=made["new"])
    assert set(removed) == {made["old"], made["middle"]}  # past the age; then the oldest until 1,210 bytes remain
    assert made["young"].is_dir() and made["new"].is_dir() and arrow.is_dir()
    assert loading.tidy_cache(now=now) == []  # at most once every ten minutes


def test_hosted_mode_keeps_the_hub_cache_under_the_size_dropping_the_least_recently_downloaded(tmp_path, monkeypatch):
    """Eight distinct checkpoints a visitor asked for grew a Space's Hub cache from 88 to 700 MiB, and nothing tidied
    it. In hosted mode each repository counts, by its last download, and goes only when the total is over the size
    (never for its age alone: the app's own checkpoint is downloaded once and used every day)."""
    import os
    import time

    from huggingface_hub import constants

    from diagnostics.config import limits

    hub = tmp_path / "hub"
    monkeypatch.setenv("DEBUGGER_CACHE_DIR", str(tmp_path / "debugger"))
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(hub))
    now, made = time.time(), {}
    for name, age_days, size in (("models--org--oldest", 30, 500), ("models--org--daily", 20, 400),
                                 ("datasets--nyu-mll--glue", 2, 300), ("models--org--newest", 0, 300)):
        blob = hub / name / "blobs" / "abc"
        blob.parent.mkdir(parents=True)
        blob.write_bytes(b"w" * size)
        snapshot = hub / name / "snapshots" / "rev" / "tf_model.h5"
        snapshot.parent.mkdir(parents=True)
        snapshot.symlink_to(blob)  # counted once
        os.utime(blob, (now - age_days * 86400, now - age_days * 86400))
        made[name] = hub / name
    monkeypatch.delenv(limits.HOSTED_ENV, raising=False)
    assert loading.tidy_cache(max_age_s=86400, max_bytes=700, now=now, force=True) == []  # a laptop's own cache
    monkeypatch.setenv(limits.HOSTED_ENV, "1")
    removed = loading.tidy_cache(max_age_s=86400, max_bytes=700, now=now, force=True)
    assert removed == [made["models--org--oldest"], made["models--org--daily"]]  # 1,500 bytes down to 600
    assert made["datasets--nyu-mll--glue"].is_dir() and made["models--org--newest"].is_dir()
    assert loading.tidy_cache(max_age_s=86400, max_bytes=700, now=now, force=True) == []  # under the size: kept


def test_the_pages_tidy_the_cache_on_a_thread_of_their_own_at_most_every_ten_minutes(tmp_path, monkeypatch):
    import os
    import time

    monkeypatch.setenv("DEBUGGER_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(disk, "_tidied", [0.0])
    old = tmp_path / "uploads" / "old"
    old.mkdir(parents=True)
    (old / "train.csv").write_text("x")
    os.utime(old / "train.csv", (time.time() - 30 * 86400,) * 2)
    thread = loading.tidy_cache_in_background()
    thread.join(timeout=30)
    assert not old.exists()
    assert loading.tidy_cache_in_background() is None  # ran a moment ago


def test_an_upload_kept_again_is_young_again(tmp_path):
    import os

    path = data_files.keep_upload("dev.csv", b"premise,hypothesis,label\na,b,0\n", root=tmp_path)
    os.utime(path, (0, 0))
    assert data_files.keep_upload("dev.csv", b"premise,hypothesis,label\na,b,0\n", root=tmp_path) == path
    assert path.stat().st_mtime > 1e9


def test_hosted_mode_tidies_the_hub_cache_right_after_a_load_that_added_to_it(tmp_path, monkeypatch):
    """With a 300 MB cap, eight checkpoints took a Space's Hub cache to 700 MiB for 182 s, until the first page after
    the ten-minute mark tidied it: a load from the Hub that added a repository tidies at once, in the background; a
    load that added nothing, or a local checkpoint, lists nothing."""
    import time

    from huggingface_hub import constants

    from diagnostics.config import limits
    from diagnostics.keras import disk

    hub = tmp_path / "hub"
    hub.mkdir()
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(hub))
    monkeypatch.setenv(limits.HOSTED_ENV, "1")
    monkeypatch.setattr(disk, "_hub_seen", [])
    monkeypatch.setattr(disk, "_tidied", [time.time()])  # tidied a moment ago: the ten-minute wait would hold
    tidied = []
    monkeypatch.setattr(disk, "tidy_cache", lambda **options: tidied.append(options) or [])
    tried = []

    class Loader:
        @classmethod
        def from_pretrained(cls, path, **kwargs):
            tried.append(path)
            (hub / f"models--org--{len(tried)}").mkdir()  # what a download adds
            return "loaded"

    assert loading.loaded_from(Loader, "org/one") == "loaded"
    time.sleep(0.2)
    assert tidied == [{"force": True}]
    monkeypatch.setattr(Loader, "from_pretrained", classmethod(lambda cls, path, **kwargs: "from the cache"))
    loading.loaded_from(Loader, "org/one")  # nothing downloaded: nothing listed
    (tmp_path / "config.json").write_text("{}")
    loading.loaded_from(Loader, str(tmp_path))  # a local checkpoint
    time.sleep(0.2)
    assert tidied == [{"force": True}]
