"""Headline benchmark (`grpo bench e2e`): scheduled GRPO vs uniform sampling + DAPO dynamic sampling.

On the embedded world, from the same warm-started policy and offline profile, with the same G, batch
size and rollout budget, real GRPO training (vLLM rollouts, DeepSpeed updates):
- arm A: the band scheduler with dynamic resampling;
- arm B: uniform sampling with DAPO dynamic sampling (drop zero-variance groups, resample).
Reported: held-out accuracy against rollouts generated for both, rollouts each needed to first
reach a target held-out accuracy (initial accuracy + `target_gain`), and each arm's
informative-rollout ratio. Goal: arm A reaches the target with >= 2x fewer rollouts.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

ARMS = {"A_band": ["scheduler.name=band"], "B_uniform_dapo": ["scheduler.name=uniform"]}


def rollouts_to_reach(evals: list[dict], target: float) -> float | None:
    """Rollouts at which held-out accuracy first reaches `target` (linear between eval points)."""
    prev = None
    for r in evals:
        if r["heldout_accuracy"] >= target:
            if prev is None:
                return float(r["rollouts_generated"])
            x0, y0, x1, y1 = prev["rollouts_generated"], prev["heldout_accuracy"], r["rollouts_generated"], r["heldout_accuracy"]
            return float(x0 + (target - y0) * (x1 - x0) / max(y1 - y0, 1e-9))
        prev = r
    return None


def _level_totals(trains: list[dict]) -> dict[str, int]:
    """Groups trained per level over the whole run."""
    totals: dict[str, int] = {}
    for r in trains:
        for k, v in r.items():
            if k.startswith("trained_groups_level_"):
                level = k.removeprefix("trained_groups_level_")
                totals[level] = totals.get(level, 0) + v
    return dict(sorted(totals.items(), key=lambda kv: int(kv[0])))


def run_arm(name: str, overrides: list[str], base: list[str], out: Path) -> dict:
    """One arm's training run (`bench.common.train_run`) summarized."""
    import yaml

    from bench.common import train_run

    records, seconds = train_run(name, overrides, base, out)
    resolved = yaml.safe_load((out / name / "resolved_config.yaml").read_text())
    evals = [r for r in records if r["kind"] == "eval"]
    trains = [r for r in records if r["kind"] == "train"]
    return {"evals": [{k: r[k] for k in ("step", "rollouts_generated", "heldout_accuracy")} for r in evals],
            "informative_rollout_ratio": trains[-1]["informative_rollout_ratio"], "steps": trains[-1]["step"],
            "rollouts_generated": trains[-1]["rollouts_generated"], "seconds": seconds,
            "scheduler": resolved["scheduler"], "distinct_problems_trained": trains[-1]["distinct_problems_trained"],
            "final_by_level": {k: v for k, v in evals[-1].items() if k.startswith("heldout_accuracy_level_")},
            "trained_groups_by_level": _level_totals(trains)}


def plot(result: dict, path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 4), dpi=120)
    for seed_res in result["seeds"]:
        for arm, color in (("A_band", "#4C72B0"), ("B_uniform_dapo", "#DD8452")):
            ev = seed_res["arms"][arm]["evals"]
            ax.plot([e["rollouts_generated"] for e in ev], [e["heldout_accuracy"] for e in ev], color=color,
                    marker="o", ms=3, alpha=0.8, label=f"{arm} (seed {seed_res['seed']})")
    ax.axhline(result["seeds"][0]["target"], color="gray", ls="--", lw=1, label="target")
    ax.set_xlabel("rollouts generated")
    ax.set_ylabel("held-out accuracy")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def run(quick: bool = False, seeds: tuple[int, ...] = (0, 1, 2), target_gain: float = 0.02,
        workdir: str = "runs/bench-e2e") -> dict:
    from bench.common import RESULTS
    from pipelines.pipeline import profile_stage
    from pipelines.stages import warm_policy, write_world

    policy = warm_policy()
    paths = write_world("runs/world")
    profile = profile_stage(str(policy), paths["train"], {"adaptive": True, "max_tokens": 16}, Path("runs/world-profile.parquet"))
    budget = 8_000 if quick else 30_000
    base = [f"model={policy}", f"data.train={paths['train']}", f"data.heldout={paths['heldout']}",
            f"data.profile={profile}", "rollout.group_size=8", "rollout.batch_groups=16", "rollout.max_rounds=4",
            "rollout.dynamic_resampling=true", "optim.lr=0.0001", "optim.minibatches=1", f"run.max_rollouts={budget}",
            "run.steps=100000", f"run.eval_every={5 if quick else 10}", f"run.eval_k={4 if quick else 8}", "run.save_every=0",
            "run.progress=false"]
    out = Path(workdir)
    result = {"budget_rollouts": budget, "target_gain": target_gain, "seeds": []}
    for seed in seeds:
        arms = {name: run_arm(name, ov + [f"run.seed={seed}"], base, out / f"seed{seed}") for name, ov in ARMS.items()}
        initial = arms["A_band"]["evals"][0]["heldout_accuracy"]
        target = initial + target_gain
        reach = {name: rollouts_to_reach(a["evals"], target) for name, a in arms.items()}
        ratio = (reach["B_uniform_dapo"] / reach["A_band"]) if reach["A_band"] and reach["B_uniform_dapo"] else None
        result["seeds"].append({"seed": seed, "initial_accuracy": initial, "target": target, "arms": arms,
                                "rollouts_to_target": reach, "ratio_B_over_A": ratio})
    ratios = [s["ratio_B_over_A"] for s in result["seeds"] if s["ratio_B_over_A"]]
    result["ratio_B_over_A_mean"] = float(np.mean(ratios)) if ratios else None
    result["ratio_B_over_A_spread"] = [float(min(ratios)), float(max(ratios))] if ratios else None
    result["plot"] = str(plot(result, RESULTS / "e2e.png"))
    result["goal"] = "arm A reaches the target with >= 2x fewer rollouts than arm B"
    return result
