"""The band scheduler: problems likely in a target band of pass rates, from the profiler's prior and
every outcome since (see `grpo_data.curriculum.scheduler` for the interface all schedulers share).

Step by step (the math is in `grpo_data.curriculum.band_math`):
- Prior: the empirical-Bayes grid prior the adaptive profiler decides with (`grpo_data.curriculum.stats`: a
  distribution of pass rates on the 41-point GRID, fitted by EM), one per difficulty group when the
  groups are an outside label such as the level (shrunk toward the pool's); when they are
  offline-estimate buckets (`difficulty_groups` without a level) pass `group_priors=False`: every
  group then keeps the pool's prior, as the profiler decides without levels, and the buckets only
  share drift. A problem's posterior is its group's prior times p^s (1 - p)^f, where
  s, f are its effective successes and failures: the offline counts plus every online outcome.
  At step 0 the scheduler's P(lo <= p <= hi) of every problem is therefore the profiler's, and
  P >= 0.5 is the profiler's band decision: a 0/2 screen in a level that is mostly hopeless is out
  of band, where a Beta(1, 1) posterior would put its mean at 0.25. Without an offline profile each
  group starts from a flat prior and learns its shape online (below).
- Forgetting: s and f shrink by `decay` per policy step (`tick()`, once per optimizer step;
  lazily: each problem's counts are as of its last outcome), so old evidence fades and the
  posterior returns toward its group's prior (a problem solved 500 steps ago is not assumed
  solved), except that a problem once solved is never back at p = 0, nor one once failed at p = 1.
- Sharing strength (`share`): each group carries a drift, a shift of its members' pass rates in
  logit space, estimated by damped Newton steps from the residuals of every observed group of
  answers; grid point p of a member stands for the pass rate sigmoid(logit(p) + drift). What the
  policy learns on a few problems of a level thus moves the estimates of the members nobody
  sampled (the frontier is followed, not rediscovered), most near 0.5 and little in the tails.
  Every `refit_every` steps each group's prior is refitted by EM to its members' evidence (warm-
  started from the last fit), so a group without a profile learns its shape (mostly hopeless?
  mostly solved?) from outcomes; every `rescore_every` steps the drifts are folded into the
  groups' counts and priors (a rebase, so the grid keeps its resolution where the band is).
- Proposal: the pool is filed by cell, a group and counts rounded to half samples
  (`grpo_data.curriculum.cell_index`). Each call scores the occupied cells, a few thousand, under the current
  priors, drifts and band, and draws candidates in proportion to P(in band) x offerable members,
  so the proposal follows every drift at once; O(N) work happens only when the pool is re-filed
  with forgetting folded in, every `rescore_every` steps. Problems that get outcomes move to their
  new cell at once; an epoch's end costs O(cells).
- Selection: each candidate's exact posterior is computed on the grid and the batch is drawn among
  them in proportion to P(in band) ** (1 / temperature) (`selection="band"`, the default; Gumbel
  top-k), so batches spread over the problems likely in band instead of always taking the same
  few; "thompson" ranks one posterior draw per candidate, "mean" the posterior mean. With
  `without_replacement`, a problem is not offered twice within an epoch; with `epoch="band"` the
  epoch ends once the problems not yet offered hold fewer than a batch likely in band (P >= 0.5),
  so every problem in band is trained once before any is trained again (the trainer's default: a
  policy trained again and again on the same few hundred problems memorizes them).
- Dry band (`dry`): when fewer offerable problems are likely in band than a batch needs, the band
  is never allowed to do worse than uniform sampling. `informative` (the default) takes the
  problems likely in band first and fills the rest of the batch by expected informativeness,
  E[1 - p^G - (1 - p)^G] at `group_size` answers under each candidate's posterior (the chance
  that the group trains at all, what dynamic resampling keeps): a draw weighted by it is, on a
  calibrated posterior, at least as informative as a uniform draw, whose expected
  informativeness is the pool's plain mean of the same quantity. Entering and leaving the dry
  state is logged, and `stats()` counts the slots filled that way. `widen` (the former rule)
  widens the band by `widen_step` (logged), up to [0, 1], and narrows it back when the band
  refills; measured on a 192-problem pool over 6 passes it drew problems that came back
  all-wrong once the band ran dry (batch pass rate 0.62 -> 0.30, informative ratio 0.33 against
  uniform's 0.35-0.38).
- Epochs: `epoch="band"` restarts as soon as the band's unoffered members run out. On a pool whose
  band holds a dozen problems that is every step or two: in `grpo bench curriculum` (200 problems,
  40 rollouts each) the band arms trained 62-103 distinct problems 5-8 times each where uniform
  sampling trained about 160 some 2.4 times, and their extra informative steps bought no held-out
  accuracy. `epoch="pass"` is a pass over the pool that skips what is predicted not to teach
  (E[mixed] < `skip_below`): every problem that can teach is trained once per pass, band first,
  and the predicted all-right and all-wrong ones are not generated at all.

How candidates become a batch is in `grpo_data.curriculum.band_selection`; what the scheduler
reports and saves (`stats`, `state_dict`) in `grpo_data.curriculum.band_state`.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np

from grpo_data.curriculum.allocation import expected_informative, p_informative
from grpo_data.curriculum.band_math import (
    CELL_QUANTUM,
    CELLS,
    band_columns,
    band_mass,
    count_cells,
    decay_factor,
    drift_step,
    offline_evidence,
    push_forward,
    refit_group_priors,
    shifted_grid,
    starting_priors,
    transport,
)
from grpo_data.curriculum.band_selection import (
    LIKELY,
    refresh_picks,
    select_dry,
    select_in_band,
    uniform_offerable,
)
from grpo_data.curriculum.band_state import BandState
from grpo_data.curriculum.cell_index import CellIndex, CellTable
from grpo_data.curriculum.stats import DEFAULT_BAND, DEFAULT_GROUP_SIZE, GRID, grid_likelihood, grid_posterior

logger = logging.getLogger(__name__)

CHUNK = 1 << 16  # rows per block when a whole pool's posteriors are asked for


@dataclass(frozen=True)
class BandConfig:
    """Settings of BandScheduler.

    lo, hi:              target band for the pass rate.
    decay:               per-policy-step factor on the weight of old evidence (0.99: half-life
                         about 70 steps).
    max_prior_k:         cap on the offline profile's weight, in samples (None: full weight, so the
                         step-0 band decisions are the profiler's; a cap makes online evidence
                         override the profile sooner, at the price of that agreement).
    oversample:          candidates proposed per slot before selection.
    rescore_every:       steps between re-filings of the whole pool by its evidence (forgetting since
                         the last folded in; with `share`, drifts folded into the groups' frames).
    refit_every:         steps between refits of the group priors (with `share`, when outcomes came in).
    group_priors:        one prior per group (groups from an outside label, e.g. the level); False
                         when the groups are buckets of the offline counts themselves: every group
                         then keeps the pool's prior (refitted online) and the groups only share drift.
    without_replacement: offer each problem at most once per epoch (as a dataloader does: the
                         trainer and the TRL/verl plug-ins take this default; False draws every
                         batch from the whole pool).
    epoch:               with without_replacement, when an epoch ends: "pool" once every problem
                         was offered (a dataloader's epoch, band-first order); "band" once fewer
                         than a batch of the problems not yet offered are likely in band; "pass"
                         once fewer than a batch of them are worth generating (expected chance of a
                         mixed group at `group_size` >= `skip_below`): a pass over the pool in
                         band-first order that skips the problems predicted all-right or all-wrong
                         (not generated, not charged) and trains every other problem once, so
                         training spreads over every problem that can teach instead of returning to
                         the few in band (see the module docstring's "Epochs").
    skip_below:          with epoch="pass": the expected informativeness below which a problem sits
                         out the pass.
    min_in_band_frac:    below this fraction of `batch` problems likely in band, widen the band.
    widen_step:          how much each widening adds on both sides.
    share:               share strength within groups: a logit drift per group, and priors
                         refitted online (False: every problem learns from its own outcomes only,
                         under its group's starting prior).
    drift_rate:          damping of each Newton step on a group's drift (0-1).
    drift_kappa:         pseudo-information added to each step's denominator (shrinks small groups).
    refit_iters:         EM iterations per prior refit (warm-started from the previous fit).
    shrink:              pseudo-problems pulling each group's prior toward the pool's (as
                         `stats.fit_group_priors`, which fits the starting priors).
    selection:           "band" draws the batch among the candidates in proportion to
                         P(in band) ** (1 / temperature); "thompson" takes candidates whose
                         posterior draw lies in the band first; "mean" those whose posterior mean does.
    temperature:         how sharply "band" selection prefers a higher P(in band) (0.25: a
                         candidate at 0.9 is (0.9 / 0.1) ** 4 ~ 6500 times likelier to be taken than
                         one at 0.1).
    explore:             share of every batch drawn uniformly from the whole pool, whatever its
                         estimates say (replay): keeps the easy and the hard ends in training and
                         their estimates fresh, at the cost of groups that are often all-equal.
    dry:                 what fills a batch when too few offerable problems are likely in band:
                         "informative" (expected informativeness at `group_size`, see the module
                         docstring) or "widen" (widen the band by widen_step).
    group_size:          answers per group the trainer samples (G): the G at which a dry band's
                         fill scores expected informativeness.
    """

    lo: float = DEFAULT_BAND[0]
    hi: float = DEFAULT_BAND[1]
    decay: float = 0.99
    max_prior_k: float | None = None
    oversample: int = 8
    rescore_every: int = 100
    refit_every: int = 10
    group_priors: bool = True
    without_replacement: bool = True
    min_in_band_frac: float = 1.0
    widen_step: float = 0.05
    share: bool = True
    drift_rate: float = 0.5
    drift_kappa: float = 4.0
    refit_iters: int = 20
    shrink: float = 20.0
    selection: str = "band"
    temperature: float = 0.25
    explore: float = 0.0
    epoch: str = "band"
    dry: str = "informative"
    group_size: int = DEFAULT_GROUP_SIZE
    skip_below: float = 0.2

    def __post_init__(self) -> None:
        if self.dry not in ("informative", "widen"):
            raise ValueError(f"dry must be informative or widen, got {self.dry!r}")
        if self.group_size < 2:
            raise ValueError(f"group_size must be >= 2 (a group of one answer never trains), got {self.group_size}")
        if not 0 <= self.lo < self.hi <= 1:
            raise ValueError(f"band must satisfy 0 <= lo < hi <= 1, got [{self.lo}, {self.hi}]")
        if not 0 < self.decay <= 1:
            raise ValueError(f"decay must be in (0, 1], got {self.decay}")
        if min(self.oversample, self.rescore_every, self.refit_every, self.refit_iters) < 1:
            raise ValueError("oversample, rescore_every, refit_every and refit_iters must be >= 1")
        if self.max_prior_k is not None and self.max_prior_k <= 0:
            raise ValueError(f"max_prior_k must be positive or None, got {self.max_prior_k}")
        if not 0 <= self.drift_rate <= 1 or self.drift_kappa <= 0:
            raise ValueError("drift_rate must be in [0, 1] and drift_kappa > 0")
        if self.shrink < 0 or self.temperature <= 0:
            raise ValueError("shrink must be >= 0 and temperature > 0")
        if not 0 <= self.explore <= 1:
            raise ValueError(f"explore must be in [0, 1], got {self.explore}")
        if self.epoch not in ("pool", "band", "pass"):
            raise ValueError(f"epoch must be pool, band or pass, got {self.epoch!r}")
        if not 0 <= self.skip_below < 1:
            raise ValueError(f"skip_below must be in [0, 1), got {self.skip_below}")
        if self.selection not in ("band", "thompson", "mean"):
            raise ValueError(f"selection must be band, thompson or mean, got {self.selection!r}")


class BandScheduler(BandState):
    name = "band"

    def __init__(self, n: int, cfg: BandConfig = BandConfig(), seed: int = 0,
                 offline: tuple[np.ndarray, np.ndarray] | None = None, groups: np.ndarray | None = None) -> None:
        if n < 1:
            raise ValueError("the problem pool is empty")
        self.n, self.cfg = n, cfg
        self.rng = np.random.default_rng(seed)
        groups = np.zeros(n, dtype=np.int64) if groups is None else np.asarray(groups)
        if groups.shape != (n,) or not np.issubdtype(groups.dtype, np.integer) or groups.min() < 0:
            raise ValueError(f"groups must be {n} non-negative integers, one per problem")
        self.group = np.unique(groups, return_inverse=True)[1].reshape(-1).astype(np.int64)
        n_groups = int(self.group.max()) + 1
        self.weights, self.pool_weights = starting_priors(offline, self.group, n_groups, cfg.shrink,
                                                          cfg.group_priors)  # (n_groups, G), (G,)
        self.drift = np.zeros(n_groups)  # each group's logit shift since its frame was last rebased
        self.shifted = np.zeros(n_groups)  # each group's drift folded into its frame so far (`logit_shift`)
        self.prior_rows: np.ndarray | None = None  # rows started from another model's view (`mark_prior_rows`)
        self._count_members()
        if offline is None:
            self.successes, self.failures = np.zeros(n), np.zeros(n)
        else:
            self.successes, self.failures = offline_evidence(*offline, cfg.max_prior_k)
        self.last = np.zeros(n, dtype=np.int64)  # step of the last outcome: the counts are as of then
        self.used = np.zeros(n, dtype=bool)  # offered in the current epoch
        self.n_used = 0
        self.step = self.epoch = self.widenings = 0
        self.lo, self.hi = cfg.lo, cfg.hi
        self.fresh = 0  # outcomes recorded since the last refit
        self.last_batch_in_band = float("nan")
        self.likely_total = self.likely_available = 0  # problems with proposal score >= LIKELY (and offerable)
        self.informative_total = self.informative_available = 0  # the same for E[mixed at group_size]
        self.passable_total = self.passable_available = 0  # E[mixed at group_size] >= skip_below (epoch "pass")
        self.scored_at = self.refit_at = self.largest_batch = 0
        self.dry, self.dry_fills, self.dry_filled = False, 0, 0  # dry-band state, slots filled by informativeness
        self._recell()

    # ------------------------------------------------------------ posterior
    def evidence(self, idx: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Effective (successes, failures) of `idx` (all when None) now, in its group's frame: offline
        and online counts, each weighted by decay ** its age."""
        sel = slice(None) if idx is None else np.asarray(idx)  # a slice: no 1M-row gathers
        fade = decay_factor(self.cfg.decay, self.step - self.last[sel])
        return self.successes[sel] * fade, self.failures[sel] * fade

    def posterior(self, idx: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(weights, pass rates), both (M, G): each problem's posterior over stats.GRID (its group's
        prior times the likelihood of its evidence) and the current pass rate each grid point stands
        for (GRID moved by the group's drift). Pass idx on large pools (all rows is 2 x N x 41 floats)."""
        idx = np.arange(self.n) if idx is None else np.asarray(idx, dtype=np.int64)
        s, f = self.evidence(idx)
        return grid_posterior(s, s + f, self.weights[self.group[idx]]), shifted_grid(self.drift[self.group[idx]])

    def prob_in_band(self, idx: np.ndarray | None = None) -> np.ndarray:
        """P(lo <= p <= hi) of `idx` under the current posterior (what selection ranks by)."""
        first, last = band_columns(self.drift, self.lo, self.hi)
        def band(rows):
            g = self.group[rows]
            return band_mass(self.posterior(rows)[0], first[g], last[g])
        return self._chunked(band, idx)

    def pass_rate(self, idx: np.ndarray | None = None) -> np.ndarray:
        """Posterior mean of the current pass rate of `idx`."""
        def mean(rows):
            post, values = self.posterior(rows)
            return (post * values).sum(axis=1)
        return self._chunked(mean, idx)

    def _chunked(self, fn, idx: np.ndarray | None) -> np.ndarray:
        idx = np.arange(self.n) if idx is None else np.asarray(idx, dtype=np.int64)
        if idx.size <= CHUNK:
            return fn(idx)
        return np.concatenate([fn(idx[i:i + CHUNK]) for i in range(0, idx.size, CHUNK)])

    # ------------------------------------------------------------ cells: the pool, summarized
    def _cell_keys(self, idx: np.ndarray | None = None) -> np.ndarray:
        """Cell key (group, rounded successes, rounded failures) of `idx` (all when None), from the evidence now."""
        s_cells, f_cells = count_cells(*self.evidence(idx))
        return (self.group[slice(None) if idx is None else idx] * CELLS + s_cells) * CELLS + f_cells

    def _cell_likelihood(self, slots: np.ndarray) -> np.ndarray:
        """(U, G) likelihood rows of the cells in `slots`, cached per cell (a cell's counts never change
        until the next re-filing; new cells get their rows when first asked for)."""
        known = self._lik.shape[0]
        if known < len(self.cells.keys):
            keys = np.asarray(self.cells.keys[known:], dtype=np.int64)
            successes, failures = keys // CELLS % CELLS * CELL_QUANTUM, keys % CELLS * CELL_QUANTUM
            self._lik = np.concatenate([self._lik, grid_likelihood(successes, successes + failures)])
        return self._lik[slots]

    def _cell_table(self) -> CellTable:
        """Every occupied cell's proposal score under the current priors, drifts and band: O(cells)."""
        slots, keys, sizes, avail = self.cells.occupied()
        group, s_cells, f_cells = keys // (CELLS * CELLS), keys // CELLS % CELLS, keys % CELLS
        post = self._cell_likelihood(slots) * self.weights[group]  # (U, G), as stats.grid_posterior
        post /= post.sum(axis=1, keepdims=True)
        first, last = band_columns(self.drift, self.lo, self.hi)
        score = band_mass(post, first[group], last[group])
        likely = score >= LIKELY
        self.likely_total, self.likely_available = int(sizes[likely].sum()), int(avail[likely].sum())
        informative = (post * p_informative(shifted_grid(self.drift[group]), self.cfg.group_size)).sum(axis=1)
        worth = informative >= LIKELY
        self.informative_total, self.informative_available = int(sizes[worth].sum()), int(avail[worth].sum())
        passable = informative >= self.cfg.skip_below
        self.passable_total, self.passable_available = int(sizes[passable].sum()), int(avail[passable].sum())
        return CellTable(slots, group, s_cells * CELL_QUANTUM, f_cells * CELL_QUANTUM, sizes, avail, score, informative)

    def _rebase(self) -> None:
        """Fold each group's drift into its frame: its members' counts and its prior move by the drift
        (band_math.transport, push_forward), and the drift restarts at 0."""
        moved = self.drift[self.group] != 0
        if moved.any():
            shift = self.drift[self.group[moved]]
            self.successes[moved], self.failures[moved] = transport(self.successes[moved], self.failures[moved], shift)
        for g in np.flatnonzero(self.drift):
            self.weights[g] = push_forward(self.weights[g], self.drift[g])
        self.shifted += self.drift
        self.drift[:] = 0.0

    def _recell(self) -> None:
        """File every problem under the cell of its evidence now (forgetting since the last re-cell
        folded in), after a rebase when sharing: O(N log N), every `rescore_every` steps."""
        if self.cfg.share:
            self._rebase()
        self.cells = CellIndex(self._cell_keys(), self.used)
        self._lik = np.zeros((0, GRID.size))
        self.scored_at = self.step

    def refit_priors(self) -> None:
        """Refit the group priors by EM to the cells' current evidence (warm-started; every
        `refit_every` steps of `sample` when outcomes came in)."""
        t = self._cell_table()
        seen = (t.successes + t.failures) > 0
        self.weights, self.pool_weights = refit_group_priors(
            t.successes[seen], t.failures[seen], t.group[seen], t.sizes[seen], self.weights, self.pool_weights,
            self.cfg.shrink, self.cfg.refit_iters, self.cfg.group_priors)
        self.fresh, self.refit_at = 0, self.step

    # ------------------------------------------------------------ selection
    def _uniform_offerable(self, m: int, exclude: np.ndarray) -> np.ndarray:
        """Up to m distinct problems drawn uniformly among those offerable now and not in `exclude`."""
        if self.cfg.without_replacement:
            return uniform_offerable(self.rng, m, self.n, exclude, self.used, self.n_used)
        return uniform_offerable(self.rng, m, self.n, exclude)

    def _propose(self, table: CellTable, m: int, score: np.ndarray | None = None) -> np.ndarray:
        """Up to m distinct offerable candidates: a cell in proportion to score (default: the band's,
        table.score) x offerable members, then one of its offerable members uniformly."""
        return self.cells.draw(table.slots, (table.score if score is None else score) * table.avail, m, self.rng)

    def _select(self, cand: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """k of the candidates by their exact posteriors (`band_selection.select_in_band`); (chosen,
        their P(in band))."""
        post, values = self.posterior(cand)  # (M, G) each
        first, last = band_columns(self.drift, self.lo, self.hi)
        q = band_mass(post, first[self.group[cand]], last[self.group[cand]])  # (M,) P(in band)
        order = select_in_band(post, values, q, k, self.lo, self.hi, self.cfg.selection, self.cfg.temperature, self.rng)
        return cand[order], q[order]

    def _select_dry(self, cand: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """k of the candidates when the band is dry (`band_selection.select_dry`): (chosen, their
        P(in band)); `dry_filled` is set to the slots filled by informativeness."""
        post, values = self.posterior(cand)
        first, last = band_columns(self.drift, self.lo, self.hi)
        q = band_mass(post, first[self.group[cand]], last[self.group[cand]])
        e = expected_informative(post, values, self.cfg.group_size)
        skip_below = self.cfg.skip_below if self.cfg.epoch == "pass" else None
        order, self.dry_filled = select_dry(q, e, k, self.cfg.temperature, skip_below, self.rng)
        return cand[order], q[order]

    def _maybe_adjust_band(self, batch: int) -> bool:
        # against the largest batch asked for: the trainer's top-up rounds ask for fewer, and must not
        # narrow a band that its full rounds need wide
        self.largest_batch = max(self.largest_batch, batch)
        if self.cfg.dry == "informative":  # the band stays; a dry batch is filled by `_select_dry`
            return False
        need = self.cfg.min_in_band_frac * self.largest_batch
        if self.likely_total < need and (self.lo > 0 or self.hi < 1):
            self.lo = max(0.0, self.lo - self.cfg.widen_step)
            self.hi = min(1.0, self.hi + self.cfg.widen_step)
            self.widenings += 1
            logger.warning("scheduler: only %d problems likely in band, widened to [%.2f, %.2f]",
                           self.likely_total, self.lo, self.hi)
            return True
        if (self.lo, self.hi) != (self.cfg.lo, self.cfg.hi) and self.likely_total > 4 * need:
            self.lo = min(self.cfg.lo, self.lo + self.cfg.widen_step)
            self.hi = max(self.cfg.hi, self.hi - self.cfg.widen_step)
            logger.info("scheduler: band refilled, narrowed to [%.2f, %.2f]", self.lo, self.hi)
            return True
        return False

    def _new_epoch_if_needed(self, batch: int) -> bool:
        if not self.cfg.without_replacement or self.n_used == 0:
            return False
        pool_done = self.n - self.n_used < batch
        # a band epoch ends when a new one would hold a batch again; with the informative fill a band
        # too small for any batch runs its epoch through the pool (restarting it on every call redrew
        # the same few in-band problems in every round of every step)
        # a batch of problems likely informative (E[mixed] >= LIKELY), once the fill has used them
        most = max(batch, self.largest_batch)
        refills = (self.cfg.dry != "informative" or self.likely_total >= most
                   or (self.informative_total >= most and self.informative_available < batch))
        band_done = self.cfg.epoch == "band" and self.likely_available < batch and refills
        # a pass ends when what is left is not worth generating, unless a new pass would not hold a
        # batch either: it then runs through the pool (restarting on every call redraws the same few)
        pass_done = self.cfg.epoch == "pass" and self.passable_available < batch and self.passable_total >= most
        if pool_done or band_done or pass_done:
            self.used[:] = False
            self.n_used = 0
            self.epoch += 1
            self.cells.reset_offered()
        return pool_done or band_done or pass_done

    def sample(self, batch: int) -> np.ndarray:
        batch = min(int(batch), self.n)
        if self.step - self.scored_at >= self.cfg.rescore_every:
            self._recell()
        if self.cfg.share and self.fresh and self.step - self.refit_at >= self.cfg.refit_every:
            self.refit_priors()
        table = self._cell_table()
        if self._new_epoch_if_needed(batch) | self._maybe_adjust_band(batch):
            table = self._cell_table()
        n_explore = int(round(self.cfg.explore * batch))
        n_band = batch - n_explore
        dry = self.cfg.dry == "informative" and self.likely_available < n_band  # this call fills by informativeness
        # the logged state, against the largest batch asked for: a top-up round asks for fewer and must
        # not make the log flap between dry and refilled within a step
        dry_state = self.cfg.dry == "informative" and self.likely_total < self.largest_batch
        self._report_dry_state(dry_state)
        m = n_band * self.cfg.oversample
        if dry:  # half the candidates as the band proposes (its likely members), half by informativeness
            worth = table.informative
            if self.cfg.epoch == "pass" and table.avail[worth >= self.cfg.skip_below].sum() >= n_band:
                worth = np.where(worth >= self.cfg.skip_below, worth, 0.0)  # propose only what the pass keeps
            cand = np.union1d(self._propose(table, m // 2), self._propose(table, m - m // 2, worth))
        else:
            cand = self._propose(table, m)
        if cand.size < n_band:  # proposal weights exhausted: top up uniformly from the rest
            cand = np.concatenate([cand, self._uniform_offerable(n_band - cand.size, cand)])
        self.dry_filled = 0
        chosen, q = self._select_dry(cand, n_band) if dry else self._select(cand, n_band)
        self.dry_fills += self.dry_filled
        self.last_batch_in_band = float(q.mean()) if q.size else float("nan")
        if n_explore:
            chosen = np.concatenate([chosen, self._uniform_offerable(n_explore, chosen)])
        if self.cfg.without_replacement:
            for i in chosen[~self.used[chosen]].tolist():
                self.cells.offer(i)
            self.n_used += int(np.count_nonzero(~self.used[chosen]))
            self.used[chosen] = True
        return chosen

    # ------------------------------------------------------------ evidence
    def update(self, idx, n_correct, group_size) -> None:
        idx = np.asarray(idx, dtype=np.int64)
        if idx.size == 0:
            return
        c = np.asarray(n_correct, dtype=np.float64)
        g = np.broadcast_to(np.asarray(group_size, dtype=np.float64), c.shape)
        grp = self.group[idx]
        if self.cfg.share:  # the drift learns from how well the posteriors predicted these outcomes
            post, values = self.posterior(idx)
            mean, slope = (post * values).sum(axis=1), (post * values * (1 - values)).sum(axis=1)
            self.drift += self.cfg.drift_rate * drift_step(mean, slope, c, g, grp, self.drift.size, self.cfg.drift_kappa)
        s, f = self.evidence(idx)  # rebased to now: forgetting folded in
        self.successes[idx], self.failures[idx] = s, f
        self.last[idx] = self.step
        new_s, new_f = transport(c, g - c, -self.drift[grp])  # outcomes of the drifted rate, in the group's frame
        np.add.at(self.successes, idx, new_s)
        np.add.at(self.failures, idx, new_f)
        self.fresh += idx.size
        touched = np.unique(idx)
        for i, key in zip(touched.tolist(), self._cell_keys(touched).tolist()):
            self.cells.move(i, key)

    def tick(self) -> None:
        self.step += 1

    # ------------------------------------------------------------ refresh
    def refresh_candidates(self, m: int) -> np.ndarray:
        """Up to m distinct problems worth re-estimating (`band_selection.refresh_picks`): half the
        stalest, half those whose band decision is least sure (cell score nearest LIKELY)."""
        t = self._cell_table()
        slot_score = np.zeros(len(self.cells.keys))
        slot_score[t.slots] = t.score
        return refresh_picks(self.rng, m, self.step - self.last, slot_score[self.cells.slot])
