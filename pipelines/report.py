"""`grpo report RUN_DIR`: one self-contained HTML page for a training run (images embedded), readable
without TensorBoard: the summary, reward and informative-rollout ratio, held-out accuracy overall
and by level, pass-rate histograms before and after (when profiles are given or sit beside the run,
as the demo writes them), the band over time, KL, entropy, completion length and truncation, the
optimizer, the health warnings on a timeline, and the resolved config.

    path = write_report("runs/demo/train", before="runs/demo/profile.parquet", after="runs/demo/profile-after.parquet")
    png = screenshot(path, "report.png")   # headless Chromium, where it is installed

Every figure is drawn from `metrics.jsonl` and `resolved_config.yaml`; a panel whose metrics the
run did not log says so instead of drawing an empty axis.
"""

from __future__ import annotations

import base64
import html
import io as bytes_io
import shutil
import subprocess
from pathlib import Path

import polars as pl
import yaml

from grpo_data.tables import io
from grpo_train.metrics import read_metrics

COLORS = ("#4C72B0", "#DD8452", "#55A868", "#C44E52", "#8172B3", "#937860", "#DA8BC3", "#8C8C8C", "#CCB974")


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _png(fig) -> str:
    """The figure as an <img> with its PNG inlined."""
    buf = bytes_io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    _plt().close(fig)
    return f'<img alt="" src="data:image/png;base64,{base64.b64encode(buf.getvalue()).decode()}">'


def _series(records: list[dict], key: str, x: str = "step") -> tuple[list, list]:
    pts = [(r[x], r[key]) for r in records if isinstance(r.get(key), (int, float)) and r.get(x) is not None]
    return [p[0] for p in pts], [p[1] for p in pts]


def lines_figure(title: str, records: list[dict], keys: dict[str, str], x: str = "step", ylabel: str = "",
                 ylim: tuple[float, float] | None = None, right: dict[str, str] | None = None,
                 right_label: str = ""):
    """One panel of lines, key -> label, and the keys it found nothing for; `right` keys go on an axis
    of their own at the right (a quantity of another scale, such as the learning rate beside the
    gradient norm, would be a flat line at zero on the left one)."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6.4, 3.2))
    twin = ax.twinx() if right else None
    drawn, missing, handles = 0, [], []
    series = [(key, label, ax) for key, label in keys.items()] + [(key, label, twin) for key, label in (right or {}).items()]
    for (key, label, axis), color in zip(series, COLORS, strict=False):
        xs, ys = _series(records, key, x)
        if xs:
            handles += axis.plot(xs, ys, label=label, color=color, lw=1.4, ls="--" if axis is twin else "-")
            drawn += 1
        else:
            missing.append(key)
    ax.set_title(title, fontsize=10)
    ax.set_xlabel("rollouts generated" if x == "rollouts_generated" else x)
    ax.set_ylabel(ylabel)
    if twin is not None:
        twin.set_ylabel(right_label)
    if ylim:
        ax.set_ylim(*ylim)
    if drawn:
        ax.legend(handles=handles, fontsize=7)
    fig.tight_layout()
    return fig, drawn, missing


def _lines(title: str, records: list[dict], keys: dict[str, str], x: str = "step", ylabel: str = "",
           ylim: tuple[float, float] | None = None, right: dict[str, str] | None = None,
           right_label: str = "") -> str:
    """One panel of lines (`lines_figure`) as HTML; missing keys are listed under the panel."""
    fig, drawn, missing = lines_figure(title, records, keys, x, ylabel, ylim, right, right_label)
    note = f'<p class="note">not logged by this run: {", ".join(missing)}</p>' if missing else ""
    if not drawn:
        _plt().close(fig)
    return (_png(fig) if drawn else f'<p class="note">{html.escape(title)}: nothing logged</p>') + note


OPTIMIZER_PANEL = {"keys": {"grad_norm": "gradient norm", "clip_fraction": "clip fraction"},
                   "right": {"lr": "learning rate"}, "right_label": "learning rate"}


def accuracy_panel(evals: list[dict]) -> str:
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6.4, 3.2))
    xs, ys = _series(evals, "heldout_accuracy", "rollouts_generated")
    se = [r.get("heldout_accuracy_se", 0.0) for r in evals if "heldout_accuracy" in r]
    ax.errorbar(xs, ys, yerr=se, color="black", lw=2, marker="o", ms=3, capsize=2, label="all (mean@k, +-1 SE)")
    levels = sorted({k for r in evals for k in r if k.startswith("heldout_accuracy_level_")},
                    key=lambda k: int(k.rsplit("_", 1)[1]) if k.rsplit("_", 1)[1].isdigit() else 0)
    for key, color in zip(levels, COLORS * 3, strict=False):
        lx, ly = _series(evals, key, "rollouts_generated")
        ax.plot(lx, ly, color=color, lw=1, alpha=0.8, label=key.replace("heldout_accuracy_", ""))
    ax.set_title("held-out accuracy against rollouts generated", fontsize=10)
    ax.set_xlabel("rollouts generated")
    ax.set_ylim(-0.02, 1.02)
    ax.legend(fontsize=6, ncol=3)
    fig.tight_layout()
    return _png(fig)


def training_band(config: dict) -> tuple[float, float]:
    """The scheduler's band in a resolved train config (the trainer's defaults where it names none)."""
    from grpo_train.config import SchedulerSection

    sched = config.get("scheduler") or {}
    return float(sched.get("lo", SchedulerSection.lo)), float(sched.get("hi", SchedulerSection.hi))


def pool_levels(config: dict) -> pl.DataFrame | None:
    """(id, level) of the training pool a resolved train config names (`data.train`), or None when
    that file is not here or has no levels: the estimates then use one pool prior."""
    train = (config.get("data") or {}).get("train")
    if not train or not Path(train).is_file():
        return None
    table = pl.read_parquet(train)
    return table.select("id", "level") if "level" in table.columns else None


def pass_rate_figure(before: Path, after: Path, band: tuple[float, float], levels: pl.DataFrame | None = None):
    """Histograms of the estimated pass rate (`p_est`: posterior mean under the empirical-Bayes prior
    fitted to each profile, per level when `levels` (id, level) are given; see grpo_data.curriculum.estimates)
    of the training pool before and after, with the band training used."""
    from grpo_data.curriculum.estimates import by_level, profile_estimates
    from grpo_data.tables.profile_table import read_profile

    plt = _plt()
    fig, ax = plt.subplots(figsize=(6.4, 3.2))
    data, labels = [], []
    prior = "per-level prior" if levels is not None else "pool prior"
    for path, label in ((before, "before training"), (after, "after training")):
        table, meta = read_profile(path)
        data.append(profile_estimates(table, levels, by_level(meta))["p_est"].to_numpy())
        labels.append(f"{label} ({prior}, k {int(table['k'].min())}-{int(table['k'].max())})")
    ax.hist(data, bins=20, range=(0, 1), label=labels, color=["#8c8c8c", "#4C72B0"])
    ax.axvspan(*band, color="#55A868", alpha=0.12, label=f"training band [{band[0]:g}, {band[1]:g}]")
    ax.set_xlabel("estimated pass rate (training pool)")
    ax.set_ylabel("problems")
    ax.set_title("pass rates before and after", fontsize=10)
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def run_config(run_dir: Path) -> tuple[str, dict]:
    """The run's resolved_config.yaml: its text and the parsed tree ("" and {} when missing)."""
    path = run_dir / "resolved_config.yaml"
    text = path.read_text() if path.exists() else ""
    return text, yaml.safe_load(text) or {}


def warnings_panel(trains: list[dict]) -> str:
    """Each detector's on-steps as a bar, its warnings as markers; and the messages as a table.
    `trains` may hold evaluation records too: the held-out regression check marks those."""
    from grpo_train.diagnostics import DETECTORS

    plt = _plt()
    names = [*DETECTORS, "heldout_regression"]
    fig, ax = plt.subplots(figsize=(6.4, 0.35 * len(names) + 1.0))
    for row, name in enumerate(names):
        on = [r["step"] for r in trains if r.get(f"diag_{name}")]
        ax.scatter(on, [row] * len(on), marker="s", s=12, color="#C44E52", alpha=0.35)
        fired = [r["step"] for r in trains for w in r.get("warnings", []) if w["name"] == name]
        ax.scatter(fired, [row] * len(fired), marker="v", s=60, color="#C44E52")
    ax.set_yticks(range(len(names)), names, fontsize=7)
    ax.set_xlim(0, max([r["step"] for r in trains] + [1]) + 1)
    ax.set_xlabel("step")
    ax.set_title("health warnings (triangle: warned; squares: condition on)", fontsize=10)
    fig.tight_layout()
    rows = "".join(f"<tr><td>{r['step']}</td><td>{html.escape(w['name'])}</td><td>{html.escape(w['message'])}</td></tr>"
                   for r in trains for w in r.get("warnings", []))
    table = (f"<table><tr><th>step</th><th>detector</th><th>what it saw and what to try</th></tr>{rows}</table>"
             if rows else '<p class="note">no warnings: every detector stayed quiet</p>')
    return _png(fig) + table


def summary_rows(trains: list[dict], evals: list[dict]) -> list[tuple[str, str]]:
    last, first = (trains[-1] if trains else {}), (evals[0] if evals else {})
    final = evals[-1] if evals else {}
    rows = [("steps", str(last.get("step", 0))), ("rollouts generated", f"{last.get('rollouts_generated', 0):,}"),
            ("informative-rollout ratio (whole run)", f"{last.get('informative_rollout_ratio', float('nan')):.3f}")]
    if evals:
        rows.append(("held-out accuracy, first -> last evaluation",
                     f"{first['heldout_accuracy']:.3f} -> {final['heldout_accuracy']:.3f} "
                     f"(+-{final.get('heldout_accuracy_se', float('nan')):.3f} SE, {final.get('heldout_problems')} problems, "
                     f"k = {final.get('eval_k', '?')})"))
        extra = [k for k in final if k.startswith(("heldout_pass_at_", "heldout_maj_at_"))]
        rows += [(k.replace("heldout_", "").replace("_at_", "@"), f"{first.get(k, float('nan')):.3f} -> {final[k]:.3f}")
                 for k in extra]
    rows.append(("health warnings", str(sum(len(r.get("warnings", [])) for r in trains + evals))))
    return rows


def write_report(run_dir: str | Path, before: str | Path | None = None, after: str | Path | None = None,
                 out: str | Path | None = None) -> Path:
    """RUN_DIR/report.html (or `out`). Profiles default to the demo's layout beside the run folder
    (../profile.parquet, ../profile-after.parquet) when those exist."""
    run_dir = Path(run_dir)
    records = read_metrics(run_dir)
    if not records:
        raise FileNotFoundError(f"{run_dir}/metrics.jsonl is missing or empty: is {run_dir} a `grpo train` run folder?")
    trains = [r for r in records if r["kind"] == "train"]
    evals = [r for r in records if r["kind"] == "eval"]
    config_text, config = run_config(run_dir)
    before = Path(before) if before else run_dir.parent / "profile.parquet"
    after = Path(after) if after else run_dir.parent / "profile-after.parquet"

    sections = [("Summary", "<table>" + "".join(f"<tr><th>{html.escape(k)}</th><td>{html.escape(v)}</td></tr>"
                                                for k, v in summary_rows(trains, evals)) + "</table>")]
    sections.append(("Reward and informative rollouts", _lines("reward and signal per step", trains, {
        "reward_mean": "reward (kept answers)", "batch_pass_rate": "pass rate (all generated)",
        "informative_rollout_ratio_step": "informative-rollout ratio (step)",
        "groups_all_right_share": "all-right groups (of those generated)",
        "groups_all_wrong_share": "all-wrong groups (of those generated)"}, ylim=(-0.02, 1.02))))
    sections.append(("Held-out accuracy", accuracy_panel(evals) if evals else '<p class="note">no evaluations logged</p>'))
    if before.exists() and after.exists():
        sections.append(("Pass rates before and after",
                         _png(pass_rate_figure(before, after, training_band(config), pool_levels(config)))))
    else:
        sections.append(("Pass rates before and after", f'<p class="note">no profiles at {html.escape(str(before))} and '
                         f'{html.escape(str(after))}: pass --before/--after</p>'))
    sections.append(("Band over time", _lines("the scheduler's band", trains, {
        "band_lo": "band low", "band_hi": "band high",
        "groups_in_band_share": "in-band share: generated groups whose pass rate lies in the band (observed)",
        "band_occupancy": "the scheduler's estimate: mean P(in band) of the problems it chose",
        "sched_band_dry": "dry (1: too few problems likely in band; the batch is filled by expected informativeness)"},
        ylim=(-0.02, 1.02))
        + _lines("the band's use of the pool (cumulative)", trains, {
            "sched_dry_fills": "batch slots filled by expected informativeness (dry band)",
            "sched_epoch": "band epochs (every problem likely in band offered once)"})))
    sections.append(("KL and entropy", _lines("KL to the reference and entropy (per token)", trains, {
        "kl": "KL (k3)", "entropy": "entropy", "kl_beta": "KL coefficient",
        "distinct_wrong_ratio": "distinct wrong answers per group"})))
    sections.append(("Completion length and truncation",
                     _lines("completion length (tokens)", trains, {"completion_len_mean": "mean", "completion_len_max": "max"})
                     + _lines("truncation and format", trains, {"truncated_fraction": "truncated (hit max_tokens)",
                                                                "format_rate": "in the requested format"}, ylim=(-0.02, 1.02))))
    sections.append(("Optimizer", _lines("optimizer", trains, **OPTIMIZER_PANEL)))
    sections.append(("Health warnings", warnings_panel(sorted(trains + evals, key=lambda r: r["step"]))))
    sections.append(("Resolved config", f"<pre>{html.escape(config_text)}</pre>"))
    body = "".join(f'<section><h2>{html.escape(title)}</h2>{content}</section>' for title, content in sections)
    page = f"""<!doctype html><html><head><meta charset="utf-8"><title>GRPO run report: {html.escape(str(run_dir))}</title>
<style>body{{font-family:sans-serif;max-width:1000px;margin:2em auto;color:#222}} img{{max-width:100%}}
table{{border-collapse:collapse;font-size:13px}} td,th{{border:1px solid #ddd;padding:3px 8px;text-align:left}}
.note{{color:#777;font-size:12px}} pre{{background:#f6f6f6;padding:8px;font-size:11px;overflow:auto}}</style></head>
<body><h1>GRPO run report</h1><p class="note">{html.escape(str(run_dir.resolve()))}</p>{body}</body></html>"""
    path = Path(out) if out else run_dir / "report.html"
    io.write_text(path, page)
    return path


def find_chromium() -> str | None:
    return next((p for p in (shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome")) if p), None)


def screenshot(html_path: str | Path, png: str | Path, width: int = 1100, height: int = 4200, timeout_s: int = 120) -> Path:
    """Render the page in headless Chromium and save a screenshot (raises when Chromium is missing
    or fails, with its output)."""
    chromium = find_chromium()
    if chromium is None:
        raise FileNotFoundError("no Chromium found: install it (Debian: apt-get install chromium) to render the report")
    png = Path(png).resolve()
    proc = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                           f"--window-size={width},{height}", f"--screenshot={png}",
                           Path(html_path).resolve().as_uri()], capture_output=True, text=True, timeout=timeout_s)
    if proc.returncode != 0 or not png.exists():
        raise RuntimeError(f"chromium failed (exit {proc.returncode}): {proc.stderr[-2000:]}")
    return png
