"""`grpo`: the command line of grpo-curriculum, one subcommand per stage.

    grpo --help                 lists the subcommands
    grpo SUBCOMMAND --help      flags of one subcommand

Each subcommand lives in its own module under `pipelines/commands/` exposing `HELP` (one line),
`add_arguments(parser)` and `run(args) -> int`. Those modules import heavy engines lazily, inside
`run`, so that `grpo --help` stays fast.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys

# name -> module under pipelines.commands; order is the order shown in --help.
SUBCOMMANDS: dict[str, str] = {
    "verify": "verify",
    "load": "load",
    "mix": "mix",
    "decontaminate": "decontaminate",
    "world": "world",
    "bootstrap": "bootstrap",
    "profile": "profile",
    "shards": "shards",
    "card": "card",
    "export": "export",
    "train": "train",
    "pipeline": "pipeline",
    "demo": "demo",
    "report": "report",
    "bench": "bench",
}

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="grpo",
        description="grpo-curriculum: profile pass rates, build difficulty curricula, train GRPO on them.",
    )
    parser.add_argument(
        "--log-level",
        default="INFO",
        choices=["DEBUG", "INFO", "WARNING", "ERROR"],
        help="logging level for the library (default INFO)",
    )
    # DeepSpeed's launcher puts --local_rank=N before the subcommand (rank info is also in the env)
    parser.add_argument("--local_rank", type=int, default=None, help=argparse.SUPPRESS)
    subparsers = parser.add_subparsers(dest="command", metavar="SUBCOMMAND", required=True)
    for name, module_name in SUBCOMMANDS.items():
        module = importlib.import_module(f"pipelines.commands.{module_name}")
        sub = subparsers.add_parser(name, help=module.HELP, description=module.HELP)
        module.add_arguments(sub)
        sub.set_defaults(_run=module.run)
    return parser


def setup_logging(level: str) -> None:
    logging.basicConfig(level=getattr(logging, level), format=LOG_FORMAT, stream=sys.stderr, force=True)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    setup_logging(args.log_level)
    return int(args._run(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
