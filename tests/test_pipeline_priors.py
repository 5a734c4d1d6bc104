"""A YAML pipeline's prior settings (#34): `prior`, `prior_profile` and `prior_weight` in `profile:`
and `shards:` (and `data.prior`, ... in `train:`) mean what `grpo profile/shards/train --prior` mean,
reach the profiler, the shard set, its card and the scheduler's start, and a bad setting stops the
pipeline before any stage runs, naming the section and the field. No engine starts: a scripted one
stands in for vLLM, a boxed-answer judge for the verifier pool."""

import json

import numpy as np
import polars as pl
import pytest
import yaml
from test_priors import BoxedVerifier
from test_profiler import ReseedableEngine

from grpo_data.curriculum.priors import PriorError
from grpo_data.verify.pool import PoolConfig
from pipelines.pipeline import load_spec

N = 60


class ScriptedPool(BoxedVerifier):
    """The verifier pool profile_stage opens, as a boxed-answer judge (no worker processes)."""

    config = PoolConfig()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class ClosableEngine(ReseedableEngine):
    def close(self):
        pass


def write_pipeline(tmp_path, **sections) -> str:
    spec = {"name": "t", "out": str(tmp_path / "run"), "world": {"seed": 0}, **sections}
    path = tmp_path / "pipeline.yaml"
    path.write_text(yaml.safe_dump(spec))
    return str(path)


@pytest.mark.parametrize(("sections", "message"), [
    ({"profile": {"adaptive": True, "prior": "rate:1:2:3"}}, "pipeline.yaml: profile: prior 'rate:1:2:3': expected a preset"),
    ({"profile": {"prior": "difficulty:0"}}, "profile: prior 'difficulty:0': SCALE must be a non-zero number"),
    ({"shards": {"prior_weight": 2}}, "shards: prior_weight 2 without prior or prior_profile: the weight discounts"),
    ({"train": {"data": {"prior": "bigmath", "prior_profile": "p.parquet"}}},
     "train.data: prior bigmath and prior_profile p.parquet: one prior source at a time"),
    ({"profile": {"prior_profile": "absent.parquet"}}, "profile: prior profile absent.parquet does not exist"),
    ({"profile": {"adaptive": True, "prior": "bigmath"}, "shards": {"prior": "polaris"}},
     "shards: prior settings .*'prior': 'polaris'.* differ from the profile's \\(prior bigmath, prior_weight 4.0\\)"),
    ({"profile": {"adaptive": True, "prior": "bigmath", "prior_weight": 8}, "train": {"data": {"prior": "bigmath"}}},
     "train.data: prior settings .* differ from the profile's \\(prior bigmath, prior_weight 8.0\\)"),
    ({"shards": {"edge": [0, 1]}}, "shards: unknown key\\(s\\) \\['edge'\\]; accepted: edges, format, prior"),
])
def test_bad_prior_settings_stop_the_pipeline_naming_the_section_and_field(tmp_path, sections, message):
    with pytest.raises(ValueError, match=message) as caught:
        load_spec(write_pipeline(tmp_path, **sections))
    assert not (tmp_path / "run").exists()  # before any stage
    if "unknown" not in message:
        assert isinstance(caught.value, PriorError)


def test_the_stages_after_the_profile_take_its_prior_unless_they_name_their_own(tmp_path):
    from grpo_train.config_io import stage_prior, train_tree

    profile = {"adaptive": False, "prior": "bigmath", "prior_weight": 2}
    assert stage_prior(None, profile) == {"prior": "bigmath", "prior_weight": 2}
    assert stage_prior({"prior": "polaris"}, profile) == {"prior": "polaris"}  # its own, weight included (default)
    assert stage_prior({"prior": None}, profile) == {}  # `prior: null` names none
    spec = load_spec(write_pipeline(tmp_path, profile=profile, train={"scheduler": {"name": "band"}}))
    assert {k: train_tree(spec)["data"].get(k) for k in ("prior", "prior_profile", "prior_weight")} == {
        "prior": "bigmath", "prior_profile": None, "prior_weight": 2}
    # a fixed-k profile did not stop on its prior: a later stage may name another
    load_spec(write_pipeline(tmp_path, profile=profile, shards={"prior": "polaris"}))


def test_a_pipeline_prior_reaches_the_profiler_the_shards_and_the_scheduler(tmp_path, monkeypatch):
    """A Big-Math-shaped dataset loaded by the data stage keeps `llama8b_solve_rate` because the
    profile section names `prior: bigmath`; the adaptive profile stops with it (its metadata and
    inputs stamp record it, its rows hold own samples only); the shard set and its card take the
    profile's prior without naming it, and training's scheduler starts from the same prior and offset."""
    from grpo_data.tables.shards import read_manifest
    from grpo_train.config_io import config_from_tree, deep_merge, train_tree
    from grpo_train.scheduler_start import scheduler_start
    from pipelines.pipeline import data_stage, profile_stage, shards_stage

    rng = np.random.default_rng(5)
    true = rng.choice([0.0, 0.05, 0.5, 0.95, 1.0], N)
    rows = [{"problem": f"q{i}", "answer": str(i), "llama8b_solve_rate": None if i % 10 == 0 else float(true[i])}
            for i in range(N)]
    source = tmp_path / "bigmath.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "run"
    spec = {"name": "t", "out": str(out), "model": "scripted",
            "data": {"source": str(source), "preset": "problem_answer", "heldout_fraction": 0.0},
            "profile": {"adaptive": True, "prior": "bigmath", "screen_k": 2, "step_k": 2, "max_k": 8,
                        "chunk_size": 20, "prior_groups": "none"},
            "shards": {"format": "trl"}, "train": {"scheduler": {"name": "band"}}}
    path = tmp_path / "pipeline.yaml"
    path.write_text(yaml.safe_dump(spec))
    spec = load_spec(path)

    paths = data_stage(spec, out)
    train = pl.read_parquet(paths["train"])
    assert train.height == N and json.loads(train["meta"][1])["fields"] == {"llama8b_solve_rate": float(true[1])}

    rates = {f"q{i}": (i, float(true[i])) for i in range(N)}
    monkeypatch.setattr("grpo_data.generation.engines.make_engine", lambda *a, **k: ClosableEngine(rates, seed=1))
    monkeypatch.setattr("grpo_data.verify.pool.VerifierPool", ScriptedPool)
    profile = profile_stage("scripted", paths["train"], spec["profile"], out / "profile.parquet")
    meta = json.loads(profile.with_suffix(".json").read_text())
    assert meta["prior"]["spec"] == "bigmath" and meta["prior"]["weight"] == 4.0
    assert meta["prior"]["problems"] == N - N // 10 and meta["prior"]["model"] == "Llama-3.1-8B"
    assert json.loads(profile.with_suffix(".inputs.json").read_text())["prior"] == {"prior": "bigmath"}
    table = pl.read_parquet(profile)
    assert table.height == N and (table["k"] >= 1).all() and (table["k"] <= 8).all()  # own samples only
    # a 1-sample screen only where the prior has a value (StoppingRule.prior_screen_k); the rest screened at 2
    without = set(pl.read_parquet(paths["train"]).filter(pl.col("answer").cast(pl.Int64) % 10 == 0)["id"].to_list())
    assert without and not table.filter(pl.col("id").is_in(list(without)) & (pl.col("k") < 2)).height
    assert table["k"].sum() == meta["samples"]

    card = shards_stage(spec, paths["train"], profile, out)
    manifest = read_manifest(out / "shards")
    assert manifest["prior"]["spec"] == "bigmath" and manifest["prior"]["weight"] == 4.0
    assert manifest["pipeline_key"]["prior"] == {"prior": "bigmath"}
    assert "## Prior from another model" in card.read_text()

    tree = deep_merge(train_tree(spec), {"data": {"train": str(paths["train"]), "heldout": None,
                                                  "profile": str(profile)}})
    cfg = config_from_tree(tree)
    assert (cfg.data.prior, cfg.data.prior_weight) == ("bigmath", None)
    start = scheduler_start(train, cfg)
    assert start.prior.source.name == "bigmath" and start.prior.weight == 4.0
    assert start.offset == pytest.approx(manifest["prior"]["offset_from_profile"]) and start.offset != 0.0

    # another weight is another profile: the stamp changes, and the profile is redone with it
    spec["profile"]["prior_weight"] = 2
    profile_stage("scripted", paths["train"], spec["profile"], out / "profile.parquet")
    assert json.loads(profile.with_suffix(".json").read_text())["prior"]["weight"] == 2.0


def test_a_prior_the_data_cannot_give_stops_the_profile_stage_naming_it(tmp_path, monkeypatch):
    from test_priors import canonical_with_prior

    from pipelines.pipeline import profile_stage

    data = tmp_path / "train.parquet"
    canonical_with_prior([0.5, 0.25]).drop("meta").with_columns(pl.lit("{}").alias("meta")).write_parquet(data)
    monkeypatch.setattr("grpo_data.generation.engines.make_engine", lambda *a, **k: pytest.fail("no engine before the prior"))
    with pytest.raises(PriorError, match="profile: prior bigmath: .* has no field `llama8b_solve_rate`"):
        profile_stage("scripted", data, {"adaptive": True, "prior": "bigmath"}, tmp_path / "p.parquet")
