"""The quick demo pipeline end to end (small sizes): every output file, and reruns skip finished stages."""

import json
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
import yaml

from pipelines.pipeline import deep_merge, load_spec

ROOT = Path(__file__).resolve().parent.parent


def test_bootstrap_section_is_checked_like_the_train_config():
    # it used to keep only seed/steps/batch_size/lr and drop every other key without a word
    from grpo_train.bootstrap import BootstrapConfig
    from grpo_train.config_io import build_section

    cfg = build_section(BootstrapConfig, {"lr": "3e-3", "steps": 5, "warmup_steps": 2, "model": {"num_layers": 2}}, "bootstrap")
    assert (cfg.lr, cfg.steps, cfg.warmup_steps, cfg.model.num_layers) == (0.003, 5, 2, 2)
    with pytest.raises(ValueError, match="unknown config key\\(s\\) bootstrap.warmup; accepted under bootstrap: seed"):
        build_section(BootstrapConfig, {"warmup": 2}, "bootstrap")
    with pytest.raises(ValueError, match="bootstrap.steps: expected an integer, got 'many'"):
        build_section(BootstrapConfig, {"steps": "many"}, "bootstrap")


def test_a_pipeline_with_a_bad_bootstrap_key_stops_before_training(tmp_path):
    from pipelines.pipeline import run_pipeline

    spec = yaml.safe_load((ROOT / "pipelines" / "arith_demo.yaml").read_text())
    spec["out"] = str(tmp_path / "demo")
    spec["world"] = {"seed": 0, "scale": 0.05}
    spec["bootstrap"] = {"seed": 0, "warmup": 2}
    cfg = tmp_path / "demo.yaml"
    cfg.write_text(yaml.safe_dump(spec))
    with pytest.raises(ValueError, match="unknown config key\\(s\\) bootstrap.warmup"):
        run_pipeline(cfg)
    assert not (tmp_path / "demo" / "policy-warm").exists()

def test_spec_loading_and_quick_merge(tmp_path):
    spec = load_spec(ROOT / "pipelines" / "arith_demo.yaml", quick=True)
    assert spec["world"]["scale"] == 0.25 and spec["out"].endswith("-quick")
    assert spec["train"]["run"]["max_rollouts"] == 1200 and spec["train"]["rollout"]["group_size"] == 8
    assert deep_merge({"a": {"b": 1, "c": 2}}, {"a": {"b": 3}}) == {"a": {"b": 3, "c": 2}}
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({"name": "x", "out": "o", "world": {}, "trian": {}}))
    with pytest.raises(ValueError, match="unknown pipeline section\\(s\\) \\['trian'\\]"):
        load_spec(bad)
    both = tmp_path / "both.yaml"
    both.write_text(yaml.safe_dump({"name": "x", "out": "o", "world": {}, "data": {}}))
    with pytest.raises(ValueError, match="exactly one of `world`"):
        load_spec(both)


def test_a_demo_seed_replaces_every_seed_and_writes_apart():
    spec = load_spec(ROOT / "pipelines" / "arith_demo.yaml", seed=2)
    assert [spec[s]["seed"] for s in ("world", "bootstrap", "profile")] + [spec["train"]["run"]["seed"]] == [2] * 4
    assert spec["out"] == "runs/demo-seed2" and spec["train"]["run"]["max_rollouts"] == 4140  # the rest unchanged
    assert load_spec(ROOT / "pipelines" / "arith_demo.yaml", quick=True, seed=1)["out"] == "runs/demo-quick-seed1"
    assert load_spec(ROOT / "pipelines" / "gpu_example.yaml", seed=1).get("world") is None  # data pipelines have none


def test_gpu_example_is_a_valid_pipeline_and_train_config():
    from grpo_train.config_io import load_config

    spec = load_spec(ROOT / "pipelines" / "gpu_example.yaml")
    assert spec["model"] and spec["data"]["source"]
    path = ROOT / "pipelines" / "gpu_example.yaml"
    cfg = load_config(path)
    assert cfg.deepspeed.zero_stage == 3 and cfg.rollout.group_size == 16


@pytest.mark.slow
def test_quick_demo_end_to_end_and_rerun_skips(tmp_path):
    from grpo_data.profile_metadata import weights_hash
    from grpo_train.bootstrap import can_pin_kernels

    spec = yaml.safe_load((ROOT / "pipelines" / "arith_demo.yaml").read_text())
    spec["out"] = str(tmp_path / "demo")
    # smaller than --quick itself: this checks stages, files and reruns, not what the policy learns
    spec["quick"]["world"] = {"scale": 0.1}
    spec["quick"]["bootstrap"] = {"steps": 60}
    spec["quick"]["train"]["run"] = {"max_rollouts": 100000, "steps": 6, "eval_every": 3, "save_every": 3}
    cfg = tmp_path / "demo.yaml"
    cfg.write_text(yaml.safe_dump(spec))
    cmd = [sys.executable, "-m", "pipelines.cli", "demo", "--quick", "--config", str(cfg)]
    first = subprocess.run(cmd, capture_output=True, text=True, timeout=1200)
    assert first.returncode == 0, first.stderr[-4000:]
    out = tmp_path / "demo-quick"
    for rel in ("world/train.parquet", "world/test.parquet", "world/val.parquet", "world/sft.parquet",
                "policy-warm/model.safetensors", "profile.parquet",
                "profile.json", "shards/manifest.json", "card/arith-world-profiled.md", "card/arith-world-profiled.png",
                "card/arith-world-profiled.dart.parquet", "card/arith-world-profiled.dart.json",
                "train/metrics.jsonl", "train/resolved_config.yaml", "train/checkpoints/step-000006/hf/model.safetensors",
                "profile-after.parquet", "summary.json", "summary.md", "pass_rate_before_after.png",
                "heldout_vs_rollouts.png", "band_occupancy.png", "train/report.html"):
        assert (out / rel).exists(), rel
    assert f"run report (open in a browser): {out / 'train' / 'report.html'}" in first.stdout
    assert (out / "train" / "report.html").read_text().count("data:image/png;base64,") >= 8
    summary = json.loads((out / "summary.json").read_text())
    assert summary["steps"] == 6 and summary["rollouts_generated"] > 0
    assert set(summary["heldout_by_level"]) == {str(i) for i in range(1, 11)}
    assert summary["band"] == [0.2, 0.8] and 0 <= summary["in_band_share_before"] <= 1
    # the demo's sampler needs no profile: training read none, and the warm start's profile came after it
    resolved = yaml.safe_load((out / "train" / "resolved_config.yaml").read_text())
    assert resolved["data"]["profile"] is None and resolved["scheduler"]["name"] == "uniform"
    assert summary["profile_charged"] is False and summary["profile_samples"] > 0
    assert (out / "profile.parquet").stat().st_mtime_ns > (out / "train" / "metrics.jsonl").stat().st_mtime_ns
    assert "training used no profile" in first.stdout
    assert "| test accuracy | before | after |" in first.stdout
    # the first and last evaluations at eval_k_ends, paired per problem: the gain carries its own SE
    gain, test_rows = summary["paired_gain"], len(pl.read_parquet(out / "world" / "test.parquet"))
    assert (gain["k_first"], gain["k_last"], gain["problems"]) == (32, 32, test_rows) and gain["se"] > 0
    assert summary["heldout_after"] - summary["heldout_before"] == pytest.approx(gain["mean"])
    assert f"gain, paired over {test_rows} problems (k = 32)" in first.stdout
    # the warm start's identity, so a user can compare the policy their machine built with the README's
    weights = weights_hash(str(out / "policy-warm"))  # the hash the profile and the card print
    assert summary["warm_start"] == {"weights_hash": weights, "kernels_pinned": can_pin_kernels()}
    assert f"warm start: weights hash {weights}" in first.stdout
    assert f"weights sha256 (first 16 hex) `{weights}`" in (out / "card" / "arith-world-profiled.md").read_text()

    stamps = {rel: (out / rel).stat().st_mtime_ns for rel in
              ("world/train.parquet", "policy-warm/model.safetensors", "profile.parquet", "train/metrics.jsonl")}
    second = subprocess.run(cmd, capture_output=True, text=True, timeout=1200)
    assert second.returncode == 0, second.stderr[-4000:]
    assert "warm start cached" in second.stderr and "is up to date" in second.stdout
    assert "training in" in second.stdout and "is complete" in second.stdout
    for rel, stamp in stamps.items():
        assert (out / rel).stat().st_mtime_ns == stamp, f"{rel} was redone"


def test_the_shard_set_is_keyed_on_the_profiles_content(tmp_path):
    """A profile re-run under other settings (same rows, same weights) rebuilds the set; an unchanged one does not."""
    from pipelines.pipeline import shards_key

    profile = tmp_path / "profile.parquet"
    table = pl.DataFrame({"id": ["a", "b"], "k": [2, 4], "n_correct": [1, 2]})
    table.write_parquet(profile, metadata={"grpo_profile": json.dumps({"weights_hash": "w", "rows": 2})})
    key = shards_key(profile, {"format": "verl"})
    assert key == shards_key(profile, {"format": "verl"}) and key["format"] == "verl"
    table.with_columns(pl.Series("n_correct", [2, 2])).write_parquet(
        profile, metadata={"grpo_profile": json.dumps({"weights_hash": "w", "rows": 2})})
    assert shards_key(profile, {"format": "verl"}) != key


def test_profile_for_training_decides_what_training_reads():
    """`profile: {for_training: false}` trains from no profile (the demo's sampler needs none); the
    default, and true, hand training the pipeline's profile; anything else is refused by name."""
    from grpo_train.config_io import pipeline_train_paths
    from pipelines.pipeline import profile_section

    spec = {"out": "runs/x", "world": {}, "profile": {"for_training": False, "adaptive": True}}
    assert profile_section(spec) == ({"adaptive": True}, False)  # the engine settings never see the key
    assert pipeline_train_paths(spec)["data"]["profile"] is None
    for section in ({"adaptive": True}, {"for_training": True}, None):
        assert profile_section({"profile": section})[1] is True
        assert pipeline_train_paths({"out": "runs/x", "world": {}, "profile": section})["data"]["profile"] == \
            str(Path("runs/x") / "profile.parquet")
    with pytest.raises(ValueError, match="for_training must be true or false"):
        profile_section({"profile": {"for_training": "no"}})


def test_the_summary_charges_a_profile_only_when_training_used_it():
    from pipelines.pipeline_summary import summary_table

    s = {"heldout_before": 0.7, "heldout_after": 0.72, "heldout_se_after": 0.02, "paired_gain": None,
         "heldout_by_level": {}, "steps": 10, "rollouts_generated": 4000, "profile_samples": 2300,
         "informative_rollout_ratio": 0.4, "train_pass_rate_before": 0.6, "train_pass_rate_after": 0.65,
         "band": [0.2, 0.8], "in_band_share_before": 0.3, "in_band_share_after": 0.28}
    assert "4000 in training + 2300 in the offline profile = 6300" in summary_table(s)
    measured = summary_table({**s, "profile_charged": False})
    assert "rollouts generated: 4000 (training used no profile" in measured and "6300" not in measured


def test_a_pipeline_that_trains_from_no_profile_hands_training_none_of_its_priors(tmp_path):
    """The demo's sampler (uniform) refuses priors: a prior in its profile section is the profile's
    (and the shards'), never training's; a profile path or a bad for_training is refused before any stage."""
    from grpo_train.config_io import config_from_tree, train_tree

    spec = yaml.safe_load((ROOT / "pipelines" / "arith_demo.yaml").read_text())
    spec["profile"].update({"prior": "bigmath", "prior_weight": 4})
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump(spec))
    loaded = load_spec(path)  # accepted: training reads no profile, so no prior
    tree = train_tree(loaded)
    assert tree["data"]["profile"] is None and "prior" not in tree["data"]
    assert config_from_tree(tree).scheduler.name == "uniform"
    spec["profile"]["for_training"] = True  # trained from the profile: its prior reaches training
    path.write_text(yaml.safe_dump(spec))
    assert train_tree(load_spec(path))["data"]["prior"] == "bigmath"

    spec["profile"]["for_training"] = False
    spec["train"]["data"] = {"profile": "runs/mine/profile.parquet"}
    path.write_text(yaml.safe_dump(spec))
    with pytest.raises(ValueError, match="train.data.profile is set but profile.for_training is false"):
        load_spec(path)
    spec["train"].pop("data")
    spec["profile"]["for_training"] = "false"
    path.write_text(yaml.safe_dump(spec))
    with pytest.raises(ValueError, match="for_training must be true or false"):
        load_spec(path)


def test_run_pipeline_trains_first_and_profiles_after_when_the_profile_is_not_for_training(tmp_path, monkeypatch):
    """The stage order and what training reads, with every engine stubbed: with for_training false the
    warm start is profiled after training, training gets no profile, the summary charges none, and a
    profile redone later does not restart a finished training run; with true, the former order."""
    import grpo_data.profile_metadata
    import grpo_train.metrics
    import grpo_train.trainer
    import pipelines.pipeline as pp
    import pipelines.plots
    import pipelines.report

    calls = []
    world = tmp_path / "world"
    world.mkdir()
    for name in ("train", "heldout"):
        pl.DataFrame({"id": ["a"], "problem": ["1+1"], "answer": ["2"]}).write_parquet(world / f"{name}.parquet")

    def profile_stage(model, train, pcfg, out, seed=0, limit=None):
        assert "for_training" not in pcfg  # the engine's settings never see the pipeline's key
        calls.append(("profile", Path(model).name, out.name))
        out.write_bytes(str(len(calls)).encode())  # other content every time: a redone profile
        return out

    def train(cfg, resume=True):
        calls.append(("train", cfg.data.profile))
        Path(cfg.run.out, "trained").write_text("x")

    summaries = []
    monkeypatch.setattr(pp, "data_stage", lambda spec, out: {"train": world / "train.parquet",
                                                             "heldout": world / "heldout.parquet"})
    monkeypatch.setattr(pp, "decontaminate_stage", lambda spec, paths: paths)
    monkeypatch.setattr(pp, "profile_stage", profile_stage)
    monkeypatch.setattr(pp, "shards_stage", lambda spec, train, profile, out: calls.append(("shards", profile.name)))
    monkeypatch.setattr(pp, "summarize", lambda *a, **kw: summaries.append(kw) or {})
    monkeypatch.setattr(pp, "summary_table", lambda s: "")
    monkeypatch.setattr(pp, "warm_start_identity", lambda model: None)
    monkeypatch.setattr(grpo_train.trainer, "train", train)
    monkeypatch.setattr(grpo_train.metrics, "latest_checkpoint", lambda run_dir: tmp_path / "ckpt")
    monkeypatch.setattr(grpo_train.metrics, "run_complete", lambda ckpt, run: (Path(run.out) / "trained").exists())
    monkeypatch.setattr(grpo_data.profile_metadata, "weights_hash", lambda model: "w")
    monkeypatch.setattr(pipelines.plots, "write_plots", lambda *a: [])
    monkeypatch.setattr(pipelines.report, "write_report", lambda *a: tmp_path / "report.html")

    spec = yaml.safe_load((ROOT / "pipelines" / "arith_demo.yaml").read_text())
    spec.pop("quick")
    spec.update({"out": str(tmp_path / "demo"), "model": str(tmp_path / "warm")})
    path = tmp_path / "demo.yaml"
    path.write_text(yaml.safe_dump(spec))
    pp.run_pipeline(path)
    assert calls == [("train", None), ("profile", "warm", "profile.parquet"), ("shards", "profile.parquet"),
                     ("profile", "hf", "profile-after.parquet")]
    assert summaries[-1] == {"profile_charged": False}
    calls.clear()
    pp.run_pipeline(path)  # the profile is redone (other bytes): training, which never read it, stays done
    assert [c[0] for c in calls] == ["profile", "shards", "profile"]
    assert (tmp_path / "demo" / "train" / "trained").exists()

    spec["profile"]["for_training"] = True
    spec["train"]["scheduler"] = {"name": "band", "lo": 0.2, "hi": 0.95}
    spec["out"] = str(tmp_path / "profiled")
    path.write_text(yaml.safe_dump(spec))
    calls.clear()
    pp.run_pipeline(path)
    assert calls == [("profile", "warm", "profile.parquet"), ("shards", "profile.parquet"),
                     ("train", str(tmp_path / "profiled" / "profile.parquet")),
                     ("profile", "hf", "profile-after.parquet")]
    assert summaries[-1] == {"profile_charged": True}
