"""`grpo world`: generate the embedded arithmetic world (train + held-out canonical tables)."""

from __future__ import annotations

import argparse

HELP = "generate the embedded arithmetic world: graded levels, train/held-out parquet"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", default="runs/world", help="output folder (default runs/world)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--per-level-train", type=int, default=600)
    parser.add_argument("--per-level-heldout", type=int, default=100)


def run(args: argparse.Namespace) -> int:
    from pipelines.stages import write_world

    paths = write_world(args.out, seed=args.seed, per_level_train=args.per_level_train,
                        per_level_heldout=args.per_level_heldout)
    for name, path in paths.items():
        print(f"{name:8s} -> {path}")
    return 0
