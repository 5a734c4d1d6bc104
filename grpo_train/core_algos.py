"""GRPO math: advantage estimators, the clipped policy loss, the KL estimator. Pure torch.

Each variant is a free function registered by name; the trainer picks one from its config, so a new
variant is added here, in one place:

    @register_advantage("my_adv")
    def my_adv(rewards, group_ids, eps): ...

Shapes: B = sequences in the batch (groups x G), T = completion tokens (right-padded).

Numerical choices, stated where they are made:
- `grpo` normalizes by the group's *sample* std (unbiased, divisor G-1), as in DeepSeekMath's
  reference code, plus eps = 1e-6 in the denominator; an all-equal group gets advantage 0.
- `dr_grpo` (Dr. GRPO) subtracts the group mean and does not divide by the std.
- `rloo` subtracts the mean of the *other* G-1 rewards: A_i = G/(G-1) * (r_i - mean).
- The surrogate clips the ratio to [1 - clip_low, 1 + clip_high] (clip-higher, DAPO).
- KL is the k3 estimator exp(ref - logp) - (ref - logp) - 1 (>= 0, unbiased for KL(pi || ref)).
- Aggregations divide by *global* counts (`LossNorm`: every micro-batch of the optimizer step, every
  rank), so micro-batches and ranks add up to exactly the big-batch loss: each piece returns its
  share, and the shares sum to the whole.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

ADVANTAGES: dict[str, Callable[..., torch.Tensor]] = {}
AGGREGATIONS: dict[str, Callable[..., torch.Tensor]] = {}


@dataclass(frozen=True)
class LossNorm:
    """Normalizers of one optimizer step, counted over all its micro-batches on all ranks.

    tokens:     completion tokens that carry loss (mask sum).
    sequences:  sequences with at least one such token.
    max_tokens: the rollout's completion budget (Dr. GRPO's constant normalizer)."""

    tokens: float
    sequences: float
    max_tokens: int

    @staticmethod
    def of(mask: torch.Tensor, max_tokens: int | None = None) -> LossNorm:
        """The normalizer of a single batch: mask (B, T)."""
        return LossNorm(float(mask.sum()), float((mask.sum(1) > 0).sum()), int(max_tokens or mask.size(1)))


def register_advantage(name: str):
    def deco(fn):
        ADVANTAGES[name] = fn
        return fn

    return deco


def register_aggregation(name: str):
    def deco(fn):
        AGGREGATIONS[name] = fn
        return fn

    return deco


def _group_stats(rewards: torch.Tensor, group_ids: torch.Tensor):
    """Per-sequence group mean, sample std and size. rewards, group_ids: (B,)."""
    n_groups = int(group_ids.max()) + 1
    count = torch.zeros(n_groups, dtype=rewards.dtype).index_add_(0, group_ids, torch.ones_like(rewards))  # (n,)
    total = torch.zeros(n_groups, dtype=rewards.dtype).index_add_(0, group_ids, rewards)  # (n,)
    mean = total / count  # (n,)
    sq = torch.zeros(n_groups, dtype=rewards.dtype).index_add_(0, group_ids, (rewards - mean[group_ids]) ** 2)
    std = torch.sqrt(sq / (count - 1).clamp(min=1))  # (n,) sample std, divisor G-1
    return mean[group_ids], std[group_ids], count[group_ids]  # each (B,)


@register_advantage("grpo")
def grpo_advantage(rewards: torch.Tensor, group_ids: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """(r - group mean) / (group sample std + eps). rewards, group_ids: (B,) -> (B,)."""
    mean, std, _ = _group_stats(rewards, group_ids)
    return (rewards - mean) / (std + eps)


@register_advantage("dr_grpo")
def dr_grpo_advantage(rewards: torch.Tensor, group_ids: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """r - group mean (no std normalization). (B,) -> (B,)."""
    mean, _, _ = _group_stats(rewards, group_ids)
    return rewards - mean


@register_advantage("rloo")
def rloo_advantage(rewards: torch.Tensor, group_ids: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """r - mean of the other rewards of the group = G/(G-1) * (r - mean). (B,) -> (B,)."""
    mean, _, count = _group_stats(rewards, group_ids)
    return (rewards - mean) * count / (count - 1).clamp(min=1)


def zero_variance_groups(rewards: torch.Tensor, group_ids: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """Boolean (n_groups,): groups whose rewards have std below eps (all right or all wrong)."""
    _, std, _ = _group_stats(rewards, group_ids)
    n_groups = int(group_ids.max()) + 1
    out = torch.zeros(n_groups, dtype=torch.bool)
    out[group_ids] = std < eps
    return out


@register_aggregation("token_mean")
def token_mean(values: torch.Tensor, mask: torch.Tensor, norm: LossNorm | None = None) -> torch.Tensor:
    """Mean over every completion token of the step (long answers weigh more; DAPO). (B, T) -> ()."""
    norm = norm or LossNorm.of(mask)
    return (values * mask).sum() / max(norm.tokens, 1.0)


@register_aggregation("seq_mean")
def seq_mean(values: torch.Tensor, mask: torch.Tensor, norm: LossNorm | None = None) -> torch.Tensor:
    """Mean over sequences of each sequence's token mean (GRPO's original; biased toward short
    answers in the gradient per token). (B, T) -> ()."""
    norm = norm or LossNorm.of(mask)
    per_seq = (values * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1)  # (B,) 0 for fully masked rows
    return per_seq.sum() / max(norm.sequences, 1.0)


@register_aggregation("seq_sum_norm")
def seq_sum_norm(values: torch.Tensor, mask: torch.Tensor, norm: LossNorm | None = None) -> torch.Tensor:
    """Dr. GRPO: each sequence's token *sum* over a constant (the completion budget max_tokens), mean
    over sequences. No division by a sequence's own length, so no length bias. (B, T) -> ()."""
    norm = norm or LossNorm.of(mask)
    return (values * mask).sum() / (max(norm.sequences, 1.0) * norm.max_tokens)


def kl_k3(logp: torch.Tensor, ref_logp: torch.Tensor) -> torch.Tensor:
    """k3 estimator of KL(pi || ref) per token: exp(ref - logp) - (ref - logp) - 1. (B, T) -> (B, T)."""
    delta = ref_logp - logp
    return torch.exp(delta) - delta - 1


def policy_loss(
    logp: torch.Tensor,
    old_logp: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    clip_low: float = 0.2,
    clip_high: float = 0.28,
    aggregation: str = "token_mean",
    ref_logp: torch.Tensor | None = None,
    kl_beta: float = 0.0,
    norm: LossNorm | None = None,
    is_weights: torch.Tensor | None = None,
) -> tuple[torch.Tensor, dict[str, float]]:
    """Clipped surrogate (+ beta * k3 KL). logp, old_logp, ref_logp, mask: (B, T); advantages: (B,).

    norm: global normalizers of the step (None: this batch alone). is_weights: (B, T) importance
    weights for the rollout/learner mismatch (truncated IS, `tis_weights`), applied to the surrogate.

    Returns this batch's share of the loss and metrics as token sums (`*_sum`, divide by the
    token count to average over micro-batches): clip fraction (tokens whose ratio was clipped in the
    direction that matters), ratio, kl."""
    agg = AGGREGATIONS[aggregation]
    ratio = torch.exp(logp - old_logp)  # (B, T)
    adv = advantages[:, None]  # (B, 1)
    unclipped = ratio * adv  # (B, T)
    clipped = torch.clamp(ratio, 1 - clip_low, 1 + clip_high) * adv  # (B, T)
    per_token = -torch.minimum(unclipped, clipped)  # (B, T)
    if is_weights is not None:
        per_token = per_token * is_weights
    metrics = {}
    with torch.no_grad():
        was_clipped = (clipped < unclipped).float()  # (B, T) the min took the clipped branch
        metrics["clip_fraction_sum"] = float((was_clipped * mask).sum())
        metrics["ratio_sum"] = float((ratio * mask).sum())
    if kl_beta > 0:
        if ref_logp is None:
            raise ValueError("kl_beta > 0 needs ref_logp")
        kl = kl_k3(logp, ref_logp)  # (B, T)
        per_token = per_token + kl_beta * kl
        metrics["kl_sum"] = float((kl.detach() * mask).sum())
    return agg(per_token, mask, norm), metrics


def tis_weights(old_logp: torch.Tensor, rollout_logp: torch.Tensor, cap: float) -> torch.Tensor:
    """Truncated importance sampling (as verl and TRL offer): min(pi_learner / pi_rollout, cap) per
    token, a constant (no gradient) that corrects for the sampler's numerics differing from the
    learner's. old_logp, rollout_logp: (B, T) -> (B, T)."""
    return torch.exp(old_logp - rollout_logp).clamp(max=cap).detach()


def compute_advantages(name: str, rewards: torch.Tensor, group_ids: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    if name not in ADVANTAGES:
        raise ValueError(f"unknown advantage estimator {name!r}; choose one of: {', '.join(ADVANTAGES)}")
    return ADVANTAGES[name](rewards, group_ids, eps)


def overlong_penalty(lengths: torch.Tensor, max_tokens: int, buffer: int, penalty: float = 1.0) -> torch.Tensor:
    """DAPO's soft overlong punishment: 0 up to max_tokens - buffer tokens, then falling linearly to
    -penalty at max_tokens (added to the reward). lengths: (B,) completion tokens -> (B,)."""
    start = max_tokens - buffer
    over = (lengths.to(torch.float64) - start).clamp(min=0) / max(buffer, 1)  # (B,) 0..1 inside the buffer
    return -penalty * over.clamp(max=1.0)
