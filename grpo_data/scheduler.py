"""Difficulty schedulers: which problems the trainer gets next.

A GRPO group of G answers teaches only when some are right and some wrong; the expected signal of a
problem grows with p(1-p). `BandScheduler` keeps a Beta posterior over the current policy's pass
rate of every problem and feeds the trainer problems likely to sit in a target band around 0.5.

All schedulers share one interface (`Scheduler`), are picked by name from `SCHEDULERS`, and keep
their state in numpy arrays saved without pickle (npz + JSON) for exact resume:

    sched = make_scheduler("band", n_problems, seed=0, offline=(n_correct, k))
    idx = sched.sample(512)                 # indices into the problem table
    sched.update(idx, n_correct, group_size)  # every group's outcome, kept or dropped
    sched.save(folder); sched.load(folder)

BandScheduler, step by step:
- Prior: offline profile counts with their strength capped at `max_prior_k` pseudo-samples, so
  online evidence can override a stale offline estimate; unprofiled problems start from the weak
  `base_prior`.
- Forgetting: what is known about a problem loses strength by `decay` per policy step (`tick()`,
  once per optimizer step; lazily: each problem remembers when it was last rebased), down to the
  base prior's strength, so a problem solved 500 steps ago is not assumed still solved. The mean
  is kept: a forgotten problem is uncertain, not assumed to sit at 0.5.
- Sharing strength (when `groups` are given, e.g. the dataset's level crossed with the offline
  bucket, see `difficulty_groups`): each group carries a drift, a shift of its members' pass rates
  in logit space, estimated by damped Newton steps from the residuals of every observed group of
  answers. A problem's posterior mean moves with its group's drift since its evidence was recorded
  (fully near 0.5, less in the tails, `drift_focus`), so what the policy learns on a few problems
  moves the estimates of neighbours nobody sampled: the frontier is followed, not rediscovered.
- Selection: candidates are proposed in proportion to a cached learnability score (recomputed every
  `rescore_every` steps, or sooner when most proposals turn out stale; O(batch log N) to draw
  from); this random proposal is the exploration. Among the candidates, those whose posterior mean
  (`selection="mean"`) or Thompson draw (`selection="thompson"`) lies in the band are kept first,
  ordered by a random key scaled by their distance from the band's centre.
  With `without_replacement`, a problem is not offered twice within an epoch; with `epoch="band"`
  the epoch ends once the problems not yet offered hold fewer than a batch likely in band, so every
  problem in band is trained once before any is trained again (the trainer's default: a policy
  trained again and again on the same few hundred problems memorizes them).
- Dry band: when fewer than `batch` problems are likely in band, the band widens by `widen_step`
  (logged), up to [0, 1]; it narrows back when the band refills.
"""

from __future__ import annotations

import json
import logging
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Protocol

import numpy as np

from grpo_data import io

logger = logging.getLogger(__name__)


class Scheduler(Protocol):
    name: str
    n: int

    def sample(self, batch: int) -> np.ndarray:
        """`batch` distinct problem indices (fewer only if the pool is smaller)."""
        ...

    def update(self, idx: np.ndarray, n_correct: np.ndarray, group_size: np.ndarray | int) -> None:
        """Outcomes of groups generated for `idx` (all of them, kept or dropped by the trainer)."""
        ...

    def tick(self) -> None:
        """One optimizer step of the policy has happened (the clock that forgetting runs on)."""
        ...

    def stats(self) -> dict: ...

    def save(self, folder: str | Path) -> None: ...

    def load(self, folder: str | Path) -> None: ...


@dataclass(frozen=True)
class BandConfig:
    """Settings of BandScheduler.

    lo, hi:              target band for the pass rate (default centred on 0.5).
    decay:               per-policy-step factor on the strength of old evidence (0.99: half-life
                         about 70 steps).
    max_prior_k:         cap on the offline profile's weight, in pseudo-samples.
    base_prior:          Beta prior of problems without a profile (its strength is the floor that
                         forgetting decays toward).
    oversample:          candidates proposed per slot before selection.
    rescore_every:       steps between full recomputations of the proposal scores.
    without_replacement: offer each problem at most once per epoch.
    epoch:               with without_replacement, when an epoch ends: "pool" once every problem
                         was offered (a dataloader's epoch, band-first order); "band" once fewer
                         than a batch of the problems not yet offered are likely in band.
    min_in_band_frac:    below this fraction of `batch` problems likely in band, widen the band.
    widen_step:          how much each widening adds on both sides.
    share:               with groups given, track a logit drift per group (False: ignore groups).
    drift_rate:          damping of each Newton step on a group's drift (0-1).
    drift_kappa:         pseudo-information added to each step's denominator (shrinks small groups).
    drift_focus:         a problem moves by drift * (4 m (1 - m)) ** drift_focus at posterior mean m:
                         problems deep in a tail move less than the group's frontier.
    selection:           "mean" ranks candidates by their posterior mean (in band first, nearer the
                         centre mostly first); "thompson" ranks one posterior draw per candidate.
    explore:             share of every batch drawn uniformly from the whole pool, whatever its
                         estimates say (replay): keeps the easy and the hard ends in training and
                         their estimates fresh, at the cost of groups that are often all-equal.
    """

    lo: float = 0.2
    hi: float = 0.8
    decay: float = 0.99
    max_prior_k: float = 8.0
    base_prior: tuple[float, float] = (1.0, 1.0)
    oversample: int = 8
    rescore_every: int = 50
    without_replacement: bool = False
    min_in_band_frac: float = 1.0
    widen_step: float = 0.05
    share: bool = True
    drift_rate: float = 0.5
    drift_kappa: float = 4.0
    drift_focus: float = 1.0
    selection: str = "mean"
    explore: float = 0.0
    epoch: str = "band"

    def __post_init__(self) -> None:
        if not 0 <= self.lo < self.hi <= 1:
            raise ValueError(f"band must satisfy 0 <= lo < hi <= 1, got [{self.lo}, {self.hi}]")
        if not 0 < self.decay <= 1:
            raise ValueError(f"decay must be in (0, 1], got {self.decay}")
        if self.oversample < 1 or self.rescore_every < 1:
            raise ValueError("oversample and rescore_every must be >= 1")
        if not 0 <= self.drift_rate <= 1 or self.drift_kappa <= 0 or self.drift_focus < 0:
            raise ValueError("drift_rate must be in [0, 1], drift_kappa > 0 and drift_focus >= 0")
        if not 0 <= self.explore <= 1:
            raise ValueError(f"explore must be in [0, 1], got {self.explore}")
        if self.epoch not in ("pool", "band"):
            raise ValueError(f"epoch must be pool or band, got {self.epoch!r}")
        if self.selection not in ("mean", "thompson"):
            raise ValueError(f"selection must be mean or thompson, got {self.selection!r}")


def prior_from_profile(n_correct, k, max_prior_k: float, base: tuple[float, float]) -> tuple[np.ndarray, np.ndarray]:
    """Offline counts as pseudo-evidence, scaled down to at most max_prior_k samples per problem.
    NaN counts (unprofiled problems) contribute nothing."""
    c = np.nan_to_num(np.asarray(n_correct, dtype=np.float64))
    k = np.nan_to_num(np.asarray(k, dtype=np.float64))
    scale = np.where(k > 0, np.minimum(1.0, max_prior_k / np.maximum(k, 1e-12)), 0.0)
    return c * scale, (k - c) * scale


def difficulty_groups(n: int, offline: tuple[np.ndarray, np.ndarray] | None = None, level=None,
                      buckets: int = 5) -> np.ndarray:
    """Group id per problem for sharing strength: the offline pass-rate bucket (`buckets` equal
    widths; unprofiled problems get their own bucket), crossed with `level` when given (missing
    levels, NaN or negative, form their own level)."""
    bucket = np.full(n, buckets, dtype=np.int64)
    if offline is not None:
        c, k = (np.asarray(x, dtype=np.float64) for x in offline)
        seen = np.isfinite(k) & (k > 0)
        rate = np.where(seen, np.nan_to_num(c) / np.where(seen, k, 1.0), 0.0)
        bucket = np.where(seen, np.minimum((rate * buckets).astype(np.int64), buckets - 1), buckets)
    if level is None:
        return bucket
    lv = np.asarray(level, dtype=np.float64)
    lv = np.where(np.isfinite(lv) & (lv >= 0), lv, -1.0)
    _, lv_id = np.unique(lv, return_inverse=True)
    return lv_id.astype(np.int64) * (buckets + 1) + bucket


def drift_step(p_hat: np.ndarray, n_correct: np.ndarray, group_size: np.ndarray, group: np.ndarray,
               n_groups: int, kappa: float) -> np.ndarray:
    """Newton step on each group's logit shift from one batch of outcomes: the summed residual
    c - G p over the summed Fisher information G p (1 - p), plus kappa, per group."""
    resid = np.bincount(group, weights=n_correct - group_size * p_hat, minlength=n_groups)
    info = np.bincount(group, weights=group_size * p_hat * (1.0 - p_hat), minlength=n_groups)
    return resid / (info + kappa)


def learnability(a: np.ndarray, b: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """Proposal score: expected p(1-p) under Beta(a, b), sharpened toward the band's centre."""
    mean = a / (a + b)
    signal = a * b / ((a + b) * (a + b + 1))  # E[p(1-p)], at most 0.25
    centre, half = (lo + hi) / 2, (hi - lo) / 2
    closeness = np.clip(1.0 - np.abs(mean - centre) / max(half, 1e-6), 0.0, 1.0)
    return signal * (0.05 + closeness)


def check_state_matches(meta: dict, name: str, n: int, origin: str) -> None:
    if meta["name"] != name or meta["n"] != n:
        raise ValueError(f"{origin}: scheduler state is {meta['name']} over {meta['n']} problems, "
                         f"not {name} over {n}")


def save_state(state: dict, folder: str | Path) -> None:
    """A scheduler's `state_dict()` as scheduler.npz (arrays, no pickle) + scheduler.json, each atomic."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / ".scheduler.tmp.npz"
    np.savez(tmp, **state["arrays"])
    tmp.replace(folder / "scheduler.npz")
    io.write_json(folder / "scheduler.json", state["meta"])


def load_state(folder: str | Path) -> dict:
    folder = Path(folder)
    meta = json.loads((folder / "scheduler.json").read_text())
    with np.load(folder / "scheduler.npz", allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    return {"arrays": arrays, "meta": meta}


class BandScheduler:
    name = "band"

    def __init__(self, n: int, cfg: BandConfig = BandConfig(), seed: int = 0,
                 offline: tuple[np.ndarray, np.ndarray] | None = None, groups: np.ndarray | None = None) -> None:
        if n < 1:
            raise ValueError("the problem pool is empty")
        self.n, self.cfg = n, cfg
        self.rng = np.random.default_rng(seed)
        self.sharing = cfg.share and groups is not None
        groups = np.zeros(n, dtype=np.int64) if groups is None else np.asarray(groups)
        if groups.shape != (n,) or not np.issubdtype(groups.dtype, np.integer) or groups.min() < 0:
            raise ValueError(f"groups must be {n} non-negative integers, one per problem")
        _, self.group = np.unique(groups, return_inverse=True)
        self.drift = np.zeros(int(self.group.max()) + 1)  # each group's logit shift since the start
        self.anchor = np.zeros(n)  # the group's drift when the problem's posterior was last rebased
        s0, f0 = prior_from_profile(*offline, cfg.max_prior_k, cfg.base_prior) if offline is not None else (np.zeros(n), np.zeros(n))
        self.a, self.b = cfg.base_prior[0] + s0, cfg.base_prior[1] + f0  # Beta posterior as of step `last`
        self.last = np.zeros(n, dtype=np.int64)
        self.used = np.zeros(n, dtype=bool)  # offered in the current epoch
        self.step = 0
        self.epoch = 0
        self.lo, self.hi = cfg.lo, cfg.hi
        self.widenings = 0
        self._cdf = None
        self._scored_at = -1
        self._in_band_available = 0
        self.last_batch_in_band = float("nan")

    # ------------------------------------------------------------ posterior
    def posterior(self, idx: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Current Beta(a, b) of `idx` (all problems when None). Forgetting decays the strength of
        what was known (down to the base prior's) and keeps its mean; sharing moves the mean by the
        group's drift since it was recorded."""
        idx = slice(None) if idx is None else np.asarray(idx)  # a slice: views, no 1M-row gathers
        a, b = self.a[idx], self.b[idx]
        total = a + b
        floor = float(sum(self.cfg.base_prior))
        fade = np.exp((self.step - self.last[idx]) * np.log(self.cfg.decay))
        strength = np.where(total > floor, floor + (total - floor) * fade, total)
        m0 = a / total
        if self.sharing:
            tails = 4.0 * m0 * (1.0 - m0)
            focus = tails if self.cfg.drift_focus == 1.0 else tails**self.cfg.drift_focus
            shift = (self.drift[self.group[idx]] - self.anchor[idx]) * focus
            m0 = 1.0 / (1.0 + np.exp(np.log(b) - np.log(a) - shift))  # logit(a / total) + shift
        return strength * m0, strength * (1.0 - m0)

    def pass_rate(self, idx: np.ndarray | None = None) -> np.ndarray:
        a, b = self.posterior(idx)
        return a / (a + b)

    # ------------------------------------------------------------ selection
    def _rescore(self) -> None:
        a, b = self.posterior()
        score = learnability(a, b, self.lo, self.hi)
        if self.cfg.without_replacement:
            score = np.where(self.used, 0.0, score)
        total = score.sum()
        self._cdf = np.cumsum(score) / total if total > 0 else None
        self._scored_at = self.step
        mean = a / (a + b)
        in_band = int(np.count_nonzero((mean >= self.lo) & (mean <= self.hi) & ~self.used))
        self._in_band_available = in_band

    def _offerable(self) -> np.ndarray:
        """Problems that may be offered now (not yet this epoch, under without_replacement)."""
        return np.flatnonzero(~self.used) if self.cfg.without_replacement else np.arange(self.n)

    def _propose(self, m: int) -> np.ndarray:
        """Up to m distinct offerable candidates, drawn in proportion to the proposal scores."""
        if self._cdf is None:
            pool = self._offerable()
            return self.rng.choice(pool, size=min(m, pool.size), replace=False)
        u = np.sort(self.rng.random(m))  # sorted queries: searchsorted walks the cdf in order (cache-friendly)
        cand = np.unique(np.minimum(np.searchsorted(self._cdf, u), self.n - 1))
        return cand[~self.used[cand]] if self.cfg.without_replacement else cand

    def _maybe_adjust_band(self, batch: int) -> None:
        need = self.cfg.min_in_band_frac * batch
        if self._in_band_available < need and (self.lo > 0 or self.hi < 1):
            self.lo = max(0.0, self.lo - self.cfg.widen_step)
            self.hi = min(1.0, self.hi + self.cfg.widen_step)
            self.widenings += 1
            logger.warning("scheduler: only %d problems likely in band, widened to [%.2f, %.2f]",
                           self._in_band_available, self.lo, self.hi)
            self._rescore()
        elif (self.lo, self.hi) != (self.cfg.lo, self.cfg.hi) and self._in_band_available > 4 * need:
            self.lo = min(self.cfg.lo, self.lo + self.cfg.widen_step)
            self.hi = max(self.cfg.hi, self.hi - self.cfg.widen_step)
            logger.info("scheduler: band refilled, narrowed to [%.2f, %.2f]", self.lo, self.hi)
            self._rescore()

    def _new_epoch_if_needed(self, batch: int) -> None:
        if not self.cfg.without_replacement:
            return
        pool_done = self.n - int(self.used.sum()) < batch
        band_done = self.cfg.epoch == "band" and self._scored_at >= 0 and self._in_band_available < batch
        if pool_done or (band_done and self.used.any()):
            self.used[:] = False
            self.epoch += 1
            self._scored_at = -1

    def sample(self, batch: int) -> np.ndarray:
        batch = min(batch, self.n)
        self._new_epoch_if_needed(batch)
        if self._scored_at < 0 or self.step - self._scored_at >= self.cfg.rescore_every:
            self._rescore()
            self._maybe_adjust_band(batch)
        cand = self._propose(batch * self.cfg.oversample)
        hits = int(np.count_nonzero(self._in_band_mask(cand))) if cand.size else 0
        if self._scored_at != self.step and cand.size and (hits < 0.5 * cand.size or hits < min(batch, self._in_band_available)):
            # proposals went stale since the last rescore: what was in band is solved, or offered
            self._rescore()
            self._new_epoch_if_needed(batch)
            if self._scored_at < 0:  # a new epoch began: every problem is offerable again
                self._rescore()
            self._maybe_adjust_band(batch)
            cand = self._propose(batch * self.cfg.oversample)
        if cand.size < batch:  # proposal exhausted (stale scores): top up uniformly from the rest
            rest = np.setdiff1d(self._offerable(), cand, assume_unique=False)
            cand = np.concatenate([cand, self.rng.choice(rest, size=min(rest.size, batch - cand.size), replace=False)])
        a, b = self.posterior(cand)
        if self.cfg.selection == "thompson":
            draw = self.rng.beta(a, b)  # one plausible pass rate per candidate
        else:
            draw = a / (a + b)
        centre = (self.lo + self.hi) / 2
        inside = (draw >= self.lo) & (draw <= self.hi)
        # in-band first; within, nearer the centre usually first but not always (a random key scaled
        # by the distance), so the batch spreads over the band instead of the same few problems
        key = np.where(inside, 0.0, 1.0) + np.abs(draw - centre) * self.rng.random(draw.size)
        n_explore = int(round(self.cfg.explore * batch))
        order = np.argsort(key, kind="stable")[: batch - n_explore]
        chosen = cand[order]
        mean = a[order] / (a[order] + b[order])
        self.last_batch_in_band = float(np.mean((mean >= self.lo) & (mean <= self.hi))) if order.size else float("nan")
        if n_explore:
            rest = np.setdiff1d(self._offerable(), chosen)
            chosen = np.concatenate([chosen, self.rng.choice(rest, size=min(rest.size, n_explore), replace=False)])
        if self.cfg.without_replacement:
            self.used[chosen] = True
            self._in_band_available -= int(np.count_nonzero(inside[order]))  # offered: no longer available
        return chosen

    def _in_band_mask(self, idx: np.ndarray) -> np.ndarray:
        mean = self.pass_rate(idx)
        return (mean >= self.lo) & (mean <= self.hi)

    # ------------------------------------------------------------ evidence
    def update(self, idx, n_correct, group_size) -> None:
        idx = np.asarray(idx, dtype=np.int64)
        c = np.asarray(n_correct, dtype=np.float64)
        g = np.broadcast_to(np.asarray(group_size, dtype=np.float64), c.shape)
        a, b = self.posterior(idx)  # rebase to now: forgetting and drift folded in
        if self.sharing:  # the group drift learns from how well the posteriors predicted these outcomes
            grp = self.group[idx]
            self.drift += self.cfg.drift_rate * drift_step(a / (a + b), c, g, grp, self.drift.size, self.cfg.drift_kappa)
            self.anchor[idx] = self.drift[grp]  # fresh evidence describes the policy as it is now
        self.a[idx], self.b[idx] = a, b
        self.last[idx] = self.step
        np.add.at(self.a, idx, c)
        np.add.at(self.b, idx, g - c)

    def tick(self) -> None:
        self.step += 1

    def stats(self) -> dict:
        return {"band_lo": self.lo, "band_hi": self.hi, "widenings": self.widenings, "epoch": self.epoch,
                "band_occupancy": self.last_batch_in_band, "step": self.step}

    # ------------------------------------------------------------ state
    def state_dict(self) -> dict:
        """Arrays (numpy) and JSON-able settings: everything `load_state_dict` needs for an exact resume."""
        cdf = self._cdf if self._cdf is not None else np.zeros(0)
        arrays = {"a": self.a, "b": self.b, "last": self.last, "used": self.used, "cdf": cdf,
                  "group": self.group, "drift": self.drift, "anchor": self.anchor}
        meta = {"name": self.name, "n": self.n, "config": asdict(self.cfg), "step": self.step, "epoch": self.epoch,
                "lo": self.lo, "hi": self.hi, "widenings": self.widenings, "scored_at": self._scored_at,
                "in_band_available": self._in_band_available, "rng": self.rng.bit_generator.state}
        return {"arrays": {k: np.array(v, copy=True) for k, v in arrays.items()}, "meta": meta}

    def load_state_dict(self, state: dict, origin: str = "state") -> None:
        meta, z = state["meta"], state["arrays"]
        check_state_matches(meta, self.name, self.n, origin)
        self.a, self.b, self.last, self.used = z["a"], z["b"], z["last"], z["used"]
        self.group, self.drift, self.anchor = z["group"], z["drift"], z["anchor"]
        self._cdf = z["cdf"] if z["cdf"].size else None
        self.step, self.epoch, self.widenings = meta["step"], meta["epoch"], meta["widenings"]
        self.lo, self.hi = meta["lo"], meta["hi"]
        self._scored_at, self._in_band_available = meta["scored_at"], meta["in_band_available"]
        self.rng.bit_generator.state = meta["rng"]

    def save(self, folder: str | Path) -> None:
        save_state(self.state_dict(), folder)

    def load(self, folder: str | Path) -> None:
        self.load_state_dict(load_state(folder), origin=str(folder))

    # ------------------------------------------------------------ refresh
    def refresh_candidates(self, m: int) -> np.ndarray:
        """Up to m problems worth re-estimating: the stalest, and those nearest a band edge."""
        a, b = self.posterior()
        mean = a / (a + b)
        edge = np.minimum(np.abs(mean - self.lo), np.abs(mean - self.hi))
        staleness = self.step - self.last
        half = m // 2
        stale = np.argsort(-staleness, kind="stable")[:half]
        near = np.argsort(edge, kind="stable")
        near = near[~np.isin(near, stale)][: m - stale.size]
        return np.concatenate([stale, near])


class UniformScheduler:
    """Uniform sampling (optionally without replacement per epoch); learns nothing from outcomes."""

    name = "uniform"

    def __init__(self, n: int, seed: int = 0, without_replacement: bool = True, **_ignored) -> None:
        if n < 1:
            raise ValueError("the problem pool is empty")
        self.n = n
        self.rng = np.random.default_rng(seed)
        self.without_replacement = without_replacement
        self.order = self.rng.permutation(n)
        self.pos = 0
        self.epoch = 0

    def sample(self, batch: int) -> np.ndarray:
        batch = min(batch, self.n)
        if not self.without_replacement:
            return self.rng.choice(self.n, size=batch, replace=False)
        if self.pos + batch > self.n:
            self.order = self.rng.permutation(self.n)
            self.pos = 0
            self.epoch += 1
        out = self.order[self.pos : self.pos + batch]
        self.pos += batch
        return out

    def update(self, idx, n_correct, group_size) -> None:
        return None

    def tick(self) -> None:
        return None

    def stats(self) -> dict:
        return {"epoch": self.epoch}

    def state_dict(self) -> dict:
        return {"arrays": {"order": np.array(self.order, copy=True)},
                "meta": {"name": self.name, "n": self.n, "pos": self.pos, "epoch": self.epoch,
                         "rng": self.rng.bit_generator.state}}

    def load_state_dict(self, state: dict, origin: str = "state") -> None:
        meta = state["meta"]
        check_state_matches(meta, self.name, self.n, origin)
        self.order = state["arrays"]["order"]
        self.pos, self.epoch = meta["pos"], meta["epoch"]
        self.rng.bit_generator.state = meta["rng"]

    def save(self, folder: str | Path) -> None:
        save_state(self.state_dict(), folder)

    def load(self, folder: str | Path) -> None:
        self.load_state_dict(load_state(folder), origin=str(folder))


class OfflineBandScheduler(UniformScheduler):
    """Uniform over the problems whose offline pass rate lies in [lo, hi]; no online updates."""

    name = "offline_band"

    def __init__(self, n: int, seed: int = 0, offline: tuple[np.ndarray, np.ndarray] | None = None,
                 lo: float = 0.2, hi: float = 0.8, **kwargs) -> None:
        if offline is None:
            raise ValueError("offline_band needs an offline profile (n_correct, k per problem)")
        c, k = (np.asarray(x, dtype=np.float64) for x in offline)
        with np.errstate(invalid="ignore", divide="ignore"):
            rate = c / k
        self.members = np.flatnonzero((rate >= lo) & (rate <= hi))
        if self.members.size == 0:
            raise ValueError(f"no problem has an offline pass rate in [{lo}, {hi}]")
        super().__init__(self.members.size, seed=seed, **kwargs)

    def sample(self, batch: int) -> np.ndarray:
        return self.members[super().sample(batch)]


SCHEDULERS = {"band": BandScheduler, "uniform": UniformScheduler, "offline_band": OfflineBandScheduler}


def make_scheduler(name: str, n: int, seed: int = 0, offline=None, groups=None, **kwargs) -> Scheduler:
    """A scheduler by name; `offline` is (n_correct, k) per problem (NaN where unprofiled); `groups`
    (band only) is a difficulty group id per problem, by default the offline pass-rate bucket."""
    if name not in SCHEDULERS:
        raise ValueError(f"unknown scheduler {name!r}; choose one of: {', '.join(SCHEDULERS)}")
    if name == "band":
        cfg = BandConfig(**kwargs) if kwargs else BandConfig()
        return BandScheduler(n, cfg, seed=seed, offline=offline, groups=groups)
    if name == "offline_band":
        return OfflineBandScheduler(n, seed=seed, offline=offline, **kwargs)
    return UniformScheduler(n, seed=seed, **kwargs)
