"""Warm-start benchmark (`grpo bench warmstart`): wall time of the default warm start on this
machine (target <= 5 minutes on 2 cores), and the pass-rate spread of the result sampled at the
profiling temperature (targets: >= 25% of problems at <= 0.1, >= 25% at >= 0.9, >= 20% in 0.2-0.8)."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import numpy as np


def run(quick: bool = False, n_problems: int = 1000) -> dict:
    from grpo_data.generation.engines import make_engine
    from grpo_data.generation.prompting import SamplingConfig
    from grpo_data.profile_config import ProfileConfig
    from grpo_data.profile_parts import merge_parts
    from grpo_data.profiler import profile_problems
    from grpo_data.tables.world import WorldConfig, generate
    from grpo_data.verify.pool import VerifierPool
    from grpo_train.bootstrap import BootstrapConfig, bootstrap

    world = generate(WorldConfig())
    tmp = Path(tempfile.mkdtemp(prefix="warmstart-"))
    try:
        cfg = BootstrapConfig(steps=200) if quick else BootstrapConfig()
        policy = bootstrap(world["sft"], tmp / "policy", cfg, progress=False)
        seconds = json.loads((policy / "bootstrap.json").read_text())["seconds"]
        problems = world["train"].sample(n=min(n_problems, world["train"].height), seed=11)
        engine = make_engine("vllm", str(policy), seed=0)
        with VerifierPool() as pool:
            profile_problems(problems, engine, pool, ProfileConfig(k=16, sampling=SamplingConfig(max_tokens=128),
                                                                    chunk_size=500), tmp / "p.parquet", progress=False)
        engine.close()
        rates = merge_parts(tmp / "p.parquet")["pass_rate"].to_numpy()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return {"recipe": cfg.to_dict(), "warm_start_seconds": seconds, "problems_sampled": int(rates.size), "k": 16,
            "share_le_0.1": float(np.mean(rates <= 0.1)), "share_ge_0.9": float(np.mean(rates >= 0.9)),
            "share_0.2_0.8": float(np.mean((rates >= 0.2) & (rates <= 0.8))),
            "goals": {"warm_start_seconds": "<= 300", "share_le_0.1": ">= 0.25", "share_ge_0.9": ">= 0.25",
                      "share_0.2_0.8": ">= 0.20"}}
