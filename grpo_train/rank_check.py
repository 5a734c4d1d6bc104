"""Check a multi-rank setup: N ranks must make the same update as one rank on the union of their batches.

    deepspeed --num_gpus 2 --module grpo_train.rank_check --model MODEL --out DIR [--zero-stage 3] [--advantage A]
    python -m grpo_train.rank_check --model MODEL --out DIR_REF --union 2 [--zero-stage 3] [--advantage A]

Each rank trains `--steps` optimizer steps on its own share of seeded synthetic groups: unequal shares,
one rank left with nothing in one step, answers of different lengths, small micro-batches. The
reference (`--union N`) trains one process on all N ranks' groups together. Every process writes
its final weights to DIR/weights-rank{R}.pt; `max_weight_difference` compares two files. Loss
normalization over global counts, zero-loss stand-ins for ranks with fewer micro-batches, and
DeepSpeed's gradient averaging must together make these agree to float rounding.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import numpy as np
import torch

from grpo_data.generation.engines import Completion

# groups per rank at each step (rank 1 has none at step 2: it must still join the collectives)
SHARES = ((3, 1), (1, 2), (2, 0))


def synthetic_groups(seed: int, step: int, rank: int, world: int, vocab: int, group_size: int = 4):
    """This rank's groups at `step`: seeded by (seed, step, rank), so any process can rebuild them."""
    from grpo_train.groups import Group

    count = SHARES[step % len(SHARES)][rank] if world == 2 else 2
    rng = np.random.default_rng([seed, step, rank])
    groups = []
    for g in range(count):
        prompt = rng.integers(5, vocab, size=int(rng.integers(3, 7))).tolist()
        comps = [Completion("", tuple(rng.integers(5, vocab, size=int(rng.integers(2, 12))).tolist()), "stop")
                 for _ in range(group_size)]
        # shaped rewards that differ between groups and ranks: an estimator that normalizes over the
        # batch or a window (batch_norm, window_norm) must see every rank's rewards to match
        rewards = rng.choice([0.0, 0.25, 1.0], size=group_size)
        groups.append(Group(problem=g, prompt_ids=prompt, completions=comps, rewards=rewards))
    return groups


def max_weight_difference(a: str | Path, b: str | Path) -> float:
    wa, wb = torch.load(a), torch.load(b)
    if wa.keys() != wb.keys():
        raise ValueError(f"{a} and {b} hold different parameters")
    return max(float((wa[k] - wb[k]).abs().max()) for k in wa)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--zero-stage", type=int, default=0)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--union", type=int, default=0, help="reference: one process on N ranks' groups")
    parser.add_argument("--micro-batch-tokens", type=int, default=48)
    parser.add_argument("--advantage", default="grpo", help="advantage estimator (core_algos.ADVANTAGES)")
    parser.add_argument("--local_rank", type=int, default=None, help=argparse.SUPPRESS)  # DeepSpeed's launcher
    args = parser.parse_args(argv)

    from grpo_train.config import AlgoConfig, DeepSpeedSection, OptimConfig
    from grpo_train.learner import DeepSpeedLearner

    torch.set_num_threads(1)
    # Adam with its usual eps is nearly blind to the gradient's scale (a loss normalized per rank
    # instead of globally would pass unseen); with eps 1 an update is about lr x gradient
    optim = OptimConfig(lr=0.5, eps=1.0, grad_clip=0.0, micro_batch_tokens=args.micro_batch_tokens,
                        logit_chunk_tokens=16)
    learner = DeepSpeedLearner(args.model, optim, DeepSpeedSection(zero_stage=args.zero_stage),
                               AlgoConfig(advantage=args.advantage, window_groups=4),
                               seed=0, temperature=0.7, max_tokens=12)
    vocab = learner.engine.module.config.vocab_size
    ranks = range(args.union) if args.union else [learner.rank]
    world = args.union or learner.world_size
    for step in range(args.steps):
        learner.update([g for r in ranks for g in synthetic_groups(0, step, r, world, vocab)])
    weights = {n: t.float().clone() for n, t in learner.named_weights()}
    Path(args.out).mkdir(parents=True, exist_ok=True)
    torch.save(weights, Path(args.out) / f"weights-rank{learner.rank}.pt")
    if torch.distributed.is_initialized():
        torch.distributed.barrier()
    print(f"rank {learner.rank}: {args.steps} steps done (world {learner.world_size}, pid {os.getpid()})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
