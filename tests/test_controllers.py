"""Learning-rate schedule, adaptive KL and the reward window against hand computations."""

import math

import numpy as np
import pytest

from grpo_train.controllers import AdaptiveKL, RewardWindow, lr_factor


def test_warmup_then_constant():
    assert [lr_factor(s, total=10, warmup=4) for s in range(6)] == [0.25, 0.5, 0.75, 1.0, 1.0, 1.0]


@pytest.mark.parametrize(("kind", "mid"), [("cosine", 0.55), ("linear", 0.55)])
def test_decay_reaches_min_ratio_at_the_last_step(kind, mid):
    # warmup 4, total 14: step 9 is halfway through the decay; min_ratio 0.1
    assert lr_factor(9, 14, 4, kind, 0.1) == pytest.approx(mid)
    assert lr_factor(4, 14, 4, kind, 0.1) == pytest.approx(1.0)
    assert lr_factor(14, 14, 4, kind, 0.1) == pytest.approx(0.1)
    assert lr_factor(50, 14, 4, kind, 0.1) == pytest.approx(0.1)  # stays there past the end
    if kind == "cosine":  # a quarter of the way: 0.1 + 0.9 * (1 + cos(pi / 4)) / 2
        assert lr_factor(6.5, 14, 4, kind, 0.1) == pytest.approx(0.1 + 0.45 * (1 + math.cos(math.pi / 4)))


def test_unknown_schedule_is_an_error():
    with pytest.raises(ValueError, match="constant, linear, cosine"):
        lr_factor(0, 10, kind="step")


def test_adaptive_kl_moves_beta_toward_the_target():
    ctl = AdaptiveKL(beta=0.1, target=0.02, horizon=10)
    assert ctl.update(0.04) == pytest.approx(0.1 * 1.02)  # error +1 clipped to +0.2
    assert ctl.update(0.01) == pytest.approx(0.1 * 1.02 * 0.98)  # error -0.5 clipped to -0.2
    assert ctl.update(0.021) == pytest.approx(0.1 * 1.02 * 0.98 * 1.005)  # error +0.05
    assert ctl.update(float("nan")) == pytest.approx(0.1 * 1.02 * 0.98 * 1.005)  # no measurement: unchanged


def test_reward_window_std_is_the_population_std_of_the_last_groups():
    rng = np.random.default_rng(0)
    groups = [rng.integers(0, 2, size=int(rng.integers(2, 9))).astype(float) for _ in range(30)]
    window = RewardWindow(groups=10)
    window.add([(g.sum(), (g * g).sum(), g.size) for g in groups])
    assert window.std() == pytest.approx(np.concatenate(groups[-10:]).std())
    restored = RewardWindow(groups=10)
    restored.load_state_dict(window.state_dict())
    assert restored.std() == pytest.approx(window.std())
    smaller = RewardWindow(groups=3)  # a resumed run with a smaller window keeps its own size
    smaller.load_state_dict(window.state_dict())
    assert smaller.groups.maxlen == 3 and smaller.std() == pytest.approx(np.concatenate(groups[-3:]).std())
    assert RewardWindow().std() == 0.0
