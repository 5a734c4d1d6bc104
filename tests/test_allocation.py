"""Per-problem rollout allocation, sequential stopping and the variance-driven G schedule
(grpo_data/curriculum/allocation.py) on hand-computed posteriors."""

import numpy as np
import pytest

from grpo_data.curriculum.allocation import (
    Sizing,
    VarianceSchedule,
    allocate,
    allocate_marginal,
    expected_informative,
    needs_more,
    p_informative,
    sizes_for_target,
)


def point(ps):
    """Posteriors sure of each pass rate: one grid point per problem, weight 1."""
    return np.ones((len(ps), 1)), np.array(ps, dtype=float)[:, None]


def test_p_informative_by_hand():
    assert p_informative(0.5, 2) == pytest.approx(0.5)
    assert p_informative(0.9, 2) == pytest.approx(1 - 0.81 - 0.01)
    assert p_informative(0.9, 15) == pytest.approx(1 - 0.9**15 - 0.1**15)
    assert p_informative(0.0, 8) == 0.0 and p_informative(1.0, 8) == 0.0 and p_informative(0.5, 1) == 0.0


def test_expected_informative_averages_over_the_posterior():
    # half sure p = 0.5, half sure p = 1.0 -> 0.5 * 0.5 + 0.5 * 0 at n = 2
    w, v = np.array([[0.5, 0.5]]), np.array([0.5, 1.0])
    assert expected_informative(w, v, 2) == pytest.approx([0.25])
    assert expected_informative(w, v, np.array([3])) == pytest.approx([0.5 * 0.75])


def test_sizes_grow_as_p_moves_toward_0_or_1():
    w, v = point([0.5, 0.7, 0.9, 0.97, 0.3, 0.1, 0.03])
    sizes = sizes_for_target(w, v, target=0.8, n_min=2, n_max=64)
    # 0.5: 1 - 2 * 0.5^n >= 0.8 -> n = 4 (0.875); 0.9: 1 - 0.9^n - 0.1^n >= 0.8 -> n = 16 (0.9^15 = 0.206)
    assert sizes[0] == 4 and sizes[2] == 16
    assert sizes[0] < sizes[1] < sizes[2] < sizes[3]
    assert sizes[0] < sizes[4] < sizes[5] < sizes[6]
    assert (sizes[1], sizes[2]) == (sizes[4], sizes[5])  # symmetric in p <-> 1 - p
    assert sizes_for_target(*point([0.999]), target=0.8, n_max=32)[0] == 32  # out of reach: capped
    with pytest.raises(ValueError, match="n_min"):
        sizes_for_target(w, v, 0.8, n_min=1)


@pytest.mark.parametrize("seed", range(5))
def test_the_budget_is_never_exceeded_and_the_best_value_per_answer_goes_first(seed):
    rng = np.random.default_rng(seed)
    m, k = 50, 41
    w = rng.dirichlet(np.full(k, 0.3), size=m)
    v = np.linspace(0, 1, k)
    budget = int(rng.integers(2, 200))
    a = allocate(w, v, budget, target=0.8, n_min=2, n_max=16)
    assert a.rollouts <= budget and len(set(a.chosen.tolist())) == a.chosen.size
    per_answer = a.expected / a.sizes
    assert np.all(np.diff(per_answer) <= 1e-12)  # taken best first
    sizes = sizes_for_target(w, v, 0.8, 2, 16)
    assert np.all(a.sizes == sizes[a.chosen])
    left = budget - a.rollouts
    unchosen = np.setdiff1d(np.arange(m), a.chosen)
    assert np.all(sizes[unchosen] > left)  # nothing left out would still have fit
    # and none left out is better per answer than the worst one taken, unless it did not fit then
    worse = per_answer.min() if a.chosen.size else np.inf
    better = unchosen[(expected_informative(w[unchosen], v, sizes[unchosen]) / sizes[unchosen]) > worse + 1e-12]
    assert np.all(sizes[better] > left + a.sizes[-1:].sum())


def test_allocation_skips_what_does_not_fit_and_fills_with_smaller_groups():
    w, v = point([0.5, 0.9, 0.5])
    a = allocate(w, v, budget=10, target=0.8, n_min=2, n_max=32)
    # sizes 4, 16, 4: both p = 0.5 problems (8 answers); the p = 0.9 one (16) does not fit
    assert a.chosen.tolist() == [0, 2] and a.sizes.tolist() == [4, 4] and a.rollouts == 8
    # ties keep the scheduler's order
    assert allocate(w, v, 10, order=np.array([2, 1, 0])).chosen.tolist() == [2, 0]
    with pytest.raises(ValueError, match="cannot hold one group"):
        allocate(w, v, budget=1)


def test_sequential_sampling_stops_at_the_first_mix_or_the_cap():
    n_correct = np.array([0, 4, 2, 0, 8])
    n = np.array([4, 4, 4, 8, 8])
    assert needs_more(n_correct, n, cap=8).tolist() == [True, True, False, False, False]
    # counted over trained answers: 3 right of 3 trained (a 4th, wrong, was cut off and masked) is no mix
    assert needs_more(np.array([3, 3]), np.array([3, 3]), cap=8, spent=np.array([4, 8])).tolist() == [True, False]


def test_the_sample_variance_a_group_reports_does_not_depend_on_its_size():
    """What the schedule reads: the mean within-group sample variance (ddof 1) of 0/1 rewards has
    expectation p(1-p) at every G (the population variance's is p(1-p)(1-1/G): G would only fall)."""
    rng = np.random.default_rng(0)
    for g in (2, 4, 16):
        rewards = (rng.random((20_000, g)) < 0.3).astype(float)
        assert rewards.var(axis=1, ddof=1).mean() == pytest.approx(0.21, abs=0.005)


def test_variance_schedule_on_a_synthetic_reward_stream():
    s = VarianceSchedule(g=8, g_min=4, g_max=16, window=3, low=0.05, high=0.2)
    assert [s.observe(0.25) for _ in range(3)] == [8, 8, 16]  # high for a whole window: doubled
    assert [s.observe(0.25) for _ in range(3)] == [16, 16, 16]  # at g_max
    assert [s.observe(0.01) for _ in range(3)] == [16, 16, 8]  # low: halved, the window starts over
    assert [s.observe(0.01) for _ in range(6)] == [8, 8, 4, 4, 4, 4]  # down to g_min, not below
    assert [s.observe(0.1) for _ in range(4)] == [4, 4, 4, 4]  # in between: unchanged
    restored = VarianceSchedule(g=8, g_min=4, g_max=16, window=3, low=0.05, high=0.2)
    restored.load_state_dict(s.state_dict())
    assert restored.observe(0.3) == s.observe(0.3)
    with pytest.raises(ValueError, match="g_min"):
        VarianceSchedule(g=1)


def test_marginal_allocation_by_hand():
    # budget 8, n_min 2: p = 0.5 enters (0.25 per answer) and grows to 4 while its gains beat p = 0.9's
    # entry (0.09); then p = 0.9 enters and takes the rest (its gains 0.09, 0.074 beat 0.0625)
    w, v = point([0.5, 0.9])
    a = allocate_marginal(w, v, budget=8, n_min=2, n_max=32)
    assert a.chosen.tolist() == [0, 1] and a.sizes.tolist() == [4, 4] and a.rollouts == 8
    assert a.expected == pytest.approx([1 - 2 * 0.5**4, 1 - 0.9**4 - 0.1**4])



def test_sizing_plan_follows_its_objective():
    w, v = point([0.5, 0.9])
    marginal = Sizing("allocate", n_min=2, n_max=32).plan(w, v, 8)
    assert marginal.sizes.tolist() == [4, 4]  # the hand-computed knapsack above
    target = Sizing("allocate", target=0.8, n_min=2, n_max=32, objective="target").plan(w, v, 64)
    assert target.sizes.tolist() == allocate(w, v, 64, 0.8, 2, 32).sizes.tolist() != marginal.sizes.tolist()
    with pytest.raises(ValueError, match="`allocate` mode only; this sizing is 'sequential'"):
        Sizing("sequential", n_min=2, n_max=32).plan(w, v, 8)


def test_marginal_allocations_grow_toward_0_and_1_and_never_pass_the_budget():
    w, v = point([0.5, 0.7, 0.9, 0.3, 0.1])
    a = allocate_marginal(w, v, budget=60, n_min=2, n_max=32)
    size = dict(zip(a.chosen.tolist(), a.sizes.tolist(), strict=True))
    assert a.rollouts <= 60 and size[0] < size[1] < size[2] and size[0] < size[3] < size[4]
    assert (size[1], size[2]) == (size[3], size[4])  # symmetric in p <-> 1 - p


def test_marginal_allocation_equals_brute_force_on_small_cases():
    import itertools

    rng = np.random.default_rng(3)
    for _ in range(20):
        m, k, budget, n_max = 3, 9, int(rng.integers(2, 14)), 6
        w, v = rng.dirichlet(np.full(k, 0.5), size=m), np.linspace(0, 1, k)
        best = max(sum(expected_informative(w[i : i + 1], v, n)[0] if n else 0.0 for i, n in enumerate(ns))
                   for ns in itertools.product([0, *range(2, n_max + 1)], repeat=m) if sum(ns) <= budget)
        a = allocate_marginal(w, v, budget, n_min=2, n_max=n_max)
        assert a.rollouts <= budget
        assert a.expected.sum() == pytest.approx(best, abs=1e-9)  # the knapsack is exact
