"""Issue #59's peers TS (Thompson sampling over Beta posteriors) and SG (sGPO's one-profile
curriculum), on hand-computed cases."""

import numpy as np
import pytest

from grpo_data.curriculum.posterior_samplers import (
    ThompsonConfig,
    ThompsonScheduler,
    closest_to,
    inverse_rate_sizes,
    sgpo_order,
)
from grpo_data.curriculum.scheduler import make_scheduler


def test_closest_to_the_target_nearest_first_with_ties_at_random():
    rng = np.random.default_rng(0)
    assert closest_to(np.array([0.9, 0.45, 0.1, 0.6, 0.5]), 0.5, 3, rng).tolist() == [4, 1, 3]
    ties = {tuple(closest_to(np.array([0.4, 0.6, 0.0]), 0.5, 1, np.random.default_rng(s)).tolist()) for s in range(20)}
    assert ties == {(0,), (1,)}  # 0.4 and 0.6 are equally near: either may come first
    assert closest_to(np.array([0.5]), 0.5, 4, rng).tolist() == [0]


def test_thompson_posteriors_count_each_groups_answers_and_steer_draws_to_the_target():
    ts = ThompsonScheduler(3, ThompsonConfig(pooled_strength=0.0), seed=0)  # the fixed Beta(1, 1) prior
    ts.update(np.array([0, 1, 2, 0]), np.array([8, 0, 4, 8]), 8)
    assert ts.a.tolist() == [17.0, 1.0, 5.0] and ts.b.tolist() == [1.0, 9.0, 5.0]
    assert ts.pass_rate(np.array([0, 1, 2])) == pytest.approx([17 / 18, 1 / 10, 0.5])
    # problem 2 (Beta(5, 5)) draws near 0.5 far more often than 0 (Beta(17, 1)) or 1 (Beta(1, 9))
    firsts = [int(ts.sample(1)[0]) for _ in range(300)]
    assert firsts.count(2) > 250 and ts.stats()["seen"] == 3
    # a discount shrinks the evidence above the prior at every optimizer step
    slow = ThompsonScheduler(1, ThompsonConfig(decay=0.5, pooled_strength=0.0))
    slow.update(np.array([0]), np.array([6]), 8)
    slow.tick()
    assert slow.a.tolist() == [4.0] and slow.b.tolist() == [2.0]  # 1 + 0.5 x 6, 1 + 0.5 x 2


def test_a_pooled_prior_keeps_unseen_problems_of_a_solved_pool_from_filling_batches():
    """A 4,000-problem pool: 200 problems seen at 0.5 (8 of 16), 1,800 seen always right (or 900 always
    right and 900 never), 2,000 unseen. The fitted prior leans to 1 (or is U-shaped), so an unseen
    problem seldom draws near 0.5: the known half-right problems take most of each batch. With a
    uniform per-problem prior the 2,000 unseen ones, drawing uniformly, take most of it."""
    from grpo_data.curriculum.posterior_samplers import pooled_prior

    # rates 0.2, 0.4, 0.6: mean 0.4, variance 0.04, strength 0.24 / 0.04 - 1 = 5, capped at 2
    assert pooled_prior(np.array([0.2, 0.4, 0.6]), 2.0) == pytest.approx((0.8, 1.2))
    assert pooled_prior(np.array([0.2, 0.4, 0.6]), 10.0) == pytest.approx((2.0, 3.0))
    assert pooled_prior(np.array([0.5]), 2.0) == (1.0, 1.0)  # fewer than two seen: uniform
    a0, b0 = pooled_prior(np.array([0.0, 1.0, 0.0, 1.0]), 2.0)  # solved and hopeless: U-shaped, a, b < 1
    assert a0 == b0 and a0 < 0.5

    def share_of_known(strength, solved, hopeless):
        ts = ThompsonScheduler(4000, ThompsonConfig(pooled_strength=strength), seed=0)
        ts.update(np.arange(200), np.full(200, 8), 16)
        ts.update(np.arange(200, 200 + solved), np.full(solved, 16), 16)
        ts.update(np.arange(200 + solved, 200 + solved + hopeless), np.zeros(hopeless), 16)
        drawn = np.concatenate([ts.sample(32) for _ in range(20)])
        return float(np.mean(drawn < 200))

    assert share_of_known(2.0, 1800, 0) > 0.6 and share_of_known(0.0, 1800, 0) < 0.3  # mostly solved
    assert share_of_known(2.0, 900, 900) > 0.6 and share_of_known(0.0, 900, 900) < 0.3  # solved and hopeless


def test_thompson_resumes_exactly_and_refuses_bad_settings(tmp_path):
    ts = make_scheduler("thompson", 50, seed=3, prior_a=2.0)
    ts.update(np.arange(10), np.arange(10) % 5, 4)
    ts.save(tmp_path)
    again = make_scheduler("thompson", 50, seed=99, prior_a=2.0)
    again.load(tmp_path)
    assert ts.sample(8).tolist() == again.sample(8).tolist()
    with pytest.raises(ValueError, match="0 < decay <= 1"):
        make_scheduler("thompson", 5, decay=0.0)
    with pytest.raises(ValueError, match="pooled_strength >= 0"):
        make_scheduler("thompson", 5, pooled_strength=-1)
    with pytest.raises(ValueError, match="unknown thompson scheduler setting"):
        make_scheduler("thompson", 5, lo=0.2)


def test_groups_are_dealt_to_the_rank_with_the_fewest_answers():
    from grpo_data.curriculum.allocation import deal_by_answers

    # largest first: 16 | 16, then 4 to rank 0 (20), 2 to rank 1 (18), 2 to rank 1 (20), 2 to rank 0 (22)
    got = deal_by_answers(np.array([16, 2, 2, 2, 4, 16]), 2)
    assert [r.tolist() for r in got] == [[0, 3, 4], [1, 2, 5]]
    assert [int(np.array([16, 2, 2, 2, 4, 16])[r].sum()) for r in got] == [22, 20]
    assert [r.tolist() for r in deal_by_answers(np.array([4, 4, 4]), 3)] == [[0], [1], [2]]


def test_sgpo_sizes_are_about_one_over_p_within_the_trainers_bounds():
    p = np.array([1.0, 0.5, 0.25, 0.1, 0.03, 0.0, np.nan])
    assert inverse_rate_sizes(p, 1.0, 2, 16).tolist() == [2, 2, 4, 10, 16, 16, 16]
    assert inverse_rate_sizes(np.array([0.3]), 2.0, 2, 16).tolist() == [7]  # ceil(2 / 0.3)


def test_sgpo_drops_trivial_keeps_a_share_of_unsolvable_and_orders_easy_to_hard():
    # p: 1.0 (trivial), 0.75, 0.25, 0 x 4 (unsolvable), 0.5, unprofiled
    c = np.array([4, 3, 1, 0, 0, 0, 0, 2, np.nan])
    k = np.array([4, 4, 4, 4, 4, 4, 4, 4, np.nan])
    order = sgpo_order(c, k, keep_unsolvable=0.5, rng=np.random.default_rng(0))
    assert 0 not in order and order[:3].tolist() == [1, 7, 2] and order[-1] == 8
    assert sorted(order[3:-1].tolist()) in ([3, 4], [3, 5], [3, 6], [4, 5], [4, 6], [5, 6])  # 2 of the 4 kept
    assert 0 not in sgpo_order(c, k, 0.0, np.random.default_rng(0)).tolist()[:3]
    assert len(sgpo_order(c, k, 0.0, np.random.default_rng(0))) == 4  # 0.75, 0.5, 0.25, unprofiled


def test_sgpo_walks_its_order_in_passes_and_serves_sizes_to_a_budget():
    c, k = np.array([3, 1, 2, 4, 0]), np.array([4, 4, 4, 4, 4])
    sg = make_scheduler("sgpo", 5, seed=0, offline=(c, k), keep_unsolvable=0.0)
    assert sg.sample(2).tolist() == [0, 2] and sg.sample(2).tolist() == [1, 0]  # 0.75, 0.5, 0.25, then again
    assert sg.stats()["epoch"] == 1 and sg.stats()["kept"] == 3
    fresh = make_scheduler("sgpo", 5, seed=0, offline=(c, k), keep_unsolvable=0.0)
    idx, sizes = fresh.sample_sized(7, 2, 16)  # sizes 2 (0.75: ceil 1.33), 2, 4 (0.25): 8 >= 7 answers
    assert idx.tolist() == [0, 2, 1] and sizes.tolist() == [2, 2, 4]
    assert fresh.pass_rate(np.array([1])).tolist() == [0.25]
    with pytest.raises(ValueError, match="needs an offline profile|sizes and orders problems from an offline"):
        make_scheduler("sgpo", 5)
    with pytest.raises(ValueError, match="every profiled problem is trivial"):
        make_scheduler("sgpo", 2, offline=(np.array([4, 0]), np.array([4, 4])), keep_unsolvable=0.0)


def test_the_trainer_config_wires_sgpo_to_its_profile_and_scheduler_sizing():
    from grpo_train.config import TrainConfig
    from grpo_train.config_io import config_from_tree

    with pytest.raises(ValueError, match="sgpo needs data.profile"):
        config_from_tree({"scheduler": {"name": "sgpo"}, "rollout": {"sizing": "scheduler"}}, [])
    with pytest.raises(ValueError, match="rollout.sizing=scheduler takes each group's size"):
        config_from_tree({"rollout": {"sizing": "scheduler"}}, [])
    cfg = config_from_tree({"scheduler": {"name": "thompson", "settings": {"target": 0.4}}}, [])
    assert isinstance(cfg, TrainConfig) and cfg.scheduler.settings == {"target": 0.4}
