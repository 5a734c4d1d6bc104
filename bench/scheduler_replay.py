"""Replay a sampler's selection on a pool whose pass rates are fixed at a profile's estimates: what
share of the groups it generates come back mixed, and how many steps the rollouts buy, with the
trainer's dynamic resampling (rounds of `ceil(missing x oversample)` problems until a batch of mixed
groups is in, at most `rounds`). No policy, no learning: a check of the selection mechanics on a
pool's real shape, not evidence that a sampler teaches more (that is `grpo bench curriculum`).

    python -m bench.scheduler_replay runs/explore-t/pool-T0.6.parquet
"""

from __future__ import annotations

import argparse

import numpy as np
import polars as pl

from grpo_data.curriculum.band_scheduler import BandConfig, BandScheduler

SAMPLERS = {  # the curriculum benchmark's band arms, as BandConfig settings (bench/curriculum_bench.py ARMS)
    "pool (uniform passes)": {"epoch": "pool"},
    "A0 (epoch=band)": {"epoch": "band"},
    "A0p (epoch=pass, skip_below=0.2)": {"epoch": "pass", "skip_below": 0.2},
}


def truth_from_profile(profile: pl.DataFrame) -> np.ndarray:
    """Each problem's pass rate: its profile's successes over samples, pulled 0.1 samples off 0 and 1
    (a problem seen 0 of 8 is not known to be impossible)."""
    return (profile["n_correct"].to_numpy() + 0.1) / (profile["k"].to_numpy() + 0.2)


def replay(p: np.ndarray, cfg: BandConfig, seed: int = 0, budget: int = 8_000, group: int = 8, batch: int = 8,
           rounds: int = 4, oversample: float = 1.25) -> dict:
    """Steps, the informative ratio (kept mixed rollouts over generated) and distinct problems trained."""
    rng = np.random.default_rng(seed)
    sched = BandScheduler(p.size, cfg, seed=seed)
    generated = kept_total = steps = 0
    trained = np.zeros(p.size, dtype=np.int64)
    while generated < budget:
        kept = 0
        for _ in range(rounds):
            missing = batch - kept
            if missing <= 0:
                break
            idx = sched.sample(int(np.ceil(missing * oversample)))
            correct = rng.binomial(group, p[idx])
            sched.update(idx, correct, group)
            generated += group * idx.size
            mixed = idx[(correct > 0) & (correct < group)][:missing]
            trained[mixed] += 1
            kept += mixed.size
        kept_total += kept
        steps += 1
        sched.tick()
    return {"steps": steps, "informative_ratio": kept_total * group / generated,
            "distinct_trained": int((trained > 0).sum()), "epochs": sched.epoch}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("profile", help="a profile parquet (n_correct, k per problem): the pool's fixed pass rates")
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--budget", type=int, default=8_000)
    args = parser.parse_args()
    p = truth_from_profile(pl.read_parquet(args.profile))
    print(f"{p.size} problems; mixed share of a uniform group at G = 8: {np.mean(1 - p ** 8 - (1 - p) ** 8):.3f}")
    for name, kw in SAMPLERS.items():
        cfg = BandConfig(without_replacement=True, dry="informative", group_size=8, **kw)
        runs = [replay(p, cfg, seed=int(s), budget=args.budget) for s in args.seeds.split(",")]
        print(f"{name}: steps {np.mean([r['steps'] for r in runs]):.1f}, informative ratio "
              f"{np.mean([r['informative_ratio'] for r in runs]):.3f}, distinct trained "
              f"{np.mean([r['distinct_trained'] for r in runs]):.0f}")


if __name__ == "__main__":
    main()
