"""`grpo bench trl`: TRL's GRPOTrainer on the embedded world, its default sampler vs the band scheduler.

Both arms start from the same warm-started policy, train the same number of optimizer steps with the
same generation batch (prompts x G), so they spend the same rollouts; neither uses an offline profile
(the scheduler starts from Beta(1, 1) and learns from TRL's own rewards, sharing strength within
levels), so there is no profiling cost to charge. Each run is its own process. Reported per arm:
`frac_reward_zero_std` (TRL's share of groups whose rewards are all equal, averaged over steps),
held-out accuracy of the final policy (mean over k samples per problem through this project's vLLM
path), mean and standard error over seeds. Goal: the scheduler's zero-variance fraction at most half
the default's; accuracy reported either way.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from bench.common import mean_se

ARMS = ("trl_default", "trl_scheduler")
GROUP = 8


def world_dataset(train_path: Path):
    import datasets
    import polars as pl

    table = pl.read_parquet(train_path).select("prompt", pl.col("answer").alias("solution"), "id", "level")
    return datasets.Dataset.from_list(table.to_dicts())


def train_arm(arm: str, seed: int, out: Path, policy: str, train_path: str, steps: int, prompts: int) -> None:
    """One TRL run (called in a child process); writes out/result.json and the final model to out/final."""
    from trl import GRPOConfig, GRPOTrainer

    from grpo_data.integrations.trl import MathReward, TRLCurriculum

    ds = world_dataset(Path(train_path))
    args = GRPOConfig(output_dir=str(out), use_cpu=True, num_generations=GROUP,
                      per_device_train_batch_size=prompts * GROUP, gradient_accumulation_steps=1,
                      max_completion_length=128, temperature=1.0, learning_rate=1e-4, max_steps=steps,
                      logging_steps=1, save_strategy="no", report_to=[], seed=seed, dataloader_num_workers=0)
    start = time.monotonic()
    with MathReward(workers=1) as reward:
        trainer = GRPOTrainer(model=policy, reward_funcs=[reward], args=args, train_dataset=ds)
        if arm == "trl_scheduler":
            TRLCurriculum.from_dataset(ds, seed=seed).attach(trainer)
        trainer.train()
    trainer.save_model(str(out / "final"))
    trainer.processing_class.save_pretrained(str(out / "final"))
    steps_log = [h for h in trainer.state.log_history if "frac_reward_zero_std" in h]
    result = {"arm": arm, "seed": seed, "seconds": time.monotonic() - start, "steps": len(steps_log),
              "rollouts": len(steps_log) * prompts * GROUP,
              "frac_reward_zero_std": [h["frac_reward_zero_std"] for h in steps_log],
              "reward": [h["reward"] for h in steps_log]}
    (out / "result.json").write_text(json.dumps(result))


def heldout_accuracy(model: str, heldout_path: Path, k: int, seed: int) -> dict:
    import polars as pl

    from grpo_data.generation.engines import make_engine
    from grpo_data.generation.prompting import PromptConfig, SamplingConfig
    from grpo_data.generation.rollouts import RolloutSampler
    from grpo_data.verify.pool import VerifierPool
    from grpo_train.trainer import evaluate

    heldout = pl.read_parquet(heldout_path)
    engine = make_engine("vllm", model, seed=seed)
    try:
        with VerifierPool(workers=2) as pool:
            sampler = RolloutSampler(engine, pool, engine.tokenizer, PromptConfig(),
                                     SamplingConfig(temperature=1.0, max_tokens=128))
            return evaluate(sampler, heldout, k)
    finally:
        engine.close()


def run(quick: bool = False, seeds: tuple[int, ...] = (0, 1, 2), workdir: str = "runs/bench-trl") -> dict:
    from pipelines.stages import warm_policy, write_world

    policy = str(warm_policy(progress=False))
    paths = write_world("runs/world")
    steps, prompts, k = (6, 4, 2) if quick else (120, 8, 4)
    out = Path(workdir)
    result = {"steps": steps, "prompts_per_step": prompts, "group_size": GROUP, "eval_k": k,
              "rollouts_per_arm": steps * prompts * GROUP, "policy": policy, "runs": []}
    result["initial"] = heldout_accuracy(policy, paths["heldout"], k, seed=0)["heldout_accuracy"]
    for seed in seeds:
        for arm in ARMS:
            run_dir = out / f"seed{seed}" / arm
            run_dir.mkdir(parents=True, exist_ok=True)
            log = run_dir / "train.log"
            code = (f"from bench.trl_bench import train_arm; from pathlib import Path; "
                    f"train_arm({arm!r}, {seed}, Path({str(run_dir)!r}), {policy!r}, {str(paths['train'])!r}, {steps}, {prompts})")
            with open(log, "w") as fh:
                proc = subprocess.run([sys.executable, "-c", code], stdout=fh, stderr=subprocess.STDOUT)
            if proc.returncode != 0:
                raise RuntimeError(f"{arm} seed {seed} failed (exit {proc.returncode}); see {log}")
            rec = json.loads((run_dir / "result.json").read_text())
            rec.update(heldout_accuracy(str(run_dir / "final"), paths["heldout"], k, seed=seed))
            rec["zero_std_mean"] = float(np.mean(rec["frac_reward_zero_std"]))
            result["runs"].append(rec)
            print(f"trl bench: seed {seed} {arm}: zero-std {rec['zero_std_mean']:.3f}, "
                  f"held-out {rec['heldout_accuracy']:.3f} ({rec['seconds']:.0f} s)", flush=True)
    summary = {}
    for arm in ARMS:
        runs = [r for r in result["runs"] if r["arm"] == arm]
        summary[arm] = {"frac_reward_zero_std": mean_se([r["zero_std_mean"] for r in runs]),
                        "heldout_accuracy": mean_se([r["heldout_accuracy"] for r in runs]),
                        "seconds": mean_se([r["seconds"] for r in runs])}
    ratios = [s["zero_std_mean"] / max(d["zero_std_mean"], 1e-9)
              for d in result["runs"] if d["arm"] == "trl_default"
              for s in result["runs"] if s["arm"] == "trl_scheduler" and s["seed"] == d["seed"]]
    result["summary"] = summary
    result["zero_std_ratio_scheduler_over_default"] = mean_se(ratios)
    result["goal"] = "scheduler's frac_reward_zero_std <= 0.5 x the default sampler's (same seed), accuracy reported"
    result["goal_met"] = bool(max(ratios) <= 0.5)
    return result
