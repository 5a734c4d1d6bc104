"""Shards and cards: round trips per format, integrity checks, atomic writes, datasets loading."""

import numpy as np
import polars as pl
import pytest
import yaml

from grpo_data import io as gio
from grpo_data.cards import write_card
from grpo_data.shards import (
    ShardIntegrityError,
    bucket_of,
    check_edges,
    read_manifest,
    read_shards,
    write_shards,
)


@pytest.fixture()
def problems_and_profile(world_tables):
    problems = world_tables["train"].head(120)
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
    if fmt == "native":
        merged = table.join(profile, on="id", suffix="_p")
        assert (merged["pass_rate"] == merged["pass_rate_p"]).all()
        bad = table.filter((pl.col("pass_rate") < 0.1) & (pl.col("bucket") != 0))
        assert bad.height == 0


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
    profile = profile.with_columns(pl.Series("k", [2] * 50 + [16] * 60))
    out = tmp_path / "s"
    write_shards(problems, profile, out, fmt="trl", profile_meta={"model": "runs/policy-warm"})
    text = write_card(out, "arith-trl", tmp_path / "cards" / "arith-trl.md").read_text()
    assert "`avg@16_policy-warm`" in text and "2-16 per problem" in text
    assert "`n_correct`" in text and "`level`" in text
    write_shards(problems, profile.with_columns(pl.lit(16).alias("k")), tmp_path / "fixed", fmt="verl",
                 profile_meta={"model": "runs/policy-warm"})
    fixed = write_card(tmp_path / "fixed", "arith-verl", tmp_path / "cards" / "arith-verl.md").read_text()
    assert "`avg@16_policy-warm` is `pass_rate`" in fixed and "adaptively" not in fixed  # one k for every problem
