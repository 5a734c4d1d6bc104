"""Prompts that do not fit the engine's context (issue #34 item 6): the pure decision, the sampler's
per-prompt budgets, the profiler's left-out problems and resume, and training's tables.

Engines exercised: none (pure functions), `BudgetEngine` / `ScriptedEngine` test doubles that
state a context length; the real vLLM engine is in tests/test_profiler.py
(`test_vllm_profile_leaves_out_a_prompt_over_the_context`)."""

import json
from types import SimpleNamespace

import polars as pl
import pytest

from grpo_data.generation.context import LEFT_OUT_SCHEMA, ContextPolicy, fit_problems, fit_prompt
from grpo_data.generation.engines import Completion, check_engine_context, config_context_length
from grpo_data.generation.prompting import PromptConfig, SamplingConfig
from grpo_data.generation.rollouts import RolloutSampler
from grpo_data.profile_config import ProfileConfig, profile_options
from grpo_data.profile_metadata import run_metadata
from grpo_data.profile_parts import merge_parts
from grpo_data.profiler import profile_problems
from grpo_data.tables.profile_table import read_profile, rejects_file


# (prompt tokens, max_tokens, context, policy, min_tokens) -> (status, budget, reason)
@pytest.mark.parametrize("args, expected", [
    ((64, 128, 192, "skip", 32), ("kept", 128, None)),            # exactly fills the context: vLLM admits it
    ((65, 128, 192, "skip", 32), ("left_out", 0, "budget_over_context")),
    ((65, 128, 192, "clip", 32), ("clipped", 127, None)),
    ((160, 128, 192, "clip", 32), ("clipped", 32, None)),          # room equal to the floor: still clipped
    ((161, 128, 192, "clip", 32), ("left_out", 0, "prompt_over_context")),
    ((161, 128, 192, "skip", 32), ("left_out", 0, "prompt_over_context")),
    ((202, 128, 192, "clip", 32), ("left_out", 0, "prompt_over_context")),  # the prompt
    ((202, 128, 192, "skip", 32), ("left_out", 0, "prompt_over_context")),
    ((180, 8, 192, "skip", 32), ("kept", 8, None)),
    ((186, 8, 192, "clip", 32), ("left_out", 0, "prompt_over_context")),  # floor capped at max_tokens: 8 > 6
    ((186, 8, 192, "clip", 4), ("clipped", 6, None)),
    ((190, 8, 192, "clip", 4), ("left_out", 0, "prompt_over_context")),  # 2 tokens of room, floor 4
    ((192, 8, 192, "clip", 1), ("left_out", 0, "prompt_over_context")),  # no room at all
])
def test_fit_prompt_table(args, expected):
    fit = fit_prompt(*args)
    assert (fit.status, fit.max_tokens, fit.reason) == expected
    if fit.reason:
        assert f"{args[0]} prompt tokens + {args[1]} max_tokens > context {args[2]}" in fit.detail


def test_policy_refuses_unknown_names_and_bad_floors():
    with pytest.raises(ValueError, match="skip, clip.*'truncate'"):
        ContextPolicy(192, "truncate")
    with pytest.raises(ValueError, match="min clipped tokens must be >= 1"):
        ContextPolicy(192, "clip", 0)
    with pytest.raises(ValueError, match="skip, clip"):
        ProfileConfig(overlong_prompts="drop")
    cfg, _ = profile_options({"overlong_prompts": "clip", "min_clipped_tokens": 8})
    assert (cfg.overlong_prompts, cfg.min_clipped_tokens) == ("clip", 8)
    assert cfg.to_dict()["overlong_prompts"] == "clip"


def test_fit_problems_splits_the_table_with_reasons():
    problems = pl.DataFrame({"id": ["a", "b", "c", "d"], "x": [1, 2, 3, 4]})
    result = fit_problems(problems, [10, 300, 100, 40], 128, ContextPolicy(192, "clip", 32))
    assert result.kept["id"].to_list() == ["a", "c", "d"] and result.budgets == [128, 92, 128]
    assert result.clipped == 1 and result.counts() == {"prompt_over_context": 1}
    assert result.left_out.schema == LEFT_OUT_SCHEMA
    row = result.left_out.row(0, named=True)
    assert (row["id"], row["prompt_tokens"], row["max_tokens"], row["context"]) == ("b", 300, 128, 192)
    with pytest.raises(ValueError, match="3 prompt lengths for 4 problems"):
        fit_problems(problems, [1, 2, 3], 128, ContextPolicy(192))


def test_context_length_from_a_model_config_and_the_engine_check():
    assert config_context_length(SimpleNamespace(max_position_embeddings=192)) == 192
    assert config_context_length(SimpleNamespace(max_position_embeddings=4096, seq_length=2048)) == 2048
    with pytest.raises(ValueError, match="m: its config names no context length.*max_model_len"):
        config_context_length(SimpleNamespace(hidden_size=8), "m")
    check_engine_context(SimpleNamespace(name="vllm", context_length=256), 192)  # longer than fitted: fine
    with pytest.raises(ValueError, match="engine's context is 128 tokens, the problems were fitted to 192.*128"):
        check_engine_context(SimpleNamespace(name="vllm", context_length=128), 192)


class BudgetEngine:
    """Test double: records the max_tokens of every generate call and answers within it; refuses a
    prompt over its context the way vLLM refuses the whole call."""

    name, model_path = "budget", "budget"

    def __init__(self, context: int):
        from grpo_train.tiny_policy import build_tokenizer

        self.context_length = context
        self.tokenizer = build_tokenizer()
        self.calls: list[tuple[int, int]] = []  # (prompts, max_tokens)

    def generate(self, prompts, n, sampling):
        for p in prompts:
            if len(p) > self.context_length:
                raise RuntimeError(f"maximum context length is {self.context_length} tokens, prompt has {len(p)}")
        self.calls.append((len(prompts), sampling.max_tokens))
        return [[Completion("\\boxed{1}", (5,) * min(sampling.max_tokens, self.context_length - len(p)), "length")
                 for _ in range(n)] for p in prompts]


class Judge:
    @staticmethod
    def verify(golds, texts):
        return [SimpleNamespace(correct=True, reason="ok", answer="1") for _ in texts]


def test_sampler_generates_each_prompt_with_the_budget_that_fits():
    """Engine: BudgetEngine (test double)."""
    engine = BudgetEngine(context=40)
    policy = ContextPolicy(40, "clip", 4)
    sampler = RolloutSampler(engine, Judge(), engine.tokenizer, PromptConfig(), SamplingConfig(max_tokens=16),
                             answer_format=None, context=policy)
    short, longer = [1] * 20, [1] * 30  # 20 tokens of room: kept at 16; 10: clipped to 10
    groups = sampler.sample([short, longer, short], ["1"] * 3, 2)
    assert sorted(engine.calls) == [(1, 10), (2, 16)]
    assert [len(g.completions[0].token_ids) for g in groups] == [16, 10, 16]
    with pytest.raises(ValueError, match="prompt 1 of this call does not fit.*prompt_over_context"):
        sampler.sample([short, [1] * 38], ["1"] * 2, 2)
    assert len(engine.calls) == 2, "nothing is generated when one prompt cannot fit"


def _problems(questions):
    from grpo_data.tables.problems import to_table, user_prompt

    return to_table([{"id": f"id{i:02d}", "source": "t", "prompt": user_prompt(q), "answer": "1", "level": None,
                      "meta": "{}"} for i, q in enumerate(questions)])


def test_profile_leaves_out_a_prompt_longer_than_the_context_and_a_rerun_does_not_retry_it(tmp_path, pool):
    """Engine: BudgetEngine (test double refusing, like vLLM, a call holding a prompt over its context)."""
    problems = _problems(["1+1"] * 5 + ["1+2" * 80])  # the last one renders to about 260 tokens
    engine = BudgetEngine(context=192)
    out = tmp_path / "p.parquet"
    cfg = ProfileConfig(k=2, chunk_size=2, sampling=SamplingConfig(max_tokens=128))
    stats = profile_problems(problems, engine, pool, cfg, out, metadata={"config": cfg.to_dict()}, progress=False)
    assert (stats["problems"], stats["left_out"], stats["clipped"]) == (5, 1, 0)
    table = merge_parts(out, expected_ids=set(problems["id"].to_list()))  # the left-out one is no gap
    assert table["id"].to_list() == [f"id{i:02d}" for i in range(5)] and table["max_tokens"].to_list() == [128] * 5
    rejects = [json.loads(line) for line in rejects_file(out).read_text().splitlines()]
    assert [(r["id"], r["reason"], r["context"]) for r in rejects] == [("id05", "prompt_over_context", 192)]
    assert rejects[0]["prompt_tokens"] > 192
    _, meta = read_profile(out)
    assert meta["left_out"] == {"prompt_over_context": 1} and meta["clipped"] == 0
    engine.calls.clear()
    again = profile_problems(problems, engine, pool, cfg, out, progress=False)
    assert (again["problems"], again["skipped"], again["left_out"]) == (0, 5, 1) and engine.calls == []
    merge_parts(out, expected_ids=set(problems["id"].to_list()))


def test_profile_clip_records_the_budget_each_problem_was_measured_under(tmp_path, pool):
    """Engine: BudgetEngine (test double)."""
    problems = _problems(["1+1", "1+2" * 40, "1+2" * 80])  # fits; fits with less room; does not fit at all
    engine = BudgetEngine(context=192)
    out = tmp_path / "c.parquet"
    cfg = ProfileConfig(k=2, sampling=SamplingConfig(max_tokens=128), overlong_prompts="clip", min_clipped_tokens=16)
    stats = profile_problems(problems, engine, pool, cfg, out, metadata={"config": cfg.to_dict()}, progress=False)
    assert (stats["problems"], stats["left_out"], stats["clipped"]) == (2, 1, 1)
    table = merge_parts(out, expected_ids=set(problems["id"].to_list()))
    budgets = dict(zip(table["id"], table["max_tokens"], strict=True))
    assert budgets["id00"] == 128 and 16 <= budgets["id01"] < 128
    assert table.filter(pl.col("id") == "id01")["mean_completion_tokens"].item() == budgets["id01"]
    _, meta = read_profile(out)
    assert meta["clipped"] == 1 and meta["left_out"] == {"prompt_over_context": 1}


def test_training_tables_lose_the_problems_that_cannot_fit(tmp_path):
    """No engine: the tokenizer of the embedded tiny policy (context 192)."""
    from grpo_train.prompt_fit import LEFT_OUT_FILE, fit_run_data
    from grpo_train.tiny_policy import build_tokenizer

    train, held = _problems(["1+1", "1+2" * 80, "2+2"]), _problems(["3+3", "1+2" * 80])
    fit = fit_run_data(train, held, build_tokenizer(), PromptConfig(), 128, ContextPolicy(192), tmp_path)
    assert fit.problems["id"].to_list() == ["id00", "id02"] and fit.heldout["id"].to_list() == ["id00"]
    assert fit.heldout_left_out == 1
    written = pl.read_ndjson(tmp_path / LEFT_OUT_FILE)
    assert written.select("split", "id", "reason").rows() == [("train", "id01", "prompt_over_context"),
                                                            ("heldout", "id01", "prompt_over_context")]
    with pytest.raises(ValueError, match="no problem of data.train fits the context of 192 tokens"):
        fit_run_data(_problems(["1+2" * 80]), None, build_tokenizer(), PromptConfig(), 128, ContextPolicy(192), None)


def test_the_card_counts_the_problems_the_profile_left_out(tmp_path, pool):
    """Engine: BudgetEngine (test double, context 192); profile -> shards -> card."""
    from grpo_data.tables.cards import write_card
    from grpo_data.tables.shards import write_shards

    problems = _problems(["1+1", "2+2", "1+2" * 80])
    out = tmp_path / "p.parquet"
    cfg = ProfileConfig(k=2, sampling=SamplingConfig(max_tokens=128))
    engine = BudgetEngine(context=192)
    meta = run_metadata(engine, cfg, "t", {})
    profile_problems(problems, engine, pool, cfg, out, metadata=meta, progress=False)
    merge_parts(out, expected_ids=set(problems["id"].to_list()))
    profile, meta = read_profile(out)
    manifest = write_shards(problems, profile, tmp_path / "s", profile_meta=meta, rejected={"duplicate": 2})
    assert manifest["rejected"] == {"duplicate": 2, "prompt_over_context": 1} and manifest["unprofiled"] == 1
    text = write_card(tmp_path / "s", "ctx", tmp_path / "card.md").read_text()
    assert "| prompt_over_context | 1 |" in text
    assert "Not profiled (left out): 1, of which 1 did not fit the profiling context" in text
    assert "Context: 192 tokens (prompt + completion)" in text and "1 left out, 0 profiled with a smaller" in text


def test_train_config_names_the_policy_and_the_context_comes_from_the_model(untrained_policy):
    """No engine: the embedded tiny policy's config (max_position_embeddings 192)."""
    from grpo_train.config_io import load_config
    from grpo_train.prompt_fit import rollout_context

    with pytest.raises(ValueError, match="rollout.overlong_prompts must be skip or clip .*'cut'"):
        load_config(None, ["rollout.overlong_prompts=cut"])
    cfg = load_config(None, ["rollout.overlong_prompts=clip", "rollout.min_clipped_tokens=8"])
    policy = rollout_context(str(untrained_policy), cfg.rollout)
    assert (policy.context, policy.policy, policy.min_tokens) == (192, "clip", 8)
    cfg = load_config(None, ["rollout.vllm.max_model_len=160"])
    assert rollout_context(str(untrained_policy), cfg.rollout).context == 160


@pytest.mark.slow
def test_training_never_draws_a_problem_over_the_context_and_evaluation_states_its_denominator(
        tmp_path, world_tables, untrained_policy):
    """Engine: the real vLLM engine (and DeepSpeed) on the embedded tiny policy, context 192 tokens."""
    import subprocess
    import sys

    from grpo_data.tables.problems import to_table, user_prompt

    over = to_table([{"id": "zz-over", "source": "t", "prompt": user_prompt("1+2" * 80), "answer": "3", "level": 1,
                      "meta": "{}"}])
    train, held = tmp_path / "train.parquet", tmp_path / "held.parquet"
    pl.concat([world_tables["train"].head(8), over]).write_parquet(train)
    pl.concat([world_tables["heldout"].head(4), over]).write_parquet(held)
    out = tmp_path / "run"
    args = [f"model={untrained_policy}", f"data.train={train}", f"data.heldout={held}", f"run.out={out}",
            "rollout.batch_groups=2", "rollout.group_size=2", "rollout.max_tokens=128", "rollout.max_rounds=1",
            "run.steps=1", "run.eval_every=1", "run.save_every=0", "run.progress=false", "run.eval_k=2",
            "scheduler.name=uniform"]
    proc = subprocess.run([sys.executable, "-m", "pipelines.cli", "train", *[a for o in args for a in ("-o", o)]],
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    left = pl.read_ndjson(out / "left_out.jsonl")
    assert left.select("split", "id", "reason").rows() == [("train", "zz-over", "prompt_over_context"),
                                                          ("heldout", "zz-over", "prompt_over_context")]
    evals = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines() if '"eval"' in line]
    assert evals and all(r["heldout_problems"] == 4 and r["heldout_left_out"] == 1 for r in evals)
    assert "1 of 9 left out" in proc.stderr and "1 of 5 left out" in proc.stderr


def test_loading_rejects_prompts_that_cannot_fit_when_given_a_tokenizer_and_a_context(tmp_path, untrained_policy):
    """No engine: `grpo load` with the embedded tiny policy's tokenizer and its context (192 tokens)."""
    from grpo_data.tables.loaders import LoadLimits, load_problems
    from grpo_data.tables.presets import resolve_preset
    from grpo_data.tables.readers import DataError

    data = tmp_path / "p.jsonl"
    rows = [{"problem": "1+1", "answer": "2"}, {"problem": "1+2" * 80, "answer": "3"}, {"problem": "1+2" * 40, "answer": "4"}]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    preset = resolve_preset("problem_answer")
    limits = LoadLimits(tokenizer=str(untrained_policy), context_length=192, max_tokens=128)
    result = load_problems(str(data), preset, limits)
    assert result.table["answer"].to_list() == ["2"]
    assert result.rejects.select("row", "reason").rows() == [(1, "prompt_over_context"), (2, "budget_over_context")]
    assert "> context 192" in result.rejects["detail"][0]
    clip = load_problems(str(data), preset, LoadLimits(tokenizer=str(untrained_policy), context_length=192,
                                                       max_tokens=128, overlong_prompts="clip"))
    assert clip.table["answer"].to_list() == ["2", "4"] and clip.reject_counts == {"prompt_over_context": 1}
    with pytest.raises(DataError, match="context_length needs a tokenizer"):
        load_problems(str(data), preset, LoadLimits(context_length=192))
