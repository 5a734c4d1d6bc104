"""`grpo export`: a profile's per-problem counts and its run's record, in DART-Math's or the avg@K convention.

    grpo export --profile runs/profile.parquet --format dart --data runs/world/train.parquet --out P.dart.parquet
    grpo export --profile runs/profile.parquet --format avg --k 32 --out P.avg.parquet

Writes OUT (parquet, the record in its footer) and OUT.json (the record): model, weights hash,
sampling, prompt template, verifier and versions, prior (`grpo_data.tables.exports`). `--data` (a canonical
problem table) gives each problem its level and per-level estimates, its question (`query`: the
user messages), `source` and `meta` (file, row), and the record says how its ids were made
(`ids`: the dataset's own, or the sha1 of the prompt text, which another team recomputes to join). avg: K is the fewest samples any
problem got unless --k states it (refused when a problem has fewer): every row's rate averages at
least K samples, its `k` column says how many. `grpo_data.tables.exports.read_export` reads
either back into the profile's rows. An --out whose parquet or OUT.json would overwrite the profile,
the --data table or a file beside them (NAME.json, NAME.inputs.json, NAME.rejects.jsonl) is refused.
"""

from __future__ import annotations

import argparse
import sys

HELP = "write a profile's counts and record in DART-Math's columns or as avg@K (reusable by others)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--profile", required=True, help="profile parquet written by `grpo profile`")
    parser.add_argument("--format", required=True, choices=["dart", "avg"],
                        help="dart: n_samples_list/n_corrects_list per round, tot_n_*, pass_rate(_bernoulli_std); "
                        "avg: one avg@K_<model> column with k, n_correct and the rounds")
    parser.add_argument("--out", required=True, help="export parquet (its record goes to OUT.json)")
    parser.add_argument("--data", default=None,
                        help="canonical problem table (parquet with id, level; prompt, source, meta): levels, per-level "
                        "estimates and the columns another team joins on (query, source, meta)")
    parser.add_argument("--k", type=int, default=None, metavar="K",
                        help="avg: the K stated in avg@K, at most the fewest samples any problem got (the default)")


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    import polars as pl

    from grpo_data.tables.exports import ExportError, check_out, export_profile, read_problem_table, sidecar
    from grpo_data.tables.profile_table import read_profile, read_rejects

    inputs = [args.profile, *([args.data] if args.data else [])]
    try:
        check_out(args.out, inputs)  # before reading anything
        if args.k is not None and args.format != "avg":
            raise ExportError("--k states the K of avg@K; the dart format lists every sample, give --format avg")
        if args.k is not None and args.k < 1:
            raise ExportError(f"--k must be at least 1, got {args.k}")
        if not Path(args.profile).is_file():
            raise ExportError(f"{args.profile}: no such profile (write one with `grpo profile`)")
        try:
            profile, meta = read_profile(args.profile)
        except (pl.exceptions.PolarsError, OSError) as exc:  # not a parquet file, or a damaged one
            raise ExportError(f"{args.profile}: cannot be read as a profile ({type(exc).__name__}: {exc})") from None
        problems = read_problem_table(args.data) if args.data else None
        record = export_profile(profile, meta, args.out, args.format, problems=problems, k=args.k, where=args.profile,
                                inputs=inputs, left_out=read_rejects(args.profile))
    except (ExportError, ValueError) as exc:
        print(f"grpo export: {exc}", file=sys.stderr)
        return 2
    info = record["export"]
    stated = (f"; column {info['column']} (K = {info['k']}: every rate averages at least K samples, "
              f"{info['more_than_k']} problems more, up to {info['k_max']}: see `k`)" if args.format == "avg" else "")
    rounds = "recorded" if info["rounds_recorded"] else "not recorded: one per problem"
    print(f"{info['rows']} problems ({args.format}; rounds {rounds}; estimate prior {info['estimate']['prior']}"
          f"{stated}) -> {args.out} + {sidecar(args.out)}")
    return 0
