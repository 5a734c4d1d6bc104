"""The DeepSpeed learner: the only module that imports deepspeed.

Holds the policy in a DeepSpeed engine (ZeRO 0-3, optional bf16; CPU accelerator where there is no
GPU), a torch AdamW optimizer object (so no fused-Adam kernel has to be compiled), and, when the KL
coefficient is non-zero, a frozen reference model. It recomputes old log-probs itself, so the
importance ratio is exact rather than taken from the sampler.

    learner = DeepSpeedLearner(model_path, optim, ds, algo, seed)
    metrics = learner.update(batch)                 # one or more optimizer steps on a RolloutBatch
    engine.load_weights(learner.named_weights())    # sync into the rollout engine
"""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path

import numpy as np
import torch

from grpo_train.config import AlgoConfig, DeepSpeedSection, OptimConfig
from grpo_train.core_algos import compute_advantages, policy_loss

logger = logging.getLogger(__name__)


def ensure_distributed_env() -> None:
    """A single process still needs a rank, world size and master address, else DeepSpeed goes
    looking for MPI. Launchers (deepspeed, torchrun) set these themselves."""
    os.environ.setdefault("RANK", "0")
    os.environ.setdefault("LOCAL_RANK", "0")
    os.environ.setdefault("WORLD_SIZE", "1")
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    if "MASTER_PORT" not in os.environ:
        import socket

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            os.environ["MASTER_PORT"] = str(s.getsockname()[1])
    if not torch.cuda.is_available():
        os.environ.setdefault("DS_ACCELERATOR", "cpu")


def deepspeed_config(optim: OptimConfig, ds: DeepSpeedSection, world_size: int) -> dict:
    return {
        "train_micro_batch_size_per_gpu": 1,  # one rollout batch = one micro-batch from DeepSpeed's view
        "gradient_accumulation_steps": 1,
        "train_batch_size": world_size,
        "gradient_clipping": optim.grad_clip,
        "zero_optimization": {"stage": ds.zero_stage},
        "bf16": {"enabled": ds.bf16},
        "steps_per_print": 10**9,
        "wall_clock_breakdown": False,
    }


def build_tensors(groups, pad_id: int):
    """Right-padded tensors for a list of Groups.

    Returns input_ids (B, L), attention (B, L), positions (B, T) of completion tokens in the
    sequence, completion mask (B, T), rewards (B,), group ids (B,). B = groups x G."""
    seqs, comp_lens, prompt_lens, rewards, gids = [], [], [], [], []
    for gi, g in enumerate(groups):
        for comp, r in zip(g.completions, g.rewards, strict=True):
            seqs.append(list(g.prompt_ids) + list(comp.token_ids))
            prompt_lens.append(len(g.prompt_ids))
            comp_lens.append(len(comp.token_ids))
            rewards.append(float(r))
            gids.append(gi)
    B, L, T = len(seqs), max(len(s) for s in seqs), max(max(comp_lens), 1)
    input_ids = torch.full((B, L), pad_id, dtype=torch.long)
    attention = torch.zeros((B, L), dtype=torch.long)
    positions = torch.zeros((B, T), dtype=torch.long)
    mask = torch.zeros((B, T), dtype=torch.float32)
    for i, (s, p, c) in enumerate(zip(seqs, prompt_lens, comp_lens, strict=True)):
        input_ids[i, : len(s)] = torch.tensor(s)
        attention[i, : len(s)] = 1
        positions[i, :c] = torch.arange(p, p + c)
        mask[i, :c] = 1.0
    return input_ids, attention, positions, mask, torch.tensor(rewards), torch.tensor(gids)


def completion_logprobs(model, input_ids, attention, positions, mask, with_entropy: bool = False):
    """Log-prob of each completion token under `model`: (B, T) (0 where masked), and the mean
    entropy of the predictive distributions at those positions."""
    logits = model(input_ids=input_ids, attention_mask=attention).logits.float()  # (B, L, V)
    prev = (positions - 1).clamp(min=0)  # (B, T) position whose logits predict each token
    step_logits = logits.gather(1, prev[..., None].expand(-1, -1, logits.size(-1)))  # (B, T, V)
    logp_all = torch.log_softmax(step_logits, dim=-1)  # (B, T, V)
    tokens = input_ids.gather(1, positions)  # (B, T)
    logp = logp_all.gather(-1, tokens[..., None]).squeeze(-1) * mask  # (B, T)
    entropy = None
    if with_entropy:
        with torch.no_grad():
            ent = -(logp_all.exp() * logp_all).sum(-1)  # (B, T)
            entropy = float((ent * mask).sum() / mask.sum().clamp(min=1))
    return logp, entropy


class DeepSpeedLearner:
    def __init__(self, model_path: str, optim: OptimConfig, ds: DeepSpeedSection, algo: AlgoConfig, seed: int = 0,
                 trust_remote_code: bool = False) -> None:
        ensure_distributed_env()
        import deepspeed
        from transformers import AutoModelForCausalLM, AutoTokenizer

        torch.manual_seed(seed)
        self.algo, self.optim_cfg, self.ds_cfg = algo, optim, ds
        self.tokenizer = AutoTokenizer.from_pretrained(model_path, trust_remote_code=trust_remote_code)
        model = AutoModelForCausalLM.from_pretrained(model_path, trust_remote_code=trust_remote_code,
                                                     dtype=torch.float32)
        decay = [p for n, p in model.named_parameters() if p.ndim >= 2]
        other = [p for n, p in model.named_parameters() if p.ndim < 2]
        optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": optim.weight_decay},
                                       {"params": other, "weight_decay": 0.0}], lr=optim.lr, betas=optim.betas)
        if not torch.distributed.is_initialized():
            deepspeed.init_distributed(dist_backend="nccl" if torch.cuda.is_available() else "gloo")
        self.world_size = torch.distributed.get_world_size()
        self.rank = torch.distributed.get_rank()
        start = time.monotonic()
        self.engine, self.optimizer, _, _ = deepspeed.initialize(
            model=model, optimizer=optimizer, config=deepspeed_config(optim, ds, self.world_size))
        logger.info("DeepSpeed engine up in %.1fs (ZeRO-%d, bf16=%s, world %d)", time.monotonic() - start,
                    ds.zero_stage, ds.bf16, self.world_size)
        self.device = self.engine.device
        self.ref = None
        if algo.kl_beta > 0:
            self.ref = AutoModelForCausalLM.from_pretrained(model_path, trust_remote_code=trust_remote_code,
                                                            dtype=torch.float32).to(self.device).eval()
            for p in self.ref.parameters():
                p.requires_grad_(False)

    @property
    def pad_id(self) -> int:
        return self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else self.tokenizer.eos_token_id

    def update(self, groups) -> dict[str, float]:
        """Optimizer step(s) on the groups: old log-probs computed once, then `minibatches` steps."""
        if not groups:  # an under-filled batch with nothing informative: same metric keys
            if self.world_size > 1:  # the other ranks' gradient all-reduce needs this rank's steps
                for _ in range(self.optim_cfg.minibatches):
                    self._zero_step()
            return {"loss": 0.0, "clip_fraction": 0.0, "entropy": float("nan"), "trained_sequences": 0,
                    "train_tokens": 0, "train_tokens_per_s": 0.0, "train_seconds": 0.0, "advantage_abs_mean": 0.0}
        input_ids, attention, positions, mask, rewards, gids = build_tensors(groups, self.pad_id)
        tensors = [t.to(self.device) for t in (input_ids, attention, positions, mask)]
        adv = compute_advantages(self.algo.advantage, rewards, gids, self.algo.eps).to(self.device)  # (B,)
        self.engine.eval()
        with torch.no_grad():
            old_logp, _ = completion_logprobs(self.engine, *tensors)  # (B, T)
            ref_logp = completion_logprobs(self.ref, *tensors)[0] if self.ref is not None else None
        self.engine.train()
        B = input_ids.size(0)
        order = np.arange(B)
        # the same number of optimizer steps on every rank (DeepSpeed all-reduces in each)
        chunks = np.array_split(order, self.optim_cfg.minibatches)
        metrics: dict[str, list[float]] = {"loss": [], "clip_fraction": [], "entropy": [], "kl": [], "grad_norm": []}
        start = time.monotonic()
        for chunk in chunks:
            if chunk.size == 0:
                self._zero_step()
                continue
            sel = torch.as_tensor(chunk, device=self.device)
            ids, att, pos, m = (t[sel] for t in tensors)
            logp, entropy = completion_logprobs(self.engine, ids, att, pos, m, with_entropy=True)
            loss, info = policy_loss(logp, old_logp[sel], adv[sel], m, self.algo.clip_low, self.algo.clip_high,
                                     self.algo.aggregation, ref_logp[sel] if ref_logp is not None else None,
                                     self.algo.kl_beta)
            self.engine.backward(loss)
            self.engine.step()
            metrics["loss"].append(loss.item())
            metrics["clip_fraction"].append(info["clip_fraction"])
            metrics["entropy"].append(entropy)
            if "kl" in info:
                metrics["kl"].append(info["kl"])
            norm = self.engine.get_global_grad_norm()
            if norm is not None:
                metrics["grad_norm"].append(float(norm))
        seconds = time.monotonic() - start
        out = {k: float(np.mean(v)) for k, v in metrics.items() if v}
        out.update({"trained_sequences": B, "train_tokens": int(attention.sum()),
                    "train_tokens_per_s": float(attention.sum()) / max(seconds, 1e-9), "train_seconds": seconds,
                    "advantage_abs_mean": float(adv.abs().mean())})
        return out

    def _zero_step(self) -> None:
        """A step with zero gradient, so a rank with nothing to train still joins the collectives."""
        loss = sum(p.sum() for p in self.engine.module.parameters() if p.requires_grad) * 0.0
        self.engine.backward(loss)
        self.engine.step()

    def named_weights(self):
        """(name, tensor) pairs of the full model in HF naming; gathers ZeRO-3 partitions first."""
        module = self.engine.module
        if self.ds_cfg.zero_stage == 3:
            import deepspeed

            with deepspeed.zero.GatheredParameters(list(module.parameters()), modifier_rank=None):
                return [(n, p.detach().clone().cpu()) for n, p in module.state_dict().items()]
        return [(n, p.detach().cpu()) for n, p in module.state_dict().items()]

    def save_hf(self, folder: str | Path) -> None:
        """An HF export (safetensors + tokenizer) that vLLM and transformers load by path."""
        folder = Path(folder)
        weights = dict(self.named_weights())
        if getattr(self.engine.module.config, "tie_word_embeddings", False):
            weights.pop("lm_head.weight", None)  # tied to the embeddings; saved once, as transformers does
        if self.rank == 0:
            self.engine.module.save_pretrained(folder, state_dict=weights, safe_serialization=True)
            self.tokenizer.save_pretrained(folder)

    def save_state(self, folder: str | Path, tag: str) -> None:
        self.engine.save_checkpoint(str(folder), tag=tag)

    def load_state(self, folder: str | Path, tag: str) -> None:
        path, _ = self.engine.load_checkpoint(str(folder), tag=tag)
        if path is None:
            raise FileNotFoundError(f"{folder}/{tag}: no DeepSpeed checkpoint to resume from")
