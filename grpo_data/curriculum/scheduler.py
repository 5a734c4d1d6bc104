"""Difficulty schedulers: which problems the trainer gets next.

A GRPO group of G answers teaches only when some are right and some wrong. `BandScheduler` keeps,
for every problem, what is known about the current policy's pass rate p and feeds the trainer the
problems most likely to lie in a target band [lo, hi].

All schedulers share one interface (`Scheduler`), are picked by name from `SCHEDULERS`, and keep
their state in numpy arrays saved without pickle (npz + JSON) for exact resume:

    sched = make_scheduler("band", n_problems, seed=0, offline=(n_correct, k), groups=level_ids)
    idx = sched.sample(512)                   # indices into the problem table
    sched.update(idx, n_correct, group_size)  # every group's outcome, kept or dropped
    sched.save(folder); sched.load(folder)

The band scheduler (`BandScheduler`, the default) lives in `grpo_data.curriculum.band_scheduler`; uniform
sampling and a fixed offline band are here; two peers' samplers, prime-rl's difficulty pools
(`pools`) and GRESO's selective rollouts (`greso`), in `grpo_data.curriculum.peer_schedulers`; Thompson
sampling over Beta posteriors (`thompson`) and sGPO's one-profile curriculum (`sgpo`), in
`grpo_data.curriculum.posterior_samplers`.
"""

from __future__ import annotations

import logging
from dataclasses import fields
from pathlib import Path
from typing import Protocol

import numpy as np

from grpo_data.curriculum.band_math import difficulty_groups
from grpo_data.curriculum.band_scheduler import BandConfig, BandScheduler
from grpo_data.curriculum.peer_schedulers import PEER_CONFIGS, PEER_SCHEDULERS, GresoScheduler, PoolsScheduler
from grpo_data.curriculum.posterior_samplers import (
    POSTERIOR_CONFIGS,
    POSTERIOR_SCHEDULERS,
    SgpoScheduler,
    ThompsonScheduler,
)
from grpo_data.curriculum.scheduler_state import StateFiles, check_state_matches, load_state, save_state

logger = logging.getLogger(__name__)

__all__ = ["SCHEDULERS", "BandConfig", "BandScheduler", "GresoScheduler", "OfflineBandScheduler", "PoolsScheduler",
           "Scheduler", "SgpoScheduler", "ThompsonScheduler", "UniformScheduler", "difficulty_groups", "load_state", "make_scheduler", "save_state"]


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


class UniformScheduler(StateFiles):
    """Uniform sampling (optionally without replacement per epoch); learns nothing from outcomes."""

    name = "uniform"

    def __init__(self, n: int, seed: int = 0, without_replacement: bool = True) -> None:
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


class OfflineBandScheduler(UniformScheduler):
    """Uniform over the problems whose offline pass rate lies in [lo, hi]; no online updates."""

    name = "offline_band"

    def __init__(self, n: int, seed: int = 0, offline: tuple[np.ndarray, np.ndarray] | None = None,
                 lo: float = BandConfig.lo, hi: float = BandConfig.hi, **kwargs) -> None:
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


SCHEDULERS = {"band": BandScheduler, "uniform": UniformScheduler, "offline_band": OfflineBandScheduler,
              **PEER_SCHEDULERS, **POSTERIOR_SCHEDULERS}
# the schedulers whose own settings come in the trainer's `scheduler.settings`, and their config classes
SETTINGS_SCHEDULERS = {**PEER_CONFIGS, **POSTERIOR_CONFIGS}
# the schedulers that can start from another model's prior (`grpo_data.curriculum.priors`): the band scheduler's
# difficulty groups learn that model's offset to the policy as drift. offline_band would keep problems
# by the other model's rate with no offset; uniform, pools and greso start from no profile at all.
PRIOR_SCHEDULERS = ("band",)


def prior_refusal(name: str, setting: str) -> str:
    """The message refusing a prior (`setting`, as the caller names it) to scheduler `name`."""
    return (f"{setting} is used by the {', '.join(PRIOR_SCHEDULERS)} scheduler only; {name} ignores it "
            "(offline_band would keep problems by the other model's rate with no offset learned; uniform, "
            "pools and greso start from no profile): use the band scheduler, or leave the prior out")


def make_scheduler(name: str, n: int, seed: int = 0, offline=None, groups=None, **kwargs) -> Scheduler:
    """A scheduler by name; `offline` is (n_correct, k) per problem (NaN where unprofiled); `groups`
    (band only) is a difficulty group id per problem (`difficulty_groups`), one fitted prior each.
    The peers' schedulers (pools, greso, thompson) start without a profile, as they ship; sgpo needs
    one; unknown settings of band and the peers' schedulers are refused, naming the accepted ones."""
    if name not in SCHEDULERS:
        raise ValueError(f"unknown scheduler {name!r}; choose one of: {', '.join(SCHEDULERS)}")
    if name == "band":
        accepted = [f.name for f in fields(BandConfig)]
        unknown = sorted(set(kwargs) - set(accepted))
        if unknown:
            raise ValueError(f"unknown band scheduler setting(s) {unknown}; accepted: {', '.join(accepted)}")
        return BandScheduler(n, BandConfig(**kwargs), seed=seed, offline=offline, groups=groups)
    if name == "sgpo":  # sGPO is its profile: sizes, filter and order all come from it
        return SgpoScheduler.from_settings(n, offline=offline, seed=seed, **kwargs)
    if name in PEER_SCHEDULERS or name == "thompson":
        if offline is not None:
            logger.info("%s scheduler: the offline profile is not used (the peer's sampler starts from none)", name)
        return SCHEDULERS[name].from_settings(n, seed=seed, **kwargs)
    accepted = ("lo", "hi", "without_replacement") if name == "offline_band" else ("without_replacement",)
    unknown = sorted(set(kwargs) - set(accepted))
    if unknown:
        raise ValueError(f"unknown {name} scheduler setting(s) {unknown}; accepted: {', '.join(accepted)}")
    if name == "offline_band":
        return OfflineBandScheduler(n, seed=seed, offline=offline, **kwargs)
    return UniformScheduler(n, seed=seed, **kwargs)
