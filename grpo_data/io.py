"""Atomic file writes: a crash leaves the old file or the new one, never half of one.

Each writer writes to a temporary file in the target's folder, fsyncs it, then `os.replace`s it
over the target (atomic on POSIX within one filesystem).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Iterable
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
