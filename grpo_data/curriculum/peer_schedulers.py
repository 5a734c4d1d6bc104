"""Two samplers peers ship, rebuilt as schedulers (`grpo_data.curriculum.scheduler` interface) so issue #33 can
compare them with the band scheduler on equal terms. Pure numpy; learned from the sources cited,
written here.

`pools` (arm P): prime-rl's `DifficultyPoolSampler`, PrimeIntellect-ai/prime-rl at commit
559b44772e471d1538537b8805cc77f3824a5e64, src/prime_rl/orchestrator/curriculum/samplers/pool.py,
its settings in packages/prime-rl-configs/src/prime_rl/configs/orchestrator.py
(`DifficultyPoolConfig`, `default_difficulty_pools`) and docs/algorithms.md ("Curricula").
- Each problem's pool comes from its latest group mean (here the pass rate n_correct / group_size;
  prime-rl averages the rewards of the group's valid traces, and ignores a group with none, as
  `update` ignores a group of size 0). A pool's threshold is its inclusive maximum: hard p <= 0.25,
  normal 0.25 < p <= 0.75, easy p > 0.75 (prime-rl's easy pool, threshold 1.0, is its catch-all).
  Settings `hard_max` = 0.25, `normal_max` = 0.75.
- Weights are per problem, not per pool: a problem is drawn with probability proportional to its
  pool's weight, `hard_weight` = 0.2, `normal_weight` = 1.0, `easy_weight` = 0.2, so a pool's share
  of the draws is weight x size / total. An empty pool therefore takes no share and needs no rule.
  A problem without an outcome yet is in no pool (prime-rl's metric `pool/unseen`, here
  `pool_unseen`) and has the neutral weight `unseen_weight` = 1.0 (hard-coded in prime-rl's
  `__next__`), the normal pool's weight at the defaults: unseen problems are drawn as if normal.
  With no problem of positive weight, `sample` raises, as prime-rl does.
- prime-rl draws tasks one at a time with replacement (`random.choices`), with no epochs. Our
  interface wants `batch` distinct problems: a batch is drawn without replacement in proportion to
  the weights (successive sampling, by Gumbel top-k); batches are independent, so a problem can come
  back in the next batch or the next round of the same step. `epoch` in `stats()` is the problems
  drawn so far divided by the pool size (rounded down), a count of draws, not a pass over the pool.
  prime-rl's seed default is 42; here the run's seed, as for every scheduler.
- prime-rl stacks an admission gate that rejects zero-advantage groups and samples again
  (`AdvRangeGate`, reject_min = reject_max = 0); our trainer does that itself
  (`rollout.dynamic_resampling`), so this scheduler is the pools only. As in prime-rl, the sampler
  sees every group's outcome, admitted or rejected.

`greso` (arm R): GRESO, "Act Only When It Pays: Efficient Reinforcement Learning for LLM Reasoning via
Selective Rollouts" (Zheng et al., arXiv 2506.02177): probabilistic pre-rollout filtering, as on the
project page (Infini-AI-Lab/GRESO docs/index.html) and in its code, Infini-AI-Lab/GRESO at commit
b27784315479921ea1977178d7e6c4858b2ae5a1 (verl/trainer/ttis/presampling_selector.py
`easy_probabilistic_skip`, `hard_probabilistic_skip`, `filter_examples_all_probabilistic`;
verl/trainer/ppo/ray_trainer.py `targeted_easy`/`targeted_hard` and the per-step adjustment;
train-scripts/*_greso.sh for the values run).
- Each prompt's outcome history is kept as two run lengths: how many of its latest groups in a row
  came back all-right (easy; their code: mean reward >= 0.98) or all-wrong (hard; mean <= 0.11);
  a mixed group ends both runs.
- Walking the prompt stream (a dataloader: one uniform permutation per epoch), a prompt whose run
  has length z >= 1 is skipped with probability 1 - max(p ** z, `keep_floor`), p the exploration
  probability of its kind (`p_easy` or `p_hard`). `keep_floor` = 0.01 (their code's `max(p ** count,
  0.01)`) is the minimum chance a prompt is still generated however long its run. A skipped prompt
  waits for the next epoch.
- After every optimizer step (`tick`), the shares of the groups generated since the last step that
  were all-right and all-wrong are compared with their targets, `target_zero_variance` / 3 for easy
  and 2/3 of it for hard (their split: more exploration of hard prompts, which the policy may learn
  to solve); at or above target p moves down by `step` (skip more), below it up by `step`, within
  [`p_min`, `p_max`]. Their values: p_easy = p_hard = 0.5 and target_zero_variance = 0.25
  (train-scripts/math_qwen_1_5b_dm_greso.sh, math_qwen_7b_dm_greso.sh,
  deepseek_qwen_1_5b_dm_greso.sh); step 0.01, p_min 0.05, p_max 0.95 (ray_trainer.py defaults).
  As in their code, p is adjusted only from the second epoch on (`epoch > 0`): in the first no
  prompt has a history, so nothing is skipped and the ratios say nothing about the filter.
- GRESO also sizes its sampling batch adaptively from the last zero-variance ratio; in this
  codebase the trainer's resampling rounds (`rollout.oversample`) do that, so the scheduler only
  decides which prompts are generated. Within one `sample` call the stream may wrap into a new
  epoch; a prompt already in the batch then moves to the end of the new epoch's order, so the batch
  stays distinct and the prompt is still offered once in that epoch.
"""

from __future__ import annotations

import logging
import math
from dataclasses import asdict, dataclass, fields

import numpy as np

from grpo_data.curriculum.band_math import gumbel_top
from grpo_data.curriculum.scheduler_state import StateFiles, check_state_matches

logger = logging.getLogger(__name__)

HARD, NORMAL, EASY, UNSEEN = 0, 1, 2, -1  # pool codes
POOL_NAMES = {HARD: "hard", NORMAL: "normal", EASY: "easy"}
EASY_TARGET_SHARE = 1 / 3  # GRESO: targeted_easy = target / 3, targeted_hard = target * 2 / 3
ADAPT_FROM_EPOCH = 1  # GRESO: exploration probabilities adjusted only when epoch > 0


# ---------------------------------------------------------------------------- settings
def _setting_number(owner: str, name: str, value) -> float:
    """A setting as a finite float; YAML reads `1e-2` as a string, which is a number here."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ValueError(f"{owner} setting {name}: expected a number, got {value!r}")
    try:
        number = float(value)
    except ValueError:
        raise ValueError(f"{owner} setting {name}: expected a number, got {value!r}") from None
    if not math.isfinite(number):
        raise ValueError(f"{owner} setting {name}: expected a finite number, got {value!r}")
    return number


@dataclass(frozen=True)
class PoolsConfig:
    """Settings of PoolsScheduler (defaults: prime-rl `default_difficulty_pools`, see the module).

    hard_max:      inclusive maximum pass rate of the hard pool.
    normal_max:    inclusive maximum pass rate of the normal pool (above it: easy).
    hard_weight:   sampling weight of each problem in the hard pool.
    normal_weight: sampling weight of each problem in the normal pool.
    easy_weight:   sampling weight of each problem in the easy pool.
    unseen_weight: sampling weight of a problem with no outcome yet (prime-rl: 1.0, fixed).
    """

    hard_max: float = 0.25
    normal_max: float = 0.75
    hard_weight: float = 0.2
    normal_weight: float = 1.0
    easy_weight: float = 0.2
    unseen_weight: float = 1.0

    def __post_init__(self) -> None:
        if not 0 <= self.hard_max < self.normal_max <= 1:
            raise ValueError(f"pools needs 0 <= hard_max < normal_max <= 1, got hard_max={self.hard_max}, "
                             f"normal_max={self.normal_max}")
        weights = {"hard_weight": self.hard_weight, "normal_weight": self.normal_weight,
                   "easy_weight": self.easy_weight, "unseen_weight": self.unseen_weight}
        negative = [k for k, v in weights.items() if v < 0]
        if negative:
            raise ValueError(f"pools weights must be >= 0, got {', '.join(f'{k}={weights[k]}' for k in negative)}")
        if max(self.hard_weight, self.normal_weight, self.easy_weight) == 0:
            raise ValueError("pools needs at least one of hard_weight, normal_weight, easy_weight > 0")

    def weights(self) -> np.ndarray:
        """Weight per pool code, indexed HARD, NORMAL, EASY, then UNSEEN (code -1: the last entry)."""
        return np.array([self.hard_weight, self.normal_weight, self.easy_weight, self.unseen_weight])


@dataclass(frozen=True)
class GresoConfig:
    """Settings of GresoScheduler (defaults: GRESO's scripts and code, see the module).

    p_easy:              starting exploration probability of prompts whose latest groups were all right.
    p_hard:              starting exploration probability of prompts whose latest groups were all wrong.
    target_zero_variance: target share of generated groups that are all-equal (1/3 of it all-right,
                          2/3 all-wrong).
    step:                change of p_easy / p_hard per optimizer step.
    p_min, p_max:        bounds of p_easy and p_hard.
    keep_floor:          least probability that a prompt is generated, however long its run.
    """

    p_easy: float = 0.5
    p_hard: float = 0.5
    target_zero_variance: float = 0.25
    step: float = 0.01
    p_min: float = 0.05
    p_max: float = 0.95
    keep_floor: float = 0.01

    def __post_init__(self) -> None:
        if not 0 <= self.p_min <= self.p_max <= 1:
            raise ValueError(f"greso needs 0 <= p_min <= p_max <= 1, got p_min={self.p_min}, p_max={self.p_max}")
        for name in ("p_easy", "p_hard"):
            if not self.p_min <= getattr(self, name) <= self.p_max:
                raise ValueError(f"greso {name}={getattr(self, name)} must lie in [p_min, p_max] = "
                                 f"[{self.p_min}, {self.p_max}]")
        if not 0 <= self.target_zero_variance <= 1 or self.step < 0:
            raise ValueError(f"greso needs 0 <= target_zero_variance <= 1 and step >= 0, got "
                             f"{self.target_zero_variance} and {self.step}")
        if not 0 < self.keep_floor <= 1:
            raise ValueError(f"greso keep_floor must be in (0, 1] (0 could skip a prompt forever and stall "
                             f"sampling), got {self.keep_floor}")


def peer_config(name: str, settings: dict | None, cls=None):
    """The config (`cls`, default PEER_CONFIGS[name]) of peer scheduler `name` from a mapping of
    settings; unknown names are refused with the accepted ones (the trainer's `scheduler.settings`,
    `Curriculum.from_columns(**settings)`)."""
    cls = cls or PEER_CONFIGS[name]
    settings = settings or {}
    if not isinstance(settings, dict):
        raise ValueError(f"{name} scheduler settings must be a mapping of name: value, got {settings!r}")
    accepted = [f.name for f in fields(cls)]
    unknown = sorted(set(settings) - set(accepted))
    if unknown:
        raise ValueError(f"unknown {name} scheduler setting(s) {unknown}; accepted: {', '.join(accepted)}")
    return cls(**{k: _setting_number(name, k, v) for k, v in settings.items()})


# ---------------------------------------------------------------------------- pure math
def pool_of(rate: np.ndarray, hard_max: float, normal_max: float) -> np.ndarray:
    """Pool code per problem from its latest pass rate (NaN: no outcome yet, UNSEEN). Thresholds are
    inclusive maxima: rate <= hard_max is HARD, rate <= normal_max NORMAL, above EASY."""
    rate = np.asarray(rate, dtype=np.float64)
    code = np.where(rate <= hard_max, HARD, np.where(rate <= normal_max, NORMAL, EASY))
    return np.where(np.isnan(rate), UNSEEN, code).astype(np.int8)


def weighted_distinct(weights: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    """Up to k distinct positions drawn without replacement with probability proportional to
    `weights` (successive sampling: each draw among the ones left, renormalized); only positions of
    positive weight, so fewer than k when fewer have one."""
    weights = np.asarray(weights, dtype=np.float64)
    with np.errstate(divide="ignore"):
        log_w = np.log(weights)  # -inf for weight 0: never drawn
    k = min(k, int(np.count_nonzero(weights > 0)))
    return gumbel_top(log_w, k, rng)


def group_kinds(n_correct: np.ndarray, group_size: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(all_right, all_wrong) per group; a group of size 0 is neither (it says nothing)."""
    c, g = np.asarray(n_correct, dtype=np.float64), np.asarray(group_size, dtype=np.float64)
    return (g > 0) & (c >= g), (g > 0) & (c <= 0)


def greso_skip_probability(easy_run: np.ndarray, hard_run: np.ndarray, p_easy: float, p_hard: float,
                           keep_floor: float) -> np.ndarray:
    """GRESO's skip probability per prompt: 1 - max(p ** z, keep_floor) with z the length of its run
    of all-right (p = p_easy) or all-wrong (p = p_hard) latest groups; 0 without a run. A prompt has
    at most one run (its latest group was one kind or mixed)."""
    easy_run, hard_run = np.asarray(easy_run), np.asarray(hard_run)
    keep_easy = np.maximum(np.power(p_easy, easy_run, dtype=np.float64), keep_floor)
    keep_hard = np.maximum(np.power(p_hard, hard_run, dtype=np.float64), keep_floor)
    return np.where(easy_run > 0, 1 - keep_easy, np.where(hard_run > 0, 1 - keep_hard, 0.0))


def adapt_exploration(p: float, observed: float, target: float, step: float, p_min: float, p_max: float) -> float:
    """GRESO's per-step adjustment: at or above the target share of all-equal groups of its kind,
    explore less (p - step, skip more); below it, explore more (p + step); within [p_min, p_max]."""
    return max(p - step, p_min) if observed >= target else min(p + step, p_max)


# ---------------------------------------------------------------------------- pools
class PoolsScheduler(StateFiles):
    """prime-rl's difficulty pools (see the module docstring for the source and what differs)."""

    name = "pools"

    def __init__(self, n: int, cfg: PoolsConfig | None = None, seed: int = 0) -> None:
        if n < 1:
            raise ValueError("the problem pool is empty")
        self.n = n
        self.cfg = cfg or PoolsConfig()
        self.rng = np.random.default_rng(seed)
        self.rate = np.full(n, np.nan)  # latest group pass rate per problem; NaN: no outcome yet
        self.drawn = 0
        self.last_batch = np.zeros(0, dtype=np.int64)

    @classmethod
    def from_settings(cls, n: int, seed: int = 0, **settings) -> PoolsScheduler:
        return cls(n, peer_config(cls.name, settings), seed=seed)

    def pools(self) -> np.ndarray:
        return pool_of(self.rate, self.cfg.hard_max, self.cfg.normal_max)

    def weights(self) -> np.ndarray:
        return self.cfg.weights()[self.pools()]  # code -1 (unseen) takes the last entry

    def sample(self, batch: int) -> np.ndarray:
        weights = self.weights()
        if not np.any(weights > 0):
            raise RuntimeError("pools: no problem has a positive weight (every problem is in a pool of weight 0); "
                               "raise hard_weight, normal_weight or easy_weight")
        out = weighted_distinct(weights, min(batch, self.n), self.rng)
        self.drawn += out.size
        self.last_batch = out
        return out

    def update(self, idx, n_correct, group_size) -> None:
        """The latest pass rate of each problem; a problem twice in `idx` keeps its last group's."""
        idx = np.asarray(idx, dtype=np.int64)
        c = np.asarray(n_correct, dtype=np.float64)
        g = np.broadcast_to(np.asarray(group_size, dtype=np.float64), idx.shape)
        check_outcomes(idx, c, g, self.n)
        seen = g > 0
        idx, rate = idx[seen], c[seen] / g[seen]
        last = idx.size - 1 - np.unique(idx[::-1], return_index=True)[1]  # last occurrence of each problem
        self.rate[idx[last]] = rate[last]

    def tick(self) -> None:
        return None  # prime-rl's pools have no clock: a pass rate stands until the next outcome

    def stats(self) -> dict:
        pools = self.pools()
        counts = np.bincount(pools + 1, minlength=4)  # unseen, hard, normal, easy
        batch = np.bincount(pools[self.last_batch] + 1, minlength=4)
        return {"epoch": self.drawn // self.n, "pool_unseen": int(counts[0]), "pool_hard": int(counts[1]),
                "pool_normal": int(counts[2]), "pool_easy": int(counts[3]),
                "batch_unseen": int(batch[0]), "batch_hard": int(batch[1]), "batch_normal": int(batch[2]),
                "batch_easy": int(batch[3])}

    def state_dict(self) -> dict:
        return {"arrays": {"rate": self.rate.copy(), "last_batch": self.last_batch.copy()},
                "meta": {"name": self.name, "n": self.n, "config": asdict(self.cfg), "drawn": self.drawn,
                         "rng": self.rng.bit_generator.state}}

    def load_state_dict(self, state: dict, origin: str = "state") -> None:
        meta, z = state["meta"], state["arrays"]
        check_state_matches(meta, self.name, self.n, origin)
        self.rate, self.last_batch = np.array(z["rate"], dtype=np.float64), np.array(z["last_batch"], dtype=np.int64)
        self.drawn = meta["drawn"]
        self.rng.bit_generator.state = meta["rng"]


# ---------------------------------------------------------------------------- greso
class GresoScheduler(StateFiles):
    """GRESO's selective rollouts (see the module docstring for the source and what differs)."""

    name = "greso"

    def __init__(self, n: int, cfg: GresoConfig | None = None, seed: int = 0) -> None:
        if n < 1:
            raise ValueError("the problem pool is empty")
        self.n = n
        self.cfg = cfg or GresoConfig()
        self.rng = np.random.default_rng(seed)
        self.order = self.rng.permutation(n)
        self.pos = 0
        self.epoch = 0
        self.step = 0
        self.easy_run = np.zeros(n, dtype=np.int64)  # latest groups in a row that were all right
        self.hard_run = np.zeros(n, dtype=np.int64)  # latest groups in a row that were all wrong
        self.p_easy, self.p_hard = self.cfg.p_easy, self.cfg.p_hard
        self.counts = dict.fromkeys(COUNTERS, 0)

    @classmethod
    def from_settings(cls, n: int, seed: int = 0, **settings) -> GresoScheduler:
        return cls(n, peer_config(cls.name, settings), seed=seed)

    def skip_probability(self) -> np.ndarray:
        return greso_skip_probability(self.easy_run, self.hard_run, self.p_easy, self.p_hard, self.cfg.keep_floor)

    def _new_epoch(self, in_batch: np.ndarray) -> None:
        """A fresh permutation; prompts already in the batch being drawn go last (still offered once)."""
        order = self.rng.permutation(self.n)
        taken = in_batch[order]
        self.order = np.concatenate([order[~taken], order[taken]])
        self.pos = 0
        self.epoch += 1

    def sample(self, batch: int) -> np.ndarray:
        """Walk the stream, skipping by GRESO's rule, until `batch` prompts are kept. Every prompt is
        kept with probability >= keep_floor, so the walk ends; skip decisions are independent given
        the state, so each stretch of the stream is decided at once."""
        batch = min(batch, self.n)
        skip = self.skip_probability()
        in_batch = np.zeros(self.n, dtype=bool)
        out: list[np.ndarray] = []
        kept = skipped_easy = skipped_hard = 0
        while kept < batch:
            if self.pos >= self.n:
                self._new_epoch(in_batch)
            window = self.order[self.pos:]
            keep = (self.rng.random(window.size) >= skip[window]) & ~in_batch[window]
            hits = np.flatnonzero(keep)[: batch - kept]
            walked = int(hits[-1]) + 1 if hits.size == batch - kept else window.size
            passed = window[:walked][~keep[:walked] & ~in_batch[window[:walked]]]  # skipped by the rule
            skipped_easy += int(np.count_nonzero(self.easy_run[passed] > 0))
            skipped_hard += int(np.count_nonzero(self.hard_run[passed] > 0))
            take = window[hits]
            in_batch[take] = True
            out.append(take)
            kept += take.size
            self.pos += walked
        self.counts["skipped_easy"] += skipped_easy
        self.counts["skipped_hard"] += skipped_hard
        self.counts["offered"] += kept
        self.counts["last_skipped_easy"], self.counts["last_skipped_hard"] = skipped_easy, skipped_hard
        return np.concatenate(out) if out else np.zeros(0, dtype=np.int64)

    def update(self, idx, n_correct, group_size) -> None:
        """Each group's kind extends or ends its prompt's runs, in the order given; the step's counts
        of all-right and all-wrong groups feed the next `tick`. Groups of size 0 say nothing."""
        idx = np.asarray(idx, dtype=np.int64)
        c = np.asarray(n_correct, dtype=np.float64)
        g = np.broadcast_to(np.asarray(group_size, dtype=np.float64), idx.shape)
        check_outcomes(idx, c, g, self.n)
        all_right, all_wrong = group_kinds(c, g)
        for i, right, wrong, size in zip(idx.tolist(), all_right.tolist(), all_wrong.tolist(), g.tolist()):
            if size <= 0:
                continue
            self.easy_run[i] = self.easy_run[i] + 1 if right else 0
            self.hard_run[i] = self.hard_run[i] + 1 if wrong else 0
        seen = g > 0
        self.counts["step_groups"] += int(np.count_nonzero(seen))
        self.counts["step_all_right"] += int(np.count_nonzero(all_right))
        self.counts["step_all_wrong"] += int(np.count_nonzero(all_wrong))

    def tick(self) -> None:
        """One optimizer step: adjust p_easy and p_hard from the step's shares of all-right and
        all-wrong groups (from the second epoch on), then start counting the next step."""
        self.step += 1
        groups = self.counts["step_groups"]
        if groups > 0 and self.epoch >= ADAPT_FROM_EPOCH:
            target, c = self.cfg.target_zero_variance, self.cfg
            self.p_easy = adapt_exploration(self.p_easy, self.counts["step_all_right"] / groups,
                                            target * EASY_TARGET_SHARE, c.step, c.p_min, c.p_max)
            self.p_hard = adapt_exploration(self.p_hard, self.counts["step_all_wrong"] / groups,
                                            target * (1 - EASY_TARGET_SHARE), c.step, c.p_min, c.p_max)
        for key in ("step_groups", "step_all_right", "step_all_wrong"):
            self.counts[key] = 0

    def stats(self) -> dict:
        walked = self.counts["offered"] + self.counts["skipped_easy"] + self.counts["skipped_hard"]
        return {"epoch": self.epoch, "step": self.step, "p_easy": self.p_easy, "p_hard": self.p_hard,
                "skipped_easy": self.counts["skipped_easy"], "skipped_hard": self.counts["skipped_hard"],
                "last_skipped_easy": self.counts["last_skipped_easy"],
                "last_skipped_hard": self.counts["last_skipped_hard"],
                "skip_rate": (self.counts["skipped_easy"] + self.counts["skipped_hard"]) / max(walked, 1),
                "easy_runs": int(np.count_nonzero(self.easy_run)), "hard_runs": int(np.count_nonzero(self.hard_run))}

    def state_dict(self) -> dict:
        return {"arrays": {"order": self.order.copy(), "easy_run": self.easy_run.copy(),
                           "hard_run": self.hard_run.copy()},
                "meta": {"name": self.name, "n": self.n, "config": asdict(self.cfg), "pos": self.pos,
                         "epoch": self.epoch, "step": self.step, "p_easy": self.p_easy, "p_hard": self.p_hard,
                         "counts": dict(self.counts), "rng": self.rng.bit_generator.state}}

    def load_state_dict(self, state: dict, origin: str = "state") -> None:
        meta, z = state["meta"], state["arrays"]
        check_state_matches(meta, self.name, self.n, origin)
        self.order = np.array(z["order"], dtype=np.int64)
        self.easy_run, self.hard_run = np.array(z["easy_run"], dtype=np.int64), np.array(z["hard_run"], dtype=np.int64)
        self.pos, self.epoch, self.step = meta["pos"], meta["epoch"], meta["step"]
        self.p_easy, self.p_hard = meta["p_easy"], meta["p_hard"]
        self.counts = {**dict.fromkeys(COUNTERS, 0), **meta["counts"]}
        self.rng.bit_generator.state = meta["rng"]


COUNTERS = ("skipped_easy", "skipped_hard", "offered", "last_skipped_easy", "last_skipped_hard",
            "step_groups", "step_all_right", "step_all_wrong")


def check_outcomes(idx: np.ndarray, n_correct: np.ndarray, group_size: np.ndarray, n: int) -> None:
    """Refuse outcomes a scheduler's `update` cannot take: lengths that differ, indices outside the
    pool, right answers outside [0, group size]."""
    if idx.shape != n_correct.shape:
        raise ValueError(f"{idx.size} problem indices but {n_correct.size} n_correct values")
    if idx.size and (idx.min() < 0 or idx.max() >= n):
        raise ValueError(f"problem indices must lie in [0, {n}), got {idx.min()}..{idx.max()}")
    if np.any(n_correct < 0) or np.any(n_correct > group_size):
        raise ValueError("n_correct must lie in [0, group_size] for every group")


PEER_CONFIGS = {"pools": PoolsConfig, "greso": GresoConfig}
PEER_SCHEDULERS = {"pools": PoolsScheduler, "greso": GresoScheduler}
