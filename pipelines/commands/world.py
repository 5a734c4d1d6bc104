"""`grpo world`: generate the embedded arithmetic world (SFT, RL pool, validation and test tables)."""

from __future__ import annotations

import argparse

HELP = "generate the embedded arithmetic world: chains graded by length, sft/train/val/test parquet"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", default="runs/world", help="output folder (default runs/world)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--scale", type=float, default=1.0,
                        help="multiply the RL pool and the validation/test splits (default 1)")
    parser.add_argument("--preset", default="default", choices=["default", "frontier"],
                        help="default: today's world; frontier: the instrument world of issue #59 (levels 1-12, "
                             "evaluation weighted to the frontier, transfer and reference splits)")


def run(args: argparse.Namespace) -> int:
    from pipelines.stages import write_world

    paths = write_world(args.out, seed=args.seed, scale=args.scale, preset=args.preset)
    for name, path in paths.items():
        print(f"{name:8s} -> {path}")
    return 0
