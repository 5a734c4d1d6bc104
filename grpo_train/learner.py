"""The DeepSpeed learner: the only module that imports deepspeed.

Holds the policy in a DeepSpeed engine (ZeRO 0-3, optional bf16; CPU accelerator where there is no
GPU), a torch AdamW optimizer object (so no fused-Adam kernel has to be compiled), and, when the KL
coefficient is non-zero, a frozen reference model. It recomputes old log-probs itself, under the
rollout's temperature (`grpo_train.logprobs`), and logs how far they are from the engine's own
(`logprob_diff_rollout`); truncated importance sampling (`algo.tis_cap`) corrects what remains.

Memory is bounded by the micro-batch, not the batch: every forward (old, reference, train) runs on
micro-batches of at most `optim.micro_batch_tokens` padded tokens, the head runs on completion
positions only, chunk by chunk. Gradients accumulate over micro-batches, and the loss of each is
its share of the step's global loss (`core_algos.LossNorm`, counted over all ranks), so N ranks and
any micro-batching make the same update as one rank on the union.
The batch it trains on (each answer as a `Sequence`, padded and packed into micro-batches, with
its advantage and each micro-batch's loss) is built by `grpo_train.sequences`, which needs no engine.

    learner = DeepSpeedLearner(model_path, optim, ds, algo, seed, temperature=0.6, max_tokens=8192)
    metrics = learner.update(groups)                # one or more optimizer steps on this rank's groups
    engine.load_weights(learner.named_weights())    # sync into the rollout engine
"""

from __future__ import annotations

import dataclasses
import logging
import os
import time
from pathlib import Path

import numpy as np
import torch

from grpo_data.generation.prompting import SamplingConfig
from grpo_train.config import AlgoConfig, DeepSpeedSection, OptimConfig
from grpo_train.controllers import AdaptiveKL, RewardWindow, lr_factor
from grpo_train.core_algos import LossNorm
from grpo_train.logprobs import PaddedBatch, token_logprobs
from grpo_train.sequences import (
    Sequence,
    flatten_groups,
    group_reward_stats,
    micro_batches,
    microbatch_loss,
    pad_batch,
    pad_rows,
    sequence_advantages,
)

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


SHM_OP = "deepspeed_shm_comm"  # the op DeepSpeed's CPU accelerator JIT-builds at init_distributed


def lock_holder_state(lock: Path) -> bool | None:
    """True when some process on this machine holds `lock` open, False when none does, None when
    no holder was found but some processes could not be inspected (another user's)."""
    st = lock.stat()
    key, unknown = (st.st_dev, st.st_ino), False
    if not Path("/proc/self/fd").is_dir():  # no procfs (macOS): no process can be inspected
        return None
    for fd_dir in Path("/proc").glob("[0-9]*/fd"):
        try:
            fds = list(fd_dir.iterdir())
        except PermissionError:
            unknown = True
            continue
        except OSError:  # the process ended meanwhile
            continue
        for fd in fds:
            try:
                target = fd.stat()
            except OSError:
                continue
            if (target.st_dev, target.st_ino) == key:
                return True
    return None if unknown else False


def clear_stale_build_locks(max_age_s: float = 3600.0, name: str = SHM_OP) -> list[Path]:
    """Remove the build lock of DeepSpeed's CPU collectives op when no process holds it; returns
    what it removed.

    torch guards a JIT build with a bare lock file, open for the whole build, and never checks
    whether its builder is alive: a process killed while building leaves the file behind, and every
    later start then waits on it forever, idle (the CI's launcher tests hung to their timeouts). A
    lock no process on this machine holds open is such a leftover. When some processes cannot be
    inspected (another user's), only a lock older than `max_age_s` counts as left over. Builds on
    other nodes are invisible here: with a shared home, point TORCH_EXTENSIONS_DIR at a node-local
    path (as DeepSpeed advises). Only `name`'s lock is touched, never another extension's."""
    from torch.utils.cpp_extension import get_default_build_root

    custom = os.environ.get("TORCH_EXTENSIONS_DIR")
    root = Path(custom or get_default_build_root())
    removed = []
    for lock in root.glob(f"{name}/lock" if custom else f"*/{name}/lock"):
        try:
            held = lock_holder_state(lock)
            if held or (held is None and time.time() - lock.stat().st_mtime < max_age_s):
                continue
            lock.unlink()
        except FileNotFoundError:  # its builder finished meanwhile
            continue
        except OSError as e:  # a read-only or another user's cache: leave it, say why a start may wait
            logger.warning("could not clear the build lock %s (%s); if ranks wait idle at start, remove it", lock, e)
            continue
        removed.append(lock)
        logger.warning("removed %s: no process holds it, so a killed build left it (every start would wait on "
                       "it forever)", lock)
    return removed


def deepspeed_config(optim: OptimConfig, ds: DeepSpeedSection, world_size: int) -> dict:
    extra = {}
    if ds.bf16 and ds.zero_stage >= 1:  # sum micro-batch gradients in fp32, not bf16's 8-bit mantissa
        extra["data_types"] = {"grad_accum_dtype": "fp32"}  # (DeepSpeed offers this with ZeRO only)
    return {**extra,
        # The learner owns accumulation: any number of micro-batches, then one `step()` (DeepSpeed's
        # unmanaged mode), with the loss already divided by the step's global token/sequence count.
        "train_micro_batch_size_per_gpu": 1,
        "gradient_accumulation_steps": 1,
        "managed_gradient_accumulation": False,
        "train_batch_size": world_size,
        "gradient_clipping": optim.grad_clip,
        "zero_optimization": {"stage": ds.zero_stage},
        "bf16": {"enabled": ds.bf16},
        "steps_per_print": 10**9,
        "wall_clock_breakdown": False,
    }


class DeepSpeedLearner:
    """The policy in a DeepSpeed engine. temperature: the rollout's sampling temperature (every
    log-prob is of softmax(logits / T)); max_tokens: the rollout's completion budget (the
    `seq_sum_norm` aggregation's constant); total_steps: optimizer steps the run will take (the
    learning-rate schedule's horizon)."""

    def __init__(self, model_path: str, optim: OptimConfig, ds: DeepSpeedSection, algo: AlgoConfig, seed: int = 0,
                 trust_remote_code: bool = False, temperature: float = SamplingConfig.temperature, max_tokens: int = SamplingConfig.max_tokens,
                 total_steps: int = 1) -> None:
        ensure_distributed_env()
        import deepspeed
        from transformers import AutoModelForCausalLM, AutoTokenizer

        torch.manual_seed(seed)
        self.algo, self.optim_cfg, self.ds_cfg = algo, optim, ds
        self.temperature, self.max_tokens = temperature, max_tokens
        # ZeRO-3 gathers the head's weight at every call: one head call per micro-batch on every rank
        # (the head's fp32 logits then span the micro-batch's completion tokens; lower
        # micro_batch_tokens under ZeRO-3)
        self.chunk = None if ds.zero_stage == 3 else optim.logit_chunk_tokens
        self.tokenizer = AutoTokenizer.from_pretrained(model_path, trust_remote_code=trust_remote_code)
        model = AutoModelForCausalLM.from_pretrained(model_path, trust_remote_code=trust_remote_code,
                                                     dtype=torch.float32)
        if optim.gradient_checkpointing:
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        decay = [p for n, p in model.named_parameters() if p.ndim >= 2]
        other = [p for n, p in model.named_parameters() if p.ndim < 2]
        optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": optim.weight_decay},
                                       {"params": other, "weight_decay": 0.0}], lr=optim.lr, betas=optim.betas,
                                      eps=optim.eps)
        if not torch.distributed.is_initialized():
            if not torch.cuda.is_available() and os.environ.get("LOCAL_RANK", "0") == "0":
                clear_stale_build_locks()  # one clearer per node; the CPU accelerator builds the op
            deepspeed.init_distributed(dist_backend="nccl" if torch.cuda.is_available() else "gloo")
        self.world_size = torch.distributed.get_world_size()
        self.rank = torch.distributed.get_rank()
        start = time.monotonic()
        # DeepSpeed steps the schedule with every optimizer step and keeps its state in checkpoints
        schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: lr_factor(
            step, total_steps, optim.warmup_steps, optim.lr_schedule, optim.min_lr_ratio))
        self.engine, self.optimizer, _, self.lr_schedule = deepspeed.initialize(
            model=model, optimizer=optimizer, lr_scheduler=schedule,
            config=deepspeed_config(optim, ds, self.world_size))
        self.kl = AdaptiveKL(algo.kl_beta, algo.kl_target, algo.kl_horizon) if algo.kl_target > 0 else None
        self.window = RewardWindow(algo.window_groups)
        logger.info("DeepSpeed engine up in %.1fs (ZeRO-%d, bf16=%s, world %d)", time.monotonic() - start,
                    ds.zero_stage, ds.bf16, self.world_size)
        self.device = self.engine.device
        self.ref = None
        if algo.kl_beta > 0 or algo.track_kl:
            # the policy's precision, so the KL starts at 0 rather than at the bf16 rounding error
            self.ref = AutoModelForCausalLM.from_pretrained(
                model_path, trust_remote_code=trust_remote_code,
                dtype=torch.bfloat16 if ds.bf16 else torch.float32).to(self.device).eval()
            for p in self.ref.parameters():
                p.requires_grad_(False)

    @property
    def pad_id(self) -> int:
        return self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else self.tokenizer.eos_token_id

    # ------------------------------------------------------------ collectives
    def _all_reduce(self, values: list[float], op: str = "sum") -> list[float]:
        if self.world_size == 1:
            return values
        t = torch.tensor(values, dtype=torch.float64, device=self.device)
        torch.distributed.all_reduce(t, op=torch.distributed.ReduceOp.MAX if op == "max" else torch.distributed.ReduceOp.SUM)
        return t.tolist()

    def all_gather(self, obj) -> list:
        """Every rank's `obj`, in rank order (pickled objects; [obj] on one rank)."""
        if self.world_size == 1:
            return [obj]
        out = [None] * self.world_size
        torch.distributed.all_gather_object(out, obj)
        return out

    def _advantage_scale(self, seqs: list[Sequence]) -> tuple[float, ...] | None:
        """The reward scale an estimator takes from beyond its groups, the same on every rank:
        window_norm's window std (every rank's groups enter the window), batch_norm's mean and
        sample std of the group-centered rewards of every rank's batch."""
        if self.algo.advantage == "window_norm":
            for part in self.all_gather(group_reward_stats(seqs)):
                self.window.add(part)
            return (self.window.std(),)
        if self.algo.advantage == "batch_norm":
            centered = sequence_advantages(seqs, dataclasses.replace(self.algo, advantage="dr_grpo"))
            scored = torch.tensor([bool(np.isfinite(s.reward)) for s in seqs], dtype=torch.bool)
            c = centered[scored].double() if seqs else torch.zeros(0, dtype=torch.float64)
            total, sq, n = self._all_reduce([float(c.sum()), float((c * c).sum()), float(c.numel())])
            mean = total / max(n, 1)
            return (mean, float(np.sqrt(max(0.0, sq - n * mean * mean) / max(n - 1, 1))))
        return None

    def _local_grad_norm(self) -> float | None:
        """The L2 norm of this rank's gradients as they are about to be stepped, before clipping, when
        every gradient sits whole on the module (ZeRO-0); else None. A metric only."""
        if self.ds_cfg.zero_stage != 0:
            return None
        grads = [p.grad.detach().float().norm() for p in self.engine.module.parameters() if p.grad is not None]
        return float(torch.stack(grads).norm()) if grads else None

    def _synced(self, batches: list[list[int]]) -> list[list[int] | None]:
        """The same number of micro-batches on every rank (ZeRO-3 gathers parameters in every forward,
        ZeRO-2/3 reduce in every backward): ranks with fewer get None, a zero-loss stand-in."""
        n = int(self._all_reduce([float(len(batches))], op="max")[0])
        return batches + [None] * (n - len(batches))

    def _stand_in(self) -> PaddedBatch:
        """A one-token micro-batch whose loss is multiplied by 0: this rank joins the collectives."""
        seq = Sequence((self.pad_id, self.pad_id), 1, 0.0, 0, False, None)
        return pad_batch([seq], self.pad_id).to(self.device)

    def _logprobs(self, batch: PaddedBatch, with_entropy: bool = False):
        """The policy's token log-probs and entropies of a micro-batch (through the DeepSpeed engine);
        the entropy is differentiable when the loss has an entropy bonus."""
        return token_logprobs(self.engine, batch, self.temperature, self.chunk, with_entropy,
                              entropy_grad=with_entropy and self.algo.entropy_coef != 0)

    # ------------------------------------------------------------ log-probs
    def _score(self, seqs: list[Sequence], reference: bool = False) -> list[torch.Tensor]:
        """Each sequence's completion log-probs (no gradient) under the policy or the reference,
        micro-batch by micro-batch (the policy's on every rank in step: ZeRO-3 collectives)."""
        out: list[torch.Tensor | None] = [None] * len(seqs)
        batches = micro_batches([len(s.ids) for s in seqs], self.optim_cfg.micro_batch_tokens)

        def logprobs(batch):
            if reference:
                return token_logprobs(self.ref, batch, self.temperature, self.chunk)[0]
            return self._logprobs(batch)[0]

        with torch.no_grad():
            for mb in (batches if reference else self._synced(batches)):
                if mb is None:
                    logprobs(self._stand_in())
                    continue
                logp = logprobs(pad_batch([seqs[i] for i in mb], self.pad_id).to(self.device))  # (b, T)
                for row, i in enumerate(mb):
                    out[i] = logp[row, : seqs[i].completion_len]
        return out

    # ------------------------------------------------------------ the update
    def update(self, groups) -> dict[str, float]:
        """Optimizer step(s) on this rank's groups, together with every other rank's: old log-probs
        computed once, then `minibatches` steps, each over micro-batches of at most
        `micro_batch_tokens` padded tokens, with the loss normalized by the step's global counts."""
        seqs = flatten_groups(groups)
        start = time.monotonic()
        scale = self._advantage_scale(seqs)  # a collective on several ranks: every rank calls it
        adv = (sequence_advantages(seqs, self.algo, scale).to(self.device)
               if seqs else torch.zeros(0, device=self.device))  # (B,)
        kl_beta = self.kl.beta if self.kl is not None else self.algo.kl_beta
        lr = self.lr_schedule.get_last_lr()[0]
        self.engine.eval()
        old = self._score(seqs)
        ref = self._score(seqs, reference=True) if self.ref is not None else None
        self.engine.train()
        sums = dict.fromkeys(("loss", "clip_fraction_sum", "kl_sum", "entropy_sum", "ratio_sum", "loss_tokens",
                              "tokens", "sequences", "diff_sum", "diff_count", "adv_abs_sum"), 0.0)
        grad_norms, steps = [], 0
        for chunk in np.array_split(np.arange(len(seqs)), self.optim_cfg.minibatches):
            local = [seqs[i] for i in chunk]
            tokens, nseq = self._all_reduce([float(sum(s.completion_len for s in local if s.train)),
                                             float(sum(1 for s in local if s.train and s.completion_len))])
            if tokens == 0:  # nothing to learn on any rank: no step (an Adam step on zero grads still moves)
                continue
            norm = LossNorm(tokens, nseq, self.max_tokens)
            batches = [[int(chunk[j]) for j in mb] for mb in micro_batches([len(s.ids) for s in local],
                                                                            self.optim_cfg.micro_batch_tokens)]
            for mb in self._synced(batches):
                if mb is None:
                    logp, _ = self._logprobs(self._stand_in())
                    self.engine.backward(logp.sum() * 0.0, scale_wrt_gas=False)
                    continue
                batch = pad_batch([seqs[i] for i in mb], self.pad_id).to(self.device)
                old_t = pad_rows([old[i] for i in mb], batch.mask.shape)  # (b, T)
                ref_t = pad_rows([ref[i] for i in mb], batch.mask.shape) if ref is not None else None
                logp, entropy = self._logprobs(batch, with_entropy=True)  # (b, T) each
                loss, info = microbatch_loss(logp, batch, adv[mb], old_t, ref_t, norm, self.algo, kl_beta, entropy)
                info["entropy_sum"] = float((entropy.detach() * batch.token_mask).sum())
                # DeepSpeed averages gradients over ranks; the loss is already a share of the global sum
                self.engine.backward(loss * self.world_size, scale_wrt_gas=False)
                have = torch.isfinite(batch.rollout_logp) & batch.token_mask.bool()
                sums["loss"] += float(loss.detach())
                sums["diff_sum"] += float((old_t - batch.rollout_logp).abs()[have].sum())
                sums["diff_count"] += float(have.sum())
                sums["loss_tokens"] += float(batch.mask.sum())
                sums["tokens"] += float(batch.token_mask.sum())
                sums["sequences"] += len(mb)
                sums["adv_abs_sum"] += float(adv[mb].abs().sum())
                for k in ("clip_fraction_sum", "kl_sum", "entropy_sum", "ratio_sum"):
                    sums[k] += info.get(k, 0.0)
            local_norm = self._local_grad_norm()  # before step() clips and zeroes the gradients
            self.engine.step()
            steps += 1
            norm_value = self.engine.get_global_grad_norm()
            if norm_value is None:  # DeepSpeed leaves it unset without ZeRO and loss scaling (fp32, ZeRO-0)
                norm_value = local_norm
            if norm_value is not None:
                grad_norms.append(float(norm_value))
        seconds = time.monotonic() - start
        keys = list(sums)
        sums = dict(zip(keys, self._all_reduce([sums[k] for k in keys]), strict=True))
        out = {"loss": sums["loss"] / max(steps, 1), "optimizer_steps": steps,
               "clip_fraction": sums["clip_fraction_sum"] / max(sums["loss_tokens"], 1),
               "ratio_mean": sums["ratio_sum"] / max(sums["loss_tokens"], 1),
               "entropy": sums["entropy_sum"] / sums["tokens"] if sums["tokens"] else float("nan"),
               "trained_sequences": int(sums["sequences"]), "train_tokens": int(sums["tokens"]),
               "loss_tokens": int(sums["loss_tokens"]),
               "train_tokens_per_s": sums["tokens"] / max(seconds, 1e-9), "train_seconds": seconds,
               "advantage_abs_mean": sums["adv_abs_sum"] / max(sums["sequences"], 1),
               "logprob_diff_rollout": (sums["diff_sum"] / sums["diff_count"] if sums["diff_count"]
                                        else float("nan"))}
        out["lr"] = lr
        if self.ref is not None:
            out["kl"] = sums["kl_sum"] / max(sums["loss_tokens"], 1)
            out["kl_beta"] = kl_beta
            if self.kl is not None and steps:
                self.kl.update(out["kl"])  # the next step's beta
        if self.algo.advantage == "window_norm":
            out["reward_window_std"] = scale[0]
        if grad_norms:
            out["grad_norm"] = float(np.mean(grad_norms))
        return out

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
        """DeepSpeed's checkpoint (weights, optimizer, learning-rate schedule) with the adaptive KL
        coefficient and the reward window beside them."""
        client = {"kl_beta": self.kl.beta if self.kl is not None else None, "window": self.window.state_dict()}
        self.engine.save_checkpoint(str(folder), tag=tag, client_state={"grpo": client})

    def load_state(self, folder: str | Path, tag: str) -> None:
        path, client = self.engine.load_checkpoint(str(folder), tag=tag)
        if path is None:
            raise FileNotFoundError(f"{folder}/{tag}: no DeepSpeed checkpoint to resume from")
        state = (client or {}).get("grpo")
        if state is not None:  # checkpoints from before these controllers lack it
            if self.kl is not None and state["kl_beta"] is not None:
                self.kl.beta = state["kl_beta"]
            self.window.load_state_dict(state["window"])
