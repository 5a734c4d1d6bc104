"""Profile cost from another model's profile (`grpo bench prior`, issue #34 item 3; registered in
bench/PREREGISTRATION.md, Amendment 6, before its run).

A user often holds a profile of another checkpoint or model. `grpo profile --adaptive
--prior-profile` reads it as a discounted prior (`grpo_data.curriculum.prior_profile`) and stops early where it,
moved by the fitted logit offset, already settles the band decision. Measured here on 800 problems
of the world's pool (`level` removed, as in real training sets), T = 1.0, with the registered warm
start (the curriculum benchmark's):

- reference: a fixed k = 64 profile;
- the prior: a fixed k = 16 profile of the same problems by **another warm start** (the same recipe
  and SFT data, seed 1; `other_warm_start`), read at weight 4 (the default discount);
- adaptive profiles (the profiler's default rule) from scratch and from that prior, with the default
  2-sample screen (primary) and a 1-sample screen (secondary; scratch at 1 sample is its control).

Reported per profile: samples spent and the agreement of its band decision with the reference's.
A profile made from a prior is read as a scheduler reads it: its counts with the prior's pseudo-counts
moved by the offset fitted on them (`grpo_data.curriculum.priors.merge_offline`). Goal: the primary prior profile
spends at most half the scratch one's samples at agreement no lower by more than 0.01.

Arm Aw of the curriculum benchmark trains from the same other warm start's profile of its pool
(`other_profile`).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import polars as pl

OTHER_SEED = 1  # the other warm start: BootstrapConfig(seed=1), everything else the registered recipe
PRIOR_K = 16  # the other warm start's profile: fixed k, as a sweep would share it
PRIOR_WEIGHT = 4.0  # the default discount (grpo_data.curriculum.priors.DEFAULT_WEIGHT), named so the result states it
PROBLEMS = 800
REFERENCE_K = 64
REFERENCE_SEED = 64  # the reference's draws are independent of the adaptive profiles' (seed 0)
MAX_TOKENS = 128
SCREENS = (2, 1)  # the default screen (primary), then one sample (secondary)
GOAL = {"samples_ratio": 2.0, "agreement_drop": 0.01}
CHUNK = 256  # problems per chunk as Amendment 6's run profiled (never registered; Amendment 9 tries 64)
FIT_CAP = 16.0  # Amendment 15: a fitted weight's cap, the samples behind each of the prior's values (PRIOR_K)


def other_warm_start(workdir: Path = Path("runs")) -> Path:
    """The warm start another run would have profiled with: the registered recipe on the same SFT
    table with seed OTHER_SEED (kernels pinned: every CPU builds the same weights). Built once
    (about 4 minutes on 2 cores) and reused while its inputs are unchanged."""
    from grpo_train.bootstrap import BootstrapConfig, bootstrap
    from pipelines.stages import write_world

    sft = pl.read_parquet(write_world("runs/world")["sft"])
    return bootstrap(sft, Path(workdir) / f"policy-warm-seed{OTHER_SEED}", BootstrapConfig(seed=OTHER_SEED),
                     progress=False)


def other_profile(problems: Path, out: Path, temperature: float, max_tokens: int = MAX_TOKENS) -> Path:
    """A fixed k = PRIOR_K profile of the table at `problems` by the other warm start (reused when its
    inputs are unchanged): the earlier profile a user already holds."""
    from pipelines import pipeline

    return pipeline.profile_stage(str(other_warm_start()), Path(problems),
                                  {"k": PRIOR_K, "max_tokens": max_tokens, "temperature": temperature,
                                   "chunk_size": 512}, Path(out), seed=OTHER_SEED)


def band_decision(profile: pl.DataFrame, rule, prior=None) -> np.ndarray:
    """Each problem's band decision as a scheduler reads the profile (rows in the profile's order):
    its counts, plus the prior's pseudo-counts moved by the offset fitted on them when the profile
    was made from a prior, under the pool's empirical-Bayes prior fitted to them."""
    from grpo_data.curriculum.priors import merge_offline
    from grpo_data.curriculum.stats import row_priors

    c, k = profile["n_correct"].to_numpy().astype(np.float64), profile["k"].to_numpy().astype(np.float64)
    if prior is not None:
        c, k = merge_offline((c, k), prior).offline
    return rule.in_band(c, k, row_priors(c, k, None))


def summarize(reference: np.ndarray, decisions: dict[str, np.ndarray], samples: dict[str, int]) -> dict:
    """Samples and agreement with the reference's band decision per profile; the goal's ratios
    (scratch over prior at the same screen) and agreement differences (prior - scratch)."""
    out = {name: {"samples": int(samples[name]), "samples_per_problem": samples[name] / reference.size,
                  "agreement_vs_reference": float(np.mean(decisions[name] == reference))} for name in decisions}
    for screen in SCREENS:
        scratch, prior = out.get(f"scratch_screen{screen}"), out.get(f"prior_screen{screen}")
        if scratch and prior:
            prior["samples_ratio_scratch_over_prior"] = scratch["samples"] / prior["samples"]
            prior["agreement_minus_scratch"] = prior["agreement_vs_reference"] - scratch["agreement_vs_reference"]
    primary = out.get(f"prior_screen{SCREENS[0]}")
    if primary and "samples_ratio_scratch_over_prior" in primary:
        out["goal_met"] = bool(primary["samples_ratio_scratch_over_prior"] >= GOAL["samples_ratio"]
                               and primary["agreement_minus_scratch"] >= -GOAL["agreement_drop"])
    return out


def samples_at_agreement(points: list[tuple[float, float]], target: float) -> float | None:
    """Samples a profile needs to reach band agreement `target`, read off its (samples, agreement)
    points: linear between the first two neighbours in order of samples whose agreements bracket it
    (Amendment 10); None when no pair brackets it (no extrapolation)."""
    pts = sorted(points)
    for (s0, a0), (s1, a1) in zip(pts, pts[1:]):
        if min(a0, a1) <= target <= max(a0, a1):
            return s0 if a1 == a0 else s0 + (s1 - s0) * (target - a0) / (a1 - a0)
    return None


def _inputs(quick: bool, work: Path) -> dict:
    """What every arm shares: the warm start, the problems, the other warm start's profile read as a
    prior, the k = 64 reference and its band decisions (each built once and reused)."""
    from bench.common import RESULTS, pool_table
    from bench.gsweep_bench import sweep_warm_start
    from grpo_data.curriculum.prior_profile import read_profile_prior
    from grpo_data.curriculum.stats import StoppingRule
    from grpo_data.tables import io
    from grpo_data.tables.profile_table import read_profile
    from pipelines import pipeline
    from pipelines.stages import write_world

    policy = sweep_warm_start(RESULTS)
    n, ref_k = (160, 16) if quick else (PROBLEMS, REFERENCE_K)
    problems = pool_table(pl.read_parquet(write_world("runs/world")["train"]), n, level=False)
    table = work / f"problems-{n}.parquet"
    if not table.exists() or not pl.read_parquet(table).equals(problems):
        io.write_parquet(table, problems)
    prior_path = other_profile(table, work / f"other-k{PRIOR_K}-{n}.parquet", temperature=1.0)
    base = {"max_tokens": MAX_TOKENS, "temperature": 1.0, "chunk_size": CHUNK}
    # its own seed: the adaptive profiles' first samples are not the reference's
    ref_path = pipeline.profile_stage(str(policy), table, {**base, "k": ref_k}, work / f"reference-k{ref_k}-{n}.parquet",
                                      seed=REFERENCE_SEED)
    rule = StoppingRule()
    reference = read_profile(ref_path)[0].sort("id")
    truth = (reference["pass_rate"] >= rule.lo).to_numpy() & (reference["pass_rate"] <= rule.hi).to_numpy()
    ids = reference["id"].to_list()
    return {"policy": policy, "n": n, "ref_k": ref_k, "table": table, "prior_path": prior_path, "base": base,
            "rule": rule, "reference": reference, "truth": truth, "ids": ids,
            "prior": read_profile_prior(prior_path, ids, PRIOR_WEIGHT),
            "fit_prior": replace(read_profile_prior(prior_path, ids, FIT_CAP), fit_weight=True)}


def _adaptive(inp: dict, work: Path, stem: str, settings: dict, with_prior: bool,
              fitted: bool = False) -> tuple[np.ndarray, int, float | None]:
    """One adaptive profile of the problems (reused when unchanged): its band decisions as a
    scheduler reads them, its samples, and the offset fitted against the prior (None without one).
    `fitted` (Amendment 15): the prior read at cap FIT_CAP with its weight fitted as the profile samples."""
    from grpo_data.curriculum.priors import merge_offline
    from grpo_data.tables.profile_table import read_profile
    from pipelines import pipeline

    extra = {"prior_profile": str(inp["prior_path"]), "prior_weight": FIT_CAP if fitted else PRIOR_WEIGHT} \
        if with_prior else {}
    path = pipeline.profile_stage(str(inp["policy"]), inp["table"],
                                  {**inp["base"], "adaptive": True, **settings, **extra,
                                   **({"fit_prior_weight": True} if fitted else {})}, work / f"{stem}.parquet")
    got = read_profile(path)[0].sort("id")
    if got["id"].to_list() != inp["ids"]:
        raise RuntimeError(f"{path}: its problems are not the reference's")
    used = (inp["fit_prior"] if fitted else inp["prior"]) if with_prior else None
    offset = None
    if used is not None:
        offset = merge_offline((got["n_correct"].to_numpy().astype(float), got["k"].to_numpy().astype(float)),
                               used).offset
    return band_decision(got, inp["rule"], used), int(got["k"].sum()), offset


def run(quick: bool = False, workdir: str = "runs/bench-prior", chunk_size: int = CHUNK) -> dict:
    """The registered measurement (Amendment 6); `quick`: 160 problems, reference k = 16. chunk_size:
    problems per chunk of the adaptive profiles (Amendment 9: 64, the profiler's default; the fixed-k
    reference and prior draw the same samples at any chunk size: seeds follow problem and round)."""
    from grpo_data.tables.profile_table import read_profile

    work = Path(workdir)
    inp = _inputs(quick, work)
    rule, truth = inp["rule"], inp["truth"]
    decisions, samples, offsets = {}, {}, {}
    for screen in SCREENS:
        for name, with_prior in ((f"scratch_screen{screen}", False), (f"prior_screen{screen}", True)):
            stem = f"{name}-{inp['n']}{'' if chunk_size == CHUNK else f'-c{chunk_size}'}"
            decisions[name], samples[name], offset = _adaptive(inp, work, stem, {"chunk_size": chunk_size,
                                                                                "screen_k": screen}, with_prior)
            if offset is not None:
                offsets[name] = offset
    result = summarize(truth, decisions, samples)
    prior_table, prior_meta = read_profile(inp["prior_path"])
    prior_table = prior_table.sort("id")
    reference = inp["reference"]
    result.update({
        "problems": inp["n"], "chunk_size": chunk_size, "reference_k": inp["ref_k"],
        "reference_in_band_share": float(truth.mean()),
        "reference_samples": int(reference["k"].sum()), "rule": {"lo": rule.lo, "hi": rule.hi,
                                                                 "confidence": rule.confidence, "step_k": rule.step_k,
                                                                 "max_k": rule.max_k},
        "prior": {"warm_start_seed": OTHER_SEED, "k": PRIOR_K, "weight": PRIOR_WEIGHT,
                  "weights_hash": prior_meta.get("weights_hash"),
                  "samples": int(prior_table["k"].sum()),
                  "agreement_vs_reference": float(np.mean(
                      ((prior_table["pass_rate"] >= rule.lo) & (prior_table["pass_rate"] <= rule.hi)).to_numpy()
                      == truth)),
                  "mean_pass_rate": float(prior_table["pass_rate"].mean())},
        "offset_fitted": offsets, "mean_pass_rate_reference": float(reference["pass_rate"].mean()),
        "warm_start": str(inp["policy"]), "goal": GOAL})
    return result


CONFIDENCES = (0.7, 0.8, 0.9, 0.95)  # Amendment 10's sweep of the stopping confidence (0.8: the default)
MATCHED_CHUNK = 64


def run_matched(quick: bool = False, workdir: str = "runs/bench-prior") -> dict:
    """Amendment 10: scratch and prior profiles (default screens, chunks of 64) at each stopping
    confidence of CONFIDENCES, and the samples each needs at the other's agreement at 0.8."""
    work = Path(workdir)
    inp = _inputs(quick, work)
    curves = {}
    for arm, with_prior in (("scratch", False), ("prior", True)):
        points = []
        for conf in CONFIDENCES:
            # confidence 0.8 is the default: the same file (and profile) as Amendment 9's run
            stem = f"{arm}_screen2-{inp['n']}-c{MATCHED_CHUNK}" + ("" if conf == 0.8 else f"-conf{conf}")
            settings = {"chunk_size": MATCHED_CHUNK, "screen_k": 2, **({} if conf == 0.8 else {"confidence": conf})}
            decided, spent, offset = _adaptive(inp, work, stem, settings, with_prior)
            points.append({"confidence": conf, "samples": spent, "offset": offset,
                           "agreement_vs_reference": float(np.mean(decided == inp["truth"]))})
        curves[arm] = points
    return {**matched_ratios(curves), "curves": curves, "problems": inp["n"], "chunk_size": MATCHED_CHUNK,
            "reference_k": inp["ref_k"], "warm_start": str(inp["policy"]), "goal": GOAL}


def matched_ratios(curves: dict[str, list[dict]]) -> dict:
    """Amendment 10's primary and secondary ratios (scratch samples over prior samples at one agreement)
    from the two curves; a ratio is None where the other curve does not bracket the agreement."""
    def point(arm):
        return next(p for p in curves[arm] if p["confidence"] == 0.8)

    def curve(arm):
        return [(p["samples"], p["agreement_vs_reference"]) for p in curves[arm]]

    prior, scratch = point("prior"), point("scratch")
    at_prior = samples_at_agreement(curve("scratch"), prior["agreement_vs_reference"])
    at_scratch = samples_at_agreement(curve("prior"), scratch["agreement_vs_reference"])
    primary = None if at_prior is None else at_prior / prior["samples"]
    return {"primary_ratio": primary, "scratch_samples_at_prior_agreement": at_prior,
            "secondary_ratio": None if at_scratch is None else scratch["samples"] / at_scratch,
            "prior_samples_at_scratch_agreement": at_scratch,
            "goal_met": None if primary is None else bool(primary >= GOAL["samples_ratio"])}


def run_fitted(quick: bool = False, workdir: str = "runs/bench-prior") -> dict:
    """Amendment 15: Amendment 10's prior curve (default screens, chunks of 64, the same confidences)
    with the prior's weight fitted to the profile's own samples as it goes (`grpo profile
    --fit-prior-weight`, cap FIT_CAP) instead of the fixed 4; the scratch curve is Amendment 10's
    (the same files). Primary: scratch's samples at the fitted profile's agreement at 0.8 over its
    samples (`matched_ratios`, goal >= 2); also the fixed-weight prior's curve, for the change."""
    from grpo_data.curriculum.priors import at_fitted_weight
    from grpo_data.tables.profile_table import read_profile

    work = Path(workdir)
    inp = _inputs(quick, work)
    curves = {}
    for arm, with_prior, fitted in (("scratch", False, False), ("prior_fixed4", True, False), ("prior", True, True)):
        points = []
        for conf in CONFIDENCES:
            name = {"scratch": "scratch", "prior_fixed4": "prior", "prior": "prior_fit"}[arm]
            stem = f"{name}_screen2-{inp['n']}-c{MATCHED_CHUNK}" + ("" if conf == 0.8 else f"-conf{conf}")
            settings = {"chunk_size": MATCHED_CHUNK, "screen_k": 2, **({} if conf == 0.8 else {"confidence": conf})}
            decided, spent, offset = _adaptive(inp, work, stem, settings, with_prior, fitted)
            point = {"confidence": conf, "samples": spent, "offset": offset,
                     "agreement_vs_reference": float(np.mean(decided == inp["truth"]))}
            if fitted:  # the weight the scheduler reads it at: fitted again on the profile's own counts
                got = read_profile(work / f"{stem}.parquet")[0].sort("id")
                point["weight"] = at_fitted_weight((got["n_correct"].to_numpy().astype(float),
                                                    got["k"].to_numpy().astype(float)), inp["fit_prior"]).weight
            points.append(point)
        curves[arm] = points
    fixed = matched_ratios({"scratch": curves["scratch"], "prior": curves["prior_fixed4"]})
    return {**matched_ratios(curves), "curves": curves, "fixed_weight_primary_ratio": fixed["primary_ratio"],
            "reference_fit": reference_weight_fit(inp["reference"], inp["fit_prior"]),
            "problems": inp["n"], "chunk_size": MATCHED_CHUNK, "reference_k": inp["ref_k"], "fit_cap": FIT_CAP,
            "warm_start": str(inp["policy"]), "goal": GOAL}


def reference_weight_fit(reference: pl.DataFrame, prior) -> dict:
    """The weight the same likelihood fits on the reference's own counts (k = 64 a problem, drawn
    apart from every adaptive profile): on all problems, on those the prior's model found all-right
    or all-wrong (rate 0 or 1), and on the rest; the offset fitted on them first (added after
    Amendment 15's run, as a diagnostic of its result, not part of its plan)."""
    from grpo_data.curriculum.priors import fit_logit_offset, fit_moved_weight

    c, k = reference["n_correct"].to_numpy().astype(float), reference["k"].to_numpy().astype(float)
    offset = fit_logit_offset(prior.rate, c, k)
    extreme = (prior.rate == 0) | (prior.rate == 1)
    out = {"offset": offset}
    for name, rows in (("all", np.ones(extreme.size, dtype=bool)), ("extreme", extreme), ("middle", ~extreme)):
        out[f"weight_{name}"] = fit_moved_weight(np.where(rows, prior.rate, np.nan), prior.k, c, k, offset, prior.weight)
        out[f"problems_{name}"] = int(rows.sum())
    return out
