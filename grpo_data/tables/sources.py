"""Where a dataset's records are: files, folders, save_to_disk folders (one or one per config), Hub names.

    for part in read_parts("EleutherAI/hendrycks_math", fields, splits=["train"], configs="all"):
        ...   # one grpo_data.tables.readers.Part per file, split or config

A folder of files named by split (a downloaded Hub snapshot: `train-00000-of-00001.parquet` beside
`test-...`) gives only the splits asked for: loading both into a training pool would contaminate it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from grpo_data.tables.readers import FILE_SUFFIXES, DataError, Fields, Part, dataset_part, read_file


def _is_save_to_disk(path: Path) -> bool:
    return (path / "state.json").exists() or (path / "dataset_dict.json").exists()


def _splits_of(ds, where: str, splits: list[str]) -> list[tuple[str | None, object]]:
    import datasets

    if not isinstance(ds, datasets.DatasetDict):
        return [(None, ds)]
    missing = [s for s in splits if s not in ds]
    if missing:
        raise DataError(f"{where}: split {missing[0]!r} not found; available: {', '.join(ds)}")
    return [(s, ds[s]) for s in splits]


def _label(base: str, config: str | None, split: str | None, n_splits: int) -> str:
    return base + (f":{config}" if config else "") + (f"[{split}]" if split and n_splits > 1 else "")


def _local_configs(path: Path, configs: list[str] | str | None) -> list[tuple[str | None, Path]]:
    """(config, folder) pairs: the folder itself, or its save_to_disk sub-folders, one per config."""
    if _is_save_to_disk(path):
        if configs not in (None, "all"):
            raise DataError(f"{path}: a single save_to_disk folder has no configs; drop --hub-config")
        return [(None, path)]
    subs = {p.name: p for p in sorted(path.iterdir()) if p.is_dir() and _is_save_to_disk(p)}
    if configs is None:
        if subs:
            raise DataError(f"{path}: holds one save_to_disk folder per config ({', '.join(subs)}); "
                            "pass --hub-config all, or name the ones to load")
        return []
    if not subs:
        raise DataError(f"{path}: configs were asked for, but no sub-folder is a save_to_disk folder")
    if configs == "all":
        return list(subs.items())
    missing = [c for c in configs if c not in subs]
    if missing:
        raise DataError(f"{path}: config {missing[0]!r} not found; available: {', '.join(subs)}")
    return [(c, subs[c]) for c in configs]


SPLIT_NAMES = ("train", "test", "validation", "valid", "val", "dev", "eval")


def _split_of(file: Path, root: Path) -> str | None:
    """The split a file of a downloaded dataset belongs to: a split name as a whole word, in any case,
    in its folders or its name (`train-00000-of-00002.parquet`, `gsm8k_test.jsonl`, `Train/`), else None."""
    words = re.split(r"[^a-z0-9]+", "/".join(file.relative_to(root).with_suffix("").parts).lower())
    return next((w for w in words if w in SPLIT_NAMES), None)


def split_files(files: list[Path], root: Path, splits: list[str]) -> list[Path]:
    """The files of the requested splits when the folder's files are named by split (a Hub snapshot
    keeps train and test side by side: loading both into a training pool would contaminate it);
    every file when none is."""
    named = {f: _split_of(f, root) for f in files}
    if not any(named.values()):
        return files
    chosen = [f for f in files if named[f] in splits]
    if not chosen:
        found = sorted({s for s in named.values() if s})
        raise DataError(f"{root}: files are named by split ({', '.join(found)}), none for {', '.join(splits)}; "
                        "choose with --split")
    unnamed = [f for f in files if named[f] is None]
    if unnamed:
        raise DataError(f"{root}: some files are named by split and some not (e.g. {unnamed[0].name}); "
                        "point --data at the files to load")
    return chosen


def _looks_like_path(spec: str) -> bool:
    """True for specs that can only be meant as local paths (Hub names are 'name' or 'owner/name')."""
    return spec.startswith(("/", ".", "~")) or spec.count("/") > 1 or Path(spec).suffix.lower() in FILE_SUFFIXES


def parse_configs(value: str | list[str] | None) -> list[str] | str | None:
    """--hub-config: None, "all", or a comma-separated list (or a YAML list)."""
    if value is None or value == "all":
        return value
    names = value if isinstance(value, list) else [c.strip() for c in str(value).split(",")]
    return [n for n in names if n] or None


def parse_splits(value: str | list[str] | None) -> list[str]:
    if value is None:
        return ["train"]
    names = value if isinstance(value, list) else [s.strip() for s in str(value).split(",")]
    return [n for n in names if n] or ["train"]


def read_parts(spec: str, fields: Fields, splits: list[str] | None = None,
               configs: list[str] | str | None = None) -> Iterator[Part]:
    """The parts of a local file/folder, save_to_disk folder(s), or Hub dataset (several configs and
    splits: `configs="all"` or a list)."""
    splits = splits or ["train"]
    path = Path(spec)
    if path.is_file():
        yield read_file(path, fields)
        return
    if path.is_dir():
        pairs = _local_configs(path, configs)
        if pairs:
            import datasets

            for config, folder in pairs:
                for split, ds in _splits_of(datasets.load_from_disk(str(folder)), str(folder), splits):
                    yield dataset_part(ds, _label(str(path), config, split, len(splits)),
                                        path.name + (f":{config}" if config else ""), fields)
            return
        files = sorted(p for p in path.rglob("*") if p.suffix.lower() in FILE_SUFFIXES and p.is_file())
        if not files:
            raise DataError(f"{path}: folder holds no {', '.join(FILE_SUFFIXES)} files and is not a save_to_disk folder")
        for f in split_files(files, path, splits):
            part = read_file(f, fields)
            part.source = path.stem  # one source for the folder, whatever its files are called
            yield part
        return
    if _looks_like_path(spec):
        raise DataError(f"{spec}: no such file or folder")
    yield from _hub_parts(spec, fields, splits, configs)


def _hub_parts(spec: str, fields: Fields, splits: list[str], configs) -> Iterator[Part]:
    import datasets  # a Hub name, "owner/name" or "name"

    try:
        names = datasets.get_dataset_config_names(spec) if configs == "all" else (configs or [None])
        if configs == "all" and "all" in names:  # the dataset's own union config (lighteval/MATH): not twice
            names = ["all"]
        for config in names:
            for split in splits:
                ds = datasets.load_dataset(spec, config, split=split)
                yield dataset_part(ds, _label(spec, config, split, len(splits)),
                                    spec + (f":{config}" if config else ""), fields)
    except DataError:
        raise
    except Exception as exc:
        raise DataError(
            f"{spec}: not a local path, and loading it as a Hub dataset failed ({type(exc).__name__}: {exc})"
        ) from exc
