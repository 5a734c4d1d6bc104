"""`grpo bench NAME`: run a benchmark and write its results (with the machine) to bench/results/.
What each benchmark is and reads lives in `bench.registry`; this parses the flags and writes."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from bench.registry import BENCHMARKS, Request, parse_seeds, run_benchmark  # noqa: F401 - parse_seeds: the flags' rule

HELP = f"run benchmarks ({', '.join(BENCHMARKS)}, all); results to bench/results/"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("name", choices=[*BENCHMARKS, "all"], help="which benchmark")
    parser.add_argument("--quick", action="store_true",
                        help="smaller sizes (for smoke runs; results to runs/bench-quick/results unless --out-dir)")
    parser.add_argument("--out-dir", default=None,
                        help="results folder (default bench/results; with --quick, runs/bench-quick/results)")
    parser.add_argument("--arms", default=None, help="gsweep: run only these arms (comma-separated; a partial sweep)")
    parser.add_argument("--seeds", default=None,
                        help="gsweep, e2e: these seeds (comma-separated; default 0,1,2). e2e stores each finished seed "
                             "in <out-dir>/e2e-seeds and its result pools every stored seed")
    parser.add_argument("--assemble", action="store_true",
                        help="gsweep: build the result from the stored runs of --arms/--seeds (default every arm), "
                             "running nothing; e2e: from the seeds stored in <out-dir>/e2e-seeds, running nothing")
    parser.add_argument("--regime", default="multi", help="curriculum: multi (the primary), multi_t06 (multi sampled at T = 0.6, Amendment 4) or one_pass")
    parser.add_argument("--condition", default="nolevel", help="curriculum: nolevel (the primary) or level")
    parser.add_argument("--split", default="test",
                        help="curriculum: test (the headline) or val (the same runs on validation: picks the default)")
    parser.add_argument("--against", default=None,
                        help="verify_ab: the commit whose verifier this checkout's is measured against (same run)")
    parser.add_argument("--warm-start", default=None,
                        help="gsweep --assemble: the warm start (weights hash) whose stored runs to assemble, when "
                             "runs from more than one are stored")
    parser.add_argument("--accept-code", action="append", default=None, metavar="HASH=REASON",
                        help="curriculum: assemble a cell whose stored runs were made by other library code too, this "
                             "hash accepted for the reason given (what changed, why it does not matter); repeatable. "
                             "Without it such a cell is refused: rerun the runs instead")


QUICK_RESULTS = Path("runs/bench-quick/results")  # a smoke run never overwrites the committed results


def run_one(name: str, quick: bool, out_dir, arms: str | None = None, seeds: str | None = None,
            assemble: bool = False, warm_start: str | None = None, regime: str = "multi",
            condition: str = "nolevel", split: str = "test", against: str | None = None,
            accept_code: tuple[str, ...] = ()) -> dict:
    from bench.common import write_result

    req = Request(quick, Path(out_dir) if out_dir else None, arms, seeds, assemble, warm_start, regime, condition, split,
                  against, tuple(accept_code or ()))
    written, result = run_benchmark(name, req)
    print(f"{written}: results -> {write_result(written, result, out_dir)}")
    return result


def run(args: argparse.Namespace) -> int:
    out_dir = Path(args.out_dir) if args.out_dir else QUICK_RESULTS if args.quick else None
    names = tuple(n for n, b in BENCHMARKS.items() if b.in_all) if args.name == "all" else (args.name,)
    results = {}
    for name in names:
        results[name] = run_one(name, args.quick, out_dir, args.arms, args.seeds, args.assemble,
                                args.warm_start, args.regime, args.condition, args.split, args.against,
                                tuple(args.accept_code or ()))
    if args.name == "all":
        from bench.report import write_readme

        print(f"summary -> {write_readme(out_dir)}")
    else:
        print(json.dumps({k: v for k, v in results[args.name].items() if k not in ("arms", "curve")}, indent=1,
                         default=str)[:3000])
    return 0
