"""`grpo report`: a self-contained page from a run folder, every panel drawn from the metrics, and a
real render in headless Chromium where it is installed."""

import base64
import json
import re
import subprocess
import sys

import numpy as np
import polars as pl
import pytest
import yaml

from pipelines.report import find_chromium, screenshot, write_report


def fake_run(folder, steps=30, warn_at=22):
    """A run folder as `grpo train` writes it, with a KL blow-up warning and two evaluations."""
    rng = np.random.default_rng(0)
    folder.mkdir(parents=True)
    records = [{"kind": "eval", "step": 0, "rollouts_generated": 0, "heldout_accuracy": 0.41, "heldout_accuracy_se": 0.01,
                "heldout_problems": 80, "eval_k": 4, "heldout_pass_at_4": 0.6, "heldout_maj_at_4": 0.45,
                "heldout_accuracy_level_1": 0.9, "heldout_accuracy_level_2": 0.2}]
    for step in range(1, steps + 1):
        r = {"kind": "train", "step": step, "rollouts_generated": 200 * step, "reward_mean": 0.5 + rng.normal(0, 0.05),
             "batch_pass_rate": 0.5, "informative_rollout_ratio_step": 0.8, "informative_rollout_ratio": 0.79,
             "zero_variance_fraction": 0.2, "band_lo": 0.2, "band_hi": 0.95, "band_occupancy": 0.4,
             "kl": 0.01 if step < warn_at else 0.4, "entropy": 1.0, "completion_len_mean": 20.0, "completion_len_max": 31,
             "truncated_fraction": 0.01, "grad_norm": 1.0, "clip_fraction": 0.02, "lr": 1e-4,
             "sched_band_dry": float(step > 20), "sched_dry_fills": 3 * max(0, step - 20), "sched_epoch": step // 5}
        if step >= warn_at:
            r["diag_kl_blowup"] = 1.0
        if step == warn_at:
            r["warnings"] = [{"name": "kl_blowup", "message": "KL blow-up: KL to the reference 0.4 <per token>. Try: x"}]
        records.append(r)
    records.append({**records[0], "step": steps, "rollouts_generated": 200 * steps, "heldout_accuracy": 0.52})
    (folder / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    (folder / "resolved_config.yaml").write_text(yaml.safe_dump({"scheduler": {"name": "band", "lo": 0.25, "hi": 0.9}}))
    return folder


def profile(path, rates, k=8):
    from grpo_data.profile_chunks import summarize_problem

    rows = [{"id": f"p{i}", **summarize_problem(int(round(r * k)), k, [10] * k, 0, {})} for i, r in enumerate(rates)]
    pl.DataFrame(rows).write_parquet(path)
    return path


def test_report_is_one_self_contained_page(tmp_path):
    run = fake_run(tmp_path / "demo" / "train")
    profile(tmp_path / "demo" / "profile.parquet", np.linspace(0, 1, 50))
    profile(tmp_path / "demo" / "profile-after.parquet", np.linspace(0.2, 1, 50))
    page = write_report(run).read_text()
    images = re.findall(r'src="data:image/png;base64,([^"]+)"', page)
    # reward, accuracy, pass rates, band, the band's use of the pool, KL/entropy, length, truncation, optimizer, warnings
    assert len(images) == 10  # the pool-use panel draws from the logged sched_dry_fills / sched_epoch
    assert all(base64.b64decode(img)[:8] == b"\x89PNG\r\n\x1a\n" for img in images)
    assert "src=\"http" not in page and "<script" not in page  # nothing fetched, nothing run
    assert "0.410 -&gt; 0.520" in page and "pass@4" in page and "maj@4" in page
    assert "<td>22</td><td>kl_blowup</td>" in page and "&lt;per token&gt;" in page  # messages escaped
    assert "lo: 0.25" in page  # the resolved config
    assert "no profiles" not in page  # found beside the run, as the demo lays them out



def test_report_shows_a_heldout_regression_from_an_evaluation(tmp_path):
    run = fake_run(tmp_path / "run")
    lines = (run / "metrics.jsonl").read_text().splitlines()
    last = json.loads(lines[-1])
    last.update(heldout_accuracy=0.30, diag_heldout_regression=1.0,
                warnings=[{"name": "heldout_regression", "message": "held-out regression: accuracy fell from 0.410"}])
    (run / "metrics.jsonl").write_text("\n".join([*lines[:-1], json.dumps(last)]) + "\n")
    page = write_report(run).read_text()
    assert "<td>30</td><td>heldout_regression</td><td>held-out regression: accuracy fell from 0.410" in page
    assert "<th>health warnings</th><td>2</td>" in page  # the KL blow-up and the regression

def test_report_says_what_is_missing(tmp_path):
    run = fake_run(tmp_path / "train")
    lines = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    for r in lines:
        r.pop("kl", None)
    (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    page = write_report(run).read_text()
    assert "not logged by this run: kl" in page and "no profiles at" in page
    with pytest.raises(FileNotFoundError, match="metrics.jsonl is missing"):
        write_report(tmp_path / "nothing")


def test_grpo_report_command(tmp_path):
    run = fake_run(tmp_path / "train")
    proc = subprocess.run([sys.executable, "-m", "pipelines.cli", "report", str(run), "--out", str(tmp_path / "r.html")],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert f"report -> {tmp_path / 'r.html'}" in proc.stdout and (tmp_path / "r.html").exists()


@pytest.mark.skipif(find_chromium() is None, reason="Chromium is not installed (Debian: apt-get install chromium)")
def test_report_renders_in_headless_chromium(tmp_path):
    """The page displays: down the whole screenshot, every plot shows as its own band of coloured
    pixels (lines, bars, markers); the same page with its images removed (what broken images look
    like) has none."""
    from PIL import Image

    run = fake_run(tmp_path / "train")
    page = write_report(run)
    stripped = tmp_path / "stripped.html"
    stripped.write_text(re.sub(r'<img alt="" src="data:image/png;base64,[^"]+">', "", page.read_text()))

    def colored_bands(path):
        """Vertical bands of rows holding coloured pixels, separated by 40+ rows without any."""
        rgb = np.asarray(Image.open(screenshot(path, path.with_suffix(".png"), height=6000)).convert("RGB")).astype(int)
        assert rgb.shape == (6000, 1100, 3)
        rows = np.flatnonzero(((rgb.max(-1) - rgb.min(-1)) > 40).sum(1) > 3)
        return 0 if rows.size == 0 else 1 + int((np.diff(rows) > 40).sum())

    assert colored_bands(page) >= 8  # reward, accuracy, band, KL/entropy, length, truncation, optimizer, warnings
    assert colored_bands(stripped) == 0


def test_a_cut_off_last_metrics_line_is_dropped_and_a_damaged_file_refused(tmp_path):
    from grpo_train.metrics import read_metrics

    run = fake_run(tmp_path / "train")
    text = (run / "metrics.jsonl").read_text()
    (run / "metrics.jsonl").write_text(text + '{"kind": "train", "st')  # a crash mid-write
    assert len(read_metrics(run)) == len(text.splitlines())
    (run / "metrics.jsonl").write_text('{"kind": "tr\n' + text)
    with pytest.raises(ValueError, match="line 1 is not JSON"):
        read_metrics(run)


def test_pass_rate_plots_draw_estimates_and_the_runs_training_band(tmp_path):
    """The demo's pass-rate PNG and the report's panel are one figure: estimated pass rates (per level
    when the run's data.train has levels) and the band of the run's resolved config, not 0.2-0.8."""
    import matplotlib.pyplot as plt

    from grpo_data.curriculum.estimates import profile_estimates
    from grpo_data.tables.profile_table import read_profile
    from pipelines.plots import write_plots
    from pipelines.report import pass_rate_figure, pool_levels, run_config, training_band

    run = fake_run(tmp_path / "demo" / "train")
    before = profile(tmp_path / "demo" / "profile.parquet", np.r_[np.zeros(40), np.linspace(0, 1, 10)], k=2)
    after = profile(tmp_path / "demo" / "profile-after.parquet", np.linspace(0.2, 1, 50))
    pl.DataFrame({"id": [f"p{i}" for i in range(50)], "level": [1] * 40 + [2] * 10}).write_parquet(tmp_path / "train.parquet")
    config = yaml.safe_load((run / "resolved_config.yaml").read_text())
    config["data"] = {"train": str(tmp_path / "train.parquet")}
    (run / "resolved_config.yaml").write_text(yaml.safe_dump(config))
    _, config = run_config(run)
    assert training_band(config) == (0.25, 0.9) and training_band({}) == (0.2, 0.8)  # the trainer's defaults
    levels = pool_levels(config)
    assert levels is not None and pool_levels({}) is None
    fig = pass_rate_figure(before, after, training_band(config), levels)
    ax = fig.axes[0]
    span = [p for p in ax.patches if p.get_label().startswith("training band")]
    assert len(span) == 1 and (span[0].get_bbox().x0, span[0].get_bbox().x1) == pytest.approx((0.25, 0.9))
    bars = [p for p in ax.patches if p not in span]  # 20 bins before, then 20 after
    for i, path in enumerate((before, after)):
        table, _ = read_profile(path)
        want, _ = np.histogram(profile_estimates(table, levels)["p_est"].to_numpy(), bins=20, range=(0, 1))
        assert [round(b.get_height()) for b in bars[20 * i:20 * (i + 1)]] == want.tolist()
    # estimates, not the raw n_correct / k of 2-sample screens (which fill only the bins at 0, 0.5 and 1)
    raw, _ = np.histogram(read_profile(before)[0]["pass_rate"].to_numpy(), bins=20, range=(0, 1))
    assert [round(b.get_height()) for b in bars[:20]] != raw.tolist()
    plt.close(fig)
    paths = write_plots(run, before, after, tmp_path / "demo")
    assert [p.name for p in paths][0] == "pass_rate_before_after.png" and paths[0].stat().st_size > 1000


def test_the_learning_rate_has_an_axis_of_its_own():
    """lr (3e-5) beside gradient norms (~1): on the left axis it would be a flat line at zero."""
    import matplotlib.pyplot as plt

    from pipelines.report import OPTIMIZER_PANEL, lines_figure

    records = [{"kind": "train", "step": s, "grad_norm": 1.0 + s, "clip_fraction": 0.1, "lr": 3e-5 * s / 4}
               for s in range(1, 5)]
    fig, drawn, missing = lines_figure("optimizer", records, **OPTIMIZER_PANEL)
    try:
        left, right = fig.axes
        assert drawn == 3 and missing == []
        assert [line.get_label() for line in left.get_lines()] == ["gradient norm", "clip fraction"]
        [lr] = right.get_lines()
        assert lr.get_label() == "learning rate" and right.get_ylabel() == "learning rate"
        assert right.get_ylim()[1] < 1e-4 < left.get_ylim()[1]  # each on its own scale
        assert {t.get_text() for t in left.get_legend().get_texts()} == {"gradient norm", "clip fraction",
                                                                         "learning rate"}
    finally:
        plt.close(fig)


def test_reading_a_run_loads_no_torch():
    """The report, the plots and the metrics readers read a run without the learner's engines."""
    code = ("import sys; import pipelines.report, pipelines.plots, grpo_train.metrics; "
            "print(sorted(m for m in ('torch', 'deepspeed', 'vllm') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
