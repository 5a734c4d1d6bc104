"""Supervised warm start of the tiny policy on part of the world's training pool (`grpo bootstrap`).

Makes a realistic RL starting point: after it, sampled at the profiling temperature, the policy
solves the easy levels, fails the hard ones and is unsure in between, the way a real model is on a
real math dataset.

Design, chosen for learnability on 2 CPU cores:
- loss on the answer tokens only (`\\boxed{N}<|im_end|>`); prompt tokens are masked with -100;
- the SFT set is a per-level share of the training pool (easy levels seen more, hard levels less),
  drawn deterministically from the seed; the rest of the pool is what RL must generalize to;
- AdamW, linear warmup then cosine decay, fixed number of steps; batches padded to their longest row.
  No attention mask is passed: with right padding and causal attention no real token attends to a
  pad, so the loss is the same and SDPA takes its faster causal path (about 10% per step).

The result is cached: `bootstrap.json` beside the weights records a hash of every input (world
table, config, code version); a rerun with the same inputs returns at once, changed inputs rebuild.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import random
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import polars as pl

from grpo_data import io
from grpo_train.tiny_policy import TinyModelConfig, build_model, build_tokenizer

logger = logging.getLogger(__name__)

BOOTSTRAP_VERSION = 5  # bump when the recipe changes, so caches rebuild
ANSWER_TEMPLATE = "\\boxed{{{answer}}}"


def default_sft_share() -> dict[int, float]:
    return {1: 1.0, 2: 1.0, 3: 1.0, 4: 0.7, 5: 0.7, 6: 0.3, 7: 0.1, 8: 0.05}


def default_teacher_error() -> dict[int, float]:
    return {1: 0.0, 2: 0.0, 3: 0.0, 4: 0.25, 5: 0.35, 6: 0.0, 7: 0.0, 8: 0.0}


def plausible_mistake(answer: int, rng: random.Random) -> int:
    """A wrong answer of the kind arithmetic slips produce: off by one in the units or tens digit."""
    return answer + rng.choice((-10, -1, 1, 10))


@dataclass(frozen=True)
class BootstrapConfig:
    """Warm-start recipe.

    sft_share:  per level, the share of the training pool used as SFT data (missing level -> 0).
    teacher_error: per level, how often the SFT target is a plausible mistake instead of the gold
                answer, drawn afresh each time an example is seen: the policy imitates an imperfect
                teacher and so starts unsure on the middle levels, as a real model does on a real
                dataset. The gold answer stays the most likely target at every level (errors < 0.5
                spread over four different mistakes), so RL has something to sharpen.
    steps / batch_size / lr / warmup_steps / weight_decay: the optimizer schedule.
    threads:    torch CPU threads.
    """

    seed: int = 0
    model: TinyModelConfig = field(default_factory=TinyModelConfig)
    sft_share: dict[int, float] = field(default_factory=default_sft_share)
    teacher_error: dict[int, float] = field(default_factory=default_teacher_error)
    steps: int = 1100
    batch_size: int = 128
    lr: float = 3e-3
    warmup_steps: int = 50
    weight_decay: float = 0.01
    threads: int = 2

    def to_dict(self) -> dict:
        d = asdict(self)
        d["sft_share"] = {str(k): v for k, v in self.sft_share.items()}
        d["teacher_error"] = {str(k): v for k, v in self.teacher_error.items()}
        return d


def completion_text(answer: str) -> str:
    return ANSWER_TEMPLATE.format(answer=answer)


def sft_split(train: pl.DataFrame, share: dict[int, float], seed: int) -> pl.DataFrame:
    """Deterministic per-level sample of the training pool used for SFT."""
    parts = []
    for level, frac in sorted(share.items()):
        rows = train.filter(pl.col("level") == level).sort("id")
        n = int(round(rows.height * frac))
        if n:
            parts.append(rows.sample(n=n, seed=seed + level, shuffle=True))
    return pl.concat(parts) if parts else train.head(0)


@dataclass(frozen=True)
class SFTExample:
    prompt_ids: tuple[int, ...]
    answer: int
    level: int


def encode_examples(tokenizer, table: pl.DataFrame) -> list[SFTExample]:
    out = []
    for messages, answer, level in zip(table["prompt"].to_list(), table["answer"].to_list(),
                                       table["level"].to_list(), strict=True):
        prompt = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        out.append(SFTExample(tuple(tokenizer(prompt, add_special_tokens=False)["input_ids"]), int(answer), level))
    return out


def realize(example: SFTExample, tokenizer, teacher_error: dict[int, float], rng: random.Random) -> tuple[list[int], int]:
    """(prompt+completion+EOS ids, completion start) with this visit's target answer."""
    answer = example.answer
    if rng.random() < teacher_error.get(example.level, 0.0):
        answer = plausible_mistake(answer, rng)
    c_ids = tokenizer(completion_text(str(answer)), add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
    return list(example.prompt_ids) + c_ids, len(example.prompt_ids)


def collate(examples: list[tuple[list[int], int]], pad_id: int):
    """Right-padded (input_ids, attention_mask, labels); labels are -100 outside the completion."""
    import torch

    width = max(len(ids) for ids, _ in examples)
    input_ids = torch.full((len(examples), width), pad_id, dtype=torch.long)  # (B, T)
    attention = torch.zeros((len(examples), width), dtype=torch.long)  # (B, T)
    labels = torch.full((len(examples), width), -100, dtype=torch.long)  # (B, T)
    for i, (ids, start) in enumerate(examples):
        input_ids[i, : len(ids)] = torch.tensor(ids)
        attention[i, : len(ids)] = 1
        labels[i, start : len(ids)] = torch.tensor(ids[start:])
    return input_ids, attention, labels


def lr_at(step: int, cfg: BootstrapConfig) -> float:
    """Linear warmup to cfg.lr, then cosine decay to 10% of it at cfg.steps."""
    if step < cfg.warmup_steps:
        return cfg.lr * (step + 1) / cfg.warmup_steps
    progress = (step - cfg.warmup_steps) / max(1, cfg.steps - cfg.warmup_steps)
    return cfg.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, progress))))


def input_hash(world_train: pl.DataFrame, cfg: BootstrapConfig) -> str:
    h = hashlib.sha256()
    h.update(json.dumps({"cfg": cfg.to_dict(), "version": BOOTSTRAP_VERSION}, sort_keys=True).encode())
    for col in ("id", "answer", "level"):
        h.update(str(world_train[col].to_list()).encode())
    return h.hexdigest()[:20]


def cached(out_dir: str | Path, digest: str) -> bool:
    meta = Path(out_dir) / "bootstrap.json"
    if not meta.exists() or not (Path(out_dir) / "model.safetensors").exists():
        return False
    return json.loads(meta.read_text()).get("input_hash") == digest


def train_sft(model, tokenizer, examples, cfg: BootstrapConfig, progress: bool = True) -> list[float]:
    """Plain-torch SFT loop (the warm start is not the RL learner). Returns the loss per step."""
    import torch
    from tqdm import tqdm

    torch.set_num_threads(cfg.threads)
    torch.manual_seed(cfg.seed)
    rng = random.Random(cfg.seed)
    decay = [p for n, p in model.named_parameters() if p.ndim >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.ndim < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": cfg.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}], lr=cfg.lr, betas=(0.9, 0.98))
    model.train()
    order: list[int] = []
    losses = []
    bar = tqdm(range(cfg.steps), desc="warm start", disable=not progress, mininterval=2)
    for step in bar:
        if len(order) < cfg.batch_size:
            fresh = list(range(len(examples)))
            rng.shuffle(fresh)
            order += fresh
        batch = [realize(examples[i], tokenizer, cfg.teacher_error, rng) for i in order[: cfg.batch_size]]
        del order[: cfg.batch_size]
        input_ids, _, labels = collate(batch, tokenizer.pad_token_id)
        for group in opt.param_groups:
            group["lr"] = lr_at(step, cfg)
        loss = model(input_ids=input_ids, labels=labels).loss  # right padding + causal: no mask needed
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        losses.append(loss.item())
        if step % 20 == 0:
            bar.set_postfix(loss=f"{losses[-1]:.3f}")
    model.eval()
    return losses


def bootstrap(world_train: pl.DataFrame, out_dir: str | Path, cfg: BootstrapConfig = BootstrapConfig(),
              progress: bool = True) -> Path:
    """Build, warm-start and save the tiny policy to out_dir; reuse it when inputs are unchanged."""
    out = Path(out_dir)
    digest = input_hash(world_train, cfg)
    if cached(out, digest):
        logger.info("warm start cached at %s (inputs unchanged)", out)
        return out
    start = time.monotonic()
    tokenizer = build_tokenizer()
    model = build_model(tokenizer, cfg.model, cfg.seed)
    sft = sft_split(world_train, cfg.sft_share, cfg.seed)
    examples = encode_examples(tokenizer, sft)
    logger.info("warm start: %d SFT examples, %d params", len(examples), sum(p.numel() for p in model.parameters()))
    losses = train_sft(model, tokenizer, examples, cfg, progress)
    tmp = out.with_name(out.name + ".partial")
    if tmp.exists():
        import shutil

        shutil.rmtree(tmp)
    model.save_pretrained(tmp, safe_serialization=True)
    tokenizer.save_pretrained(tmp)
    io.write_json(tmp / "bootstrap.json", {
        "input_hash": digest, "config": cfg.to_dict(), "sft_examples": len(examples),
        "sft_ids_sha256": hashlib.sha256("\n".join(sorted(sft["id"].to_list())).encode()).hexdigest(),
        "final_loss": sum(losses[-20:]) / max(1, len(losses[-20:])), "seconds": time.monotonic() - start,
        "version": BOOTSTRAP_VERSION,
    })
    if out.exists():
        import shutil

        shutil.rmtree(out)
    tmp.rename(out)
    logger.info("warm start done in %.0fs -> %s", time.monotonic() - start, out)
    return out
