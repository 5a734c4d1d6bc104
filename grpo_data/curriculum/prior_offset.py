"""A prior beside this model's own counts: the logit offset between the two models, fitted on the
problems both cover (`fit_logit_offset`), the evidence the prior's pseudo-counts give once moved by
it (`offset_evidence`), a profile's counts and a prior combined into what a scheduler starts from
(`merge_offline`), the drift groups that keep the prior's rows apart (`origin_groups`), and the
refusals that keep the same samples from counting twice (`check_recorded_prior`,
`check_other_samples`). Pure numpy; re-exported by `grpo_data.curriculum.priors`.
"""

from __future__ import annotations

import math
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
    has a value, its pseudo-counts, moved the same way. Either may be None."""
    if prior is None:
        return Start(offline, None)
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


def check_recorded_prior(meta: dict, prior: Prior | None, profile: str, fix: str,
                         options: tuple[str, str] = ("--prior", "--prior-profile")) -> None:
    """Refuse a profile whose adaptive stopping weighed a prior (its metadata's `prior`, as
    `grpo profile --adaptive --prior` or `--prior-profile` records it) when the run combines it with
    no prior, or with another source or weight: where the profiler stopped early because the prior
    agreed, its own counts alone are fewer samples than its decision rested on. A column prior is
    the same source when its spec is; an earlier profile when its file's sha256 is (moved or renamed
    is fine, changed is not). `fix` says how this command passes a prior, with {option} (one of
    `options`: the column's setting, the profile's), {spec} and {weight} filled in (e.g. "pass
    {option} {spec} --prior-weight {weight}")."""
    recorded = (meta or {}).get("prior")
    if not recorded:
        return
    spec, weight = str(recorded.get("spec")), float(recorded.get("weight", DEFAULT_WEIGHT))
    was = recorded.get("profile")
    given = None if prior is None else prior.source.profile
    same = prior is not None and (given is not None and given.get("sha256") == was.get("sha256") if was
                                  else given is None and prior.source.name == spec)
    if same and math.isclose(prior.weight, weight):
        return
    shown = "none" if prior is None else f"{prior.source.name} at weight {prior.weight:g}" + (
        f" (sha256 {str(given.get('sha256'))[:16]})" if given else "")
    if was:
        source, option, value = f"{spec} (sha256 {str(was.get('sha256'))[:16]})", options[1], was.get("path")
        need = "that file, unchanged"
    else:
        source, option, value = spec, options[0], spec
        need = f"the data must hold the prior's field: `grpo load --prior {spec}` keeps it"
    raise PriorError(f"{profile} was profiled with prior {source} at weight {weight:g}: its adaptive stopping counted "
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
