"""`grpo shards`: bucket profiled problems by pass rate into checksummed parquet shards (+ manifest).

    grpo shards --data runs/world/train.parquet --profile runs/world-profile.parquet --format trl --out shards/arith
    grpo shards --data bigmath.parquet --prior bigmath --format verl --out shards/bigmath   # no profile: the prior
    grpo shards --data train.parquet --profile step200.parquet --prior-profile base.parquet --out shards/step200

With --prior (another model's published difficulty, `grpo_data.curriculum.priors`) or --prior-profile (an
earlier profile of another checkpoint or model, `grpo_data.curriculum.prior_profile`) the set also holds the
problems only the prior covers, with `prior_rate`/`prior_k` columns the plug-ins start from. A
profile written by `grpo profile --adaptive --prior` (or --prior-profile) is used with the same prior
and --prior-weight only (it stopped early where that prior agreed); anything else is refused, naming them.
"""

from __future__ import annotations

import argparse
import sys

HELP = "build difficulty-bucketed shards from a profile (native, verl or trl format)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from pipelines.commands.load import add_data_arguments, add_prior_profile_argument

    add_data_arguments(parser)
    parser.add_argument("--profile", default=None,
                        help="profile parquet written by `grpo profile` (required unless --prior or --prior-profile "
                        "is given)")
    add_prior_profile_argument(parser)
    parser.add_argument("--out", required=True, help="output folder, e.g. shards/NAME")
    parser.add_argument("--edges", default=None,
                        help="bucket edges from 0 to 1, comma-separated (default: grpo_data.tables.shards.DEFAULT_EDGES)")
    parser.add_argument("--format", default="native", choices=["native", "verl", "trl"])


def run(args: argparse.Namespace) -> int:
    import json
    from pathlib import Path

    from grpo_data.curriculum.prior_profile import check_other_source
    from grpo_data.curriculum.priors import PriorError, check_recorded_prior
    from grpo_data.tables.loaders import DataError, read_provenance
    from grpo_data.tables.profile_table import read_profile, read_rejects
    from grpo_data.tables.shards import DEFAULT_EDGES, write_shards
    from pipelines.commands.load import check_prior_args, read_prior_from_args
    from pipelines.stages import read_problems

    try:
        edges = DEFAULT_EDGES if args.edges is None else [float(x) for x in args.edges.split(",")]
        if not args.profile and not args.prior and not args.prior_profile:
            raise ValueError("give --profile (grpo profile's output), --prior (another model's difficulty column) or "
                             "--prior-profile (an earlier profile of another checkpoint or model), or a profile and "
                             "one prior")
        check_prior_args(args)
        profile, meta = read_profile(args.profile) if args.profile else (None, {})
        problems = read_problems(args)
        prior = read_prior_from_args(args, problems)
        # a profile that stopped early on a prior is used with that prior only
        prior = check_recorded_prior(meta, prior, args.profile, "Pass {option} {spec} --prior-weight {weight}")
        if args.profile:  # a prior profile of the profile's own weights is its model's counts, not a prior
            check_other_source(prior, meta.get("weights_hash"), f"--profile {args.profile}",
                               "give one of the two as --profile (two profiles of one model do not combine here)", args.profile)
    except (ValueError, DataError, FileNotFoundError) as exc:
        print(f"grpo shards: {exc}", file=sys.stderr)
        return 2
    if prior is not None:
        print(prior.summary())
    rejected = {}
    rejects_file = Path(args.profile).with_suffix(".problems.rejects.jsonl") if args.profile else None
    if rejects_file is not None and rejects_file.exists():
        for line in rejects_file.read_text().splitlines():
            reason = json.loads(line)["reason"]
            rejected[reason] = rejected.get(reason, 0) + 1
    # the profile's left-out problems (their prompt does not fit the context) stay out, prior or not
    left_out = set(read_rejects(args.profile)["id"].to_list()) if args.profile else set()
    data = Path(args.data)
    prov = read_provenance(data) if data.is_file() and data.suffix == ".parquet" else {}
    rejected = {**rejected, **prov.get("rejected", {})}
    try:  # a prior that repeats the profile's own samples is refused here (grpo_data.curriculum.priors.merge_offline)
        manifest = write_shards(problems, profile, args.out, edges, args.format, source=args.data, profile_meta=meta,
                                rejected=rejected, extra={"data": prov}, prior=prior, left_out=left_out)
    except PriorError as exc:
        print(f"grpo shards: {exc}", file=sys.stderr)
        return 2
    for b, info in manifest["buckets"].items():
        print(f"bucket {b} [{info['lo']:.2f}, {info['hi']:.2f}]: {info['rows']} problems")
    if prior is not None:
        print(f"{manifest['rows']} problems ({manifest['prior']['alone']} on the prior alone; {manifest['unprofiled']} "
              f"with neither a profile nor a prior value left out) -> {args.out}")
    else:
        print(f"{manifest['rows']} problems ({manifest['unprofiled']} unprofiled) -> {args.out}")
    return 0
