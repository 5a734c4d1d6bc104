"""GRPO math: advantages, dropping, the clipped loss, KL: hand values and loop-vs-vectorized checks."""

import math

import pytest
import torch

from grpo_train.core_algos import (
    ADVANTAGES,
    AGGREGATIONS,
    AdvantageInputs,
    LossNorm,
    compute_advantages,
    kl_k3,
    overlong_penalty,
    policy_loss,
    seq_mean,
    seq_sum_norm,
    tis_weights,
    token_mean,
    zero_variance_groups,
)


def loop_advantage(name, rewards, groups, lengths, eps=1e-6, tau=0.3, w=0.7, lam=1.0):
    """Every estimator written out element by element, from its definition in core_algos' docstring."""
    def stats(values, gid):
        same = [values[j] for j in range(len(values)) if groups[j] == gid]
        mean = sum(same) / len(same)
        return same, mean, math.sqrt(sum((x - mean) ** 2 for x in same) / max(len(same) - 1, 1))

    centered = [r - stats(rewards, groups[i])[1] for i, r in enumerate(rewards)]
    out = []
    for i, r in enumerate(rewards):
        same, mean, std = stats(rewards, groups[i])
        g = len(same)
        z = (r - mean) / (std + eps)
        if name == "grpo":
            out.append(z)
        elif name == "dr_grpo":
            out.append(r - mean)
        elif name == "rloo":
            others = [rewards[j] for j in range(len(rewards)) if groups[j] == groups[i] and j != i]
            out.append(r - sum(others) / len(others))
        elif name == "softmax_z":
            zs = [(x - mean) / (std + eps) for x in same]
            out.append(g * math.exp(z / tau) / sum(math.exp(x / tau) for x in zs) - 1)
        elif name == "window_norm":  # no window given: this batch's population std
            mu = sum(rewards) / len(rewards)
            out.append((r - mean) / (math.sqrt(sum((x - mu) ** 2 for x in rewards) / len(rewards)) + eps))
        elif name == "hybrid":
            out.append(w * z + (1 - w) * r)
        elif name == "length_norm":
            _, mean_len, _ = stats(lengths, groups[i])
            out.append((r - mean) / (std + lam * abs(lengths[i] - mean_len) / mean_len + eps))
        elif name == "batch_norm":
            mu = sum(centered) / len(centered)
            sd = math.sqrt(sum((c - mu) ** 2 for c in centered) / max(len(centered) - 1, 1))
            out.append((centered[i] - mu) / (sd + eps))
        else:
            raise AssertionError(f"no loop reference for {name}: add one")
    return out


@pytest.mark.parametrize("name", sorted(ADVANTAGES))
@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize(("n_groups", "g"), [(1, 2), (3, 4), (5, 8)])
def test_vectorized_matches_loop(name, seed, n_groups, g):
    gen = torch.Generator().manual_seed(seed)
    rewards = torch.randint(0, 2, (n_groups * g,), generator=gen).double()
    rewards[::3] += 0.25  # shaped rewards, not only 0/1
    groups = torch.arange(n_groups).repeat_interleave(g)
    lengths = torch.randint(1, 40, (n_groups * g,), generator=gen)
    vec = compute_advantages(name, rewards, groups, inputs=AdvantageInputs(lengths=lengths))
    ref = loop_advantage(name, rewards.tolist(), groups.tolist(), lengths.tolist())
    torch.testing.assert_close(vec, torch.tensor(ref, dtype=torch.double))


@pytest.mark.parametrize("name", sorted(ADVANTAGES))
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_vectorized_matches_loop_with_unequal_group_sizes(name, seed):
    """Groups of 2, 3, 7, 16 and 5 answers in one batch (per-problem allocation, sequential sampling)."""
    gen = torch.Generator().manual_seed(seed)
    sizes = torch.tensor([2, 3, 7, 16, 5])
    groups = torch.arange(sizes.numel()).repeat_interleave(sizes)[torch.randperm(int(sizes.sum()), generator=gen)]
    rewards = torch.randint(0, 2, (groups.numel(),), generator=gen).double()
    rewards[::4] += 0.5
    lengths = torch.randint(1, 40, (groups.numel(),), generator=gen)
    vec = compute_advantages(name, rewards, groups, inputs=AdvantageInputs(lengths=lengths))
    ref = loop_advantage(name, rewards.tolist(), groups.tolist(), lengths.tolist())
    torch.testing.assert_close(vec, torch.tensor(ref, dtype=torch.double))


ZERO_SUM = sorted(set(ADVANTAGES) - {"hybrid", "length_norm"})  # these two weigh answers apart on purpose


@pytest.mark.parametrize("name", ZERO_SUM)
def test_advantages_sum_to_zero_within_a_group(name):
    rewards = torch.tensor([1.0, 0, 0, 1, 1, 0.5, 0, 1])
    groups = torch.tensor([0, 0, 0, 0, 1, 1, 1, 1])
    adv = compute_advantages(name, rewards, groups)
    for gid in (0, 1):
        assert float(adv[groups == gid].sum()) == pytest.approx(0.0, abs=1e-6)


def test_all_equal_group_has_zero_advantage_and_is_dropped():
    rewards = torch.tensor([1.0, 1, 1, 1, 0, 1, 0, 0])
    groups = torch.tensor([0, 0, 0, 0, 1, 1, 1, 1])
    adv = compute_advantages("grpo", rewards, groups)
    assert torch.all(adv[:4] == 0)
    assert zero_variance_groups(rewards, groups).tolist() == [True, False]


def test_grpo_hand_values():
    # group [1, 0, 0, 0]: mean 0.25, sample std sqrt(0.25) = 0.5
    adv = compute_advantages("grpo", torch.tensor([1.0, 0, 0, 0]), torch.zeros(4, dtype=torch.long), eps=0.0)
    torch.testing.assert_close(adv, torch.tensor([1.5, -0.5, -0.5, -0.5]))
    rloo = compute_advantages("rloo", torch.tensor([1.0, 0, 0, 0]), torch.zeros(4, dtype=torch.long))
    torch.testing.assert_close(rloo, torch.tensor([1.0, -1 / 3, -1 / 3, -1 / 3]))


def test_clipping_matches_hand_computation():
    old = torch.zeros(1, 3)
    logp = torch.log(torch.tensor([[1.5, 0.5, 1.1]]))  # ratios 1.5, 0.5, 1.1
    mask = torch.ones(1, 3)
    loss, m = policy_loss(logp, old, torch.tensor([1.0]), mask, clip_low=0.2, clip_high=0.28)
    # positive advantage: min(r, clip(r)) = [1.28, 0.5, 1.1]
    assert float(loss) == pytest.approx(-(1.28 + 0.5 + 1.1) / 3)
    assert m["clip_fraction_sum"] == pytest.approx(1)
    loss, m = policy_loss(logp, old, torch.tensor([-1.0]), mask, clip_low=0.2, clip_high=0.28)
    # negative advantage: min(-r, -clip(r)) = [-1.5, -0.8, -1.1]
    assert float(loss) == pytest.approx((1.5 + 0.8 + 1.1) / 3)
    assert m["clip_fraction_sum"] == pytest.approx(1)


def test_gradient_is_zero_where_clipped():
    logp = torch.log(torch.tensor([[1.5, 1.1]])).requires_grad_(True)
    loss, _ = policy_loss(logp, torch.zeros(1, 2), torch.tensor([1.0]), torch.ones(1, 2))
    loss.backward()
    assert logp.grad[0, 0] == 0 and logp.grad[0, 1] != 0


def test_aggregations_and_masking():
    values = torch.tensor([[1.0, 1.0, 9.0], [4.0, 0.0, 0.0]])
    mask = torch.tensor([[1.0, 1.0, 0.0], [1.0, 0.0, 0.0]])
    assert float(token_mean(values, mask)) == pytest.approx(2.0)  # (1 + 1 + 4) / 3
    assert float(seq_mean(values, mask)) == pytest.approx(2.5)  # (1 + 4) / 2
    # Dr. GRPO: token sums over the constant max_tokens (here 3), mean over sequences: (2 / 3 + 4 / 3) / 2
    assert float(seq_sum_norm(values, mask)) == pytest.approx(1.0)
    assert float(seq_sum_norm(values, mask, LossNorm(3, 2, 8))) == pytest.approx(6 / 16)


@pytest.mark.parametrize("name", ["token_mean", "seq_mean", "seq_sum_norm"])
def test_shares_of_pieces_add_up_to_the_whole(name):
    """Split a batch into pieces (micro-batches, ranks): each piece's share under the global
    normalizer sums to the whole batch's aggregate."""
    gen = torch.Generator().manual_seed(0)
    values = torch.randn(7, 5, generator=gen)
    lengths = torch.tensor([5, 1, 3, 0, 4, 2, 5])
    mask = (torch.arange(5)[None] < lengths[:, None]).float()
    agg = AGGREGATIONS[name]
    whole = agg(values, mask, LossNorm.of(mask, 5))
    norm = LossNorm.of(mask, 5)
    parts = sum(agg(values[s], mask[s], norm) for s in (slice(0, 2), slice(2, 3), slice(3, 7)))
    assert float(parts) == pytest.approx(float(whole), rel=1e-6)
    assert norm.sequences == 6  # the empty row carries no loss and is not counted


def test_seq_sum_norm_has_no_length_bias():
    """Same advantage, one long and one short answer: per-token gradient is the same for both under
    Dr. GRPO's constant normalizer, while seq_mean weighs the short answer's tokens more."""
    logp = torch.zeros(2, 4, requires_grad=True)
    mask = torch.tensor([[1.0, 1, 1, 1], [1, 0, 0, 0]])
    loss, _ = policy_loss(logp, logp.detach(), torch.tensor([1.0, 1.0]), mask, aggregation="seq_sum_norm")
    loss.backward()
    assert logp.grad[0, 0] == logp.grad[1, 0]
    logp.grad = None
    loss, _ = policy_loss(logp, logp.detach(), torch.tensor([1.0, 1.0]), mask, aggregation="seq_mean")
    loss.backward()
    assert logp.grad[1, 0] == pytest.approx(4 * float(logp.grad[0, 0]))


def test_overlong_penalty_ramps_over_the_buffer():
    pen = overlong_penalty(torch.tensor([10, 12, 14, 16]), max_tokens=16, buffer=4, penalty=1.0)
    torch.testing.assert_close(pen, torch.tensor([0.0, 0.0, -0.5, -1.0], dtype=torch.float64))


def test_truncated_importance_weights_are_capped_constants():
    old = torch.tensor([[0.0, -1.0]])
    rollout = torch.tensor([[-2.0, -1.0]])
    w = tis_weights(old, rollout, cap=2.0)
    torch.testing.assert_close(w, torch.tensor([[2.0, 1.0]]))  # exp(2) capped at 2; equal -> 1
    assert not w.requires_grad


def test_kl_k3_is_nonnegative_and_zero_at_equality():
    logp = torch.randn(4, 5)
    assert torch.all(kl_k3(logp, logp) == 0)
    assert torch.all(kl_k3(logp, logp + torch.randn(4, 5)) >= 0)
    loss, m = policy_loss(logp, logp.detach(), torch.zeros(4), torch.ones(4, 5), ref_logp=logp + 0.1, kl_beta=0.5)
    assert m["kl_sum"] > 0 and float(loss) > 0


def test_unknown_names_fail_clearly():
    with pytest.raises(ValueError, match="unknown advantage estimator 'ppo'"):
        compute_advantages("ppo", torch.zeros(2), torch.zeros(2, dtype=torch.long))
    with pytest.raises(ValueError, match="needs ref_logp"):
        policy_loss(torch.zeros(1, 1), torch.zeros(1, 1), torch.zeros(1), torch.ones(1, 1), kl_beta=0.1)


# ---------------------------------------------------------------- variants against hand computations
ONE_OF_FOUR = torch.tensor([1.0, 0, 0, 0])  # mean 0.25, sample std 0.5, z = [1.5, -0.5, -0.5, -0.5]
G0 = torch.zeros(4, dtype=torch.long)


def test_softmax_z_hand_values():
    adv = compute_advantages("softmax_z", ONE_OF_FOUR, G0, inputs=AdvantageInputs(eps=0.0, tau=0.5))
    top = 4 * math.exp(3) / (math.exp(3) + 3 * math.exp(-1)) - 1  # z / tau = [3, -1, -1, -1]
    rest = 4 * math.exp(-1) / (math.exp(3) + 3 * math.exp(-1)) - 1
    torch.testing.assert_close(adv, torch.tensor([top, rest, rest, rest]))
    # a very low temperature gives the best answer everything: [G - 1, -1, -1, -1]
    cold = compute_advantages("softmax_z", ONE_OF_FOUR, G0, inputs=AdvantageInputs(eps=0.0, tau=0.01))
    torch.testing.assert_close(cold, torch.tensor([3.0, -1, -1, -1]))
    assert compute_advantages("softmax_z", torch.ones(4), G0).abs().max() == 0  # an all-equal group: 0


def test_window_norm_divides_by_the_window_std_not_the_group_std():
    adv = compute_advantages("window_norm", torch.tensor([1.0, 0]), torch.zeros(2, dtype=torch.long),
                             inputs=AdvantageInputs(eps=0.0, scale=(0.25,)))
    torch.testing.assert_close(adv, torch.tensor([2.0, -2.0]))  # (r - 0.5) / 0.25


def test_hybrid_hand_values():
    adv = compute_advantages("hybrid", ONE_OF_FOUR, G0, inputs=AdvantageInputs(eps=0.0, hybrid_weight=0.7))
    torch.testing.assert_close(adv, torch.tensor([0.7 * 1.5 + 0.3, -0.35, -0.35, -0.35]))


def test_length_norm_hand_values():
    lengths = torch.tensor([10, 30])  # group mean 20: both half the mean off
    adv = compute_advantages("length_norm", torch.tensor([1.0, 0]), torch.zeros(2, dtype=torch.long),
                             inputs=AdvantageInputs(eps=0.0, length_lambda=0.4, lengths=lengths))
    denom = math.sqrt(0.5) + 0.4 * 0.5
    torch.testing.assert_close(adv, torch.tensor([0.5 / denom, -0.5 / denom]))
    # the same shape at real lengths gives the same advantages: the deviation is relative
    long = compute_advantages("length_norm", torch.tensor([1.0, 0]), torch.zeros(2, dtype=torch.long),
                              inputs=AdvantageInputs(eps=0.0, length_lambda=0.4, lengths=lengths * 200))
    torch.testing.assert_close(long, adv)
    with pytest.raises(ValueError, match="lengths"):
        compute_advantages("length_norm", torch.tensor([1.0, 0]), torch.zeros(2, dtype=torch.long))


def test_batch_norm_hand_values():
    rewards, groups = torch.tensor([1.0, 0, 1, 1]), torch.tensor([0, 0, 1, 1])
    adv = compute_advantages("batch_norm", rewards, groups, inputs=AdvantageInputs(eps=0.0))
    sd = math.sqrt(0.5 / 3)  # centered [0.5, -0.5, 0, 0], sample std over the batch
    torch.testing.assert_close(adv, torch.tensor([0.5 / sd, -0.5 / sd, 0, 0]))
    given = compute_advantages("batch_norm", rewards, groups, inputs=AdvantageInputs(eps=0.0, scale=(0.1, 2.0)))
    torch.testing.assert_close(given, torch.tensor([0.2, -0.3, -0.05, -0.05]))  # every rank's (mean, std)


def test_gspo_ratio_is_the_sequence_ratio_with_per_token_gradient():
    old = torch.zeros(1, 3)
    logp = torch.tensor([[0.1, 0.3, 5.0]], requires_grad=True)
    mask = torch.tensor([[1.0, 1.0, 0.0]])  # the third token is padding
    loss, m = policy_loss(logp, old, torch.tensor([1.0]), mask, clip_low=0.5, clip_high=0.5,
                          aggregation="seq_mean", ratio_level="sequence")
    s = math.exp(0.2)  # exp(mean(0.1, 0.3))
    assert float(loss.detach()) == pytest.approx(-s)
    assert m["ratio_sum"] == pytest.approx(2 * s)
    loss.backward()
    torch.testing.assert_close(logp.grad, torch.tensor([[-s / 2, -s / 2, 0.0]]))
    # clipped at the sequence level: every token of a sequence is clipped together
    _, m = policy_loss(logp.detach() + 1.0, old, torch.tensor([1.0]), mask, clip_low=0.2, clip_high=0.2,
                       ratio_level="sequence")
    assert m["clip_fraction_sum"] == 2
    with pytest.raises(ValueError, match="ratio_level"):
        policy_loss(logp, old, torch.tensor([1.0]), mask, ratio_level="tokens")


def test_entropy_bonus_subtracts_coef_times_the_aggregated_entropy():
    logp, mask = torch.zeros(2, 3), torch.tensor([[1.0, 1, 0], [1, 1, 1]])
    entropy = torch.tensor([[1.0, 2.0, 9.0], [0.5, 0.5, 0.5]])
    base, _ = policy_loss(logp, logp, torch.zeros(2), mask)
    bonus, _ = policy_loss(logp, logp, torch.zeros(2), mask, entropy=entropy, entropy_coef=0.1)
    assert float(bonus - base) == pytest.approx(-0.1 * (1 + 2 + 1.5) / 5)  # token mean over 5 real tokens
    with pytest.raises(ValueError, match="entropy"):
        policy_loss(logp, logp, torch.zeros(2), mask, entropy_coef=0.1)


def test_kl_is_measured_without_entering_the_loss_when_beta_is_zero():
    logp = torch.zeros(1, 2)
    plain, m0 = policy_loss(logp, logp, torch.ones(1), torch.ones(1, 2))
    tracked, m1 = policy_loss(logp, logp, torch.ones(1), torch.ones(1, 2), ref_logp=logp + 0.1)
    assert float(tracked) == float(plain) and "kl_sum" not in m0
    assert m1["kl_sum"] == pytest.approx(2 * (math.exp(0.1) - 0.1 - 1), rel=1e-5)  # float32
