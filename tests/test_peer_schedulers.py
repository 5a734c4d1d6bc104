"""The peers' samplers as schedulers (issue #33): prime-rl's difficulty pools and GRESO's selective
rollouts, on hand-computed cases; resume, the registry, the TRL/verl curriculum and the trainer config."""

import numpy as np
import pytest

from grpo_data.curriculum.peer_schedulers import (
    EASY,
    HARD,
    NORMAL,
    UNSEEN,
    GresoConfig,
    GresoScheduler,
    PoolsConfig,
    PoolsScheduler,
    adapt_exploration,
    greso_skip_probability,
    group_kinds,
    pool_of,
    weighted_distinct,
)
from grpo_data.curriculum.scheduler import SCHEDULERS, make_scheduler
from grpo_data.integrations.feedback import Curriculum


def share_tolerance(p: float, draws: int, z: float = 4.0) -> float:
    """z binomial standard errors of a share p over `draws` independent draws."""
    return z * np.sqrt(p * (1 - p) / draws)


# ---------------------------------------------------------------------------- pools: pure math
@pytest.mark.parametrize("rate, pool", [
    (0.0, HARD), (0.25, HARD),                 # prime-rl: a threshold is its pool's inclusive maximum
    (0.25 + 1e-9, NORMAL), (0.5, NORMAL), (0.75, NORMAL),
    (0.75 + 1e-9, EASY), (1.0, EASY),
    (np.nan, UNSEEN),                          # no outcome yet: in no pool
])
def test_pool_of_puts_each_threshold_in_the_pool_below_it(rate, pool):
    assert pool_of(np.array([rate]), 0.25, 0.75)[0] == pool


def test_weighted_distinct_inclusion_matches_successive_sampling_by_hand():
    """Weights (0.2, 1.0, 0.2), two drawn without replacement. P(b in) = P(b first) + P(a first) x
    1/1.2 + P(c first) x 1/1.2 = 5/7 + 2 x (1/7)(5/6) = 40/42; P(a in) = 1/7 + (5/7)(1/2) +
    (1/7)(1/6) = 22/42, as P(c in)."""
    rng = np.random.default_rng(0)
    draws = 20_000
    hits = np.zeros(3)
    for _ in range(draws):
        pick = weighted_distinct(np.array([0.2, 1.0, 0.2]), 2, rng)
        assert pick.size == 2 and pick[0] != pick[1]
        hits[pick] += 1
    expected = np.array([22, 40, 22]) / 42
    np.testing.assert_allclose(hits / draws, expected, atol=max(share_tolerance(p, draws) for p in expected))


def test_weighted_distinct_never_draws_zero_weight_and_returns_fewer_when_fewer_can_be_drawn():
    rng = np.random.default_rng(1)
    out = weighted_distinct(np.array([0.0, 1.0, 0.0, 2.0]), 3, rng)
    assert sorted(out.tolist()) == [1, 3]


# ---------------------------------------------------------------------------- pools: scheduler
def test_pools_file_each_problem_by_its_latest_group_mean():
    sched = PoolsScheduler(6)
    # pass rates 2/8 = 0.25 (hard, inclusive), 3/8, 6/8 = 0.75 (normal, inclusive), 7/8 (easy), 1/4 (hard)
    sched.update(np.array([0, 1, 2, 3, 4]), np.array([2, 3, 6, 7, 1]), np.array([8, 8, 8, 8, 4]))
    np.testing.assert_array_equal(sched.pools(), [HARD, NORMAL, NORMAL, EASY, HARD, UNSEEN])
    np.testing.assert_allclose(sched.weights(), [0.2, 1.0, 1.0, 0.2, 0.2, 1.0])  # unseen: neutral weight 1
    sched.update(np.array([3, 3]), np.array([8, 0]), 8)  # the latest outcome replaces the earlier (last wins)
    sched.update(np.array([5]), np.array([0]), np.array([0]))  # a group with no scored answer says nothing
    assert sched.pools()[3] == HARD and sched.pools()[5] == UNSEEN
    stats = sched.stats()
    assert (stats["pool_hard"], stats["pool_normal"], stats["pool_easy"], stats["pool_unseen"]) == (3, 2, 0, 1)


def test_pools_draw_shares_follow_per_problem_weights():
    """3 hard, 4 normal, 2 easy, 1 unseen: weights 3 x 0.2 + 4 x 1.0 + 2 x 0.2 + 1 x 1.0 = 6.0, so a
    draw is hard 0.6/6, normal 4/6, easy 0.4/6, unseen 1/6. (Weights per pool instead would give
    hard 0.2/2.4.)"""
    sched = PoolsScheduler(10, seed=3)
    sched.update(np.arange(9), np.array([0, 0, 0, 4, 4, 4, 4, 8, 8]), 8)
    draws = 20_000
    counts = np.zeros(4)
    for _ in range(draws):
        counts[sched.pools()[sched.sample(1)] + 1] += 1  # unseen, hard, normal, easy
    expected = np.array([1.0, 0.6, 4.0, 0.4]) / 6.0
    np.testing.assert_allclose(counts / draws, expected, atol=max(share_tolerance(p, draws) for p in expected))
    assert sched.stats()["epoch"] == draws // 10  # draws in units of the pool size


def test_pools_empty_pools_take_no_share_and_zero_weight_pools_are_never_drawn():
    sched = PoolsScheduler(5, seed=0)
    sched.update(np.arange(5), np.zeros(5), 8)  # all hard; normal and easy empty
    assert sorted(sched.sample(5).tolist()) == [0, 1, 2, 3, 4]  # drawn all the same

    only_normal = PoolsScheduler(5, PoolsConfig(hard_weight=0.0, easy_weight=0.0), seed=0)
    only_normal.update(np.arange(5), np.array([0, 4, 4, 8, 4]), 8)
    for _ in range(20):
        assert sorted(only_normal.sample(5).tolist()) == [1, 2, 4]  # fewer: only 3 can be drawn
    only_normal.update(np.array([1, 2, 4]), np.array([8, 0, 8]), 8)
    with pytest.raises(RuntimeError, match="no problem has a positive weight"):
        only_normal.sample(2)


def test_pools_settings_are_checked():
    with pytest.raises(ValueError, match="hard_max < normal_max"):
        PoolsConfig(hard_max=0.8, normal_max=0.5)
    with pytest.raises(ValueError, match="at least one of hard_weight"):
        PoolsConfig(hard_weight=0, normal_weight=0, easy_weight=0)
    with pytest.raises(ValueError, match=r"unseen_weight=-1"):
        PoolsConfig(unseen_weight=-1)


# ---------------------------------------------------------------------------- greso: pure math
def test_group_kinds():
    right, wrong = group_kinds(np.array([8, 0, 3, 0, 1]), np.array([8, 8, 8, 0, 1]))
    np.testing.assert_array_equal(right, [True, False, False, False, True])
    np.testing.assert_array_equal(wrong, [False, True, False, False, False])  # size 0: neither


def test_greso_skip_probability_after_k_zero_variance_outcomes():
    """1 - max(p ** z, 0.01): p_easy 0.5 gives 0.5, 0.75, 0.875 after 1, 2, 3 all-right groups,
    1 - 1/64 after 6 and the floor's 0.99 after 7 (0.5 ** 7 = 0.0078 < 0.01); p_hard 0.4 gives
    1 - 0.16 after 2 all-wrong; no run, no skip."""
    easy = np.array([1, 2, 3, 6, 7, 0, 0])
    hard = np.array([0, 0, 0, 0, 0, 2, 0])
    skip = greso_skip_probability(easy, hard, p_easy=0.5, p_hard=0.4, keep_floor=0.01)
    np.testing.assert_allclose(skip, [0.5, 0.75, 0.875, 1 - 1 / 64, 0.99, 0.84, 0.0])


@pytest.mark.parametrize("p, observed, expected", [
    (0.5, 0.10, 0.49),   # at or above the target 0.25 / 3: explore less, skip more
    (0.5, 0.25 / 3, 0.49),
    (0.5, 0.05, 0.51),   # below it: explore more
    (0.05, 0.9, 0.05),   # held at p_min
    (0.95, 0.0, 0.95),   # held at p_max
])
def test_adapt_exploration_by_hand(p, observed, expected):
    assert adapt_exploration(p, observed, 0.25 / 3, 0.01, 0.05, 0.95) == pytest.approx(expected)


# ---------------------------------------------------------------------------- greso: scheduler
def test_greso_runs_count_consecutive_zero_variance_groups_and_a_mix_ends_them():
    sched = GresoScheduler(3)
    for c in (8, 8, 3, 0, 0):  # all right, all right, mixed, all wrong, all wrong
        sched.update(np.array([0]), np.array([c]), 8)
    for c in (8, 8, 8):
        sched.update(np.array([1]), np.array([c]), np.array([8]))
    sched.update(np.array([2, 2]), np.array([0, 0]), np.array([4, 0]))  # the size-0 group says nothing
    np.testing.assert_array_equal(sched.easy_run, [0, 3, 0])
    np.testing.assert_array_equal(sched.hard_run, [2, 0, 1])
    np.testing.assert_allclose(sched.skip_probability(), [0.75, 0.875, 0.5])
    with pytest.raises(ValueError, match=r"n_correct must lie in \[0, group_size\]"):
        sched.update(np.array([0]), np.array([9]), 8)


def test_greso_without_history_is_a_uniform_stream_one_permutation_per_epoch():
    sched = GresoScheduler(12, seed=5)
    batches = [sched.sample(4) for _ in range(3)]
    assert sorted(np.concatenate(batches).tolist()) == list(range(12)) and sched.epoch == 0
    sched.sample(4)
    assert sched.epoch == 1 and sched.stats()["skipped_easy"] == sched.stats()["skipped_hard"] == 0


def test_greso_batch_that_wraps_an_epoch_stays_distinct_and_keeps_the_new_epoch_whole():
    sched = GresoScheduler(5, seed=2)
    first = sched.sample(3)
    rest = sched.order[3:].copy()
    second = sched.sample(3)
    assert sched.epoch == 1 and len(set(second.tolist())) == 3
    np.testing.assert_array_equal(second[:2], rest)  # epoch 0 finished first
    assert second[2] not in rest
    # the two prompts of this batch that were drawn in epoch 0 wait at the end of epoch 1's order
    assert set(sched.order[-2:].tolist()) == set(rest.tolist())
    assert sorted(np.concatenate([second[2:], sched.sample(4)]).tolist()) == [0, 1, 2, 3, 4]
    assert sched.epoch == 1 and first.size == 3


@pytest.mark.parametrize("runs, batch, keep", [(1, 1000, 0.5), (2, 500, 0.25)])
def test_greso_skips_at_its_rate_when_walking_the_stream(runs, batch, keep):
    """Every prompt has `runs` all-right groups, so each is kept with probability 0.5 ** runs; the
    prompts skipped before `batch` are kept are negative-binomial: mean batch (1 - keep) / keep,
    sd sqrt(batch (1 - keep)) / keep (44.7 and 77.5 here); allowed 4 sd."""
    n = 4000
    sched = GresoScheduler(n, seed=11)
    for _ in range(runs):
        sched.sample(n)  # one pass, then every prompt's outcome
        sched.update(np.arange(n), np.full(n, 8), 8)
    picked = sched.sample(batch)
    stats = sched.stats()
    mean, sd = batch * (1 - keep) / keep, np.sqrt(batch * (1 - keep)) / keep
    assert abs(stats["last_skipped_easy"] - mean) < 4 * sd
    assert stats["last_skipped_hard"] == 0 and picked.size == batch == np.unique(picked).size


def test_greso_exploration_adapts_once_per_step_from_the_second_epoch():
    sched = GresoScheduler(10, seed=0)
    idx = sched.sample(10)
    outcomes = np.array([8, 8, 0] + [4] * 7)  # 2 all-right (0.2 >= 0.25/3), 1 all-wrong (0.1 < 0.25 x 2/3)
    sched.update(idx, outcomes, 8)
    sched.tick()
    assert (sched.p_easy, sched.p_hard) == (0.5, 0.5)  # first epoch: nothing has been filtered yet
    sched.sample(1)  # the stream wraps: epoch 1
    sched.update(idx, outcomes, 8)
    sched.tick()
    assert sched.p_easy == pytest.approx(0.49) and sched.p_hard == pytest.approx(0.51)
    sched.tick()  # no groups since the last step: nothing to adapt from
    assert sched.p_easy == pytest.approx(0.49) and sched.p_hard == pytest.approx(0.51)
    stats = sched.stats()
    assert stats["p_easy"] == pytest.approx(0.49) and stats["epoch"] == 1 and stats["step"] == 3


def test_greso_settings_are_checked():
    with pytest.raises(ValueError, match=r"p_easy=0.99 must lie in \[p_min, p_max\]"):
        GresoConfig(p_easy=0.99)
    with pytest.raises(ValueError, match="keep_floor must be in"):
        GresoConfig(keep_floor=0)


# ---------------------------------------------------------------------------- both: resume, registry
def _drive(sched, steps: int, seed: int) -> list:
    """Sample, update with seeded outcomes, tick; returns what was drawn and the stats."""
    rng = np.random.default_rng(seed)
    seen = []
    for _ in range(steps):
        idx = sched.sample(4)
        sched.update(idx, rng.choice([0, 3, 8], size=idx.size), 8)
        sched.tick()
        seen.append((idx.tolist(), sched.stats()))
    return seen


@pytest.mark.parametrize("name", ["pools", "greso"])
def test_save_and_load_resume_exactly(name, tmp_path):
    sched = make_scheduler(name, 9, seed=4)
    _drive(sched, 5, seed=0)  # mid-epoch, with history
    sched.save(tmp_path)
    expected = _drive(sched, 6, seed=1)
    resumed = make_scheduler(name, 9, seed=99)
    resumed.load(tmp_path)
    assert _drive(resumed, 6, seed=1) == expected
    with pytest.raises(ValueError, match=f"scheduler state is {name} over 9 problems, not {name} over 8"):
        make_scheduler(name, 8).load(tmp_path)


def test_registry_builds_both_with_settings_and_refuses_unknown_ones():
    assert {"pools", "greso"} <= set(SCHEDULERS)
    pools = make_scheduler("pools", 4, hard_weight=0.5)
    assert isinstance(pools, PoolsScheduler) and pools.cfg.hard_weight == 0.5
    greso = make_scheduler("greso", 4, p_easy="1e-1", p_min=0.05)  # YAML reads 1e-1 as a string
    assert isinstance(greso, GresoScheduler) and greso.p_easy == 0.1
    with pytest.raises(ValueError, match=r"unknown pools scheduler setting\(s\) \['lo'\]; accepted: hard_max, "
                                         r"normal_max, hard_weight, normal_weight, easy_weight, unseen_weight"):
        make_scheduler("pools", 4, lo=0.2)
    with pytest.raises(ValueError, match="greso setting p_hard: expected a number"):
        make_scheduler("greso", 4, p_hard=True)


@pytest.mark.parametrize("name, settings", [("pools", {"easy_weight": 0.1}), ("greso", {"target_zero_variance": 0.5})])
def test_curriculum_from_columns_runs_the_peer_schedulers(name, settings):
    ids = [f"p{i}" for i in range(6)]
    cur = Curriculum.from_columns(ids, n_correct=[1] * 6, k=[4] * 6, scheduler=name, seed=0, **settings)
    assert cur.scheduler.name == name
    assert next(iter(settings.values())) in vars(cur.scheduler.cfg).values()
    rows = cur.next_batch(3)
    counted = cur.record([ids[r] for r in rows for _ in range(2)], [True, False] * rows.size)
    cur.tick()
    assert counted["groups"] == 3 and counted["informative"] == 3
    assert "epoch" in cur.stats()
    with pytest.raises(ValueError, match=f"unknown {name} scheduler setting"):
        Curriculum.from_columns(ids, scheduler=name, temperature=0.5)


def test_trainer_config_selects_the_peer_schedulers_and_passes_their_settings():
    from grpo_train.config_io import dump_config, load_config
    from grpo_train.scheduler_start import scheduler_kwargs

    cfg = load_config(None, ["scheduler.name=pools"])
    assert scheduler_kwargs(cfg.scheduler) == {}
    cfg = load_config(None, ["scheduler.name=greso", "scheduler.settings.p_easy=0.4", "scheduler.settings.step=2e-2"])
    assert scheduler_kwargs(cfg.scheduler) == {"p_easy": 0.4, "step": "2e-2"}
    assert "p_easy: 0.4" in dump_config(cfg)
    sched = make_scheduler(cfg.scheduler.name, 5, **scheduler_kwargs(cfg.scheduler))
    assert (sched.p_easy, sched.cfg.step) == (0.4, 0.02)
    with pytest.raises(ValueError, match=r"unknown greso scheduler setting\(s\) \['p_skip'\]; accepted: p_easy"):
        load_config(None, ["scheduler.name=greso", "scheduler.settings.p_skip=0.4"])
    with pytest.raises(ValueError, match="scheduler.settings is for pools, greso"):
        load_config(None, ["scheduler.settings.p_easy=0.4"])
    with pytest.raises(ValueError, match="scheduler.name must be band, uniform, offline_band, pools, greso, thompson or sgpo"):
        load_config(None, ["scheduler.name=difficulty_pool"])
