"""Curriculum benchmark (`grpo bench curriculum`, issue #33): the band scheduler against the samplers
peers ship, where real runs live (several passes over a pool), every rollout and token charged.

Pre-registered in bench/README.md ("Pre-registration: curriculum benchmark", 2026-12-03) before any
run: arms, fixed settings, regimes, the primary metric and the goals. A later change is a new dated
entry there, never an edit.

Arms (every one through the same trainer, `grpo train`; only the sampler differs):
- B:  uniform + DAPO dynamic sampling (drop all-equal groups, resample);
- A:  offline profile (each seed its own draw, charged) + band scheduler + refresh, + resampling;
- A0: band scheduler with no profile (online estimates only) + resampling;
- P:  prime-rl's difficulty pools (`scheduler.name=pools`) + resampling (their zero-advantage gate);
- S:  SPEED's screen-then-continue (`rollout.sizing=screen`) over uniform sampling + resampling;
- R:  GRESO's probabilistic skipping (`scheduler.name=greso`) + resampling.

Regimes: `multi` (primary): a 200-problem pool at 8,000 rollouts, 40 per problem (5 passes at
G = 8), where a 4-sample profile is about 10% of the budget; `one_pass`: the world's 800-problem
pool at 7,000 rollouts (today's e2e regime). Conditions: `nolevel` (primary; the `level` column
removed, as in real training sets) and `level`.

Charged to each arm: training rounds (kept and dropped groups, screens), refresh and profile
samples, in rollouts and in generated tokens. Evaluation is measurement, never charged: the test
split at k = 4 every EVAL_EVERY rollouts, and at the start and exactly at the budget at k = 32 on
the same 400 test problems for every arm, so differences are paired per problem.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl

ARMS: dict[str, dict] = {
    "B": {"overrides": ["scheduler.name=uniform"], "profile": False},
    "A": {"overrides": ["scheduler.name=band", "scheduler.refresh_every=10", "scheduler.refresh_size=32",
                        "scheduler.refresh_k=4", "scheduler.refresh_drift=0.25"], "profile": True},
    "A0": {"overrides": ["scheduler.name=band"], "profile": False},
    "P": {"overrides": ["scheduler.name=pools"], "profile": False},
    "S": {"overrides": ["scheduler.name=uniform", "rollout.sizing=screen", "rollout.size_round=4",
                        "rollout.size_candidates=2.0", "rollout.max_rounds=8"], "profile": False},
    "R": {"overrides": ["scheduler.name=greso"], "profile": False},
}
# shared by every arm; lr is the one setting chosen on validation (for B, applied to all: LR_CANDIDATES)
TRAINING = ("rollout.group_size=8", "rollout.batch_groups=8", "rollout.max_rounds=4", "rollout.dynamic_resampling=true",
            "rollout.oversample=1.25", "rollout.max_tokens=128", "rollout.temperature=1.0", "scheduler.lo=0.2",
            "scheduler.hi=0.8", "scheduler.dry=informative", "scheduler.without_replacement=true", "scheduler.epoch=band")
SEEDS = (0, 1, 2)
LR_CANDIDATES = (3e-5, 1e-4)
REGIMES = {"multi": {"pool": 200, "budget": 8_000}, "one_pass": {"pool": 800, "budget": 7_000}}
CONDITIONS = ("nolevel", "level")
EVAL_EVERY = 2_000
EVAL_K, EVAL_K_ENDS = 4, 32
PROFILE = {"adaptive": True, "screen_k": 2, "step_k": 2, "max_k": 4, "max_tokens": 128, "chunk_size": 512,
           "band": "0.2,0.8"}
GOALS = {"fewer_tokens_than_B": 2.0, "ahead_of_peers_in_se": 2.0, "ahead_of_B_in_se": 3.0, "informative_ratio": 0.8}


def arm_overrides(arm: str) -> list[str]:
    """The shared settings, then the arm's own (later overrides win: S's max_rounds=8 over 4)."""
    return [*TRAINING, *ARMS[arm]["overrides"]]


def training_budget(budget: int, cost: dict) -> int:
    """`run.max_rollouts` for an arm: the regime's total minus what its profile already spent, so
    every arm stops at the same charged total (a run ends at the first step at or past it)."""
    if cost["rollouts"] >= budget:
        raise ValueError(f"the profile's {cost['rollouts']} rollouts use up the budget of {budget}")
    return budget - cost["rollouts"]


def pool_table(train: pl.DataFrame, size: int, level: bool, seed: int = 0) -> pl.DataFrame:
    """The regime's training pool: `size` problems drawn once from the world's pool (the same for
    every arm and seed), with the `level` column removed in the no-level condition."""
    if size > train.height:
        raise ValueError(f"a pool of {size} problems asked from {train.height}")
    rows = np.sort(np.random.default_rng(seed).choice(train.height, size=size, replace=False))
    table = train[rows.tolist()]
    return table if level else table.drop("level", strict=False)


def profile_cost(profile: pl.DataFrame) -> dict:
    """What an offline profile spent: its samples and their generated tokens (mean completion length
    times samples, per problem)."""
    k = profile["k"].fill_null(0).cast(pl.Float64)
    tokens = (profile["mean_completion_tokens"].fill_null(0.0) * k).sum()
    return {"rollouts": int(k.sum()), "tokens": int(round(float(tokens)))}


def charge(records: list[dict], cost: dict) -> list[dict]:
    """Records with `total_rollouts` and `total_tokens`: the run's own (training rounds, screens,
    refresh) plus an offline profile's `cost` ({"rollouts", "tokens"}; zeros for an arm without one)."""
    return [{**r, "total_rollouts": r["rollouts_generated"] + cost["rollouts"],
             "total_tokens": r.get("tokens_generated", 0) + cost["tokens"]} for r in records]


def reach(evals: list[dict], target: float, x: str) -> float | None:
    """`x` (total_tokens or total_rollouts) at which accuracy first reaches target, linear between
    evaluations; None when it never does (e2e's `rollouts_to_reach`, read on any axis)."""
    from bench.e2e_bench import rollouts_to_reach

    return rollouts_to_reach(evals, target, x)


def reach_and_stay(evals: list[dict], target: float, x: str) -> float | None:
    """`x` of the first evaluation from which accuracy stays >= target at every later one (no
    interpolation); None when the last evaluation is below it. Beside `reach`: a first crossing of
    noisy k = 4 points is biased early."""
    found = None
    for r in evals:
        if r["heldout_accuracy"] >= target:
            found = float(r[x]) if found is None else found
        else:
            found = None
    return found


def paired_difference(a: dict[str, float], b: dict[str, float]) -> dict:
    """Mean over problems of a - b (per-problem accuracies, same problems), and its standard error
    (sample std of the per-problem differences / sqrt(problems)): the problems' own difficulty
    cancels, so what is left is sampling and training noise."""
    if set(a) != set(b):
        raise ValueError(f"paired difference over different problems: {len(set(a) ^ set(b))} not in both")
    d = np.array([a[i] - b[i] for i in sorted(a)])
    return {"mean": float(d.mean()), "se": float(d.std(ddof=1) / np.sqrt(d.size)) if d.size > 1 else float("nan"),
            "problems": int(d.size)}


def over_seeds(values: list[float]) -> dict:
    """Mean and SE (sample std / sqrt n) over seeds of per-seed values (paired differences included)."""
    v = np.asarray(values, dtype=np.float64)
    se = float(v.std(ddof=1) / np.sqrt(v.size)) if v.size > 1 else float("nan")
    return {"mean": float(v.mean()), "se": se, "min": float(v.min()), "max": float(v.max()), "n": int(v.size)}


def waste_per_pass(trains: list[dict], pool: int, group_size: int = 8) -> list[dict]:
    """The trace cut into passes over the pool (pool x G generated rollouts each): per pass, the
    shares of generated groups that came back all-right, all-wrong and mixed (weighted by groups),
    the batch pass rate, the observed in-band share, and the refresh and screen spend."""
    per_pass = pool * group_size

    def fresh():
        return {"all_right": 0.0, "all_wrong": 0.0, "mixed": 0.0, "in_band": 0.0, "correct": 0.0, "rollouts": 0.0,
                "refresh": 0.0, "screen": 0.0}

    out, start, groups, acc, prev = [], 0, 0.0, fresh(), 0
    for r in trains:
        n = r["groups_generated"]
        spent = r["rollouts_generated"] - prev - r.get("refresh_rollouts", 0)
        prev = r["rollouts_generated"]
        for key, share in (("all_right", "groups_all_right_share"), ("all_wrong", "groups_all_wrong_share"),
                           ("mixed", "groups_mixed_share"), ("in_band", "groups_in_band_share")):
            acc[key] += r[share] * n
        groups += n
        acc["correct"] += r["batch_pass_rate"] * spent
        acc["rollouts"] += spent
        acc["refresh"] += r.get("refresh_rollouts", 0)
        acc["screen"] += r.get("screen_rollouts", 0)
        if r["rollouts_generated"] - start >= per_pass:
            out.append(_pass_row(len(out), acc, groups))
            start, groups, acc = r["rollouts_generated"], 0.0, fresh()
    if groups:
        out.append(_pass_row(len(out), acc, groups))
    return out


def _pass_row(index: int, acc: dict, groups: float) -> dict:
    return {"pass": index + 1, "groups": int(groups), **{k: acc[k] / groups for k in ("all_right", "all_wrong", "mixed",
                                                                                         "in_band")},
            "batch_pass_rate": acc["correct"] / max(acc["rollouts"], 1.0), "refresh_rollouts": int(acc["refresh"]),
            "screen_rollouts": int(acc["screen"])}


def arm_result(records: list[dict], cost: dict, pool: int, seconds: float) -> dict:
    """One run summarized: its charged evaluations, its final per-problem accuracies are read by the
    caller from the run folder; informative ratio charged (the profile's samples trained nothing)."""
    evals = charge([r for r in records if r["kind"] == "eval"], cost)
    trains = [r for r in records if r["kind"] == "train"]
    last = trains[-1]
    total = last["rollouts_generated"] + cost["rollouts"]
    return {"evals": [{k: e.get(k) for k in ("step", "eval_k", "heldout_accuracy", "heldout_accuracy_se",
                                            "total_rollouts", "total_tokens")} for e in evals],
            "profile": cost, "steps": last["step"], "rollouts_generated": last["rollouts_generated"],
            "tokens_generated": last.get("tokens_generated", 0),
            "informative_rollout_ratio_charged": last["informative_rollout_ratio"] * last["rollouts_generated"] / total,
            "waste_per_pass": waste_per_pass(trains, pool), "seconds": seconds}


def compare(seeds: list[dict], default: str = "A") -> dict:
    """The goals' numbers from per-seed results ({"arms": {name: arm_result + per_problem_final}}):
    per arm the final accuracy over seeds; paired differences default - other at the budget (per
    seed over problems, then over seeds); tokens to reach B's final (mean over seeds of the ratio)."""
    arms = list(seeds[0]["arms"])
    out = {"final_accuracy": {a: over_seeds([s["arms"][a]["evals"][-1]["heldout_accuracy"] for s in seeds]) for a in arms},
           "informative_ratio_charged": {a: over_seeds([s["arms"][a]["informative_rollout_ratio_charged"]
                                                        for s in seeds]) for a in arms}}
    diffs = {}
    for other in arms:
        if other == default:
            continue
        per = [paired_difference(s["arms"][default]["per_problem_final"], s["arms"][other]["per_problem_final"])
               for s in seeds]
        # the gate: the SE over seeds of the per-seed paired means (training noise included; the seeds share
        # the test problems, so per-problem SEs alone would understate it); the per-problem SE is reported
        seed_level = over_seeds([p["mean"] for p in per])
        within = float(np.sqrt(np.sum([p["se"] ** 2 for p in per])) / len(per))
        se = seed_level["se"]
        diffs[other] = {"mean": seed_level["mean"], "se": se, "se_within_seeds": within,
                        "in_se": seed_level["mean"] / se if se > 0 else float("nan"), "per_seed": per}
    out["paired_minus"] = diffs
    ratios, staying = [], []
    for s in seeds:
        target = s["arms"]["B"]["evals"][-1]["heldout_accuracy"]
        base = s["arms"]["B"]["evals"][-1]["total_tokens"]
        for into, fn in ((ratios, reach), (staying, reach_and_stay)):
            mine = fn(s["arms"][default]["evals"], target, "total_tokens")
            into.append(base / mine if mine is not None and mine > 0 else None)
    got = [r for r in ratios if r is not None]
    kept = [r for r in staying if r is not None]
    out["fewer_tokens_than_B"] = {**(over_seeds(got) if got else {}), "reached_in_seeds": len(got), "seeds": len(seeds)}
    out["fewer_tokens_than_B_staying"] = {**(over_seeds(kept) if kept else {}), "reached_in_seeds": len(kept)}
    out["goals"] = {
        f"{default} reaches B's final with >= 2x fewer tokens": bool(
            len(got) == len(kept) == len(seeds) and np.mean(got) >= GOALS["fewer_tokens_than_B"]
            and np.mean(kept) >= GOALS["fewer_tokens_than_B"]),
        f"{default} ahead of P, S, R by >= 2 paired SE": all(diffs[o]["in_se"] >= GOALS["ahead_of_peers_in_se"]
                                                             for o in ("P", "S", "R") if o in diffs),
        f"{default} ahead of B by >= 3 paired SE": bool(diffs.get("B", {}).get("in_se", float("nan"))
                                                       >= GOALS["ahead_of_B_in_se"]),
        f"{default} informative ratio charged >= 0.8": out["informative_ratio_charged"][default]["mean"]
                                                       >= GOALS["informative_ratio"],
    }
    return out


def preregistered_arms(readme: Path) -> set[str]:
    """The arm names the pre-registration entry in bench/README.md lists (its `Arms:` lines)."""
    text = readme.read_text()
    head = "## Pre-registration: curriculum benchmark"
    if head not in text:
        raise ValueError(f"{readme} holds no '{head}' entry: register the benchmark before running it")
    section = text.split(head, 1)[1].split("\n## ", 1)[0]
    return {line.split("**")[1] for line in section.splitlines() if line.startswith("- **") and "**" in line[4:]
            and line.split("**")[1] in ARMS}
