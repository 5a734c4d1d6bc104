"""`grpo bench gsweep`: which G, measured at equal total rollouts (issue #16).

On the embedded world, from the same warm start, every arm trains with the band scheduler from
online estimates only (no offline profile, so no arm pays for one) and stops at the same total
rollouts; test accuracy is evaluated every EVAL_EVERY training rollouts. Arms:
- G2 .. G32: a fixed G with the same informative answers asked per step (batch_groups x G =
  STEP_ANSWERS; dynamic resampling then generates more where groups come back all-same: the
  rounds and under-filled steps are reported, and every generated answer is charged);
- variance: the variance-driven G schedule (rollout.g_schedule=variance) from G = 8, G doubled
  when the last 10 steps' mean within-group reward variance exceeds 0.18 and halved below 0.16
  (VARIANCE_BAND: the library's defaults never fired here);
- allocate: per-problem group sizes from the posterior (rollout.sizing=allocate, the knapsack),
  offered 2 candidates per G answers (about 4 answers each: compare it with G4) and, as
  allocate_c1, 1 candidate per G answers (about 8 each); allocate_target: the other objective, each
  chosen problem given the fewest answers whose expected chance of an informative group reaches
  0.9 (the goal's informative ratio, set before any run of it, not tuned);
- sequential: answers in rounds of 4, a problem stopped at its first right-and-wrong mix or at 16
  (rollout.sizing=sequential, the issue's sequential sampling), budgeted at the same answers per
  step (what a step spends still varies with its resampling rounds, as in every arm; all charged);
and a KL grid, beta in KL_BETAS x G in KL_GROUP_SIZES, each reporting the KL it reached.
Known differences, reported rather than hidden: a sized step keeps every informative group it drew
(a fixed-G step keeps batch_groups and drops the surplus it paid for); the best fixed G is picked on
the same test split it is reported on (optimistic for that arm, so conservative for allocate); the
scheduler widens its band when fewer problems are likely in it than a step asks for, so arms that
ask for more distinct problems per step (small G; allocate, offered 2 candidates per G answers)
train on a wider band sooner (each run's band_path says when).

Reported per arm over seeds (mean, SE, spread): final test accuracy, the curve against rollouts,
the informative-rollout ratio, the group baseline's variance (the noise a group's mean reward puts
into every advantage: its sample variance / its size), wall-clock, and for `allocate` the rollouts it
needs to reach the best fixed G's final accuracy. The goal (issue #16): allocate reaches the best
fixed G's final accuracy with >= 1.3x fewer rollouts, informative-rollout ratio >= 0.9.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

STEP_ANSWERS = 128  # answers per step in every arm (prompts x G)
FIXED_G = (2, 4, 8, 16, 32)
KL_BETAS = (0.0, 0.01, 0.05, 0.1)
KL_GROUP_SIZES = (4, 16)
# the variance schedule's thresholds: the quartiles (0.165, 0.181) of the 10-step means of within-group
# reward variance in the three G8 runs from warm start caedf446, rounded (a training signal, not the
# test split). With the library's defaults (0.05, 0.20) it never acted on this world: it was G8.
VARIANCE_BAND = (0.16, 0.18)
BUDGET = 7_000
# the arms that size groups per problem; each is read against the best fixed G like allocate (the
# goals are judged on `allocate`, the library's default objective, named before any run)
SIZED_ARMS = ("allocate", "allocate_c1", "allocate_target", "sequential")
EVAL_EVERY = 1_000
MIN_SEEDS = 3  # a goal is judged over at least this many seeds
TRAINING = ("scheduler.name=band", "rollout.max_rounds=4", "rollout.dynamic_resampling=true", "rollout.max_tokens=128",
            "optim.lr=3e-5", "optim.minibatches=1")  # lr: the demo's, chosen on validation (`grpo bench demo_lr`)


def fixed(g: int) -> list[str]:
    if STEP_ANSWERS % g:
        raise ValueError(f"G = {g} does not divide the {STEP_ANSWERS} answers per step")
    return [f"rollout.group_size={g}", f"rollout.batch_groups={STEP_ANSWERS // g}"]


def arms() -> dict[str, list[str]]:
    """Every arm's overrides: fixed Gs, the variance schedule, per-problem allocation."""
    out = {f"G{g}": fixed(g) for g in FIXED_G}
    out["variance"] = [*fixed(8), "rollout.g_schedule=variance", f"rollout.g_min={min(FIXED_G)}",
                       f"rollout.g_max={max(FIXED_G)}", "rollout.g_window=10",
                       f"rollout.g_low={VARIANCE_BAND[0]}", f"rollout.g_high={VARIANCE_BAND[1]}"]
    # the library's default thresholds (0.05, 0.20): never fired on seed 0 of warm start 6665f6f6 (that
    # run is stored under this name); not rerun, since G stays 8 and it repeats G8
    out["variance_default"] = out["variance"][:-2]
    out["allocate"] = [*fixed(8), "rollout.sizing=allocate", f"rollout.size_max={max(FIXED_G)}"]
    out["allocate_c1"] = [*out["allocate"], "rollout.size_candidates=1"]
    out["allocate_target"] = [*out["allocate"], "rollout.size_objective=target", "rollout.size_target=0.9"]
    out["sequential"] = [*fixed(8), "rollout.sizing=sequential", "rollout.size_round=4", "rollout.size_max=16"]
    return out


def kl_arms() -> dict[str, list[str]]:
    """The KL grid: every beta at every G, the KL measured even at beta = 0 (track_kl)."""
    return {f"kl{beta:g}_G{g}": [*fixed(g), f"algo.kl_beta={beta}", "algo.track_kl=true"]
            for beta in KL_BETAS for g in KL_GROUP_SIZES}


def arm_summary(records: list[dict], seconds: float) -> dict:
    """One run: its test curve, final accuracy, informative ratio, mean baseline variance, mean KL
    over the last quarter of its steps, and wall seconds."""
    evals = [r for r in records if r["kind"] == "eval"]
    trains = [r for r in records if r["kind"] == "train"]
    tail = trains[-max(1, len(trains) // 4):]
    return {"curve": [(r["rollouts_generated"], r["heldout_accuracy"]) for r in evals],
            "final_accuracy": evals[-1]["heldout_accuracy"], "final_se": evals[-1]["heldout_accuracy_se"],
            "informative_rollout_ratio": trains[-1]["informative_rollout_ratio"],
            "baseline_variance": float(np.mean([r.get("baseline_variance", np.nan) for r in trains])),
            "kl_reached": float(np.mean([r.get("kl", np.nan) for r in tail])),
            "samples_per_problem": float(np.mean([r.get("samples_per_problem", np.nan) for r in trains])),
            "rounds_per_step": float(np.mean([r["rounds"] for r in trains])),
            "underfilled_share": float(np.mean([bool(r["underfilled"]) for r in trains])),
            "rollouts": trains[-1]["rollouts_generated"],
            # G at the start and after each change (the variance schedule's path): [rollouts so far, G]
            "g_path": changes(trains, ("group_size",)),
            # the scheduler's band at the start and after each change: it widens when fewer problems are
            # likely in band than a step asks for (more distinct problems per step: small G, allocate)
            "band_path": changes(trains, ("band_lo", "band_hi")),
            # training steps only (generation, verification, update, sync): no start-up or evaluations
            "seconds": float(sum(r["step_seconds"] for r in trains)), "wall_seconds": seconds}


def on_grid(curve: list[tuple[float, float]], grid: np.ndarray) -> np.ndarray:
    """One run's test accuracy at the grid's rollout counts, linear between its evaluations: arms
    evaluate at slightly different counts (a step overshoots EVAL_EVERY by what it generated), so
    arms are compared at equal rollouts, never at their own last evaluation (7,000-7,240)."""
    x, y = np.array([c[0] for c in curve], dtype=float), np.array([c[1] for c in curve], dtype=float)
    if x[-1] < grid[-1]:
        raise ValueError(f"a curve ending at {x[-1]:,.0f} rollouts cannot be read at {grid[-1]:,.0f}")
    return np.interp(grid, x, y)


def budget_grid(budget: int) -> np.ndarray:
    """0, EVAL_EVERY, 2 EVAL_EVERY, ... budget: where every arm is read."""
    return np.array([0, *range(EVAL_EVERY, budget, EVAL_EVERY), budget], dtype=float)


def reach_and_stay(grid: np.ndarray, acc: np.ndarray, target: float) -> float | None:
    """The rollouts from which `acc` (on `grid`) is at or above `target` through the end, linear
    between grid points; None when it ends below. A noisy curve that touches the target once and
    falls back has not reached it."""
    below = np.flatnonzero(acc < target)
    if below.size == 0:
        return float(grid[0])
    j = int(below[-1])
    if j == acc.size - 1:
        return None
    x0, x1, y0, y1 = grid[j], grid[j + 1], acc[j], acc[j + 1]
    return float(x0 + (target - y0) * (x1 - x0) / max(y1 - y0, 1e-12))


def changes(trains: list[dict], keys: tuple[str, ...]) -> list[list]:
    """[rollouts so far, *values of keys] at the first train record and wherever one of them changes."""
    out: list[list] = []
    for r in trains:
        if all(k in r for k in keys) and (not out or [r[k] for k in keys] != out[-1][1:]):
            out.append([r["rollouts_generated"], *(r[k] for k in keys)])
    return out


def compare(per_seed: list[dict[str, dict]], budget: int = BUDGET) -> dict:
    """Over seeds: each arm's means and spreads (accuracy_at_budget: read at exactly `budget`
    rollouts); the best fixed G (highest mean accuracy at the budget); and how many fewer rollouts
    `allocate` needs to reach that accuracy and stay there, on the seed-mean curves (the goal) and
    seed by seed (the spread; a seed that ends below is counted as not reached, never dropped)."""
    from bench.common import mean_se

    grid = budget_grid(budget)
    names = list(per_seed[0])
    at = {name: [on_grid(s[name]["curve"], grid) for s in per_seed] for name in names}  # per seed, on the grid
    out = {name: {k: mean_se([s[name][k] for s in per_seed])
                  for k in ("final_accuracy", "informative_rollout_ratio", "baseline_variance", "kl_reached",
                            "samples_per_problem", "rounds_per_step", "underfilled_share", "seconds")}
           for name in names}
    for name in names:
        out[name]["accuracy_at_budget"] = mean_se([a[-1] for a in at[name]])
    fixed_names = [n for n in names if n.startswith("G")]
    if not fixed_names:
        return {"arms": out}
    best = max(fixed_names, key=lambda n: out[n]["accuracy_at_budget"]["mean"])
    target = out[best]["accuracy_at_budget"]["mean"]
    savings = {}  # every per-problem arm, read like allocate (the goals judge allocate, chosen before the runs)
    for name in [n for n in SIZED_ARMS if n in names]:
        reached = reach_and_stay(grid, np.mean(at[name], axis=0), target)
        per_seed_ratio = []
        for s_arm, s_best in zip(at[name], at[best], strict=True):
            r = reach_and_stay(grid, s_arm, s_best[-1])
            per_seed_ratio.append(budget / r if r else None)
        savings[name] = {"mean_curve": budget / reached if reached else None, "per_seed": per_seed_ratio,
                         "reached_in_seeds": sum(r is not None for r in per_seed_ratio), "seeds": len(per_seed_ratio),
                         "informative_rollout_ratio": out[name]["informative_rollout_ratio"]["mean"]}
    alloc = out.get("allocate", {})
    judged = len(per_seed) >= MIN_SEEDS and "allocate" in names
    first = savings.get("allocate", {"mean_curve": None, "per_seed": [], "reached_in_seeds": 0, "seeds": 0})
    return {"arms": out, "best_fixed": best, "best_fixed_accuracy_at_budget": target,
            "allocate_fewer_rollouts_than_best_fixed": {k: v for k, v in first.items() if k != "informative_rollout_ratio"},
            "per_problem_arms": savings,
            # judged over >= MIN_SEEDS seeds only (the "mean over >= 3 seeds"); None: not yet measured
            "goals": {"allocate reaches the best fixed G's accuracy with >= 1.3x fewer rollouts":
                      None if not judged else first["mean_curve"] is not None and first["mean_curve"] >= 1.3,
                      "allocate informative ratio >= 0.9":
                      None if not judged else alloc["informative_rollout_ratio"]["mean"] >= 0.9}}


def mean_curve(curves: list[list[tuple[float, float]]], grid: np.ndarray) -> list[dict]:
    """One arm's test curve over seeds on the grid (`on_grid`): mean accuracy and its SE at each count."""
    from bench.common import mean_se

    at = np.array([on_grid(c, grid) for c in curves])
    return [{"rollouts": float(x), "accuracy": m["mean"], "se": m["se"]}
            for x, m in zip(grid, (mean_se(list(col)) for col in at.T), strict=True)]


def pareto_front(points: list[tuple[str, float, float]]) -> list[tuple[str, float, float]]:
    """The points (label, cost, accuracy) no other point beats (none costs no more and scores at least
    as much, either strictly), by cost. Of equal points the first listed stays."""
    front: list[tuple[str, float, float]] = []
    for label, cost, acc in sorted(points, key=lambda p: (p[1], -p[2])):
        if not front or acc > front[-1][2]:
            front.append((label, cost, acc))
    return front


def pareto(per_seed: list[dict[str, dict]], budget: int = BUDGET) -> dict:
    """Accuracy against cost over seeds: each arm's mean curve on the common grid, and the Pareto
    fronts of (a) those means against rollouts (the step-0 evaluation, the shared warm start, left
    out) and (b) accuracy at the budget against training seconds (what a rollout costs differs by
    arm: a large G generates fewer prompts per step, a small G resamples more rounds). A front is
    drawn through means: `front_se` is the largest SE among its points, and a gap under it is noise."""
    grid = budget_grid(budget)
    curves = {name: mean_curve([s[name]["curve"] for s in per_seed], grid) for name in per_seed[0]}
    by_rollouts = pareto_front([(name, p["rollouts"], p["accuracy"]) for name, c in curves.items()
                                for p in c if p["rollouts"] > 0])
    by_seconds = pareto_front([(name, float(np.mean([s[name]["seconds"] for s in per_seed])), c[-1]["accuracy"])
                               for name, c in curves.items()])
    ses = {(name, p["rollouts"]): p["se"] for name, c in curves.items() for p in c}
    front_ses = [ses[a, x] for a, x, _ in by_rollouts if np.isfinite(ses[a, x])]  # none with one seed
    return {"curves": curves,
            "front_rollouts": [{"arm": a, "rollouts": x, "accuracy": y, "se": ses[a, x]} for a, x, y in by_rollouts],
            "front_se": max(front_ses) if front_ses else None,
            "front_seconds": [{"arm": a, "seconds": x, "accuracy_at_budget": y} for a, x, y in by_seconds]}


def plot(result: dict, path: Path) -> Path:
    """Two Pareto views, mean over seeds on the common rollout grid: test accuracy against rollouts
    (each arm's curve with its SE band, the front dashed) and accuracy at the budget against
    training seconds (SE bars, the front circled)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    par = result["summary"]["pareto"]
    per_seed = [{n: a for n, a in s["arms"].items() if not n.startswith("kl")} for s in result["seeds"]]
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.8))
    for j, (name, curve) in enumerate(par["curves"].items()):
        x = np.array([p["rollouts"] for p in curve])
        y = np.array([p["accuracy"] for p in curve])
        se = np.nan_to_num(np.array([p["se"] for p in curve]))
        left.plot(x, y, color=f"C{j % 10}", marker="o", ms=3, label=name)
        left.fill_between(x, y - se, y + se, color=f"C{j % 10}", alpha=0.12)
        secs = np.mean([s[name]["seconds"] for s in per_seed])  # the budget's point: the curve's last, with its SE
        right.errorbar(secs, y[-1], yerr=se[-1], color=f"C{j % 10}", marker="o", capsize=3)
        right.annotate(name, (secs, y[-1]), textcoords="offset points", xytext=(4, 4), fontsize=7)
    fx, fy = [p["rollouts"] for p in par["front_rollouts"]], [p["accuracy"] for p in par["front_rollouts"]]
    left.step(fx, fy, where="post", color="black", lw=1.2, ls="--", label="Pareto front")
    sx, sy = [p["seconds"] for p in par["front_seconds"]], [p["accuracy_at_budget"] for p in par["front_seconds"]]
    right.step(sx, sy, where="post", color="black", lw=1.2, ls="--")
    right.scatter(sx, sy, s=160, facecolors="none", edgecolors="black", label="Pareto front")
    n = len(result["seeds"])
    left.set(xlabel="total rollouts (every generated answer)", ylabel="test accuracy (mean@4)",
             title=f"accuracy vs rollouts, mean of {n} seed(s) +- SE")
    right.set(xlabel="training seconds (generation, verification, update)",
              ylabel=f"test accuracy at {result['budget_total_rollouts']:,} rollouts",
              title=f"accuracy vs wall-clock, mean of {n} seed(s) +- SE")
    left.legend(fontsize=7, ncol=2)
    right.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


WARM_START = "gsweep-warm-start"  # under the results folder: the warm start every sweep run starts from
MODEL_ARG = "model=<the warm start, inputs.policy>"  # the model's place in a stored `base`: its path is per machine


def sweep_warm_start(results: Path) -> Path:
    """The warm start the sweep trains from: the one stored under `results` (WARM_START, committed),
    else the one this machine builds, which is then stored there. An Intel and an AMD CPU build other
    warm starts (docs/concepts/embedded-world.md, "One warm start across CPUs") and a full sweep takes several sessions on
    whatever CPU each gets, so every session continues from the stored copy."""
    import shutil

    from grpo_data.profile_metadata import weights_hash
    from grpo_data.tables import io
    from pipelines.stages import warm_policy

    stored = Path(results) / WARM_START
    if (stored / "model.safetensors").exists():
        from bench.common import stored_warm_start

        recorded = weights_hash(str(stored_warm_start(results, WARM_START)))  # checked against its bootstrap.json
        others = [w for w in stored_warm_starts(results) if w != recorded]
        print(f"gsweep: warm start {recorded} from {stored}"
              + (f" (runs from other warm starts are kept apart: {others})" if others else ""), flush=True)
        return stored
    built = warm_policy()
    with io.atomic_folder(stored) as tmp:
        for f in built.iterdir():
            if f.is_file():
                shutil.copy2(f, tmp / f.name)
    print(f"gsweep: stored this machine's warm start {weights_hash(str(stored))} at {stored}", flush=True)
    return stored


def run_path(results: Path, budget: int, seed: int, name: str, warm_start: str) -> Path:
    """Where one finished run's summary is stored (committed with the results: run folders under
    runs/ do not outlive a machine, and a full sweep takes several sessions), under the warm start's
    weights hash: an Intel and an AMD CPU build other warm starts (docs/concepts/embedded-world.md, "One warm start across
    CPUs"), so each keeps its own sweep and a session continues the one its CPU builds."""
    folder = "gsweep-runs" if budget == BUDGET else f"gsweep-runs-{budget}"
    return Path(results) / folder / f"warm-{warm_start}" / f"seed{seed}" / f"{name}.json"


def stored_warm_starts(results: Path, budget: int = BUDGET) -> list[str]:
    """The warm starts (weights hashes) with stored runs under `results`."""
    folder = Path(results) / ("gsweep-runs" if budget == BUDGET else f"gsweep-runs-{budget}")
    return sorted(p.name.removeprefix("warm-") for p in folder.glob("warm-*") if p.is_dir())


def pick_warm_start(results: Path, budget: int, warm_start: str | None) -> str:
    """`warm_start` when given, else the only one stored; several stored is an error naming them."""
    if warm_start:
        return warm_start
    stored = stored_warm_starts(results, budget)
    if not stored:
        raise FileNotFoundError(f"no stored gsweep runs under {results}: run them (`grpo bench gsweep`)")
    if len(stored) != 1:
        raise ValueError(f"{len(stored)} warm starts have stored gsweep runs under {results} ({stored}): "
                         "name one (--warm-start HASH)")
    return stored[0]


def stored_run(path: Path, overrides: list[str], shared: dict) -> dict | None:
    """The stored run when it was made with these overrides, shared settings and inputs; None when
    there is none; an error when one made with others is there (it is never overwritten)."""
    import json

    if not path.exists():
        return None
    saved = json.loads(path.read_text())
    from bench.common import differing_keys, same_as_stored

    differ = differing_keys(saved["shared"], shared)
    if not same_as_stored(saved["overrides"], overrides):
        differ.append("overrides")
    if differ:
        raise ValueError(f"{path} was made with other {differ}: move it away (or delete it) to rerun this arm")
    return saved


def assemble(names: tuple[str, ...], seeds: tuple[int, ...] = (0,), results: Path | None = None,
             budget: int = BUDGET, plot_to: Path | None = None, warm_start: str | None = None) -> dict:
    """The sweep's result from the stored runs of `names` x `seeds` from one warm start (pick_warm_start),
    whatever code made each (its hash is recorded beside it); they must share budget, training settings
    and inputs. A missing run is an error that names it. Marked partial unless every arm and >= 3
    seeds are there."""
    import json

    from bench.common import RESULTS, differing_keys, same_as_stored

    results = Path(results or RESULTS)
    if len(set(seeds)) != len(seeds) or len(set(names)) != len(names):
        raise ValueError(f"repeated seeds or arms ({list(seeds)}, {list(names)}): each counts once")
    every = {**arms(), **kl_arms()}
    unknown = sorted(set(names) - set(every))
    if unknown:
        raise ValueError(f"unknown gsweep arm(s) {unknown}; arms: {', '.join(every)}")
    warm_start = pick_warm_start(results, budget, warm_start)
    paths = {(seed, name): run_path(results, budget, seed, name, warm_start) for seed in seeds for name in names}
    missing = [f"seed{seed}/{name}" for (seed, name), p in paths.items() if not p.exists()]
    if missing:
        raise FileNotFoundError(f"no stored run for {missing} from warm start {warm_start} under {results}: run them "
                                f"(`grpo bench gsweep --arms ... --seeds ...`)")
    saved = {key: json.loads(p.read_text()) for key, p in paths.items()}
    first_key = next(iter(saved))
    for key, run in saved.items():
        differ = differing_keys(run["shared"], saved[first_key]["shared"])
        if differ:
            raise ValueError(f"{paths[key]} differs from {paths[first_key]} in {differ}: rerun one of them")
        if not same_as_stored(run["overrides"], every[key[1]]):
            raise ValueError(f"{paths[key]} was run with overrides {run['overrides']}, but arm {key[1]} is now "
                             f"{every[key[1]]}: move it away and rerun it")
    result = {**saved[first_key]["shared"], "seeds": [], "arms_run": list(names),
              "run_code": {f"seed{seed}/{name}": saved[seed, name]["code"] for seed, name in saved},
              "run_provenance": {f"seed{seed}/{name}": {"finished": saved[seed, name].get("finished"),
                                                         "cpu": (saved[seed, name].get("machine") or {}).get("cpu_model")}
                                 for seed, name in saved}}
    if not set(every) <= set(names) or len(seeds) < 3 or budget != BUDGET:
        result["variant"] = f"partial: seeds {list(seeds)}, arms {list(names)}"
    if len(set(result["run_code"].values())) > 1:
        result["code_note"] = (f"runs made by {len(set(result['run_code'].values()))} versions of the library "
                               "code (run_code); a run is reused whatever code made it")
    for seed in seeds:
        result["seeds"].append({"seed": seed, "arms": {name: saved[seed, name]["summary"] for name in names}})
    per_seed = [s["arms"] for s in result["seeds"]]
    main = [{n: a for n, a in s.items() if not n.startswith("kl")} for s in per_seed]
    if main[0]:
        result["summary"] = {**compare(main, budget), "pareto": pareto(main, budget)}
    if any(n.startswith("kl") for n in names):
        result["kl_grid"] = compare([{n: a for n, a in s.items() if n.startswith("kl")} for s in per_seed],
                                    budget)["arms"]
    if plot_to is not None and main[0]:
        result["plot"] = str(plot(result, plot_to))
    return result


def run(quick: bool = False, seeds: tuple[int, ...] = (0, 1, 2), workdir: str = "runs/bench-gsweep",
        kl: bool = True, only: tuple[str, ...] | None = None, results: Path | None = None) -> dict:
    """Every arm (and the KL grid with `kl`) on every seed; `only` runs the named arms alone (a
    partial sweep, marked as such in the result: the best fixed G is then the best of those run).
    Each finished run is stored under `results` (run_path) and reused by a later invocation."""

    from bench.common import RESULTS, cached_train_run, input_hashes, machine, now
    from grpo_data.tables import io
    from pipelines.stages import write_world

    if len(set(seeds)) != len(seeds):
        raise ValueError(f"repeated seeds {list(seeds)}: each counts once")
    every = {**arms(), **(kl_arms() if kl else {})}
    if only:
        unknown = sorted(set(only) - set(every))
        if unknown:
            raise ValueError(f"unknown gsweep arm(s) {unknown}; arms: {', '.join(every)}")
        every = {name: every[name] for name in only}
    out, results = Path(workdir), Path(results or ("runs/bench-quick/results" if quick else RESULTS))
    policy = sweep_warm_start(results)
    paths = write_world("runs/world")
    budget = 2_000 if quick else BUDGET
    base = [f"model={policy}", f"data.train={paths['train']}", f"data.heldout={paths['test']}", "data.profile=null",
            *TRAINING, "run.steps=100000", "run.eval_every=0", f"run.eval_every_rollouts={EVAL_EVERY}", "run.eval_k=4",
            "run.save_every=0", "run.progress=false", f"run.max_rollouts={budget}"]
    inputs = [str(policy), str(paths["train"]), str(paths["test"])]
    # inputs by content: the same world and warm start give the same hashes on any machine or session
    shared = {"budget_total_rollouts": budget, "step_answers": STEP_ANSWERS, "training": list(TRAINING),
              "eval_every": EVAL_EVERY, "inputs": dict(zip(("policy", "train", "test"), input_hashes(inputs).values(),
                                                           strict=True)),
              "base": [MODEL_ARG if arg.startswith("model=") else arg for arg in base]}
    # every run already stored for these seeds and arms is checked before anything trains
    warm = shared["inputs"]["policy"]
    for seed in seeds:
        for name, overrides in every.items():
            stored_run(run_path(results, budget, seed, name, warm), overrides, shared)
    for seed in seeds:  # seeds outermost: a stopped benchmark still has whole seeds
        for name, overrides in every.items():
            path = run_path(results, budget, seed, name, warm)
            if stored_run(path, overrides, shared) is not None:
                print(f"{path}: reusing the stored run", flush=True)
                continue
            records, seconds = cached_train_run(name, [*overrides, f"run.seed={seed}"], base, out / f"seed{seed}",
                                                inputs, budget)
            code = json_key(out / f"seed{seed}" / name)["code"]
            io.write_json(path, {"arm": name, "seed": seed, "overrides": overrides, "shared": shared, "code": code,
                                 "summary": arm_summary(records, seconds), "machine": machine(),
                                 "finished": now()})
    return assemble(tuple(every), seeds, results, budget, plot_to=results / "gsweep.png", warm_start=warm)


def json_key(run_dir: Path) -> dict:
    """The run key (config, code hash, input hashes) cached_train_run saved beside a run."""
    import json

    return json.loads((Path(run_dir) / "bench-key.json").read_text())["key"]
