"""Profiler benchmarks (`grpo bench profile`), on the embedded world and the warm-started policy:

1. throughput: the same problems and model profiled through vLLM and through transformers
   `generate`, samples/s of each and their ratio measured in one run (goal >= 5x);
2. adaptive vs fixed: samples spent by adaptive sampling (per-level empirical-Bayes prior, the
   default, and one prior for the pool) and by fixed k=16, and each one's agreement on band
   membership (0.2 <= p <= 0.8) with a fixed k=64 reference (goal: >= 3x fewer samples than k=16
   with >= 95% agreement). The k=64 reference is itself noisy near the band edges, so two more
   figures say how much agreement is possible: agreement on the problems whose reference is sure
   (its 90% interval entirely inside or outside the band), and the ceiling an oracle that knew each
   problem's pass rate would reach against a k=64 draw (taking the reference estimate as the pass
   rate).
"""

from __future__ import annotations

import time

import numpy as np
import polars as pl

from grpo_data.curriculum.stats import StoppingRule
from grpo_data.generation.engines import make_engine
from grpo_data.generation.prompting import SamplingConfig
from grpo_data.profile_config import ProfileConfig
from grpo_data.profile_parts import merge_parts
from grpo_data.profiler import profile_problems
from grpo_data.verify.pool import VerifierPool


def _profile(problems, engine, pool, cfg, out) -> tuple[pl.DataFrame, float, int]:
    start = time.monotonic()
    stats = profile_problems(problems, engine, pool, cfg, out, progress=False)
    return merge_parts(out).sort("id"), time.monotonic() - start, stats["samples"]


def run(quick: bool = False, workdir: str = "runs/bench-profile") -> dict:
    import shutil
    from pathlib import Path

    from pipelines.stages import warm_policy, write_world

    policy = warm_policy()
    train = pl.read_parquet(write_world("runs/world")["train"])
    work = Path(workdir)
    shutil.rmtree(work, ignore_errors=True)
    sampling = SamplingConfig(temperature=1.0, max_tokens=128)
    n_tp = 64 if quick else 256
    tp_problems = train.sample(n=n_tp, seed=1)
    out = {"policy": str(policy)}
    from grpo_data.generation.engines import EngineSettings
    from grpo_data.generation.prompting import encode_prompt, resolve_stops

    def gen_only(engine) -> float:
        """Generation alone (no verification): samples/s of engine.generate on the same prompts,
        after a small warm-up call (first-call setup is not throughput)."""
        prompts = [encode_prompt(engine.tokenizer, m) for m in tp_problems["prompt"].to_list()]
        stops = resolve_stops(sampling, engine.tokenizer)
        engine.generate(prompts[:8], 16, stops)
        start = time.monotonic()
        engine.generate(prompts, 16, stops)
        return n_tp * 16 / (time.monotonic() - start)

    with VerifierPool() as pool:
        vllm = make_engine("vllm", str(policy), seed=0, settings=EngineSettings(max_num_seqs=1024))  # a 1M model: decode many sequences at once
        vllm_gen = gen_only(vllm)
        cfg16 = ProfileConfig(k=16, sampling=sampling, chunk_size=n_tp)
        _, v_s, v_n = _profile(tp_problems, vllm, pool, cfg16, work / "tp-vllm.parquet")
        hf = make_engine("hf", str(policy), seed=0, batch_size=1024)  # the same 1024 sequences per batch
        hf_gen = gen_only(hf)
        _, h_s, h_n = _profile(tp_problems, hf, pool, cfg16, work / "tp-hf.parquet")
        hf.close()
        out["throughput"] = {"problems": n_tp, "k": 16, "vllm_samples_per_s": v_n / v_s, "hf_samples_per_s": h_n / h_s,
                             "vllm_seconds": v_s, "hf_seconds": h_s, "ratio_vllm_over_hf": (v_n / v_s) / (h_n / h_s),
                             "generation_only_vllm_samples_per_s": vllm_gen, "generation_only_hf_samples_per_s": hf_gen,
                             "generation_only_ratio": vllm_gen / hf_gen,
                             "note": "ratio_vllm_over_hf is profiling end to end (generation + verification); "
                                     "generation_only_* times engine.generate alone on the same prompts"}
        n_ad = 300 if quick else 1500
        problems = train.sample(n=n_ad, seed=2)
        ref, _, ref_n = _profile(problems, vllm, pool, ProfileConfig(k=64, sampling=sampling, chunk_size=256),
                                 work / "ref64.parquet")
        fixed, _, fixed_n = _profile(problems, vllm, pool, ProfileConfig(k=16, sampling=sampling, chunk_size=256),
                                     work / "fixed16.parquet")
        rule = StoppingRule()
        adapt, _, adapt_n = _profile(problems, vllm, pool, ProfileConfig(rule=rule, sampling=sampling, chunk_size=256),
                                     work / "adaptive.parquet")
        flat, _, flat_n = _profile(problems, vllm, pool, ProfileConfig(rule=rule, sampling=sampling, chunk_size=256,
                                                                       prior_groups="none"), work / "adaptive-pool.parquet")
        vllm.close()
    out["adaptive"] = adaptive_summary(problems, rule, ref, fixed, adapt, flat, (ref_n, fixed_n, adapt_n, flat_n))
    return out


def adaptive_summary(problems: pl.DataFrame, rule: StoppingRule, ref, fixed, adapt, flat, samples) -> dict:
    from scipy.stats import binom

    from grpo_data.curriculum.stats import credible_interval, posterior, row_priors

    ref_n, fixed_n, adapt_n, flat_n = samples
    level = problems.select("id", "level").sort("id")["level"].to_numpy()

    def band(t: pl.DataFrame) -> np.ndarray:
        p = t["pass_rate"].to_numpy()
        return (p >= rule.lo) & (p <= rule.hi)

    def decided(t: pl.DataFrame, groups) -> np.ndarray:  # the decision the profiler's stopping rule made
        c, k = t["n_correct"].to_numpy(), t["k"].to_numpy()
        return rule.in_band(c, k, row_priors(c, k, groups))

    truth = band(ref)
    lo, hi = credible_interval(*posterior(ref["n_correct"].to_numpy(), ref["k"].to_numpy()), 0.9)
    sure = ((lo >= rule.lo) & (hi <= rule.hi)) | (hi < rule.lo) | (lo > rule.hi)
    p = ref["pass_rate"].to_numpy()
    q = binom.cdf(np.floor(rule.hi * 64 + 1e-9), 64, p) - binom.cdf(np.ceil(rule.lo * 64 - 1e-9) - 1, 64, p)
    arms = {"fixed_k16": band(fixed), "adaptive_level_prior": decided(adapt, level), "adaptive_pool_prior": decided(flat, None)}
    return {
        "problems": int(p.size), "rule": {"lo": rule.lo, "hi": rule.hi, "confidence": rule.confidence,
                                          "screen_k": rule.screen_k, "step_k": rule.step_k, "max_k": rule.max_k},
        "samples_reference_k64": ref_n, "samples_fixed_k16": fixed_n, "samples_adaptive": adapt_n,
        "samples_adaptive_pool_prior": flat_n, "savings_vs_k16": fixed_n / adapt_n,
        "savings_vs_k16_pool_prior": fixed_n / flat_n,
        "agreement_fixed_k16_vs_k64": float(np.mean(arms["fixed_k16"] == truth)),
        "agreement_adaptive_vs_k64": float(np.mean(arms["adaptive_level_prior"] == truth)),
        "agreement_adaptive_pool_prior_vs_k64": float(np.mean(arms["adaptive_pool_prior"] == truth)),
        "reference_sure_share": float(sure.mean()),
        "agreement_on_sure_reference": {name: float(np.mean(d[sure] == truth[sure])) for name, d in arms.items()},
        "oracle_ceiling_vs_k64": float(np.mean(np.maximum(q, 1 - q))),
        "reference_in_band_share": float(truth.mean()),
        "goals": {"savings_vs_k16": ">= 3", "agreement_adaptive_vs_k64": ">= 0.95"},
    }
