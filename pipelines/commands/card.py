"""`grpo card`: write a Hugging Face dataset card (+ pass-rate histogram) for a shard set.

    grpo card --shards shards/arith --name arith --band 0.2,0.95
    grpo card --shards shards/arith --name arith --profile runs/profile.parquet   # + arith.dart.parquet beside it
"""

from __future__ import annotations

import argparse
import sys

from grpo_data.curriculum.stats import DEFAULT_GROUP_SIZE

HELP = "write a Hugging Face dataset card for a shard set (data_cards/NAME.md + histogram)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--shards", required=True, help="shard folder written by `grpo shards`")
    parser.add_argument("--name", required=True, help="dataset name")
    parser.add_argument("--out", default=None, help="card path (default data_cards/NAME.md)")
    parser.add_argument("--license", default="apache-2.0")
    parser.add_argument("--pretty-name", default=None)
    parser.add_argument("--band", default=None, metavar="LO,HI",
                        help="the band training uses, drawn on the histogram (e.g. 0.2,0.95; default: none drawn)")
    parser.add_argument("--group-size", type=int, default=DEFAULT_GROUP_SIZE,
                        help=f"G for the all-right/all-wrong share (default {DEFAULT_GROUP_SIZE})")
    parser.add_argument("--profile", default=None,
                        help="the profile the set was built from: its per-problem counts (each round's samples and "
                        "successes, DART-Math's columns) go beside the card as NAME.dart.parquet")


def run(args: argparse.Namespace) -> int:
    from grpo_data.tables.cards import write_card
    from grpo_data.tables.exports import ExportError
    from grpo_data.tables.shards import ShardIntegrityError

    band = None
    if args.band:
        try:
            band = tuple(float(x) for x in args.band.split(","))
        except ValueError:
            band = ()
        if len(band) != 2 or not 0 <= band[0] < band[1] <= 1:
            print(f"grpo card: --band must be LO,HI with 0 <= LO < HI <= 1, got {args.band!r}", file=sys.stderr)
            return 2
    try:
        path = write_card(args.shards, args.name, args.out, args.license, args.pretty_name, band=band,
                          group_size=args.group_size, profile=args.profile)
    except (ShardIntegrityError, ExportError, FileNotFoundError) as exc:
        print(f"grpo card: {exc}", file=sys.stderr)
        return 2
    print(f"card -> {path}")
    return 0
