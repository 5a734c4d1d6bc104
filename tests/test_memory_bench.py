"""Memory benchmark arithmetic: the old path's analytic logits size and the goal ratio."""

import pytest

from bench.memory_bench import VOCAB, goal, old_path_logit_bytes


def test_old_path_counts_one_full_logits_tensor_and_four_completion_ones_in_fp32():
    assert old_path_logit_bytes(1, seq_len=10, completion_len=0, vocab=1) == 4 * 10
    assert old_path_logit_bytes(1, seq_len=0, completion_len=1, vocab=1) == 4 * 4
    assert old_path_logit_bytes(8, 288, 256) == 4 * VOCAB * 8 * (288 + 4 * 256)
    assert old_path_logit_bytes(128, 288, 256) == 16 * old_path_logit_bytes(8, 288, 256)


def test_goal_is_the_largest_batch_over_1x_at_kl_zero():
    rows = [{"multiple": 1, "kl_beta": 0.0, "peak_rss_mib": 1000.0, "step_increment_mib": 400.0},
            {"multiple": 16, "kl_beta": 0.0, "peak_rss_mib": 1200.0, "step_increment_mib": 500.0},
            {"multiple": 16, "kl_beta": 0.05, "peak_rss_mib": 9000.0, "step_increment_mib": 9000.0}]
    g = goal(rows, top=16)
    assert g["ratio_16x_over_1x"] == pytest.approx(1.2) and g["met"]
    assert g["increment_ratio_16x_over_1x"] == pytest.approx(1.25)
    assert not goal(rows, top=16, target=1.1)["met"]
