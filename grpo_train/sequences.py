"""The learner's batch without an engine: each sampled answer as a `Sequence`, and what the learner
computes from them before and around the forward passes. Pure torch and numpy, tested without DeepSpeed.

Groups are flattened into Sequences (`flatten_groups`), right-padded into `PaddedBatch` tensors
(`pad_batch`, `pad_rows`) and packed into micro-batches of at most a token budget
(`micro_batches`); each sequence's advantage is computed over the scored answers of its group
(`sequence_advantages`, with `group_reward_stats` for window_norm's window), and
`microbatch_loss` is one micro-batch's share of the step's loss.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from grpo_train.config import AlgoConfig
from grpo_train.core_algos import AdvantageInputs, LossNorm, compute_advantages, policy_loss, tis_weights
from grpo_train.logprobs import PaddedBatch


@dataclass(frozen=True)
class Sequence:
    """One sampled answer as the learner sees it.

    ids: prompt + completion token ids; prompt_len: tokens before the completion; reward: its
    (shaped) reward, NaN when no reward could score it; group: index of its group on this rank;
    train: whether it carries loss (never for an unscored answer);
    rollout_logp: the engine's log-prob of each completion token (None if it gave none)."""

    ids: tuple[int, ...]
    prompt_len: int
    reward: float
    group: int
    train: bool
    rollout_logp: tuple[float, ...] | None

    @property
    def completion_len(self) -> int:
        return len(self.ids) - self.prompt_len


def flatten_groups(groups) -> list[Sequence]:
    """Groups (groups.Group) -> one Sequence per answer, in group order."""
    out = []
    for gi, g in enumerate(groups):
        train = g.train_mask if g.train_mask is not None else [True] * len(g.completions)
        for comp, r, t in zip(g.completions, g.rewards, train, strict=True):
            out.append(Sequence(tuple(g.prompt_ids) + tuple(comp.token_ids), len(g.prompt_ids), float(r), gi,
                                bool(t) and np.isfinite(r), comp.logprobs))
    return out


def pad_batch(seqs: list[Sequence], pad_id: int) -> PaddedBatch:
    """Right-padded tensors for a micro-batch of sequences."""
    B, L = len(seqs), max(len(s.ids) for s in seqs)
    T = max(max(s.completion_len for s in seqs), 1)
    input_ids = torch.full((B, L), pad_id, dtype=torch.long)
    attention = torch.zeros((B, L), dtype=torch.long)
    positions = torch.zeros((B, T), dtype=torch.long)
    token_mask = torch.zeros((B, T), dtype=torch.float32)
    rollout_logp = torch.full((B, T), float("nan"), dtype=torch.float32)
    for i, s in enumerate(seqs):
        c = s.completion_len
        input_ids[i, : len(s.ids)] = torch.tensor(s.ids)
        attention[i, : len(s.ids)] = 1
        positions[i, :c] = torch.arange(s.prompt_len, s.prompt_len + c)
        token_mask[i, :c] = 1.0
        if s.rollout_logp is not None and c:
            rollout_logp[i, :c] = torch.tensor(s.rollout_logp[:c], dtype=torch.float32)
    train = torch.tensor([s.train for s in seqs], dtype=torch.float32)[:, None]  # (B, 1)
    return PaddedBatch(input_ids, attention, positions, token_mask * train, token_mask, rollout_logp)


def build_tensors(groups, pad_id: int):
    """Right-padded tensors for a list of Groups: input_ids (B, L), attention (B, L), positions
    (B, T), loss mask (B, T), rewards (B,), group ids (B,)."""
    seqs = flatten_groups(groups)
    b = pad_batch(seqs, pad_id)
    return (b.input_ids, b.attention, b.positions, b.mask, torch.tensor([s.reward for s in seqs]),
            torch.tensor([s.group for s in seqs]))


def pad_rows(rows: list[torch.Tensor], shape: torch.Size) -> torch.Tensor:
    """Per-sequence 1-D tensors right-padded with 0 into `shape` (B, T)."""
    out = torch.zeros(shape, dtype=torch.float32, device=rows[0].device)
    for i, r in enumerate(rows):
        out[i, : r.numel()] = r
    return out


def micro_batches(lengths: list[int], token_budget: int) -> list[list[int]]:
    """Indices packed into micro-batches whose padded size (rows x longest row) stays within
    `token_budget`; longest first, so rows of a micro-batch have similar lengths. A sequence longer
    than the budget gets a micro-batch of its own."""
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    out: list[list[int]] = []
    for i in order:
        if out and (len(out[-1]) + 1) * lengths[out[-1][0]] <= token_budget:
            out[-1].append(i)
        else:
            out.append([i])
    return out


def sequence_advantages(seqs: list[Sequence], algo: AlgoConfig, scale: tuple[float, ...] | None = None) -> torch.Tensor:
    """Each sequence's advantage under algo.advantage, (B,): computed over the scored answers only
    (an unscored one, reward NaN, gets 0 and counts in no group's statistics)."""
    rewards = torch.tensor([s.reward for s in seqs], dtype=torch.float32)  # (B,)
    scored = torch.isfinite(rewards)
    adv = torch.zeros_like(rewards)
    if scored.any():
        _, groups = torch.unique(torch.tensor([s.group for s in seqs])[scored], return_inverse=True)
        lengths = torch.tensor([s.completion_len for s in seqs])[scored]
        inputs = AdvantageInputs(eps=algo.eps, tau=algo.tau, hybrid_weight=algo.hybrid_weight,
                                 length_lambda=algo.length_lambda, lengths=lengths, scale=scale)
        adv[scored] = compute_advantages(algo.advantage, rewards[scored], groups, inputs=inputs).float()
    return adv


def group_reward_stats(seqs: list[Sequence]) -> list[tuple[float, float, float]]:
    """(sum, sum of squares, count) of each group's scored rewards, in group order."""
    stats: dict[int, list[float]] = {}
    for s in seqs:
        if np.isfinite(s.reward):
            acc = stats.setdefault(s.group, [0.0, 0.0, 0.0])
            acc[0] += s.reward
            acc[1] += s.reward ** 2
            acc[2] += 1
    return [tuple(stats[g]) for g in sorted(stats)]


def microbatch_loss(logp: torch.Tensor, batch: PaddedBatch, advantages: torch.Tensor, old_logp: torch.Tensor,
                    ref_logp: torch.Tensor | None, norm: LossNorm, algo: AlgoConfig, kl_beta: float | None = None,
                    entropy: torch.Tensor | None = None) -> tuple[torch.Tensor, dict[str, float]]:
    """This micro-batch's share of the step's loss (shares over micro-batches and ranks add up to the
    big-batch loss) and its metric sums. logp, old_logp, ref_logp, entropy: (B, T); advantages: (B,);
    kl_beta: the current KL coefficient (algo.kl_beta when not adapted)."""
    is_weights = None
    if algo.tis_cap > 0:
        have = torch.isfinite(batch.rollout_logp)
        is_weights = torch.where(have, tis_weights(old_logp, batch.rollout_logp.nan_to_num(0.0), algo.tis_cap),
                                 torch.ones_like(old_logp))  # (B, T)
    return policy_loss(logp, old_logp, advantages, batch.mask, algo.clip_low, algo.clip_high, algo.aggregation,
                       ref_logp, algo.kl_beta if kl_beta is None else kl_beta, norm=norm, is_weights=is_weights,
                       ratio_level=algo.ratio_level, entropy=entropy, entropy_coef=algo.entropy_coef)
