"""`grpo train`: GRPO with scheduled difficulty on a DeepSpeed learner with colocated vLLM rollouts.

    grpo train --config pipelines/arith_demo.yaml -o run.steps=20 -o rollout.group_size=8
    grpo train --config ... --resume            # continue from the run folder's latest checkpoint
    deepspeed --num_gpus 8 --module pipelines.cli train --config pipelines/gpu_example.yaml   # multi-GPU
    torchrun --nproc-per-node 8 -m pipelines.cli train --config pipelines/gpu_example.yaml    # the same

A pipeline file (`--config pipelines/gpu_example.yaml`) trains the model and data it names, from the
paths its earlier stages write (`grpo pipeline FILE` runs those stages first).
"""

from __future__ import annotations

import argparse
import sys

HELP = "GRPO training: scheduled rollouts (vLLM), dynamic resampling, DeepSpeed updates"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", help="YAML config (a pipeline file's `train:` section or a bare train config)")
    parser.add_argument("-o", "--override", action="append", default=[], metavar="KEY=VALUE",
                        help="dotted override, e.g. -o rollout.group_size=8 (repeatable)")
    parser.add_argument("--resume", action="store_true", help="continue from the latest checkpoint in run.out")


def run(args: argparse.Namespace) -> int:
    from grpo_train.config_io import load_config
    from grpo_train.trainer import check_inputs, train

    try:
        cfg = load_config(args.config, args.override)
        check_inputs(cfg)
    except (ValueError, FileNotFoundError) as exc:
        print(f"grpo train: {exc}", file=sys.stderr)
        return 2

    out = train(cfg, resume=args.resume)
    print(f"run -> {out}")
    return 0
