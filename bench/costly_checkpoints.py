"""A hosted server against checkpoints that cost more than they say: a real server started as the Space starts it
(`python -m ui.serve`, hosted mode, heavy work in worker processes), visitors driven over Streamlit's websocket.

Two attacks of issue 72, each beside a control visitor:
  - `--tokenizers` checkpoint names, each with a `tokenizer.json` of `--tokenizer-mib` MiB: every file a tokenizer
    reads is sized before it is parsed, so the server's memory should barely move.
  - two checkpoints whose training costs more than their estimate once said: ALBERT with `inner_group_num=8` and a
    one-layer BERT with `intermediate_size=40000` (64M parameters), with the estimate's cap raised out of the way so
    only the worker's limit (`--worker-gib`) stands between them and the server. Each must end its own worker while
    another visitor's Data page answers.

The checkpoints are random weights written by `save_pretrained` into a Hub cache of a temporary folder, read with
the Hub off (`HF_HUB_OFFLINE=1`) as a Space reads what it downloaded.

Prints:
  tokenizer_growth_mib    the server's resident memory after the tokenizer checkpoints, less before
  costly_ended            the costly checkpoints whose page said their worker was ended at its limit (of 2)
  server_peak_mib         the server's own peak resident memory while they ran (its workers not counted)
  health_max_s            the slowest health answer meanwhile
  control_page_s          the slowest of three visitors' Data pages on a quiet server (each of another seed)
  other_page_s            the slowest of three visitors' Data pages while the costly checkpoints ran
  other_page_ratio        other_page_s / control_page_s

    python bench/costly_checkpoints.py [--tokenizers 8] [--tokenizer-mib 65] [--worker-gib 3] [--small]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

from concurrent_pages import ROOT, free_port, start_server  # the bench beside this one: same server, same start

sys.path.insert(0, str(ROOT / "tests"))
from serve.client import Client  # noqa: E402  (the suite's websocket visitor)

COMMIT = "0" * 40
WORDS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *"the a cat dog sat on mat film good bad is was".split(), "."]
ENDED = "one computation may use on this server"


def planted(hub: Path, name: str) -> Path:
    """The snapshot folder of `name` in the Hub cache `hub`, as a download leaves it."""
    repo = hub / f"models--{name.replace('/', '--')}"
    (repo / "refs").mkdir(parents=True, exist_ok=True)
    (repo / "refs" / "main").write_text(COMMIT)
    snapshot = repo / "snapshots" / COMMIT
    snapshot.mkdir(parents=True, exist_ok=True)
    return snapshot


def tokenizer_into(folder: Path):
    from transformers import BertTokenizerFast

    vocab = folder / "vocab.txt"
    vocab.write_text("\n".join(WORDS) + "\n")
    tokenizer = BertTokenizerFast(vocab_file=str(vocab), model_max_length=512)
    tokenizer.save_pretrained(folder)
    return tokenizer


def build(hub: Path, args) -> None:
    import tf_keras  # noqa: F401  (Keras 2 for the TF models)
    from transformers import AlbertConfig, BertConfig, TFAlbertModel, TFBertModel

    for index in range(args.tokenizers):
        folder = planted(hub, f"bench/big-tokenizer-{index}")
        tokenizer_into(folder)
        BertConfig(vocab_size=len(WORDS), hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                   intermediate_size=37).save_pretrained(folder)
        spec = json.loads((folder / "tokenizer.json").read_text())
        words = args.tokenizer_mib * 2**20 // 27  # '"w0x00000000012": 17, ' is 27 bytes
        spec["model"]["vocab"].update({f"w{index}x{number:011d}": number + len(WORDS) for number in range(words)})
        (folder / "tokenizer.json").write_text(json.dumps(spec))
    shape = dict(hidden_size=768, num_attention_heads=12, intermediate_size=3072)
    if args.small:
        shape = dict(hidden_size=64, num_attention_heads=2, intermediate_size=256)
    costly = {"bench/albert-inner8": TFAlbertModel(AlbertConfig(vocab_size=len(WORDS), num_hidden_layers=12,
                                                                inner_group_num=8, embedding_size=128, **shape)),
              "bench/bert-ffn40000": TFBertModel(BertConfig(vocab_size=len(WORDS), num_hidden_layers=1,
                                                            **{**shape, "intermediate_size": 40_000}))}
    for name, model in costly.items():
        folder = planted(hub, name)
        tokenizer_into(folder)
        model(model.dummy_inputs)
        model.save_pretrained(folder)


def resident_mib(pid: int) -> float:
    import psutil

    return psutil.Process(pid).memory_info().rss / 2**20


def health_s(port: int) -> float:
    start = time.perf_counter()
    try:
        urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=60).read()
    except OSError:
        return 60.0
    return time.perf_counter() - start


def data_page_s(port: int, seed: int) -> float:
    start = time.perf_counter()
    with Client(port) as visitor:
        drawn = visitor.run("", f"seed={seed}", timeout=600)
    assert drawn.exceptions == [] and "The first batch, decoded" in drawn.text, drawn.texts[-5:]
    return time.perf_counter() - start


def model_page(port: int, checkpoint: str, said: dict) -> None:
    with Client(port) as visitor:
        drawn = visitor.run("model", f"checkpoint={checkpoint}&batch_size=32&max_length=256", timeout=900)
    said[checkpoint] = [text for text in drawn.texts if ENDED in text] + drawn.exceptions


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokenizers", type=int, default=8, help="checkpoints with a large tokenizer (0 to 16)")
    parser.add_argument("--tokenizer-mib", type=int, default=65, help="the size of each tokenizer.json (1 to 200)")
    parser.add_argument("--worker-gib", type=float, default=3.0, help="each worker's memory limit, GiB (1 to 64)")
    parser.add_argument("--small", action="store_true", help="small costly checkpoints (the suite's run)")
    args = parser.parse_args()
    if not (0 <= args.tokenizers <= 16 and 1 <= args.tokenizer_mib <= 200 and 1 <= args.worker_gib <= 64):
        parser.error("--tokenizers 0 to 16, --tokenizer-mib 1 to 200, --worker-gib 1 to 64")
    with tempfile.TemporaryDirectory(prefix="tpd-costly-") as work:
        home = Path(work) / "hf"
        build(home / "hub", args)
        env = {"DEBUGGER_HOSTED": "1", "DEBUGGER_WORKERS": "1", "DEBUGGER_WORKER_GIB": str(args.worker_gib),
               "DEBUGGER_MAX_TRAINING_GIB": "64", "DEBUGGER_MAX_LENGTH": "256", "HF_HOME": str(home),
               "DEBUGGER_CACHE_DIR": str(Path(work) / "cache"), "DEBUGGER_RUN_BUDGET_S": "600"}
        port = free_port()
        server = start_server(port, env, open(Path(work) / "server.log", "w"), module="ui.serve")
        try:
            data_page_s(port, 0)  # the first page pays for TensorFlow's import and the kit's split
            control = max(data_page_s(port, seed) for seed in (1, 2, 3))
            before, refused = resident_mib(server.pid), 0
            for index in range(args.tokenizers):
                with Client(port) as visitor:
                    drawn = visitor.run("", f"checkpoint=bench/big-tokenizer-{index}", timeout=300)
                said_so = any("hosted mode reads at most" in text for text in drawn.texts)
                refused += said_so
                if not said_so:
                    print(f"# big-tokenizer-{index} said: {drawn.texts[-3:]} {drawn.exceptions}")
            growth = resident_mib(server.pid) - before
            peak, slowest, stop = [resident_mib(server.pid)], [0.0], threading.Event()

            def watch() -> None:
                while not stop.is_set():
                    slowest[0] = max(slowest[0], health_s(port))
                    peak[0] = max(peak[0], resident_mib(server.pid))
                    time.sleep(0.2)

            said: dict = {}
            threads = [threading.Thread(target=watch)] + [
                threading.Thread(target=model_page, args=(port, name, said))
                for name in ("bench/albert-inner8", "bench/bert-ffn40000")]
            for thread in threads:
                thread.start()
            time.sleep(10)  # the first costly checkpoint is loading or training by now
            other = max(data_page_s(port, seed) for seed in (4, 5, 6))
            for thread in threads[1:]:
                thread.join(900)
            stop.set()
            threads[0].join()
            alive = server.poll() is None
        finally:
            server.terminate()
            server.wait(30)
        print(f"# worker limit {args.worker_gib:g} GiB; what each costly page said: {json.dumps(said)}")
        print(f"# server alive after the attacks: {alive}")
        print(f"# tokenizer checkpoints refused by their file's size: {refused} of {args.tokenizers}")
        print(f"tokenizer_growth_mib = {growth:.0f}")
        print(f"costly_ended = {sum(bool(texts) for texts in said.values())}")
        print(f"server_peak_mib = {peak[0]:.0f}")
        print(f"health_max_s = {slowest[0]:.2f}")
        print(f"control_page_s = {control:.1f}")
        print(f"other_page_s = {other:.1f}")
        print(f"other_page_ratio = {other / control:.2f}")


if __name__ == "__main__":
    main()
