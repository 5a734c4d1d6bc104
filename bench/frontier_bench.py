"""Calibration of the frontier world (`grpo bench frontier`, issue #59): can this instrument see a
sampler? One pipeline run of `pipelines/frontier.yaml` (world, warm start, uniform + DAPO training,
test evaluation at k = 32 before and after), then fixed-k profiles (k = 16, the same render -> generate
-> verify path as evaluation) of the RL pool by the warm start (its pass-rate histogram: how much of the
pool is solved or hopeless, the waste a sampler could remove) and of the transfer and reference splits
by the warm start and the trained policy. Every rollout is counted.

Registered as the calibration entry of bench/PREREGISTRATION.md (2026-12-07, issue #59): settings fixed
before the run; it sizes the instrument, it compares no samplers.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl

ROOT = Path(__file__).resolve().parent.parent
PIPELINE = ROOT / "pipelines" / "frontier.yaml"
PROFILE_K = 16
# the fixed-k profile that measures pass rates (the evaluation's temperature and max_tokens)
MEASURE = {"engine": "vllm", "adaptive": False, "k": PROFILE_K, "temperature": 1.0, "max_tokens": 128, "chunk_size": 512}
SOLVED, HOPELESS = 0.9, 0.05  # the thresholds for "solved" and "hopeless" problems
GOALS = {"test_gain": ">= 0.15 and >= 10x the larger SE", "transfer_gain": ">= 0.10",
         "zero_variance_share_at_start": ">= 0.55"}


def pass_rates(profile: Path) -> pl.DataFrame:
    """id, level, k, n_correct and pass rate of a fixed-k profile."""
    from grpo_data.tables.profile_table import read_profile

    table = read_profile(profile)[0]
    return table.select("id", "n_correct", "k").with_columns((pl.col("n_correct") / pl.col("k")).alias("p"))


def histogram(rates: pl.DataFrame, problems: pl.DataFrame) -> dict:
    """The pool's pass-rate histogram (tenths), the solved / hopeless shares, and the mean per level."""
    joined = rates.join(problems.select("id", "level"), on="id")
    p = joined["p"].to_numpy()
    counts, _ = np.histogram(p, bins=np.linspace(0, 1, 11))
    by_level = joined.group_by("level").agg(pl.col("p").mean()).sort("level")
    return {"problems": int(p.size), "bins_tenths": counts.tolist(),
            "solved_share": float((p >= SOLVED).mean()), "hopeless_share": float((p <= HOPELESS).mean()),
            "solved_or_hopeless_share": float(((p >= SOLVED) | (p <= HOPELESS)).mean()),
            "mean_by_level": {str(lv): round(float(m), 4) for lv, m in by_level.iter_rows()},
            "expected_zero_variance_share_g8": float(np.mean(p ** 8 + (1 - p) ** 8))}


def paired(before: pl.DataFrame, after: pl.DataFrame) -> dict:
    """Mean pass rate before and after on the same problems, the paired difference and its SE."""
    j = before.join(after, on="id", suffix="_after")
    d = (j["p_after"] - j["p"]).to_numpy()
    return {"problems": int(d.size), "before": float(j["p"].mean()), "after": float(j["p_after"].mean()),
            "gain": float(d.mean()), "se": float(d.std(ddof=1) / np.sqrt(d.size)) if d.size > 1 else None}


def per_level_eval(run_dir: Path) -> dict:
    """Test accuracy by level at the first and last evaluation (the run's per-problem files)."""
    from grpo_train.metrics import read_metrics

    evals = [r for r in read_metrics(run_dir) if r["kind"] == "eval"]
    first, last = evals[0], evals[-1]
    out = {}
    for name, rec in (("start", first), ("end", last)):
        t = pl.read_parquet(run_dir / "evals" / f"step-{rec['step']:06d}.parquet")
        t = t.with_columns((pl.col("n_correct") / pl.col("k")).alias("p"))
        out[name] = {"step": rec["step"], "k": int(t["k"][0]), "accuracy": float(t["p"].mean()),
                     "by_level": {str(lv): round(float(m), 4) for lv, m in
                                  t.group_by("level").agg(pl.col("p").mean()).sort("level").iter_rows()}}
    return out


def informative_limit(steps: list[dict]) -> dict:
    """Uniform + DAPO's informative share of generated rollouts over the whole run, and the physical
    limit it sets: a sampler that wasted nothing would need at most 1 / share fewer generated tokens."""
    share = steps[-1]["informative_rollout_ratio"] if steps else float("nan")
    return {"informative_rollout_ratio": share, "token_saving_limit": 1 / share if share else float("nan")}


def test_curve(records: list[dict]) -> list[dict]:
    """Every test evaluation of the run: step, k, rollouts and tokens by then, accuracy and its SE."""
    return [{"step": r["step"], "k": r.get("eval_k"), "rollouts": r.get("rollouts_generated"),
             "tokens": r.get("tokens_generated"), "accuracy": r["heldout_accuracy"], "se": r.get("heldout_accuracy_se")}
            for r in records if r["kind"] == "eval"]


def training_spread(results: Path) -> dict:
    """The per-seed spread of paired differences between arms in the stored curriculum cells (sd over
    seeds of each pair's per-seed paired mean): what one seed's training noise did to a comparison."""
    import glob
    import json

    sds = []
    for path in sorted(glob.glob(str(Path(results) / "curriculum-*.json"))):
        for cmp in json.loads(Path(path).read_text()).get("compare", {}).values():
            for diff in cmp["paired_minus"].values():
                means = [p["mean"] for p in diff["per_seed"]]
                if len(means) >= 3:
                    sds.append(float(np.std(means, ddof=1)))
    return {"pairs": len(sds), "median": float(np.median(sds)), "p75": float(np.percentile(sds, 75))}


def comparison_plan(per_problem_start: dict[str, float], spread: dict, k: int = 32, seeds: int = 3) -> dict:
    """Before the comparison runs (issue #59, item 4): the SE of one paired arm difference on this test
    split at k answers per problem over `seeds` seeds, evaluation from the start's pass rates and
    training from the stored cells' spread (median and 75th percentile), and the smallest effect
    each resolves (t with seeds - 1 degrees of freedom where training leads)."""
    from bench.curriculum_stats import planned_se

    rates = np.array(list(per_problem_start.values()))
    return {"k": k, "seeds": seeds, "training_spread": spread,
            **{name: planned_se(rates, k, seeds, spread[name]) for name in ("median", "p75")}}


def plot(result: dict, levels: dict[str, int], path: Path) -> Path:
    """Two panels: the zero-variance share of generated groups per step and per pass over the pool
    (does waste change as the pool is learned), and test accuracy per level at every evaluation."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (waste, acc) = plt.subplots(1, 2, figsize=(12, 4.2), dpi=110)
    steps = result["steps"]
    waste.plot([s["rollouts_generated"] for s in steps], [s["zero_variance_fraction"] for s in steps], color="0.6",
               lw=0.8, label="per step")
    passes = result["zero_variance_per_pass"]
    edges = np.concatenate([[0], np.cumsum([p["rollouts"] for p in passes])])
    waste.stairs([1 - p["mixed"] for p in passes], edges, baseline=None, color="C3", lw=2, label="per pass over the pool")
    waste.set_xlabel("training rollouts generated")
    waste.set_ylabel("zero-variance share of generated groups")
    waste.legend(fontsize=8)
    for lv in sorted({v for v in levels.values()}):
        ids = [i for i, v in levels.items() if v == lv]
        xs, ys = [], []
        for e in result["per_problem_evals"]:
            got = [e["per_problem"][i] for i in ids if i in e["per_problem"]]
            if got:
                xs.append(e["rollouts"])
                ys.append(float(np.mean(got)))
        acc.plot(xs, ys, marker="o", ms=3, label=f"level {lv}")
    acc.set_xlabel("training rollouts generated")
    acc.set_ylabel("test accuracy (k = 4; k = 32 at the ends)")
    acc.legend(fontsize=7, ncol=2)
    fig.suptitle("frontier world, uniform + DAPO (grpo bench frontier)")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def run(out: Path | None = None) -> dict:
    from bench import run_trace
    from bench.common import git_state
    from grpo_train.metrics import latest_checkpoint, read_metrics
    from pipelines.pipeline import load_spec, profile_stage, run_pipeline

    started, git = run_trace.now(), git_state()
    spec = load_spec(PIPELINE)
    base = Path(out or spec["out"])
    summary = run_pipeline(PIPELINE)
    world, warm = base / "world", base / "policy-warm"
    final = latest_checkpoint(base / "train") / "hf"
    measured = base / "measure"
    problems = {name: pl.read_parquet(world / f"{name}.parquet") for name in ("train", "transfer", "reference")}
    rates = {}
    for model_name, model in (("warm", warm), ("final", final)):
        for split in ("train", "transfer", "reference") if model_name == "warm" else ("transfer", "reference"):
            path = profile_stage(str(model), world / f"{split}.parquet", MEASURE, measured / f"{model_name}-{split}.parquet")
            rates[(model_name, split)] = pass_rates(path)
    records = read_metrics(base / "train")
    steps = run_trace.step_trace(records)
    result = {
        "pipeline": str(PIPELINE.relative_to(ROOT)), **run_trace.stamp(started, git),
        "warm_start": summary.get("warm_start"),
        "pool_at_start": histogram(rates[("warm", "train")], problems["train"]),
        "test": {"paired_gain": summary.get("paired_gain"), **per_level_eval(base / "train")},
        "transfer": paired(rates[("warm", "transfer")], rates[("final", "transfer")]),
        "reference": paired(rates[("warm", "reference")], rates[("final", "reference")]),
        "steps": steps,
        "zero_variance_share_first_5_steps": float(np.mean([s["zero_variance_fraction"] for s in steps[:5]] or [np.nan])),
        "zero_variance_share_last_5_steps": float(np.mean([s["zero_variance_fraction"] for s in steps[-5:]] or [np.nan])),
        **informative_limit(steps), "test_curve": test_curve(records),
        "rollouts": {"training": steps[-1].get("rollouts_generated") if steps else None,
                     "measurement_profiles": int(sum(r["k"].sum() for r in rates.values()))},
        "per_problem_evals": run_trace.per_problem_evals(base / "train", records),
        "draws_file": run_trace.store_draws(base / "train", ROOT / "bench" / "results" / "frontier.draws.parquet"),
        "goals": GOALS,
    }
    from bench.common import RESULTS
    from bench.curriculum_stats import waste_per_pass

    if result["per_problem_evals"]:
        result["comparison_plan"] = comparison_plan(result["per_problem_evals"][0]["per_problem"],
                                                    training_spread(RESULTS))

    pool, g = problems["train"].height, int(spec["train"]["rollout"]["group_size"])
    result["zero_variance_per_pass"] = waste_per_pass([r for r in records if r["kind"] == "train"], pool, g)
    test = pl.read_parquet(world / "test.parquet")
    levels = dict(zip(test["id"].cast(pl.Utf8).to_list(), test["level"].to_list(), strict=True))
    result["plot"] = str(plot(result, levels, RESULTS / "frontier.png"))
    return result
