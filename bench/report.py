"""Summarize bench/results/*.json into bench/README.md (with the machine each ran on)."""

from __future__ import annotations

import json
from pathlib import Path

from bench.common import RESULTS
from grpo_data import io


def _fmt(x) -> str:
    if isinstance(x, float):
        return f"{x:.3g}"
    return str(x)


def summary_lines(name: str, r: dict) -> list[str]:
    if name == "verify":
        return [f"- clean: {_fmt(r['clean']['verdicts_per_s'])} verdicts/s (goal >= 500)",
                f"- 5% adversarial mix: {_fmt(r['adversarial_mix']['verdicts_per_s'])} verdicts/s, "
                f"slowdown {_fmt(r['slowdown_mixed_vs_clean'])}x (goal <= 2x); workers replaced: {r['workers_replaced']}"]
    if name == "scheduler":
        sim, t = r["simulation"], r["timing"]
        lines = [f"- {arm}: rollouts to target {_fmt(a['rollouts_to_target'])}, informative-rollout ratio "
                 f"{_fmt(a['informative_rollout_ratio'])}" for arm, a in sim["arms"].items()]
        u = sim["arms"]["uniform"]
        lines.append(f"- uniform zero-variance rate {_fmt(u['zero_variance_rate'])} vs analytic p^G+(1-p)^G "
                     f"{_fmt(u['zero_variance_analytic'])}")
        lines.append(f"- band vs uniform+DAPO: {_fmt(sim['band_vs_dapo_rollout_ratio'])}x fewer rollouts (goal >= 3x)")
        lines.append(f"- sample(512)+update on {t['pool']:,} problems: mean {_fmt(t['mean_ms'])} ms, median "
                     f"{_fmt(t['median_ms'])} ms (goal <= 5 ms)")
        return lines
    return [f"- {k}: {_fmt(v)}" for k, v in r.items() if isinstance(v, (int, float, str)) and k != "benchmark"]


def write_readme(out_dir: Path | None = None) -> Path:
    folder = out_dir or RESULTS
    parts = ["# Benchmarks", "", "Written by `grpo bench all` (`make bench`) from `bench/results/*.json`.",
             "Each result file records the machine it ran on; ratios are measured within one run.", ""]
    for path in sorted(folder.glob("*.json")):
        r = json.loads(path.read_text())
        m = r.get("machine", {})
        parts += [f"## {r.get('benchmark', path.stem)}", "",
                  f"Machine: {m.get('cpu_model', m.get('processor'))}, {m.get('cpus')} CPUs, {m.get('mem_total')}; "
                  f"finished {r.get('finished')}.", ""]
        parts += summary_lines(r.get("benchmark", path.stem), r) + [""]
    return io.write_text(folder.parent / "README.md", "\n".join(parts))
