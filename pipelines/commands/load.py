"""`grpo load`: read a math dataset (files, save_to_disk folder or Hub name) into the canonical table."""

from __future__ import annotations

import argparse
import sys

HELP = "load a math dataset into the canonical problem table (parquet) + a rejects file"


def add_data_arguments(parser: argparse.ArgumentParser) -> None:
    """Dataset flags shared by every command that reads raw data."""
    from grpo_data.tables.loaders import LoadLimits
    from grpo_data.tables.presets import PRESETS

    parser.add_argument("--data", required=True, help="file, folder, save_to_disk folder, or Hub dataset name")
    parser.add_argument("--preset", choices=sorted(PRESETS), help="dataset shape: " + "; ".join(
        f"{k} = {v.description}" for k, v in PRESETS.items()))
    parser.add_argument("--question-field", help="field holding the question (dotted for nested)")
    parser.add_argument("--answer-field", help="field holding the gold answer (dotted for nested)")
    parser.add_argument("--id-field", help="field holding a stable id (default: hash of the prompt)")
    parser.add_argument("--level-field", help="field holding a difficulty level")
    parser.add_argument("--split", default="train",
                        help="split(s) for Hub/save_to_disk datasets: a name or a comma list (default train)")
    parser.add_argument("--hub-config", help="config(s) of a Hub dataset, or of a folder holding one save_to_disk "
                        "folder per config: a name, a comma list, or 'all'; recorded in each row's source")
    parser.add_argument("--max-prompt-chars", type=int, default=None,
                        help=f"reject longer prompts (default {LoadLimits.max_prompt_chars})")
    parser.add_argument("--max-prompt-tokens", type=int, help="reject longer prompts (needs --tokenizer)")
    parser.add_argument("--tokenizer", help="tokenizer path/name for --max-prompt-tokens")
    parser.add_argument("--prior", default=None, metavar="SPEC",
                        help="another model's published difficulty (grpo_data.curriculum.priors: bigmath, polaris, skywork_7b, "
                        "lime, dart, avg, or FIELD:SCALE:SAMPLES): loading keeps its field in each row's meta for "
                        "later stages; profile (adaptive) and shards also weigh it, discounted")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from grpo_data.generation.context import OVERLONG_PROMPTS
    from grpo_data.tables.loaders import LoadLimits

    add_data_arguments(parser)
    parser.add_argument("--out", required=True, help="output parquet; rejects go to OUT stem + .rejects.jsonl")
    parser.add_argument("--strict", action="store_true", help="exit non-zero when any row is rejected")
    fit = parser.add_argument_group("context check (needs --tokenizer): reject prompts that cannot fit the engine, "
                                    "as profiling and training would leave them out")
    fit.add_argument("--context-length", type=int, default=None,
                     help="the engine's context in tokens (vLLM max_model_len): prompt, rendered with the "
                     "tokenizer's chat template, plus --max-tokens must fit")
    fit.add_argument("--max-tokens", type=int, default=None,
                     help=f"completion budget the problems will get (default {LoadLimits.max_tokens})")
    fit.add_argument("--overlong-prompts", choices=OVERLONG_PROMPTS, default=None,
                     help="clip: keep prompts that leave at least --min-clipped-tokens of room "
                     f"(default {LoadLimits.overlong_prompts})")
    fit.add_argument("--min-clipped-tokens", type=int, default=None,
                     help=f"clip: the least room a kept prompt leaves (default {LoadLimits.min_clipped_tokens})")


def check_prior_args(args) -> float:
    """The weight `--prior-weight` asks for (4 when left out; a 0 is kept, to be refused), checked
    before any data is read: a malformed `--prior` spec, a `--prior-profile` that is not a file,
    both (one prior source at a time), or `--prior-weight` without either, is a PriorError
    (`grpo_data.curriculum.prior_profile.check_prior_settings`)."""
    from grpo_data.curriculum.prior_profile import check_prior_settings

    return check_prior_settings(getattr(args, "prior", None), getattr(args, "prior_profile", None),
                                getattr(args, "prior_weight", None), prior_flags(args))


def read_prior_from_args(args, table):
    """The prior `--prior` names, read from a loaded or canonical table, or the earlier profile
    `--prior-profile` names, joined to the table's ids (`--prior-weight` where the command has one);
    None without either. PriorError when it cannot be read."""
    from grpo_data.curriculum.prior_profile import read_prior_settings

    return read_prior_settings(getattr(args, "prior", None), getattr(args, "prior_profile", None),
                               getattr(args, "prior_weight", None), table, args.data, prior_flags(args))


def prior_flags(args) -> tuple[str, str | None, str]:
    """The prior flags as this command has them (`grpo load` has no --prior-profile)."""
    return "--prior", "--prior-profile" if hasattr(args, "prior_profile") else None, "--prior-weight"


def add_prior_profile_argument(parser: argparse.ArgumentParser) -> None:
    """`--prior-profile PATH` and `--prior-weight K` (grpo profile, grpo shards)."""
    from grpo_data.curriculum.prior_sources import DEFAULT_WEIGHT

    parser.add_argument("--prior-profile", default=None, metavar="PATH",
                        help="an earlier profile (another checkpoint or model) as the prior, joined by id, each "
                        "problem's rate from its k samples counted as at most --prior-weight pseudo-samples; "
                        "instead of --prior")
    parser.add_argument("--prior-weight", type=float, default=None, metavar="K",
                        help="with --prior or --prior-profile: the most pseudo-samples one of its values counts for "
                        f"(default {DEFAULT_WEIGHT:g})")


def run(args: argparse.Namespace) -> int:
    from grpo_data.curriculum.priors import PriorError
    from grpo_data.tables.loaders import DataError, write_load_result
    from pipelines.stages import load_from_args

    try:
        result = load_from_args(args)
        prior = read_prior_from_args(args, result.table) if result.table.height else None
    except (DataError, PriorError) as exc:
        print(f"grpo load: {exc}", file=sys.stderr)
        return 2
    problems, rejects = write_load_result(result, args.out)
    print(result.summary())
    if prior is not None:
        print(prior.summary())
    print(f"problems -> {problems}\nrejects  -> {rejects}")
    if result.table.height == 0:
        print("grpo load: no valid rows remain; see the rejects file for each row's reason", file=sys.stderr)
        return 1
    return 1 if args.strict and result.rejects.height else 0
