"""Log-probs of sampled tokens under the sampling distribution, in bounded memory. Pure torch.

The rollout engine samples from softmax(logits / T). Every log-prob the learner uses (old, new,
reference) and the entropy it logs are of that same distribution, so the PPO ratio, the clip region
and the KL are about the policy that actually produced the data.

Memory: a causal LM's logits are (B, L, V); at 512 sequences x 8k tokens x 152k vocabulary that is
terabytes. Here the decoder's hidden states are taken at completion positions only, and the head
(hidden -> vocabulary) runs on `chunk_tokens` of them at a time. With gradients, each chunk is
recomputed in the backward pass (activation checkpointing), so at most one chunk's (chunk, V)
logits exist at once, in fp32.

    logp, entropy = token_logprobs(model, batch, temperature=0.6, with_entropy=True)  # (B, T) each

`model` is an HF causal LM or a DeepSpeed engine around one: its forward runs with logits for the
last position only, the decoder's hidden states are taken from it, `get_output_embeddings()` is the
head. Logit soft-capping (`final_logit_softcapping`) and
scaling (`logits_scaling`) in the model's config are applied as the model's own forward does.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch.utils.checkpoint import checkpoint


@dataclass
class PaddedBatch:
    """Right-padded sequences (prompt + completion) of one micro-batch.

    input_ids:    (B, L) token ids, pad after the end.
    attention:    (B, L) 1 on real tokens.
    positions:    (B, T) index in the sequence of each completion token (0 where padded).
    mask:         (B, T) 1.0 on completion tokens that carry loss, 0 on padding and on sequences
                  masked out of the loss (e.g. truncated ones under DAPO's overlong filtering).
    token_mask:   (B, T) 1.0 on every real completion token (metrics count these).
    rollout_logp: (B, T) the engine's log-prob of each sampled token, NaN where it gave none.
    """

    input_ids: torch.Tensor
    attention: torch.Tensor
    positions: torch.Tensor
    mask: torch.Tensor
    token_mask: torch.Tensor
    rollout_logp: torch.Tensor

    def to(self, device) -> PaddedBatch:
        return PaddedBatch(*(t.to(device) for t in (self.input_ids, self.attention, self.positions, self.mask,
                                                        self.token_mask, self.rollout_logp)))


def _head_transform(config):
    """The model's own post-head logit transform (scaling, soft-capping), or None."""
    scale = getattr(config, "logits_scaling", None)  # Granite: logits / scale
    multiply = getattr(config, "logit_scale", None)  # Cohere: logits * scale
    cap = getattr(config, "final_logit_softcapping", None)  # Gemma 2

    def transform(logits: torch.Tensor) -> torch.Tensor:
        if scale:
            logits = logits / scale
        if multiply:
            logits = logits * multiply
        if cap:
            logits = torch.tanh(logits / cap) * cap
        return logits

    return transform if (scale or multiply or cap) else None


def _chunk_logprobs(head, transform, hidden: torch.Tensor, tokens: torch.Tensor, temperature: float,
                    with_entropy: bool, entropy_grad: bool = False):
    """log p(token) under softmax(head(hidden) / T): hidden (n, H), tokens (n,) -> logp (n,), entropy
    (n,) (zeros unless asked: it costs another (n, V) tensor; with a gradient when entropy_grad)."""
    logits = head(hidden).float()  # (n, V) fp32: one chunk only
    if transform is not None:
        logits = transform(logits)
    logits = logits / temperature
    logz = torch.logsumexp(logits, dim=-1)  # (n,)
    logp = logits.gather(-1, tokens[:, None]).squeeze(-1) - logz  # (n,)
    entropy = torch.zeros_like(logz)
    if with_entropy:
        with torch.set_grad_enabled(entropy_grad and torch.is_grad_enabled()):
            entropy = logz - (torch.softmax(logits, dim=-1) * logits).sum(-1)  # (n,) H = log Z - E[logit]
    return logp, entropy


def _hidden_states(model, batch: PaddedBatch):
    """The decoder's last hidden states (B, L, H) from a full forward of `model` that computes logits
    for the last position only. The forward goes through `model` itself, a DeepSpeed engine
    included, so the engine does what it does per forward (ZeRO's gradient-accumulation bookkeeping
    and parameter hooks); the states are taken from the decoder's output by a forward hook."""
    inner = model.module if hasattr(model, "module") and hasattr(model, "backward") else model  # unwrap an engine
    captured = {}

    def grab(_module, _inputs, output):
        captured["hidden"] = output.last_hidden_state if hasattr(output, "last_hidden_state") else output[0]

    handle = inner.get_decoder().register_forward_hook(grab)
    try:
        try:
            model(input_ids=batch.input_ids, attention_mask=batch.attention, use_cache=False, logits_to_keep=1)
        except TypeError as exc:  # a model whose forward has no logits_to_keep: full logits, then dropped
            if "logits_to_keep" not in str(exc):
                raise
            model(input_ids=batch.input_ids, attention_mask=batch.attention, use_cache=False)
    finally:
        handle.remove()
    return captured["hidden"], inner


def token_logprobs(model, batch: PaddedBatch, temperature: float, chunk_tokens: int | None = 1024,
                   with_entropy: bool = False, entropy_grad: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """Log-prob of every completion token under softmax(logits / temperature), and the entropy of
    that distribution at each token (zeros unless asked; differentiable when entropy_grad, for an
    entropy bonus): (B, T) each, 0 where masked by `token_mask`.

    chunk_tokens None runs the head once, on all the batch's completion positions, without
    recomputation. ZeRO-3 needs that: it gathers the head's weight at every call and every rank must
    make the same calls in the same order; chunks whose count follows each rank's tokens, recomputed
    in the backward pass, broke that even with the counts equalized (a gloo collective mismatch)."""
    hidden, inner = _hidden_states(model, batch)  # (B, L, H)
    sel = batch.token_mask.bool()  # (B, T)
    prev = (batch.positions - 1).clamp(min=0)  # (B, T) the position whose state predicts each token
    h = hidden.gather(1, prev[..., None].expand(-1, -1, hidden.size(-1)))[sel]  # (N, H) completion states only
    tokens = batch.input_ids.gather(1, batch.positions)[sel]  # (N,)
    head, transform = inner.get_output_embeddings(), _head_transform(inner.config)
    if chunk_tokens is None:  # one call, even on no tokens: every rank calls the head once (ZeRO-3)
        logp, ent = _chunk_logprobs(head, transform, h, tokens, temperature, with_entropy, entropy_grad)
        pieces, ent_pieces = [logp], [ent]
    else:
        pieces, ent_pieces = [], []
        for start in range(0, tokens.numel(), chunk_tokens):
            hs, ts = h[start : start + chunk_tokens], tokens[start : start + chunk_tokens]
            if torch.is_grad_enabled():  # keep only (chunk, H) for backward; logits are recomputed there
                logp, ent = checkpoint(_chunk_logprobs, head, transform, hs, ts, temperature, with_entropy,
                                       entropy_grad, use_reentrant=False)
            else:
                logp, ent = _chunk_logprobs(head, transform, hs, ts, temperature, with_entropy)
            pieces.append(logp)
            ent_pieces.append(ent)
    out = torch.zeros(sel.shape, dtype=torch.float32, device=h.device)
    entropy = torch.zeros(sel.shape, dtype=torch.float32, device=h.device)
    if pieces:
        out = out.masked_scatter(sel, torch.cat(pieces))
        entropy = entropy.masked_scatter(sel, torch.cat(ent_pieces).to(torch.float32))
    return out, entropy
