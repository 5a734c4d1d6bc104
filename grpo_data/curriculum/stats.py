"""Pass-rate statistics: Beta posteriors, credible intervals, band probabilities, the stopping rule.

Pure numpy/scipy functions, vectorized over problems. Conventions, stated once:

- A problem's pass rate p is the probability that one sample at the profiling settings verifies
  as correct. Observing c correct of k samples gives the posterior Beta(a0 + c, b0 + k - c).
- Default prior: Jeffreys, Beta(1/2, 1/2): non-informative and well-calibrated at p near 0 or 1,
  where most problems of a real dataset sit.
- Intervals are equal-tailed credible intervals of that posterior.
- "In band" means lo <= p <= hi (default 0.2..0.8, the groups that teach).
- Adaptive decisions may instead use an empirical-Bayes prior: a discrete distribution of pass
  rates on a grid, fitted by EM (the nonparametric MLE) to the counts of the whole pool. Real
  pools are mostly near 0 or 1; a prior that knows it decides 0/4 "out of band" at once, where the
  flat Jeffreys prior still gives it a 17% chance of lying in the band.
- A problem's pass-rate estimate (what shards bucket on and cards draw) is its posterior mean
  under that empirical-Bayes prior, fitted per level (`level_posteriors`): a 1/2 screen in a level
  where nearly everything is 0/2 is estimated low, not 0.5.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import betainc, betaincinv

JEFFREYS = (0.5, 0.5)


def posterior(n_correct, k, prior: tuple[float, float] = JEFFREYS) -> tuple[np.ndarray, np.ndarray]:
    """(a, b) of the Beta posterior for c correct out of k."""
    c = np.asarray(n_correct, dtype=np.float64)
    k = np.asarray(k, dtype=np.float64)
    if np.any(c < 0) or np.any(c > k):
        raise ValueError("n_correct must lie in [0, k]")
    return prior[0] + c, prior[1] + (k - c)


def beta_mean(a, b) -> np.ndarray:
    return np.asarray(a) / (np.asarray(a) + np.asarray(b))


def beta_std(a, b) -> np.ndarray:
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return np.sqrt(a * b / ((a + b) ** 2 * (a + b + 1)))


def credible_interval(a, b, mass: float = 0.9) -> tuple[np.ndarray, np.ndarray]:
    """Equal-tailed interval holding `mass` of Beta(a, b)."""
    tail = (1.0 - mass) / 2.0
    return betaincinv(a, b, tail), betaincinv(a, b, 1.0 - tail)


def prob_in_band(a, b, lo: float, hi: float) -> np.ndarray:
    """P(lo <= p <= hi) under Beta(a, b)."""
    return betainc(a, b, hi) - betainc(a, b, lo)


def expected_signal(a, b) -> np.ndarray:
    """E[p(1-p)] under Beta(a, b): how much a GRPO group on this problem is expected to teach."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return a * b / ((a + b) * (a + b + 1))


GRID = np.arange(41) / 40  # exact as decimals (38 / 40 == 0.95; linspace gives 0.9500000000000001)
EDGE_TOL = 1e-9  # band edges are compared with this slack: a band widened to 0.15000000000000002 keeps 0.15


def grid_in_band(grid: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """Which grid pass rates lie in [lo, hi], edges included (up to float noise in lo, hi)."""
    return (grid >= lo - EDGE_TOL) & (grid <= hi + EDGE_TOL)


def _likelihood(n_correct, k, grid: np.ndarray) -> np.ndarray:
    """(N, G) binomial likelihood of each problem's counts at each grid pass rate (constant dropped)."""
    c = np.asarray(n_correct, dtype=np.float64)[:, None]
    k = np.asarray(k, dtype=np.float64)[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        log_l = c * np.log(grid) + (k - c) * np.log1p(-grid)  # (N, G)
    log_l = np.where(np.isnan(log_l), 0.0, log_l)  # 0 * log(0) = 0
    log_l -= log_l.max(axis=1, keepdims=True)
    return np.exp(log_l)


def fit_grid_prior(n_correct, k, grid: np.ndarray = GRID, iters: int = 300, floor: float = 1e-3) -> np.ndarray:
    """EM estimate of the pool's pass-rate distribution on `grid` (weights summing to 1).

    `floor` mixes in a little of the uniform distribution so no pass rate is ever ruled out
    entirely by a small pool. Problems with the same (n_correct, k) share one likelihood row, so
    the cost grows with the number of distinct counts, not with the pool."""
    c, k = np.asarray(n_correct, dtype=np.float64), np.asarray(k, dtype=np.float64)
    if c.size == 0:
        return np.full(grid.shape, 1.0 / grid.size)
    uniq_c, uniq_k, mult = distinct_counts(c, k)
    return fit_grid_prior_counts(uniq_c, uniq_k, mult, grid=grid, iters=iters, floor=floor)


def distinct_counts(n_correct: np.ndarray, k: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distinct (n_correct, k) pairs sorted by n_correct then k, and how often each occurs. Whole
    counts (a profile's) sort as one integer key, much faster on a million problems than sorting
    rows; anything else sorts rows."""
    whole = np.all(n_correct == np.round(n_correct)) and np.all(k == np.round(k)) and n_correct.min() >= 0
    if whole and k.max() < 2**31:
        key = n_correct.astype(np.int64) * (int(k.max()) + 1) + k.astype(np.int64)
        uniq, mult = np.unique(key, return_counts=True)
        return (uniq // (int(k.max()) + 1)).astype(np.float64), (uniq % (int(k.max()) + 1)).astype(np.float64), mult
    uniq, mult = np.unique(np.stack([n_correct, k], axis=1), axis=0, return_counts=True)
    return uniq[:, 0], uniq[:, 1], mult


def fit_grid_prior_counts(n_correct, k, mult, init: np.ndarray | None = None, grid: np.ndarray = GRID,
                          iters: int = 300, floor: float = 1e-3) -> np.ndarray:
    """fit_grid_prior on distinct counts given with their multiplicities `mult` (U,). `init`
    (G,) warm-starts EM from an earlier fit (default uniform): a prior refitted as counts trickle
    in needs a few iterations from the last fit, not hundreds from scratch."""
    lik = _likelihood(n_correct, k, grid)  # (U, G)
    mult = np.asarray(mult, dtype=np.float64)
    share = mult / mult.sum()  # (U,)
    w = np.full(grid.shape, 1.0 / grid.size) if init is None else np.asarray(init, dtype=np.float64)
    for _ in range(iters):
        post = lik * w  # (U, G)
        post /= post.sum(axis=1, keepdims=True)
        w = share @ post
    w = (1 - floor) * w + floor / grid.size
    return w / w.sum()


def fit_group_priors(n_correct, k, groups, shrink: float = 20.0, grid: np.ndarray = GRID) -> tuple[np.ndarray, np.ndarray]:
    """Empirical-Bayes grid priors per group (e.g. per level): (group keys, weights (n_groups, G)).

    Each group's EM fit is shrunk toward the whole pool's by shrink / (n_group + shrink), so a
    group seen on a few problems borrows from the pool and a large one speaks for itself."""
    c, k, groups = np.asarray(n_correct), np.asarray(k), np.asarray(groups)
    pool = fit_grid_prior(c, k, grid)
    keys, inv = np.unique(groups, return_inverse=True)
    weights = np.empty((keys.size, grid.size))
    for j in range(keys.size):
        mine = inv == j
        lam = shrink / (mine.sum() + shrink)
        weights[j] = (1 - lam) * fit_grid_prior(c[mine], k[mine], grid) + lam * pool
    return keys, weights


def grid_likelihood(n_correct, k, grid: np.ndarray = GRID) -> np.ndarray:
    """(N, G) binomial likelihood of each problem's counts at each grid pass rate, scaled so each
    row's largest is 1 (constant dropped). grid_posterior is this times the prior, normalized; a
    caller that reuses likelihood rows under changing priors normalizes the same way."""
    return _likelihood(n_correct, k, grid)


def grid_posterior(n_correct, k, weights: np.ndarray, grid: np.ndarray = GRID) -> np.ndarray:
    """(N, G) posterior over `grid` of each problem's pass rate, rows summing to 1, under the grid
    prior `weights`: one (G,) for every problem, or (N, G), one row per problem."""
    post = _likelihood(n_correct, k, grid) * weights  # (N, G)
    return post / post.sum(axis=1, keepdims=True)


def grid_prob_in_band(n_correct, k, weights: np.ndarray, lo: float, hi: float, grid: np.ndarray = GRID) -> np.ndarray:
    """P(lo <= p <= hi | counts) under the grid prior `weights` ((G,) or (N, G))."""
    inside = grid_in_band(grid, lo, hi)
    return grid_posterior(n_correct, k, weights, grid)[:, inside].sum(axis=1)


def grid_posterior_mean(n_correct, k, weights: np.ndarray, grid: np.ndarray = GRID) -> np.ndarray:
    """(N,) E[p | counts] under the grid prior `weights` ((G,) or (N, G))."""
    return grid_posterior(n_correct, k, weights, grid) @ grid


def grid_mean_std(post: np.ndarray, grid: np.ndarray = GRID) -> tuple[np.ndarray, np.ndarray]:
    """(N,) mean and (N,) standard deviation of (N, G) grid posteriors. A standard deviation rather
    than a quantile interval: the grid posterior is discrete, and an equal-tailed interval of one with
    96% of its mass on p = 1 is [1, 1], excluding its own mean."""
    mean = post @ grid
    var = post @ grid**2 - mean**2
    return mean, np.sqrt(np.maximum(var, 0.0))  # clip rounding below zero


def grid_all_same(post: np.ndarray, group_size: int, grid: np.ndarray = GRID) -> np.ndarray:
    """(N,) E[p^G + (1-p)^G] under (N, G) grid posteriors: the chance that a group of `group_size`
    answers to the problem comes back all right or all wrong, the group GRPO learns nothing from."""
    return post @ (grid ** group_size + (1.0 - grid) ** group_size)


# The target band for a pass rate, written once: BandConfig, the stopping rule, the trainer's scheduler
# section, the profile command and the plug-ins all default to it.
DEFAULT_BAND: tuple[float, float] = (0.2, 0.8)
# G, answers sampled per prompt, written once: the trainer's rollout section, BandConfig (the G a dry
# band's fill scores) and the cards' all-right/all-wrong shares default to it.
DEFAULT_GROUP_SIZE = 8


@dataclass(frozen=True)
class StoppingRule:
    """Sequential sampling toward a decision on band membership.

    Sample `screen_k` per problem; then, while a problem's P(in band) lies strictly between
    1 - confidence and confidence, sample `step_k` more, up to `max_k`. The band decision at the
    stop is P(in band) >= 0.5. P(in band) uses the grid prior `weights` when given (empirical
    Bayes, see fit_grid_prior; per level with fit_group_priors), else the Beta `prior`.

    Defaults chosen by simulation on the embedded world's pass rates (bench/profile_bench): with
    per-level priors, a 2-sample screen already settles most problems, and confidence 0.8 keeps
    band agreement with a k=64 reference close to fixed k=16's at under a third of its samples.

    `prior_screen_k`: with another model's view (a column or an earlier profile, `grpo_data.curriculum.priors`),
    a problem that view already decides, moved by the offset fitted on the problems profiled before
    it, is screened with this many samples instead of `screen_k` (`first_round`): the screen is
    otherwise a floor no prior can lower (bench/prior_bench, Amendment 7). At least 1, so every row
    holds this model's own samples and the offset keeps being fitted.
    """

    lo: float = DEFAULT_BAND[0]
    hi: float = DEFAULT_BAND[1]
    confidence: float = 0.8
    screen_k: int = 2
    step_k: int = 2
    max_k: int = 32
    prior: tuple[float, float] = JEFFREYS
    prior_screen_k: int = 1

    def __post_init__(self) -> None:
        if not 0 <= self.lo < self.hi <= 1:
            raise ValueError(f"band must satisfy 0 <= lo < hi <= 1, got [{self.lo}, {self.hi}]")
        if not 0.5 < self.confidence < 1:
            raise ValueError(f"confidence must be in (0.5, 1), got {self.confidence}")
        if not 1 <= self.screen_k <= self.max_k or self.step_k < 1:
            raise ValueError("need 1 <= screen_k <= max_k and step_k >= 1")
        if not 1 <= self.prior_screen_k <= self.screen_k:
            raise ValueError(f"need 1 <= prior_screen_k <= screen_k ({self.screen_k}), got {self.prior_screen_k}")

    def band_prob(self, n_correct, k, weights: np.ndarray | None = None) -> np.ndarray:
        if weights is not None:
            return grid_prob_in_band(np.atleast_1d(n_correct), np.atleast_1d(k), weights, self.lo, self.hi)
        a, b = posterior(n_correct, k, self.prior)
        return prob_in_band(a, b, self.lo, self.hi)

    def undecided(self, n_correct, k, weights: np.ndarray | None = None,
                  extra: tuple[np.ndarray, np.ndarray] | None = None) -> np.ndarray:
        """Boolean mask: problems that need more samples. `extra` (successes, failures), e.g. another
        model's discounted pseudo-counts (`grpo_data.curriculum.priors`), joins the evidence but not the samples
        drawn that max_k bounds."""
        s, f = (0.0, 0.0) if extra is None else extra
        q = self.band_prob(np.asarray(n_correct) + s, np.asarray(k) + s + f, weights)
        k = np.asarray(k)
        return (q > 1 - self.confidence) & (q < self.confidence) & (k < self.max_k)

    def first_round(self, settled: np.ndarray) -> np.ndarray:
        """Samples in each problem's first round: `prior_screen_k` where a prior has already
        `settled` its band decision (a boolean mask), `screen_k` elsewhere."""
        return np.where(np.asarray(settled, dtype=bool), self.prior_screen_k, self.screen_k)

    def next_k(self, k) -> np.ndarray:
        return np.minimum(np.asarray(k) + self.step_k, self.max_k)

    def in_band(self, n_correct, k, weights: np.ndarray | None = None) -> np.ndarray:
        return self.band_prob(n_correct, k, weights) >= 0.5


def row_priors(n_correct, k, groups=None, rows=None) -> np.ndarray:
    """Empirical-Bayes grid prior for every problem: the pool's (G,), or with `groups` one row
    per problem from its group's fit (N, G). `rows` (group keys, default `groups`) picks the rows
    returned: fit on everything, rows only for the problems at hand."""
    if groups is None:
        return fit_grid_prior(n_correct, k)
    keys, weights = fit_group_priors(n_correct, k, groups)
    return weights[np.searchsorted(keys, np.asarray(groups if rows is None else rows))]


def level_posteriors(n_correct, k, levels=None) -> np.ndarray:
    """(N, G) grid posterior of every problem under the empirical-Bayes prior the profiler's
    adaptive decisions use: fitted per level (a missing level, NaN, is one group of its own; each
    group shrunk toward the pool, see fit_group_priors) when `levels` are given, else one for the pool."""
    groups = None if levels is None else np.nan_to_num(np.asarray(levels, dtype=np.float64), nan=-1.0)
    c, k = np.asarray(n_correct), np.asarray(k)
    if np.any(c < 0) or np.any(c > k) or np.any(k < 1):
        raise ValueError("every problem needs k >= 1 samples and n_correct in [0, k]")
    if c.size == 0:
        return np.zeros((0, GRID.size))
    return grid_posterior(c, k, row_priors(c, k, groups))


def simulate(rule: StoppingRule, pass_rates: np.ndarray, rng: np.random.Generator,
             empirical: bool = False, groups=None) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Run the rule on problems with known pass rates: (n_correct, k, prior weights) at the stop.
    With `empirical`, the grid prior is refitted to all counts before each round (per group when
    `groups` are given)."""
    p = np.asarray(pass_rates, dtype=np.float64)
    k = np.full(p.shape, rule.screen_k)
    c = rng.binomial(rule.screen_k, p)
    weights = None
    while True:
        weights = row_priors(c, k, groups) if empirical else None
        more = rule.undecided(c, k, weights)
        if not more.any():
            return c, k, weights
        new_k = rule.next_k(k)
        c = c + np.where(more, rng.binomial(new_k - k, p), 0)
        k = np.where(more, new_k, k)


def paired_mean_se(diff) -> tuple[float, float]:
    """Mean of per-problem differences between two evaluations of the same problems, and its SE
    (sample sd, ddof 1, / sqrt(problems); NaN for fewer than two): the problems' own difficulty
    cancels, so the SE is what sampling and training leave, far below an unpaired one."""
    d = np.asarray(diff, dtype=np.float64)
    if d.size == 0:
        raise ValueError("a paired difference over no problems")
    return float(d.mean()), float(d.std(ddof=1) / np.sqrt(d.size)) if d.size > 1 else float("nan")


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k from n samples with c correct (Chen et al. 2021): the chance that k of them,
    drawn without replacement, hold at least one correct: 1 - C(n - c, k) / C(n, k)."""
    if k > n:
        raise ValueError(f"pass@{k} needs at least {k} samples per problem, got {n}")
    if n - c < k:
        return 1.0
    return float(1.0 - np.prod(1.0 - k / np.arange(n - c + 1, n + 1)))


def majority_correct(answers: list[str], correct: list[bool]) -> float:
    """maj@k of one problem: 1.0 when the most frequent extracted answer among its samples is
    correct. Answers vote as strings (an empty one, no answer, does not vote); a tie goes to the
    answer given first; no answer at all scores 0."""
    votes: dict[str, list] = {}
    for i, (a, ok) in enumerate(zip(answers, correct, strict=True)):
        if a:
            entry = votes.setdefault(a, [0, i, ok])
            entry[0] += 1
    if not votes:
        return 0.0
    best = max(votes.values(), key=lambda v: (v[0], -v[1]))
    return float(best[2])
