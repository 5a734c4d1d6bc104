"""The curriculum benchmark's arithmetic (`bench.curriculum_bench`): charging each arm's profile,
tokens and rollouts to reach B's final, paired differences at the budget, waste per pass over the
pool, wall-clock per phase, and when a profile pays for itself.

Pure functions of stored run records; nothing here trains or samples. The goals are the ones
pre-registered in bench/README.md ("Pre-registration: curriculum benchmark").
"""

from __future__ import annotations

import numpy as np

from bench.e2e_stats import rollouts_to_reach

GOALS = {"fewer_tokens_than_B": 2.0, "ahead_of_peers_in_se": 2.0, "ahead_of_B_in_se": 3.0, "informative_ratio": 0.8}
PEERS = ("P", "S", "R")
# the cells (regime, condition, split) the goals were registered for: multi / nolevel / test, and
# Amendment 4's multi_t06 with "the goals" kept; every other cell is reported, not judged (Amendment 11)
GOAL_CELLS = {("multi", "nolevel", "test"), ("multi_t06", "nolevel", "test")}


def goals_judged(regime: str, condition: str, split: str) -> bool:
    """Whether a cell's goals are judged (registered for it) or only reported."""
    return (regime, condition, split) in GOAL_CELLS


def charge(records: list[dict], cost: dict) -> list[dict]:
    """Records with `total_rollouts` and `total_tokens`: the run's own (training rounds, screens,
    refresh) plus an offline profile's `cost` ({"rollouts", "tokens"}; zeros for an arm without one)."""
    return [{**r, "total_rollouts": r["rollouts_generated"] + cost["rollouts"],
             "total_tokens": r.get("tokens_generated", 0) + cost["tokens"]} for r in records]


def reach(evals: list[dict], target: float, x: str) -> float | None:
    """`x` (total_tokens or total_rollouts) at which accuracy first reaches target, linear between
    evaluations; None when it never does (e2e's `rollouts_to_reach`, read on any axis)."""
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
    from grpo_data.curriculum.stats import paired_mean_se

    d = np.array([a[i] - b[i] for i in sorted(a)])
    mean, se = paired_mean_se(d)
    return {"mean": mean, "se": se, "problems": int(d.size)}


def noise(a: list[dict[str, float]], b: list[dict[str, float]], k: int | None = None, draws: int = 2000,
          seed: int = 0) -> dict:
    """The noise of the mean paired difference a - b over seeds (issue #59, item 4). `a`, `b`: per seed,
    problem -> pass rate of each arm on the same problems (every seed the same test set), each rate
    from k answers. Four SEs of the mean difference:
    - evaluation: the binomial sampling of the k answers alone, sqrt(sum over seeds and problems of
      [pa(1 - pa) + pb(1 - pb)] / (k - 1)) / (problems x seeds) (NaN without k);
    - problems: the test set read as a sample of problems, sd over problems of the seed-mean
      difference / sqrt(problems) (evaluation included);
    - seeds: training noise, sd of the per-seed means / sqrt(seeds) (evaluation included; NaN for one
      seed: unmeasured);
    - bootstrap: seeds and problems resampled together (crossed). With 3 seeds there are only 10
      distinct seed resamples and the seed part shrinks by (seeds - 1) / seeds: read it beside `seeds`.
    The larger is what a registered goal is read against; `df` is the seeds' degrees of freedom when
    the seeds' or the bootstrap's SE is the larger (for `smallest_resolvable`), else None. Taking the
    larger rather than combining the sources understates a crossed design's SE by up to sqrt(2)."""
    ids = sorted(a[0])
    if len(a) != len(b) or any(sorted(x) != ids for x in (*a, *b)):
        raise ValueError("every seed of both arms must hold the same problems to pair them")
    pa = np.array([[x[i] for i in ids] for x in a], dtype=np.float64)
    pb = np.array([[x[i] for i in ids] for x in b], dtype=np.float64)
    d = pa - pb
    n_seeds, n = d.shape
    evaluation = (float(np.sqrt(np.sum((pa * (1 - pa) + pb * (1 - pb)) / (k - 1))) / (n * n_seeds))
                  if k and k > 1 else float("nan"))
    problems = float(d.mean(axis=0).std(ddof=1) / np.sqrt(n)) if n > 1 else float("nan")
    seeds = float(d.mean(axis=1).std(ddof=1) / np.sqrt(n_seeds)) if n_seeds > 1 else float("nan")
    rng = np.random.default_rng(seed)
    means = [d[rng.integers(n_seeds, size=n_seeds)][:, rng.integers(n, size=n)].mean() for _ in range(draws)]
    named = {"evaluation": evaluation, "problems": problems, "seeds": seeds, "bootstrap": float(np.std(means, ddof=1))}
    finite = {key: v for key, v in named.items() if np.isfinite(v)}
    larger = max(finite, key=finite.get)
    # few seeds: the seeds' part is read with Student's t whenever it is measured and leads (or the crossed
    # bootstrap, which holds it, does)
    df = n_seeds - 1 if n_seeds > 1 and larger in ("seeds", "bootstrap") else None
    return {"mean": float(d.mean()), **{f"se_{key}": v for key, v in named.items()}, "se_larger": finite[larger],
            "larger": larger, "df": df, "seeds": n_seeds, "problems": n, "training_noise_measured": n_seeds > 1}


def smallest_resolvable(se: float, df: int | None = None, alpha: float = 0.05, power: float = 0.8) -> float:
    """The smallest true difference a cell resolves: a two-sided test at `alpha` with `power`,
    (z_a/2 + z_power) x SE; with `df` (an SE from few seeds), Student's t quantiles instead (2 degrees
    of freedom: 4.30 + 1.06 = 5.36 SE, not 2.80)."""
    from scipy import stats

    if df:
        return float((stats.t.ppf(1 - alpha / 2, df) + stats.t.ppf(power, df)) * se)
    return float((stats.norm.ppf(1 - alpha / 2) + stats.norm.ppf(power)) * se)


def planned_se(pass_rates: np.ndarray, k: int, seeds: int, training_sd: float = 0.0) -> dict:
    """Before a cell runs: the SE of a mean paired difference between two arms, each evaluated with
    k samples per problem (`pass_rates`: the problems' expected pass rates), over `seeds` seeds.
    Evaluation: `noise`'s binomial SE, each problem's difference of variance 2 p(1 - p) / k;
    training: `training_sd`, the spread of one seed's paired mean between arms measured on earlier
    runs (which includes their evaluation noise, so the larger of the two is taken, not their sum).
    The larger, and the smallest effect it resolves (t with seeds - 1 degrees of freedom when
    training noise is the larger)."""
    p = np.asarray(pass_rates, dtype=np.float64)
    evaluation = float(np.sqrt(np.mean(2 * p * (1 - p) / k) / p.size / seeds))
    training = float(training_sd / np.sqrt(seeds))
    larger = max(evaluation, training)
    df = seeds - 1 if training >= evaluation and seeds > 1 else None
    return {"se_evaluation": evaluation, "se_training": training, "se_larger": larger, "df": df,
            "smallest_resolvable": smallest_resolvable(larger, df), "k": k, "problems": int(p.size), "seeds": seeds}


def over_seeds(values: list[float]) -> dict:
    """Mean and SE (sample std / sqrt n) over seeds of per-seed values (paired differences included)."""
    from bench.common import mean_se

    return mean_se(values)


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
            "batch_pass_rate": acc["correct"] / max(acc["rollouts"], 1.0), "rollouts": int(acc["rollouts"]),
            "refresh_rollouts": int(acc["refresh"]),
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
            "waste_per_pass": waste_per_pass(trains, pool), "seconds": seconds, "wall_s": wall_per_phase(records),
            "coverage": coverage(trains)}


def coverage(trains: list[dict]) -> dict:
    """How training spread over the pool by the run's end: distinct problems trained, and how many
    times each of them was trained on average (the band arms' repetition, Amendment 3)."""
    last = trains[-1]
    return {"distinct_problems_trained": int(last["distinct_problems_trained"]),
            "times_trained_mean": float(last["times_trained_mean"])}


def wall_per_phase(records: list[dict]) -> dict:
    """Wall seconds of a run by phase, from its metrics: generation (training rounds, screens; its
    tokens over its rate), verification, the learner, weight sync, whole training steps (refresh
    included), and evaluation (not charged)."""
    trains = [r for r in records if r["kind"] == "train"]

    def total(key):
        return float(sum(r.get(key, 0.0) or 0.0 for r in trains))

    gen = float(sum(r["gen_tokens_step"] / r["gen_tokens_per_s"] for r in trains
                    if r.get("gen_tokens_per_s") and r.get("gen_tokens_step")))
    return {"generation": gen, "verification": total("verify_seconds"), "learner": total("train_seconds"),
            "weight_sync": total("weight_sync_s"), "training_steps": total("step_seconds"),
            "evaluation": float(sum(r.get("eval_seconds", 0.0) for r in records if r["kind"] == "eval"))}


def compare(seeds: list[dict], default: str = "A", eval_k: int | None = None) -> dict:
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
        # issue #59: beside the registered SE (over seeds), the bootstrap over seeds and problems and the
        # larger of all three, which later registrations read their goals against
        both = noise([s["arms"][default]["per_problem_final"] for s in seeds],
                     [s["arms"][other]["per_problem_final"] for s in seeds], k=eval_k)
        diffs[other] = {"mean": seed_level["mean"], "se": se, "se_within_seeds": within,
                        "in_se": seed_level["mean"] / se if se > 0 else float("nan"), "per_seed": per,
                        **{key: both[key] for key in ("se_evaluation", "se_problems", "se_bootstrap", "se_larger",
                                                      "larger")},
                        "in_larger_se": seed_level["mean"] / both["se_larger"] if both["se_larger"] > 0 else float("nan"),
                        "smallest_resolvable": smallest_resolvable(both["se_larger"], both["df"])}
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
    peers = [o for o in PEERS if o != default]
    out["goals"] = {
        f"{default} reaches B's final with >= 2x fewer tokens": bool(
            len(got) == len(kept) == len(seeds) and np.mean(got) >= GOALS["fewer_tokens_than_B"]
            and np.mean(kept) >= GOALS["fewer_tokens_than_B"]),
        # the goal names every peer: with one not run it is not judged (None), never met on a subset
        f"{default} ahead of {', '.join(peers)} by >= 2 paired SE": (
            None if any(o not in diffs for o in peers)
            else all(diffs[o]["in_se"] >= GOALS["ahead_of_peers_in_se"] for o in peers)),
        f"{default} ahead of B by >= 3 paired SE": bool(diffs.get("B", {}).get("in_se", float("nan"))
                                                       >= GOALS["ahead_of_B_in_se"]),
        f"{default} informative ratio charged >= 0.8": out["informative_ratio_charged"][default]["mean"]
                                                       >= GOALS["informative_ratio"],
    }
    return out


def profile_pays(seeds: list[dict], pool: int, amortize: tuple[int, ...] = (1, 3, 10)) -> dict:
    """When to profile: A (profile) against A0 (no profile) in one regime. Per seed, the charged
    tokens A needs to reach A0's final accuracy, with the profile's tokens shared by N runs
    (N = 1: charged in full), as A0's tokens at the budget over A's (> 1: the profile paid for
    itself); and A - A0 at the budget, paired per problem. Mean over the seeds where A reaches it;
    the profile's rollouts per problem of the `pool`."""
    out = {}
    for n in amortize:
        ratios = []
        for s in seeds:
            a, a0 = s["arms"]["A"], s["arms"]["A0"]
            share = a["profile"]["tokens"] * (1 - 1 / n)  # what the other N - 1 runs pay of it
            evals = [{**e, "x": e["total_tokens"] - share} for e in a["evals"]]
            mine = reach(evals, a0["evals"][-1]["heldout_accuracy"], "x")
            ratios.append(a0["evals"][-1]["total_tokens"] / mine if mine else None)
        got = [r for r in ratios if r is not None]
        out[f"amortized_{n}"] = {**(over_seeds(got) if got else {}), "reached_in_seeds": len(got), "seeds": len(seeds),
                                 "per_seed": ratios}
    d = [paired_difference(s["arms"]["A"]["per_problem_final"], s["arms"]["A0"]["per_problem_final"])["mean"]
         for s in seeds]
    out["A_minus_A0"] = over_seeds(d)
    out["profile_rollouts_per_problem"] = float(np.mean([s["arms"]["A"]["profile"]["rollouts"] for s in seeds])) / pool
    return out
