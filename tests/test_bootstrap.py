"""Warm start: determinism, caching, loss masking, and the pass-rate spread of the real recipe."""

import json

import numpy as np
import polars as pl
import pytest
import torch

from grpo_train.bootstrap import (
    BootstrapConfig,
    SFTExample,
    bootstrap,
    collate,
    lr_at,
    plausible_mistake,
    realize,
    sft_split,
)


def test_collate_masks_everything_but_the_answer():
    ids, att, labels = collate([([1, 2, 3, 4, 5], 3), ([6, 7, 8], 2)], pad_id=0)
    assert ids.tolist() == [[1, 2, 3, 4, 5], [6, 7, 8, 0, 0]]
    assert labels.tolist() == [[-100, -100, -100, 4, 5], [-100, -100, 8, -100, -100]]
    assert att.tolist() == [[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]]


def test_causal_lm_loss_is_the_same_without_the_padding_mask():
    """Right padding + causal attention: no real token attends to a pad, so the mask is not needed."""
    from grpo_train.tiny_policy import TinyModelConfig, build_model, build_tokenizer

    tok = build_tokenizer()
    model = build_model(tok, TinyModelConfig(), seed=0)
    ids, att, labels = collate([(list(range(5, 25)), 12), (list(range(30, 40)), 6)], pad_id=tok.pad_token_id)
    with torch.no_grad():
        masked = model(input_ids=ids, attention_mask=att, labels=labels).loss
        unmasked = model(input_ids=ids, labels=labels).loss
    torch.testing.assert_close(masked, unmasked)


def test_teacher_mistakes_are_plausible_and_rate_matches():
    import random

    from grpo_train.tiny_policy import build_tokenizer

    tok = build_tokenizer()
    rng = random.Random(0)
    assert all(abs(plausible_mistake(57, rng) - 57) in (1, 10) for _ in range(50))
    ex = SFTExample(tuple(tok("q", add_special_tokens=False)["input_ids"]), 57, level=4)
    answers = [tok.decode(realize(ex, tok, {4: 0.25}, rng)[0][1:]) for _ in range(2000)]
    assert np.mean(["{57}" in a for a in answers]) == pytest.approx(0.75, abs=0.03)


def test_sft_split_is_deterministic_per_level_share(world_tables):
    a = sft_split(world_tables["train"], {1: 0.5, 2: 1.0}, seed=0)
    b = sft_split(world_tables["train"], {1: 0.5, 2: 1.0}, seed=0)
    assert a.equals(b)
    counts = dict(a.group_by("level").len().iter_rows())
    total = dict(world_tables["train"].group_by("level").len().iter_rows())
    assert counts[2] == total[2] and counts[1] == round(total[1] * 0.5) and 3 not in counts


def test_lr_schedule():
    cfg = BootstrapConfig(lr=1e-3, warmup_steps=10, steps=110)
    assert lr_at(0, cfg) == pytest.approx(1e-4) and lr_at(9, cfg) == pytest.approx(1e-3)
    assert lr_at(110, cfg) == pytest.approx(1e-4)


@pytest.mark.slow
def test_deterministic_and_cached(tmp_path, world_tables):
    from safetensors.torch import load_file

    cfg = BootstrapConfig(steps=15, batch_size=32)
    a = bootstrap(world_tables["train"], tmp_path / "a", cfg, progress=False)
    b = bootstrap(world_tables["train"], tmp_path / "b", cfg, progress=False)
    wa, wb = load_file(str(a / "model.safetensors")), load_file(str(b / "model.safetensors"))
    assert all(torch.equal(wa[k], wb[k]) for k in wa)
    stamp = (a / "bootstrap.json").stat().st_mtime_ns
    bootstrap(world_tables["train"], a, cfg, progress=False)
    assert (a / "bootstrap.json").stat().st_mtime_ns == stamp, "unchanged inputs reuse the cached policy"
    bootstrap(world_tables["train"], a, BootstrapConfig(steps=16, batch_size=32), progress=False)
    assert json.loads((a / "bootstrap.json").read_text())["config"]["steps"] == 16


@pytest.mark.slow
def test_warm_policy_loads_everywhere_and_has_a_realistic_spread(warm_policy, pool):
    """Sampled at the profiling temperature: >= 25% of problems at pass rate <= 0.1, >= 25% at
    >= 0.9, >= 20% in 0.2..0.8 (measured by bucket on 800 training problems, k = 16)."""
    from transformers import AutoModelForCausalLM

    from grpo_data.engines import make_engine
    from grpo_data.profiler import ProfileConfig, merge_parts, profile_problems
    from grpo_data.prompting import SamplingConfig

    policy, world = warm_policy
    AutoModelForCausalLM.from_pretrained(policy)
    problems = world["train"].sample(n=800, seed=7)
    engine = make_engine("vllm", str(policy), seed=0)
    out = policy.parent / "spread-profile.parquet"
    import shutil

    shutil.rmtree(str(out) + ".parts", ignore_errors=True)
    profile_problems(problems, engine, pool, ProfileConfig(k=16, sampling=SamplingConfig(temperature=1.0, max_tokens=16)),
                     out, progress=False)
    engine.close()
    rates = merge_parts(out)["pass_rate"].to_numpy()
    low, high, mid = np.mean(rates <= 0.1), np.mean(rates >= 0.9), np.mean((rates >= 0.2) & (rates <= 0.8))
    print(f"spread: <=0.1 {low:.3f}, >=0.9 {high:.3f}, 0.2-0.8 {mid:.3f}")
    assert low >= 0.25 and high >= 0.25 and mid >= 0.20
    by_level = pl.DataFrame({"level": problems.sort("id")["level"], "p": merge_parts(out).sort("id")["pass_rate"]})
    means = dict(by_level.group_by("level").agg(pl.col("p").mean()).iter_rows())
    assert means[1] > means[5] > means[8], "difficulty grows with level"
