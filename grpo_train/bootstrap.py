"""Supervised warm start of the tiny policy on the world's SFT split (`grpo bootstrap`).

Makes a realistic RL starting point: after it, sampled at the profiling temperature, the policy
solves short chains, rarely solves long ones and is unsure in between, the way a real model is on
a real math dataset, and it fails long chains by slips in single steps, so RL can lift them.

Design, chosen for learnability on 2 CPU cores:
- the target is the written solution (one line per step, then `\\boxed{N}<|im_end|>`); loss on
  the completion only, prompt tokens are masked with -100;
- the SFT data is the world's own `sft` split, disjoint by text from the RL pool, validation and
  test sets; every chain length is seen, short ones often and long ones rarely (`level_weights`:
  how often a batch row is drawn from each level), so long chains start with a low but real pass
  rate rather than a wall (../shared/STACK_NOTES.md, "A probe of a moving frontier world");
- AdamW, linear warmup then cosine decay, fixed number of steps; batches padded to their longest row.
  No attention mask is passed: with right padding and causal attention no real token attends to a
  pad, so the loss is the same and SDPA takes its faster causal path.
- deterministic for a seed and a thread count (torch's CPU kernels reduce in a thread-dependent order),
  and across x86-64 CPUs with AVX2: torch's vector kernels, oneDNN and MKL each choose code by the CPU's vector
  ISA, and 600 SFT steps amplify their rounding differences into another policy (one seed gave test
  accuracy 0.670 on AVX-512 machines and 0.777 on an earlier one). So the SFT runs in a child
  process with those kernels pinned to their AVX2 paths (`PINNED_KERNELS`); it costs about 3% of the time. Elsewhere (ARM, no AVX2, or no /proc/cpuinfo to
  tell: macOS, Windows) it runs unpinned and bootstrap.json says so. Measured: the pinned build on an
  AVX-512 AMD EPYC equals, bit for bit, an AVX2-only machine's unpinned one; other torch versions
  build other weights (the version is part of the cache key).

The result is cached: `bootstrap.json` beside the weights records a hash of every input (SFT
table, config, code version); a rerun with the same inputs returns at once, changed inputs rebuild.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import platform
import random
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import polars as pl

from grpo_data.profile_metadata import weights_hash
from grpo_data.tables import io
from grpo_data.tables.world import solution
from grpo_train.tiny_policy import TinyModelConfig, build_model, build_tokenizer

logger = logging.getLogger(__name__)

BOOTSTRAP_VERSION = 7  # bump when the recipe changes, so caches rebuild

# env read by torch (ATen's vector kernels), oneDNN and MKL when they load: their AVX2 code paths
PINNED_KERNELS = {"ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2", "MKL_CBWR": "AVX2"}


def default_level_weights() -> dict[int, float]:
    return {1: 0.28, 2: 0.24, 3: 0.17, 4: 0.10, 5: 0.07, 6: 0.05, 7: 0.035, 8: 0.025, 9: 0.008, 10: 0.004}


@dataclass(frozen=True)
class BootstrapConfig:
    """Warm-start recipe.

    level_weights: per level (chain length), the share of batch rows drawn from it (missing -> 0).
    steps / batch_size / lr / warmup_steps / weight_decay: the optimizer schedule.
    threads:    torch CPU threads (results are reproducible for a seed and a thread count).
    pin_kernels: train with CPU kernels pinned to AVX2 (`PINNED_KERNELS`) where the CPU has it, so
                the weights are the same on every such machine; False uses the machine's fastest.
    """

    seed: int = 0
    model: TinyModelConfig = field(default_factory=TinyModelConfig)
    level_weights: dict[int, float] = field(default_factory=default_level_weights)
    steps: int = 600
    batch_size: int = 64
    lr: float = 2e-3
    warmup_steps: int = 40
    weight_decay: float = 0.01
    threads: int = 2
    pin_kernels: bool = True

    def __post_init__(self) -> None:  # levels may arrive as strings from JSON
        object.__setattr__(self, "level_weights", {int(k): float(v) for k, v in self.level_weights.items()})

    def to_dict(self) -> dict:
        d = asdict(self)
        d["level_weights"] = {str(k): v for k, v in self.level_weights.items()}
        return d

    @classmethod
    def from_dict(cls, d: dict) -> BootstrapConfig:
        return cls(**{**d, "model": TinyModelConfig(**d["model"])})


def can_pin_kernels() -> bool:
    """True on an x86-64 CPU with AVX2 (the pinned paths exist there and nowhere else)."""
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return False
    try:
        return " avx2 " in f" {Path('/proc/cpuinfo').read_text()} ".replace("\n", " ")
    except OSError:
        return False


def kernels_pinned() -> bool:
    """True when this process started with `PINNED_KERNELS` in its environment."""
    return all(os.environ.get(k) == v for k, v in PINNED_KERNELS.items())


def kernels_in_use() -> dict:
    """What bootstrap.json records: pinned only when the environment asks for the AVX2 paths and
    torch's kernels run them (variables set after torch loaded would not count)."""
    import torch

    capability = torch.backends.cpu.get_cpu_capability()
    return {"pinned": kernels_pinned() and capability == "AVX2", "aten_capability": capability,
            "env": {k: os.environ.get(k) for k in PINNED_KERNELS}}


def completion_text(expr: str) -> str:
    return solution(expr)


@dataclass(frozen=True)
class SFTExample:
    ids: tuple[int, ...]  # prompt + written solution + EOS
    start: int  # where the completion begins
    level: int


def encode_examples(tokenizer, table: pl.DataFrame) -> list[SFTExample]:
    out = []
    for messages, meta, level in zip(table["prompt"].to_list(), table["meta"].to_list(), table["level"].to_list(),
                                     strict=True):
        prompt = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        p_ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
        c_ids = tokenizer(completion_text(json.loads(meta)["expr"]), add_special_tokens=False)["input_ids"]
        out.append(SFTExample(tuple(p_ids + c_ids + [tokenizer.eos_token_id]), len(p_ids), level))
    return out


def batch_order(examples: list[SFTExample], weights: dict[int, float], rows: int, seed: int) -> list[int]:
    """`rows` example indices: each row's level drawn by `weights`, then an example of that level,
    cycling through the level's examples in a fresh shuffled order (every example seen before any
    repeats)."""
    rng = random.Random(seed)
    by_level: dict[int, list[int]] = {}
    for i, ex in enumerate(examples):
        by_level.setdefault(ex.level, []).append(i)
    levels = [lv for lv in sorted(by_level) if weights.get(lv, 0) > 0]
    if not levels:
        raise ValueError(f"no SFT example has a level with positive weight in {weights}")
    queues: dict[int, list[int]] = {lv: [] for lv in levels}
    out = []
    for lv in rng.choices(levels, weights=[weights[lv] for lv in levels], k=rows):
        if not queues[lv]:
            queues[lv] = rng.sample(by_level[lv], len(by_level[lv]))
        out.append(queues[lv].pop())
    return out


def collate(examples: list[SFTExample], pad_id: int):
    """Right-padded (input_ids, attention_mask, labels); labels are -100 outside the completion."""
    import torch

    width = max(len(ex.ids) for ex in examples)
    input_ids = torch.full((len(examples), width), pad_id, dtype=torch.long)  # (B, T)
    attention = torch.zeros((len(examples), width), dtype=torch.long)  # (B, T)
    labels = torch.full((len(examples), width), -100, dtype=torch.long)  # (B, T)
    for i, ex in enumerate(examples):
        ids = torch.tensor(ex.ids)
        input_ids[i, : ids.numel()] = ids
        attention[i, : ids.numel()] = 1
        labels[i, ex.start : ids.numel()] = ids[ex.start :]
    return input_ids, attention, labels


def lr_at(step: int, cfg: BootstrapConfig) -> float:
    """Linear warmup to cfg.lr, then cosine decay to 10% of it at cfg.steps."""
    if step < cfg.warmup_steps:
        return cfg.lr * (step + 1) / cfg.warmup_steps
    progress = (step - cfg.warmup_steps) / max(1, cfg.steps - cfg.warmup_steps)
    return cfg.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, progress))))


def input_hash(sft: pl.DataFrame, cfg: BootstrapConfig) -> str:
    h = hashlib.sha256()
    import torch  # another torch version builds other weights, pinned or not

    pinned = cfg.pin_kernels and can_pin_kernels()
    h.update(json.dumps({"cfg": cfg.to_dict(), "version": BOOTSTRAP_VERSION, "pinned": pinned,
                         "torch": torch.__version__}, sort_keys=True).encode())
    for col in ("id", "meta", "level"):
        h.update(str(sft[col].to_list()).encode())
    return h.hexdigest()[:20]


def cached(out_dir: str | Path, digest: str) -> bool:
    meta = Path(out_dir) / "bootstrap.json"
    if not meta.exists() or not (Path(out_dir) / "model.safetensors").exists():
        return False
    return json.loads(meta.read_text()).get("input_hash") == digest


def batch_loss(model, rows: list[SFTExample], pad_id: int, parts: int = 2):
    """Mean token cross-entropy of the completions in `rows`, computed on `parts` sub-batches of
    similar length (each padded only to its own longest row: a chain of 10 steps no longer pads
    the whole batch), summed and divided by the batch's completion tokens: the same loss as one
    padded batch. Backward runs per part, so only one part's activations are alive at a time; the
    returned value is detached."""
    import torch

    ranked = sorted(rows, key=lambda ex: len(ex.ids))
    size = -(-len(ranked) // parts)
    tokens = sum(len(ex.ids) - ex.start for ex in ranked)  # completion tokens predicted
    total = 0.0
    for i in range(0, len(ranked), size):
        input_ids, _, labels = collate(ranked[i : i + size], pad_id)  # right padding + causal: no mask needed
        logits = model(input_ids=input_ids).logits[:, :-1]  # (B, T-1, V)
        part = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.size(-1)), labels[:, 1:].reshape(-1),
                                                 ignore_index=-100, reduction="sum") / tokens
        part.backward()
        total += part.item()
    return torch.tensor(total)


def train_sft(model, tokenizer, examples, cfg: BootstrapConfig, progress: bool = True) -> list[float]:
    """Plain-torch SFT loop (the warm start is not the RL learner). Returns the loss per step."""
    import torch
    from tqdm import tqdm

    torch.set_num_threads(cfg.threads)
    torch.manual_seed(cfg.seed)
    decay = [p for n, p in model.named_parameters() if p.ndim >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.ndim < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": cfg.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}], lr=cfg.lr, betas=(0.9, 0.98))
    model.train()
    order = batch_order(examples, cfg.level_weights, cfg.steps * cfg.batch_size, cfg.seed)
    losses = []
    bar = tqdm(range(cfg.steps), desc="warm start", disable=not progress, mininterval=2)
    for step in bar:
        rows = [examples[i] for i in order[step * cfg.batch_size : (step + 1) * cfg.batch_size]]
        for group in opt.param_groups:
            group["lr"] = lr_at(step, cfg)
        opt.zero_grad(set_to_none=True)
        loss = batch_loss(model, rows, tokenizer.pad_token_id)  # backward done inside, part by part
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        losses.append(loss.item())
        if step % 20 == 0:
            bar.set_postfix(loss=f"{losses[-1]:.3f}")
    model.eval()
    return losses


def bootstrap(sft: pl.DataFrame, out_dir: str | Path, cfg: BootstrapConfig = BootstrapConfig(),
              progress: bool = True) -> Path:
    """Build, warm-start on the `sft` table and save the tiny policy to out_dir; reuse it when
    inputs are unchanged."""
    out = Path(out_dir)
    digest = input_hash(sft, cfg)
    if cached(out, digest):
        logger.info("warm start cached at %s (inputs unchanged)", out)
        return out
    if cfg.pin_kernels and can_pin_kernels() and not kernels_pinned():
        return train_in_pinned_child(sft, out, cfg, progress)
    import torch

    start = time.monotonic()
    tokenizer = build_tokenizer()
    model = build_model(tokenizer, cfg.model, cfg.seed)
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
        "kernels": kernels_in_use(), "torch": torch.__version__,
        "weights_hash": weights_hash(str(tmp)),  # the hash profiles, cards and the demo's summary print
    })
    if out.exists():
        import shutil

        shutil.rmtree(out)
    tmp.rename(out)
    logger.info("warm start done in %.0fs -> %s", time.monotonic() - start, out)
    return out


def train_in_pinned_child(sft: pl.DataFrame, out: Path, cfg: BootstrapConfig, progress: bool) -> Path:
    """Run `bootstrap` in a child process whose environment pins the CPU kernels (they are chosen
    when torch loads, so this process, which may have loaded torch already, cannot switch)."""
    with tempfile.TemporaryDirectory(prefix="grpo-bootstrap-") as tmp:
        table = Path(tmp) / "sft.parquet"
        sft.write_parquet(table)
        cmd = [sys.executable, "-m", "grpo_train.bootstrap", str(table), str(out.resolve()), json.dumps(cfg.to_dict())]
        if not progress:
            cmd.append("--quiet")
        logger.info("warm start: training in a child process with CPU kernels pinned (%s)",
                    " ".join(f"{k}={v}" for k, v in PINNED_KERNELS.items()))
        start = time.monotonic()
        done = subprocess.run(cmd, env={**os.environ, **PINNED_KERNELS}, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"the warm start's child process failed (exit {done.returncode}; its error is above). "
                           "BootstrapConfig(pin_kernels=False) trains in this process, unpinned.")
    if not cached(out, input_hash(sft, cfg)):
        raise RuntimeError(f"the warm start's child process exited cleanly but left no finished warm start in {out}")
    logger.info("warm start: the pinned child took %.0fs in all (start-up included)", time.monotonic() - start)
    return out


def main(argv: list[str] | None = None) -> None:
    """Child entry point: SFT_PARQUET OUT_DIR CONFIG_JSON [--quiet]."""
    args = sys.argv[1:] if argv is None else argv
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    bootstrap(pl.read_parquet(args[0]), args[1], BootstrapConfig.from_dict(json.loads(args[2])),
              progress="--quiet" not in args[3:])


if __name__ == "__main__":
    main()
