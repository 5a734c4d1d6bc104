"""`grpo mix`: several datasets in one pool, with weights or caps, deduplicated across sources.

    grpo mix --spec mix.yaml --out data/pool.parquet

The mixture file format is documented in `grpo_data/tables/mixture.py`. Writes the pool (its footer records
the mixture), the rejects of every source beside it, and prints each source's share.
"""

from __future__ import annotations

import argparse
import sys

HELP = "mix several datasets (weights or caps, cross-source dedup) into one problem table"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from grpo_data.tables.loaders import LoadLimits

    parser.add_argument("--spec", required=True, help="mixture YAML (sources with data/preset/weight/cap)")
    parser.add_argument("--out", required=True, help="output parquet; rejects go to OUT stem + .rejects.jsonl")
    parser.add_argument("--max-prompt-chars", type=int, default=None, help=f"reject longer prompts (default {LoadLimits.max_prompt_chars})")


def run(args: argparse.Namespace) -> int:
    from grpo_data.tables.loaders import DataError, LoadLimits, write_load_result
    from grpo_data.tables.mixture import build_mixture, read_mixture

    try:
        spec = read_mixture(args.spec)
        result, report = build_mixture(spec, LoadLimits() if args.max_prompt_chars is None else LoadLimits(max_prompt_chars=args.max_prompt_chars))
    except (DataError, FileNotFoundError) as exc:
        print(f"grpo mix: {exc}", file=sys.stderr)
        return 2
    problems, rejects = write_load_result(result, args.out, mixture={"seed": spec.seed, "total": spec.total,
                                                                     "sources": report})
    print(result.summary().replace("valid", "valid after dedup", 1))
    for r in report:
        short = f", short of its share by {r['short_by']}" if r.get("short_by") else ""
        print(f"  {r['data']}: {r['taken']} of {r['available']} taken{short}")
    print(f"mixture of {result.table.height} problems -> {problems}\nrejects  -> {rejects}")
    return 0 if result.table.height else 1
