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
      - data: SynthLabsAI/Big-Math-RL-Verified
        preset: problem_answer
        prior: bigmath       # keep the field this prior reads (grpo_data.curriculum.priors), as `grpo load --prior`
        weight: 0.2

Each source is loaded (and deduplicated within itself) on its own. Its count is min(available, cap),
or, with weights, weight_i / sum(weights) of the mixture: of `total` rows when given, else of the
largest mixture every source can fill at its share. Sources are then sampled in the order listed,
each from its rows whose normalized prompt no earlier source has already put in the mixture: a
problem found in two sources is kept once, and a source that overlaps an earlier one loses only the
problems actually taken from it, not every problem they share. A source that cannot fill its count
gives all it has and the report says by how much it fell short. Rows are drawn without replacement
(a pool of unique problems; the scheduler decides how often each is trained on); every row keeps its
`source`.

A source's `prior:` (a spec `grpo_data.curriculum.priors` reads: a preset such as bigmath or polaris, or
FIELD:SCALE:SAMPLES) keeps the fields it reads in each of that source's rows, as `grpo load --prior`
does, so `grpo train data.prior=SPEC` (or `grpo profile --prior SPEC`) can read them from the mixed
pool; rows of a source without those fields have no prior value (a NaN: they start unprofiled).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import polars as pl
import yaml

from grpo_data.curriculum.prior_sources import PriorError, keep_patterns
from grpo_data.tables.loaders import DataError, LoadLimits, LoadResult, Source, load_sources
from grpo_data.tables.presets import resolve_preset
from grpo_data.tables.problems import prompt_text_expr

SOURCE_KEYS = {"data", "preset", "question_field", "answer_field", "id_field", "level_field", "split", "hub_config",
               "weight", "cap", "prior"}


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


def _number(value, at: str, key: str, kind=float, low: float = 0.0, strict: bool = True):
    """value as `kind`, finite and > low (>= low when not strict); DataError naming where otherwise."""
    bad = DataError(f"{at}: {key} must be {'an integer' if kind is int else 'a number'} "
                    f"{'>' if strict else '>='} {low:g}, got {value!r}")
    if isinstance(value, bool) or (kind is int and isinstance(value, float) and not value.is_integer()):
        raise bad
    try:
        x = kind(value)
    except (TypeError, ValueError):
        raise bad from None
    if not math.isfinite(x) or x < low or (strict and x == low):
        raise bad
    return x


def parse_mixture(raw: dict, where: str = "mixture") -> MixSpec:
    """A MixSpec from the YAML mapping; errors name the source entry and the key to fix."""
    if not isinstance(raw, dict) or not isinstance(raw.get("sources"), list) or not raw["sources"]:
        raise DataError(f"{where}: needs a non-empty `sources:` list (see grpo_data/tables/mixture.py)")
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
        try:
            preset = resolve_preset(s.get("preset"), s.get("question_field"), s.get("answer_field"),
                                    s.get("id_field"), s.get("level_field"))
        except DataError as exc:
            raise DataError(f"{at}: {str(exc).replace('--', '').replace('-field', '_field')}") from None
        if s.get("prior") is not None:
            try:
                preset = replace(preset, keep=keep_patterns(str(s["prior"])))
            except PriorError as exc:
                raise DataError(f"{at}: prior: {exc}") from None
        weight = None if s.get("weight") is None else _number(s["weight"], at, "weight")
        cap = None if s.get("cap") is None else _number(s["cap"], at, "cap", int, strict=False)
        entries.append(MixEntry(Source.of(str(s["data"]), preset, s.get("split"), s.get("hub_config")), weight, cap))
    weighted = [e.weight is not None for e in entries]
    if any(weighted) and not all(weighted):
        raise DataError(f"{where}: give every source a weight, or none (caps alone need no weights)")
    total = raw.get("total")
    if total is not None and not all(weighted):
        raise DataError(f"{where}: `total` needs weights on the sources")
    return MixSpec(tuple(entries), None if total is None else _number(total, where, "total", int),
                   _number(raw.get("seed", 0), where, "seed", int, strict=False))


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
    loads = [load_sources([e.source], limits, verifier) for e in spec.entries]
    available = [r.table.height for r in loads]
    weights = [e.weight for e in spec.entries] if spec.entries[0].weight is not None else None
    if weights is not None and spec.total is None and 0 in available:
        empty = spec.entries[available.index(0)].source.spec
        raise DataError(f"{empty}: no valid rows, so no mixture can give it its share; drop it or set `total`")
    take = mixture_counts(available, weights, [e.cap for e in spec.entries], spec.total)
    rng = np.random.default_rng(spec.seed)
    taken_keys = pl.Series("_key", [], dtype=pl.String)
    tables, report = [], []
    for entry, loaded, want in zip(spec.entries, loads, take, strict=True):
        keyed = loaded.table.with_columns(prompt_text_expr(pl.col("prompt")).alias("_key"))
        fresh = keyed.filter(~pl.col("_key").is_in(taken_keys.implode()))
        n = min(want, fresh.height)
        rows = np.sort(rng.choice(fresh.height, size=n, replace=False)) if n < fresh.height else np.arange(n)
        chosen = fresh[pl.Series(rows, dtype=pl.Int64)]
        taken_keys = pl.concat([taken_keys, chosen["_key"]])
        tables.append(chosen.drop("_key"))
        report.append({"data": entry.source.spec, "preset": entry.source.preset.description, "weight": entry.weight,
                       "cap": entry.cap, "available": loaded.table.height,
                       "already_taken_from_earlier": keyed.height - fresh.height, "wanted": want, "taken": n,
                       "short_by": want - n})
    counts = [t.height for t in tables]
    mixed = LoadResult(pl.concat(tables), pl.concat([r.rejects for r in loads]), sum(r.n_read for r in loads),
                       [s for r in loads for s in r.sources],
                       origin=pl.Series(np.repeat(np.arange(len(counts)), counts), dtype=pl.Int64))
    return mixed, report
