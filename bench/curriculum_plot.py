"""The curriculum benchmark's figure (`bench.curriculum_bench.assemble` draws it from a cell's result)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

COLORS = {"A": "#4C72B0", "A0": "#55A868", "B": "#DD8452", "P": "#8172B2", "S": "#C44E52", "R": "#937860",
          "A0p": "#1B7837", "Ap": "#08306B", "TS": "#17BECF", "SG": "#BCBD22"}


def plot(result: dict, path: Path) -> Path:
    """Three panels from the stored runs: test accuracy against charged tokens and against charged
    rollouts (one line per arm and seed), and the mixed-group share per pass over the pool per arm
    (mean over seeds): does uniform's waste grow as the pool is learned, does refresh keep A's band filled."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2), dpi=110)
    start = result.get("start")
    for seed, arms in result["per_arm"].items():
        for arm, r in arms.items():
            evals = [e for e in r["evals"] if e["step"] > 0 or start is None]
            if start is not None:  # every arm starts from the one evaluated start, at its profile's cost
                evals = [{**start, "total_tokens": r["profile"]["tokens"], "total_rollouts": r["profile"]["rollouts"]},
                         *evals]
            evals = [e for i, e in enumerate(evals) if i + 1 == len(evals) or evals[i + 1]["step"] != e["step"]]
            for ax, x in ((axes[0], "total_tokens"), (axes[1], "total_rollouts")):
                ax.plot([e[x] for e in evals], [e["heldout_accuracy"] for e in evals], color=COLORS.get(arm, "gray"),
                        marker="o", ms=3, alpha=0.7, label=arm if seed == next(iter(result["per_arm"])) else None)
    by_arm: dict[str, list[list[float]]] = {}
    for arms in result["per_arm"].values():
        for arm, r in arms.items():
            by_arm.setdefault(arm, []).append([p["mixed"] for p in r["waste_per_pass"]])
    for arm, rows in by_arm.items():
        n = min(len(x) for x in rows)
        axes[2].plot(range(1, n + 1), np.mean([x[:n] for x in rows], axis=0), color=COLORS.get(arm, "gray"),
                     marker="o", label=arm)
    axes[0].set_xlabel("generated tokens, charged (training + screens + refresh + profile)")
    axes[1].set_xlabel("rollouts, charged")
    for ax in axes[:2]:
        ax.set_ylabel(f"{result.get('split', 'test')} accuracy (k = 4; k = 32 at the start and the end)")
    axes[2].set_xlabel("pass over the pool (pool x G rollouts)")
    axes[2].set_ylabel("mixed (informative) share of generated groups")
    for ax in axes:
        ax.legend(fontsize=8)
    fig.suptitle(f"curriculum benchmark, {result['regime']} / {result['condition']} / {result.get('split', 'test')} "
                 "split: each line one seed")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path
