"""Headline benchmark (`grpo bench e2e`): the curriculum against uniform sampling, every rollout counted.

On the embedded world (chains of written steps, grpo_data/tables/world.py), from the same warm-started
policy, with the same G, batch size, learning rate and total budget, real GRPO training (vLLM
rollouts, DeepSpeed updates), four arms:
- A:  offline profile + band scheduler + dynamic resampling;
- A0: band scheduler with no offline profile (online estimates only, from per-level priors
      learned as outcomes come in) + dynamic resampling;
- B:  uniform sampling + DAPO dynamic sampling (drop all-equal groups, resample);
- C:  offline filter + uniform + DAPO: problems the profile found all-right or all-wrong are dropped
      before training, as public RL datasets are filtered.

Counted in full: an arm's total rollouts are its training rollouts (kept and dropped groups), its
refresh rollouts and, for A and C, every sample of the offline profile. Arms stop at the same
total, so A and C train on fewer rollouts than B and A0. The profile cost amortized over N runs that
share one profile (a sweep) is reported beside it.

Reported on the test split (never used to choose anything), per seed and as mean +- SE over seeds:
test accuracy against total rollouts; the total rollouts each arm needs to reach B's final test
accuracy; the informative-rollout ratio; and frontier movement: the share of test problems at
pass rate <= 0.1 at the start (0 of eval_k) that end at >= 0.5.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from bench.e2e_stats import aggregate, charged, offline_filter, per_problem, seed_summary

ARMS: dict[str, dict] = {  # band: the arm takes the band setting chosen on validation
    "A": {"overrides": ["scheduler.name=band"], "profile": True, "filter": False, "band": True},
    "A0": {"overrides": ["scheduler.name=band"], "profile": False, "filter": False, "band": True},
    "B": {"overrides": ["scheduler.name=uniform"], "profile": False, "filter": False, "band": False},
    "C": {"overrides": ["scheduler.name=uniform"], "profile": True, "filter": True, "band": False},
}
# how every arm (and the validation selection) samples and steps: only the scheduler and data differ.
# lr: chosen on validation by `grpo bench demo_lr` (3e-5 over 1e-4 on every demo seed, seed 0's warm
# start, the one used here, included); results/e2e.json was measured at 1e-4, before that choice
TRAINING = ("rollout.group_size=8", "rollout.batch_groups=16", "rollout.max_rounds=4", "rollout.dynamic_resampling=true",
            "rollout.max_tokens=128", "optim.lr=3e-5")
EVAL_EVERY = 2_000  # test evaluations every this many training rollouts (and at the start and the end)
BUDGET = 7_000  # total rollouts per arm, profile included (the validation selection spends the same)
# the band arms' candidate settings, scored on the validation split by `grpo bench e2e_select`
CANDIDATES = {"band_0.2_0.95": ["scheduler.lo=0.2", "scheduler.hi=0.95"],
              "band_0.2_0.8": ["scheduler.lo=0.2", "scheduler.hi=0.8"]}
# the demo's profile (pipelines/arith_demo.yaml): a 2-sample screen, more only toward a decision on a
# band that holds both candidate training bands (the selection and the headline share this one profile)
PROFILE = {"adaptive": True, "screen_k": 2, "step_k": 2, "max_k": 4, "max_tokens": 128, "chunk_size": 512,
           "band": "0.2,0.95"}


def arm_args(spec: dict, seed: int, first: bool, train, filtered, profile, budget: int,
             profile_samples: int, setting: list[str] | tuple = ()) -> tuple[list[str], int]:
    """One arm's config overrides and the profile samples charged to it: an arm that uses the
    profile (its prior, or its filter) pays for all of it out of the same total budget. The band
    arms also take the band `setting` chosen on validation."""
    charge = profile_samples if spec["profile"] else 0
    args = [*(setting if spec["band"] else ()), *spec["overrides"], f"run.seed={seed}", f"run.eval_first={'true' if first else 'false'}",
            f"data.train={filtered if spec['filter'] else train}",
            f"data.profile={profile if spec['profile'] and not spec['filter'] else 'null'}",
            f"run.max_rollouts={budget - charge}"]
    return args, charge


def run_arm(name: str, args: list[str], base: list[str], out: Path, inputs: list[str], budget: int,
            profile_samples: int) -> dict:
    """One arm's training run summarized, its evaluations charged with the profile it used."""
    import json

    from bench.common import cached_train_run

    records, seconds = cached_train_run(name, args, base, out, inputs, budget)
    code = json.loads((out / name / "bench-key.json").read_text())["key"]["code"]
    evals = charged([r for r in records if r["kind"] == "eval"], profile_samples)
    trains = [r for r in records if r["kind"] == "train"]
    last = trains[-1]
    return {"evals": [{k: r[k] for k in ("step", "rollouts_generated", "total_rollouts", "heldout_accuracy",
                                         "heldout_accuracy_se")} for r in evals],
            "profile_samples": profile_samples, "informative_rollout_ratio": last["informative_rollout_ratio"],
            "steps": last["step"], "rollouts_generated": last["rollouts_generated"], "seconds": seconds, "code": code,
            "distinct_problems_trained": last["distinct_problems_trained"],
            "final_by_level": {k.removeprefix("heldout_accuracy_level_"): v for k, v in evals[-1].items()
                               if k.startswith("heldout_accuracy_level_")}}


def plot(result: dict, path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    colors = {"A": "#4C72B0", "A0": "#55A868", "B": "#DD8452", "C": "#8172B2"}
    fig, ax = plt.subplots(figsize=(7, 4.2), dpi=120)
    for i, seed_res in enumerate(result["seeds"]):
        for arm, a in seed_res["arms"].items():
            ax.plot([e["total_rollouts"] for e in a["evals"]], [e["heldout_accuracy"] for e in a["evals"]],
                    color=colors.get(arm, "gray"), marker="o", ms=3, alpha=0.75, label=arm if i == 0 else None)
    ax.set_xlabel("total rollouts (training + refresh + offline profile)")
    ax.set_ylabel("test accuracy (mean@k)")
    ax.set_title("e2e: each line one seed; profile samples charged to A and C")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


PROFILE_OUT = Path("runs/world-profile.parquet")


def profile_files(profile: Path) -> list[Path]:
    """A profile's table, its metadata and the inputs it was made from (`profile_stage`'s files)."""
    return [profile, profile.with_suffix(".json"), profile.with_suffix(".inputs.json")]


def shared_profile(policy: Path, train: Path, results: Path, out: Path = PROFILE_OUT) -> Path:
    """The offline profile e2e and e2e_select share: the one stored in results/e2e-profile when it
    was made from these inputs (warm start, pool, settings), else a fresh one, stored there when
    none is. Why stored: vLLM's CPU kernels differ by CPU, so on another machine the same warm
    start profiles to other samples, and a headline spread over sessions needs one profile."""
    import json
    import shutil

    from pipelines import pipeline

    stored = results / "e2e-profile" / out.name
    out.parent.mkdir(parents=True, exist_ok=True)
    if stored.exists():
        if json.loads(stored.with_suffix(".inputs.json").read_text()) == pipeline.profile_key(str(policy), train, PROFILE):
            for src, dst in zip(profile_files(stored), profile_files(out), strict=True):
                shutil.copyfile(src, dst)
        else:  # a local profile of these inputs (or its resumable parts) is kept and used
            print(f"{stored} was made from other inputs: profiling {out} afresh (the stored one is kept)", flush=True)
    pipeline.profile_stage(str(policy), train, PROFILE, out)
    if not stored.exists():
        stored.parent.mkdir(parents=True, exist_ok=True)
        for src, dst in zip(profile_files(out), profile_files(stored), strict=True):
            shutil.copyfile(src, dst)
    return out


def chosen_on_validation(path: Path, budget: int) -> tuple[str, list[str]]:
    """The band arms' setting chosen by `grpo bench e2e_select` (its result file); the headline never
    picks a setting on its own test split, nor runs without the selection."""
    import json

    if not path.exists():
        raise FileNotFoundError(f"{path} is missing: run `grpo bench e2e_select` first (the headline's band "
                                "setting is chosen on the validation split)")
    sel = json.loads(path.read_text())
    if (sel["budget_total_rollouts"] != budget or sel["candidates"] != CANDIDATES or sel["split"] != "val"
            or sel.get("training") != list(TRAINING)):
        raise ValueError(f"{path} was selected with another budget, candidate list, split or training settings "
                         f"({sel['budget_total_rollouts']}, {sorted(sel['candidates'])}, {sel['split']}, "
                         f"{sel.get('training')}); rerun `grpo bench e2e_select`{' --quick' if budget != BUDGET else ''}")
    return sel["chosen"], CANDIDATES[sel["chosen"]]


def selected_on_same_inputs(path: Path, inputs: dict[str, str]) -> None:
    """Raise unless the band was chosen from the same warm start, pool and profile as the headline
    uses (a setting chosen for another starting policy is not a choice made on validation); checks
    the keys `inputs` holds, so the policy and pool can be checked before the profile is made."""
    import json

    sel = json.loads(path.read_text()).get("inputs", {})
    differ = [k for k in ("policy", "train", "profile") if k in inputs and sel.get(k) != inputs[k]]
    if differ:
        raise ValueError(f"{path} was selected with other inputs ({', '.join(differ)}: "
                         f"{[sel.get(k) for k in differ]} here {[inputs[k] for k in differ]}); "
                         "rerun `grpo bench e2e_select` on this warm start first")


# what every seed of one headline must share to be pooled: seeds may run in separate invocations
# (sessions, commits), each stored on its own in RESULTS/e2e-seeds/seedN.json. `arms` and `base` are
# the arm definitions and every other override the runs take; the library's code is recorded per
# arm, not required equal (a seed run after an unrelated library change still pools, and says so)
SHARED = ("budget_total_rollouts", "profile_samples", "eval_k", "band_setting", "training", "pool",
          "pool_after_offline_filter", "inputs", "arms", "base")


def seed_dir(results: Path, budget: int = BUDGET) -> Path:
    """Where finished seeds are stored: one folder per budget, so a --quick run never meets a full one."""
    return Path(results) / ("e2e-seeds" if budget == BUDGET else f"e2e-seeds-{budget}")


def seed_path(results: Path, seed: int, budget: int = BUDGET) -> Path:
    return seed_dir(results, budget) / f"seed{seed}.json"


def _stored(folder: Path) -> dict[int, tuple[Path, dict]]:
    """seed -> (path, content) of every seed stored in folder."""
    import json

    return {int(p.stem.removeprefix("seed")): (p, json.loads(p.read_text()))
            for p in sorted(folder.glob("seed*.json"))}


def _differ(a: dict, b: dict) -> list[str]:
    from bench.common import differing_keys

    return differing_keys(a, b, SHARED)


def check_stored(results: Path, shared: dict) -> dict[int, dict]:
    """Every seed already stored for this budget, checked against the settings and inputs about to
    be run (before anything trains): seed -> its result. One made with others is an error that names
    it; nothing stored is ever overwritten."""
    stored = _stored(seed_dir(results, shared["budget_total_rollouts"]))
    bad = {str(path): d for path, content in stored.values() if (d := _differ(content, shared))}
    if bad:
        raise ValueError(f"stored seeds made with other settings or inputs: {bad}; move them away (or delete them) "
                         "to rerun those seeds with the current ones")
    return {seed: content["seed_result"] for seed, (_, content) in stored.items()}


def stored_seed(results: Path, seed: int, shared: dict) -> dict | None:
    """The seed's stored result when it was made with these shared settings and inputs; None when
    there is none (run it); an error when one made with others is there."""
    return check_stored(results, shared).get(seed)


def assemble(results: Path, plot_to: Path | None = None, budget: int = BUDGET,
             seeds: tuple[int, ...] | None = None) -> dict:
    """The headline from the seeds stored in seed_dir(results, budget) (all, or `seeds`): they must
    share SHARED (same budget, selection, training and arm settings, identical policy, data and
    profile), else an error names the file. Each seed keeps its arms' library code hashes and the
    machine and time it finished; under 3 seeds or another budget than BUDGET is partial."""
    folder = seed_dir(results, budget)
    stored = _stored(folder)
    if seeds is not None:
        missing = sorted(set(seeds) - set(stored))
        if missing:
            raise FileNotFoundError(f"no stored seed {missing} in {folder}: run `grpo bench e2e --seeds ...` first")
        stored = {seed: stored[seed] for seed in seeds}
    if not stored:
        raise FileNotFoundError(f"no stored seeds in {folder}: run `grpo bench e2e` first")
    first_path, first = next(iter(stored.values()))
    for path, content in stored.values():
        differ = _differ(content, first)
        if differ:
            raise ValueError(f"{path} differs from {first_path} in {differ}: its seed was run with other settings or "
                             "inputs; delete it and rerun that seed (`grpo bench e2e --seeds N`)")
    result = {**{k: first.get(k) for k in SHARED}, "seeds": [c["seed_result"] for _, c in stored.values()],
              "run_code": {f"seed{seed}": {a: r.get("code") for a, r in c["seed_result"]["arms"].items()}
                           for seed, (_, c) in stored.items()},
              "seed_provenance": {f"seed{seed}": {"finished": c.get("finished"), "machine": c.get("machine")}
                                  for seed, (_, c) in stored.items()}}
    codes = {code for per in result["run_code"].values() for code in per.values()}
    if len(codes) > 1:
        result["code_note"] = (f"runs made by {len(codes)} versions of the library code (run_code); a stored seed is "
                               "reused whatever code made it")
    if len(stored) < 3 or budget != BUDGET:
        result["variant"] = (f"partial: seeds {sorted(stored)}" + (f", budget {budget}" if budget != BUDGET else "")
                             + "; the issue asks >= 3 seeds at the full budget")
    result["summary"] = aggregate(result["seeds"])
    if plot_to is not None:
        result["plot"] = str(plot(result, plot_to))
    return result


def run(quick: bool = False, seeds: tuple[int, ...] = (0, 1, 2), workdir: str = "runs/bench-e2e",
        budget: int | None = None, results: Path | None = None) -> dict:
    """The headline; `results`: the folder holding e2e_select.json (default bench/results), where
    each finished seed is stored (results/e2e-seeds) and reused by later invocations with the same
    shared settings and inputs. Returns every stored seed assembled, not only `seeds`."""

    from bench.common import RESULTS, input_hashes, machine, now
    from grpo_data.tables import io
    from grpo_data.tables.profile_table import read_profile
    from pipelines.stages import warm_policy, write_world

    budget = budget or (5_000 if quick else BUDGET)
    results = Path(results or RESULTS)
    # before anything is built: a missing or mismatched selection stops here, not after the profile
    chosen, setting = chosen_on_validation(results / "e2e_select.json", budget)
    out = Path(workdir)
    policy = warm_policy()
    paths = write_world("runs/world")
    # the band was chosen for this warm start and pool: checked before the profile is paid for
    selected_on_same_inputs(results / "e2e_select.json", dict(zip(
        ("policy", "train"), input_hashes([str(policy), str(paths["train"])]).values(), strict=True)))
    profile = shared_profile(policy, paths["train"], results)
    prof, _ = read_profile(profile)
    profile_samples = int(prof["k"].sum())
    if budget <= profile_samples:
        raise ValueError(f"budget {budget} does not cover the offline profile's {profile_samples} samples")
    filtered = out / "train-filtered.parquet"
    io.write_parquet(filtered, offline_filter(pl.read_parquet(paths["train"]), prof))
    inputs = [str(policy), str(paths["train"]), str(paths["test"]), str(profile), str(filtered)]
    eval_k = 4
    base = [f"model={policy}", f"data.heldout={paths['test']}", *TRAINING, "optim.minibatches=1", "run.steps=100000", "run.eval_every=0", f"run.eval_every_rollouts={EVAL_EVERY}",
            f"run.eval_k={eval_k}",
            "run.save_every=0", "run.progress=false"]
    # inputs by content, not by path: the same world, warm start and profile give the same hashes
    shared = {"budget_total_rollouts": budget, "profile_samples": profile_samples, "eval_k": eval_k,
              "band_setting": {"chosen_on_validation": chosen, "overrides": setting}, "training": list(TRAINING),
              "pool": prof.height, "pool_after_offline_filter": pl.read_parquet(filtered).height,
              "inputs": dict(zip(("policy", "train", "test", "profile", "train_filtered"),
                                 input_hashes(inputs).values(), strict=True)),
              "arms": ARMS, "base": base}
    selected_on_same_inputs(results / "e2e_select.json", shared["inputs"])
    stored = check_stored(results, shared)  # a mismatch stops here, before any training
    for seed in seeds:  # seeds outermost: a stopped benchmark still has whole seeds
        if seed in stored:
            print(f"{seed_path(results, seed, budget)}: reusing the stored seed", flush=True)
            continue
        arms, finals, start = {}, {}, None
        for name, spec in ARMS.items():
            args, charge = arm_args(spec, seed, start is None, paths["train"], filtered, profile, budget, profile_samples,
                                    setting)
            arms[name] = run_arm(name, args, base, out / f"seed{seed}", inputs, budget - charge, charge)
            evals_dir = out / f"seed{seed}" / name / "evals"
            if start is None:  # every arm starts from the same policy: one start evaluation per seed
                start = pl.read_parquet(evals_dir / "step-000000.parquet")
                initial = arms[name]["evals"][0]
            elif arms[name]["evals"][0]["step"] != 0:
                arms[name]["evals"].insert(0, {**initial, "total_rollouts": charge, "rollouts_generated": 0})
            finals[name] = pl.read_parquet(evals_dir / f"step-{arms[name]['evals'][-1]['step']:06d}.parquet")
        seed_res = {"seed": seed, "initial_accuracy": initial["heldout_accuracy"], "arms": arms}
        seed_res["summary"] = seed_summary(arms, start, finals)
        seed_res["per_problem_final"] = {a: per_problem(f) for a, f in finals.items()}
        seed_res["per_problem_start"] = per_problem(start)
        io.write_json(seed_path(results, seed, budget), {**shared, "seed_result": seed_res, "machine": machine(),
                                                 "finished": now()})
    return assemble(results, plot_to=results / "e2e.png", budget=budget)


def select_on_validation(candidates: dict[str, list[str]] | None = None, seed: int = 0, budget: int = BUDGET,
                         workdir: str = "runs/bench-e2e-select", results: Path | None = None) -> dict:
    """Arm A under each candidate setting, scored on the validation split (never the test split):
    the setting with the best final validation accuracy is the one the headline should use."""
    from bench.common import RESULTS, input_hashes
    from grpo_data.tables.profile_table import read_profile
    from pipelines.stages import warm_policy, write_world

    candidates = candidates or CANDIDATES
    policy = warm_policy()
    paths = write_world("runs/world")
    profile = shared_profile(policy, paths["train"], Path(results or RESULTS))
    profile_samples = int(read_profile(profile)[0]["k"].sum())
    base = [f"model={policy}", f"data.heldout={paths['val']}", f"data.train={paths['train']}", f"data.profile={profile}",
            "scheduler.name=band", *TRAINING, "run.steps=100000",
            "run.eval_every=100000", "run.eval_k=4", "run.save_every=0", "run.progress=false", f"run.seed={seed}",
            f"run.max_rollouts={budget - profile_samples}"]
    runs = {}
    inputs = [str(policy), str(paths["train"]), str(paths["val"]), str(profile)]
    for name, overrides in candidates.items():
        arm = run_arm(name, overrides, base, Path(workdir), inputs, budget - profile_samples, profile_samples)
        runs[name] = {"final_val_accuracy": arm["evals"][-1]["heldout_accuracy"],
                      "final_val_se": arm["evals"][-1]["heldout_accuracy_se"],
                      "informative_rollout_ratio": arm["informative_rollout_ratio"]}
    best = max(runs, key=lambda n: runs[n]["final_val_accuracy"])
    return {"split": "val", "seed": seed, "budget_total_rollouts": budget, "candidates": candidates, "runs": runs,
            "chosen": best, "training": list(TRAINING),
            "inputs": dict(zip(("policy", "train", "val", "profile"), input_hashes(inputs).values(), strict=True))}
