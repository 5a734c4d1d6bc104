"""Objective variants against the default (`grpo bench variants`), at equal total rollouts.

On the embedded world, from the same warm-started policy, offline profile and band scheduler with
dynamic resampling (the demo's training setup), each arm changes one thing in the objective or the
optimizer and trains until `budget` rollouts were generated (training, resampling and refresh
all counted; the profile is shared by every arm, so it is left out of every arm's count). Every
arm logs the KL to the starting policy (`algo.track_kl`: a reference forward, charged to all
arms alike), so arms without a KL term still report how far they moved.

Reported per arm over seeds: held-out accuracy (mean@k, pass@k, maj@k) with its standard error and
range, the paired difference to the default on the same seed, and the final KL, entropy and
completion length, the mean |advantage| (arms differ in advantage scale at one learning rate,
which is part of what they change). The write-ups' claims (softmax-z at tau 0.3, 0.7/0.3 hybrid, a
100-group window) are checked as they come out: a difference is called only when the 95% t
interval of the paired differences excludes 0 (not corrected for the number of comparisons).
No setting was tuned here: every value is the one the write-up or the library default gives, and
every arm runs at the default's learning rate, so the held-out set is not used to choose anything.
A stopped benchmark run again reuses its finished runs.
"""

from __future__ import annotations

import numpy as np

from bench.common import cached_train_run, mean_se

# one change each against the default; values from the write-ups and the trainers that offer them.
# With one optimizer step per batch (optim.minibatches 1) every ratio is exactly 1 and no clip
# engages, so GSPO and its control take two steps per batch (the second one off-policy), and the
# control differs from GSPO only in the ratio. The adaptive KL has a fixed-KL control.
ARMS: dict[str, list[str]] = {
    "default": [],
    "softmax_z_tau0.3": ["algo.advantage=softmax_z", "algo.tau=0.3"],
    "window_norm_100": ["algo.advantage=window_norm", "algo.window_groups=100"],
    "hybrid_0.7": ["algo.advantage=hybrid", "algo.hybrid_weight=0.7"],
    "length_norm_1.0": ["algo.advantage=length_norm", "algo.length_lambda=1.0"],
    "batch_norm": ["algo.advantage=batch_norm"],
    "entropy_0.001": ["algo.entropy_coef=0.001"],
    "fixed_kl_0.01": ["algo.kl_beta=0.01"],
    "adaptive_kl": ["algo.kl_beta=0.01", "algo.kl_target=0.005"],
    "cosine_lr": ["optim.lr_schedule=cosine", "optim.warmup_steps=5", "optim.min_lr_ratio=0.1"],
    "token_ratio_2mb": ["optim.minibatches=2", "algo.aggregation=seq_mean"],
    "gspo_2mb": ["optim.minibatches=2", "algo.aggregation=seq_mean", "algo.ratio_level=sequence"],
}
CLAIMS = {"softmax_z_tau0.3": "softmax of z-scores at tau = 0.3 beats plain z-scores",
          "hybrid_0.7": "0.7 group-relative + 0.3 absolute reward beats group-relative alone",
          "window_norm_100": "normalizing over the last 100 groups beats per-group normalization"}
CONTROLS = {"gspo_2mb": "token_ratio_2mb", "adaptive_kl": "fixed_kl_0.01"}  # compared to these as well


def _tail_mean(trains: list[dict], key: str, n: int = 10) -> float:
    values = [r[key] for r in trains[-n:] if isinstance(r.get(key), (int, float)) and np.isfinite(r[key])]
    return float(np.mean(values)) if values else float("nan")


def summarize_run(records: list[dict], seconds: float) -> dict:
    """One run's figures: first and final evaluation, and the last 10 steps' KL, entropy, length."""
    evals = [r for r in records if r["kind"] == "eval"]
    trains = [r for r in records if r["kind"] == "train"]
    final = evals[-1]
    return {"initial_accuracy": evals[0]["heldout_accuracy"],
            "final": {k: v for k, v in final.items() if k.startswith("heldout_") and not k.startswith("heldout_accuracy_level")},
            "by_level": {k: v for k, v in final.items() if k.startswith("heldout_accuracy_level")},
            "rollouts_generated": trains[-1]["rollouts_generated"], "steps": trains[-1]["step"],
            "kl": _tail_mean(trains, "kl"), "entropy": _tail_mean(trains, "entropy"),
            "completion_len": _tail_mean(trains, "completion_len_mean"),
            "advantage_abs": _tail_mean(trains, "advantage_abs_mean"),
            "informative_rollout_ratio": trains[-1]["informative_rollout_ratio"], "seconds": seconds,
            "curve": [{"step": r["step"], "reward_mean": r["reward_mean"], "kl": r.get("kl"), "entropy": r["entropy"]}
                      for r in trains]}


def t_critical(n: int) -> float:
    """Two-sided 95% critical value of Student's t with n - 1 degrees of freedom (inf for n < 2)."""
    if n < 2:
        return float("inf")
    from scipy.stats import t

    return float(t.ppf(0.975, n - 1))


def compare(runs: dict[str, dict[int, dict]], metric: str = "heldout_accuracy", reference: str = "default") -> dict:
    """Per arm: the metric over seeds, its paired difference to the reference arm on the same seed
    and that difference's 95% t interval (3 seeds: +- 4.3 SE). A difference is called only when the
    interval excludes 0; each comparison is one test, not corrected for the others."""
    out = {}
    for arm, by_seed in runs.items():
        seeds = sorted(set(by_seed) & set(runs[reference]))
        values = [by_seed[s]["final"][metric] for s in sorted(by_seed)]
        d = mean_se([by_seed[s]["final"][metric] - runs[reference][s]["final"][metric] for s in seeds])
        half = t_critical(d["n"]) * d["se"] if np.isfinite(d["se"]) else float("inf")
        d["ci95"] = [d["mean"] - half, d["mean"] + half]
        if arm == reference:
            verdict = "reference"
        elif abs(d["mean"]) > half and (half > 0 or d["mean"] != 0):
            verdict = "higher" if d["mean"] > 0 else "lower"
        else:
            verdict = "no difference (95% interval holds 0)"
        out[arm] = {metric: mean_se(values), f"minus_{reference}": d, "verdict": verdict}
    return out


def run(quick: bool = False, seeds: tuple[int, ...] = (0, 1, 2), workdir: str = "runs/bench-variants",
        arms: dict[str, list[str]] | None = None) -> dict:
    from pathlib import Path

    from pipelines.pipeline import profile_stage
    from pipelines.stages import warm_policy, write_world

    arms = arms or ARMS
    policy = warm_policy()
    paths = write_world("runs/world")
    profile = profile_stage(str(policy), paths["train"], {"adaptive": True, "max_tokens": 128},
                            Path("runs/world-profile-variants.parquet"))  # its own: e2e's profile has other settings
    budget = 2_000 if quick else 6_000  # 30 runs of about 2.5 minutes on 2 cores
    eval_k = 4
    base = [f"model={policy}", f"data.train={paths['train']}", f"data.heldout={paths['heldout']}",
            f"data.profile={profile}", "scheduler.name=band", "rollout.group_size=8", "rollout.batch_groups=16",
            "rollout.max_rounds=4", "rollout.dynamic_resampling=true", "rollout.max_tokens=128", "optim.lr=0.0001",
            "algo.track_kl=true",
            f"run.max_rollouts={budget}", "run.steps=100000", "run.eval_every=100000", f"run.eval_k={eval_k}",
            "run.save_every=0", "run.progress=false"] + (["run.eval_limit=200"] if quick else [])
    out = Path(workdir)
    runs: dict[str, dict[int, dict]] = {arm: {} for arm in arms}
    for seed in seeds:  # seeds outermost: a stopped benchmark still has whole seeds
        initial = None
        for arm, overrides in arms.items():
            # one initial evaluation per seed: every arm starts from the same policy with the same seed
            first = ["run.eval_first=true"] if initial is None else ["run.eval_first=false"]
            args = overrides + [f"run.seed={seed}"] + first
            records, seconds = cached_train_run(arm, args, base, out / f"seed{seed}",
                                                [str(policy), str(paths["train"]), str(paths["heldout"]), str(profile)], budget)
            evals = [r for r in records if r["kind"] == "eval"]
            initial = evals[0] if initial is None else initial
            if len(evals) == 1 or evals[0]["step"] != 0:
                records = [initial] + records  # the seed's shared starting point
            runs[arm][seed] = summarize_run(records, seconds)
    metrics = ["heldout_accuracy", f"heldout_pass_at_{eval_k}", f"heldout_maj_at_{eval_k}"]
    summary = {m: compare(runs, m) for m in metrics}
    for arm in arms:
        for key in ("kl", "entropy", "completion_len", "advantage_abs", "informative_rollout_ratio", "seconds", "steps"):
            summary.setdefault(key, {})[arm] = mean_se([runs[arm][s][key] for s in sorted(runs[arm])])
    controls = {arm: compare({a: runs[a] for a in (arm, ref)}, "heldout_accuracy", ref)[arm]
                for arm, ref in CONTROLS.items() if arm in arms and ref in arms}
    claims = {arm: {"claim": text, "outcome": summary["heldout_accuracy"][arm]["verdict"],
                    "minus_default": summary["heldout_accuracy"][arm]["minus_default"]}
              for arm, text in CLAIMS.items() if arm in arms}
    return {"budget_rollouts": budget, "eval_k": eval_k, "seeds": list(seeds), "policy": str(policy),
            "arms": {arm: overrides for arm, overrides in arms.items()}, "summary": summary, "claims": claims,
            "against_controls": controls,
            "runs": {arm: {str(s): r for s, r in by_seed.items()} for arm, by_seed in runs.items()},
            "goal": "every variant against the default at equal total rollouts, >= 3 seeds, with spreads"}
