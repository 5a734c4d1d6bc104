"""Curriculum shards: problems bucketed by estimated pass rate, as checksummed hive-partitioned parquet.

    write_shards(problems, profile, "shards/arith", edges=(0, .1, .3, .7, .9, 1), fmt="verl", ...)
    table = read_shards("shards/arith", buckets=[2])     # verifies every file against the manifest

Buckets are cut on `p_est`, each problem's posterior-mean pass rate under the empirical-Bayes prior
the profiler's adaptive decisions use (`grpo_data.curriculum.estimates`), not on the raw n_correct / k: a raw rate
from a 2-sample screen is 0, 0.5 or 1, and a 1/2 screen in a level where nearly everything is 0/2
belongs with the hard problems, not in the middle bucket.

Layout (`bucket=i` holds lo_i <= p_est < hi_i; the last bucket includes 1.0):

    shards/NAME/bucket=0/data.parquet ... bucket=N-1/data.parquet
    shards/NAME/manifest.json   edges, counts per bucket, sha256 and size of every file, schema,
                                format, source dataset, profile metadata, unprofiled and rejected counts

Every file also carries its `bucket` column, so `datasets.load_dataset("parquet", data_files=...)`
sees it without hive parsing. The set is written into a temporary folder and renamed into place
only when complete (manifest last): a crash never leaves a set that looks complete.

Formats:
    native  canonical columns + profile columns (k, n_correct, pass_rate, ci_low, ci_high) + the
            estimate (p_est, p_std)
    verl    data_source, prompt (messages), ability, reward_model {style: rule, ground_truth},
            extra_info {index, split, id, level, pass_rate, k, n_correct, p_est, p_std}: what
            the verl sampler (`grpo_data.integrations.verl`) starts its scheduler from
    trl     prompt (messages), solution (gold answer), id, level, k, n_correct, pass_rate, p_est, p_std:
            ready for a GRPO reward function and for `grpo_data.integrations.trl`

`pass_rate` stays the raw n_correct / k (and `ci_low`/`ci_high` its Jeffreys interval), as the profile
has it. verl and trl sets also carry that raw rate under the name public RL datasets use,
`avg@K_<model>` (`community_column`: K the most samples any problem got, the model's folder name).

With a `prior` (another model's published difficulty, `grpo_data.curriculum.priors`) the set also holds the
problems only the prior covers (their profile columns null), every format gains `prior_rate` (that
model's pass rate) and `prior_k` (the pseudo-samples it counts for), and `p_est` is estimated from
the evidence a scheduler starts from: own counts plus the prior's pseudo-counts moved by the offset
fitted between the two (`merge_offline`). The plug-ins (`grpo_data.integrations`) read both columns
back; the manifest's `prior` names the model, its samples, the weight and the offset.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections.abc import Collection, Sequence
from pathlib import Path

import numpy as np
import polars as pl

from grpo_data.curriculum.estimates import by_level, with_estimates
from grpo_data.curriculum.priors import Prior, at_fitted_weight, merge_offline
from grpo_data.tables import io
from grpo_data.tables.problems import level_array

FORMATS = ("native", "verl", "trl")
PRIOR_COLUMNS = ("prior_rate", "prior_k")  # another model's pass rate and the pseudo-samples it counts for
DEFAULT_EDGES = (0.0, 0.1, 0.3, 0.7, 0.9, 1.0)
MANIFEST = "manifest.json"


class ShardIntegrityError(RuntimeError):
    """A shard file is missing, truncated or modified relative to its manifest."""


def check_edges(edges: Sequence[float]) -> tuple[float, ...]:
    edges = tuple(float(e) for e in edges)
    if len(edges) < 2 or edges[0] != 0.0 or edges[-1] != 1.0 or any(b <= a for a, b in zip(edges, edges[1:])):
        raise ValueError(f"bucket edges must rise strictly from 0 to 1, got {list(edges)}")
    return edges


def bucket_of(rate: pl.Expr, edges: tuple[float, ...]) -> pl.Expr:
    """Index i with edges[i] <= p < edges[i+1]; p == 1 goes to the last bucket."""
    expr = pl.lit(len(edges) - 2, dtype=pl.Int32)
    for i in reversed(range(len(edges) - 2)):
        expr = pl.when(rate < edges[i + 1]).then(pl.lit(i, dtype=pl.Int32)).otherwise(expr)
    return expr


def community_column(profile_meta: dict, k) -> str:
    """`avg@K_<model>`: the pass-rate column name public RL datasets use (avg@16_qwen2.5-7b-style).
    K is the most samples any problem got (the profiler is adaptive: each problem's own count is in `k`)."""
    model = Path(str(profile_meta.get("model") or "model").rstrip("/")).name.lower()
    slug = re.sub(r"[^a-z0-9._-]+", "-", model).strip("-") or "model"
    return f"avg@{int(max(k, default=0))}_{slug}"


def to_format(table: pl.DataFrame, fmt: str, split: str = "train", avg_column: str = "") -> pl.DataFrame:
    """Joined problem+profile rows (with the estimate columns and `bucket`) in an export format;
    `avg_column` names the community-convention copy of the raw `pass_rate` in verl and trl sets
    (see `community_column`)."""
    avg = [pl.col("pass_rate").alias(avg_column)] if avg_column else []
    prior = [c for c in PRIOR_COLUMNS if c in table.columns]
    if fmt == "native":
        return table.select("id", "source", "prompt", "answer", "level", "meta", "k", "n_correct", "pass_rate",
                            "ci_low", "ci_high", "p_est", "p_std", *prior, "bucket")
    if fmt == "verl":
        return table.with_row_index("index").select(
            pl.col("source").alias("data_source"),
            "prompt",
            pl.lit("math").alias("ability"),
            pl.struct(pl.lit("rule").alias("style"), pl.col("answer").alias("ground_truth")).alias("reward_model"),
            pl.struct(pl.col("index").cast(pl.Int64), pl.lit(split).alias("split"), "id", "level", "pass_rate", "k",
                      "n_correct", "p_est", "p_std", *prior).alias("extra_info"),
            *avg,
            "bucket",
        )
    if fmt == "trl":
        return table.select("prompt", pl.col("answer").alias("solution"), "id", "level", "k", "n_correct",
                            "pass_rate", "p_est", "p_std", *prior, *avg, "bucket")
    raise ValueError(f"unknown format {fmt!r}; choose one of: {', '.join(FORMATS)}")


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def write_shards(problems: pl.DataFrame, profile: pl.DataFrame | None, out: str | Path,
                 edges: Sequence[float] = DEFAULT_EDGES, fmt: str = "native", source: str = "",
                 profile_meta: dict | None = None, rejected: dict[str, int] | None = None, extra: dict | None = None,
                 prior: Prior | None = None, left_out: Collection[str] = ()) -> dict:
    """Write the bucketed set atomically; returns the manifest. Problems are bucketed on `p_est`
    (see the module docstring), its prior fitted to the counts of the problems in the set, per level
    unless the profile ran with `prior_groups: none` (`profile_meta`). `extra` keys are added to the
    manifest (e.g. a pipeline's record of the inputs it was built from). `prior` (one row per row of
    `problems`) adds the problems only it covers; `profile` may then be None. `left_out`: ids the
    profile left out (their prompt does not fit the context; `grpo_data.tables.profile_table.rejects_file`), kept
    out of the set even where the prior has a value; the manifest counts them as rejected
    (`profile_meta`'s `left_out`)."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; choose one of: {', '.join(FORMATS)}")
    if profile is None and prior is None:
        raise ValueError("shards need a profile, a prior, or both")
    edges = check_edges(edges)
    out = Path(out)
    profile_cols = ("k", "n_correct", "pass_rate", "ci_low", "ci_high")
    if profile is None:
        profile = pl.DataFrame(schema={"id": pl.String, "k": pl.Int64, "n_correct": pl.Int64, "pass_rate": pl.Float64,
                                       "ci_low": pl.Float64, "ci_high": pl.Float64})
    if prior is not None and prior.fit_weight:  # the shards carry the weight the profile's own counts earned
        own = problems.select("id").join(profile.select("id", "n_correct", "k"), on="id", how="left")
        prior = at_fitted_weight(tuple(own[name].cast(pl.Float64).fill_null(np.nan).to_numpy()
                                       for name in ("n_correct", "k")), prior)
    if prior is not None:  # the prior's columns ride on the problem rows they were read from
        problems = problems.with_columns(pl.Series("prior_rate", prior.rate).fill_nan(None),
                                         pl.Series("prior_k", prior.k).fill_nan(None))
    if left_out:  # rejected by the profile: a prior value does not make their prompt fit
        problems = problems.filter(~pl.col("id").is_in(pl.Series(list(left_out), dtype=pl.String).implode()))
    joined = problems.join(profile.select("id", *profile_cols), on="id", how="left" if prior is not None else "inner")
    offset = 0.0
    if prior is not None:
        own = [joined[name].cast(pl.Float64).fill_null(np.nan).to_numpy() for name in ("n_correct", "k")]
        rate, pk = (joined[name].fill_null(np.nan).to_numpy() for name in PRIOR_COLUMNS)
        view = Prior(prior.source, rate, pk, np.inf)
        (c, k), _, offset = merge_offline((own[0], own[1]), view)
        joined = joined.with_columns(pl.Series("_c", c), pl.Series("_k", k)).filter(pl.Series(np.isfinite(k)))
    per_level = by_level(profile_meta) and level_array(joined) is not None
    joined = joined.sort("id")
    if prior is not None:  # estimated on the evidence a scheduler starts from; the profile columns stay its own
        est = with_estimates(joined.select("level", pl.col("_c").alias("n_correct"), pl.col("_k").alias("k")), per_level)
        joined = joined.with_columns(est["p_est"], est["p_std"]).drop("_c", "_k")
    else:
        joined = with_estimates(joined, per_level)
    joined = joined.with_columns(bucket_of(pl.col("p_est"), edges).alias("bucket"))
    unprofiled = problems.height - joined.height
    avg_column = community_column(profile_meta or {}, joined["k"].drop_nulls()) if fmt != "native" and profile.height else ""
    exported = to_format(joined, fmt, avg_column=avg_column)
    files, counts = {}, {}
    with io.atomic_folder(out) as tmp:
        for b in range(len(edges) - 1):
            part = exported.filter(pl.col("bucket") == b)
            counts[str(b)] = part.height
            rel = f"bucket={b}/data.parquet"
            io.write_parquet(tmp / rel, part)
            files[rel] = {"sha256": sha256_file(tmp / rel), "bytes": (tmp / rel).stat().st_size, "rows": part.height}
        manifest = {
            "format": fmt, "edges": list(edges),
            "estimate": {"column": "p_est", "prior": "per level" if per_level else "pool"},
            "buckets": {str(b): {"lo": edges[b], "hi": edges[b + 1], "rows": counts[str(b)]} for b in range(len(edges) - 1)},
            "rows": exported.height, "files": files,
            "schema": {name: str(dtype) for name, dtype in exported.schema.items()},
            "source": source, "profile": profile_meta or {}, "avg_column": avg_column,
            **({"prior": {**prior.describe(), "offset_from_profile": offset,
                          "alone": int(joined["k"].null_count())}} if prior is not None else {}),
            # problems the profile left out (prompt over the engine's context) are rejected rows, by reason
            "unprofiled": unprofiled, "rejected": {**(rejected or {}), **(profile_meta or {}).get("left_out", {})},
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            **(extra or {}),
        }
        io.write_json(tmp / MANIFEST, manifest)  # last: a folder without it is not a shard set
    return manifest


def read_manifest(folder: str | Path) -> dict:
    path = Path(folder) / MANIFEST
    if not path.exists():
        raise ShardIntegrityError(f"{folder}: no {MANIFEST}; not a complete shard set (write it with `grpo shards`)")
    return json.loads(path.read_text())


def verify_shards(folder: str | Path, buckets: Sequence[int] | None = None) -> dict:
    """Check size and sha256 of every (selected) file against the manifest; raise naming the file."""
    folder = Path(folder)
    manifest = read_manifest(folder)
    for rel, info in manifest["files"].items():
        bucket = int(rel.split("=")[1].split("/")[0])
        if buckets is not None and bucket not in buckets:
            continue
        path = folder / rel
        if not path.exists():
            raise ShardIntegrityError(f"{path}: listed in the manifest but missing")
        size = path.stat().st_size
        if size != info["bytes"]:
            raise ShardIntegrityError(f"{path}: {size} bytes, manifest says {info['bytes']} (truncated or replaced); "
                                      "rebuild the set with `grpo shards`")
        if sha256_file(path) != info["sha256"]:
            raise ShardIntegrityError(f"{path}: sha256 differs from the manifest (modified); rebuild with `grpo shards`")
    return manifest


def read_shards(folder: str | Path, buckets: Sequence[int] | None = None) -> pl.DataFrame:
    """All rows of the (selected) buckets, after verifying their files."""
    manifest = verify_shards(folder, buckets)
    chosen = [rel for rel in manifest["files"]
              if buckets is None or int(rel.split("=")[1].split("/")[0]) in buckets]
    return pl.concat([pl.read_parquet(Path(folder) / rel) for rel in chosen])
