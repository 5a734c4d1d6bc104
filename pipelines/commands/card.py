"""`grpo card`: write a Hugging Face dataset card (+ pass-rate histogram) for a shard set."""

from __future__ import annotations

import argparse
import sys

HELP = "write a Hugging Face dataset card for a shard set (data_cards/NAME.md + histogram)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--shards", required=True, help="shard folder written by `grpo shards`")
    parser.add_argument("--name", required=True, help="dataset name")
    parser.add_argument("--out", default=None, help="card path (default data_cards/NAME.md)")
    parser.add_argument("--license", default="apache-2.0")
    parser.add_argument("--pretty-name", default=None)


def run(args: argparse.Namespace) -> int:
    from grpo_data.cards import write_card
    from grpo_data.shards import ShardIntegrityError

    try:
        path = write_card(args.shards, args.name, args.out, args.license, args.pretty_name)
    except ShardIntegrityError as exc:
        print(f"grpo card: {exc}", file=sys.stderr)
        return 2
    print(f"card -> {path}")
    return 0
