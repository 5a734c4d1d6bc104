"""A prior beside this model's own counts: the logit offset between the two models, fitted on the
problems both cover (`fit_logit_offset`), the evidence the prior's pseudo-counts give once moved by
it (`offset_evidence`), a profile's counts and a prior combined into what a scheduler starts from
(`merge_offline`), the drift groups that keep the prior's rows apart (`origin_groups`), and the
refusals that keep the same samples from counting twice (`check_recorded_prior`,
`check_other_samples`). Pure numpy; re-exported by `grpo_data.curriculum.priors`.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import NamedTuple

import numpy as np

from grpo_data.curriculum.prior_sources import DEFAULT_WEIGHT, Prior, PriorError, is_avg


class Start(NamedTuple):
    """What a scheduler starts from when a prior is given (`merge_offline`).

    offline:    (n_correct, k) per problem, NaN where neither the profile nor the prior has one.
    from_prior: (N,) the rows only the prior covers (None without a prior).
    offset:     the logit offset of this model against the prior's, fitted on the rows both cover
                (0 when none do; then the scheduler's drift learns it).
    """

    offline: tuple[np.ndarray, np.ndarray] | None
    from_prior: np.ndarray | None
    offset: float = 0.0


def merge_offline(offline: tuple[np.ndarray, np.ndarray] | None, prior: Prior | None) -> Start:
    """A profile's counts and a prior, combined. Where the profile measured a problem its own counts
    are kept and the prior's pseudo-counts added, moved by the offset fitted between the two on the
    problems both cover (`fit_logit_offset`, `offset_evidence`): the adaptive profiler stopped on
    exactly that evidence, and a 2-sample screen alone would undo its decision. Where only the prior
    has a value, its pseudo-counts, moved the same way. Either may be None. A prior that fits its
    weight (`Prior.fit_weight`) is first fixed at the weight its view earns on the profile's counts
    (`at_fitted_weight`)."""
    if prior is None:
        return Start(offline, None)
    prior = at_fitted_weight(offline, prior)
    has = np.isfinite(prior.k)
    if offline is None:
        return Start((prior.n_correct, prior.k), has)
    c, k = (np.asarray(x, dtype=np.float64) for x in offline)
    measured = np.isfinite(c) & np.isfinite(k) & (k > 0)
    check_other_samples(prior, c, k, measured)
    offset = fit_logit_offset(prior.rate, np.where(measured, c, np.nan), np.where(measured, k, np.nan))
    s, f = offset_evidence(prior.rate, prior.k, offset)
    own_c, own_k = np.where(measured, c, 0.0), np.where(measured, k, 0.0)
    known = measured | has
    return Start((np.where(known, own_c + s, np.nan), np.where(known, own_k + s + f, np.nan)), has & ~measured, offset)


def at_fitted_weight(offline: tuple[np.ndarray, np.ndarray] | None, prior: Prior) -> Prior:
    """A prior that fits its weight (`Prior.fit_weight`) fixed at the weight it earns on this model's
    own counts `offline` (`fit_prior_weight` after the offset, at most its weight; the profiler's last
    decision weighed the same); with no counts, at min(its weight, DEFAULT_WEIGHT). Any other prior as
    it is."""
    if not prior.fit_weight:
        return prior
    weight = min(prior.weight, DEFAULT_WEIGHT)
    if offline is not None:
        c, k = (np.asarray(x, dtype=np.float64) for x in offline)
        measured = np.isfinite(c) & np.isfinite(k) & (k > 0)
        own = (np.where(measured, c, np.nan), np.where(measured, k, np.nan))
        weight = fit_moved_weight(prior.rate, prior.k, *own, fit_logit_offset(prior.rate, *own), prior.weight)
    return replace(prior, weight=float(weight), fit_weight=False)


def check_recorded_prior(meta: dict, prior: Prior | None, profile: str, fix: str,
                         options: tuple[str, str] = ("--prior", "--prior-profile")) -> Prior | None:
    """Refuse a profile whose adaptive stopping weighed a prior (its metadata's `prior`, as
    `grpo profile --adaptive --prior` or `--prior-profile` records it) when the run combines it with
    no prior, or with another source or weight: where the profiler stopped early because the prior
    agreed, its own counts alone are fewer samples than its decision rested on. A column prior is
    the same source when its spec is; an earlier profile when its file's sha256 is (moved or renamed
    is fine, changed is not). `fix` says how this command passes a prior, with {option} (one of
    `options`: the column's setting, the profile's), {spec} and {weight} filled in (e.g. "pass
    {option} {spec} --prior-weight {weight}").
    Returns the prior to read the profile with: `prior` itself, set to fit its weight again
    (`Prior.fit_weight`, at most the same weight) when the profile's was fitted
    (`grpo profile --fit-prior-weight`): its decisions weighed the prior at the weight fitted to its
    own counts, which `merge_offline` fits again from the same counts."""
    recorded = (meta or {}).get("prior")
    if not recorded:
        return prior
    spec, weight = str(recorded.get("spec")), float(recorded.get("weight", DEFAULT_WEIGHT))
    fitted = bool(recorded.get("fit_weight", False))
    was = recorded.get("profile")
    given = None if prior is None else prior.source.profile
    same = prior is not None and (given is not None and given.get("sha256") == was.get("sha256") if was
                                  else given is None and prior.source.name == spec)
    if same and math.isclose(prior.weight, weight):
        return replace(prior, fit_weight=True) if fitted else prior
    shown = "none" if prior is None else f"{prior.source.name} at weight {prior.weight:g}" + (
        f" (sha256 {str(given.get('sha256'))[:16]})" if given else "")
    weight_text = f"a weight fitted to its own samples, at most {weight:g}," if fitted else f"weight {weight:g}"
    if was:
        source, option, value = f"{spec} (sha256 {str(was.get('sha256'))[:16]})", options[1], was.get("path")
        need = "that file, unchanged"
    else:
        source, option, value = spec, options[0], spec
        need = f"the data must hold the prior's field: `grpo load --prior {spec}` keeps it"
    raise PriorError(f"{profile} was profiled with prior {source} at {weight_text}: its adaptive stopping counted "
                     f"that prior's pseudo-counts, so its own counts alone are too few where it stopped early; this "
                     f"run gives {shown}. {fix.format(option=option, spec=value, weight=f'{weight:g}')} ({need}), or "
                     "profile again without a prior")


def check_other_samples(prior: Prior, c: np.ndarray, k: np.ndarray, measured: np.ndarray) -> None:
    """Refuse an `avg@K_<model>` prior whose every value, on the rows the counts (c, k) also
    measured, is exactly their c / k: this project's trl/verl shards write that column as a copy of
    the profile's pass rate, so adding it to the same counts would count the same samples twice."""
    both = measured & np.isfinite(prior.rate)
    if not is_avg(prior.source) or not both.any():
        return
    if np.allclose(prior.rate[both], c[both] / k[both], rtol=0.0, atol=1e-9):
        raise PriorError(f"prior {prior.source.name}: on all {int(both.sum())} problems the profile also measured, its "
                         "value is the profile's own n_correct / k (this project's trl/verl shards write "
                         "avg@K_<model> as a copy of those counts): adding it would count the same samples twice. "
                         "Leave the prior out (the counts start the scheduler already), or name another model's column")


def origin_groups(groups: np.ndarray | None, from_prior: np.ndarray | None) -> np.ndarray | None:
    """Difficulty groups with the prior's rows apart from the rest: each group's drift then is the
    offset between the other model and this policy (for prior rows), not a blend of it with the
    profile's rows, which need none."""
    if from_prior is None or not from_prior.any() or from_prior.all():
        return groups
    base = np.zeros(from_prior.size, dtype=np.int64) if groups is None else np.asarray(groups, dtype=np.int64)
    return np.unique(base * 2 + from_prior.astype(np.int64), return_inverse=True)[1].reshape(-1)


def fit_logit_offset(rate: np.ndarray, n_correct: np.ndarray, k: np.ndarray, kappa: float = 1.0,
                     iters: int = 20) -> float:
    """The logit shift d maximizing sum c log s(l + d) + (k - c) log(1 - s(l + d)) - kappa d^2 / 2, with
    l = logit(rate) of another model's pass rates and (c, k) this model's own counts: how much easier
    (d > 0) or harder this model finds the problems. Newton steps from 0; `kappa` keeps the shift
    near 0 while few samples are in. Rows with a NaN are left out; rates are clipped to [0.01, 0.99]
    so a 0 or 1 from the other model does not make its logit infinite."""
    r, c, k = (np.asarray(x, dtype=np.float64) for x in (rate, n_correct, k))
    use = np.isfinite(r) & np.isfinite(c) & np.isfinite(k) & (k > 0)
    if not use.any():
        return 0.0
    base = np.log(np.clip(r[use], 0.01, 0.99)) - np.log1p(-np.clip(r[use], 0.01, 0.99))
    c, k = c[use], k[use]
    d = 0.0
    for _ in range(iters):
        p = 1.0 / (1.0 + np.exp(-(base + d)))
        step = ((c - k * p).sum() - kappa * d) / ((k * p * (1 - p)).sum() + kappa)
        d += step
        if abs(step) < 1e-8:
            break
    return float(d)


def offset_evidence(rate: np.ndarray, k: np.ndarray, offset: float) -> tuple[np.ndarray, np.ndarray]:
    """(successes, failures) of k pseudo-samples at another model's pass rate moved by a logit
    `offset`: sigmoid(logit(rate) + offset) x k; 0 and 0 where a row has none.
    A rate outside [0.01, 0.99] (0 and 1 have no finite logit; `fit_logit_offset` clips there) moves
    by as much as the nearest of those two does, kept in [0, 1]: the evidence changes continuously
    with the offset, a 0 stays 0 at offset 0 and rises only as the offset grows (1 logit: 0.017),
    where clipping first lifted every 0 to 0.01 (a 0/4 to 0.04 successes) for any offset above
    rounding noise.
    The rate is moved, not the counts: a 0.99 counted as 4 pseudo-samples stays near 0.98 under a
    1-logit shift, where moving half-sample-smoothed counts would pull it to 0.75."""
    r, k = np.asarray(rate, dtype=np.float64), np.asarray(k, dtype=np.float64)
    if offset != 0.0:  # at 0 the rates stand exactly as read (sigmoid(logit(r)) is r only up to rounding)
        clipped = np.clip(r, 0.01, 0.99)
        moved = 1.0 / (1.0 + np.exp(-(np.log(clipped) - np.log1p(-clipped) + offset)))
        r = np.clip(r + (moved - clipped), 0.0, 1.0)  # inside [0.01, 0.99]: exactly the moved rate
    has = np.isfinite(r) & np.isfinite(k)
    s = np.where(has, r * np.where(has, k, 0.0), 0.0)
    return s, np.where(has, k, 0.0) - s


WEIGHT_CANDIDATES = (0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 16.0, 24.0, 32.0, 48.0, 64.0)
MIN_FIT_ROWS = 32  # rows with both a prior value and own samples before a weight is fitted


def weight_log_likelihood(rate: np.ndarray, samples: np.ndarray, n_correct: np.ndarray, k: np.ndarray,
                          weights: np.ndarray, weight: float, grid: np.ndarray | None = None,
                          mult: np.ndarray | None = None) -> float:
    """log P(own counts | the prior's view at `weight`) summed over rows (each counted `mult` times,
    default once): each row's own (c, k) under the grid prior `weights` (G,) updated by the prior's
    pseudo-counts, min(samples, weight) at pass rate `rate` (already moved by the offset). Binomial
    coefficients are dropped (constant in `weight`). Rows must all be finite."""
    from grpo_data.curriculum.stats import GRID

    grid = GRID if grid is None else grid
    mult = np.ones(np.shape(rate)) if mult is None else np.asarray(mult, dtype=np.float64)
    pk = np.minimum(samples, weight)
    s, f = rate * pk, pk - rate * pk
    with np.errstate(divide="ignore", invalid="ignore"):
        log_q, log_1q = np.log(grid)[None, :], np.log1p(-grid)[None, :]

        def term(a, b):  # log sum_j pi_j q_j^a (1 - q_j)^b per row, 0 * log 0 read as 0
            x = np.nan_to_num(a[:, None] * log_q, nan=0.0) + np.nan_to_num(b[:, None] * log_1q, nan=0.0)
            x = x + np.log(weights)[None, :]
            top = x.max(axis=1, keepdims=True)
            return (top + np.log(np.exp(x - top).sum(axis=1, keepdims=True)))[:, 0]

        return float(((term(s + n_correct, f + k - n_correct) - term(s, f)) * mult).sum())


def fit_prior_weight(rate: np.ndarray, samples: np.ndarray, n_correct: np.ndarray, k: np.ndarray,
                     cap: float, start: float = DEFAULT_WEIGHT, weights: np.ndarray | None = None) -> float:
    """The discount another model's view has earned on this model's own counts: the candidate weight
    (pseudo-samples per value, WEIGHT_CANDIDATES up to `cap`) that maximizes the marginal likelihood
    of the own counts (c, k) given the prior's pseudo-counts (`weight_log_likelihood`); `rate` is the
    prior's pass rate moved by the fitted offset, `samples` the samples behind each value (the most a
    value can count for). Empirical Bayes, like the offset: a view that predicts this model well
    earns more weight, a scattered one less. Sequential stopping leaves the likelihood unchanged, so
    the adaptive profile's own rounds count as drawn. Fewer than MIN_FIT_ROWS rows with both a value
    and own samples: `start` (capped). `weights`: the grid prior (default: the pool's, fitted to the
    own counts of those rows, `fit_grid_prior`; the profiler's decisions weigh one fitted to own and
    pseudo-counts together, which would make the fit circular). The cap itself is a candidate, so
    the profiler and a reader given the same cap choose among the same weights. Rows with the same
    (rate, samples, counts) are scored once, so a large pool costs as many rows as it has distinct ones."""
    from grpo_data.curriculum.stats import fit_grid_prior

    r, n, c, kk = (np.asarray(x, dtype=np.float64) for x in (rate, samples, n_correct, k))
    use = np.isfinite(r) & np.isfinite(n) & (n > 0) & np.isfinite(c) & np.isfinite(kk) & (kk > 0)
    if use.sum() < MIN_FIT_ROWS:
        return float(min(start, cap))
    r, n, c, kk = np.clip(r[use], 0.0, 1.0), n[use], c[use], kk[use]
    pi = fit_grid_prior(c, kk) if weights is None else np.asarray(weights, dtype=np.float64)
    pi = np.maximum(pi, 1e-12)
    rows, mult = np.unique(np.stack([r, np.minimum(n, cap), c, kk], axis=1), axis=0, return_counts=True)
    candidates = sorted({w for w in WEIGHT_CANDIDATES if w <= cap} | {float(cap)})
    scores = [weight_log_likelihood(*rows.T, pi, w, mult=mult) for w in candidates]
    return float(candidates[int(np.argmax(scores))])


def fit_moved_weight(rate: np.ndarray, samples: np.ndarray, n_correct: np.ndarray, k: np.ndarray, offset: float,
                     cap: float) -> float:
    """`fit_prior_weight` on the prior's pass rates moved by the logit `offset` as `offset_evidence`
    moves them (rows without a rate stay out): the one fit the profiler's decisions, a reader of
    their profile and the benchmark's diagnostics all make."""
    moved = offset_evidence(rate, np.ones_like(rate), offset)[0]
    return fit_prior_weight(np.where(np.isfinite(rate), moved, np.nan), samples, n_correct, k, cap=cap)
