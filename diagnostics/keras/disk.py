"""Where the debugger keeps what it builds and what visitors leave (`cache_dir`), and the tidying of it: uploads and
the Arrow copies of local data files past an age and a size, and in hosted mode the Hub's cache too."""

from __future__ import annotations

import os
import shutil
import threading
import time
from pathlib import Path

from diagnostics.config import limits


def cache_dir() -> Path:
    """Where built artifacts live: $DEBUGGER_CACHE_DIR, else ~/.cache/training-pipeline-debugger."""
    root = os.environ.get("DEBUGGER_CACHE_DIR") or Path.home() / ".cache" / "training-pipeline-debugger"
    return Path(root)


# What visitors leave on disk (uploads, the Arrow copies of local data files) is dropped past an age and a size;
# hosted mode keeps less. $DEBUGGER_CACHE_MAX_AGE_S and $DEBUGGER_CACHE_MAX_BYTES set them.
TIDY_FOLDERS = ("uploads", "datasets")


TIDY_EVERY_S = 600.0


_tidied = [0.0]


def tidy_cache(max_age_s: float | None = None, max_bytes: int | None = None, *, now: float | None = None,
               force: bool = False, keep: Path | None = None) -> list[Path]:
    """Drop uploads and Arrow copies older than `max_age_s`, then the oldest until they take at most `max_bytes`
    (defaults: 7 days and 2 GiB; hosted: 1 day and 1 GiB), never `keep` (the upload just written). At most once
    every ten minutes unless `force`. In hosted mode the Hub's cache of checkpoints and datasets counts too, each
    repository by its last download, dropped only to keep the total under `max_bytes` (eight distinct checkpoints
    a visitor asked for grew it from 88 to 700 MiB, with nothing to tidy it); a checkpoint dropped is downloaded
    again by the next visitor who asks for it.

    Returns:
        the folders and files removed.
    """
    moment = time.time() if now is None else now
    if not force and moment - _tidied[0] < TIDY_EVERY_S:
        return []
    _tidied[0] = moment
    hosted = limits.hosted() is not None
    max_age_s = max_age_s if max_age_s is not None else float(
        os.environ.get("DEBUGGER_CACHE_MAX_AGE_S") or (86400 if hosted else 7 * 86400))
    max_bytes = max_bytes if max_bytes is not None else int(
        os.environ.get("DEBUGGER_CACHE_MAX_BYTES") or (2**30 if hosted else 2 * 2**30))
    # (last written, bytes, path, whether age alone drops it) of each upload folder, Arrow copy and Hub repository
    items = [(*_written_and_size(item), item, True) for name in TIDY_FOLDERS
             for item in _children(cache_dir() / name)]
    if hosted:
        items += [(*_written_and_size(item), item, False) for item in _children(hub_cache_dir())
                  if item.name.startswith(("models--", "datasets--"))]
    removed, total = [], sum(size for _, size, _, _ in items)
    for written, size, item, ages in sorted(items, key=lambda entry: entry[0]):
        if ((not ages or moment - written <= max_age_s) and total <= max_bytes) or item == keep:
            continue
        shutil.rmtree(item, ignore_errors=True) if item.is_dir() else item.unlink(missing_ok=True)
        removed.append(item)
        total -= size
    return removed


def _children(folder: Path) -> list[Path]:
    return list(folder.iterdir()) if folder.is_dir() else []


def _written_and_size(item: Path) -> tuple[float, int]:
    """When anything under `item` was last written, and the bytes its files take (a link counted once, as the Hub
    cache's snapshots link to its blobs)."""
    files = [item] if item.is_file() else [path for path in item.rglob("*") if path.is_file() and not path.is_symlink()]
    stats = [path.stat() for path in files]
    return max((stat.st_mtime for stat in stats), default=item.stat().st_mtime), sum(stat.st_size for stat in stats)


def hub_cache_dir() -> Path:
    """Where `from_pretrained` and `load_dataset` keep what they download from the Hub."""
    from huggingface_hub import constants

    return Path(constants.HF_HUB_CACHE)


def tidy_cache_in_background(force: bool = False) -> threading.Thread | None:
    """`tidy_cache()` on a thread of its own, so that no page waits while a large cache is listed (0.4 s for this
    machine's, of some 1,300 entries); None when it ran in the last ten minutes (unless `force`). A file another
    session removes while it lists them ends this tidying quietly; the next one goes on."""
    if not force and time.time() - _tidied[0] < TIDY_EVERY_S:
        return None

    def tidy() -> None:
        try:
            tidy_cache(force=force)
        except OSError:
            pass

    thread = threading.Thread(target=tidy, name="debugger-tidy-cache", daemon=True)
    thread.start()
    return thread


_hub_seen: list[int] = []  # the Hub cache folder's last change, as the last look after a load saw it


def tidy_after_download() -> threading.Thread | None:
    """In hosted mode, after a load from the Hub: when the Hub's cache gained a repository since the last look, tidy
    now rather than on the first page after ten minutes (eight distinct checkpoints took it to 700 MiB under a 300 MB
    cap for 182 s). None when nothing was added, or not hosted."""
    if limits.hosted() is None:
        return None
    try:
        changed = hub_cache_dir().stat().st_mtime_ns
    except OSError:
        return None
    if _hub_seen and _hub_seen[0] == changed:
        return None
    _hub_seen[:] = [changed]
    return tidy_cache_in_background(force=True)
