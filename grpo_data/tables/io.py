"""Atomic file writes: a crash leaves the old file or the new one, never half of one.

Each writer writes to a temporary file in the target's folder, fsyncs it, then `os.replace`s it
over the target (atomic on POSIX within one filesystem).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

import polars as pl


def _atomic(path: str | os.PathLike, write: Callable[[str], None]) -> Path:
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    try:
        write(tmp)
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return target


def write_text(path: str | os.PathLike, text: str) -> Path:
    def write(tmp: str) -> None:
        Path(tmp).write_text(text, encoding="utf-8")

    return _atomic(path, write)


def keep_lines(path: str | os.PathLike, keep: Callable[[str], bool]) -> Path:
    """Rewrite a text file with only the lines `keep` accepts, streamed (the file need not fit in
    memory), atomically; a last line without its newline gets one."""

    def write(tmp: str) -> None:
        with open(path, encoding="utf-8") as src, open(tmp, "w", encoding="utf-8") as out:
            for line in src:
                if line.strip() and keep(line):
                    out.write(line if line.endswith("\n") else line + "\n")

    return _atomic(path, write)


def write_json(path: str | os.PathLike, obj) -> Path:
    return write_text(path, json.dumps(obj, indent=2, sort_keys=True, default=str) + "\n")


def write_jsonl(path: str | os.PathLike, rows: Iterable[dict]) -> Path:
    return write_text(path, "".join(json.dumps(r, default=str, ensure_ascii=False) + "\n" for r in rows))


def write_parquet(path: str | os.PathLike, df: pl.DataFrame, metadata: dict[str, str] | None = None) -> Path:
    """Parquet with optional key/value metadata in the file footer (values are strings)."""

    def write(tmp: str) -> None:
        df.write_parquet(tmp, metadata=metadata)

    return _atomic(path, write)


def write_ndjson(path: str | os.PathLike, df: pl.DataFrame) -> Path:
    """A frame as JSON lines (one object per row), written atomically."""

    def write(tmp: str) -> None:
        df.write_ndjson(tmp)

    return _atomic(path, write)



@contextmanager
def atomic_folder(folder: str | os.PathLike) -> Iterator[Path]:
    """A temporary folder beside `folder` to write a set of files into; when the block ends without
    error it replaces `folder` (renamed into place), else it is removed: never half a set."""
    folder = Path(folder)
    tmp = folder.parent / f".{folder.name}.tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        yield tmp
        old = folder.parent / f".{folder.name}.old-{os.getpid()}"
        if folder.exists():
            folder.rename(old)
        tmp.rename(folder)
        shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def write_parquet_shards(folder: str | os.PathLike, df: pl.DataFrame, rows_per_file: int = 100_000,
                         stem: str = "train") -> list[Path]:
    """`df` as `folder/STEM-0000i-of-0000n.parquet` files of at most rows_per_file rows (the Hub's
    layout), written atomically as a set."""
    n = max(1, -(-df.height // rows_per_file))
    names = [f"{stem}-{i:05d}-of-{n:05d}.parquet" for i in range(n)]
    with atomic_folder(folder) as tmp:
        for i, name in enumerate(names):
            df.slice(i * rows_per_file, rows_per_file).write_parquet(tmp / name)
    return [Path(folder) / name for name in names]
