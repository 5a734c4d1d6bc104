"""`grpo profile` on CUDA through the CLI (`python -m pipelines.cli profile`): vLLM with the GPU
defaults against the transformers reference on the same GPU, and the documented data-parallel run
across GPUs (`torchrun --nproc-per-node 2 -m pipelines.cli profile`: shard = RANK/WORLD_SIZE, each
rank's engine pinned to its own GPU by `pin_local_device`, rank 0 merging).

Greedy decoding (k = 1, temperature 0) in fp32 makes the profiles comparable answer by answer; the
policy is the CPU suite's warm-started tiny policy (`warm_policy`, built locally), which solves some
problems and not others. Skipped where CUDA is absent (the `gpu` marker, tests/conftest.py).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from gpu_helpers import gpu_count, run_command, subprocess_env, two_gpus

pytestmark = pytest.mark.gpu

PROFILE_ARGS = ["--k", "1", "--temperature", "0", "--max-tokens", "128", "--dtype", "float32", "--chunk-size", "32"]


def _problems(world, path: Path) -> pl.DataFrame:
    """100 problems spread over every level of the world's RL pool."""
    table = world["train"].sort("id").gather_every(max(1, world["train"].height // 100)).head(100)
    table.write_parquet(path)
    return table


def _profile(cmd_head: list[str], data: Path, model: Path, out: Path, *extra: str, env=None) -> pl.DataFrame:
    run_command([*cmd_head, "profile", "--data", str(data), "--model", str(model), "--out", str(out), *PROFILE_ARGS,
                 *extra], env=env)
    return pl.read_parquet(out).sort("id")


def _agreement(a: pl.DataFrame, b: pl.DataFrame) -> float:
    return float(np.mean(a["n_correct"].to_numpy() == b["n_correct"].to_numpy()))


def test_vllm_profile_on_a_gpu_matches_the_transformers_reference(tmp_path, warm_policy):
    """One GPU, vLLM at its GPU defaults (CUDA graphs, half the GPU) but fp32, against `--engine hf`
    (transformers `generate` on the same GPU, fp32). This proves that the GPU engine's profile is
    complete (every problem once, k = 1 each) and measures the same thing: each problem's greedy
    verdict agrees with the reference on at least 90% of problems (they may part where two fp32
    kernels break a near-tie differently), and the policy solved some problems and missed others,
    so the agreement is not that of two all-zero columns."""
    policy, world = warm_policy
    problems = _problems(world, tmp_path / "problems.parquet")
    head = [sys.executable, "-m", "pipelines.cli"]
    gpu = _profile(head, tmp_path / "problems.parquet", policy, tmp_path / "vllm.parquet")
    ref = _profile(head, tmp_path / "problems.parquet", policy, tmp_path / "hf.parquet", "--engine", "hf")
    assert gpu["id"].to_list() == sorted(problems["id"].to_list()) == ref["id"].to_list()
    assert (gpu["k"] == 1).all()
    assert 0 < int(gpu["n_correct"].sum()) < gpu.height, "the policy solved all or none: nothing to compare"
    assert _agreement(gpu, ref) >= 0.9


@two_gpus
def test_profile_across_two_gpus_equals_the_one_gpu_profile(tmp_path, warm_policy):
    """`torchrun --nproc-per-node 2` with `--gpu-memory-utilization 0.6` against the one-GPU run of
    the same command. This proves what the sharding guarantees: the merged profile holds every
    problem exactly once with k = 1; rank i profiled exactly `shard_slice(problems, (i, 2))` (its
    parts' ids); each rank ran on its own GPU (two engines at 0.6 of one GPU cannot both start); and
    the verdicts equal the one-GPU profile's on at least 95% of problems (the same weights and
    kernels; only how prompts are batched differs, which can move a near-tie)."""
    from grpo_data.profile_parts import parts_dir
    from grpo_data.profiler import shard_slice

    policy, world = warm_policy
    data = tmp_path / "problems.parquet"
    problems = _problems(world, data)
    one = _profile([sys.executable, "-m", "pipelines.cli"], data, policy, tmp_path / "one.parquet",
                   "--gpu-memory-utilization", "0.6")
    torchrun = str(Path(sys.executable).parent / "torchrun")
    env = subprocess_env()
    env.pop("CUDA_VISIBLE_DEVICES", None)
    out = tmp_path / "two.parquet"
    two = _profile([torchrun, "--nproc-per-node", "2", "--master-port", "29760", "-m", "pipelines.cli"], data, policy,
                   out, "--gpu-memory-utilization", "0.6", env=env)
    assert two["id"].to_list() == sorted(problems["id"].to_list()) and (two["k"] == 1).all()
    for i in range(2):
        parts = sorted(parts_dir(out).glob(f"shard{i:04d}-of-0002-*.parquet"))
        ids = sorted(pl.concat([pl.read_parquet(p, columns=["id"]) for p in parts])["id"].to_list())
        assert ids == sorted(shard_slice(problems, (i, 2))["id"].to_list()), i
    assert _agreement(one, two) >= 0.95


def test_profile_on_ray_gpu_actors_equals_the_one_process_profile(tmp_path, warm_policy):
    """`grpo profile --backend ray` on a local cluster over this machine's GPUs (one engine actor per
    GPU, `--ray-gpus-per-worker 1`, so Ray sets each actor's CUDA_VISIBLE_DEVICES) against the same
    command in one process on one GPU. This proves the Ray path runs the CUDA engine inside actors and
    writes a complete profile (every problem once, k = 1, metadata backend ray with one worker per GPU),
    and that its verdicts equal the one-process profile's on at least 95% of problems (the chunks and
    their seeds are the same; one GPU against another may break a near-tie differently). On one GPU it
    runs with one actor: the actor path, not the spread."""
    import json

    policy, world = warm_policy
    data = tmp_path / "problems.parquet"
    problems = _problems(world, data)
    head = [sys.executable, "-m", "pipelines.cli"]
    one = _profile(head, data, policy, tmp_path / "one.parquet")
    out = tmp_path / "ray.parquet"
    on_ray = _profile(head, data, policy, out, "--backend", "ray", "--ray-gpus-per-worker", "1")
    assert on_ray["id"].to_list() == sorted(problems["id"].to_list()) and (on_ray["k"] == 1).all()
    meta = json.loads(out.with_suffix(".json").read_text())
    assert meta["backend"] == "ray" and meta["ray_workers"] == gpu_count()
    assert _agreement(one, on_ray) >= 0.95
