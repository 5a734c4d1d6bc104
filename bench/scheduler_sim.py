"""Scheduler simulation benchmark (`grpo bench scheduler`): rollouts needed to teach a synthetic learner,
and the band scheduler's cost per call on a million problems.

Synthetic pool: N problems with difficulty d in [0, 1]. The policy has a skill curve theta over 50
difficulty bins; problem i is solved with p_i = sigmoid(slope * (theta(d_i) - d_i)), steep, so most
problems start near 0 or 1, as real pools do for a real model. Each problem carries a coarse, noisy
difficulty label (`level`), as real datasets do.

Synthetic learner: a trained group on problem i with c of G correct moves theta by
lr * c(G-c)/G^2 * exp(-(d - d_i)^2 / (2 w^2)) per bin: improvement proportional to the group's
reward variance (zero for all-right or all-wrong groups, as in GRPO), transferring to nearby
difficulties.

Every arm asks for its batch the way `grpo train` does (grpo_train.rollout.RolloutBatcher with
RolloutConfig's defaults): with dynamic resampling it drops zero-variance groups and asks for
ceil(missing x oversample) more, up to max_rounds rounds, then trains on what it has. Band arms use
the trainer's scheduler settings (BandConfig's defaults, which SchedulerSection takes: decay 0.99, each problem once per
band epoch, one prior per level, and its band: 0.2-0.8 since the validation selection; the results
in bench/results/scheduler.json were measured at the earlier default, 0.2-0.95).
- uniform: uniform sampling, every group trained (zero-variance ones teach nothing);
- uniform+dapo: uniform sampling with dynamic resampling;
- offline_band: uniform over the problems whose offline rate lies in the band (fixed k=16 profile);
- band: the band scheduler from a fixed k=16 offline profile;
- band_adaptive: from an adaptive profile (StoppingRule's defaults with per-level priors and the
  training band, as the demo pipeline's `profile: adaptive`): 2-sample screens, more only where the
  band decision is unsure;
- band_online: no offline profile at all (flat per-level priors, learned online: "A0");
- band_fixed_prior: the k=16 profile without sharing strength (no drift, no refits: ablation);
- band_pool_prior: the k=16 profile, one prior for the whole pool instead of one per level.
The profile is real sampling cost: every arm that uses one is charged its samples (n_problems x
offline_k, or the adaptive profile's actual count), in full (`rollouts_charged`) and shared by
`profile_shared_by` runs that start from the same profile (`rollouts_amortized`).
Reported: rollouts generated to reach the target pool accuracy (training only, charged,
amortized), informative-rollout ratio, and the uniform arm's zero-variance rate beside the
analytic mean of p^G + (1-p)^G over the pool.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, replace

import numpy as np

from grpo_data.curriculum.band_scheduler import BandConfig
from grpo_data.curriculum.scheduler import difficulty_groups, make_scheduler
from grpo_data.curriculum.stats import StoppingRule, simulate
from grpo_train.config import RolloutConfig

ROLLOUT = RolloutConfig()


@dataclass(frozen=True)
class SimConfig:
    n_problems: int = 20_000
    group_size: int = 8
    batch: int = 64
    bins: int = 50
    slope: float = 25.0
    theta0: float = 0.35
    lr: float = 0.0005
    width: float = 0.05
    target_accuracy: float = 0.5
    max_steps: int = 12000
    max_rounds: int = ROLLOUT.max_rounds
    oversample: float = ROLLOUT.oversample
    offline_k: int = 16
    levels: int = 10
    level_noise: float = 0.05
    profile_shared_by: int = 10
    seed: int = 0


class SyntheticLearner:
    def __init__(self, cfg: SimConfig, rng: np.random.Generator) -> None:
        self.cfg = cfg
        self.d = rng.uniform(0, 1, cfg.n_problems)
        self.centres = (np.arange(cfg.bins) + 0.5) / cfg.bins
        self.theta = np.full(cfg.bins, cfg.theta0)
        self.bin = np.minimum((self.d * cfg.bins).astype(int), cfg.bins - 1)
        # a coarse, noisy difficulty label, as real datasets carry (MATH levels 1-5, source tags)
        noisy = self.d + rng.normal(0.0, cfg.level_noise, self.d.size)
        self.level = np.clip((noisy * cfg.levels).astype(int), 0, cfg.levels - 1)

    def pass_rate(self, idx: np.ndarray | None = None) -> np.ndarray:
        d = self.d if idx is None else self.d[idx]
        b = self.bin if idx is None else self.bin[idx]
        return 1.0 / (1.0 + np.exp(-self.cfg.slope * (self.theta[b] - d)))

    def accuracy(self) -> float:
        return float(self.pass_rate().mean())

    def train(self, idx: np.ndarray, n_correct: np.ndarray) -> None:
        g = self.cfg.group_size
        signal = n_correct * (g - n_correct) / g**2  # (B,) zero for zero-variance groups
        kernel = np.exp(-((self.centres[None, :] - self.d[idx, None]) ** 2) / (2 * self.cfg.width**2))  # (B, bins)
        self.theta += self.cfg.lr * (signal[:, None] * kernel).sum(axis=0) / max(1, self.cfg.batch) * 8


ARMS = ("uniform", "uniform+dapo", "offline_band", "band", "band_adaptive", "band_online", "band_fixed_prior",
        "band_pool_prior")


def make_arm(arm: str, cfg: SimConfig, learner: SyntheticLearner, rng: np.random.Generator):
    """(scheduler, profile samples charged) for one arm; the profile is drawn from the starting policy."""
    p0 = learner.pass_rate()
    if arm == "band_adaptive":
        band = BandConfig()  # the band `grpo train` trains in by default
        c, k, _ = simulate(StoppingRule(lo=band.lo, hi=band.hi), p0, rng, empirical=True, groups=learner.level)
        offline = (c.astype(np.float64), k.astype(np.float64))
    elif arm not in ("uniform", "uniform+dapo", "band_online"):
        offline = (rng.binomial(cfg.offline_k, p0).astype(np.float64), np.full(cfg.n_problems, float(cfg.offline_k)))
    else:
        offline = None
    profile_samples = 0 if offline is None else int(offline[1].sum())
    seed = cfg.seed + 1
    if arm.startswith("uniform"):
        return make_scheduler("uniform", cfg.n_problems, seed=seed), profile_samples
    if arm == "offline_band":
        return make_scheduler("offline_band", cfg.n_problems, seed=seed, offline=offline), profile_samples
    groups = None if arm == "band_pool_prior" else difficulty_groups(cfg.n_problems, offline, learner.level)
    settings = {"share": False} if arm == "band_fixed_prior" else {}  # else BandConfig's defaults, as `grpo train`'s
    return make_scheduler("band", cfg.n_problems, seed=seed, offline=offline, groups=groups, **settings), profile_samples


def run_arm(arm: str, cfg: SimConfig) -> dict:
    rng = np.random.default_rng(cfg.seed)
    learner = SyntheticLearner(cfg, rng)
    sched, profile_samples = make_arm(arm, cfg, learner, rng)
    drop = arm != "uniform"
    generated = informative = 0
    zero_var_uniform, analytic = [], []
    curve = []
    reached_at = None
    steps_run = 0
    for _ in range(cfg.max_steps):
        steps_run += 1
        kept_idx, kept_c = [], []
        kept = 0
        for round_no in range(cfg.max_rounds if drop else 1):
            need = cfg.batch - kept
            ask = need if round_no == 0 else math.ceil(need * cfg.oversample)  # as RolloutBatcher.next_batch
            idx = sched.sample(ask)
            c = rng.binomial(cfg.group_size, learner.pass_rate(idx))
            sched.update(idx, c, cfg.group_size)
            generated += idx.size * cfg.group_size
            mixed = (c > 0) & (c < cfg.group_size)
            informative += int(mixed.sum()) * cfg.group_size
            if arm == "uniform":
                zero_var_uniform.append(float(np.mean(~mixed)))
                pool_p = learner.pass_rate()
                analytic.append(float(np.mean(pool_p**cfg.group_size + (1 - pool_p) ** cfg.group_size)))
            keep = mixed if drop else np.ones(idx.size, dtype=bool)
            kept_idx.append(idx[keep][:need])
            kept_c.append(c[keep][:need])
            kept += kept_idx[-1].size
            if kept >= cfg.batch:
                break
        learner.train(np.concatenate(kept_idx), np.concatenate(kept_c))
        sched.tick()
        acc = learner.accuracy()
        curve.append((generated, acc))
        if reached_at is None and acc >= cfg.target_accuracy:
            reached_at = generated
            break
    out = {"arm": arm, "rollouts_to_target": reached_at, "profile_samples": profile_samples,
           "rollouts_charged": None if reached_at is None else reached_at + profile_samples,
           "rollouts_amortized": None if reached_at is None else reached_at + profile_samples / cfg.profile_shared_by,
           "steps": steps_run, "rollouts_generated": generated,
           "informative_rollout_ratio": informative / max(1, generated), "final_accuracy": curve[-1][1],
           "curve": curve[:: max(1, len(curve) // 50)]}
    if arm == "uniform":
        out["zero_variance_rate"] = float(np.mean(zero_var_uniform))
        out["zero_variance_analytic"] = float(np.mean(analytic))
    return out


def _ratio(base, other) -> float | None:
    return base / other if base and other else None


def _spread(values: list) -> dict:
    vals = [v for v in values if v is not None]
    return {"min": min(vals) if vals else None, "mean": float(np.mean(vals)) if vals else None, "n": len(vals)}


def run(cfg: SimConfig = SimConfig(), seeds: tuple[int, ...] = (0, 1, 2), arms: tuple[str, ...] = ARMS) -> dict:
    """Every arm on each seed (a seed draws its own pool, offline profile and outcomes). Ratios are
    uniform+dapo's rollouts to target over an arm's: training only, charged its whole profile, and
    with the profile shared by `profile_shared_by` runs."""
    start = time.monotonic()
    per_seed = []
    for seed in seeds:
        arm_runs = {arm: run_arm(arm, replace(cfg, seed=seed)) for arm in arms}
        dapo = arm_runs["uniform+dapo"]["rollouts_to_target"]
        ratios = {arm: {"training": _ratio(dapo, a["rollouts_to_target"]), "charged": _ratio(dapo, a["rollouts_charged"]),
                        "amortized": _ratio(dapo, a["rollouts_amortized"])}
                  for arm, a in arm_runs.items() if arm.startswith(("band", "offline"))}
        per_seed.append({"seed": seed, "arms": arm_runs, "vs_dapo": ratios,
                         "band_vs_dapo_rollout_ratio": ratios["band"]["training"],
                         "band_vs_dapo_rollout_ratio_charged": ratios["band"]["charged"]})
    summary = {arm: {kind: _spread([s["vs_dapo"][arm][kind] for s in per_seed]) for kind in ("training", "charged", "amortized")}
               | {"informative_ratio": _spread([s["arms"][arm]["informative_rollout_ratio"] for s in per_seed])}
               for arm in per_seed[0]["vs_dapo"]}
    return {
        "config": asdict(cfg), "scheduler_settings": asdict(BandConfig()), "seeds": per_seed,
        "seconds": time.monotonic() - start, "vs_dapo": summary,
        "band_vs_dapo_rollout_ratio": summary["band"]["training"],
        "band_vs_dapo_rollout_ratio_charged": summary["band"]["charged"],
        "band_vs_dapo_rollout_ratio_amortized": summary["band"]["amortized"],
        "band_informative_ratio": summary["band"]["informative_ratio"],
        "goals": {"informative_ratio_band": ">= 0.9", "rollouts_vs_dapo": ">= 3x fewer"},
    }


def timing(n: int = 1_000_000, steps: int = 200, seed: int = 0, **band) -> dict:
    """Wall time of each sample + update call on an n-problem pool, driven as `grpo train` drives it:
    the trainer's scheduler settings (BandConfig's defaults, as SchedulerSection's; `band` overrides them), one prior per level,
    an adaptive-style profile (a 2-sample screen for most problems, 16 samples for a quarter), and
    per step the trainer's rounds (RolloutConfig: batch_groups informative groups wanted, the first
    round asks that many, later ones ceil(missing x oversample), at most max_rounds) with outcomes
    from a policy that slowly improves (+0.005 logit per step). tick() is timed with the step's last call."""
    rng = np.random.default_rng(seed)
    p = np.concatenate([rng.uniform(0, 0.05, n // 2), rng.uniform(0.95, 1, n // 4), rng.uniform(0, 1, n - n // 2 - n // 4)])
    logit = np.log(np.clip(p, 1e-4, 1 - 1e-4) / (1 - np.clip(p, 1e-4, 1 - 1e-4)))
    k = np.where(rng.random(n) < 0.25, 16, 2)
    offline = (rng.binomial(k, p).astype(np.float64), k.astype(np.float64))
    level = np.clip(((1 - p + rng.normal(0, 0.1, n)) * 5).astype(int), 0, 4)  # a noisy 5-level label
    t0 = time.perf_counter()
    sched = make_scheduler("band", n, seed=seed, offline=offline, groups=difficulty_groups(n, offline, level),
                           **band)
    build_s = time.perf_counter() - t0
    group_size, want = ROLLOUT.group_size, ROLLOUT.batch_groups
    calls, per_step = [], []
    for step in range(steps):
        kept, step_ms = 0, 0.0
        for round_no in range(ROLLOUT.max_rounds):
            need = want - kept
            ask = need if round_no == 0 else math.ceil(need * ROLLOUT.oversample)
            t0 = time.perf_counter()
            idx = sched.sample(ask)
            c = rng.binomial(group_size, 1.0 / (1.0 + np.exp(-(logit[idx] + 0.005 * step))))
            sched.update(idx, c, group_size)
            kept += int(np.count_nonzero((c > 0) & (c < group_size)))
            last = kept >= want or round_no == ROLLOUT.max_rounds - 1
            if last:
                sched.tick()
            calls.append((time.perf_counter() - t0) * 1e3)
            step_ms += calls[-1]
            if last:
                break
        per_step.append(step_ms)
    ms = np.array(calls)
    return {"pool": n, "steps": steps, "calls": ms.size, "batch_groups": want, "oversample": ROLLOUT.oversample,
            "max_rounds": ROLLOUT.max_rounds, "settings": {**asdict(BandConfig()), **band}, "build_s": build_s,
            "mean_ms": float(ms.mean()), "median_ms": float(np.median(ms)), "p90_ms": float(np.percentile(ms, 90)),
            "max_ms": float(ms.max()), "step_mean_ms": float(np.mean(per_step)), "epochs": sched.epoch,
            "note": "per sample+update call; the mean includes the O(N) re-filing of the pool every rescore_every "
                    "steps (the max) and the prior refits every refit_every steps", "goal_ms_mean": 5.0}
