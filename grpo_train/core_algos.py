"""GRPO math: advantage estimators, the clipped policy loss, the KL estimator. Pure torch.

Each variant is a free function registered by name; the trainer picks one from its config, so a new
variant is added here, in one place:

    @register_advantage("my_adv")
    def my_adv(rewards, group_ids, p: AdvantageInputs): ...

Shapes: B = sequences in the batch (groups x G), T = completion tokens (right-padded).

Numerical choices, stated where they are made:
- `grpo` normalizes by the group's *sample* std (unbiased, divisor G-1), as in DeepSeekMath's
  reference code, plus eps = 1e-6 in the denominator; an all-equal group gets advantage 0.
- `dr_grpo` (Dr. GRPO) subtracts the group mean and does not divide by the std.
- `rloo` subtracts the mean of the *other* G-1 rewards: A_i = G/(G-1) * (r_i - mean).
- `softmax_z`: z-scores as in `grpo`, then A_i = G * softmax_group(z / tau)_i - 1 (mean 0 in the
  group, sums to 0; tau -> inf gives z / tau, small tau gives the best answer most of the weight).
- `window_norm`: r_i - group mean, over the std of every reward of the last N groups (this step's
  included) instead of the group's own: the baseline stays group-relative, the scale stops jumping
  with small groups.
- `hybrid`: w * grpo + (1 - w) * r_i (the absolute reward, no baseline).
- `length_norm`: (r_i - mean) / (std + lambda * |len_i - mean len| / mean len + eps): an answer much
  longer or shorter than its group's gets a smaller advantage either way. The deviation is relative
  to the group's mean length, so lambda means the same at 16 tokens and at 4,000 (in raw tokens,
  lambda 0.1 at 3,000 +- 800 tokens shrinks every advantage ~50x).
- `batch_norm` (REINFORCE++ with a group baseline): r_i - group mean, whitened over the whole batch
  of every rank (sample std).
- The surrogate clips the ratio to [1 - clip_low, 1 + clip_high] (clip-higher, DAPO); GSPO
  (`ratio_level="sequence"`) uses each sequence's length-normalized ratio
  exp(mean_t(logp - old_logp)) for all its tokens, with its gradient taken token by token.
- KL is the k3 estimator exp(ref - logp) - (ref - logp) - 1 (>= 0, unbiased for KL(pi || ref)).
- The entropy bonus subtracts coef * entropy per token, aggregated like the surrogate.
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


@dataclass(frozen=True)
class AdvantageInputs:
    """What an estimator may use beside rewards and groups (each field documented on its variant).

    eps:           std epsilon.
    tau:           softmax_z temperature.
    hybrid_weight: hybrid's weight on the group-relative term.
    length_lambda: length_norm's weight on the length deviation.
    lengths:       (B,) completion tokens (length_norm).
    scale:         window_norm's reward std over the window, batch_norm's (mean, std) over the batch
                   of every rank; None computes it from this batch alone."""

    eps: float = 1e-6
    tau: float = 0.3
    hybrid_weight: float = 0.7
    length_lambda: float = 1.0
    lengths: torch.Tensor | None = None
    scale: tuple[float, ...] | None = None


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


def _group_sum(values: torch.Tensor, group_ids: torch.Tensor) -> torch.Tensor:
    """Per-group sums, (B,) -> (n_groups,)."""
    n_groups = int(group_ids.max()) + 1
    return torch.zeros(n_groups, dtype=values.dtype).index_add_(0, group_ids, values)


def _group_stats(rewards: torch.Tensor, group_ids: torch.Tensor):
    """Per-sequence group mean, sample std and size. rewards, group_ids: (B,)."""
    count = _group_sum(torch.ones_like(rewards), group_ids)  # (n,)
    mean = _group_sum(rewards, group_ids) / count  # (n,)
    sq = _group_sum((rewards - mean[group_ids]) ** 2, group_ids)
    std = torch.sqrt(sq / (count - 1).clamp(min=1))  # (n,) sample std, divisor G-1
    return mean[group_ids], std[group_ids], count[group_ids]  # each (B,)


@register_advantage("grpo")
def grpo_advantage(rewards: torch.Tensor, group_ids: torch.Tensor, p: AdvantageInputs) -> torch.Tensor:
    """(r - group mean) / (group sample std + eps). rewards, group_ids: (B,) -> (B,)."""
    mean, std, _ = _group_stats(rewards, group_ids)
    return (rewards - mean) / (std + p.eps)


@register_advantage("dr_grpo")
def dr_grpo_advantage(rewards: torch.Tensor, group_ids: torch.Tensor, p: AdvantageInputs) -> torch.Tensor:
    """r - group mean (no std normalization). (B,) -> (B,)."""
    mean, _, _ = _group_stats(rewards, group_ids)
    return rewards - mean


@register_advantage("rloo")
def rloo_advantage(rewards: torch.Tensor, group_ids: torch.Tensor, p: AdvantageInputs) -> torch.Tensor:
    """r - mean of the other rewards of the group = G/(G-1) * (r - mean). (B,) -> (B,)."""
    mean, _, count = _group_stats(rewards, group_ids)
    return (rewards - mean) * count / (count - 1).clamp(min=1)


@register_advantage("softmax_z")
def softmax_z_advantage(rewards: torch.Tensor, group_ids: torch.Tensor, p: AdvantageInputs) -> torch.Tensor:
    """G * softmax over the group of (grpo z-score / tau) - 1. (B,) -> (B,)."""
    z = grpo_advantage(rewards, group_ids, p) / p.tau  # (B,)
    z_max = torch.full((int(group_ids.max()) + 1,), -torch.inf, dtype=z.dtype).scatter_reduce(
        0, group_ids, z, reduce="amax")  # (n,) for a stable softmax
    e = torch.exp(z - z_max[group_ids])  # (B,)
    _, _, count = _group_stats(rewards, group_ids)
    return count * e / _group_sum(e, group_ids)[group_ids] - 1


@register_advantage("window_norm")
def window_norm_advantage(rewards: torch.Tensor, group_ids: torch.Tensor, p: AdvantageInputs) -> torch.Tensor:
    """(r - group mean) / (window reward std + eps); p.scale = (window std,), else this batch's
    population std. (B,) -> (B,)."""
    mean, _, _ = _group_stats(rewards, group_ids)
    std = p.scale[0] if p.scale is not None else float(rewards.std(unbiased=False))
    return (rewards - mean) / (std + p.eps)


@register_advantage("hybrid")
def hybrid_advantage(rewards: torch.Tensor, group_ids: torch.Tensor, p: AdvantageInputs) -> torch.Tensor:
    """w * grpo + (1 - w) * r (absolute reward). (B,) -> (B,)."""
    return p.hybrid_weight * grpo_advantage(rewards, group_ids, p) + (1 - p.hybrid_weight) * rewards


@register_advantage("length_norm")
def length_norm_advantage(rewards: torch.Tensor, group_ids: torch.Tensor, p: AdvantageInputs) -> torch.Tensor:
    """(r - mean) / (std + lambda * |len - group mean len| / group mean len + eps); p.lengths (B,).
    (B,) -> (B,)."""
    if p.lengths is None:
        raise ValueError("length_norm needs the completion lengths (AdvantageInputs.lengths)")
    mean, std, _ = _group_stats(rewards, group_ids)
    lengths = p.lengths.to(rewards.dtype)
    mean_len, _, _ = _group_stats(lengths, group_ids)
    deviation = (lengths - mean_len).abs() / mean_len.clamp(min=1)  # (B,) relative to the group's length
    return (rewards - mean) / (std + p.length_lambda * deviation + p.eps)


@register_advantage("batch_norm")
def batch_norm_advantage(rewards: torch.Tensor, group_ids: torch.Tensor, p: AdvantageInputs) -> torch.Tensor:
    """(c - batch mean of c) / (batch sample std of c + eps), c = r - group mean; p.scale = (mean,
    std) over every rank's batch, else this batch's. (B,) -> (B,)."""
    mean, _, _ = _group_stats(rewards, group_ids)
    centered = rewards - mean
    if p.scale is not None:
        mu, sd = p.scale
    else:
        mu, sd = float(centered.mean()), float(centered.std()) if centered.numel() > 1 else 0.0
    return (centered - mu) / (sd + p.eps)


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


def sequence_ratio(logp: torch.Tensor, old_logp: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """GSPO's ratio per token: the sequence's length-normalized ratio s = exp(mean_t(logp - old_logp))
    as its value, with the gradient s * d logp_t per token (GSPO-token form; `seq_mean` aggregation
    adds the 1 / |y| and makes it GSPO's sequence-level gradient). (B, T) -> (B, T)."""
    log_s = ((logp - old_logp) * mask).sum(1) / mask.sum(1).clamp(min=1)  # (B,)
    return torch.exp(log_s.detach()[:, None] + logp - logp.detach())  # (B, T) value s, grad per token


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
    ratio_level: str = "token",
    entropy: torch.Tensor | None = None,
    entropy_coef: float = 0.0,
) -> tuple[torch.Tensor, dict[str, float]]:
    """Clipped surrogate (+ beta * k3 KL - entropy_coef * entropy). logp, old_logp, ref_logp, mask,
    entropy: (B, T); advantages: (B,).

    norm: global normalizers of the step (None: this batch alone). is_weights: (B, T) importance
    weights for the rollout/learner mismatch (truncated IS, `tis_weights`), applied to the surrogate.
    ratio_level: `token` (PPO/GRPO) or `sequence` (GSPO, `sequence_ratio`).

    Returns this batch's share of the loss and metrics as token sums (`*_sum`, divide by the
    token count to average over micro-batches): clip fraction (tokens whose ratio was clipped in the
    direction that matters), ratio, kl."""
    agg = AGGREGATIONS[aggregation]
    if ratio_level == "sequence":
        ratio = sequence_ratio(logp, old_logp, mask)  # (B, T)
    elif ratio_level == "token":
        ratio = torch.exp(logp - old_logp)  # (B, T)
    else:
        raise ValueError(f"ratio_level must be token or sequence, got {ratio_level!r}")
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
    if kl_beta > 0 and ref_logp is None:
        raise ValueError("kl_beta > 0 needs ref_logp")
    if ref_logp is not None:  # measured whenever a reference is given, in the loss when beta > 0
        kl = kl_k3(logp, ref_logp)  # (B, T)
        if kl_beta > 0:
            per_token = per_token + kl_beta * kl
        metrics["kl_sum"] = float((kl.detach() * mask).sum())
    if entropy_coef:
        if entropy is None:
            raise ValueError("entropy_coef != 0 needs the per-token entropy")
        per_token = per_token - entropy_coef * entropy
    return agg(per_token, mask, norm), metrics


def tis_weights(old_logp: torch.Tensor, rollout_logp: torch.Tensor, cap: float) -> torch.Tensor:
    """Truncated importance sampling (as verl and TRL offer): min(pi_learner / pi_rollout, cap) per
    token, a constant (no gradient) that corrects for the sampler's numerics differing from the
    learner's. old_logp, rollout_logp: (B, T) -> (B, T)."""
    return torch.exp(old_logp - rollout_logp).clamp(max=cap).detach()


def compute_advantages(name: str, rewards: torch.Tensor, group_ids: torch.Tensor, eps: float = 1e-6,
                       inputs: AdvantageInputs | None = None) -> torch.Tensor:
    """The named estimator's advantages, (B,). `inputs` (with its own eps) overrides `eps`."""
    if name not in ADVANTAGES:
        raise ValueError(f"unknown advantage estimator {name!r}; choose one of: {', '.join(ADVANTAGES)}")
    return ADVANTAGES[name](rewards, group_ids, inputs or AdvantageInputs(eps=eps))


def overlong_penalty(lengths: torch.Tensor, max_tokens: int, buffer: int, penalty: float = 1.0) -> torch.Tensor:
    """DAPO's soft overlong punishment: 0 up to max_tokens - buffer tokens, then falling linearly to
    -penalty at max_tokens (added to the reward). lengths: (B,) completion tokens -> (B,)."""
    start = max_tokens - buffer
    over = (lengths.to(torch.float64) - start).clamp(min=0) / max(buffer, 1)  # (B,) 0..1 inside the buffer
    return -penalty * over.clamp(max=1.0)
