"""vLLM on CUDA through `grpo_data.generation.vllm_engine.VLLMEngine`: GPU defaults, sleep mode, weight sync.

Each test starts its engine in a fresh process (tests/gpu/scenarios.py) on a random-init model of
Qwen2.5-0.5B's shape built locally (no download); the assertions are on what that process measured.
Skipped where CUDA is absent (the `gpu` marker, tests/conftest.py).
"""

from __future__ import annotations

import numpy as np
import pytest

pytestmark = pytest.mark.gpu


def _agreement(x: list[list[int]], y: list[list[int]]) -> float:
    return float(np.mean([a == b for a, b in zip(x, y, strict=True)]))


def test_sleep_mode_frees_gpu_memory_and_wakes_to_the_same_model(run_scenario, real_shape_policy):
    """With the GPU user's defaults (`EngineSettings()`: CUDA graphs, sleep mode on, auto dtype, half
    the GPU), this proves:
    - sleep mode is on by default on CUDA (`engine_kwargs`' device default reached `LLM(...)`);
    - `VLLMEngine.sleep()` gives back at least 70% of the engine's memory share (KV cache and the
      offloaded weights; CUDA graph pools and activation workspace stay: 70% is an estimate until a
      first GPU run) to the device, as `torch.cuda.mem_get_info` sees it;
    - `generate()` on a sleeping engine wakes it first (the trainer never calls `wake_up` itself), and
      the memory is taken again;
    - the woken engine is the same model: its greedy answers equal those before sleep on every prompt
      where the awake engine agreed with itself, and its sampled tokens' log-probs are as close to the
      HF model's as before sleep (weights restored from the CPU, a valid KV cache, no stale prefix).
      A random-init model's greedy answers mostly repeat the prompt's last token (seen on the CPU
      with this scenario), so the log-prob comparison is the one that would see a corrupted wake."""
    m = run_scenario("engine_sleep", model=str(real_shape_policy), settings={})
    assert m["sleep_enabled"] and m["sleeping"] and not m["sleeping_after_generate"]
    share = 0.5 * m["total_gib"]  # EngineSettings().gpu_memory_utilization of the device
    freed = m["free_gib_asleep"] - m["free_gib_awake"]
    assert freed >= 0.7 * share, (freed, share, m)
    assert m["free_gib_awake"] - m["free_gib_woken"] >= 0.8 * freed, m  # woken: the memory is in use again
    stable = [i for i, (a, b) in enumerate(zip(m["greedy_before"], m["greedy_before_again"], strict=True)) if a == b]
    assert len(stable) >= 0.75 * len(m["greedy_before"]), "the awake engine disagreed with itself on most prompts"
    assert all(m["greedy_after"][i] == m["greedy_before"][i] for i in stable), m
    before, after = m["logprob_gap_before"], m["logprob_gap_after"]
    assert after["tokens"] > 0 and after["mean"] <= 1.5 * before["mean"] + 1e-3, (before, after)


def test_weight_sync_into_a_sleeping_engine_generates_with_the_new_weights(run_scenario, real_shape_policy,
                                                                             real_shape_policy_b):
    """An engine started on A (fp32, to compare with fp32 transformers; sleep mode at its GPU default)
    is put to sleep and given B's weights with `VLLMEngine.load_weights`, the trainer's order (sleep,
    train, sync); later A's weights again while awake (the order on resume). This proves:
    - the sync into a sleeping engine wakes it (`sleeping` false after it) and the next `generate`
      runs on B: each sampled token's log-prob is within 0.01 of fp32 HF B's on average, and at
      least 0.1 away from A's (a stale, partial or mis-named load would sit near A or neither);
    - vLLM's greedy path decodes as HF `generate` does (`HFEngine` on the GPU): after each sync its
      greedy answers equal the synced model's HF answers on at least half the prompts, and where
      they part, HF's top-2 logit gap there is under 0.05 (a near-tie two sets of fp32 kernels broke
      differently, as in test_trainer's CPU weight-sync test). A random-init model's greedy answer
      mostly repeats the prompt's last token, for A and B alike (seen on the CPU with this
      scenario), so the greedy check alone cannot tell A from B: the log-prob check above does;
    - the awake sync back to A restores A the same way."""
    m = run_scenario("engine_sync", model_a=str(real_shape_policy), model_b=str(real_shape_policy_b),
                     settings={"dtype": "float32"})
    assert m["sleep_enabled"] and m["asleep_at_sync"] and not m["sleeping_after_sync"]
    # the comparison can tell A from B: the starting engine follows A, not B
    assert m["start_gap_to_a"]["mean"] < 0.01 and m["start_gap_to_b"]["mean"] > 0.1, m
    assert m["synced_b_gap_to_b"]["mean"] < 0.01 and m["synced_b_gap_to_a"]["mean"] > 0.1, m
    assert m["synced_back_a_gap_to_a"]["mean"] < 0.01 and m["synced_back_a_gap_to_b"]["mean"] > 0.1, m
    for tag, name in (("synced_b", "b"), ("synced_back_a", "a")):
        assert _agreement(m[f"{tag}_greedy"], m[f"hf_greedy_{name}"]) >= 0.5, tag
        gaps = m[f"{tag}_near_tie_gaps"]
        assert all(-1e-3 <= g < 0.05 for g in gaps), (tag, gaps)
