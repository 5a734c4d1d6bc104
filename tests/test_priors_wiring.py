"""Priors from columns, after review (#34 item 1): how each command and plug-in takes a prior,
refuses what it cannot use, and starts its scheduler from it."""

import json

import numpy as np
import polars as pl
import pytest
from test_priors import BIGMATH, NAN, SKYWORK, TRL_SHARD, canonical_with_prior, counts, same

from grpo_data.curriculum.priors import PriorError, frame_columns, read_prior


# ---------------------------------------------------------------------------- the weight as given
def test_a_weight_of_zero_is_refused_not_replaced_by_the_default(tmp_path, capsys):
    from grpo_data.integrations.trl import TRLCurriculum
    from grpo_data.integrations.verl import CurriculumSampler
    from pipelines.cli import main

    data = tmp_path / "problems.parquet"
    canonical_with_prior([0.25, None, 1.0]).write_parquet(data)
    assert main(["shards", "--data", str(data), "--prior", "bigmath", "--prior-weight", "0",
                 "--out", str(tmp_path / "s")]) == 2
    assert "weight must be at least 1 pseudo-sample, got 0.0" in capsys.readouterr().err
    with pytest.raises(PriorError, match="weight must be at least 1 pseudo-sample, got 0.0"):
        CurriculumSampler(SkyworkRows(), {"train_batch_size": 2, "sampler": {"prior": "skywork_7b", "prior_weight": 0}})
    import datasets

    ds = datasets.Dataset.from_list([{**row, "id": f"b{i}"} for i, row in enumerate(BIGMATH.to_dicts())])
    with pytest.raises(PriorError, match="got 0.0"):
        TRLCurriculum.from_dataset(ds, prior="bigmath", prior_weight=0)


def test_a_weight_without_a_prior_is_refused(tmp_path, capsys):
    import datasets

    from grpo_data.integrations.trl import TRLCurriculum
    from grpo_data.integrations.verl import CurriculumSampler
    from grpo_train.config_io import load_config
    from pipelines.cli import main

    data = tmp_path / "problems.parquet"
    canonical_with_prior([0.25, None, 1.0]).write_parquet(data)
    profile = tmp_path / "profile.parquet"
    assert main(["shards", "--data", str(data), "--profile", str(profile), "--prior-weight", "2",
                 "--out", str(tmp_path / "s")]) == 2
    assert "--prior-weight 2.0 without --prior" in capsys.readouterr().err
    assert main(["profile", "--data", str(data), "--model", "org/model", "--prior-weight", "2",
                 "--out", str(tmp_path / "p.parquet")]) == 2
    assert "--prior-weight 2.0 without --prior" in capsys.readouterr().err
    with pytest.raises(PriorError, match="data.sampler.prior_weight 8 without data.sampler.prior"):
        CurriculumSampler(SkyworkRows(), {"train_batch_size": 2, "sampler": {"prior_weight": 8}})
    ds = datasets.Dataset.from_list([{**row, "id": f"b{i}"} for i, row in enumerate(BIGMATH.to_dicts())])
    with pytest.raises(PriorError, match="prior_weight= 8 without prior="):
        TRLCurriculum.from_dataset(ds, prior_weight=8)
    with pytest.raises(ValueError, match="data.prior_weight 2.0 without data.prior"):
        load_config(None, ["data.prior_weight=2"])
    assert load_config(None, ["data.prior=bigmath"]).data.prior_weight is None  # the default, 4, when read


class SkyworkRows:
    """verl's RLHFDataset rows in Skywork-OR1's layout, read row by row."""

    def __len__(self):
        return len(SKYWORK)

    def __getitem__(self, i):
        return SKYWORK[i]


# ---------------------------------------------------------------------------- avg@K: the same samples, per-row k
def test_an_avg_column_takes_each_rows_samples_from_k():
    """K in avg@K_<model> is the most samples any problem got (an adaptive profile gives most 2):
    each row counts its own k, top-level (trl shards) or in extra_info (verl shards)."""
    trl = pl.DataFrame({"id": ["x", "y", "z"], "k": [16, 2, None], "avg@16_m": [0.5, 0.5, 0.25]})
    assert same(counts(read_prior("avg", frame_columns(trl))), [(2.0, 4.0), (1.0, 2.0), (1.0, 4.0)])
    verl = [{"extra_info": {"id": "x", "k": 2}, "avg@16_m": 1.0}, {"extra_info": {"id": "y"}, "avg@16_m": 0.5}]
    from grpo_data.curriculum.priors import record_columns

    assert same(counts(read_prior("avg@16_m", record_columns(verl))), [(2.0, 2.0), (2.0, 4.0)])


def test_an_avg_column_copying_the_counts_it_would_join_is_refused(tmp_path, capsys):
    """This project's trl/verl shards write avg@K_<model> as a copy of their own n_correct / k: read
    as a prior beside those counts (or the profile they came from) it counted every sample twice."""
    import datasets

    from grpo_data.integrations.trl import TRLCurriculum
    from grpo_data.integrations.verl import CurriculumSampler
    from pipelines.cli import main

    twice = "would count the same samples twice"
    with pytest.raises(PriorError, match=rf"prior avg@16_tiny-policy: on all 2 problems the profile also measured.*{twice}"):
        TRLCurriculum.from_dataset(datasets.Dataset.from_polars(TRL_SHARD), prior="avg")
    frame = datasets.Dataset.from_list([{"extra_info": {"id": f"p{i}", "k": 4, "n_correct": c}, "avg@4_m": c / 4}
                                        for i, c in enumerate([1, 3])])
    with pytest.raises(PriorError, match=twice):
        CurriculumSampler(Frame(frame), {"train_batch_size": 1, "sampler": {"prior": "avg"}})
    # a canonical table `grpo load --prior avg` made of those shards, with the profile they came from
    data, profile = tmp_path / "problems.parquet", tmp_path / "profile.parquet"
    with_avg(canonical_with_prior([0.25, 0.75, None]), [0.25, 0.75, None], [4, 4, None]).write_parquet(data)
    write_profile(profile, {"p0": (1, 4), "p1": (3, 4)})
    assert main(["shards", "--data", str(data), "--profile", str(profile), "--prior", "avg",
                 "--out", str(tmp_path / "s")]) == 2
    assert twice in capsys.readouterr().err
    # another model's avg column beside the same profile is a prior like any other
    with_avg(canonical_with_prior([0.25, 0.75, None]), [0.5, 0.5, 1.0], [4, 4, 4]).write_parquet(data)
    assert main(["shards", "--data", str(data), "--profile", str(profile), "--prior", "avg",
                 "--out", str(tmp_path / "s")]) == 0


class Frame:
    """verl's RLHFDataset: its rows in `.dataframe`, a datasets.Dataset (what the sampler reads)."""

    def __init__(self, dataframe):
        self.dataframe = dataframe

    def __len__(self):
        return len(self.dataframe)

    def __getitem__(self, i):
        return self.dataframe[i]


def with_avg(table: pl.DataFrame, rates: list, ks: list) -> pl.DataFrame:
    """`table` whose meta keeps an avg@4_m column and k, as `grpo load --prior avg` keeps them."""
    metas = []
    for meta, r, k in zip(table["meta"].to_list(), rates, ks, strict=True):
        m = json.loads(meta)
        m["fields"] = {"avg@4_m": r, "k": k}
        metas.append(json.dumps(m))
    return table.with_columns(pl.Series("meta", metas))


def write_profile(path, counts_by_id: dict, meta: dict | None = None) -> None:
    """A profile parquet of (n_correct, k) per id, with `meta` as its run metadata."""
    from grpo_data.profile_chunks import summarize_problem
    from grpo_data.tables import io
    from grpo_data.tables.exports import METADATA_KEY

    rows = [{"id": i, **summarize_problem(c, k, [], 0, {})} for i, (c, k) in counts_by_id.items()]
    io.write_parquet(path, pl.DataFrame(rows), metadata={METADATA_KEY: json.dumps(meta or {})})


# ---------------------------------------------------------------------------- grpo shards: the profile's left-out rows
def test_shards_keep_the_profiles_left_out_problems_out_with_a_prior(tmp_path, capsys):
    """The profiler left p2 out (its prompt does not fit the context): a prior value does not make it
    fit, so the set holds it no more than without the prior, and the manifest counts it as rejected,
    not as a problem on the prior alone."""
    from grpo_data.tables.profile_table import rejects_file
    from grpo_data.tables.shards import read_manifest, read_shards
    from pipelines.cli import main

    data, profile = tmp_path / "problems.parquet", tmp_path / "profile.parquet"
    canonical_with_prior([0.25, 0.75, 0.5, 0.5, None]).write_parquet(data)
    write_profile(profile, {"p0": (1, 4), "p1": (3, 4)}, {"model": "m", "left_out": {"prompt_over_context": 1}})
    rejects_file(profile).write_text(json.dumps({"id": "p2", "reason": "prompt_over_context", "detail": "900 > 512",
                                                 "prompt_tokens": 900, "max_tokens": 256, "context": 512}) + "\n")
    assert main(["shards", "--data", str(data), "--profile", str(profile), "--prior", "bigmath",
                 "--out", str(tmp_path / "s")]) == 0
    assert "(1 on the prior alone; 1 with neither a profile nor a prior value left out)" in capsys.readouterr().out
    assert sorted(read_shards(tmp_path / "s")["id"].to_list()) == ["p0", "p1", "p3"]
    manifest = read_manifest(tmp_path / "s")
    assert manifest["prior"]["alone"] == 1 and manifest["unprofiled"] == 1
    assert manifest["rejected"] == {"prompt_over_context": 1}


# ---------------------------------------------------------------------------- grpo train: the scheduler's start
def train_inputs(tmp_path, rates: list, profile: dict, profile_meta: dict | None = None) -> tuple:
    """A canonical training table whose meta carries Big-Math's solve rate, and a profile of it."""
    data, prof = tmp_path / "train.parquet", tmp_path / "profile.parquet"
    canonical_with_prior(rates).write_parquet(data)
    write_profile(prof, profile, profile_meta)
    return data, prof


def test_the_trainer_starts_its_scheduler_from_profile_and_prior_combined(tmp_path):
    """What `grpo train data.profile=P data.prior=bigmath` hands the band scheduler, built without any
    engine: own counts plus moved pseudo-counts where both exist, the pseudo-counts alone where
    only the prior has a value, those rows in groups of their own, and RUN/prior.json."""
    from grpo_data.curriculum.band_math import offline_evidence
    from grpo_data.curriculum.priors import merge_offline, origin_groups
    from grpo_data.curriculum.scheduler import difficulty_groups
    from grpo_train.config_io import load_config
    from grpo_train.scheduler_start import build_scheduler
    from grpo_train.trainer import check_inputs

    rates = [0.25, 0.75, 0.5, 0.0, None, 1.0]
    data, prof = train_inputs(tmp_path, rates, {"p0": (1, 4), "p1": (3, 4), "p4": (2, 4)})
    cfg = load_config(None, [f"data.train={data}", "data.heldout=null", f"data.profile={prof}", "data.prior=bigmath",
                             "data.prior_weight=2", "model=org/model"])
    check_inputs(cfg)
    problems = pl.read_parquet(data)
    sched = build_scheduler(problems, cfg, tmp_path)
    prior = read_prior("bigmath", frame_columns(problems), weight=2)
    own = (np.array([1, 3, NAN, NAN, 2, NAN]), np.array([4, 4, NAN, NAN, 4, NAN]))
    (c, k), from_prior, offset = merge_offline(own, prior)
    np.testing.assert_array_equal(from_prior, [False, False, True, True, False, True])
    np.testing.assert_allclose(np.c_[sched.successes, sched.failures], np.c_[offline_evidence(c, k)])
    assert sched.successes[0] == pytest.approx(1 + 0.5) and sched.failures[4] == 2  # own + moved pseudo; own alone
    # the prior-only rows apart: each group's drift learns that model's offset, not a blend
    expected = origin_groups(difficulty_groups(6, (c, k)), from_prior)
    np.testing.assert_array_equal(sched.group, np.unique(expected, return_inverse=True)[1])
    assert set(sched.group[from_prior]).isdisjoint(sched.group[~from_prior])
    written = json.loads((tmp_path / "prior.json").read_text())
    assert written["spec"] == "bigmath" and written["weight"] == 2 and written["problems"] == 5
    assert written["offset_from_profile"] == pytest.approx(offset)
    build_scheduler(problems, cfg, None)  # another rank: no file


# ---------------------------------------------------------------------------- a profile that stopped on a prior
def test_a_profile_that_stopped_on_a_prior_is_used_with_that_prior_only(tmp_path, capsys):
    """`grpo profile --adaptive --prior bigmath` stopped early where the prior agreed: its own counts
    alone are fewer samples than its decisions rested on. grpo shards and grpo train refuse it with
    no prior or another spec or weight, naming the profile, what it recorded and what to pass."""
    from grpo_train.config_io import load_config
    from grpo_train.trainer import check_inputs
    from pipelines.cli import main

    recorded = {"model": "m", "prior": {"spec": "bigmath", "weight": 4.0, "model": "Llama-3.1-8B"}}
    data, prof = train_inputs(tmp_path, [0.25, 0.75, None], {"p0": (1, 2), "p1": (2, 2)}, recorded)
    out = str(tmp_path / "s")
    for extra, given in (([], "none"), (["--prior", "bigmath", "--prior-weight", "2"], "bigmath at weight 2"),
                         (["--prior", "llama8b_solve_rate:1:64"], "llama8b_solve_rate:1:64 at weight 4")):
        assert main(["shards", "--data", str(data), "--profile", str(prof), *extra, "--out", out]) == 2
        err = capsys.readouterr().err
        assert f"{prof} was profiled with prior bigmath at weight 4" in err and f"this run gives {given}" in err
        assert "Pass --prior bigmath --prior-weight 4" in err
    assert main(["shards", "--data", str(data), "--profile", str(prof), "--prior", "bigmath", "--out", out]) == 0
    base = [f"data.train={data}", "data.heldout=null", f"data.profile={prof}", "model=org/model"]
    with pytest.raises(PriorError, match=rf"data.profile {prof} was profiled with prior bigmath at weight 4.*this "
                                         r"run gives none\. Set data.prior=bigmath data.prior_weight=4"):
        check_inputs(load_config(None, base))
    with pytest.raises(PriorError, match="this run gives bigmath at weight 8"):
        check_inputs(load_config(None, [*base, "data.prior=bigmath", "data.prior_weight=8"]))
    check_inputs(load_config(None, [*base, "data.prior=bigmath"]))
    # a profile without a prior takes any (or none)
    write_profile(prof, {"p0": (1, 2), "p1": (2, 2)}, {"model": "m"})
    check_inputs(load_config(None, base))


# ---------------------------------------------------------------------------- schedulers that cannot use a prior
@pytest.mark.parametrize("name", ["offline_band", "uniform", "pools", "greso"])
def test_schedulers_that_ignore_a_prior_refuse_it(name, tmp_path):
    """offline_band kept problems by the other model's rate with no offset; uniform, pools and greso
    dropped the prior while prior.json and the log said it was used."""
    import datasets

    from grpo_data.integrations.feedback import Curriculum
    from grpo_data.integrations.trl import TRLCurriculum
    from grpo_data.integrations.verl import CurriculumSampler
    from grpo_train.config_io import load_config

    used_by = "is used by the band scheduler only"
    extra = ["data.profile=p.parquet"] if name == "offline_band" else []
    with pytest.raises(ValueError, match=rf"data.prior {used_by}; {name} ignores it"):
        load_config(None, [f"scheduler.name={name}", "data.prior=bigmath", *extra])
    prior = read_prior("bigmath", frame_columns(BIGMATH))
    with pytest.raises(PriorError, match=rf"prior {used_by}; {name} ignores it"):
        Curriculum.from_columns(["a", "b", "c", "d"], prior=prior, scheduler=name)
    ds = datasets.Dataset.from_list([{**row, "id": f"b{i}"} for i, row in enumerate(BIGMATH.to_dicts())])
    with pytest.raises(PriorError, match=rf"prior= {used_by}"):
        TRLCurriculum.from_dataset(ds, prior="bigmath", scheduler=name)
    with pytest.raises(PriorError, match=rf"data.sampler.prior {used_by}"):
        CurriculumSampler(SkyworkRows(), {"train_batch_size": 2, "sampler": {"prior": "skywork_7b", "scheduler": name}})
    # a `grpo shards --prior` set's own prior_rate/prior_k (not asked for) are left unused, not refused
    shards = datasets.Dataset.from_list([{"id": "a", "k": None, "n_correct": None, "prior_rate": 0.5, "prior_k": 4.0},
                                         {"id": "b", "k": 4, "n_correct": 2, "prior_rate": None, "prior_k": None}])
    TRLCurriculum.from_dataset(shards, scheduler=name)
    assert load_config(None, ["scheduler.name=band", "data.prior=bigmath"]).data.prior == "bigmath"


# ---------------------------------------------------------------------------- small things
def test_a_profile_resumes_with_a_prior_when_its_parts_hold_other_ids(tmp_path, pool):
    """Parts written for problems the rerun does not have (an earlier --limit, other data): their
    counts still inform the pool's prior, and they have no prior value (a KeyError before)."""
    from test_profiler import ScriptedEngine, scripted_problems

    from grpo_data.curriculum.stats import StoppingRule
    from grpo_data.profile_config import ProfileConfig
    from grpo_data.profile_parts import finished_parts
    from grpo_data.profiler import profile_problems

    problems, rates = scripted_problems(30)
    prior = read_prior("score:1:64", frame_columns(pl.DataFrame({"score": np.linspace(0.05, 0.95, 30)})))
    cfg = ProfileConfig(rule=StoppingRule(), chunk_size=10, prior_groups="none")
    out = tmp_path / "p.parquet"
    profile_problems(problems.head(20), ScriptedEngine(rates), pool, cfg, out, progress=False, prior=prior_rows(prior, 20))
    later = problems.tail(20)  # ids 10-29: 10-19 done, 0-9 done but no longer among the problems
    stats = profile_problems(later, ScriptedEngine(rates), pool, cfg, out, progress=False,
                             prior=prior_rows(prior, 20, start=10))
    assert stats["problems"] == 10 and stats["skipped"] == 10 and "prior_offset" in stats
    assert finished_parts(out).height == 30


def prior_rows(prior, n: int, start: int = 0):
    """The rows start..start+n of `prior` (one per row of the problems passed with it)."""
    from grpo_data.curriculum.priors import Prior

    return Prior(prior.source, prior.rate[start:start + n], prior.samples[start:start + n], prior.weight)


def test_the_start_log_names_an_offset_only_where_a_profile_was_fitted(caplog):
    import logging

    from grpo_data.integrations.feedback import Curriculum

    prior = read_prior("bigmath", frame_columns(BIGMATH))
    with caplog.at_level(logging.INFO, logger="grpo_data.integrations.feedback"):
        Curriculum.from_columns(["a", "b", "c", "d"], prior=prior)
        Curriculum.from_columns(["a", "b", "c", "d"], [1, None, 2, None], [4, None, 4, None], prior=prior)
    alone, both = (r.getMessage() for r in caplog.records if r.getMessage().startswith("curriculum: band"))
    assert "no offline profile; prior bigmath" in alone and "learned online" in alone and "logits" not in alone
    assert "with offline profile; prior bigmath" in both and "logits from the profile's counts" in both


# ---------------------------------------------------------------------------- the plug-ins as the trainers call them
def skywork_frame(n: int = 12):
    """Skywork-OR1-RL-Data's verl rows as verl's RLHFDataset holds them: a datasets.Dataset whose
    extra_info is an Arrow struct with model names (dots included) as field names; a third of the
    rows lack the labels."""
    import datasets

    rows = []
    for i in range(n):
        row = json.loads(json.dumps(SKYWORK[i % 3]))
        row["extra_info"]["index"] = i
        if "model_difficulty" in row["extra_info"]:
            row["extra_info"]["model_difficulty"]["DeepSeek-R1-Distill-Qwen-7B"] = (4 * i) % 17
        rows.append(row)
    return datasets.Dataset.from_list(rows)


def test_verl_reads_skyworks_struct_through_the_dataframe():
    from grpo_data.integrations.verl import CurriculumSampler

    frame = skywork_frame()
    assert "DeepSeek-R1-Distill-Qwen-7B" in frame.features["extra_info"]["model_difficulty"]  # a struct field
    sampler = CurriculumSampler(Frame(frame), {"train_batch_size": 4, "sampler": {"prior": "skywork_7b"}})
    d = np.array([(4 * i) % 17 if i % 3 != 2 else NAN for i in range(12)])
    np.testing.assert_allclose(sampler.curriculum.scheduler.successes, np.nan_to_num(4 * (1 - d / 16)))
    np.testing.assert_allclose(sampler.curriculum.scheduler.failures, np.nan_to_num(4 * d / 16))
    assert sampler.curriculum.ids == [str(i) for i in range(12)]  # extra_info.index, read from the frame


def test_a_verl_run_with_a_prior_resumes_as_if_uninterrupted():
    """verl's StatefulDataLoader saves the sampler's state_dict in data.pt: a sampler rebuilt from the
    same config (prior read again) and that state hands out what the uninterrupted run would have,
    and learns from the same outcomes the same way."""
    import io

    import torch

    from grpo_data.integrations.verl import CurriculumSampler

    cfg = {"train_batch_size": 4, "seed": 1, "sampler": {"prior": "skywork_7b", "prior_weight": 2}}
    rng = np.random.default_rng(0)

    def run(sampler, batches, start=None):
        order, it = [], iter(sampler) if start is None else start
        for _ in range(batches):
            rows = [next(it) for _ in range(4)]
            order.append(rows)
            ids = [str(r) for r in rows for _ in range(8)]
            sampler.update(scored_batch(ids, rng_scores(rng, len(ids))))
        return order, it

    first = CurriculumSampler(Frame(skywork_frame()), cfg)
    _, it = run(first, 1)
    saved = io.BytesIO()
    torch.save(first.state_dict(), saved)  # as StatefulDataLoader writes it into data.pt
    rng_at = rng.bit_generator.state
    uninterrupted, _ = run(first, 2, it)
    rng.bit_generator.state = rng_at
    resumed = CurriculumSampler(Frame(skywork_frame()), cfg)
    saved.seek(0)
    resumed.load_state_dict(torch.load(saved, weights_only=False))
    again, _ = run(resumed, 2)
    assert again == uninterrupted
    np.testing.assert_allclose(resumed.curriculum.scheduler.successes, first.curriculum.scheduler.successes)


def rng_scores(rng, n: int) -> list[float]:
    return rng.integers(0, 2, n).astype(float).tolist()


def scored_batch(ids, scores):
    """The parts of a verl DataProto the sampler reads (extra_info ids, token-level scores)."""
    from types import SimpleNamespace

    import torch

    nt = {"extra_info": np.array([{"index": int(i)} for i in ids], dtype=object)}
    tl = torch.zeros(len(scores), 3)
    tl[:, -1] = torch.tensor(scores)
    return SimpleNamespace(non_tensor_batch=nt, batch={"token_level_scores": tl})


# ---------------------------------------------------------------------------- what the docs show
def test_readme_adds_every_data_sampler_key_but_the_class_with_a_plus():
    """verl's `data.sampler` is a struct holding class_path and class_name: Hydra refuses any other
    key without `+` ("Could not override 'data.sampler.prior'", checked against verl 0.7.1's and
    0.9.1's configs with hydra-core 1.3.2, whose grammar also reads `a.b:16:16` unquoted)."""
    import re
    from pathlib import Path

    readme = (Path(__file__).resolve().parent.parent / "docs" / "guides" / "verl.md").read_text()
    keys = [(m.group(1), m.group(2)) for m in re.finditer(r"(\+?)data\.sampler\.([a-z_]+)=", readme)]
    assert ("", "class_path") in keys and ("+", "prior") in keys and ("+", "prior_weight") in keys
    assert [key for plus, key in keys if not plus and key not in ("class_path", "class_name")] == []


def test_the_documented_id_column_makes_big_math_usable_in_trl():
    """Big-Math has no `id` column: from_dataset refuses it saying how to add one, and with the line
    the TRL module docstring and README show, the prior reads."""
    import datasets

    from grpo_data.integrations.feedback import MissingColumnError
    from grpo_data.integrations.trl import TRLCurriculum

    bigmath = datasets.Dataset.from_polars(BIGMATH)  # problem, answer, source, domain, llama8b_solve_rate
    with pytest.raises(MissingColumnError, match=r"no `id` column.*with_indices=True"):
        TRLCurriculum.from_dataset(bigmath, prior="bigmath")
    bigmath = bigmath.map(lambda row, i: {"id": str(i)}, with_indices=True)
    cur = TRLCurriculum.from_dataset(bigmath, prior="bigmath").curriculum
    np.testing.assert_allclose(cur.scheduler.successes, [1, 4, 0, 0])
