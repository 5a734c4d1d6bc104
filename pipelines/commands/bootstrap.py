"""`grpo bootstrap`: build the tiny Qwen2 policy and warm-start it on the world's SFT split (cached)."""

from __future__ import annotations

import argparse

HELP = "build and warm-start the tiny policy on the world (cached; reruns reuse it)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--world", default="runs/world/sft.parquet",
                        help="the world's SFT table (never the RL pool: `grpo world` writes both)")
    parser.add_argument("--out", default="runs/policy-warm", help="output model folder")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--steps", type=int, help="SFT steps (default: the recipe's)")


def run(args: argparse.Namespace) -> int:
    import dataclasses

    import polars as pl

    from grpo_train.bootstrap import BootstrapConfig, bootstrap

    cfg = BootstrapConfig(seed=args.seed)
    if args.steps:
        cfg = dataclasses.replace(cfg, steps=args.steps)
    out = bootstrap(pl.read_parquet(args.world), args.out, cfg)
    print(f"policy -> {out}")
    return 0
