"""Demo plots (PNG): estimated pass-rate histogram before/after training (with the run's band: the one
training used, or the one its trace measures for a sampler with none),
held-out accuracy against rollouts generated, band occupancy over training."""

from __future__ import annotations

from pathlib import Path


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def write_plots(run_dir: Path, before: Path, after: Path, out: Path) -> list[Path]:
    """The three PNGs into `out`. The pass-rate histogram is the report's (`pass_rate_figure`):
    estimated pass rates and the band of the run's resolved config."""
    from grpo_train.metrics import read_metrics
    from pipelines.report import pass_rate_figure, pool_levels, run_config, training_band

    plt = _plt()
    records = read_metrics(run_dir)
    evals = [r for r in records if r["kind"] == "eval"]
    trains = [r for r in records if r["kind"] == "train"]
    paths = []

    _, config = run_config(run_dir)
    fig = pass_rate_figure(before, after, training_band(config), pool_levels(config))
    paths.append(out / "pass_rate_before_after.png")
    fig.savefig(paths[-1], dpi=120)
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
    ax.plot([r["step"] for r in trains], [r.get("groups_in_band_share", float("nan")) for r in trains],
            label="in-band share (generated groups, observed)")
    ax.plot([r["step"] for r in trains], [r["band_occupancy"] for r in trains], label="scheduler's mean P(in band)",
            alpha=0.7)
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
