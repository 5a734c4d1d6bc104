"""A pipeline's closing summary: test accuracy before and after training (with the paired gain and
its SE), the training pool's estimated pass rates before and after, and the warm start's identity;
as a dict (`summary.json`) and as the markdown table `grpo demo` prints (`summary.md`).
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl


def summarize(run_dir: Path, before: Path, after: Path, train: Path, band: tuple[float, float],
              profile_charged: bool = True) -> dict:
    """Test accuracy before/after (overall, by level) and the training pool's pass rates before and
    after: mean posterior estimate and the share estimated inside the band training used.
    profile_charged: whether training started from the `before` profile (its samples count in the
    run's total) or the profile was measurement only, taken after training (`for_training: false`)."""
    from grpo_data.curriculum.estimates import profile_estimates
    from grpo_data.tables.profile_table import read_profile
    from grpo_train.metrics import read_metrics

    records = read_metrics(run_dir)
    evals = [r for r in records if r["kind"] == "eval"]
    trains = [r for r in records if r["kind"] == "train"]
    first, last = evals[0], evals[-1]
    levels = sorted(int(k.rsplit("_", 1)[1]) for k in first if k.startswith("heldout_accuracy_level_"))
    problems = pl.read_parquet(train)
    with_levels = problems if "level" in problems.columns else None
    before_table = read_profile(before)[0]
    b = profile_estimates(before_table, with_levels)
    a = profile_estimates(read_profile(after)[0], with_levels)

    def in_band(t):
        return float(((t["p_est"] >= band[0]) & (t["p_est"] <= band[1])).mean())

    gain = None
    files = [run_dir / "evals" / f"step-{e['step']:06d}.parquet" for e in (first, last)]
    if first["step"] != last["step"] and all(f.exists() for f in files):
        from grpo_train.metrics import paired_gain

        gain = paired_gain(*(pl.read_parquet(f) for f in files))
    return {"paired_gain": gain,
        "heldout_before": first["heldout_accuracy"], "heldout_after": last["heldout_accuracy"],
        "heldout_se_after": last.get("heldout_accuracy_se"),
        "heldout_by_level": {lv: (first[f"heldout_accuracy_level_{lv}"], last[f"heldout_accuracy_level_{lv}"])
                             for lv in levels},
        "steps": trains[-1]["step"] if trains else 0,
        "rollouts_generated": trains[-1]["rollouts_generated"] if trains else 0,
        "profile_samples": int(before_table["k"].sum()), "profile_charged": profile_charged,
        "informative_rollout_ratio": trains[-1]["informative_rollout_ratio"] if trains else 0.0,
        "train_pass_rate_before": float(b["p_est"].mean()), "train_pass_rate_after": float(a["p_est"].mean()),
        "band": list(band), "in_band_share_before": in_band(b), "in_band_share_after": in_band(a),
    }


def warm_start_identity(model: str | Path) -> dict | None:
    """A built warm start's weights hash (the one profiles and cards print) and whether its CPU
    kernels were pinned (bootstrap.json), so a user can tell whether the policy their machine built
    is the one the README's figures started from; None for a model given by the user."""
    from grpo_data.profile_metadata import weights_hash

    meta = Path(model) / "bootstrap.json"
    if not meta.exists():
        return None
    kernels = json.loads(meta.read_text()).get("kernels") or {}
    return {"weights_hash": weights_hash(str(model)), "kernels_pinned": kernels.get("pinned")}


def summary_table(s: dict) -> str:
    lines = ["| test accuracy | before | after |", "| --- | --- | --- |",
             f"| all | {s['heldout_before']:.3f} | {s['heldout_after']:.3f} (+- {s.get('heldout_se_after') or 0:.3f} SE) |"]
    g = s.get("paired_gain")
    if g:  # the gain's own SE: paired per problem, far below either accuracy's
        k = g["k_first"] if g["k_first"] == g["k_last"] else f"{g['k_first']} and {g['k_last']}"
        lines.append(f"| gain, paired over {g['problems']} problems (k = {k}) | | {g['mean']:+.3f} +- {g['se']:.3f} SE "
                     f"({g['mean'] / g['se'] if g['se'] else float('inf'):.1f} SE) |")
    lines += [f"| level {lv} | {b:.3f} | {a:.3f} |" for lv, (b, a) in s["heldout_by_level"].items()]
    if s.get("profile_charged", True):
        spent = (f"{s['rollouts_generated']} in training + {s['profile_samples']} in the offline profile = "
                 f"{s['rollouts_generated'] + s['profile_samples']}")
    else:  # the warm start's profile was taken after training, for this table only
        spent = (f"{s['rollouts_generated']} (training used no profile; the {s['profile_samples']} samples of the "
                 "warm start's profile below were drawn after it, as measurement)")
    lines += ["", f"steps: {s['steps']}, rollouts generated: {spent}, "
              f"informative-rollout ratio: {s['informative_rollout_ratio']:.3f}",
              f"training pool, mean estimated pass rate: {s['train_pass_rate_before']:.3f} -> "
              f"{s['train_pass_rate_after']:.3f}; in-band share of the pool (estimated pass rate in {s['band']}): "
              f"{s['in_band_share_before']:.3f} -> "
              f"{s['in_band_share_after']:.3f}"]
    ws = s.get("warm_start") or {}
    if ws.get("weights_hash"):
        lines.append(f"warm start: weights hash {ws['weights_hash']}, CPU kernels "
                     f"{'pinned to their AVX2 paths' if ws['kernels_pinned'] else 'not pinned (weights depend on this CPU)'}")
    return "\n".join(lines) + "\n"
