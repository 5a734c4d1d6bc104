"""`grpo pipeline FILE.yaml`: run a YAML pipeline (data -> model -> profile -> shards -> train -> eval)."""

from __future__ import annotations

import argparse

HELP = "run a YAML pipeline; finished stages with unchanged inputs are skipped"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("config", help="pipeline YAML, e.g. pipelines/arith_demo.yaml")
    parser.add_argument("--quick", action="store_true", help="apply the file's `quick:` block")


def run(args: argparse.Namespace) -> int:
    from pipelines.pipeline import run_pipeline

    run_pipeline(args.config, quick=args.quick)
    return 0
