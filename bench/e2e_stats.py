"""The e2e benchmark's arithmetic (`bench.e2e_bench`): rollouts to reach a target accuracy, charging
the profile, frontier movement, paired differences and their SEs, and the goals as met or missed.

Pure functions of stored evaluation records and per-problem accuracies; nothing here trains or samples.
"""

from __future__ import annotations

import numpy as np
import polars as pl

# pre-registered in bench/README.md with the benchmark; `aggregate` reports each as met or missed
GOALS = {"informative_ratio_A": 0.8, "fewer_rollouts_than_B": 2.0, "fewer_rollouts_than_C": 1.5,
         "A_minus_B_in_se": 3.0, "frontier_A": 0.3}


def rollouts_to_reach(evals: list[dict], target: float, x: str = "total_rollouts") -> float | None:
    """Rollouts (column `x`) at which test accuracy first reaches `target`, linear between evals."""
    prev = None
    for r in evals:
        if r["heldout_accuracy"] >= target:
            if prev is None:
                return float(r[x])
            x0, y0, x1, y1 = prev[x], prev["heldout_accuracy"], r[x], r["heldout_accuracy"]
            return float(x0 + (target - y0) * (x1 - x0) / max(y1 - y0, 1e-9))
        prev = r
    return None


def charged(evals: list[dict], profile_samples: int) -> list[dict]:
    """Eval records with `total_rollouts`: training + refresh rollouts plus the profile's samples."""
    return [{**r, "total_rollouts": r["rollouts_generated"] + profile_samples} for r in evals]


def offline_filter(train: pl.DataFrame, profile: pl.DataFrame) -> pl.DataFrame:
    """The training rows whose profile is neither all-right nor all-wrong (unprofiled rows stay)."""
    decided = profile.filter((pl.col("n_correct") == 0) | (pl.col("n_correct") == pl.col("k"))).select("id")
    return train.join(decided, on="id", how="anti")


def frontier_share(start: pl.DataFrame, end: pl.DataFrame, low: float = 0.1, high: float = 0.5) -> dict:
    """Of the problems at pass rate <= low in `start` (id, n_correct, k), the share at >= high in `end`."""
    both = start.join(end, on="id", suffix="_end")
    hard = both.filter(pl.col("n_correct") / pl.col("k") <= low)
    moved = hard.filter(pl.col("n_correct_end") / pl.col("k_end") >= high).height
    return {"start_hard": hard.height, "moved": moved, "share": moved / hard.height if hard.height else float("nan")}


def per_problem(evals: pl.DataFrame) -> dict[str, float]:
    """id -> that evaluation's pass rate on the problem."""
    return dict(zip(evals["id"].to_list(), (evals["n_correct"] / evals["k"]).to_list(), strict=True))


def paired_se(seeds: list[dict], a: str, b: str) -> float:
    """Standard error of mean(A) - mean(B) from the test problems' sampling: per problem, the
    difference averaged over seeds; both arms are scored on the same problems, so pairing them
    removes the problems' own difficulty from the error."""
    ids = sorted(seeds[0]["per_problem_final"][a])
    from bench.common import mean_se

    return mean_se([np.mean([s["per_problem_final"][a][i] - s["per_problem_final"][b][i] for s in seeds])
                    for i in ids])["se"]


def frontier_noise_floor(seeds: list[dict]) -> float:
    """The frontier share between two start evaluations of the same, untrained policy (different
    seeds): how much 'movement' re-measuring alone shows (hard-at-start is selected on noise)."""
    starts = [pl.DataFrame({"id": list(s["per_problem_start"]), "n_correct": list(s["per_problem_start"].values()),
                            "k": [1.0] * len(s["per_problem_start"])}) for s in seeds]
    shares = [frontier_share(x, y)["share"] for i, x in enumerate(starts) for y in starts[i + 1:]]
    return float(np.nanmean(shares)) if shares else float("nan")


def seed_summary(arms: dict[str, dict], start: pl.DataFrame, finals: dict[str, pl.DataFrame],
                 amortize_over: tuple[int, ...] = (1, 3, 10)) -> dict:
    """Per seed: rollouts each arm needs to reach B's final accuracy (charged, and with the
    profile amortized over N runs), final accuracies, and frontier movement."""
    target = arms["B"]["evals"][-1]["heldout_accuracy"]
    reach = {}
    for n in amortize_over:
        per = {}
        for arm, a in arms.items():
            evals = [{**e, "x": e["rollouts_generated"] + a["profile_samples"] / n} for e in a["evals"]]
            per[arm] = rollouts_to_reach(evals, target, "x")
        reach[f"amortized_{n}"] = per
    charged_reach = reach["amortized_1"]
    ratio = {f"{other}_over_A": (charged_reach[other] / charged_reach["A"]) if charged_reach["A"] and charged_reach[other]
             else None for other in ("B", "C", "A0")}
    return {"target_B_final": target, "rollouts_to_B_final": reach, "ratios_charged": ratio,
            "final_accuracy": {arm: a["evals"][-1]["heldout_accuracy"] for arm, a in arms.items()},
            "final_se": {arm: a["evals"][-1]["heldout_accuracy_se"] for arm, a in arms.items()},
            "frontier": {arm: frontier_share(start, finals[arm]) for arm in arms}}


def paired_over_seeds(seeds: list[dict], value) -> dict:
    """Mean and SE over seeds of a per-seed difference `value(seed)` (paired by seed), and the mean
    in units of that SE (infinite for a difference identical on every seed)."""
    from bench.common import mean_se

    d = mean_se([value(s) for s in seeds])
    mean, se = d["mean"], d["se"]
    return {"mean": mean, "se": se, "in_se": mean / se if se > 0 else
            (float("inf") * np.sign(mean) if d["n"] > 1 and mean else float("nan"))}


def aggregate(seeds: list[dict]) -> dict:
    """Means, spreads and standard errors over seeds, and each goal as met or missed."""
    from bench.common import mean_se

    arms = list(seeds[0]["arms"])
    out: dict = {"final_accuracy": {a: mean_se([s["summary"]["final_accuracy"][a] for s in seeds]) for a in arms},
                 # one evaluation's own sampling error (same test problems every seed: it does not shrink
                 # with more seeds), beside the SE over seeds in final_accuracy
                 "final_se_test_sampling": {a: float(np.mean([s["summary"]["final_se"].get(a, np.nan) for s in seeds]))
                                            for a in arms},
                 "informative_rollout_ratio": {a: mean_se([s["arms"][a]["informative_rollout_ratio"] for s in seeds])
                                               for a in arms},
                 "frontier": {a: mean_se([s["summary"]["frontier"][a]["share"] for s in seeds]) for a in arms},
                 "frontier_noise_floor": frontier_noise_floor(seeds) if "per_problem_start" in seeds[0] else None}
    if all("rollouts_generated" in s["arms"][a] for s in seeds for a in arms):
        # the profile's samples counted as rollouts that trained nothing
        out["informative_rollout_ratio_charged"] = {a: mean_se([
            s["arms"][a]["informative_rollout_ratio"] * s["arms"][a]["rollouts_generated"]
            / (s["arms"][a]["rollouts_generated"] + s["arms"][a]["profile_samples"]) for s in seeds]) for a in arms}
    # a seed where B ended at or below the start has no speed-up to measure: every arm "reaches"
    # B's final at its first evaluation (the profile's arms after paying for it), so its ratio is
    # undefined; it is reported apart, and a goal that needs every seed counts it as not shown
    defined = [s for s in seeds if not s["summary"]["target_B_final"] <= s.get("initial_accuracy", float("-inf"))]
    ratios = {}
    for key in ("B_over_A", "C_over_A", "A0_over_A"):
        vals = [s["summary"]["ratios_charged"][key] for s in defined]
        got = [v for v in vals if v is not None]
        ratios[key] = {**(mean_se(got) if got else {}), "reached_in_seeds": len(got), "seeds": len(vals),
                       "undefined_in_seeds": len(seeds) - len(defined)}
    out["rollout_ratios_charged"] = ratios
    # the same question against one target for every seed: B's mean final accuracy
    common = out["final_accuracy"]["B"]["mean"]
    reach = [{a: rollouts_to_reach(s["arms"][a]["evals"], common) for a in arms} for s in seeds]
    out["rollouts_to_B_mean_final"] = {"target": common, "per_seed": reach, **{
        f"{o}_over_A": {**(mean_se(v) if (v := [r[o] / r["A"] for r in reach if r["A"] and r[o]]) else {}),
                        "reached_in_seeds": len(v), "seeds": len(seeds)} for o in ("B", "C", "A0")}}
    # two standard errors of A - B, the larger one counts: over seeds (paired by seed; the seeds share
    # one profile, so its own variance is not in it), and the test problems' sampling (paired by problem)
    diff = paired_over_seeds(seeds, lambda s: s["summary"]["final_accuracy"]["A"] - s["summary"]["final_accuracy"]["B"])
    se_seeds = diff["se"]
    se_eval = paired_se(seeds, "A", "B") if "per_problem_final" in seeds[0] else float("nan")
    se = float(np.nanmax([se_seeds, se_eval]))
    out["A_minus_B"] = {"mean": diff["mean"], "se_over_seeds": se_seeds, "se_test_sampling": se_eval,
                        "in_se": float(diff["mean"] / se) if se > 0 else float("nan")}
    out["frontier_A_minus_B"] = paired_over_seeds(seeds, lambda s: s["summary"]["frontier"]["A"]["share"]
                                                  - s["summary"]["frontier"]["B"]["share"])

    def every_seed(key: str, goal: float) -> bool:  # reached, and by the goal's factor, on every seed
        r = ratios[key]
        return bool(r.get("mean") and r["mean"] >= goal and r["reached_in_seeds"] == len(seeds))

    out["goals"] = {
        "informative_ratio_A >= 0.8": out["informative_rollout_ratio"]["A"]["mean"] >= GOALS["informative_ratio_A"],
        "A reaches B's final with >= 2x fewer rollouts": every_seed("B_over_A", GOALS["fewer_rollouts_than_B"]),
        "... and >= 1.5x fewer than C": every_seed("C_over_A", GOALS["fewer_rollouts_than_C"]),
        "A - B >= 3 SE": out["A_minus_B"]["in_se"] >= GOALS["A_minus_B_in_se"],
        # "more than under B" must be shown, not a difference of means inside the noise: >= 2 SE paired by seed
        "frontier A >= 0.3 and > B by >= 2 SE": bool(out["frontier"]["A"]["mean"] >= GOALS["frontier_A"]
                                                     and out["frontier_A_minus_B"]["in_se"] >= 2.0),
    }
    return out
