"""`grpo bench verl_v1` (or `python -m bench.verl_v1_bench`): verl 0.9.1's V1 trainer loop, its default
sampler against the band scheduler installed through its config hooks, on a synthetic pool with known
pass rates.

The loop is verl's own (`PPOTrainer.fit` in sync mode, its dataloader, replay buffer and agent-loop
worker; tests/verl_v1_driver.py): only each answer is stubbed, drawn right with the problem's pass rate
(the same draw for a problem, step and answer in either arm), and the actor does not learn, so pass
rates stay fixed. The pool is shaped like real data for a model: most problems solved or hopeless,
a quarter in between. Both arms spend the same rollouts (steps x prompts x G); the scheduler starts
from Beta(1, 1), with no offline profile, and learns from verl's rewards only. Reported: the share of
generated groups whose answers all agree (no GRPO signal), per arm and seed, and their ratio. Goal:
the scheduler's share at most half the default's, as the TRL plug-in achieved (0.205 against 0.641).
Needs `make verl-env` (verl 0.9.1 beside its deps, in .venv/verl or GRPO_VERL_ENV).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

from bench.common import mean_se

ROOT = Path(__file__).resolve().parent.parent
ARMS = ("verl_default", "verl_v1_scheduler")
GROUP = 8


def pool_rates(n: int, seed: int) -> np.ndarray:
    """Known pass rates: 40% nearly solved (0.9-1.0), 35% nearly hopeless (0-0.05), 25% in 0.2-0.8."""
    rng = np.random.default_rng(seed)
    kind = rng.choice(3, size=n, p=[0.40, 0.35, 0.25])
    return np.where(kind == 0, rng.uniform(0.9, 1.0, n), np.where(kind == 1, rng.uniform(0.0, 0.05, n),
                                                                  rng.uniform(0.2, 0.8, n)))


def write_pool(folder: Path, rates: np.ndarray) -> tuple[str, str]:
    """The pool as verl rows, and a separate validation file (its first 8 rows: verl needs one, and a
    CurriculumDataset refuses a val list equal to the train list)."""
    import polars as pl

    from grpo_train.tiny_policy import build_tokenizer

    folder.mkdir(parents=True, exist_ok=True)
    rows = [{"data_source": "synthetic", "prompt": [{"role": "user", "content": f"problem {i}"}],
             "reward_model": {"style": "rule", "ground_truth": "1"}, "extra_info": {"id": f"p{i}", "index": i}}
            for i in range(rates.size)]
    pl.DataFrame(rows).write_parquet(folder / "pool.parquet")
    pl.DataFrame(rows[:8]).write_parquet(folder / "val.parquet")
    build_tokenizer().save_pretrained(folder / "tok")
    return str(folder / "pool.parquet"), str(folder / "val.parquet")


def all_equal_share(groups: list) -> float:
    return float(np.mean([len(set(rewards)) == 1 for _, rewards in groups]))


def run(quick: bool = False, seeds: tuple[int, ...] = (0, 1, 2), workdir: str = "runs/bench-verl-v1") -> dict:
    verl_env = Path(os.environ.get("GRPO_VERL_ENV", ROOT / ".venv" / "verl"))
    if not (verl_env / "0.9.1" / "verl").is_dir():
        raise FileNotFoundError(f"{verl_env / '0.9.1'} is missing: run `make verl-env` (or set GRPO_VERL_ENV)")
    problems, prompts, steps = (64, 8, 12) if quick else (256, 16, 60)
    out = Path(workdir)
    result = {"verl": "0.9.1", "trainer": "V1 PPOTrainer.fit, trainer_mode=sync", "problems": problems,
              "prompts_per_step": prompts, "group_size": GROUP, "steps": steps,
              "rollouts_per_arm": steps * prompts * GROUP, "pool": pool_rates.__doc__, "runs": []}
    path = [str(ROOT), str(ROOT / "tests" / "fake_tq"), str(verl_env / "0.9.1"), str(verl_env / "deps")]
    for seed in seeds:
        folder = out / f"seed{seed}"
        rates = pool_rates(problems, seed)
        train, val = write_pool(folder, rates)
        spec = {"tokenizer": str(folder / "tok"), "files": [train], "val_files": [val], "n": GROUP, "batch": prompts,
                "work": str(folder / "ckpt"), "rewards": {f"p{i}": float(r) for i, r in enumerate(rates)},
                "runs": [{"name": arm, "curriculum": arm == "verl_v1_scheduler", "steps": steps, "rewards": "rates",
                          "seed": seed} for arm in ARMS]}
        (folder / "spec.json").write_text(json.dumps(spec))
        with open(folder / "driver.log", "w") as log:
            proc = subprocess.run([sys.executable, str(ROOT / "tests" / "verl_v1_driver.py"), str(folder / "spec.json"),
                                   str(folder / "out.json")], env={**os.environ, "PYTHONPATH": os.pathsep.join(path)},
                                  stdout=log, stderr=subprocess.STDOUT)
        if proc.returncode != 0:
            raise RuntimeError(f"seed {seed}: the verl driver failed (exit {proc.returncode}); see {folder / 'driver.log'}")
        driven = json.loads((folder / "out.json").read_text())
        for arm in ARMS:
            groups = driven["runs"][arm]["groups"]
            rec = {"arm": arm, "seed": seed, "groups": len(groups), "all_equal_share": all_equal_share(groups),
                   "rollouts": sum(len(rw) for _, rw in groups), "verl_path": driven["verl_path"],
                   # how narrow the choice was: a low all-equal share from a few problems trained over and over
                   "distinct_problems": len({pid for pid, _ in groups}),
                   "groups_per_problem": len(groups) / max(len({pid for pid, _ in groups}), 1),
                   "mean_true_pass_rate": float(np.mean([spec["rewards"][pid] for pid, _ in groups]))}
            result["runs"].append(rec)
            print(f"verl_v1 bench: seed {seed} {arm}: all-equal {rec['all_equal_share']:.3f} of {rec['groups']} groups "
                  f"over {rec['distinct_problems']} problems", flush=True)
    share = {arm: [r["all_equal_share"] for r in result["runs"] if r["arm"] == arm] for arm in ARMS}
    ratios = [s / max(d, 1e-9) for d, s in zip(share[ARMS[0]], share[ARMS[1]], strict=True)]
    result["summary"] = {arm: {"all_equal_share": mean_se(v)} for arm, v in share.items()}
    result["all_equal_ratio_scheduler_over_default"] = mean_se(ratios)
    result["goal"] = "scheduler's all-equal share <= 0.5 x the default sampler's at the same rollouts (same seed)"
    result["goal_met"] = bool(max(ratios) <= 0.5)
    return result


if __name__ == "__main__":
    import argparse

    from bench.common import write_result

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    print(write_result("verl_v1", run(quick=args.quick, seeds=(0,) if args.quick else (0, 1, 2))))
