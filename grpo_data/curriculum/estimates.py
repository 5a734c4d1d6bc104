"""Each problem's pass-rate estimate: what shards bucket on and cards and plots draw.

    table = with_estimates(profile.join(problems.select("id", "level"), on="id", how="left"))
    # + p_est, p_std

The raw rate n_correct / k of an adaptive profile is mostly a 2-sample screen: 0, 0.5 or 1. The
estimate is instead the posterior mean of the pass rate under the empirical-Bayes grid prior the
profiler's adaptive decisions use (`grpo_data.curriculum.stats.level_posteriors`): fitted to the counts of
the table's problems, one per level (shrunk toward the pool's) when the table has levels and the
profile was run with `prior_groups: level`, else one for the pool. A problem screened 1 of 2 in a
level where nearly every problem is 0 of 2 is estimated low, as the profiler decided it; the same
screen in a level full of problems near 0.5 is estimated near 0.5.

Columns (float64):
    p_est   posterior mean of the pass rate
    p_std   posterior standard deviation (how far the estimate may be off, under the fitted prior)
"""

from __future__ import annotations

import numpy as np
import polars as pl

from grpo_data.curriculum.stats import grid_mean_std, level_posteriors
from grpo_data.tables.problems import level_array

ESTIMATE_COLUMNS = ("p_est", "p_std")


def by_level(profile_meta: dict | None) -> bool:
    """Whether the profile's adaptive decisions used per-level priors (its `prior_groups`, default level)."""
    return ((profile_meta or {}).get("config") or {}).get("prior_groups", "level") != "none"


def posteriors(table: pl.DataFrame, per_level: bool = True) -> np.ndarray:
    """(N, G) grid posterior of each row's pass rate from its `n_correct`, `k` and (with `per_level`,
    when the table has a `level` column that is not all null) `level`."""
    levels = level_array(table) if per_level else None
    return level_posteriors(table["n_correct"].to_numpy(), table["k"].to_numpy(), levels)


def with_estimates(table: pl.DataFrame, per_level: bool = True) -> pl.DataFrame:
    """`table` (n_correct, k, optional level) with p_est and p_std added (see the module docstring)."""
    mean, std = grid_mean_std(posteriors(table, per_level))
    return table.with_columns(pl.Series("p_est", mean, dtype=pl.Float64), pl.Series("p_std", std, dtype=pl.Float64))


def profile_estimates(profile: pl.DataFrame, levels: pl.DataFrame | None = None, per_level: bool = True) -> pl.DataFrame:
    """A profile table (id, n_correct, k, ...) with the estimate columns; each problem's level is
    joined by id from `levels` (id, level; e.g. the problem table) when given, else one pool prior."""
    if levels is not None:
        profile = profile.join(levels.select("id", "level"), on="id", how="left")
    return with_estimates(profile, per_level and levels is not None)
