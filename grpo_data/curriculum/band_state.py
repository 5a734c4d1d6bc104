"""What a band scheduler reports and saves: its `stats` (the band, the dry state, the learned logit
shift, apart for the rows that started from another model's view), the log lines on entering and
leaving a dry band, and its state as arrays and settings (`state_dict`, `load_state_dict`; `save`
and `load` through `grpo_data.curriculum.scheduler_state`) for an exact resume.

`BandState` is the half of `grpo_data.curriculum.band_scheduler.BandScheduler` that reads and
restores its attributes without deciding how it samples or learns; it holds no state of its own.
"""

from __future__ import annotations

import logging
from dataclasses import asdict

import numpy as np

from grpo_data.curriculum.cell_index import CellIndex
from grpo_data.curriculum.scheduler_state import StateFiles, check_state_matches
from grpo_data.curriculum.stats import GRID

logger = logging.getLogger("grpo_data.curriculum.band_scheduler")  # the scheduler's log, as before the split


class BandState(StateFiles):
    """`BandScheduler`'s reporting and persistence, over the attributes its `__init__` sets."""

    def _report_dry_state(self, dry_state: bool) -> None:
        """Log entering and leaving the dry state (too few problems likely in band for the largest
        batch asked for), once each way, and keep it for `stats`."""
        if dry_state != self.dry:
            if dry_state:
                logger.warning("scheduler: only %d problems likely in [%.2f, %.2f] for a batch of %d: the rest of each "
                               "batch is filled by expected informativeness at G=%d (no worse than uniform sampling "
                               "where the posteriors are calibrated)", self.likely_total, self.lo, self.hi,
                               self.largest_batch, self.cfg.group_size)
            else:
                logger.info("scheduler: the band holds a batch again (%d likely in band)", self.likely_total)
            self.dry = dry_state

    def mark_prior_rows(self, rows: np.ndarray) -> None:
        """Say which problems started from another model's view (a (N,) boolean mask): `stats` then
        reports their mean logit shift apart, the offset against that model learned online."""
        rows = np.asarray(rows, dtype=bool)
        if rows.shape != (self.n,):
            raise ValueError(f"prior rows must be {self.n} booleans, one per problem, got shape {rows.shape}")
        self.prior_rows = rows
        self._count_members()

    def _count_members(self) -> None:
        """Members per group, of the pool and of the prior's rows: `stats` averages the groups' shifts
        with them in O(groups) per step (the groups change only at construction and load)."""
        size = self.drift.size
        self._members = np.bincount(self.group, minlength=size)
        self._prior_members = (None if self.prior_rows is None or not self.prior_rows.any()
                               else np.bincount(self.group[self.prior_rows], minlength=size))

    def logit_shift(self) -> np.ndarray:
        """(N,) each problem's group drift learned since the start, in logits (folded and current):
        how much easier (> 0) the policy finds its group than the start said."""
        return (self.shifted + self.drift)[self.group]

    def stats(self) -> dict:
        shift = self.shifted + self.drift  # per group; `logit_shift` is the same per problem
        prior = ({} if self._prior_members is None
                 else {"prior_logit_shift": float(self._prior_members @ shift / self._prior_members.sum())})
        return {"band_lo": self.lo, "band_hi": self.hi, "widenings": self.widenings, "epoch": self.epoch,
                "band_occupancy": self.last_batch_in_band, "likely_in_band": self.likely_total, "step": self.step,
                "band_dry": float(self.dry), "dry_fills": self.dry_fills,
                "logit_shift": float(self._members @ shift / self.n), **prior}

    def state_dict(self) -> dict:
        """Arrays (numpy) and JSON-able settings: everything `load_state_dict` needs for an exact resume."""
        arrays = {"successes": self.successes, "failures": self.failures, "last": self.last, "used": self.used,
                  "group": self.group, "weights": self.weights, "pool_weights": self.pool_weights,
                  "drift": self.drift, "shifted": self.shifted, **self.cells.state()}
        meta = {"name": self.name, "n": self.n, "config": asdict(self.cfg), "step": self.step, "epoch": self.epoch,
                "lo": self.lo, "hi": self.hi, "widenings": self.widenings, "scored_at": self.scored_at,
                "refit_at": self.refit_at, "fresh": self.fresh, "last_batch_in_band": self.last_batch_in_band,
                "largest_batch": self.largest_batch, "dry": self.dry, "dry_fills": self.dry_fills,
                "rng": self.rng.bit_generator.state}
        return {"arrays": {k: np.array(v, copy=True) for k, v in arrays.items()}, "meta": meta}

    def load_state_dict(self, state: dict, origin: str = "state") -> None:
        meta, z = state["meta"], state["arrays"]
        check_state_matches(meta, self.name, self.n, origin)
        if "successes" not in z:
            raise ValueError(f"{origin}: band scheduler state from an older version (Beta posteriors); this "
                             "version cannot resume it: start the run's scheduler afresh")
        self.successes, self.failures, self.last, self.used = z["successes"], z["failures"], z["last"], z["used"]
        self.group, self.drift, self.weights, self.pool_weights = z["group"], z["drift"], z["weights"], z["pool_weights"]
        self.shifted = z["shifted"] if "shifted" in z else np.zeros_like(self.drift)  # absent in older states
        self._count_members()
        self.cells = CellIndex.from_state(z)
        self._lik = np.zeros((0, GRID.size))
        self.n_used = int(np.count_nonzero(self.used))
        self.step, self.epoch, self.widenings = meta["step"], meta["epoch"], meta["widenings"]
        self.lo, self.hi, self.scored_at, self.refit_at = meta["lo"], meta["hi"], meta["scored_at"], meta["refit_at"]
        self.fresh, self.last_batch_in_band, self.largest_batch = meta["fresh"], meta["last_batch_in_band"], meta["largest_batch"]
        self.dry, self.dry_fills = meta.get("dry", False), meta.get("dry_fills", 0)  # absent in older states
        self.rng.bit_generator.state = meta["rng"]
        saved = meta.get("config") or {}
        changed = {k: (v, getattr(self.cfg, k)) for k, v in saved.items() if hasattr(self.cfg, k) and getattr(self.cfg, k) != v}
        if changed:  # e.g. without_replacement, whose default became True: the run goes on under the settings given now
            logger.warning("%s: resumed with settings other than the saved ones (saved -> now): %s", origin,
                           ", ".join(f"{k} {a!r} -> {b!r}" for k, (a, b) in sorted(changed.items())))
