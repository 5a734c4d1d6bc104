"""Scheduler simulation benchmark (`grpo bench scheduler`): rollouts needed to teach a synthetic learner.

Synthetic pool: N problems with difficulty d in [0, 1]. The policy has a skill curve theta over 50
difficulty bins; problem i is solved with p_i = sigmoid(slope * (theta(d_i) - d_i)), steep, so most
problems start near 0 or 1, as real pools do for a real model.

Synthetic learner: a trained group on problem i with c of G correct moves theta by
lr * c(G-c)/G^2 * exp(-(d - d_i)^2 / (2 w^2)) per bin: improvement proportional to the group's
reward variance (zero for all-right or all-wrong groups, as in GRPO), transferring to nearby
difficulties.

Arms, all with the same G, batch size and offline profile (k=16 at the start):
- uniform: uniform sampling, every group trained on (zero-variance ones teach nothing);
- uniform+dapo: uniform sampling with DAPO dynamic sampling (drop zero-variance groups, resample
  until the batch holds `batch` informative groups or `max_rounds` rounds);
- offline_band: uniform over the offline 0.2-0.8 band, with the same dynamic resampling;
- band: BandScheduler (offline prior, online updates from every group, strength shared within
  difficulty groups: a noisy 10-level label crossed with the offline bucket), same resampling;
- band_nogroups: the same without difficulty groups (ablation of sharing strength).
Reported: rollouts generated to reach the target pool accuracy, informative-rollout ratio, and the
uniform arm's zero-variance rate beside the analytic mean of p^G + (1-p)^G over the pool.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, replace

import numpy as np

from grpo_data.scheduler import difficulty_groups, make_scheduler


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
    max_rounds: int = 8
    offline_k: int = 16
    levels: int = 10
    level_noise: float = 0.05
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


def run_arm(arm: str, cfg: SimConfig) -> dict:
    rng = np.random.default_rng(cfg.seed)
    learner = SyntheticLearner(cfg, rng)
    offline_c = rng.binomial(cfg.offline_k, learner.pass_rate())
    offline = (offline_c, np.full(cfg.n_problems, cfg.offline_k))
    sched_name = {"uniform": "uniform", "uniform+dapo": "uniform", "offline_band": "offline_band", "band": "band",
                  "band_nogroups": "band", "band_epochs": "band"}[arm]
    groups = difficulty_groups(cfg.n_problems, offline, learner.level) if arm in ("band", "band_epochs") else None
    # band_epochs: the trainer's setting (each likely-in-band problem once before any repeat); this
    # learner cannot memorize a problem, so it shows only what spreading over the band costs
    extra = {"without_replacement": True, "epoch": "band"} if arm == "band_epochs" else {}
    sched = make_scheduler(sched_name, cfg.n_problems, seed=cfg.seed + 1, offline=offline, groups=groups, **extra)
    drop = arm != "uniform"
    generated = informative = 0
    zero_var_uniform, analytic = [], []
    curve = []
    reached_at = None
    steps_run = 0
    for _ in range(cfg.max_steps):
        steps_run += 1
        kept_idx, kept_c = [], []
        rounds = 0
        while rounds < (cfg.max_rounds if drop else 1):
            rounds += 1
            need = cfg.batch - sum(len(x) for x in kept_idx) if drop else cfg.batch
            idx = sched.sample(need)
            p = learner.pass_rate(idx)
            c = rng.binomial(cfg.group_size, p)
            sched.update(idx, c, cfg.group_size)
            generated += idx.size * cfg.group_size
            mixed = (c > 0) & (c < cfg.group_size)
            informative += int(mixed.sum()) * cfg.group_size
            if arm == "uniform":
                zero_var_uniform.append(float(np.mean(~mixed)))
                pool_p = learner.pass_rate()
                analytic.append(float(np.mean(pool_p**cfg.group_size + (1 - pool_p) ** cfg.group_size)))
            if drop:
                kept_idx.append(idx[mixed])
                kept_c.append(c[mixed])
                if sum(len(x) for x in kept_idx) >= cfg.batch:
                    break
            else:
                kept_idx.append(idx)
                kept_c.append(c)
        learner.train(np.concatenate(kept_idx), np.concatenate(kept_c))
        sched.tick()
        acc = learner.accuracy()
        curve.append((generated, acc))
        if reached_at is None and acc >= cfg.target_accuracy:
            reached_at = generated
            break
    out = {"arm": arm, "rollouts_to_target": reached_at, "steps": steps_run, "rollouts_generated": generated,
           "informative_rollout_ratio": informative / max(1, generated), "final_accuracy": curve[-1][1],
           "curve": curve[:: max(1, len(curve) // 50)]}
    if arm == "uniform":
        out["zero_variance_rate"] = float(np.mean(zero_var_uniform))
        out["zero_variance_analytic"] = float(np.mean(analytic))
    return out


ARMS = ("uniform", "uniform+dapo", "offline_band", "band", "band_nogroups", "band_epochs")


def run(cfg: SimConfig = SimConfig(), seeds: tuple[int, ...] = (0, 1, 2)) -> dict:
    """Every arm on each seed (a seed draws its own pool, offline profile and outcomes)."""
    start = time.monotonic()
    per_seed = []
    for seed in seeds:
        arms = {arm: run_arm(arm, replace(cfg, seed=seed)) for arm in ARMS}
        dapo, band = arms["uniform+dapo"]["rollouts_to_target"], arms["band"]["rollouts_to_target"]
        per_seed.append({"seed": seed, "arms": arms, "band_vs_dapo_rollout_ratio": (dapo / band) if dapo and band else None})
    ratios = [s["band_vs_dapo_rollout_ratio"] for s in per_seed]
    informative = [s["arms"]["band"]["informative_rollout_ratio"] for s in per_seed]
    return {
        "config": asdict(cfg), "seeds": per_seed, "seconds": time.monotonic() - start,
        "band_vs_dapo_rollout_ratio": {"min": min(ratios, key=lambda r: r or 0), "mean": float(np.mean([r or 0 for r in ratios]))},
        "band_informative_ratio": {"min": min(informative), "mean": float(np.mean(informative))},
        "goals": {"informative_ratio_band": ">= 0.9", "rollouts_vs_dapo": ">= 3x fewer"},
    }


def timing(n: int = 1_000_000, batch: int = 512, reps: int = 200, seed: int = 0, **band) -> dict:
    """Wall time of sample(batch) + update(...) + tick() on an n-problem pool, with difficulty groups;
    `band` are BandConfig settings (none: the library defaults)."""
    rng = np.random.default_rng(seed)
    p = np.concatenate([rng.uniform(0, 0.05, n // 2), rng.uniform(0.95, 1, n // 4), rng.uniform(0, 1, n - n // 2 - n // 4)])
    k = np.full(n, 16)
    offline = (rng.binomial(16, p), k)
    level = np.clip(((1 - p + rng.normal(0, 0.1, n)) * 5).astype(int), 0, 4)  # a noisy 5-level label
    sched = make_scheduler("band", n, seed=seed, offline=offline, groups=difficulty_groups(n, offline, level), **band)
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        idx = sched.sample(batch)
        sched.update(idx, rng.binomial(8, p[idx]), 8)
        sched.tick()
        times.append(time.perf_counter() - t0)
    times = np.array(times) * 1e3
    return {"pool": n, "batch": batch, "reps": reps, "mean_ms": float(times.mean()), "median_ms": float(np.median(times)),
            "p90_ms": float(np.percentile(times, 90)), "max_ms": float(times.max()),
            "note": "mean includes the full rescore every rescore_every steps (the max)", "goal_ms_mean": 5.0}
