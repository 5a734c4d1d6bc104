"""Benchmark arithmetic: where a learning curve crosses a target, and its value at a budget."""

import pytest

from bench.e2e_bench import _level_totals, rollouts_to_reach
from bench.report import accuracy_at

CURVE = [{"rollouts_generated": 0, "heldout_accuracy": 0.40}, {"rollouts_generated": 1000, "heldout_accuracy": 0.50},
         {"rollouts_generated": 3000, "heldout_accuracy": 0.46}, {"rollouts_generated": 4000, "heldout_accuracy": 0.60}]


def test_rollouts_to_reach_interpolates_the_first_crossing():
    assert rollouts_to_reach(CURVE, 0.45) == pytest.approx(500)
    assert rollouts_to_reach(CURVE, 0.55) == pytest.approx(3000 + 1000 * (0.09 / 0.14))
    assert rollouts_to_reach(CURVE, 0.40) == 0
    assert rollouts_to_reach(CURVE, 0.61) is None


def test_accuracy_at_a_budget():
    assert accuracy_at(CURVE, 2000) == pytest.approx(0.48)
    assert accuracy_at(CURVE, 4000) == pytest.approx(0.60)
    assert accuracy_at(CURVE, 5000) is None


def test_level_totals_sum_over_steps_in_level_order():
    steps = [{"trained_groups_level_10": 1, "trained_groups_level_2": 3}, {"trained_groups_level_2": 1, "step": 2}]
    assert _level_totals(steps) == {"2": 4, "10": 1}


def test_data_bench_finds_every_planted_and_broken_row():
    """The data benchmark's own checks, on 20k rows (the full run is `grpo bench data`)."""
    from bench import data_bench

    r = data_bench.run(n=20_000)
    for fmt in ("jsonl", "parquet"):
        c = r["results"][fmt]["checks"]
        assert c["planted_removed"] == c["planted"] == 1000 and c["false_positive_removals"] == 0
        assert c["broken_in_rejects"] == c["broken_rows"] == 1000 and c["broken_wrong_reason"] == 0
        assert c["rows_accounted"] and c["near_misses_kept"] == c["near_misses"] == 1000


def test_variants_compare_pairs_seeds_and_calls_only_beyond_two_standard_errors():
    from bench.report import variants_table
    from bench.variants_bench import compare, summarize_run

    def run(acc):
        return {"final": {"heldout_accuracy": acc}}

    runs = {"default": {0: run(0.50), 1: run(0.55), 2: run(0.60)},
            "better": {0: run(0.52), 1: run(0.57), 2: run(0.63)},  # +0.02, +0.02, +0.03: se 0.0033
            "noisy": {0: run(0.60), 1: run(0.50), 2: run(0.61)}}  # +0.1, -0.05, +0.01: se 0.044
    out = compare(runs)
    assert out["default"]["verdict"] == "reference" and out["default"]["minus_default"]["mean"] == 0
    assert out["better"]["verdict"] == "higher"
    assert out["better"]["minus_default"]["mean"] == pytest.approx(0.07 / 3)
    assert out["noisy"]["verdict"] == "no difference (95% interval holds 0)"
    assert out["better"]["minus_default"]["ci95"][0] > 0  # 0.0233 +- 4.30 x 0.0033
    assert out["noisy"]["heldout_accuracy"]["min"] == 0.5 and out["noisy"]["heldout_accuracy"]["n"] == 3

    records = [{"kind": "eval", "step": 0, "rollouts_generated": 0, "heldout_accuracy": 0.4, "heldout_pass_at_4": 0.6,
                "heldout_maj_at_4": 0.5, "heldout_accuracy_level_1": 0.9}]
    records += [{"kind": "train", "step": i, "rollouts_generated": 100 * i, "kl": 0.01 * i, "entropy": 1.0,
                 "completion_len_mean": 10.0, "informative_rollout_ratio": 0.5, "reward_mean": 0.5} for i in range(1, 13)]
    records.append({**records[0], "step": 12, "rollouts_generated": 1200, "heldout_accuracy": 0.45})
    one = summarize_run(records, 30.0)
    assert one["initial_accuracy"] == 0.4 and one["final"]["heldout_accuracy"] == 0.45
    assert one["kl"] == pytest.approx(0.01 * sum(range(3, 13)) / 10)  # the last 10 steps
    assert one["by_level"] == {"heldout_accuracy_level_1": 0.9} and "heldout_accuracy_level_1" not in one["final"]
    result = {"eval_k": 4, "budget_rollouts": 1200, "seeds": [0], "runs": {"default": {"0": one}},
              "summary": {m: compare({"default": {0: one}}, m) for m in
                          ("heldout_accuracy", "heldout_pass_at_4", "heldout_maj_at_4")}, "claims": {}}
    for key in ("kl", "entropy", "completion_len", "seconds"):
        result["summary"][key] = {"default": {"mean": one[key], "se": float("nan")}}
    table = variants_table(result)
    assert any(line.startswith("| default | 0.45 +- nan (0.45-0.45) |") for line in table)


def test_variants_reuse_a_finished_run_only_under_the_same_key(tmp_path):
    import json

    from bench.variants_bench import completed, run_key

    (tmp_path / "w.parquet").write_bytes(b"data")
    key = run_key(["algo.tau=0.5", "run.eval_first=false"], [str(tmp_path / "w.parquet")])
    assert key == run_key(["algo.tau=0.5", "run.eval_first=true", "run.out=elsewhere"], [str(tmp_path / "w.parquet")])
    run = tmp_path / "arm"
    run.mkdir()
    records = [{"kind": "eval", "step": 0}, {"kind": "train", "step": 1, "rollouts_generated": 120},
               {"kind": "eval", "step": 1}]
    (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    assert completed(run, key, 100) is None  # no key saved: run it again
    (run / "bench-key.json").write_text(json.dumps({"key": key, "seconds": 12.5}))
    assert completed(run, key, 100) == (records, 12.5)
    assert completed(run, key, 200) is None  # stopped before the budget
    assert completed(run, run_key(["algo.tau=0.3"], [str(tmp_path / "w.parquet")]), 100) is None
    (tmp_path / "w.parquet").write_bytes(b"other data")  # same path, new content
    assert completed(run, run_key(["algo.tau=0.5"], [str(tmp_path / "w.parquet")]), 100) is None
