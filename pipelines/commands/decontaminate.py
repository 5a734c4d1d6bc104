"""`grpo decontaminate`: drop training problems that overlap evaluation sets.

    grpo decontaminate --data data/pool.parquet --against data/math500.jsonl --against-preset problem_answer \
        --out data/pool.clean.parquet

Removed rows go to OUT stem + .rejects.jsonl (reason `contaminated`, with the evaluation file, row
and id they match); counts go into the output's footer, which `grpo shards` and `grpo card` carry on.
"""

from __future__ import annotations

import argparse
import sys

HELP = "remove training problems sharing n-grams or their whole text with evaluation sets"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from grpo_data.tables.decontam import DecontamConfig

    parser.add_argument("--data", required=True, help="canonical problem table (parquet from grpo load / mix)")
    parser.add_argument("--against", required=True, nargs="+", help="evaluation sets: files, folders or Hub names")
    parser.add_argument("--against-preset", help="shape of evaluation sets that are not canonical tables")
    parser.add_argument("--against-question-field", help="question field of evaluation sets (dotted for nested), "
                        "instead of a preset (AIME-style `Problem`)")
    parser.add_argument("--against-split", default="test", help="split(s) of Hub/save_to_disk evaluation sets")
    parser.add_argument("--against-config", help="config(s) of Hub evaluation sets: a name, a comma list or 'all'")
    parser.add_argument("--ngram", type=int, default=None, help=f"words per n-gram (default {DecontamConfig.ngram})")
    parser.add_argument("--min-shared", type=int, default=None,
                        help=f"n-grams shared with one evaluation row to remove (default {DecontamConfig.min_shared})")
    parser.add_argument("--min-words", type=int, default=None,
                        help="evaluation rows shorter than --ngram but this long are matched by containment "
                        f"(default {DecontamConfig.min_words})")
    parser.add_argument("--no-exact", action="store_true", help="skip the whole-text (normalized) comparison")
    parser.add_argument("--out", required=True, help="output parquet")


def run(args: argparse.Namespace) -> int:
    from grpo_data.tables.decontam import DecontamConfig
    from grpo_data.tables.loaders import DataError
    from pipelines.stages import decontaminate_file

    try:
        given = {"ngram": args.ngram, "min_shared": args.min_shared, "min_words": args.min_words}
        cfg = DecontamConfig(**{k: v for k, v in given.items() if v is not None}, exact=not args.no_exact)
        summary = decontaminate_file(args.data, args.against, args.out, cfg, args.against_preset, args.against_split,
                                     args.against_config, args.against_question_field)
    except (DataError, ValueError, FileNotFoundError) as exc:
        print(f"grpo decontaminate: {exc}", file=sys.stderr)
        return 2
    print(f"checked {summary['checked']} problems against {summary['eval_rows']} evaluation rows: "
          f"removed {summary['removed']} ({summary['removed_exact']} by exact text, {summary['removed_contained']} "
          f"containing a short evaluation problem, {summary['removed_ngram']} by shared {cfg.ngram}-grams)")
    ignored = summary["boilerplate_ignored"]
    if any(ignored.values()):
        print(f"  ignored as boilerplate (template text, not problems): {ignored}")
    for name, n in summary["removed_by_eval_set"].items():
        print(f"  {name}: {n}")
    print(f"kept -> {args.out}")
    return 0
