"""`grpo shards`: bucket profiled problems by pass rate into checksummed parquet shards (+ manifest)."""

from __future__ import annotations

import argparse
import sys

HELP = "build difficulty-bucketed shards from a profile (native, verl or trl format)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from pipelines.commands.load import add_data_arguments

    add_data_arguments(parser)
    parser.add_argument("--profile", required=True, help="profile parquet written by `grpo profile`")
    parser.add_argument("--out", required=True, help="output folder, e.g. shards/NAME")
    parser.add_argument("--edges", default="0,0.1,0.3,0.7,0.9,1", help="bucket edges from 0 to 1")
    parser.add_argument("--format", default="native", choices=["native", "verl", "trl"])


def run(args: argparse.Namespace) -> int:
    import json
    from pathlib import Path

    from grpo_data.loaders import DataError, read_provenance
    from grpo_data.profiler import read_profile
    from grpo_data.shards import write_shards
    from pipelines.stages import read_problems

    try:
        edges = [float(x) for x in args.edges.split(",")]
        profile, meta = read_profile(args.profile)
        problems = read_problems(args)
    except (ValueError, DataError, FileNotFoundError) as exc:
        print(f"grpo shards: {exc}", file=sys.stderr)
        return 2
    rejected = {}
    rejects_file = Path(args.profile).with_suffix(".problems.rejects.jsonl")
    if rejects_file.exists():
        for line in rejects_file.read_text().splitlines():
            reason = json.loads(line)["reason"]
            rejected[reason] = rejected.get(reason, 0) + 1
    data = Path(args.data)
    prov = read_provenance(data) if data.is_file() and data.suffix == ".parquet" else {}
    rejected = {**rejected, **prov.get("rejected", {})}
    manifest = write_shards(problems, profile, args.out, edges, args.format, source=args.data, profile_meta=meta,
                            rejected=rejected, extra={"data": prov})
    for b, info in manifest["buckets"].items():
        print(f"bucket {b} [{info['lo']:.2f}, {info['hi']:.2f}]: {info['rows']} problems")
    print(f"{manifest['rows']} problems ({manifest['unprofiled']} unprofiled) -> {args.out}")
    return 0
