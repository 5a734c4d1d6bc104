"""The embedded world (chains of written steps, four disjoint splits) and the tiny policy's files."""

import json
import random

import polars as pl
import pytest

from grpo_data.tables.problems import SCHEMA
from grpo_data.tables.world import LEVELS, SPLITS, WorldConfig, chain, evaluate, generate, solution

SMALL = WorldConfig(seed=3, pool=dict.fromkeys(LEVELS, 30), val_per_level=8, test_per_level=8,
                    sft=dict.fromkeys(LEVELS, 40))


def texts(table: pl.DataFrame) -> set[str]:
    return set(table["prompt"].list.first().struct.field("content").to_list())


def test_generation_is_deterministic_from_seed():
    a, b = generate(SMALL), generate(SMALL)
    assert all(a[s].equals(b[s]) for s in SPLITS)
    other = generate(WorldConfig(seed=4, pool=SMALL.pool, val_per_level=8, test_per_level=8, sft=SMALL.sft))
    assert not a["train"]["id"].equals(other["train"]["id"])


def test_four_splits_are_disjoint_and_sized():
    w = generate(SMALL)
    for table in w.values():
        assert table.schema == SCHEMA
    sets = {s: texts(w[s]) for s in SPLITS}
    for i, s in enumerate(SPLITS):
        assert len(sets[s]) == w[s].height  # no repeats inside a split
        for t in SPLITS[i + 1:]:
            assert not sets[s] & sets[t], f"{s} and {t} share problems"
    counts = {s: dict(w[s].group_by("level").len().iter_rows()) for s in SPLITS}
    assert counts["train"] == dict.fromkeys(LEVELS, 30) and counts["test"] == dict.fromkeys(LEVELS, 8)
    assert counts["val"] == dict.fromkeys(LEVELS, 8) and counts["sft"] == dict.fromkeys(LEVELS, 40)


def test_default_pool_is_shaped_like_real_data():
    pool = WorldConfig().pool
    short, middle, long = pool[1] + pool[2], pool[4] + pool[5], pool[7] + pool[8]
    assert short > middle and long > middle


def test_chains_stay_in_range_and_their_level_is_their_length():
    rng = random.Random(0)
    for steps in LEVELS:
        for _ in range(200):
            expr, lines, value = chain(rng, steps)
            assert len(lines) == steps and evaluate(expr) == value
            values = [int(line.split("=")[1]) for line in lines]
            assert all(0 <= v <= 99 for v in values)


def test_solution_writes_every_step_then_the_boxed_value():
    assert solution("47+5-8+3") == "47+5=52\n52-8=44\n44+3=47\n\\boxed{47}"
    assert solution("9-9") == "9-9=0\n\\boxed{0}"
    w = generate(SMALL)["train"]
    for meta, answer, level in zip(w["meta"].to_list(), w["answer"].to_list(), w["level"].to_list(), strict=True):
        text = solution(json.loads(meta)["expr"])
        assert text.endswith(f"\\boxed{{{answer}}}") and text.count("\n") == level


def test_evaluate_refuses_anything_else():
    with pytest.raises(ValueError, match="unexpected character"):
        evaluate("__import__('os')")
    with pytest.raises(ValueError, match="malformed"):
        evaluate("3+-4")


def test_scaled_world_keeps_the_sft_split():
    small = WorldConfig().scaled(0.25)
    assert small.pool[1] == round(WorldConfig().pool[1] * 0.25) and small.sft == WorldConfig().sft
    with pytest.raises(ValueError, match="scale"):
        WorldConfig().scaled(0)


def test_every_gold_verifies_after_written_steps_and_a_wrong_number_does_not(pool):
    w = generate(SMALL)["train"]
    golds = w["answer"].to_list()
    exprs = [json.loads(m)["expr"] for m in w["meta"].to_list()]
    right = pool.verify(golds, [solution(e) for e in exprs])
    assert all(v.correct for v in right)
    wrong = pool.verify(golds, [solution(e).rsplit("\\boxed", 1)[0] + f"\\boxed{{{int(g) + 1}}}"
                                for e, g in zip(exprs, golds, strict=True)])
    assert not any(v.correct for v in wrong)


def test_tokenizer_reloads_identically(tmp_path):
    from transformers import AutoTokenizer

    from grpo_train.tiny_policy import TinyModelConfig, build_model, build_tokenizer

    tok = build_tokenizer()
    build_model(tok, TinyModelConfig(), seed=0).save_pretrained(tmp_path)
    tok.save_pretrained(tmp_path)
    loaded = AutoTokenizer.from_pretrained(tmp_path)
    text = tok.apply_chat_template([{"role": "user", "content": "What is 47+5-8?"}], tokenize=False,
                                   add_generation_prompt=True) + solution("47+5-8") + "<|im_end|>"
    assert loaded(text)["input_ids"] == tok(text)["input_ids"]
    assert loaded.decode(loaded(text)["input_ids"]) == text
    assert loaded.eos_token == "<|im_end|>" and loaded.chat_template == tok.chat_template
    # digits are one token each
    assert tok.tokenize("123") == ["1", "2", "3"]


def test_model_config_refuses_unsupported_head_size():
    from grpo_train.tiny_policy import TinyModelConfig

    with pytest.raises(ValueError, match="vLLM CPU"):
        TinyModelConfig(hidden_size=120, num_heads=4)
