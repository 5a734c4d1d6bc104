"""Mixtures: several datasets in one training pool, with weights or caps, deduplicated across sources.

    spec = read_mixture("mix.yaml")
    result, report = build_mixture(spec)        # LoadResult of the mixed pool; report per source

A mixture file (YAML):

    seed: 0                  # sampling seed
    total: 50000             # optional: rows in the mixture (with weights)
    sources:
      - data: data/gsm8k.jsonl
        preset: gsm8k
        weight: 0.3          # share of the mixture
      - data: EleutherAI/hendrycks_math
        preset: math
        hub_config: all
        split: train
        weight: 0.7
        cap: 20000           # at most this many rows from this source

Sources load together (`grpo_data.loaders.load_sources`), so a problem found in two sources is kept
once, from the source listed first; every row keeps its `source`. Then each source gives
min(available, cap) rows, or, with weights, weight_i / sum(weights) of the mixture: of `total` rows
when given, else of the largest mixture every source can fill at its share. A source that cannot
fill its share gives all it has and the report says by how much it fell short. Rows are drawn
without replacement (a pool of unique problems; the scheduler decides how often each is trained on).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl
import yaml

from grpo_data.loaders import DataError, LoadLimits, LoadResult, Source, load_sources, resolve_preset

SOURCE_KEYS = {"data", "preset", "question_field", "answer_field", "id_field", "level_field", "split", "hub_config",
               "weight", "cap"}


@dataclass(frozen=True)
class MixEntry:
    source: Source
    weight: float | None = None
    cap: int | None = None


@dataclass(frozen=True)
class MixSpec:
    entries: tuple[MixEntry, ...]
    total: int | None = None
    seed: int = 0


def parse_mixture(raw: dict, where: str = "mixture") -> MixSpec:
    """A MixSpec from the YAML mapping; errors name the source entry and the key to fix."""
    if not isinstance(raw, dict) or not isinstance(raw.get("sources"), list) or not raw["sources"]:
        raise DataError(f"{where}: needs a non-empty `sources:` list (see grpo_data/mixture.py)")
    unknown = sorted(set(raw) - {"sources", "total", "seed"})
    if unknown:
        raise DataError(f"{where}: unknown key(s) {unknown}; accepted: sources, total, seed")
    entries = []
    for i, s in enumerate(raw["sources"]):
        at = f"{where}: sources[{i}]"
        if not isinstance(s, dict) or "data" not in s:
            raise DataError(f"{at}: each source needs `data:` (a file, folder or Hub name)")
        bad = sorted(set(s) - SOURCE_KEYS)
        if bad:
            raise DataError(f"{at}: unknown key(s) {bad}; accepted: {', '.join(sorted(SOURCE_KEYS))}")
        preset = resolve_preset(s.get("preset"), s.get("question_field"), s.get("answer_field"), s.get("id_field"),
                                s.get("level_field"))
        weight = None if s.get("weight") is None else float(s["weight"])
        cap = None if s.get("cap") is None else int(s["cap"])
        if (weight is not None and weight <= 0) or (cap is not None and cap < 0):
            raise DataError(f"{at}: weight must be > 0 and cap >= 0")
        entries.append(MixEntry(Source.of(str(s["data"]), preset, s.get("split"), s.get("hub_config")), weight, cap))
    weighted = [e.weight is not None for e in entries]
    if any(weighted) and not all(weighted):
        raise DataError(f"{where}: give every source a weight, or none (caps alone need no weights)")
    total = raw.get("total")
    if total is not None and not all(weighted):
        raise DataError(f"{where}: `total` needs weights on the sources")
    return MixSpec(tuple(entries), None if total is None else int(total), int(raw.get("seed", 0)))


def read_mixture(path: str | Path) -> MixSpec:
    """A mixture file; relative `data:` paths that exist beside the file are read from there."""
    path = Path(path)
    raw = yaml.safe_load(path.read_text())
    for s in raw.get("sources", []) if isinstance(raw, dict) else []:
        if isinstance(s, dict) and "data" in s and not Path(str(s["data"])).is_absolute():
            beside = path.parent / str(s["data"])
            if beside.exists():
                s["data"] = str(beside)
    return parse_mixture(raw, str(path))


def mixture_counts(available: list[int], weights: list[float] | None, caps: list[int | None],
                   total: int | None) -> list[int]:
    """Rows to take from each source (pure). Caps bound availability; weights set shares of the total."""
    avail = [a if c is None else min(a, c) for a, c in zip(available, caps, strict=True)]
    if weights is None:
        return avail
    shares = np.array(weights, dtype=float) / sum(weights)
    if total is None:  # the largest mixture in which every source fills its share
        total = int(min(a / s for a, s in zip(avail, shares, strict=True)))
    want = np.floor(shares * total + 1e-9).astype(int)
    want[np.argmax(shares)] += total - int(want.sum())  # rounding remainder to the largest share
    return [int(min(w, a)) for w, a in zip(want, avail, strict=True)]


def build_mixture(spec: MixSpec, limits: LoadLimits = LoadLimits(), verifier=None) -> tuple[LoadResult, list[dict]]:
    """The mixed pool (a LoadResult whose rejects are every source's) and a report row per source."""
    loaded = load_sources([e.source for e in spec.entries], limits, verifier)
    origin = loaded.origin
    available = [int((origin == i).sum()) for i in range(len(spec.entries))]
    weights = [e.weight for e in spec.entries] if spec.entries[0].weight is not None else None
    take = mixture_counts(available, weights, [e.cap for e in spec.entries], spec.total)
    rng = np.random.default_rng(spec.seed)
    chosen = []
    for i, n in enumerate(take):
        rows = np.flatnonzero(origin.to_numpy() == i)
        chosen.append(np.sort(rng.choice(rows, size=n, replace=False)) if n < len(rows) else rows)
    idx = np.concatenate(chosen) if chosen else np.zeros(0, np.int64)
    table = loaded.table[pl.Series(idx, dtype=pl.Int64)]
    target = None
    if weights is not None:
        total = spec.total if spec.total is not None else sum(take)
        target = [round(w / sum(weights) * total) for w in weights]
    report = [{"data": e.source.spec, "preset": e.source.preset.description, "weight": e.weight, "cap": e.cap,
               "available": a, "taken": t, **({"short_by": max(0, target[i] - t)} if target else {})}
              for i, (e, a, t) in enumerate(zip(spec.entries, available, take, strict=True))]
    mixed = LoadResult(table, loaded.rejects, loaded.n_read, loaded.sources,
                       origin=pl.Series(np.repeat(np.arange(len(take)), take), dtype=pl.Int64))
    return mixed, report
