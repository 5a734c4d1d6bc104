"""Shards and cards: round trips per format, integrity checks, atomic writes, datasets loading."""

import numpy as np
import polars as pl
import pytest
import yaml

from grpo_data.tables import io as gio
from grpo_data.tables.cards import write_card
from grpo_data.tables.shards import (
    DEFAULT_EDGES,
    ShardIntegrityError,
    bucket_of,
    check_edges,
    read_manifest,
    read_shards,
    write_shards,
)


def make_problems(levels) -> pl.DataFrame:
    """A canonical problem table, one row per level given (shards need no real questions)."""
    n = len(levels)
    return pl.DataFrame({"id": [f"p{i:04d}" for i in range(n)], "source": "test",
                         "prompt": [[{"role": "user", "content": f"question {i}"}] for i in range(n)],
                         "answer": [str(i) for i in range(n)], "level": list(levels), "meta": "{}"},
                        schema_overrides={"level": pl.Int64})


def make_profile(problems: pl.DataFrame, c, k) -> pl.DataFrame:
    c, k = np.asarray(c), np.asarray(k)
    return pl.DataFrame({"id": problems["id"], "k": k, "n_correct": c, "pass_rate": c / k,
                         "ci_low": np.zeros(len(c)), "ci_high": np.ones(len(c))})


@pytest.fixture()
def problems_and_profile():
    problems = make_problems(np.repeat(np.arange(1, 9), 15))
    rng = np.random.default_rng(0)
    k = np.full(problems.height, 16)
    c = rng.integers(0, 17, problems.height)
    c[:10] = 0
    c[10:20] = 16
    profile = pl.DataFrame({"id": problems["id"], "k": k, "n_correct": c, "pass_rate": c / k,
                            "ci_low": np.zeros(problems.height), "ci_high": np.ones(problems.height)})
    return problems, profile.head(110)  # 10 problems never profiled


def test_bucketing_edges():
    edges = check_edges([0, 0.1, 0.3, 0.7, 0.9, 1])
    p = pl.Series([0.0, 0.05, 0.1, 0.5, 0.89, 0.9, 1.0])
    got = pl.select(bucket_of(pl.lit(p), edges)).to_series().to_list()
    assert got == [0, 0, 1, 2, 3, 4, 4]
    with pytest.raises(ValueError, match="rise strictly from 0 to 1"):
        check_edges([0, 0.5, 0.4, 1])


@pytest.mark.parametrize("fmt", ["native", "verl", "trl"])
def test_round_trip_counts_and_datasets_load(tmp_path, problems_and_profile, fmt):
    import datasets

    problems, profile = problems_and_profile
    out = tmp_path / "shards"
    manifest = write_shards(problems, profile, out, fmt=fmt, source="world", rejected={"duplicate": 2},
                            profile_meta={"model": "/models/Tiny Policy/"})
    assert manifest["rows"] == 110 and manifest["unprofiled"] == 10 and manifest["rejected"] == {"duplicate": 2}
    assert sum(b["rows"] for b in manifest["buckets"].values()) == 110
    table = read_shards(out)
    assert table.height == 110 and table["bucket"].n_unique() <= 5
    two = read_shards(out, buckets=[2])
    assert two.height == manifest["buckets"]["2"]["rows"]
    files = [str(out / rel) for rel in manifest["files"] if manifest["files"][rel]["rows"]]
    ds = datasets.load_dataset("parquet", data_files=files, split="train")
    assert len(ds) == 110
    if fmt == "verl":
        row = ds[0]
        assert row["ability"] == "math" and row["reward_model"]["style"] == "rule"
        assert row["prompt"][0]["role"] == "user" and "pass_rate" in row["extra_info"]
        gold = dict(zip(problems["id"], problems["answer"]))
        assert row["reward_model"]["ground_truth"] == gold[row["extra_info"]["id"]]
    if fmt == "trl":
        assert set(ds.column_names) >= {"prompt", "solution", "id", "level", "k", "n_correct"}
    if fmt != "native":  # the community-convention pass-rate column, named by k and the profiling model
        assert manifest["avg_column"] == "avg@16_tiny-policy"
        ex = table.unnest("extra_info") if fmt == "verl" else table
        assert (ex["avg@16_tiny-policy"] == ex["n_correct"] / ex["k"]).all()
    ex = table.unnest("extra_info") if fmt == "verl" else table
    merged = ex.join(profile, on="id", suffix="_p")
    assert (merged["pass_rate"] == merged["pass_rate_p"]).all()  # pass_rate stays the raw n_correct / k
    assert ((ex["p_est"] > 0) & (ex["p_est"] < 1) & (ex["p_std"] > 0) & (ex["p_std"] < 0.5)).all()
    # buckets are cut on the estimate
    edges = check_edges(manifest["edges"])
    assert (ex["bucket"] == pl.select(bucket_of(pl.lit(ex["p_est"]), edges)).to_series()).all()
    assert manifest["estimate"] == {"column": "p_est", "prior": "per level"}


def test_flipped_byte_and_truncation_are_detected(tmp_path, problems_and_profile):
    problems, profile = problems_and_profile
    out = tmp_path / "s"
    write_shards(problems, profile, out)
    target = out / "bucket=2" / "data.parquet"
    data = bytearray(target.read_bytes())
    data[len(data) // 2] ^= 0xFF
    target.write_bytes(bytes(data))
    with pytest.raises(ShardIntegrityError, match="bucket=2/data.parquet: sha256 differs"):
        read_shards(out)
    read_shards(out, buckets=[0, 1])  # untouched buckets still read
    (out / "bucket=1" / "data.parquet").write_bytes(data[:100])
    with pytest.raises(ShardIntegrityError, match="bucket=1/data.parquet: 100 bytes"):
        read_shards(out, buckets=[1])


def test_interrupted_write_leaves_no_manifest(tmp_path, problems_and_profile, monkeypatch):
    problems, profile = problems_and_profile
    calls = {"n": 0}
    real = gio.write_parquet

    def flaky(path, df, metadata=None):
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt("simulated crash")
        return real(path, df, metadata)

    monkeypatch.setattr(gio, "write_parquet", flaky)
    with pytest.raises(KeyboardInterrupt):
        write_shards(problems, profile, tmp_path / "s")
    assert not (tmp_path / "s").exists()
    assert not list(tmp_path.rglob("manifest.json"))
    with pytest.raises(ShardIntegrityError, match="no manifest.json"):
        read_manifest(tmp_path / "s")


def test_card_front_matter_and_counts(tmp_path, problems_and_profile):
    problems, profile = problems_and_profile
    out = tmp_path / "s"
    manifest = write_shards(problems, profile, out, source="grpo-arith-world", rejected={"prompt_too_long": 3},
                            profile_meta={"model": "runs/policy-warm", "weights_hash": "abc123", "engine": "vllm",
                                          "config": {"k": 16, "sampling": {"temperature": 1.0}}})
    card = write_card(out, "arith-test", tmp_path / "cards" / "arith-test.md")
    text = card.read_text()
    assert text.startswith("---\n")
    meta = yaml.safe_load(text.split("---\n")[1])
    for key in ("license", "language", "pretty_name", "task_categories", "tags", "size_categories",
                "source_datasets", "configs"):
        assert key in meta, key
    assert [c["config_name"] for c in meta["configs"]][:5] == [f"bucket_{i}" for i in range(5)]
    for b, info in manifest["buckets"].items():
        assert f"| {b} |" in text and f"| {info['rows']} |" in text
    assert "| prompt_too_long | 3 |" in text and "abc123" in text and "k = 16" in text
    assert (tmp_path / "cards" / "arith-test.png").stat().st_size > 1000


def test_card_explains_the_community_pass_rate_column(tmp_path, problems_and_profile):
    problems, profile = problems_and_profile
    k = np.array([2] * 50 + [16] * 60)
    profile = profile.with_columns(pl.Series("k", k), pl.Series("n_correct", np.minimum(profile["n_correct"], k)))
    out = tmp_path / "s"
    write_shards(problems, profile, out, fmt="trl", profile_meta={"model": "runs/policy-warm"})
    text = write_card(out, "arith-trl", tmp_path / "cards" / "arith-trl.md").read_text()
    assert "`avg@16_policy-warm`" in text and "2-16 per problem" in text
    assert "`n_correct`" in text and "`level`" in text
    write_shards(problems, profile.with_columns(pl.lit(16).alias("k")), tmp_path / "fixed", fmt="verl",
                 profile_meta={"model": "runs/policy-warm"})
    fixed = write_card(tmp_path / "fixed", "arith-verl", tmp_path / "cards" / "arith-verl.md").read_text()
    assert "`avg@16_policy-warm` is `pass_rate`" in fixed and "adaptively" not in fixed  # one k for every problem


def hard_and_middling_levels():
    """Level 1: mostly 0/2, some 1/16, and one problem screened 1/2 (p0075); level 2: 2/2 and 8/16."""
    c = np.array([0] * 60 + [1] * 15 + [1] + [2] * 30 + [8] * 30)
    k = np.array([2] * 60 + [16] * 15 + [2] + [2] * 30 + [16] * 30)
    problems = make_problems([1] * 76 + [2] * 60)
    return problems, make_profile(problems, c, k), c, k


def test_a_one_of_two_screen_in_a_hard_level_lands_in_a_low_bucket(tmp_path):
    from grpo_data.curriculum.stats import grid_posterior_mean, row_priors

    problems, profile, c, k = hard_and_middling_levels()
    manifest = write_shards(problems, profile, tmp_path / "s", profile_meta={"config": {"prior_groups": "level"}})
    row = read_shards(tmp_path / "s").filter(pl.col("id") == "p0075").row(0, named=True)
    assert row["pass_rate"] == 0.5  # the raw rate is kept as it was
    assert 0.1 <= row["p_est"] < 0.3 and row["bucket"] == 1  # not the middle bucket [0.3, 0.7) the raw rate gives
    levels = np.array([1.0] * 76 + [2.0] * 60)
    assert row["p_est"] == pytest.approx(grid_posterior_mean(c, k, row_priors(c, k, levels))[75], rel=1e-12)
    assert manifest["estimate"]["prior"] == "per level"
    # with one prior for the whole pool (a profile run with prior_groups: none) the same screen sits mid-range
    write_shards(problems, profile, tmp_path / "pool", profile_meta={"config": {"prior_groups": "none"}})
    pooled = read_shards(tmp_path / "pool").filter(pl.col("id") == "p0075").row(0, named=True)
    assert pooled["bucket"] == 2 and pooled["p_est"] == pytest.approx(grid_posterior_mean(c, k, row_priors(c, k))[75])


@pytest.mark.parametrize("fmt", ["native", "verl"])
def test_card_states_samples_estimate_and_all_same_share(tmp_path, fmt):
    from math import comb

    from grpo_data.curriculum.stats import GRID, fit_group_priors

    problems, profile, c, k = hard_and_middling_levels()
    manifest = write_shards(problems, profile, tmp_path / "s", fmt=fmt)
    text = write_card(tmp_path / "s", "hard", tmp_path / "card.md", band=(0.25, 0.9), group_size=4).read_text()
    # the samples behind the estimates: 91 problems at k = 2, 45 at k = 16
    assert "| samples (k) | problems |\n| --- | --- |\n| 2 | 91 |\n| 16 | 45 |" in text
    assert "Mean samples per problem: 6.63 (902 in all)." in text
    assert "posterior" in text and "1 problem stopped at 1 correct of 2 (raw rate 0.5)" in text
    # counts per bucket are the estimate's (manifest), and the table shows them
    for b, info in manifest["buckets"].items():
        assert f"| {b} | [{info['lo']:.2f}, {info['hi']:.2f}" in text and f"| {info['rows']} |" in text
    # the expected all-right-or-all-wrong share at G = 4, computed here the long way
    keys, weights = fit_group_priors(c, k, np.array([1.0] * 76 + [2.0] * 60))
    same, est = [], []
    for i in range(len(c)):
        w = weights[0 if i < 76 else 1]
        joint = [wg * comb(int(k[i]), int(c[i])) * g ** c[i] * (1 - g) ** (k[i] - c[i]) for wg, g in zip(w, GRID)]
        post = [j / sum(joint) for j in joint]
        same.append(sum(q * (g**4 + (1 - g) ** 4) for q, g in zip(post, GRID)))
        est.append(sum(q * g for q, g in zip(post, GRID)))
    same, est = np.array(same), np.array(est)
    assert f"an expected **{100 * same.mean():.1f}%** of groups" in text
    inside = (est >= 0.25) & (est <= 0.9)
    assert (f"{int(inside.sum())} problems ({100 * inside.mean():.1f}%) have an estimate inside the training band "
            f"[0.25, 0.9]; drawn from those alone, {100 * same[inside].mean():.1f}%") in text
    assert "the band training uses, [0.25, 0.9]" in text


def test_the_histogram_draws_the_band_it_is_given(tmp_path, monkeypatch):
    import matplotlib.pyplot as plt

    from grpo_data.tables import cards

    problems, profile, _, _ = hard_and_middling_levels()
    write_shards(problems, profile, tmp_path / "s")
    fig = cards.histogram_figure(read_shards(tmp_path / "s")["p_est"], list(DEFAULT_EDGES), "t", band=(0.3, 0.85))
    spans = [p for p in fig.axes[0].patches if p.get_label().startswith("training band")]
    assert len(spans) == 1
    bbox = spans[0].get_bbox()
    assert (bbox.x0, bbox.x1) == pytest.approx((0.3, 0.85), abs=1e-12)
    none = cards.histogram_figure(read_shards(tmp_path / "s")["p_est"], list(DEFAULT_EDGES), "t")
    assert not [p for p in none.axes[0].patches if p.get_label().startswith("training band")]
    plt.close(fig)
    plt.close(none)
    # write_card hands its band (and the estimates) to the histogram
    seen = {}
    real = cards.histogram

    def spy(rates, edges, path, title, band=None):
        seen.update(rates=rates, band=band)
        return real(rates, edges, path, title, band)

    monkeypatch.setattr(cards, "histogram", spy)
    text = cards.write_card(tmp_path / "s", "h", tmp_path / "h.md", band=(0.2, 0.95)).read_text()
    assert seen["band"] == (0.2, 0.95) and seen["rates"].name == "p_est"
    assert (tmp_path / "h.png").stat().st_size > 1000
    assert "No training band" in cards.write_card(tmp_path / "s", "h", tmp_path / "h2.md").read_text()
    assert "No training band" not in text
    with pytest.raises(ValueError, match="0 <= lo < hi <= 1"):
        cards.write_card(tmp_path / "s", "h", tmp_path / "h3.md", band=(0.9, 0.2))
