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


def test_the_frontier_world_weighs_evaluation_toward_the_frontier_and_holds_a_transfer_split():
    """#59 item 1: levels 1-12; the pool holds levels 1-10 shaped like real data; test puts most of its
    problems at levels 6-10; transfer holds levels the pool never does; every split disjoint by text."""
    from grpo_data.tables.world import EXTRA_SPLITS, frontier_level_weights, frontier_world

    cfg = frontier_world(seed=0)
    w = generate(cfg)
    assert set(w) == set(SPLITS) | set(EXTRA_SPLITS)
    counts = {s: dict(w[s].group_by("level").len().iter_rows()) for s in w}
    assert counts["train"] == cfg.pool and set(counts["train"]) == set(range(1, 11))
    assert counts["transfer"] == {11: 60, 12: 60} and not set(counts["transfer"]) & set(counts["train"])
    assert sum(n for lv, n in counts["test"].items() if lv >= 6) / w["test"].height > 0.7
    assert set(counts["sft"]) == set(range(1, 13))  # every level seen in SFT: no wall
    ref = counts["reference"]  # the pool's level mix, 200 problems
    assert abs(sum(ref.values()) - 200) <= 5 and all(abs(ref[lv] / sum(ref.values()) - n / 840) < 0.01 for lv, n in cfg.pool.items())
    sets = {s: texts(w[s]) for s in w}
    names = list(w)
    for i, s in enumerate(names):
        for t in names[i + 1:]:
            assert not sets[s] & sets[t], f"{s} and {t} share problems"
    weights = frontier_level_weights()
    assert set(weights) == set(range(1, 13)) and abs(sum(weights.values()) - 1) < 1e-9
    assert min(weights[lv] for lv in range(1, 7)) > max(weights[lv] for lv in range(7, 13)) > 0


def test_a_world_without_extra_splits_is_unchanged():
    """The default world's splits, dict and draws do not move when worlds may hold extra splits."""
    from grpo_data.tables.world import world_config

    assert world_config("default", 0) == WorldConfig(seed=0)
    assert set(WorldConfig().to_dict()) == {"seed", "pool", "val_per_level", "test_per_level", "sft"}
    assert WorldConfig().splits == SPLITS
    with pytest.raises(ValueError, match="transfer levels must be levels the RL pool does not hold"):
        WorldConfig(transfer={10: 5})
    with pytest.raises(ValueError, match="unknown world preset"):
        world_config("hard", 0)


def test_the_frontier_pipeline_writes_every_split(tmp_path):
    from pipelines.stages import write_world

    paths = write_world(tmp_path / "w", seed=0, scale=0.1, preset="frontier")
    assert {"transfer", "reference", "heldout"} <= set(paths) and paths["transfer"].exists()
    assert json.loads(paths["config"].read_text())["preset"] == "frontier"
    again = write_world(tmp_path / "w", seed=0, scale=0.1, preset="frontier")  # reused, not regenerated
    assert again["transfer"].stat().st_mtime_ns == paths["transfer"].stat().st_mtime_ns


def test_the_frontier_pipeline_warm_starts_with_the_frontier_mix():
    """pipelines/frontier.yaml writes the mix out (a YAML cannot call Python): it must stay the preset's."""
    from pathlib import Path

    import yaml

    from grpo_data.tables.world import frontier_level_weights

    spec = yaml.safe_load((Path(__file__).resolve().parent.parent / "pipelines" / "frontier.yaml").read_text())
    assert spec["world"]["preset"] == "frontier"
    assert {int(k): v for k, v in spec["bootstrap"]["level_weights"].items()} == frontier_level_weights()
