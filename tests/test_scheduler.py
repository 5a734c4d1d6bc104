"""Schedulers: posterior and decay math, band selection, exploration, resume, dry band, refresh."""

import numpy as np
import pytest

from grpo_data.scheduler import (
    BandConfig,
    BandScheduler,
    OfflineBandScheduler,
    UniformScheduler,
    difficulty_groups,
    drift_step,
    learnability,
    make_scheduler,
    prior_from_profile,
)


def test_prior_strength_is_capped_and_unprofiled_is_weak():
    s, f = prior_from_profile([32, 0, np.nan], [64, 4, np.nan], max_prior_k=8, base=(1, 1))
    np.testing.assert_allclose(s, [4, 0, 0])
    np.testing.assert_allclose(f, [4, 4, 0])


def test_update_adds_counts_and_decay_forgets_strength_not_mean():
    """Per scheduler step, the strength above the base prior's (2) decays by `decay`; the mean stays."""
    sched = BandScheduler(3, BandConfig(decay=0.5), offline=([8, 0, 4], [8, 8, 8]))
    a, b = sched.posterior()
    np.testing.assert_allclose(a, [9, 1, 5])
    np.testing.assert_allclose(b, [1, 9, 5])
    sched.update(np.array([0]), np.array([0]), 8)  # problem 0 failed 8 of 8: Beta(9, 9)
    sched.tick()  # one policy step: strength 18 -> 2 + 16 * 0.5, strength 10 -> 2 + 8 * 0.5
    a, b = sched.posterior()
    np.testing.assert_allclose(a, [5, 0.6, 3])
    np.testing.assert_allclose(b, [5, 5.4, 3])
    sched.update(np.array([2]), np.array([2]), 4)  # Beta(3, 3) + 2 of 4 = Beta(5, 5)
    sched.tick()
    a, b = sched.posterior()
    np.testing.assert_allclose(a, [3, 0.4, 3])
    np.testing.assert_allclose(b, [3, 3.6, 3])
    for _ in range(60):
        sched.tick()
    np.testing.assert_allclose(sched.pass_rate(), [0.5, 0.1, 0.5])  # forgotten: uncertain, not 0.5
    np.testing.assert_allclose(sum(sched.posterior()), [2, 2, 2])


def test_online_evidence_overrides_stale_offline_estimate():
    sched = BandScheduler(1, BandConfig(decay=0.99), offline=([64], [64]))  # offline: always solved
    for _ in range(3):
        sched.update(np.array([0]), np.array([4]), 8)
        sched.tick()
    assert 0.4 < sched.pass_rate()[0] < 0.75


def test_difficulty_groups_cross_level_with_offline_bucket():
    offline = ([0, 8, 16, np.nan, 3], [16, 16, 16, np.nan, 16])
    np.testing.assert_array_equal(difficulty_groups(5, offline, buckets=4), [0, 2, 3, 4, 0])
    grouped = difficulty_groups(5, offline, level=[1, 1, 2, np.nan, 2], buckets=4)
    # same level and bucket share a group; a missing level is a level of its own
    assert len(set(grouped.tolist())) == 5
    same = difficulty_groups(3, ([0, 0, 0], [8, 8, 8]), level=[3, 3, 4])
    assert same[0] == same[1] != same[2]


def test_drift_step_is_a_newton_step_on_the_logit_shift():
    p = np.array([0.5, 0.5, 0.2])
    step = drift_step(p, n_correct=np.array([6.0, 6.0, 1.0]), group_size=np.full(3, 8.0),
                      group=np.array([0, 0, 1]), n_groups=2, kappa=1.0)
    # group 0: residual (6-4)*2 = 4 over information 2*8*0.25 + 1 = 5; group 1: (1-1.6) / (8*0.16 + 1)
    np.testing.assert_allclose(step, [4 / 5, -0.6 / 2.28])


def test_sharing_moves_unsampled_neighbours_only_in_their_group():
    """The policy improved on group 0: its unsampled members' estimates rise, group 1's stay."""
    n = 200
    offline = (np.full(n, 2.0), np.full(n, 16.0))  # every problem at about 1/8 offline
    groups = np.repeat([0, 1], n // 2)
    sched = BandScheduler(n, BandConfig(), seed=0, offline=offline, groups=groups)
    before = sched.pass_rate()
    for _ in range(5):
        sched.update(np.arange(20), np.full(20, 5), 8)  # 20 problems of group 0 now solve 5 of 8
        sched.tick()
    after = sched.pass_rate()
    assert after[20:100].min() > before[20:100].max() + 0.1  # unsampled members of group 0 moved up
    np.testing.assert_allclose(after[100:], before[100:])  # the other group did not move
    plain = BandScheduler(n, BandConfig(), seed=0, offline=offline)  # without groups: no sharing
    for _ in range(5):
        plain.update(np.arange(20), np.full(20, 5), 8)
        plain.tick()
    np.testing.assert_allclose(plain.pass_rate()[20:], before[20:])
    with pytest.raises(ValueError, match="non-negative integers"):
        BandScheduler(n, offline=offline, groups=np.full(n, -1))


def test_learnability_peaks_in_band():
    a = np.array([1.0, 8.0, 16.0, 1.0])
    b = np.array([16.0, 8.0, 1.0, 1.0])
    score = learnability(a, b, 0.2, 0.8)
    assert score.argmax() == 1 and score[1] > 5 * max(score[0], score[2])


def known_pool(n=5000, seed=0):
    rng = np.random.default_rng(seed)
    p = np.concatenate([rng.uniform(0, 0.05, n // 2), rng.uniform(0.95, 1, n // 4), rng.uniform(0.3, 0.7, n // 4)])
    k = np.full(p.shape, 32)
    return p, rng.binomial(k, p), k


def test_band_selection_concentrates_on_in_band_problems():
    p, c, k = known_pool()
    sched = BandScheduler(p.size, BandConfig(max_prior_k=32, without_replacement=False), seed=0, offline=(c, k))
    picked = np.concatenate([sched.sample(256) for _ in range(5)])
    assert np.mean((p[picked] >= 0.2) & (p[picked] <= 0.8)) > 0.9
    uniform = UniformScheduler(p.size, seed=0).sample(1280)
    assert np.mean((p[uniform] >= 0.2) & (p[uniform] <= 0.8)) < 0.4


@pytest.mark.parametrize(("selection", "coverage"), [("thompson", 0.5), ("mean", 0.25)])
def test_selection_still_explores(selection, coverage):
    p, c, k = known_pool()
    sched = BandScheduler(p.size, BandConfig(max_prior_k=32, selection=selection), seed=0, offline=(c, k))
    seen = set()
    for _ in range(20):
        seen.update(sched.sample(64).tolist())
    in_band = set(np.flatnonzero((c / k >= 0.2) & (c / k <= 0.8)).tolist())
    # not the same 64 problems again and again: it spreads over the in-band set
    assert len(seen & in_band) > coverage * min(len(in_band), 20 * 64)


def test_explore_share_is_drawn_from_the_whole_pool():
    p, c, k = known_pool()
    out_of_band = (p < 0.2) | (p > 0.8)
    sched = BandScheduler(p.size, BandConfig(max_prior_k=32, explore=0.25), seed=0, offline=(c, k))
    batches = [sched.sample(64) for _ in range(20)]
    assert all(np.unique(b).size == 64 for b in batches)
    picked = np.concatenate(batches)
    # 48 of 64 come from the band; the other 16 are uniform, so about as out-of-band as the pool
    expected = (48 * 0.0 + 16 * out_of_band.mean()) / 64
    assert abs(out_of_band[picked].mean() - expected) < 0.06
    with pytest.raises(ValueError, match="explore"):
        BandConfig(explore=1.5)


def test_without_replacement_within_an_epoch():
    sched = BandScheduler(100, BandConfig(without_replacement=True), seed=1)
    first = np.concatenate([sched.sample(25) for _ in range(4)])
    assert np.unique(first).size == 100
    assert sched.sample(25).size == 25 and sched.epoch == 1


@pytest.mark.parametrize("epoch", ["band", "pool"])
def test_epoch_ends_when_the_band_or_the_pool_is_used_up(epoch):
    # 100 problems at p = 0.5, 1900 solved or hopeless, all known from a strong offline profile
    p = np.concatenate([np.full(100, 0.5), np.zeros(1000), np.ones(900)])
    k = np.full(p.size, 32)
    cfg = BandConfig(max_prior_k=32, without_replacement=True, epoch=epoch)
    sched = BandScheduler(p.size, cfg, seed=0, offline=(p * k, k))
    first = []
    for _ in range(4):  # one batch per policy step
        first.append(sched.sample(25))
        sched.tick()
    assert set(np.concatenate(first).tolist()) == set(range(100)) and sched.epoch == 0  # the band, once each
    nxt = sched.sample(25)
    if epoch == "band":  # a new epoch over the band, before any hopeless or solved problem
        assert sched.epoch == 1 and np.all(nxt < 100)
    else:  # a dataloader's epoch: the rest of the pool comes before any repeat
        assert sched.epoch == 0 and np.all(nxt >= 100)


def test_save_load_gives_identical_next_samples(tmp_path):
    p, c, k = known_pool(2000)
    groups = np.arange(p.size) % 7
    a = BandScheduler(p.size, BandConfig(), seed=5, offline=(c, k), groups=groups)
    for _ in range(7):
        idx = a.sample(32)
        a.update(idx, np.random.default_rng(0).binomial(8, p[idx]), 8)
        a.tick()
    a.save(tmp_path)
    b = BandScheduler(p.size, BandConfig(), seed=99, offline=(c, k), groups=groups)
    b.load(tmp_path)
    np.testing.assert_allclose(a.drift, b.drift)
    for _ in range(3):
        ia, ib = a.sample(32), b.sample(32)
        np.testing.assert_array_equal(ia, ib)
        outcome = np.random.default_rng(1).binomial(8, p[ia])
        a.update(ia, outcome, 8)
        b.update(ib, outcome, 8)
        a.tick()
        b.tick()
    np.testing.assert_allclose(a.posterior()[0], b.posterior()[0])
    assert not list(tmp_path.glob("*.pkl"))
    with pytest.raises(ValueError, match="not band over 10"):
        BandScheduler(10).load(tmp_path)


def test_dry_band_widens_and_says_so(caplog):
    n = 400
    c, k = np.zeros(n), np.full(n, 32)
    c[:200] = 32  # every problem solved or failed: nothing in band
    sched = BandScheduler(n, BandConfig(max_prior_k=32, without_replacement=False), offline=(c, k))
    with caplog.at_level("WARNING"):
        sched.sample(64)
    assert sched.widenings >= 1 and sched.lo < 0.2 and sched.hi > 0.8
    assert "widened" in caplog.text


def test_refresh_candidates_are_stale_or_near_the_edges():
    p, c, k = known_pool(1000)
    sched = BandScheduler(p.size, BandConfig(), offline=(c, k))
    for _ in range(5):
        idx = sched.sample(100)
        sched.update(idx, np.zeros(idx.size), 8)
        sched.tick()
    picked = sched.refresh_candidates(40)
    assert picked.size == 40 and np.unique(picked).size == 40
    assert np.all(sched.last[picked[:20]] == 0)  # stalest first


def test_offline_band_and_registry():
    c, k = np.array([0, 8, 16, 4]), np.full(4, 16)
    sched = make_scheduler("offline_band", 4, offline=(c, k))
    assert isinstance(sched, OfflineBandScheduler)
    assert set(np.concatenate([sched.sample(1) for _ in range(4)]).tolist()) == {1, 3}
    with pytest.raises(ValueError, match="unknown scheduler 'greedy'"):
        make_scheduler("greedy", 4)
    with pytest.raises(ValueError, match="band must satisfy"):
        BandConfig(lo=0.9, hi=0.1)
