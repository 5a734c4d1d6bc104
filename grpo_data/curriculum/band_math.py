"""The band scheduler's math, as small pure functions over numpy arrays (no scheduler state).

Conventions, stated once:
- A problem's evidence is effective counts (successes s, failures f): offline and online outcomes,
  each weighted by decay ** its age in policy steps.
- Pass rates live on `stats.GRID` (41 points). A difficulty group has a prior `weights` (G,) over
  the grid and a drift: how far, in logit, its problems' pass rates have moved since its frame was
  last rebased. Evidence is expressed in that frame, so a problem's posterior over the grid is
  weights * GRID^s (1 - GRID)^f, exactly `stats.grid_posterior`, and grid point j stands for the
  current pass rate shifted_grid(drift)[j].
"""

from __future__ import annotations

import numpy as np

from grpo_data.curriculum.stats import (
    GRID,
    fit_grid_prior,
    fit_grid_prior_counts,
    fit_group_priors,
    grid_in_band,
    grid_posterior_mean,
)

CELL_QUANTUM = 0.5  # whole-pool scores and prior refits round effective counts to half samples ...
CELL_CAP = 64.0  # ... and scale a total above 64 samples down to 64 (the likelihood is sharp by then)
CELLS = int(CELL_CAP / CELL_QUANTUM) + 1  # rounded values per count
EDGE = 0.5 * (GRID[1] - GRID[0])  # the grid's end points move under a shift as points this far inside do


def offline_evidence(n_correct, k, max_prior_k: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Offline counts as starting (successes, failures); with max_prior_k, scaled down to at most
    that many samples. NaN counts (unprofiled problems) contribute nothing."""
    c = np.nan_to_num(np.asarray(n_correct, dtype=np.float64))
    k = np.nan_to_num(np.asarray(k, dtype=np.float64))
    scale = np.ones_like(k) if max_prior_k is None else np.minimum(1.0, max_prior_k / np.maximum(k, 1e-12))
    return c * scale, (k - c) * scale


def profiled(offline) -> np.ndarray | None:
    """Mask of problems with offline counts (k > 0), or None without a profile."""
    if offline is None:
        return None
    c, k = (np.asarray(x, dtype=np.float64) for x in offline)
    return np.isfinite(c) & np.isfinite(k) & (k > 0)


def difficulty_groups(n: int, offline: tuple[np.ndarray, np.ndarray] | None = None, level=None,
                      buckets: int = 5) -> np.ndarray:
    """Group id per problem; the scheduler fits one prior per group. With `level`: the level, as the
    profiler groups its priors (a missing level, NaN or negative, is a level of its own). Without:
    the offline-estimate bucket, `buckets` equal widths of each problem's posterior-mean pass rate
    under the pool's fitted prior (a 0/2 screen lands with the hard problems, not at 0.5), with
    unprofiled problems a bucket of their own. Without either: one group."""
    if level is not None:
        lv = np.asarray(level, dtype=np.float64)
        lv = np.where(np.isfinite(lv) & (lv >= 0), lv, -1.0)
        return np.unique(lv, return_inverse=True)[1].reshape(-1).astype(np.int64)
    seen = profiled(offline)
    if seen is None or not seen.any():
        return np.zeros(n, dtype=np.int64)
    c, k = (np.asarray(x, dtype=np.float64)[seen] for x in offline)
    pairs, inverse = np.unique(np.stack([c, k], axis=1), axis=0, return_inverse=True)  # one posterior per distinct count
    est = grid_posterior_mean(pairs[:, 0], pairs[:, 1], fit_grid_prior(c, k))[inverse.reshape(-1)]
    bucket = np.full(n, buckets, dtype=np.int64)
    bucket[seen] = np.minimum((est * buckets).astype(np.int64), buckets - 1)
    return bucket


def starting_priors(offline, group: np.ndarray, n_groups: int, shrink: float,
                    per_group: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """((n_groups, G) per-group grid priors, (G,) pool prior): the profiler's fit of the profiled
    problems' counts (stats.fit_group_priors, or fit_grid_prior for one group: the same functions
    as stats.row_priors, so the same decisions); a group without a profiled problem takes the
    pool's. Without a profile: flat. With `per_group` False (groups that are buckets of these same
    counts, not an outside label such as a level) every group starts from the pool's prior, as the
    profiler decides without levels: a prior fitted inside a bucket cut from the counts it is fitted
    to collapses onto the bucket and would hold its problems there against online evidence."""
    seen = profiled(offline)
    if seen is None or not seen.any():
        flat = np.full(GRID.size, 1.0 / GRID.size)
        return np.tile(flat, (n_groups, 1)), flat
    c, k = (np.asarray(x, dtype=np.float64)[seen] for x in offline)
    pool = fit_grid_prior(c, k)
    if n_groups == 1 or not per_group:  # one prior for the pool, as the profiler fits it without groups
        return np.tile(pool, (n_groups, 1)), pool
    keys, fitted = fit_group_priors(c, k, group[seen], shrink=shrink)
    weights = np.tile(pool, (n_groups, 1))
    weights[keys] = fitted
    return weights, pool


def decay_factor(decay: float, ages: np.ndarray) -> np.ndarray:
    """decay ** ages: the weight left to evidence `ages` steps old."""
    ages = np.asarray(ages, dtype=np.int64)
    if ages.size > 4096:  # a whole pool: few distinct ages, so look them up
        return np.power(decay, np.arange(int(ages.max()) + 1, dtype=np.float64))[ages]
    return np.power(decay, ages.astype(np.float64))


# ---------------------------------------------------------------------------- drift
def logit(p):
    """log(p / (1 - p))."""
    return np.log(p) - np.log1p(-p)


def expit(x):
    return 0.5 * (1.0 + np.tanh(0.5 * np.asarray(x)))  # 1 / (1 + exp(-x)), without overflow


def shifted_grid(shift) -> np.ndarray:
    """(..., G) pass rates the grid points move to when a group's logit shifts by `shift` (...):
    sigmoid(logit(p) + shift), increasing in p. The end points 0 and 1 move as the points half a grid
    step inside do, so no pass rate is frozen by the shift; at shift 0 this is GRID exactly."""
    shift = np.asarray(shift, dtype=np.float64)[..., None]
    inner = np.clip(GRID, EDGE, 1 - EDGE)
    moved = np.clip(expit(logit(inner) + shift) + (GRID - inner), 0.0, 1.0)
    return np.where(shift == 0, GRID, moved)


def band_columns(shift, lo: float, hi: float) -> tuple[np.ndarray, np.ndarray]:
    """(first, last) grid columns (...) whose shifted pass rates lie in [lo, hi]: a contiguous range,
    since the shift keeps the grid's order; first > last when none does."""
    values = shifted_grid(shift)
    inside = grid_in_band(values, lo, hi)  # (..., G)
    first = np.where(inside.any(axis=-1), np.argmax(inside, axis=-1), GRID.size)
    last = GRID.size - 1 - np.argmax(inside[..., ::-1], axis=-1)
    return first, last


def band_mass(post: np.ndarray, first: np.ndarray, last: np.ndarray) -> np.ndarray:
    """(M,) sum of each row of post (M, G) over its columns first..last (M,). Rows are summed as numpy
    sums a column selection, so a row whose range is the unshifted band's equals
    stats.grid_prob_in_band bit for bit (the scheduler's step-0 decisions are the profiler's)."""
    out = np.zeros(post.shape[0])
    ranges, which = np.unique(first * GRID.size + last, return_inverse=True)  # few distinct ranges (one per drift)
    for r, code in enumerate(ranges.tolist()):
        a, b = divmod(code, GRID.size)
        if a <= b:
            rows = which.reshape(-1) == r
            out[rows] = post[rows][:, np.arange(a, b + 1)].sum(axis=1)  # a contiguous copy, as a column mask gives
    return out


def drift_step(p_mean: np.ndarray, slope: np.ndarray, n_correct: np.ndarray, group_size: np.ndarray,
               group: np.ndarray, n_groups: int, kappa: float) -> np.ndarray:
    """Newton step on each group's logit drift from one batch of outcomes: the summed residual
    c - G E[p] over the summed information G E[p (1 - p)] (the derivative of E[p] in the shift),
    plus kappa (shrinks the steps of groups seen on few problems). All arrays (B,) but the result
    (n_groups,)."""
    resid = np.bincount(group, weights=n_correct - group_size * p_mean, minlength=n_groups)
    info = np.bincount(group, weights=group_size * slope, minlength=n_groups)
    return resid / (info + kappa)


def transport(successes: np.ndarray, failures: np.ndarray, shift) -> tuple[np.ndarray, np.ndarray]:
    """Evidence about a pass rate p re-expressed about sigmoid(logit(p) + shift): the same strength,
    its (half-sample smoothed) rate moved by `shift` in logit space. Shifts compose (by a, then b,
    is by a + b, but for clipping at 0 successes or failures); shift 0 changes nothing."""
    shift = np.broadcast_to(np.asarray(shift, dtype=np.float64), np.shape(successes))
    n = successes + failures
    rate = expit(logit((successes + 0.5) / (n + 1.0)) + shift)
    moved = np.clip(rate * (n + 1.0) - 0.5, 0.0, n)
    s = np.where(shift == 0, successes, moved)
    return s, np.where(shift == 0, failures, n - s)


def push_forward(weights: np.ndarray, shift: float) -> np.ndarray:
    """A grid prior (G,) moved by a logit shift: each point's mass lands at shifted_grid(shift) and is
    split between the two grid points around it in proportion to closeness (the mean moves, the
    total stays 1)."""
    if shift == 0:
        return weights.copy()
    pos = shifted_grid(shift) / (GRID[1] - GRID[0])  # fractional grid index (a uniform grid)
    below = np.minimum(np.floor(pos).astype(np.int64), GRID.size - 1)
    frac = pos - below
    out = np.bincount(below, weights=weights * (1 - frac), minlength=GRID.size)
    return out + np.bincount(np.minimum(below + 1, GRID.size - 1), weights=weights * frac, minlength=GRID.size)


# ---------------------------------------------------------------------------- whole-pool cells
def count_cells(successes: np.ndarray, failures: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Effective counts in units of CELL_QUANTUM, their total capped at CELL_CAP (both scaled by the
    same factor): problems with nearly the same evidence share one cell, so a whole pool's scores
    and prior refits cost one likelihood row per cell, not per problem."""
    total = successes + failures
    scale = np.minimum(1.0, CELL_CAP / np.maximum(total, 1e-12)) / CELL_QUANTUM
    s = np.minimum(np.rint(successes * scale), CELLS - 1).astype(np.int64)
    f = np.minimum(np.rint(failures * scale), CELLS - 1).astype(np.int64)
    return s, f


def refit_group_priors(successes, failures, group, mult, weights: np.ndarray, pool: np.ndarray,
                       shrink: float, iters: int, per_group: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Per-group grid priors refitted to current evidence, given as distinct (successes, failures,
    group) cells with `mult` problems each: EM warm-started from `weights` / `pool`, each group
    shrunk toward the pool by shrink / (problems + shrink), as `stats.fit_group_priors` does
    (`per_group` False: the pool's refit for every group, see `starting_priors`).
    Cells without evidence are left out: a flat likelihood row only slows EM down."""
    k = successes + failures
    pool = fit_grid_prior_counts(successes, k, mult, init=pool, iters=iters)
    out = np.tile(pool, (weights.shape[0], 1))
    if not per_group:
        return out, pool
    for g in np.unique(group):
        mine = group == g
        lam = shrink / (mult[mine].sum() + shrink)
        fit = fit_grid_prior_counts(successes[mine], k[mine], mult[mine], init=weights[g], iters=iters)
        out[g] = (1 - lam) * fit + lam * pool
    return out, pool


def gumbel_top(log_weight: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    """Positions of k items drawn without replacement with probability proportional to
    exp(log_weight) (the Gumbel top-k trick: one sort instead of k renormalized draws)."""
    key = log_weight - np.log(-np.log(rng.random(log_weight.size)))
    return np.argsort(-key, kind="stable")[:k]
