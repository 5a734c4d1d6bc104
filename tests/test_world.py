"""The embedded world and the tiny policy's tokenizer/model files."""

import random

import polars as pl
import pytest

from grpo_data.problems import SCHEMA
from grpo_data.world import LEVELS, WorldConfig, evaluate, generate

SMALL = WorldConfig(seed=3, per_level_train=40, per_level_heldout=10)


def test_generation_is_deterministic_from_seed():
    a, b = generate(SMALL), generate(SMALL)
    assert a["train"].equals(b["train"]) and a["heldout"].equals(b["heldout"])
    other = generate(WorldConfig(seed=4, per_level_train=40, per_level_heldout=10))
    assert not a["train"]["id"].equals(other["train"]["id"])


def test_schema_levels_and_disjoint_splits():
    w = generate(SMALL)
    for table in w.values():
        assert table.schema == SCHEMA
    assert sorted(w["train"]["level"].unique().to_list()) == sorted(LEVELS)
    train_text = set(w["train"]["prompt"].list.first().struct.field("content").to_list())
    held_text = set(w["heldout"]["prompt"].list.first().struct.field("content").to_list())
    assert not train_text & held_text
    assert w["train"]["id"].n_unique() == w["train"].height
    assert w["heldout"].filter(pl.col("level") == 1).height >= 1


@pytest.mark.parametrize("expr", ["3+5", "47-8", "31-58", "23*7", "12+45+78", "(12+45)*7", "2+3*4", "(1+2)*(3+4)"])
def test_evaluate_matches_arithmetic(expr):
    expected = {"3+5": 8, "47-8": 39, "31-58": -27, "23*7": 161, "12+45+78": 135, "(12+45)*7": 399,
                "2+3*4": 14, "(1+2)*(3+4)": 21}[expr]
    assert evaluate(expr) == expected


def test_evaluate_refuses_anything_else():
    with pytest.raises(ValueError, match="unexpected character"):
        evaluate("__import__('os')")


def test_every_gold_verifies_and_a_wrong_number_does_not(pool):
    w = generate(SMALL)["train"]
    golds = w["answer"].to_list()
    right = pool.verify(golds, [f"\\boxed{{{g}}}" for g in golds])
    assert all(v.correct for v in right)
    wrong = pool.verify(golds, [f"\\boxed{{{int(g) + 1}}}" for g in golds])
    assert not any(v.correct for v in wrong)


def test_levels_generate_their_shapes():
    rng = random.Random(0)
    assert all(0 <= evaluate(LEVELS[1](rng)) <= 18 for _ in range(50))
    assert all("*" in LEVELS[6](rng) for _ in range(5))
    assert all(LEVELS[8](rng).startswith("(") for _ in range(5))


def test_tokenizer_reloads_identically(tmp_path):
    from transformers import AutoTokenizer

    from grpo_train.tiny_policy import TinyModelConfig, build_model, build_tokenizer

    tok = build_tokenizer()
    build_model(tok, TinyModelConfig(), seed=0).save_pretrained(tmp_path)
    tok.save_pretrained(tmp_path)
    loaded = AutoTokenizer.from_pretrained(tmp_path)
    text = tok.apply_chat_template([{"role": "user", "content": "What is (12+45)*7?"}], tokenize=False,
                                   add_generation_prompt=True) + "\\boxed{-399}<|im_end|>"
    assert loaded(text)["input_ids"] == tok(text)["input_ids"]
    assert loaded.decode(loaded(text)["input_ids"]) == text
    assert loaded.eos_token == "<|im_end|>" and loaded.chat_template == tok.chat_template
    # digits are one token each
    assert tok.tokenize("123") == ["1", "2", "3"]


def test_model_config_refuses_unsupported_head_size():
    from grpo_train.tiny_policy import TinyModelConfig

    with pytest.raises(ValueError, match="vLLM CPU"):
        TinyModelConfig(hidden_size=120, num_heads=4)
