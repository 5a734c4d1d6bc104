"""A profile as a table: its columns (PROFILE_COLUMNS; which a profile must have, REQUIRED_COLUMNS),
reading one back with its run metadata (`read_profile`), and the problems it left out beside it
(`rejects_file`, `read_rejects`). Writing one is the profiler's (`grpo_data.profile_parts.merge_parts`);
reading one loads neither an engine nor the verifier, so a card, a shard set or a report can."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl

from grpo_data.generation.context import LEFT_OUT_SCHEMA
from grpo_data.tables.exports import METADATA_KEY, ROUND_SCHEMA
from grpo_data.verify.verdict import REASONS

PROFILE_COLUMNS = [
    "id", "k", "n_correct", "pass_rate", "post_a", "post_b", "post_mean", "ci_low", "ci_high",
    "mean_completion_tokens", "truncation_rate", *[f"n_{r}" for r in REASONS], "n_formatted", "max_tokens",
    "k_rounds", "n_correct_rounds",
]
# profiles written before these existed still read; max_tokens: the completion budget the problem was
# sampled with (the run's, or clipped to fit the context); k_rounds / n_correct_rounds: list[int] per round
OPTIONAL_COLUMNS = ("n_formatted", "max_tokens", *ROUND_SCHEMA)
REQUIRED_COLUMNS = [c for c in PROFILE_COLUMNS if c not in OPTIONAL_COLUMNS]


def read_profile(path: str | Path) -> tuple[pl.DataFrame, dict]:
    """A profile table and its run metadata."""
    table = pl.read_parquet(path)
    missing = [c for c in REQUIRED_COLUMNS if c not in table.columns]
    if missing:
        raise ValueError(f"{path}: not a profile (missing columns {missing}); write one with `grpo profile`")
    meta = pl.read_parquet_metadata(path).get(METADATA_KEY)
    return table, json.loads(meta) if meta else {}


def rejects_file(out: str | Path) -> Path:
    """The profile's left-out problems, beside it: NAME.rejects.jsonl."""
    return Path(out).with_suffix(".rejects.jsonl")


def read_rejects(out: str | Path) -> pl.DataFrame:
    """LEFT_OUT_SCHEMA rows of a merged profile's left-out problems (`rejects_file(out)`); none when
    the file does not exist (a profile written before it did, or one that left nothing out)."""
    path = rejects_file(out)
    if not path.exists() or not path.stat().st_size:
        return pl.DataFrame(schema=LEFT_OUT_SCHEMA)
    return pl.read_ndjson(path, schema=LEFT_OUT_SCHEMA)
