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
