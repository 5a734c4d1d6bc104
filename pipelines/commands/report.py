"""`grpo report RUN_DIR`: a self-contained HTML report of a training run (plots embedded)."""

from __future__ import annotations

import argparse

HELP = "write RUN_DIR/report.html: reward, accuracy, pass rates, band, KL, entropy, length, warnings, config"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dir", help="a `grpo train` run folder (holds metrics.jsonl)")
    parser.add_argument("--before", default=None, help="profile of the training pool before training "
                        "(default RUN_DIR/../profile.parquet)")
    parser.add_argument("--after", default=None, help="profile after training (default RUN_DIR/../profile-after.parquet)")
    parser.add_argument("--out", default=None, help="HTML path (default RUN_DIR/report.html)")
    parser.add_argument("--screenshot", default=None, help="also render it in headless Chromium to this PNG")


def run(args: argparse.Namespace) -> int:
    from pipelines.report import screenshot, write_report

    path = write_report(args.run_dir, args.before, args.after, args.out)
    print(f"report -> {path}")
    if args.screenshot:
        print(f"screenshot -> {screenshot(path, args.screenshot)}")
    return 0
