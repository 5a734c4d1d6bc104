"""`grpo bench demo_lr`: the demo's learning rate, chosen on the validation split over the demo's seeds.

Each seed's demo (`grpo demo --seed N`: its own world, warm start and profile) is trained again from
its warm start with each candidate learning rate, everything else as the demo trains, and evaluated
on that seed's *validation* split every EVAL_EVERY steps (the test split stays for the demo's report).
The chosen rate has the highest final validation accuracy averaged over seeds (every rate on every
seed); the chosen rate's lead is also given seed by seed. A run that ends below its start by more
than 2 standard errors of the two evaluations (unpaired: a conservative check, `regressed`) is
flagged. One training seed per cell: the spread between seeds is that of their warm starts. Needs the demo folders
(`make demo`, `grpo demo --seed 1`, `grpo demo --seed 2`).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

LRS = (1e-4, 3e-5)
SEEDS = (0, 1, 2)
EVAL_EVERY = 8


def demo_dir(seed: int) -> Path:
    return Path("runs/demo" if seed == 0 else f"runs/demo-seed{seed}")


def base_overrides(seed: int) -> list[str]:
    """The demo's training run, evaluated on validation: its resolved config's model, data and
    profile, as the demo wrote them."""
    from bench.common import resolved_overrides

    d = demo_dir(seed)
    resolved = d / "train" / "resolved_config.yaml"
    if not resolved.exists():
        raise FileNotFoundError(f"{resolved} is missing: run `grpo demo{'' if seed == 0 else f' --seed {seed}'}` first")
    return [*resolved_overrides(resolved), f"data.heldout={d / 'world' / 'val.parquet'}", "run.steps=100000", f"run.eval_every={EVAL_EVERY}",
            "run.eval_every_rollouts=0", "run.save_every=0", "run.progress=false"]


def summarize(curves: dict[int, dict[float, list[tuple[int, float, float]]]]) -> dict:
    """Per seed and rate: the validation curve (step, accuracy, SE), start, final, change; over
    seeds: each rate's mean final and change (mean_se); the chosen rate (highest mean final)."""
    from bench.common import mean_se

    per = {}
    for seed, by_lr in curves.items():
        per[str(seed)] = {}
        for lr, curve in by_lr.items():
            start, final = curve[0], curve[-1]
            se = float(np.hypot(start[2], final[2]))
            per[str(seed)][f"{lr:g}"] = {"curve": curve, "start": start[1], "final": final[1],
                                         "change": final[1] - start[1],
                                         "regressed": final[1] - start[1] < -2 * se}
    lrs = sorted({lr for s in per.values() for lr in s}, key=float)
    missing = [(s, lr) for s in per for lr in lrs if lr not in per[s]]
    if missing:  # a mean over other seeds would compare other warm starts
        raise ValueError(f"every rate needs every seed; missing (seed, lr): {missing}")
    over = {lr: {"final": mean_se([per[s][lr]["final"] for s in per]),
                 "change": mean_se([per[s][lr]["change"] for s in per])} for lr in lrs}
    chosen = max(lrs, key=lambda lr: over[lr]["final"]["mean"])
    # seed by seed (the same warm start and validation problems): the chosen rate's final minus each other's
    paired = {lr: mean_se([per[s][chosen]["final"] - per[s][lr]["final"] for s in per]) for lr in lrs if lr != chosen}
    return {"per_seed": per, "over_seeds": over, "chosen_lr": float(chosen), "chosen_minus_other_by_seed": paired}


def run(seeds: tuple[int, ...] = SEEDS, lrs: tuple[float, ...] = LRS, workdir: str = "runs/bench-demo-lr") -> dict:
    from bench.common import train_run

    curves: dict[int, dict[float, list]] = {}
    for seed in seeds:
        base = base_overrides(seed)
        curves[seed] = {}
        for lr in lrs:
            records, _ = train_run(f"seed{seed}-lr{lr:g}", [f"optim.lr={lr}"], base, Path(workdir))
            curves[seed][lr] = [(r["step"], r["heldout_accuracy"], r["heldout_accuracy_se"])
                                for r in records if r["kind"] == "eval"]
    return {"split": "val", "eval_every_steps": EVAL_EVERY, "lrs": list(lrs), "seeds": list(seeds),
            **summarize(curves)}
