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
- Forgetting: evidence decays by `decay` per policy step (`tick()`, once per optimizer step; lazily:
  each problem remembers when it was last folded), so a problem solved 500 steps ago is not
  assumed still solved.
- Selection: candidates are proposed in proportion to a cached learnability score (recomputed every
  `rescore_every` steps, or sooner when most proposals turn out stale; O(batch log N) to draw
  from), then Thompson sampling on the candidates' current posteriors keeps the `batch` whose draws
  lie in the band, closest to its centre.
  With `without_replacement`, a problem is not offered twice within an epoch.
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
    decay:               per-policy-step factor on old evidence (0.995: half-life about 140 steps).
    max_prior_k:         cap on the offline profile's weight, in pseudo-samples.
    base_prior:          Beta prior of problems without a profile (and what evidence decays toward).
    oversample:          candidates proposed per slot before Thompson selection.
    rescore_every:       steps between full recomputations of the proposal scores.
    without_replacement: offer each problem at most once per epoch.
    min_in_band_frac:    below this fraction of `batch` problems likely in band, widen the band.
    widen_step:          how much each widening adds on both sides.
    """

    lo: float = 0.2
    hi: float = 0.8
    decay: float = 0.995
    max_prior_k: float = 8.0
    base_prior: tuple[float, float] = (1.0, 1.0)
    oversample: int = 4
    rescore_every: int = 50
    without_replacement: bool = False
    min_in_band_frac: float = 1.0
    widen_step: float = 0.05

    def __post_init__(self) -> None:
        if not 0 <= self.lo < self.hi <= 1:
            raise ValueError(f"band must satisfy 0 <= lo < hi <= 1, got [{self.lo}, {self.hi}]")
        if not 0 < self.decay <= 1:
            raise ValueError(f"decay must be in (0, 1], got {self.decay}")
        if self.oversample < 1 or self.rescore_every < 1:
            raise ValueError("oversample and rescore_every must be >= 1")


def prior_from_profile(n_correct, k, max_prior_k: float, base: tuple[float, float]) -> tuple[np.ndarray, np.ndarray]:
    """Offline counts as pseudo-evidence, scaled down to at most max_prior_k samples per problem.
    NaN counts (unprofiled problems) contribute nothing."""
    c = np.nan_to_num(np.asarray(n_correct, dtype=np.float64))
    k = np.nan_to_num(np.asarray(k, dtype=np.float64))
    scale = np.where(k > 0, np.minimum(1.0, max_prior_k / np.maximum(k, 1e-12)), 0.0)
    return c * scale, (k - c) * scale


def learnability(a: np.ndarray, b: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """Proposal score: expected p(1-p) under Beta(a, b), sharpened toward the band's centre."""
    mean = a / (a + b)
    signal = a * b / ((a + b) * (a + b + 1))  # E[p(1-p)], at most 0.25
    centre, half = (lo + hi) / 2, (hi - lo) / 2
    closeness = np.clip(1.0 - np.abs(mean - centre) / max(half, 1e-6), 0.0, 1.0)
    return signal * (0.05 + closeness)


class BandScheduler:
    name = "band"

    def __init__(self, n: int, cfg: BandConfig = BandConfig(), seed: int = 0,
                 offline: tuple[np.ndarray, np.ndarray] | None = None) -> None:
        if n < 1:
            raise ValueError("the problem pool is empty")
        self.n, self.cfg = n, cfg
        self.rng = np.random.default_rng(seed)
        if offline is not None:
            self.succ, self.fail = prior_from_profile(*offline, cfg.max_prior_k, cfg.base_prior)
        else:
            self.succ, self.fail = np.zeros(n), np.zeros(n)
        self.last = np.zeros(n, dtype=np.int64)  # step at which succ/fail were last decayed
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
    def _decayed(self, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        factor = self.cfg.decay ** (self.step - self.last[idx])
        return self.succ[idx] * factor, self.fail[idx] * factor

    def posterior(self, idx: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Current Beta(a, b) of `idx` (all problems when None), forgetting applied."""
        idx = np.arange(self.n) if idx is None else np.asarray(idx)
        s, f = self._decayed(idx)
        return self.cfg.base_prior[0] + s, self.cfg.base_prior[1] + f

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
        u = self.rng.random(m)
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
        if self.cfg.without_replacement and self.n - int(self.used.sum()) < batch:
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
        if self._scored_at != self.step and cand.size and np.mean(self._in_band_mask(cand)) < 0.5:
            self._rescore()  # proposals went stale since the last rescore: what was in band is solved
            cand = self._propose(batch * self.cfg.oversample)
        if cand.size < batch:  # proposal exhausted (stale scores): top up uniformly from the rest
            rest = np.setdiff1d(self._offerable(), cand, assume_unique=False)
            cand = np.concatenate([cand, self.rng.choice(rest, size=min(rest.size, batch - cand.size), replace=False)])
        a, b = self.posterior(cand)
        draw = self.rng.beta(a, b)  # Thompson: one plausible pass rate per candidate
        centre = (self.lo + self.hi) / 2
        inside = (draw >= self.lo) & (draw <= self.hi)
        key = np.where(inside, 0.0, 1.0) + np.abs(draw - centre)  # in-band first, then nearest the centre
        order = np.argsort(key, kind="stable")[:batch]
        chosen = cand[order]
        mean = a[order] / (a[order] + b[order])
        self.last_batch_in_band = float(np.mean((mean >= self.lo) & (mean <= self.hi)))
        if self.cfg.without_replacement:
            self.used[chosen] = True
        return chosen

    def _in_band_mask(self, idx: np.ndarray) -> np.ndarray:
        mean = self.pass_rate(idx)
        return (mean >= self.lo) & (mean <= self.hi)

    # ------------------------------------------------------------ evidence
    def update(self, idx, n_correct, group_size) -> None:
        idx = np.asarray(idx, dtype=np.int64)
        c = np.asarray(n_correct, dtype=np.float64)
        g = np.broadcast_to(np.asarray(group_size, dtype=np.float64), c.shape)
        s, f = self._decayed(idx)  # fold the pending decay in before adding new evidence
        self.succ[idx] = s
        self.fail[idx] = f
        self.last[idx] = self.step
        np.add.at(self.succ, idx, c)
        np.add.at(self.fail, idx, g - c)

    def tick(self) -> None:
        self.step += 1

    def stats(self) -> dict:
        return {"band_lo": self.lo, "band_hi": self.hi, "widenings": self.widenings, "epoch": self.epoch,
                "band_occupancy": self.last_batch_in_band, "step": self.step}

    # ------------------------------------------------------------ state
    def save(self, folder: str | Path) -> None:
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        tmp = folder / ".scheduler.tmp.npz"
        cdf = self._cdf if self._cdf is not None else np.zeros(0)
        np.savez(tmp, succ=self.succ, fail=self.fail, last=self.last, used=self.used, cdf=cdf)
        tmp.replace(folder / "scheduler.npz")
        io.write_json(folder / "scheduler.json", {
            "name": self.name, "n": self.n, "config": asdict(self.cfg), "step": self.step, "epoch": self.epoch,
            "lo": self.lo, "hi": self.hi, "widenings": self.widenings, "scored_at": self._scored_at,
            "in_band_available": getattr(self, "_in_band_available", 0), "rng": self.rng.bit_generator.state,
        })

    def load(self, folder: str | Path) -> None:
        folder = Path(folder)
        meta = json.loads((folder / "scheduler.json").read_text())
        if meta["name"] != self.name or meta["n"] != self.n:
            raise ValueError(f"{folder}: scheduler state is {meta['name']} over {meta['n']} problems, "
                             f"not {self.name} over {self.n}")
        with np.load(folder / "scheduler.npz", allow_pickle=False) as z:
            self.succ, self.fail, self.last, self.used = z["succ"], z["fail"], z["last"], z["used"]
            self._cdf = z["cdf"] if z["cdf"].size else None
        self.step, self.epoch, self.widenings = meta["step"], meta["epoch"], meta["widenings"]
        self.lo, self.hi = meta["lo"], meta["hi"]
        self._scored_at, self._in_band_available = meta["scored_at"], meta["in_band_available"]
        self.rng.bit_generator.state = meta["rng"]

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

    def save(self, folder: str | Path) -> None:
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        tmp = folder / ".scheduler.tmp.npz"
        np.savez(tmp, order=self.order)
        tmp.replace(folder / "scheduler.npz")
        io.write_json(folder / "scheduler.json", {"name": self.name, "n": self.n, "pos": self.pos,
                                                  "epoch": self.epoch, "rng": self.rng.bit_generator.state})

    def load(self, folder: str | Path) -> None:
        meta = json.loads((Path(folder) / "scheduler.json").read_text())
        if meta["name"] != self.name or meta["n"] != self.n:
            raise ValueError(f"{folder}: scheduler state does not match {self.name} over {self.n} problems")
        with np.load(Path(folder) / "scheduler.npz", allow_pickle=False) as z:
            self.order = z["order"]
        self.pos, self.epoch = meta["pos"], meta["epoch"]
        self.rng.bit_generator.state = meta["rng"]


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


def make_scheduler(name: str, n: int, seed: int = 0, offline=None, **kwargs) -> Scheduler:
    """A scheduler by name; `offline` is (n_correct, k) per problem (NaN where unprofiled)."""
    if name not in SCHEDULERS:
        raise ValueError(f"unknown scheduler {name!r}; choose one of: {', '.join(SCHEDULERS)}")
    if name == "band":
        cfg = BandConfig(**kwargs) if kwargs else BandConfig()
        return BandScheduler(n, cfg, seed=seed, offline=offline)
    if name == "offline_band":
        return OfflineBandScheduler(n, seed=seed, offline=offline, **kwargs)
    return UniformScheduler(n, seed=seed, **kwargs)
