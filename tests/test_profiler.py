"""Profiler: rows and metadata, adaptive mode, resume after kill -9, sharding and merge, engines."""

import json
import os
import re
import signal
import subprocess
import sys
import time

import numpy as np
import polars as pl
import pytest

from grpo_data.curriculum.stats import StoppingRule, fit_grid_prior
from grpo_data.generation.engines import Completion, make_engine
from grpo_data.generation.prompting import SamplingConfig
from grpo_data.profile_chunks import summarize_problem
from grpo_data.profile_config import ProfileConfig
from grpo_data.profile_parts import ResumeError, discard_parts, merge_parts, parts_dir
from grpo_data.profiler import profile_problems, shard_slice
from grpo_data.tables.profile_table import PROFILE_COLUMNS, read_profile


class ScriptedEngine:
    """Answers each prompt correctly with a fixed probability taken from the prompt text (test double
    for the generation engine; the real engines are exercised in the slow tests below)."""

    name = "scripted"
    model_path = "scripted"

    def __init__(self, rates: dict[str, float], seed: int = 0):
        self.rates = rates
        self.rng = np.random.default_rng(seed)
        self.calls = 0
        from grpo_train.tiny_policy import build_tokenizer

        self.tokenizer = build_tokenizer()

    def question(self, ids) -> str:
        """The user message of an encoded ChatML prompt (engines receive token ids)."""
        text = self.tokenizer.decode(list(ids))
        return text.split("user\n", 1)[1].split("<|im_end|>", 1)[0]

    def generate(self, prompts, n, sampling):
        self.calls += 1
        out = []
        for p in prompts:
            gold, rate = self.rates[self.question(p)]
            out.append([Completion(f"\\boxed{{{gold if self.rng.random() < rate else gold + 1}}}", (1, 2, 3), "stop")
                        for _ in range(n)])
        return out


def scripted_problems(n=40):
    from grpo_data.tables.problems import to_table, user_prompt

    rows, rates = [], {}
    rng = np.random.default_rng(0)
    for i in range(n):
        q = f"q{i}"
        rate = float(rng.choice([0.0, 1.0, 0.5, 0.02, 0.98]))
        rates[q] = (i, rate)
        rows.append({"id": f"id{i:03d}", "source": "t", "prompt": user_prompt(q), "answer": str(i), "level": None, "meta": "{}"})
    return to_table(rows), rates


def test_adaptive_per_level_prior_decides_in_band_problems_better(tmp_path, pool):
    """A level that holds the in-band problems keeps a 0/2 or 2/2 screen of a p=0.5 problem from
    being taken for an extreme one; the prior is refitted with the history of earlier chunks."""
    from grpo_data.curriculum.stats import row_priors

    problems, rates = scripted_problems(120)
    level = [int(round(2 * rates[f"q{i}"][1])) for i in range(120)]  # unsolved 0, in band 1, solved 2
    problems = problems.with_columns(pl.Series("level", level, dtype=problems.schema["level"]))
    rule = StoppingRule()
    right = {}
    for groups in ("level", "none"):
        out = tmp_path / f"{groups}.parquet"
        cfg = ProfileConfig(rule=rule, chunk_size=40, prior_groups=groups)
        profile_problems(problems, ScriptedEngine(rates), pool, cfg, out, progress=False)
        table = merge_parts(out)
        true = np.array([rates[f"q{int(i[2:])}"][1] for i in table["id"]])
        c, k = table["n_correct"].to_numpy(), table["k"].to_numpy()
        lv = np.array([int(round(2 * r)) for r in true]) if groups == "level" else None
        decided = rule.in_band(c, k, row_priors(c, k, lv))
        assert table.height == 120 and k[np.isin(true, (0.0, 1.0))].max() <= 8
        right[groups] = np.mean(decided[true == 0.5])
    assert right["level"] >= 0.9 and right["level"] > right["none"]


def test_summarize_problem_row():
    row = summarize_problem(4, 16, [10, 12], 2, {"ok": 4, "wrong": 12})
    assert row["pass_rate"] == 0.25 and row["post_a"] == 4.5 and row["post_b"] == 12.5
    assert row["ci_low"] < 0.25 < row["ci_high"] and row["truncation_rate"] == 0.125
    assert row["n_ok"] == 4 and row["n_timeout"] == 0 and row["mean_completion_tokens"] == 11
    assert (row["k_rounds"], row["n_correct_rounds"]) == ([16], [4])
    rounds = summarize_problem(3, 6, [], 0, {}, rounds=([2, 2, 2], [0, 1, 2]))
    assert (rounds["k_rounds"], rounds["n_correct_rounds"]) == ([2, 2, 2], [0, 1, 2])


def test_fixed_k_profile_rows_and_metadata(tmp_path, pool):
    problems, rates = scripted_problems()
    engine = ScriptedEngine(rates)
    out = tmp_path / "p.parquet"
    stats = profile_problems(problems, engine, pool, ProfileConfig(k=16, chunk_size=16), out,
                             metadata={"model": "scripted"}, progress=False)
    assert stats["samples"] == 40 * 16
    table = merge_parts(out, expected_ids=set(problems["id"].to_list()))
    assert table.columns == PROFILE_COLUMNS and table.height == 40
    assert table["k_rounds"].to_list() == [[16]] * 40  # fixed k: one round
    assert table["n_correct_rounds"].list.first().to_list() == table["n_correct"].to_list()
    joined = table.join(problems.select("id", "answer"), on="id")
    for rid, rate in zip(joined["id"], joined["pass_rate"], strict=True):
        true = rates[f"q{int(rid[2:])}"][1]
        if true in (0.0, 1.0):
            assert rate == true
    read, meta = read_profile(out)
    assert read.equals(table) and meta["model"] == "scripted" and meta["rows"] == 40
    assert json.loads((tmp_path / "p.json").read_text())["samples"] == 640


def test_adaptive_uses_fewer_samples_and_agrees_on_clear_cases(tmp_path, pool):
    problems, rates = scripted_problems(80)
    rule = StoppingRule(confidence=0.9, screen_k=4, step_k=4, max_k=32)
    stats = profile_problems(problems, ScriptedEngine(rates), pool, ProfileConfig(rule=rule, chunk_size=40, prior_groups="none"),
                             tmp_path / "a.parquet", progress=False)
    table = merge_parts(tmp_path / "a.parquet")
    assert stats["samples"] < 80 * 16 / 2
    weights = fit_grid_prior(table["n_correct"].to_numpy(), table["k"].to_numpy())
    halves = []
    for rid, c, k in zip(table["id"], table["n_correct"], table["k"], strict=True):
        true = rates[f"q{int(rid[2:])}"][1]
        if true in (0.0, 1.0):
            assert k <= 8 and not rule.in_band(c, k, weights)[0]
        if true == 0.5:
            halves.append(bool(rule.in_band(c, k, weights)[0]))
    assert np.mean(halves) >= 0.9
    # each problem's rounds: the screen, then steps of 4, summing to its counts (what a DART-style export lists)
    for row in table.iter_rows(named=True):
        assert row["k_rounds"] == [4] * (row["k"] // 4) and sum(row["n_correct_rounds"]) == row["n_correct"]
        assert all(0 <= c <= n for c, n in zip(row["n_correct_rounds"], row["k_rounds"], strict=True))
    assert table["k"].max() > 4  # some problem was sampled in more than one round


def test_rerun_skips_finished_ids_and_shards_merge(tmp_path, pool):
    problems, rates = scripted_problems(30)
    out = tmp_path / "s.parquet"
    for i in range(3):
        profile_problems(problems, ScriptedEngine(rates, seed=i), pool, ProfileConfig(k=4, chunk_size=4), out,
                         shard=(i, 3), progress=False)
    assert sum(shard_slice(problems, (i, 3)).height for i in range(3)) == 30
    engine = ScriptedEngine(rates)
    again = profile_problems(problems, engine, pool, ProfileConfig(k=4), out, shard=(1, 3), progress=False)
    assert again["problems"] == 0 and engine.calls == 0
    table = merge_parts(out, expected_ids=set(problems["id"].to_list()), n_shards=3)
    assert table.height == 30 and table["id"].n_unique() == 30
    with pytest.raises(RuntimeError, match="shards \\[0, 1, 2, 3\\] of 4 have not finished"):
        merge_parts(out, n_shards=4)


def test_a_rerun_under_other_judging_rules_is_refused(tmp_path, pool):
    """Parts judged under one rule set keep their rows on resume: a run under another would mix two under one hash."""
    problems, rates = scripted_problems(8)
    out, cfg = tmp_path / "p.parquet", ProfileConfig(k=2, chunk_size=4)
    meta = {"verifier": {"rules_hash": "aaaa", "fingerprint": "ffff", "pred_tail_chars": 2000},
            "versions": {"math-verify": "0.9.0", "sympy": "1.14.0", "torch": "2.0"}}
    profile_problems(problems.sort("id").head(4), ScriptedEngine(rates), pool, cfg, out, metadata=meta, progress=False)
    for changed, said in [({"verifier": {**meta["verifier"], "rules_hash": "bbbb"}}, "rules_hash: 'aaaa' -> 'bbbb'"),
                          ({"verifier": {**meta["verifier"], "pred_tail_chars": 500}}, "pred_tail_chars: 2000 -> 500"),
                          ({"versions": {**meta["versions"], "sympy": "1.15.0"}}, "sympy: '1.14.0' -> '1.15.0'")]:
        with pytest.raises(ResumeError, match=rf"p.parquet: its finished parts .*{re.escape(said)}.*--restart"):
            profile_problems(problems, ScriptedEngine(rates), pool, cfg, out, metadata={**meta, **changed},
                             progress=False)
    # another torch judges nothing: the run resumes
    newer = {**meta, "versions": {**meta["versions"], "torch": "2.1"}}
    assert profile_problems(problems, ScriptedEngine(rates), pool, cfg, out, metadata=newer, progress=False)["problems"] == 4
    discard_parts(out)  # --restart
    other = {**meta, "verifier": {**meta["verifier"], "rules_hash": "bbbb"}}
    assert profile_problems(problems, ScriptedEngine(rates), pool, cfg, out, metadata=other, progress=False)["problems"] == 8


def test_a_rerun_under_other_drawing_settings_is_refused(tmp_path, pool):
    """A resumed profile equals an uninterrupted one only when the same weights, seed and chunks drew it:
    another seed, chunk size, temperature or model is refused and named, a moved model (same hash) is not."""
    problems, rates = scripted_problems(8)
    out, cfg = tmp_path / "p.parquet", ProfileConfig(k=2, chunk_size=4)

    def meta(config, **top):
        return {"model": "/m/a", "weights_hash": "w1", "engine": "scripted", "seeding": "per-request",
                "context_length": 192, "template_hash": "t1", "config": config.to_dict(), **top}

    profile_problems(problems.sort("id").head(4), ScriptedEngine(rates), pool, cfg, out, metadata=meta(cfg),
                     progress=False)
    hot = SamplingConfig(temperature=0.6)
    for other, top, said in [(ProfileConfig(k=2, chunk_size=4, seed=1), {}, "config.seed: 0 -> 1"),
                             (ProfileConfig(k=2, chunk_size=8), {}, "config.chunk_size: 4 -> 8"),
                             (ProfileConfig(k=2, chunk_size=4, sampling=hot), {}, "'temperature': 1.0"),
                             (cfg, {"weights_hash": "w2"}, "weights: 'w1' -> 'w2'"),
                             (cfg, {"context_length": 256}, "context_length: 192 -> 256")]:
        with pytest.raises(ResumeError, match=rf"p.parquet: its finished parts .*drawn under other settings"
                                              rf".*{re.escape(said)}.*--restart"):
            profile_problems(problems, ScriptedEngine(rates), pool, other, out, metadata=meta(other, **top),
                             progress=False)
    moved = meta(cfg, model="/elsewhere/a")  # same weights under another path: the run resumes
    assert profile_problems(problems, ScriptedEngine(rates), pool, cfg, out, metadata=moved, progress=False)["problems"] == 4


def test_the_pipelines_profile_key_names_what_judges_the_samples(tmp_path):
    from grpo_data.verify.judge import rules_hash, verdict_fingerprint
    from pipelines.pipeline import profile_key

    train = tmp_path / "train.parquet"
    pl.DataFrame({"id": ["a", "b"]}).write_parquet(train)
    judged = profile_key("some/model", train, {})["judged"]
    assert judged["rules_hash"] == rules_hash() and judged["fingerprint"] == verdict_fingerprint(2000)
    assert judged["pred_tail_chars"] == 2000 and judged["sympy"] and judged["math-verify"]


class ReseedableEngine(ScriptedEngine):
    """ScriptedEngine whose stream restarts on `reseed`, as the real engines' do."""

    def reseed(self, seed):
        self.rng = np.random.default_rng(seed)


def test_round_seed_is_a_function_of_seed_ids_and_round_only():
    from grpo_data.generation.seeding import round_seed

    ids = ["id004", "id005", "id006"]
    assert round_seed(0, ids, 0) == round_seed(0, list(ids), 0)  # same inputs, same seed (no hidden state)
    assert 0 <= round_seed(0, ids, 0) < 2**32
    others = {round_seed(1, ids, 0), round_seed(0, ids, 1), round_seed(0, ids[:2], 0), round_seed(0, ids[::-1], 0)}
    assert round_seed(0, ids, 0) not in others and len(others) == 4


def test_chunks_are_cut_from_the_full_list_whatever_is_done():
    """A resumed run's chunks hold the problems the uninterrupted run's chunks held (so their seeds
    and batches match), not the next chunk_size problems left."""
    from grpo_data.profiler import chunk_plan

    ids = [f"id{i:02d}" for i in range(10)]
    whole = [c["id"].to_list() for c in chunk_plan(ids, pl.DataFrame({"id": ids}), 4)]
    assert whole == [ids[0:4], ids[4:8], ids[8:10]]
    left = pl.DataFrame({"id": [i for i in ids if i not in ("id00", "id01", "id05")]})  # done or left out
    assert [c["id"].to_list() for c in chunk_plan(ids, left, 4)] == [["id02", "id03"], ["id04", "id06", "id07"], ids[8:10]]
    with pytest.raises(ValueError, match="not in the shard"):
        chunk_plan(ids[:5], left, 4)


@pytest.mark.parametrize("rule", [None, StoppingRule(confidence=0.9, screen_k=2, step_k=2, max_k=16)],
                         ids=["fixed", "adaptive"])
def test_a_resumed_profile_equals_an_uninterrupted_one(tmp_path, pool, rule):
    """Issue #34: a run stopped after two chunks and resumed with a fresh engine writes the rows an
    uninterrupted run writes (adaptive: the same rounds too, its history read back from the parts).
    The same with an engine that cannot be reseeded differs: the check can fail."""
    problems, rates = scripted_problems(40)
    cfg = ProfileConfig(k=6, rule=rule, chunk_size=8, seed=3, prior_groups="none")

    class Stop(Exception):
        pass

    def stop_after_two(chunk_no):
        if chunk_no == 1:
            raise Stop

    def run(engine_cls, name, interrupted):
        out = tmp_path / name
        if interrupted:
            with pytest.raises(Stop):
                profile_problems(problems, engine_cls(rates), pool, cfg, out, progress=False, on_chunk=stop_after_two)
            assert len(list(parts_dir(out).glob("*.parquet"))) == 2
        profile_problems(problems, engine_cls(rates), pool, cfg, out, progress=False)
        return merge_parts(out, expected_ids=set(problems["id"].to_list())).sort("id")

    whole = run(ReseedableEngine, "whole.parquet", False)
    resumed = run(ReseedableEngine, "resumed.parquet", True)
    assert resumed.equals(whole)
    if rule is not None:
        assert whole["k"].n_unique() > 1  # problems took different numbers of rounds
    drifting = run(ScriptedEngine, "drifting.parquet", True)
    assert not drifting.equals(run(ScriptedEngine, "drifting-whole.parquet", False))


def test_the_metadata_says_how_samples_were_seeded():
    from grpo_data.generation.seeding import SEEDING, SEEDING_ENGINE_WIDE, seeding_scheme

    problems, rates = scripted_problems(2)
    assert seeding_scheme(ReseedableEngine(rates)) == SEEDING
    assert seeding_scheme(ScriptedEngine(rates)) == SEEDING_ENGINE_WIDE
    # the exported card record and the dataset card carry it; an older profile without it says nothing
    from grpo_data.tables.card_provenance import seeding_note
    from grpo_data.tables.exports import card_record

    assert card_record({"seeding": SEEDING})["sampling"]["seeding"] == SEEDING
    assert "resumed after a crash equals an uninterrupted one" in seeding_note(SEEDING)
    assert "equals an uninterrupted" not in seeding_note(SEEDING_ENGINE_WIDE) and seeding_note(None) == ""


def test_unknown_engine_and_missing_model_fail_before_data(tmp_path):
    with pytest.raises(ValueError, match="unknown engine 'tgi'.*vllm, hf"):
        make_engine("tgi", "whatever")
    with pytest.raises(FileNotFoundError, match="does not exist"):
        make_engine("hf", str(tmp_path / "no-model"))
    proc = subprocess.run([sys.executable, "-m", "pipelines.cli", "profile", "--data", str(tmp_path / "absent.parquet"),
                           "--model", str(tmp_path / "no-model"), "--out", str(tmp_path / "o.parquet")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "no-model does not exist" in proc.stderr and "absent" not in proc.stderr


def test_dataset_with_no_valid_rows_fails_with_summary(tmp_path, untrained_policy):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"problem": "x"}\n')
    proc = subprocess.run([sys.executable, "-m", "pipelines.cli", "profile", "--data", str(bad), "--preset",
                           "problem_answer", "--model", str(untrained_policy), "--engine", "hf",
                           "--out", str(tmp_path / "o.parquet")], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1 and "no valid rows" in proc.stderr and "missing_answer: 1" in proc.stderr


@pytest.mark.slow
def test_resume_after_kill(tmp_path, world_tables, untrained_policy):
    """kill -9 mid-run, rerun: every id exactly once."""
    data = tmp_path / "train.parquet"
    world_tables["train"].head(96).write_parquet(data)
    out = tmp_path / "r.parquet"
    cmd = [sys.executable, "-m", "pipelines.cli", "profile", "--data", str(data), "--model", str(untrained_policy),
           "--engine", "hf", "--k", "4", "--chunk-size", "8", "--max-tokens", "8", "--out", str(out)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and len(list(parts_dir(out).glob("*.parquet"))) < 2:
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    n_parts = len(list(parts_dir(out).glob("*.parquet")))
    assert 2 <= n_parts < 12, "killed mid-run"
    assert not out.exists()
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert f"{n_parts * 8} already done" in done.stdout or "already done" in done.stdout
    table = pl.read_parquet(out)
    assert table.height == 96 and table["id"].n_unique() == 96
    assert set(table["id"].to_list()) == set(world_tables["train"].head(96)["id"].to_list())


def _profile_cmd(data, policy, out, engine):
    """`grpo profile`, adaptive (so rounds and the history read back from the parts both count)."""
    return [sys.executable, "-m", "pipelines.cli", "profile", "--data", str(data), "--model", str(policy),
            "--engine", engine, "--adaptive", "--screen-k", "2", "--step-k", "2", "--max-k", "8", "--chunk-size", "16",
            "--max-tokens", "64", "--seed", "7", "--workers", "1", "--out", str(out)]


@pytest.mark.slow
def test_a_profile_killed_and_resumed_equals_an_uninterrupted_one(tmp_path, world_tables, quick_policy):
    """Issue #34 item 5 with a real kill: vLLM (CPU, in-process), killed with SIGKILL once the first
    chunk's part is written, then rerun, writes the profile an uninterrupted run writes, every column
    of every row (counts, rounds, mean completion length). Before the fix the resumed part drew other
    samples (73 of 400 problems ended with other counts). The quick policy answers these problems
    wrongly but at lengths that vary from sample to sample, so the mean completion length per problem
    tells samples apart (the warm policy, whose counts would, takes minutes to build)."""
    from grpo_data.generation.seeding import SEEDING

    data = tmp_path / "train.parquet"
    world_tables["train"].sort("id").head(64).write_parquet(data)
    policy = quick_policy
    whole, resumed = tmp_path / "whole.parquet", tmp_path / "resumed.parquet"
    done = subprocess.run(_profile_cmd(data, policy, whole, "vllm"), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]

    proc = subprocess.Popen(_profile_cmd(data, policy, resumed, "vllm"), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and proc.poll() is None and not list(parts_dir(resumed).glob("*.parquet")):
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    n_parts = len(list(parts_dir(resumed).glob("*.parquet")))
    assert 1 <= n_parts < 4 and not resumed.exists(), "killed mid-run"
    again = subprocess.run(_profile_cmd(data, policy, resumed, "vllm"), capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr[-3000:]
    assert f"({16 * n_parts} already done)" in again.stdout

    a, meta = read_profile(whole)
    b, _ = read_profile(resumed)
    assert meta["seeding"] == SEEDING
    assert a.height == 64 and a["mean_completion_tokens"].n_unique() > 16  # samples leave a trace per problem
    assert b.equals(a), a.join(b, on="id", suffix="_resumed").filter(
        (pl.col("n_correct") != pl.col("n_correct_resumed")) | (pl.col("k") != pl.col("k_resumed")))


@pytest.mark.slow
def test_vllm_and_hf_agree_in_distribution(tmp_path, warm_policy, pool):
    """On the warm-started policy, whose pass rates spread from 0 to 1 across levels."""
    policy, world = warm_policy
    problems = world["train"].group_by("level", maintain_order=True).head(5)
    cfg = ProfileConfig(k=12, sampling=SamplingConfig(temperature=1.0, max_tokens=128), chunk_size=64)
    results = {}
    for name in ("vllm", "hf"):
        engine = make_engine(name, str(policy), seed=0)
        out = tmp_path / f"{name}.parquet"
        profile_problems(problems, engine, pool, cfg, out, progress=False)
        engine.close()
        results[name] = merge_parts(out).sort("id")
    v, h = results["vllm"], results["hf"]
    assert v.columns == PROFILE_COLUMNS and v.height == problems.height
    assert v["k"].to_list() == [12] * problems.height
    # same distribution, not the same samples: overall rate close, per-problem rates correlated
    assert abs(v["pass_rate"].mean() - h["pass_rate"].mean()) < 0.08
    assert np.corrcoef(v["pass_rate"].to_numpy(), h["pass_rate"].to_numpy())[0, 1] > 0.7
    assert (v["mean_completion_tokens"].mean() - h["mean_completion_tokens"].mean()) < 1.5


@pytest.mark.slow
def test_vllm_profile_leaves_out_a_prompt_over_the_context(tmp_path, world_tables, untrained_policy, pool):
    """Engine: the real vLLM engine on the embedded tiny policy (context 192 tokens). Issue #34: one
    prompt longer than the context made vLLM refuse the whole call and killed the profile at 0/N."""
    from grpo_data.tables.problems import to_table, user_prompt
    from grpo_data.tables.profile_table import rejects_file

    padded = to_table([{"id": f"zz{i}", "source": "t", "prompt": user_prompt("1+2" * n), "answer": "3", "level": 1,
                        "meta": "{}"} for i, n in ((0, 80), (1, 40))])  # over the context; fits with less room
    problems = pl.concat([world_tables["train"].head(6), padded])
    engine = make_engine("vllm", str(untrained_policy), seed=0)
    assert engine.context_length == 192
    try:
        skip = ProfileConfig(rule=StoppingRule(), sampling=SamplingConfig(max_tokens=128))
        out = tmp_path / "skip.parquet"
        stats = profile_problems(problems, engine, pool, skip, out, metadata={"config": skip.to_dict()}, progress=False)
        assert (stats["problems"], stats["left_out"]) == (6, 2)
        table = merge_parts(out, expected_ids=set(problems["id"].to_list()))
        assert sorted(table["id"].to_list()) == sorted(world_tables["train"].head(6)["id"].to_list())
        reasons = {r["id"]: r["reason"] for r in map(json.loads, rejects_file(out).read_text().splitlines())}
        assert reasons == {"zz0": "prompt_over_context", "zz1": "budget_over_context"}
        again = profile_problems(problems, engine, pool, skip, out, progress=False)  # the rerun does not die on them
        assert (again["problems"], again["samples"], again["left_out"]) == (0, 0, 2)

        clip = ProfileConfig(k=4, sampling=SamplingConfig(max_tokens=128), overlong_prompts="clip")
        out = tmp_path / "clip.parquet"
        stats = profile_problems(problems, engine, pool, clip, out, metadata={"config": clip.to_dict()}, progress=False)
        assert (stats["problems"], stats["left_out"], stats["clipped"]) == (7, 1, 1)
        row = merge_parts(out).filter(pl.col("id") == "zz1").row(0, named=True)
        assert 32 <= row["max_tokens"] < 128 and row["mean_completion_tokens"] <= row["max_tokens"]
    finally:
        engine.close()
