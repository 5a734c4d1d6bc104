"""Demo plots (PNG): pass-rate histogram before/after training, held-out accuracy against rollouts
generated, band occupancy over training."""

from __future__ import annotations

from pathlib import Path


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def write_plots(run_dir: Path, before: Path, after: Path, out: Path) -> list[Path]:
    from grpo_data.profiler import read_profile

    plt = _plt()
    from grpo_train.trainer import read_metrics

    records = read_metrics(run_dir)
    evals = [r for r in records if r["kind"] == "eval"]
    trains = [r for r in records if r["kind"] == "train"]
    paths = []

    b, _ = read_profile(before)
    a, _ = read_profile(after)
    fig, ax = plt.subplots(figsize=(6, 3.5), dpi=120)
    ax.hist([b["pass_rate"].to_numpy(), a["pass_rate"].to_numpy()], bins=10, range=(0, 1),
            label=["before training", "after training"], color=["#8c8c8c", "#4C72B0"])
    ax.axvspan(0.2, 0.8, color="#55A868", alpha=0.1, label="target band")
    ax.set_xlabel("pass rate (training pool)")
    ax.set_ylabel("problems")
    ax.legend()
    fig.tight_layout()
    paths.append(out / "pass_rate_before_after.png")
    fig.savefig(paths[-1])
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(6, 3.5), dpi=120)
    ax.plot([r["rollouts_generated"] for r in evals], [r["heldout_accuracy"] for r in evals], marker="o")
    ax.set_xlabel("rollouts generated")
    ax.set_ylabel("held-out accuracy")
    fig.tight_layout()
    paths.append(out / "heldout_vs_rollouts.png")
    fig.savefig(paths[-1])
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(6, 3.5), dpi=120)
    ax.plot([r["step"] for r in trains], [r["band_occupancy"] for r in trains], label="band occupancy")
    ax.plot([r["step"] for r in trains], [r["informative_rollout_ratio_step"] for r in trains],
            label="informative-rollout ratio", alpha=0.7)
    ax.set_xlabel("step")
    ax.set_ylim(0, 1.05)
    ax.legend()
    fig.tight_layout()
    paths.append(out / "band_occupancy.png")
    fig.savefig(paths[-1])
    plt.close(fig)
    return paths
