"""`grpo bench NAME`: run a benchmark and write its results (with the machine) to bench/results/."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

HELP = ("run benchmarks (verify, data, scheduler, warmstart, profile, e2e, e2e_select, memory, trl, variants, gsweep, "
        "demo_lr, curriculum_lr, curriculum, prior, ray_profile, "
        "all); "
        "results to bench/results/")

BENCHES = ("verify", "data", "scheduler", "warmstart", "profile", "e2e_select", "e2e", "memory", "trl", "variants",
           "gsweep", "demo_lr", "curriculum_lr", "curriculum", "prior", "ray_profile")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("name", choices=[*BENCHES, "all"], help="which benchmark")
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
    parser.add_argument("--warm-start", default=None,
                        help="gsweep --assemble: the warm start (weights hash) whose stored runs to assemble, when "
                             "runs from more than one are stored")


QUICK_RESULTS = Path("runs/bench-quick/results")  # a smoke run never overwrites the committed results


def parse_seeds(text: str | None, default: tuple[int, ...]) -> tuple[int, ...]:
    """`--seeds 0,1,2` as a tuple; a repeated seed is an error (it would count as a replicate)."""
    if not text:
        return default
    try:
        seeds = tuple(int(x) for x in text.split(","))
    except ValueError:
        raise ValueError(f"--seeds {text!r}: comma-separated integers, e.g. 0,1,2") from None
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"--seeds {text!r} repeats a seed: each seed counts once")
    return seeds


def _write(name: str, result: dict, out_dir) -> dict:
    from bench.common import write_result

    print(f"{name}: results -> {write_result(name, result, out_dir)}")
    return result


def run_one(name: str, quick: bool, out_dir, arms: str | None = None, seeds: str | None = None,
            assemble: bool = False, warm_start: str | None = None, regime: str = "multi",
            condition: str = "nolevel", split: str = "test") -> dict:
    if name == "verify":
        from bench import verify_bench

        result = verify_bench.run(n=800 if quick else 4000)
    elif name == "data":
        from bench import data_bench

        result = data_bench.run(quick=quick)
    elif name == "scheduler":
        import dataclasses

        from bench import scheduler_sim

        cfg = scheduler_sim.SimConfig()
        if quick:
            cfg = dataclasses.replace(cfg, n_problems=4000, lr=0.003, max_steps=1500)
        n = 100_000 if quick else 1_000_000
        result = {"simulation": scheduler_sim.run(cfg), "timing": scheduler_sim.timing(n=n),
                  "timing_band_epochs": scheduler_sim.timing(n=n, without_replacement=True, epoch="band")}
    elif name == "warmstart":
        from bench import warmstart_bench

        result = warmstart_bench.run(quick=quick)
    elif name == "profile":
        from bench import profile_bench

        result = profile_bench.run(quick=quick)
    elif name == "prior":  # issue #34: a profile from another warm start's, registered in bench/PREREGISTRATION.md
        from bench import prior_bench

        result = prior_bench.run(quick=quick)
    elif name == "ray_profile":  # issue #37: Ray overhead against one process, and a killed worker
        from bench import ray_profile_bench

        result = ray_profile_bench.run(quick=quick)
    elif name == "memory":
        from bench import memory_bench

        result = memory_bench.run(quick=quick)
    elif name == "trl":
        from bench import trl_bench

        result = trl_bench.run(quick=quick, seeds=(0,) if quick else (0, 1, 2))
    elif name == "variants":
        from bench import variants_bench

        result = variants_bench.run(quick=quick, seeds=(0,) if quick else (0, 1, 2))
    elif name == "gsweep":
        from bench import gsweep_bench
        from bench.common import RESULTS

        chosen = parse_seeds(seeds, (0,) if quick else (0, 1, 2))
        results = Path(out_dir or RESULTS)
        if assemble:  # by default every arm the same command would have run (no KL grid with --quick)
            names = tuple(arms.split(",")) if arms else (*gsweep_bench.arms(), *({} if quick else gsweep_bench.kl_arms()))
            budget = 2_000 if quick else gsweep_bench.BUDGET
            return _write(name, gsweep_bench.assemble(names, chosen, results, budget, plot_to=results / "gsweep.png",
                                                      warm_start=warm_start), out_dir)
        if warm_start:
            raise ValueError("--warm-start names the stored runs to assemble (with --assemble); a sweep trains "
                             "from the warm start stored under <out-dir>/gsweep-warm-start")
        named_kl = not arms or any(a.startswith("kl") for a in arms.split(","))
        result = gsweep_bench.run(quick=quick, seeds=chosen, kl=not quick and named_kl,
                                  only=tuple(arms.split(",")) if arms else None, results=results)
    elif name == "demo_lr":  # the demo's learning rate, on validation over the demo's seeds
        from bench import demo_lr_bench

        result = demo_lr_bench.run(seeds=(0,) if quick else demo_lr_bench.SEEDS)
    elif name in ("curriculum_lr", "curriculum"):  # issue #33: pre-registered in bench/PREREGISTRATION.md
        from bench import curriculum_bench
        from bench.common import RESULTS

        results = Path(out_dir or RESULTS)
        if name == "curriculum_lr":
            result = curriculum_bench.select_lr(results=results)
        elif assemble:
            folder = curriculum_bench.folder_name(regime, condition, split)
            result = curriculum_bench.assemble(results, regime, condition, plot_to=results / f"curriculum-{folder}.png",
                                               split=split)
        else:
            result = curriculum_bench.run(regime, condition, parse_seeds(seeds, curriculum_bench.SEEDS),
                                          tuple(arms.split(",")) if arms else tuple(curriculum_bench.ARMS),
                                          results=results, split=split)
        if name == "curriculum":
            name = f"curriculum-{curriculum_bench.folder_name(regime, condition, split)}"
    elif name == "e2e_select":  # settings chosen on the validation split, before the headline
        from bench import e2e_bench
        from bench.common import RESULTS

        # the profile it makes is stored there (results/e2e-profile) for the headline and later sessions
        result = e2e_bench.select_on_validation(budget=5_000 if quick else e2e_bench.BUDGET,
                                                results=Path(out_dir or RESULTS))
    else:
        from bench import e2e_bench
        from bench.common import RESULTS

        results = Path(out_dir or RESULTS)  # the selection e2e_select wrote there; the stored seeds
        if assemble:  # every stored seed, or those named
            budget = 5_000 if quick else e2e_bench.BUDGET
            return _write(name, e2e_bench.assemble(results, plot_to=results / "e2e.png", budget=budget,
                                                   seeds=parse_seeds(seeds, None) if seeds else None), out_dir)
        result = e2e_bench.run(quick=quick, seeds=parse_seeds(seeds, (0,) if quick else (0, 1, 2)), results=results)
    return _write(name, result, out_dir)


def run(args: argparse.Namespace) -> int:
    out_dir = Path(args.out_dir) if args.out_dir else QUICK_RESULTS if args.quick else None
    # demo_lr trains from the demo folders (`grpo demo --seed N`), which `all` does not build
    names = tuple(b for b in BENCHES if b not in ("demo_lr", "curriculum_lr", "curriculum")) if args.name == "all" else (args.name,)
    results = {}
    for name in names:
        results[name] = run_one(name, args.quick, out_dir, args.arms, args.seeds, args.assemble,
                                args.warm_start, args.regime, args.condition, args.split)
    if args.name == "all":
        from bench.report import write_readme

        print(f"summary -> {write_readme(out_dir)}")
    else:
        print(json.dumps({k: v for k, v in results[args.name].items() if k not in ("arms", "curve")}, indent=1,
                         default=str)[:3000])
    return 0
