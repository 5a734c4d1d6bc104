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
- R:  GRESO's probabilistic skipping (`scheduler.name=greso`) + resampling;
- Aw: A's band scheduler and refresh started from another warm start's profile of the pool
      (`data.prior_profile`, discounted; charged 0: the user already holds it; Amendment 6).

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

from bench import run_trace
from bench.common import pool_table  # noqa: F401 - the regime's pool, shared with the prior benchmark
from bench.curriculum_stats import arm_result, compare, coverage, over_seeds, paired_difference, profile_pays

ARMS: dict[str, dict] = {
    "B": {"overrides": ["scheduler.name=uniform"], "profile": False},
    "A": {"overrides": ["scheduler.name=band", "scheduler.refresh_every=10", "scheduler.refresh_size=32",
                        "scheduler.refresh_k=4", "scheduler.refresh_drift=0.25"], "profile": True},
    "A0": {"overrides": ["scheduler.name=band"], "profile": False},
    "P": {"overrides": ["scheduler.name=pools"], "profile": False},
    "S": {"overrides": ["scheduler.name=uniform", "rollout.sizing=screen", "rollout.size_round=4",
                        "rollout.size_candidates=2.0", "rollout.max_rounds=8"], "profile": False},
    "R": {"overrides": ["scheduler.name=greso"], "profile": False},
    # Amendment 3: the band arms with pass epochs (and A's refresh on surprise), after the causes measured
    "A0p": {"overrides": ["scheduler.name=band", "scheduler.epoch=pass", "scheduler.skip_below=0.2"], "profile": False},
    "Ap": {"overrides": ["scheduler.name=band", "scheduler.refresh_every=10", "scheduler.refresh_size=32",
                         "scheduler.refresh_k=4", "scheduler.refresh_drift=0.15", "scheduler.refresh_trigger=surprise",
                         "scheduler.epoch=pass", "scheduler.skip_below=0.2"], "profile": True},
    # Amendment 6 (issue #34): A from another warm start's fixed k = 16 profile, read as a prior, not charged
    "Aw": {"overrides": ["scheduler.name=band", "scheduler.refresh_every=10", "scheduler.refresh_size=32",
                         "scheduler.refresh_k=4", "scheduler.refresh_drift=0.25"], "profile": False,
           "prior_profile": True},
    # issue #59's peers: Thompson sampling over Beta posteriors (marin #8765), and sGPO (arXiv 2606.08854) from
    # its own fixed-k profile (charged), sizes about 1/p served by rollout.sizing=scheduler
    "TS": {"overrides": ["scheduler.name=thompson"], "profile": False},
    "SG": {"overrides": ["scheduler.name=sgpo", "rollout.sizing=scheduler"], "profile": True,
           "profile_settings": {"adaptive": False, "k": 8}},
}
FRONTIER_ONLY = ("TS", "SG")  # arms registered on the frontier world only (issue #59)


def arms_for(regime: str) -> tuple[str, ...]:
    """The arms a regime's registration asks: every arm, the frontier-only ones on the frontier world only."""
    frontier = REGIMES[regime].get("world") == "frontier"
    return tuple(a for a in ARMS if frontier or a not in FRONTIER_ONLY)
# shared by every arm; lr is the one setting chosen on validation (for B, applied to all: LR_CANDIDATES)
TRAINING = ("rollout.group_size=8", "rollout.batch_groups=8", "rollout.max_rounds=4", "rollout.dynamic_resampling=true",
            "rollout.oversample=1.25", "rollout.max_tokens=128", "rollout.temperature=1.0", "scheduler.lo=0.2",
            "scheduler.hi=0.8", "scheduler.dry=informative", "scheduler.without_replacement=true", "scheduler.epoch=band")
SEEDS = (0, 1, 2)
LR_CANDIDATES = (3e-5, 1e-4)
# a regime's "overrides" come after TRAINING and before the arm's own; "temperature" is also the profile's
REGIMES = {"multi": {"pool": 200, "budget": 8_000}, "one_pass": {"pool": 800, "budget": 7_000},
           # Amendment 4: the multi regime sampled (trained, profiled, refreshed, evaluated) at T = 0.6
           "multi_t06": {"pool": 200, "budget": 8_000, "overrides": ["rollout.temperature=0.6"], "temperature": 0.6},
           # issue #59: the frontier world's whole pool from its stored warm start, runs bounded and evaluated in
           # charged generated tokens (`tokens`, evaluated at k = EVAL_K_ENDS every `eval_tokens`); the values are
           # the registered comparison's (bench/PREREGISTRATION.md), set when it is registered
           "frontier": {"pool": None, "budget": None, "tokens": None, "eval_tokens": None, "world": "frontier",
                        "overrides": ["rollout.batch_groups=16"]}}
CONDITIONS = ("nolevel", "level")
EVAL_EVERY = 2_000
EVAL_K, EVAL_K_ENDS = 4, 32
PROFILE = {"adaptive": True, "screen_k": 2, "step_k": 2, "max_k": 4, "max_tokens": 128, "chunk_size": 512,
           "band": "0.2,0.8"}


def arm_overrides(arm: str, regime: str = "multi") -> list[str]:
    """The shared settings, the regime's, then the arm's own (later overrides win: S's max_rounds=8
    over 4, multi_t06's temperature 0.6 over 1.0)."""
    return [*TRAINING, *REGIMES[regime].get("overrides", []), *ARMS[arm]["overrides"]]


def profile_settings(regime: str, arm: str = "A") -> dict:
    """An arm's offline profile: PROFILE with the arm's own settings (SG's fixed k), sampled at the
    regime's temperature (the one training uses)."""
    return {**PROFILE, **ARMS[arm].get("profile_settings", {}),
            **({"temperature": REGIMES[regime]["temperature"]} if "temperature" in REGIMES[regime] else {})}


def registered(regime: str) -> None:
    """Refuse a regime whose budget is not set yet (the frontier's waits for its registration)."""
    missing = [k for k in ("budget", "tokens", "eval_tokens") if k in REGIMES[regime] and REGIMES[regime][k] is None]
    if missing:
        raise ValueError(f"the {regime} regime's {', '.join(missing)} are set when its comparison is registered "
                         "(bench/PREREGISTRATION.md, issue #59): register them before any run")


def training_budget(budget: int, cost: dict) -> int:
    """`run.max_rollouts` for an arm: the regime's total minus what its profile already spent, so
    every arm stops at the same charged total (a run ends at the first step at or past it)."""
    if cost["rollouts"] >= budget:
        raise ValueError(f"the profile's {cost['rollouts']} rollouts use up the budget of {budget}")
    return budget - cost["rollouts"]


def profile_cost(profile: pl.DataFrame) -> dict:
    """What an offline profile spent: its samples and their generated tokens (mean completion length
    times samples, per problem)."""
    k = profile["k"].fill_null(0).cast(pl.Float64)
    tokens = (profile["mean_completion_tokens"].fill_null(0.0) * k).sum()
    return {"rollouts": int(k.sum()), "tokens": int(round(float(tokens)))}


def choose_default(seeds: list[dict], tie_in_se: float = 2.0) -> dict:
    """The default sampler from validation runs (Amendment 2): the best arm by mean final accuracy;
    every arm whose paired difference from it (per seed over problems, then SE over seeds) is
    within `tie_in_se` SE ties with it; among the tied, the fewest charged generated tokens at
    the budget (mean over seeds) wins: at equal accuracy the cheaper run."""
    arms = list(seeds[0]["arms"])
    final = {a: float(np.mean([s["arms"][a]["evals"][-1]["heldout_accuracy"] for s in seeds])) for a in arms}
    tokens = {a: float(np.mean([s["arms"][a]["evals"][-1]["total_tokens"] for s in seeds])) for a in arms}
    best = max(arms, key=lambda a: final[a])
    behind = {}
    for a in arms:
        if a == best:
            continue
        d = over_seeds([paired_difference(s["arms"][best]["per_problem_final"], s["arms"][a]["per_problem_final"])["mean"]
                        for s in seeds])
        behind[a] = {"mean": d["mean"], "se": d["se"], "in_se": d["mean"] / d["se"] if d["se"] > 0 else float("inf")}
    tied = [best, *(a for a, d in behind.items() if d["in_se"] < tie_in_se)]
    chosen = min(tied, key=lambda a: tokens[a])
    return {"best": best, "final_accuracy": final, "tokens": tokens, "best_minus": behind, "tied_with_best": tied,
            "chosen": chosen, "profiles": bool(ARMS[chosen]["profile"]),
            "rule": f"best mean final accuracy; arms within {tie_in_se:g} paired SE of it tie; the tied arm with the "
                    "fewest charged tokens wins"}


def preregistered_arms(readme: Path) -> set[str]:
    """The arm names the pre-registration entry and its curriculum amendments list (bold `- **NAME**`
    lines), in bench/PREREGISTRATION.md (or bench/README.md, its regenerated copy)."""
    text = readme.read_text()
    head = "## Pre-registration: curriculum benchmark"
    if head not in text:
        raise ValueError(f"{readme} holds no '{head}' entry: register the benchmark before running it")
    entries = [text.split(head, 1)[1].split("\n## ", 1)[0],  # the registration, then its dated amendments
               *(part.split("\n## ", 1)[0] for part in text.split("\n## Amendment ")[1:]
                 if part.split("\n", 1)[0].split(":", 1)[-1].strip().startswith("curriculum benchmark"))]
    return {line.split("**")[1] for section in entries for line in section.splitlines()
            if line.startswith("- **") and "**" in line[4:] and line.split("**")[1] in ARMS}


# ---- the runs: orchestration (engines at the edge; the arithmetic above is what the tests pin) ----

RUNS = "curriculum-runs"  # under the results folder: one JSON per finished arm run (committed; runs/ is per machine)
LR_FILE = "curriculum_lr.json"  # under the results folder: the learning rate chosen on validation


def base_args(policy: Path, heldout: Path, pool: Path, lr: float, regime: str = "multi") -> list[str]:
    """What every run of the benchmark shares besides TRAINING: model, data, lr and evaluation. A
    regime bounded in tokens evaluates at k = EVAL_K_ENDS every `eval_tokens` charged tokens (paired at
    fixed token budgets); the others at k = EVAL_K every EVAL_EVERY rollouts, k = EVAL_K_ENDS at the ends."""
    every = ([f"run.eval_every_tokens={REGIMES[regime]['eval_tokens']}", "run.eval_every_rollouts=0",
              f"run.eval_k={EVAL_K_ENDS}"] if REGIMES[regime].get("tokens")
             else [f"run.eval_every_rollouts={EVAL_EVERY}", f"run.eval_k={EVAL_K}"])
    return [f"model={policy}", f"data.heldout={heldout}", f"data.train={pool}", f"optim.lr={lr}",
            "optim.minibatches=1", "run.steps=100000", "run.eval_every=0", *every,
            f"run.eval_k_ends={EVAL_K_ENDS}", "run.save_every=0", "run.progress=false"]


def budget_args(regime: str, cost: dict) -> list[str]:
    """An arm's stop: the regime's rollouts less its profile's, or (a regime bounded in tokens) its
    charged-token budget with the profile's tokens charged from the start."""
    if REGIMES[regime].get("tokens"):
        return ["run.max_rollouts=0", f"run.token_budget={REGIMES[regime]['tokens']}", f"run.charged_tokens={cost['tokens']}"]
    return [f"run.max_rollouts={training_budget(REGIMES[regime]['budget'], cost)}"]


FRONTIER_WARM_START = "frontier-warm-start"  # under the results folder: the frontier calibration's warm start


def _setup(workdir: Path, regime: str, condition: str, results: Path) -> dict:
    """The warm start (the one stored in results, shared with gsweep), the world and the regime's pool."""
    from bench.gsweep_bench import sweep_warm_start
    from grpo_data.tables import io
    from pipelines.stages import write_world

    if regime not in REGIMES or condition not in CONDITIONS:
        raise ValueError(f"regime {regime!r} / condition {condition!r}: choose from {sorted(REGIMES)} / {CONDITIONS}")
    if REGIMES[regime].get("world") == "frontier":  # its own world and stored warm start (issue #59)
        from bench.common import stored_warm_start

        policy = stored_warm_start(results, FRONTIER_WARM_START)
        paths = write_world("runs/frontier-world", preset="frontier")
    else:
        policy = sweep_warm_start(results)
        paths = write_world("runs/world")
    pool = workdir / f"pool-{regime}-{condition}.parquet"
    train = pl.read_parquet(paths["train"])
    table = pool_table(train, REGIMES[regime]["pool"] or train.height, condition == "level")
    if not pool.exists() or not pl.read_parquet(pool).equals(table):
        io.write_parquet(pool, table)
    return {"policy": policy, "paths": paths, "pool": pool, "pool_size": table.height}


def _profile(setup: dict, workdir: Path, seed: int, regime: str, arm: str = "A") -> tuple[str, dict, float]:
    """An arm's offline profile of the pool (A's, or SG's fixed-k one), its own draw per seed: (path,
    cost, wall seconds)."""
    import time

    from grpo_data.tables.profile_table import read_profile
    from pipelines import pipeline

    settings = profile_settings(regime, arm)
    tag = "" if settings == profile_settings(regime) else f"-{arm}"  # an arm's own profile settings: its own file
    out = workdir / f"profile-{setup['pool'].stem}{tag}-seed{seed}.parquet"
    start = time.monotonic()
    pipeline.profile_stage(str(setup["policy"]), setup["pool"], settings, out, seed=seed)
    return str(out), profile_cost(read_profile(out)[0]), time.monotonic() - start


def _prior_profile(setup: dict, workdir: Path, regime: str) -> str:
    """Arm Aw's prior: the other warm start's fixed k = 16 profile of the pool at the regime's
    temperature (`bench.prior_bench.other_profile`), the same for every seed; charged 0."""
    from bench.prior_bench import other_profile

    out = workdir / f"prior-profile-{setup['pool'].stem}.parquet"
    return str(other_profile(setup["pool"], out, REGIMES[regime].get("temperature", 1.0), PROFILE["max_tokens"]))


def _per_problem(run_dir: Path, step: int, k: int) -> dict[str, float]:
    """id -> pass rate at the evaluation of `step` (its parquet), checked to be the k asked."""
    table = pl.read_parquet(run_dir / "evals" / f"step-{step:06d}.parquet")
    if int(table["k"].max()) != k:
        raise ValueError(f"{run_dir}: the evaluation at step {step} sampled k = {int(table['k'].max())}, not {k}")
    return dict(zip(table["id"].to_list(), (table["n_correct"] / table["k"]).to_list(), strict=True))


def run_arm(arm: str, seed: int, setup: dict, base: list[str], workdir: Path, results_dir: Path, regime: str,
            eval_first: bool, lr: float) -> dict:
    """One arm, one seed: profile (A), train to the charged budget, summarize; stored as JSON under
    results_dir (committed: runs/ does not outlive a machine). A stored result made with the same
    overrides and base is reused whatever library code made it (its code hash is in it)."""
    import json

    from bench.common import cached_train_run, machine, same_as_stored
    from grpo_data.tables import io

    stored = results_dir / f"seed{seed}" / f"{arm}.json"
    if stored.exists():
        found = json.loads(stored.read_text())
        ours = arm_overrides(arm, regime)
        if same_as_stored(found.get("base"), _portable(base, setup)) and found["overrides"][:len(ours)] == ours:
            print(f"{stored}: reusing the stored run", flush=True)
            run_dir = workdir / f"{results_dir.name}/seed{seed}/{arm}"
            if "coverage" not in found and (run_dir / "metrics.jsonl").exists():  # stored before coverage was kept
                from grpo_train.metrics import read_metrics

                found["coverage"] = coverage([r for r in read_metrics(run_dir) if r["kind"] == "train"])
                io.write_json(stored, found)
            return found
        raise ValueError(f"{stored} was made with other settings: move it away to rerun this arm and seed")
    registered(regime)
    cost, profile, profile_s = {"rollouts": 0, "tokens": 0}, "null", 0.0
    if ARMS[arm]["profile"]:
        profile, cost, profile_s = _profile(setup, workdir, seed, regime, arm)
    prior = _prior_profile(setup, workdir, regime) if ARMS[arm].get("prior_profile") else None
    args = [*arm_overrides(arm, regime), f"run.seed={seed}", f"data.profile={profile}",
            *([f"data.prior_profile={prior}"] if prior else []),
            *budget_args(regime, cost), f"run.eval_first={'true' if eval_first else 'false'}"]
    heldout = next(a.split("=", 1)[1] for a in base if a.startswith("data.heldout="))
    inputs = [str(setup["policy"]), str(setup["pool"]), heldout, *([profile] if profile != "null" else []),
              *([prior] if prior else [])]
    name = f"{results_dir.name}/seed{seed}/{arm}"
    stop = ({"tokens": REGIMES[regime]["tokens"], "charged": cost["tokens"]} if REGIMES[regime].get("tokens")
            else training_budget(REGIMES[regime]["budget"], cost))
    records, seconds = cached_train_run(name, args, base, workdir, inputs, stop)
    saved = json.loads((workdir / name / "bench-key.json").read_text())
    key = saved["key"]
    result = arm_result(records, cost, setup["pool_size"], seconds)
    evals = [r for r in records if r["kind"] == "eval"]
    from grpo_data.profile_metadata import weights_hash

    result.update({"arm": arm, "seed": seed, "lr": lr, "code": key["code"], "inputs": key["inputs"],
                   "warm_start": weights_hash(str(setup["policy"])),
                   "overrides": args, "base": _portable(base, setup), "profile_seconds": profile_s, "machine": machine(),
                   "per_problem_final": _per_problem(workdir / name, evals[-1]["step"], EVAL_K_ENDS),
                   # what the run did (issue #59): when, by which checkout, step by step, every draw, every evaluation
                   "started": saved.get("started"), "finished": saved.get("finished"), "git": saved.get("git"),
                   "trace": run_trace.step_trace(records),
                   "draws_file": run_trace.store_draws(workdir / name, stored.with_suffix(".draws.parquet")),
                   "per_problem_evals": run_trace.per_problem_evals(workdir / name, records)})
    if eval_first:
        result["per_problem_start"] = _per_problem(workdir / name, 0, EVAL_K_ENDS)
    io.write_json(stored, result)
    return result


def _portable(base: list[str], setup: dict) -> list[str]:
    """`base` as stored: the warm start's path is per machine, its weights hash is in `inputs`."""
    return [a.replace(str(setup["policy"]), "<warm start>") for a in base]


def chosen_lr(results: Path, regime: str = "multi") -> float:
    """The learning rate chosen on validation (its file), never one picked here: `grpo bench curriculum_lr`'s
    for the embedded world's regimes, `grpo bench frontier_lr`'s (a bounded grid) for the frontier's."""
    import json

    if REGIMES[regime].get("world") == "frontier":
        path = Path(results) / "frontier_lr.json"
        if not path.exists():
            raise FileNotFoundError(f"{path} is missing: run `grpo bench frontier_lr` first")
        sel = json.loads(path.read_text())
        if not sel.get("bounded") or sel.get("chosen") is None:
            raise ValueError(f"{path}: the grid's choice is not bounded by tested neighbours; extend it first")
        return float(sel["chosen"])
    path = Path(results) / LR_FILE
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing: run `grpo bench curriculum_lr` first (the lr every arm "
                                "shares is chosen on the validation split, for arm B)")
    sel = json.loads(path.read_text())
    if sel["candidates"] != list(LR_CANDIDATES) or sel["training"] != list(TRAINING):
        raise ValueError(f"{path} was chosen among other candidates or training settings; rerun `grpo bench curriculum_lr`")
    return float(sel["chosen"])


def select_lr(workdir: str = "runs/bench-curriculum-lr", results: Path | None = None, seed: int = 0) -> dict:
    """Arm B in the multi / nolevel regime at each LR_CANDIDATES value, scored on the validation split
    (k = EVAL_K_ENDS at the end): the one with the best final accuracy is every arm's lr."""
    from bench.common import RESULTS, cached_train_run

    results = Path(results or RESULTS)
    workdir = Path(workdir)
    setup = _setup(workdir, "multi", "nolevel", results)
    budget = REGIMES["multi"]["budget"]
    runs = {}
    for lr in LR_CANDIDATES:
        base = base_args(setup["policy"], setup["paths"]["val"], setup["pool"], lr)
        args = [*arm_overrides("B"), f"run.seed={seed}", "data.profile=null", f"run.max_rollouts={budget}",
                "run.eval_first=false"]
        records, seconds = cached_train_run(f"B-lr{lr:g}", args, base, workdir,
                                            [str(setup["policy"]), str(setup["pool"]), str(setup["paths"]["val"])],
                                            budget)
        last = [r for r in records if r["kind"] == "eval"][-1]
        runs[f"{lr:g}"] = {"final_val_accuracy": last["heldout_accuracy"], "final_val_se": last["heldout_accuracy_se"],
                           "eval_k": last.get("eval_k"), "seconds": seconds,
                           "evals": [{k: r.get(k) for k in ("step", "eval_k", "heldout_accuracy", "rollouts_generated")}
                                     for r in records if r["kind"] == "eval"]}
    best = max(runs, key=lambda k: runs[k]["final_val_accuracy"])
    result = {"split": "val", "arm": "B", "regime": "multi", "condition": "nolevel", "seed": seed,
              "candidates": list(LR_CANDIDATES), "training": list(TRAINING), "runs": runs, "chosen": float(best)}
    from grpo_data.tables import io

    io.write_json(results / LR_FILE, result)
    return result


def folder_name(regime: str, condition: str, split: str = "test") -> str:
    """Where one regime / condition / split's runs are stored under results/RUNS (and its result file)."""
    if split not in ("test", "val"):
        raise ValueError(f"split {split!r}: test (the headline) or val (the default's choice)")
    return f"{regime}-{condition}" + ("-val" if split == "val" else "")


def run(regime: str = "multi", condition: str = "nolevel", seeds: tuple[int, ...] = SEEDS,
        arms: tuple[str, ...] | None = None, workdir: str = "runs/bench-curriculum",
        results: Path | None = None, split: str = "test", accept_code: dict[str, str] | None = None) -> dict:
    """Every (seed, arm) of one regime and condition not stored yet, seeds outermost (a stopped
    benchmark leaves whole seeds); then the result from everything stored (`assemble`). split=val:
    the same protocol scored on the validation split, which picks the default sampler."""
    from bench.common import RESULTS

    results = Path(results or RESULTS)
    arms = arms or arms_for(regime)
    unknown = sorted(set(arms) - set(ARMS))
    if unknown:
        raise ValueError(f"unknown arms {unknown}: choose from {sorted(ARMS)}")
    registered(regime)
    lr = chosen_lr(results, regime)  # before anything is built
    workdir = Path(workdir)
    setup = _setup(workdir, regime, condition, results)
    base = base_args(setup["policy"], setup["paths"][split], setup["pool"], lr, regime)
    name = folder_name(regime, condition, split)
    folder = results / RUNS / name
    for seed in seeds:
        for i, arm in enumerate(arms):
            # the start is the same policy for every arm and seed: evaluated once, by the first run
            first = seed == seeds[0] and i == 0 and not (folder / "start.json").exists()
            res = run_arm(arm, seed, setup, base, workdir, folder, regime, first, lr)
            if first:
                from grpo_data.tables import io

                io.write_json(folder / "start.json", {"eval": res["evals"][0], "per_problem": res["per_problem_start"]})
            print(f"curriculum {name} seed {seed} {arm}: final {res['evals'][-1]['heldout_accuracy']:.3f} "
                  f"({res['seconds']:.0f}s)", flush=True)
    return assemble(results, regime, condition, plot_to=results / f"curriculum-{name}.png", split=split,
                    accept_code=accept_code)


def assemble(results: Path, regime: str = "multi", condition: str = "nolevel", plot_to: Path | None = None,
             split: str = "test", accept_code: dict[str, str] | None = None) -> dict:
    """The result from the stored runs of one regime and condition: per seed the arms it holds;
    the comparison over the seeds that hold every arm B and the candidate default hold. Runs made by
    different library code are refused unless each other hash is in `accept_code` with its reason
    (`run_trace.one_code`): rerun them instead."""
    import json

    folder = Path(results) / RUNS / folder_name(regime, condition, split)
    seeds = []
    for d in sorted(folder.glob("seed*")):
        arms = {p.stem: json.loads(p.read_text()) for p in sorted(d.glob("*.json"))}
        seeds.append({"seed": int(d.name.removeprefix("seed")), "arms": arms})
    if not seeds:
        raise FileNotFoundError(f"no stored runs in {folder}: run `grpo bench curriculum` first")
    from bench.common import library_code

    code = run_trace.one_code({f"seed{s['seed']}/{a}": r for s in seeds for a, r in s["arms"].items()}, accept_code,
                              current=library_code())
    start = json.loads((folder / "start.json").read_text()) if (folder / "start.json").exists() else None
    arms = set.union(*(set(s["arms"]) for s in seeds))
    complete = [s for s in seeds if set(s["arms"]) == arms]  # a stopped seed is left out, not its arms
    out = {"regime": regime, "condition": condition, "split": split, **REGIMES[regime], "seeds": [s["seed"] for s in seeds],
           "complete_seeds": [s["seed"] for s in complete], "arms": sorted(arms),
           "start": start["eval"] if start else None, "code": code,
           "per_arm": {str(s["seed"]): {a: {k: r[k] for k in r if k not in ("per_problem_final", "per_problem_start",
                                                                         "machine", "inputs", "draws", "trace",
                                                                         "per_problem_evals")}
                                   for a, r in s["arms"].items()} for s in seeds}}
    # the machines the runs were made on, per arm (a cell's file is assembled on one, its runs may not be)
    out["run_machines"] = {a: sorted({s["arms"][a].get("machine", {}).get("cpu_model", "unknown") for s in seeds
                                      if a in s["arms"]}) for a in sorted(arms)}
    if "B" in arms and len(complete) >= 2:
        out["compare"] = {d: compare(complete, default=d, eval_k=EVAL_K_ENDS) for d in sorted(arms) if d != "B"}
    if {"A", "A0"} <= arms and len(complete) >= 2:
        out["profile_pays"] = profile_pays(complete, out["pool"])
    if split == "val" and len(complete) >= 2:
        out["default"] = choose_default(complete)
    if len(complete) < len(SEEDS) or arms != set(arms_for(regime)):
        out["variant"] = (f"partial: complete seeds {out['complete_seeds']} of {out['seeds']}, arms {sorted(arms)}; "
                          f"the registration asks seeds {list(SEEDS)} and arms {list(arms_for(regime))}")
    if plot_to is not None:
        from bench.curriculum_plot import plot

        out["plot"] = str(plot(out, plot_to))
    return out
