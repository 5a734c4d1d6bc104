"""`grpo demo`: the embedded default end to end (world, warm start, GRPO with the sampler chosen on
validation, profiles before/after, shards + card, held-out evaluation, summary and plots).
`--quick` runs a smaller version in a few minutes."""

from __future__ import annotations

import argparse

HELP = "run the embedded default end to end (arith world + tiny policy); --quick for a small run"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--quick", action="store_true", help="smaller world and shorter training")
    parser.add_argument("--config", default=None, help="pipeline YAML (default pipelines/arith_demo.yaml)")
    parser.add_argument("--seed", type=int, default=None,
                        help="replace the world, warm-start, profile and training seeds (output under runs/demo-seedN)")


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from pipelines.pipeline import run_pipeline

    config = args.config or str(Path(__file__).resolve().parent.parent / "arith_demo.yaml")
    summary = run_pipeline(config, quick=args.quick, seed=args.seed)
    print(f"\nsummary, plots and card under {Path(summary['plots'][0]).parent}")
    print(f"run report (open in a browser): {summary['report']}")
    return 0
