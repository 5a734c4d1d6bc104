"""How the band scheduler picks problems among candidates, as pure functions of arrays and a
random generator (the scheduler in `grpo_data.curriculum.band_scheduler` computes the posteriors
and hands them in):

- `uniform_offerable`: distinct problems drawn uniformly among those offerable (explore, top-ups);
- `select_in_band`: a batch among the candidates by P(in band), a posterior draw or the posterior mean;
- `select_dry`: a batch when the band is dry, its likely members first, the rest by informativeness;
- `refresh_picks`: the problems worth re-estimating, the stalest and the least sure.

Each draws from `rng` in the same order as the scheduler always has, so a seeded run repeats.
"""

from __future__ import annotations

import numpy as np

from grpo_data.curriculum.band_math import gumbel_top
from grpo_data.curriculum.stats import GRID

LIKELY = 0.5  # P(in band) from which a problem counts as in band: the profiler's decision rule


def uniform_offerable(rng: np.random.Generator, m: int, n: int, exclude: np.ndarray,
                      used: np.ndarray | None = None, n_used: int = 0) -> np.ndarray:
    """Up to m distinct problems of 0..n-1 drawn uniformly among those not in `exclude` (distinct)
    and, when `used` (a (n,) mask with `n_used` set) is given, not yet used: by rejection while the
    pool is mostly free, else from the free list."""
    m = min(m, (n - n_used if used is not None else n) - exclude.size)
    out = np.zeros(0, dtype=np.int64)
    for _ in range(8):
        if out.size >= m:
            break
        draw = rng.integers(0, n, 2 * (m - out.size) + 8)
        keep = ~np.isin(draw, exclude) & ~np.isin(draw, out)
        if used is not None:
            keep &= ~used[draw]
        draw = draw[keep]
        first = np.sort(np.unique(draw, return_index=True)[1])  # distinct, in the order drawn
        out = np.concatenate([out, draw[first][: m - out.size]])
    if out.size < m:  # the pool is nearly used up: enumerate what is left
        free = np.flatnonzero(~used) if used is not None else np.arange(n)
        rest = np.setdiff1d(free, np.concatenate([exclude, out]))
        out = np.concatenate([out, rng.choice(rest, size=m - out.size, replace=False)])
    return out


def select_in_band(post: np.ndarray, values: np.ndarray, q: np.ndarray, k: int, lo: float, hi: float,
                   selection: str, temperature: float, rng: np.random.Generator) -> np.ndarray:
    """Positions of k of M candidates, from their posteriors `post` over the pass rates `values`
    (both (M, G)) and their P(in band) `q` (M,): "band" draws in proportion to q ** (1 / temperature)
    (Gumbel top-k); "thompson" takes first those whose posterior draw lies in [lo, hi], "mean" those
    whose posterior mean does (ties at random)."""
    if selection == "band":
        return gumbel_top(np.log(np.maximum(q, 1e-300)) / temperature, k, rng)
    if selection == "thompson":  # one plausible pass rate per candidate
        u = rng.random(q.size)
        col = np.minimum((np.cumsum(post, axis=1) < u[:, None]).sum(axis=1), GRID.size - 1)
        value = values[np.arange(q.size), col]
    else:
        value = (post * values).sum(axis=1)
    out_of_band = (value < lo) | (value > hi)
    return np.argsort(out_of_band + 0.5 * rng.random(q.size), kind="stable")[:k]  # in band first


def select_dry(q: np.ndarray, e: np.ndarray, k: int, temperature: float, skip_below: float | None,
               rng: np.random.Generator) -> tuple[np.ndarray, int]:
    """Positions of k of M candidates when the band is dry, and how many of them the fill took: those
    likely in band (q >= LIKELY) first, drawn as `select_in_band`'s "band" draws, the rest in
    proportion to their expected informativeness `e` (M,) ** (1 / temperature). With `skip_below`
    (epoch "pass"), every candidate worth generating (e >= skip_below) ranks before any that is not."""
    likely = np.flatnonzero(q >= LIKELY)
    rest = np.flatnonzero(q < LIKELY)
    top = likely[gumbel_top(np.log(np.maximum(q[likely], 1e-300)) / temperature, k, rng)]
    key = np.log(np.maximum(e[rest], 1e-300)) / temperature
    if skip_below is not None:
        key = key + np.where(e[rest] >= skip_below, 1e6, 0.0)
    fill = rest[gumbel_top(key, k - top.size, rng)]
    return np.concatenate([top, fill]), int(fill.size)


def refresh_picks(rng: np.random.Generator, m: int, age: np.ndarray, score: np.ndarray) -> np.ndarray:
    """Up to m distinct problems worth re-estimating, from each problem's steps since its last outcome
    `age` (N,) and its proposal score `score` (N,): half the stalest (ties, such as all the problems
    never sampled, broken at random), half those whose band decision is least sure (score nearest
    LIKELY; ties at random too)."""
    n = age.size
    m = min(int(m), n)
    staleness = age + rng.random(n)  # whole steps; the fraction breaks ties
    half = m // 2
    stale = np.argpartition(-staleness, half - 1)[:half] if half else np.zeros(0, dtype=np.int64)
    stale = stale[np.argsort(-staleness[stale])]
    unsure = np.abs(score - LIKELY) + 1e-9 * rng.random(n)
    unsure[stale] = np.inf
    rest = m - half
    near = np.argpartition(unsure, rest - 1)[:rest] if rest else np.zeros(0, dtype=np.int64)
    return np.concatenate([stale, near[np.argsort(unsure[near])]])
