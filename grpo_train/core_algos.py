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
"""

from __future__ import annotations

from collections.abc import Callable

import torch

ADVANTAGES: dict[str, Callable[..., torch.Tensor]] = {}
AGGREGATIONS: dict[str, Callable[[torch.Tensor, torch.Tensor], torch.Tensor]] = {}


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
def token_mean(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean over every completion token of the batch (long answers weigh more). (B, T) -> ()."""
    return (values * mask).sum() / mask.sum().clamp(min=1)


@register_aggregation("seq_mean")
def seq_mean(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean over sequences of each sequence's token mean. (B, T) -> ()."""
    per_seq = (values * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1)  # (B,)
    return per_seq.mean()


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
) -> tuple[torch.Tensor, dict[str, float]]:
    """Clipped surrogate (+ beta * k3 KL). logp, old_logp, ref_logp, mask: (B, T); advantages: (B,).

    Returns the scalar loss and metrics: clip_fraction (tokens whose ratio was clipped in the
    direction that matters), kl, approx ratio mean."""
    agg = AGGREGATIONS[aggregation]
    ratio = torch.exp(logp - old_logp)  # (B, T)
    adv = advantages[:, None]  # (B, 1)
    unclipped = ratio * adv  # (B, T)
    clipped = torch.clamp(ratio, 1 - clip_low, 1 + clip_high) * adv  # (B, T)
    per_token = -torch.minimum(unclipped, clipped)  # (B, T)
    metrics = {}
    with torch.no_grad():
        was_clipped = (clipped < unclipped).float()  # (B, T) the min took the clipped branch
        metrics["clip_fraction"] = float(token_mean(was_clipped, mask))
        metrics["ratio_mean"] = float(token_mean(ratio, mask))
    if kl_beta > 0:
        if ref_logp is None:
            raise ValueError("kl_beta > 0 needs ref_logp")
        kl = kl_k3(logp, ref_logp)  # (B, T)
        per_token = per_token + kl_beta * kl
        metrics["kl"] = float(token_mean(kl.detach(), mask))
    return agg(per_token, mask), metrics


def compute_advantages(name: str, rewards: torch.Tensor, group_ids: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    if name not in ADVANTAGES:
        raise ValueError(f"unknown advantage estimator {name!r}; choose one of: {', '.join(ADVANTAGES)}")
    return ADVANTAGES[name](rewards, group_ids, eps)
