"""The DeepSpeed learner on CUDA (`grpo_train.learner.DeepSpeedLearner`): a bf16 ZeRO-3 step and its
checkpoint on one GPU, and 2 ranks over NCCL against one process on the union of their batches.

Models are random-init Qwen2.5-0.5B-shaped policies built locally (no download). Skipped where CUDA
is absent (the `gpu` marker, tests/conftest.py); the NCCL test also where fewer than 2 GPUs are.
"""

from __future__ import annotations

import math
import shutil
import sys
from pathlib import Path

import pytest
import torch
from gpu_helpers import run_command, subprocess_env, two_gpus

pytestmark = pytest.mark.gpu

# gpu_example.yaml's learner: `deepspeed: {zero_stage: 3, bf16: true}`, gradient checkpointing; lr 1e-5,
# above that file's 1e-6 so that one step moves bf16 weights in more than a few elements
STEP = {"lr": 1e-5, "zero_stage": 3, "bf16": True}


def test_bf16_zero3_step_moves_the_weights_up_the_objective_and_its_checkpoint_reloads(run_scenario, tmp_path,
                                                                                      real_shape_policy):
    """One `DeepSpeedLearner.update` at ZeRO-3 + bf16 on seeded synthetic groups, then a fresh learner
    (a resumed run's) loading its `save_state` checkpoint. This proves, on CUDA:
    - the settings took: parameters are partitioned by ZeRO-3 and held in bf16, on 1 rank;
    - the step ran and moved the weights: a finite loss and gradient norm, one optimizer step, some
      weights changed, none became NaN or inf;
    - it moved them the right way: the step's own objective (sum of advantage x token log-prob at
      T = 0.6, what a token-mean GRPO step ascends) is higher under the exported weights after the
      step than before it (HF fp32 on both `save_hf` exports, which gather the ZeRO-3 partitions);
    - the DeepSpeed checkpoint restores the weights exactly: max difference 0 after `load_state`,
      against a nonzero difference before loading (so the comparison can tell), and the
      learning-rate schedule's position comes back with them."""
    out = tmp_path / "learner"
    m = run_scenario("learner_step", model=str(real_shape_policy), out_dir=str(out), **STEP)
    assert m["zero3_partitioned"] and m["param_dtype"] == "torch.bfloat16" and m["world_size"] == 1, m
    metrics = m["metrics"]
    assert metrics["optimizer_steps"] == 1 and math.isfinite(metrics["loss"]), metrics
    assert math.isfinite(metrics["grad_norm"]) and metrics["grad_norm"] > 0, metrics
    assert m["changed_tensors"] > 0 and m["max_change"] > 0 and m["all_finite"], m
    assert m["objective_after"] > m["objective_before"], (m["objective_before"], m["objective_after"])
    r = run_scenario("learner_reload", model=str(real_shape_policy), out_dir=str(out), **STEP)
    assert r["same_names"] and r["fresh_max_diff"] > 0, r
    assert r["loaded_max_diff"] == 0.0, r
    assert r["lr_loaded"] == pytest.approx(m["lr_after"]), (r, m["lr_after"])


@two_gpus
@pytest.mark.parametrize("zero_stage", [0, 3])
def test_two_nccl_ranks_make_the_update_of_one_rank_on_the_union(tmp_path, real_shape_policy, zero_stage):
    """2 GPU ranks through DeepSpeed's launcher (NCCL), each training `grpo_train.rank_check`'s
    seeded groups for 3 steps (unequal shares, one rank empty in a step, micro-batches), fp32. This
    proves on NCCL what the CPU suite proves on gloo: both ranks end with identical weights (max
    difference 0: one reduced gradient, one update), and those equal one GPU process trained on the
    union of both ranks' groups to within 0.1% of how far the steps moved the weights (a loss
    normalized per rank instead of globally is off by tens of percent of the update: the CPU suite
    saw ~0.1 against moves of ~0.05; the bound is relative because a 0.5B model's per-weight moves
    are smaller than the CPU suite's tiny model's)."""
    from grpo_train.rank_check import max_weight_difference

    launcher = shutil.which("deepspeed", path=str(Path(sys.executable).parent))
    extra = ["--model", str(real_shape_policy), "--zero-stage", str(zero_stage)]
    env = subprocess_env()
    env.pop("CUDA_VISIBLE_DEVICES", None)  # DeepSpeed's launcher would turn it into --include
    run_command([launcher, "--num_gpus", "2", "--master_port", str(29750 + zero_stage), "--module",
                 "grpo_train.rank_check", "--out", str(tmp_path / "two"), *extra], env=env)
    run_command([sys.executable, "-m", "grpo_train.rank_check", "--out", str(tmp_path / "one"), "--union", "2", *extra])
    r0, r1 = tmp_path / "two" / "weights-rank0.pt", tmp_path / "two" / "weights-rank1.pt"
    one = tmp_path / "one" / "weights-rank0.pt"
    assert max_weight_difference(r0, r1) == 0.0
    start = {k: v.float() for k, v in _safetensors(real_shape_policy).items()}
    final = torch.load(one)
    moved = max(float((final[k] - start[k]).abs().max()) for k in start if k in final)
    assert moved > 1e-6, moved  # the steps moved the weights
    assert max_weight_difference(r0, one) < 1e-3 * moved, (max_weight_difference(r0, one), moved)


def _safetensors(path: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    return load_file(str(path / "model.safetensors"))
