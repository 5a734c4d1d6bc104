"""Pass-rate statistics and the adaptive stopping rule (pure math, no engine)."""

import numpy as np
import pytest

from grpo_data.curriculum.stats import (
    StoppingRule,
    beta_mean,
    beta_std,
    credible_interval,
    expected_signal,
    fit_grid_prior,
    posterior,
    prob_in_band,
    simulate,
)


def test_posterior_jeffreys():
    a, b = posterior([0, 3, 16], [16, 16, 16])
    np.testing.assert_allclose(a, [0.5, 3.5, 16.5])
    np.testing.assert_allclose(b, [16.5, 13.5, 0.5])
    with pytest.raises(ValueError):
        posterior(5, 4)


def test_mean_std_against_sampling():
    rng = np.random.default_rng(0)
    draws = rng.beta(3.5, 13.5, size=400_000)
    assert beta_mean(3.5, 13.5) == pytest.approx(draws.mean(), abs=2e-3)
    assert beta_std(3.5, 13.5) == pytest.approx(draws.std(), abs=2e-3)
    assert expected_signal(3.5, 13.5) == pytest.approx(np.mean(draws * (1 - draws)), abs=2e-3)


def test_interval_and_band_probability_against_sampling():
    rng = np.random.default_rng(1)
    draws = rng.beta(4.5, 4.5, size=400_000)
    lo, hi = credible_interval(4.5, 4.5, 0.9)
    assert np.mean((draws >= lo) & (draws <= hi)) == pytest.approx(0.9, abs=3e-3)
    assert prob_in_band(4.5, 4.5, 0.2, 0.8) == pytest.approx(np.mean((draws >= 0.2) & (draws <= 0.8)), abs=3e-3)


def test_rule_decides_extremes_quickly_and_samples_uncertain_more():
    rule = StoppingRule()
    # 0/8 and 8/8 are decided out of band; 4/8 in band; 1/4 is unsure
    assert not rule.undecided(0, 8) and not rule.in_band(0, 8)
    assert not rule.undecided(8, 8) and not rule.in_band(8, 8)
    assert not rule.undecided(8, 16) and rule.in_band(8, 16)
    assert rule.undecided(1, 4)
    assert not rule.undecided(1, 32), "max_k always stops"


def test_rule_refuses_bad_settings():
    with pytest.raises(ValueError, match="band"):
        StoppingRule(lo=0.8, hi=0.2)
    with pytest.raises(ValueError, match="confidence"):
        StoppingRule(confidence=0.4)


def _pool(rng):
    """Shaped like a real pool for a real model: most problems near 0 or 1."""
    return np.concatenate([rng.uniform(0, 0.05, 2000), rng.uniform(0.95, 1, 2000), rng.uniform(0.3, 0.7, 1000),
                           rng.uniform(0, 1, 1000)])


@pytest.mark.parametrize("empirical", [False, True])
def test_stopping_rule_error_rate_by_simulation(empirical):
    """Band decisions against the true pass rate: errors concentrate near the band edges."""
    rng = np.random.default_rng(2)
    rule = StoppingRule(confidence=0.95 if empirical else 0.9, screen_k=4, step_k=4)
    p = _pool(rng)
    c, k, w = simulate(rule, p, rng, empirical=empirical)
    truth = (p >= rule.lo) & (p <= rule.hi)
    decided = rule.in_band(c, k, w)
    far = (np.abs(p - rule.lo) > 0.1) & (np.abs(p - rule.hi) > 0.1)
    assert np.mean(decided[far] == truth[far]) >= 0.98
    assert np.mean(decided == truth) >= 0.96
    extreme = (p < 0.05) | (p > 0.95)
    assert np.mean(k[extreme]) < 12


def test_empirical_prior_recovers_a_bimodal_pool_and_saves_samples():
    rng = np.random.default_rng(3)
    p = np.concatenate([np.zeros(600), np.ones(300), np.full(100, 0.5)])
    k = np.full(p.shape, 8)
    w = fit_grid_prior(rng.binomial(8, p), k)
    assert w[0] == pytest.approx(0.6, abs=0.03) and w[-1] == pytest.approx(0.3, abs=0.03)
    rule = StoppingRule()
    assert rule.band_prob(0, 4, w)[0] < rule.band_prob(0, 4)  # the pool says 0/4 is almost surely p ~ 0
    _, k_emp, _ = simulate(rule, _pool(rng), rng, empirical=True)
    _, k_flat, _ = simulate(rule, _pool(rng), rng, empirical=False)
    assert k_emp.mean() < 0.7 * k_flat.mean()


def test_grid_prior_fit_on_distinct_counts_equals_the_fit_on_every_row():
    from grpo_data.curriculum.stats import GRID, _likelihood

    rng = np.random.default_rng(4)
    c, k = rng.binomial(8, _pool(rng)[:500]), np.full(500, 8)
    lik, w = _likelihood(c, k, GRID), np.full(GRID.size, 1 / GRID.size)
    for _ in range(300):  # EM over every row, as written in the textbook
        post = lik * w
        post /= post.sum(axis=1, keepdims=True)
        w = post.mean(axis=0)
    w = (1 - 1e-3) * w + 1e-3 / GRID.size
    np.testing.assert_allclose(fit_grid_prior(c, k), w / w.sum(), atol=1e-10)


def test_group_priors_fit_each_group_and_shrink_small_ones_to_the_pool():
    from grpo_data.curriculum.stats import fit_group_priors, row_priors

    rng = np.random.default_rng(5)
    p = np.concatenate([np.zeros(500), np.ones(500), np.full(5, 0.5)])
    groups = np.concatenate([np.zeros(500), np.ones(500), np.full(5, 2.0)])
    c, k = rng.binomial(8, p), np.full(p.shape, 8)
    keys, w = fit_group_priors(c, k, groups, shrink=20)
    np.testing.assert_array_equal(keys, [0, 1, 2])
    assert w[0, 0] > 0.9 and w[1, -1] > 0.9  # each large group speaks for itself
    assert w[2, 0] > 0.3 and w[2, -1] > 0.3  # five problems: mostly the pool's two modes
    rows = row_priors(c, k, groups)
    assert rows.shape == (p.size, w.shape[1]) and np.allclose(rows[600], w[1])
    # rows for a few problems only, from the fit on all of them
    some = row_priors(c, k, groups, rows=np.array([2.0, 0.0]))
    assert some.shape == (2, w.shape[1]) and np.allclose(some, w[[2, 0]])


def test_per_level_priors_save_samples_at_the_same_accuracy():
    """Levels that tell easy from hard let a 2-sample screen settle most problems."""
    rng = np.random.default_rng(6)
    levels = np.repeat(np.arange(6), 500)
    p = np.clip(np.concatenate([rng.uniform(0.95, 1, 1000), rng.uniform(0.3, 0.7, 1000), rng.uniform(0, 0.05, 1000)]), 0, 1)
    rule = StoppingRule()
    truth = (p >= rule.lo) & (p <= rule.hi)
    c, k, w = simulate(rule, p, np.random.default_rng(7), empirical=True, groups=levels)
    c0, k0, w0 = simulate(rule, p, np.random.default_rng(7), empirical=True)
    assert np.mean(rule.in_band(c, k, w) == truth) >= np.mean(rule.in_band(c0, k0, w0) == truth) - 0.01
    assert np.mean(rule.in_band(c, k, w) == truth) >= 0.97
    assert k.mean() < 0.8 * k0.mean()


def test_pass_at_k_matches_the_combinatorial_definition():
    from math import comb

    from grpo_data.curriculum.stats import pass_at_k

    for n in (1, 4, 8):
        for c in range(n + 1):
            for k in range(1, n + 1):
                assert pass_at_k(n, c, k) == pytest.approx(1 - comb(n - c, k) / comb(n, k))
    assert pass_at_k(4, 1, 1) == 0.25 and pass_at_k(4, 1, 4) == 1.0 and pass_at_k(4, 0, 4) == 0.0
    with pytest.raises(ValueError, match="at least 8 samples"):
        pass_at_k(4, 1, 8)


def test_majority_vote_by_extracted_answer():
    from grpo_data.curriculum.stats import majority_correct

    assert majority_correct(["12", "13", "12", ""], [True, False, True, False]) == 1.0
    assert majority_correct(["13", "12", "13", "12"], [False, True, False, True]) == 0.0  # tie: first given wins
    assert majority_correct(["", "", "12"], [False, False, True]) == 1.0  # no answer does not vote
    assert majority_correct(["", ""], [False, False]) == 0.0


def _brute_posterior(c: int, k: int, weights, grid) -> list[float]:
    """One problem's grid posterior, written out: prior weight times the binomial likelihood, normalized."""
    from math import comb

    joint = [w * comb(k, c) * g**c * (1 - g) ** (k - c) for w, g in zip(weights, grid, strict=True)]
    return [j / sum(joint) for j in joint]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_grid_posterior_mean_std_and_all_same_match_a_brute_force_loop(seed):
    from grpo_data.curriculum.stats import (
        GRID,
        grid_all_same,
        grid_mean_std,
        grid_posterior,
        grid_posterior_mean,
    )

    rng = np.random.default_rng(seed)
    weights = rng.dirichlet(np.full(GRID.size, 0.3), size=12)  # (N, G): a prior row per problem
    k = rng.choice([2, 4, 8, 32], size=12)
    c = rng.binomial(k, rng.uniform(0, 1, 12))
    c[:2], k[:2] = [0, 2], [2, 2]  # the extremes: 0/2 and 2/2
    post = grid_posterior(c, k, weights)
    for i in range(12):
        brute = _brute_posterior(int(c[i]), int(k[i]), weights[i], GRID.tolist())
        np.testing.assert_allclose(post[i], brute, rtol=1e-9, atol=1e-15)
        mean = sum(b * g for b, g in zip(brute, GRID.tolist(), strict=True))
        assert grid_posterior_mean(c[i:i + 1], k[i:i + 1], weights[i])[0] == pytest.approx(mean, rel=1e-9)
        same = sum(b * (g**8 + (1 - g) ** 8) for b, g in zip(brute, GRID.tolist(), strict=True))
        assert grid_all_same(post[i:i + 1], 8)[0] == pytest.approx(same, rel=1e-9)
        var = sum(b * (g - mean) ** 2 for b, g in zip(brute, GRID.tolist(), strict=True))
        m, sd = grid_mean_std(post[i:i + 1])
        assert m[0] == pytest.approx(mean, rel=1e-9) and sd[0] == pytest.approx(var**0.5, rel=1e-6, abs=1e-9)
    # one (G,) prior for every problem is the same as that row repeated
    np.testing.assert_allclose(grid_posterior_mean(c, k, weights[0]), grid_posterior_mean(c, k, np.tile(weights[0], (12, 1))))


def test_level_posteriors_use_the_profilers_per_level_prior():
    """A 1/2 screen is estimated from its level: low where the level is hard, near 0.5 where it is not."""
    from grpo_data.curriculum.stats import GRID, grid_posterior_mean, level_posteriors, row_priors

    c = np.array([0] * 60 + [1] * 15 + [1] + [2] * 30 + [8] * 30 + [1] + [1])
    k = np.array([2] * 60 + [16] * 15 + [2] + [2] * 30 + [16] * 30 + [2] + [2])
    levels = np.array([1.0] * 76 + [2.0] * 61 + [np.nan])
    est = level_posteriors(c, k, levels) @ GRID
    # the profiler's grouping: a missing level is the group -1 (profiler.prior_group_keys)
    np.testing.assert_allclose(est, grid_posterior_mean(c, k, row_priors(c, k, np.nan_to_num(levels, nan=-1.0))))
    assert est[75] < 0.3 < 0.4 < est[136] < 0.6  # the same 1/2 screen, in a hard level and in a middling one
    np.testing.assert_allclose(level_posteriors(c, k) @ GRID, grid_posterior_mean(c, k, row_priors(c, k)))


def test_paired_mean_se_on_hand_computed_differences():
    from grpo_data.curriculum.stats import paired_mean_se

    mean, se = paired_mean_se([0.1, 0.3, 0.2, 0.0])  # sd (ddof 1) = 0.1291, / sqrt(4)
    assert mean == pytest.approx(0.15) and se == pytest.approx(0.1290994 / 2)
    assert np.isnan(paired_mean_se([0.5])[1])
    with pytest.raises(ValueError, match="no problems"):
        paired_mean_se([])
