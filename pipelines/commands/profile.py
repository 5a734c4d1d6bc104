"""`grpo profile`: estimate each problem's pass rate with k samples (vLLM or HF), resumable and sharded.

    grpo profile --data runs/world/train.parquet --model runs/policy-warm --k 16 --out profiles/arith.parquet
    grpo profile ... --adaptive                 # sequential sampling toward the 0.2-0.8 band
    grpo profile ... --shard 0/4                # one deterministic slice; then `--merge`
    grpo profile --data SynthLabsAI/Big-Math-RL-Verified --preset problem_answer --prior bigmath --adaptive ...
    grpo profile ... --adaptive --prior-profile profiles/base.parquet   # another checkpoint's profile as the prior
    torchrun --nproc-per-node 4 -m pipelines.cli profile ...   # shard = RANK/WORLD_SIZE, one GPU per rank
    grpo profile ... --backend ray --ray-address 10.0.0.1:6379    # engine actors across a Ray cluster
    grpo profile ... --backend ray --adaptive --wave 8            # adaptive: 8 chunks decided at once

Prompts are rendered and tokenized exactly as training renders them (`grpo_data.generation.rollouts`); generation
stops at the chat template's end-of-turn token and EOS unless --stop-token-ids says otherwise.
A prompt that does not fit the engine's context (--max-model-len, else the model's) with --max-tokens
is left out and listed in OUT.rejects.jsonl with its reason, or profiled with the room left under
--overlong-prompts clip; the run goes on and says how many were left out. With --prior (adaptive mode)
another model's published difficulty joins the stopping decisions, discounted to --prior-weight
pseudo-samples and moved by the offset fitted to this model's own samples; rows hold own samples only.
--prior-profile PATH does the same with an earlier profile of another checkpoint or model (refused
when the same weights drew it: reuse that profile instead).
--backend ray runs the same plan on a Ray cluster (--ray-address, else a local one): one engine actor
per GPU (or per --ray-cpus-per-worker CPUs), chunks to whichever is free, a lost actor replaced and its
chunk run again (also when its engine dies inside a live process: a CUDA fault, vLLM's dead engine); the
profile equals the single-process one with the same --seed and --wave on engines of one build and device
type (a retried chunk on another GPU type or vLLM build may draw other samples).
A rerun resumes from OUT.parts unless its verifier (rules, settings, library versions) differs from
the one that judged them: then it stops, and --restart discards them.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time
from pathlib import Path

from grpo_data.curriculum.stats import DEFAULT_BAND, StoppingRule
from grpo_data.generation.context import OVERLONG_PROMPTS
from grpo_data.generation.engine_base import EngineSettings
from grpo_data.generation.prompting import ANSWER_FORMATS, SamplingConfig

HELP = "profile pass rates: k samples per problem through vLLM (or HF), judged by math-verify"

logger = logging.getLogger(__name__)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from grpo_data.profile_config import START_TIMEOUT_S, ProfileConfig
    from pipelines.commands.load import add_data_arguments, add_prior_profile_argument

    add_data_arguments(parser)
    parser.add_argument("--model", required=True, help="model folder (save_pretrained) or Hub name")
    parser.add_argument("--out", required=True, help="profile parquet to write (parts go to OUT.parts/)")
    parser.add_argument("--engine", default=None, help="vllm (default where it imports) or hf")
    parser.add_argument("--k", type=int, default=None, help=f"samples per problem (fixed mode; default {ProfileConfig.k})")
    parser.add_argument("--adaptive", action="store_true", help="sequential sampling toward the band")
    parser.add_argument("--band", default=None, help=f"target band lo,hi (default {DEFAULT_BAND[0]},{DEFAULT_BAND[1]})")
    parser.add_argument("--confidence", type=float, default=None,
                        help=f"adaptive decision confidence (default {StoppingRule.confidence})")
    parser.add_argument("--screen-k", type=int, default=None,
                        help=f"adaptive: first samples per problem (default {StoppingRule.screen_k})")
    parser.add_argument("--prior-screen-k", type=int, default=None,
                        help="adaptive with --prior/--prior-profile: first samples of a problem the prior, moved by "
                             "the offset fitted on the problems before it, already decides (at most --screen-k; "
                             f"--prior-screen-k equal to --screen-k screens every problem alike; default {StoppingRule.prior_screen_k})")
    parser.add_argument("--step-k", type=int, default=None,
                        help=f"adaptive: samples added per round (default {StoppingRule.step_k})")
    parser.add_argument("--max-k", type=int, default=None,
                        help=f"adaptive: most samples per problem (default {StoppingRule.max_k})")
    add_prior_profile_argument(parser)
    parser.add_argument("--fit-prior-weight", action="store_true",
                        help="adaptive with --prior/--prior-profile: learn the prior's discount from this model's own "
                             "samples as they come in (marginal likelihood), at most --prior-weight (required: the "
                             "cap, which grpo shards / train pass too); the profile records that its weight was fitted")
    parser.add_argument("--prior-groups", choices=("level", "none"), default=None,
                        help="adaptive: fit the empirical-Bayes prior per level (when the data has one) or once "
                        f"(default {ProfileConfig.prior_groups})")
    parser.add_argument("--answer-format", choices=ANSWER_FORMATS, default=None,
                        help="format whose rate is counted per problem (auto: the one the instruction or the "
                        f"problems' own prompts ask for; default {ProfileConfig.answer_format})")
    parser.add_argument("--temperature", type=float, default=None,
                        help=f"sampling temperature (default {SamplingConfig.temperature})")
    parser.add_argument("--top-p", type=float, default=None, help=f"nucleus mass kept (default {SamplingConfig.top_p})")
    parser.add_argument("--max-tokens", type=int, default=None,
                        help=f"completion budget (default {SamplingConfig.max_tokens})")
    parser.add_argument("--overlong-prompts", choices=OVERLONG_PROMPTS, default=None,
                        help="a prompt that cannot fit the context with --max-tokens: left out (skip, the default) "
                        "or profiled with the room left (clip; its row's max_tokens records the budget)")
    parser.add_argument("--min-clipped-tokens", type=int, default=None,
                        help="clip: the smallest budget worth profiling; less room leaves the prompt out "
                        f"(default {ProfileConfig.min_clipped_tokens})")
    parser.add_argument("--stop", action="append", default=[], metavar="TEXT",
                        help="stop string (repeatable); generation ends after the token that completes it")
    parser.add_argument("--stop-token-ids", default=None, metavar="ID,ID",
                        help="tokens that end generation (default: the chat template's end-of-turn token and EOS)")
    parser.add_argument("--system-prompt", default=None)
    parser.add_argument("--instruction-suffix", default=None, help="appended to the question, e.g. a \\boxed{} instruction")
    parser.add_argument("--chunk-size", type=int, default=None, help=f"problems per flushed chunk (default {ProfileConfig.chunk_size})")
    parser.add_argument("--seed", type=int, default=None, help=f"sampling seed (default {ProfileConfig.seed})")
    parser.add_argument("--wave", type=int, default=None,
                        help="adaptive: chunks whose decisions weigh the same history (every earlier wave's counts), "
                        "so that many run at once; the profile depends on it, not on the backend or worker count "
                        f"(default {ProfileConfig.wave})")
    ray = parser.add_argument_group("Ray backend (grpo_data.ray_profile)")
    ray.add_argument("--backend", choices=("local", "ray"), default="local",
                     help="local: this process (or torchrun's ranks); ray: engine actors on a Ray cluster")
    ray.add_argument("--ray-address", default=None,
                     help="head node host:port, or auto (RAY_ADDRESS); default: start a local cluster")
    ray.add_argument("--ray-workers", type=int, default=None, help="engine actors (default: as many as the cluster fits)")
    ray.add_argument("--ray-cpus-per-worker", type=float, default=None,
                     help="CPUs each actor holds (default 1 with GPUs, else 2)")
    ray.add_argument("--ray-gpus-per-worker", type=float, default=None,
                     help="GPUs each actor holds (default 1 when the cluster has GPUs, else 0)")
    ray.add_argument("--ray-start-timeout", type=float, default=None,
                     help="seconds an actor may take to be placed and load its engine before the run stops "
                          f"(default {START_TIMEOUT_S:.0f})")
    parser.add_argument("--shard", default=None, help="i/n: profile one slice (default from RANK/WORLD_SIZE)")
    parser.add_argument("--merge", action="store_true", help="only merge finished shard parts into --out")
    parser.add_argument("--restart", action="store_true",
                        help="discard OUT.parts (finished chunks, e.g. judged under other verifier rules) and profile "
                        "everything again; one run only: with shards, delete OUT.parts before starting them")
    parser.add_argument("--limit", type=int, default=None, help="profile only the first N problems (by id)")
    vllm = parser.add_argument_group("vLLM engine (defaults per device kind: eager on CPU, CUDA graphs on GPU)")
    vllm.add_argument("--gpu-memory-utilization", type=float, default=None, help=f"share of this rank's GPU (default {EngineSettings.gpu_memory_utilization})")
    vllm.add_argument("--max-model-len", type=int, default=None, help="longest prompt + completion")
    vllm.add_argument("--dtype", default=None, help="auto (default), bfloat16, float16, float32")
    vllm.add_argument("--enforce-eager", dest="enforce_eager", action="store_true", default=None,
                      help="no compilation or CUDA graphs (the CPU default)")
    vllm.add_argument("--no-enforce-eager", dest="enforce_eager", action="store_false",
                      help="compile / capture CUDA graphs (the GPU default; slow start on CPU)")
    vllm.add_argument("--max-num-seqs", type=int, default=None,
                      help="most sequences decoded together (default: vLLM's; small models gain from 1024)")
    parser.add_argument("--trust-remote-code", action="store_true")
    parser.add_argument("--workers", type=int, default=None, help="verifier processes")


def parse_shard(text: str | None) -> tuple[int, int]:
    if text is None:
        return int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))
    try:
        i, n = (int(x) for x in text.split("/"))
    except ValueError:
        raise ValueError(f"--shard must look like i/n (e.g. 0/4), got {text!r}") from None
    if not 0 <= i < n:
        raise ValueError(f"--shard {text}: need 0 <= i < n")
    return i, n


def options_from_args(args: argparse.Namespace) -> dict:
    """The flags as `grpo_data.profile_config.profile_options` names them (one set of defaults there)."""
    vllm = {k: getattr(args, k) for k in ("gpu_memory_utilization", "max_model_len", "dtype", "enforce_eager",
                                          "max_num_seqs") if getattr(args, k) is not None}
    stop_ids = None if args.stop_token_ids is None else [int(x) for x in args.stop_token_ids.split(",") if x]
    return {"engine": args.engine, "vllm": vllm, "k": args.k, "adaptive": args.adaptive, "band": args.band,
            "confidence": args.confidence, "screen_k": args.screen_k, "prior_screen_k": args.prior_screen_k,
            "step_k": args.step_k, "max_k": args.max_k,
            "prior_groups": args.prior_groups, "temperature": args.temperature, "top_p": args.top_p,
            "max_tokens": args.max_tokens, "stop": args.stop, "stop_token_ids": stop_ids,
            "system_prompt": args.system_prompt, "instruction_suffix": args.instruction_suffix,
            "chunk_size": args.chunk_size, "seed": args.seed, "answer_format": args.answer_format,
            "overlong_prompts": args.overlong_prompts, "min_clipped_tokens": args.min_clipped_tokens,
            "wave": args.wave, "fit_prior_weight": args.fit_prior_weight}


def run(args: argparse.Namespace) -> int:
    from grpo_data.generation.engines import (
        ENGINES,
        check_model_path,
        default_engine,
        engine_settings,
        pin_local_device,
    )
    from grpo_data.profile_config import check_fit_settings, profile_options, with_fitted_weight
    from grpo_data.profile_metadata import run_metadata
    from grpo_data.profile_parts import ResumeError, discard_parts, merge_parts
    from grpo_data.profiler import profile_problems
    from grpo_data.tables.loaders import DataError
    from grpo_data.verify.pool import PoolConfig, VerifierPool
    from pipelines.stages import read_problems

    try:
        shard = parse_shard(args.shard)
        cfg, choice = profile_options(options_from_args(args))
        from pipelines.commands.load import check_prior_args

        check_prior_args(args)  # a malformed spec or a weight without a prior stops here, before any data is read
        check_fit_settings(cfg.fit_prior_weight, cfg.rule is not None, bool(args.prior or args.prior_profile),
                           args.prior_weight)
        settings = engine_settings(choice["vllm"])
        engine_name = choice["engine"] or default_engine()
        if engine_name not in ENGINES:
            raise ValueError(f"unknown engine {engine_name!r}; choose one of: {', '.join(ENGINES)}")
        check_model_path(args.model)
    except (ValueError, FileNotFoundError) as exc:
        print(f"grpo profile: {exc}", file=sys.stderr)
        return 2
    if args.restart and shard[1] > 1:
        print(f"grpo profile: --restart with {shard[1]} shards would discard the others' parts as they write them; "
              f"delete {args.out}.parts before starting the shards", file=sys.stderr)
        return 2
    if args.merge:
        table = merge_parts(args.out, n_shards=shard[1] if args.shard else None)
        print(f"merged {table.height} profiled problems -> {args.out}")
        return 0
    try:
        problems = read_problems(args, loaded_to=Path(args.out).with_suffix(".problems.parquet"))
    except DataError as exc:
        print(f"grpo profile: {exc}", file=sys.stderr)
        return 2 if "no valid rows" not in str(exc) else 1
    if args.limit:
        problems = problems.sort("id").head(args.limit)
    from grpo_data.curriculum.prior_profile import REUSE, check_other_source
    from grpo_data.curriculum.priors import PriorError
    from grpo_data.profile_metadata import weights_hash
    from pipelines.commands.load import read_prior_from_args

    try:
        prior = with_fitted_weight(read_prior_from_args(args, problems), cfg)
        if prior is not None and prior.source.profile:  # the same weights' own counts are no prior: before the engine
            check_other_source(prior, weights_hash(args.model), f"--model {args.model}", REUSE)
    except PriorError as exc:
        print(f"grpo profile: {exc}", file=sys.stderr)
        return 2
    if prior is not None:
        print(prior.summary() + ("" if cfg.rule else " (not used: fixed k draws the same samples; see --adaptive)"))

    if args.backend == "ray":
        if args.restart:
            discard_parts(args.out)
        return _run_on_ray(args, problems, cfg, engine_name, settings, shard, prior)
    from grpo_data.generation.engines import make_engine

    pin_local_device()  # under torchrun: this rank's engine on this rank's GPU, not every rank's on GPU 0
    engine = make_engine(engine_name, args.model, seed=cfg.seed + shard[0], settings=settings,
                         trust_remote_code=args.trust_remote_code)
    pool_cfg = PoolConfig(workers=args.workers) if args.workers else PoolConfig()
    if args.restart:
        discard_parts(args.out)
    with VerifierPool(pool_cfg) as pool:
        meta = run_metadata(engine, cfg, args.data, pool_cfg.verdict_settings())
        try:
            stats = profile_problems(problems, engine, pool, cfg, args.out, shard=shard, metadata=meta, prior=prior)
        except ResumeError as exc:
            print(f"grpo profile: {exc}", file=sys.stderr)
            return 2
    print(f"profiled {stats['problems']} problems ({stats['skipped']} already done), "
          f"{stats['samples']} samples in {stats['seconds']:.1f}s")
    if "prior_offset" in stats:
        print(f"this model against the prior's: {stats['prior_offset']:+.2f} logits (fitted to its own samples)")
    if "prior_weight_fitted" in stats:
        print(f"the prior's discount fitted to this model's own samples: {stats['prior_weight_fitted']:g} "
              f"pseudo-samples per problem (at most {prior.weight:g})")
    _report_left_out(stats, args.out, getattr(engine, "context_length", None), cfg)
    return _finish(args, problems, shard)


def _report_left_out(stats: dict, out: str, context: int | None, cfg) -> None:
    if stats["left_out"] or stats["clipped"]:
        from grpo_data.tables.profile_table import rejects_file

        print(f"left out {stats['left_out']} problems whose prompt does not fit the context of "
              f"{context} tokens with max_tokens {cfg.sampling.max_tokens} (reasons in "
              f"{rejects_file(out)}); {stats['clipped']} profiled with a clipped budget")


def _run_on_ray(args, problems, cfg, engine_name: str, settings, shard, prior) -> int:
    """The profile on a Ray cluster's engine actors (`grpo_data.ray_profile`), then the same merge."""
    from grpo_data.profile_parts import ResumeError
    from grpo_data.ray_profile import (
        ClusterError,
        RayCluster,
        engine_worker_spec,
        profile_problems_ray,
        worker_env,
    )
    from grpo_data.verify.pool import PoolConfig

    pool_cfg = PoolConfig(workers=args.workers) if args.workers else PoolConfig(workers=1)
    try:
        with RayCluster(address=args.ray_address, env=worker_env()) as cluster:
            spec = engine_worker_spec(engine_name, args.model, cluster.resources(), pool_cfg, seed=cfg.seed,
                                      settings=settings, trust_remote_code=args.trust_remote_code,
                                      cpus=args.ray_cpus_per_worker, gpus=args.ray_gpus_per_worker)
            timeout = {"start_timeout_s": args.ray_start_timeout} if args.ray_start_timeout else {}
            stats = profile_problems_ray(problems, spec, cfg, args.out, cluster, workers=args.ray_workers, shard=shard,
                                         data_spec=args.data, prior=prior, **timeout)
    except (ClusterError, ResumeError, ValueError) as exc:
        print(f"grpo profile: {exc}", file=sys.stderr)
        return 2
    print(f"profiled {stats['problems']} problems ({stats['skipped']} already done), {stats['samples']} samples in "
          f"{stats['seconds']:.1f}s on {stats['workers']} Ray workers ({stats['replaced']} lost and replaced, "
          f"{stats['retried']} chunks run again)")
    _report_left_out(stats, args.out, stats.get("context_length"), cfg)
    return _finish(args, problems, shard)


def _finish(args, problems, shard) -> int:
    from grpo_data.profile_parts import merge_parts

    if shard[1] == 1:
        table = merge_parts(args.out, expected_ids=set(problems["id"].to_list()))
        print(f"{table.height} problems -> {args.out}")
    elif shard[0] == 0 and "WORLD_SIZE" in os.environ and args.shard is None:
        _merge_when_all_done(args.out, shard[1])
    else:
        print(f"shard {shard[0]}/{shard[1]} done; merge with: grpo profile --merge --shard 0/{shard[1]} --out {args.out} ...")
    return 0


def _merge_when_all_done(out: str, n: int, timeout_s: float = 3600) -> None:
    """Rank 0 under a launcher: wait for every rank's done marker, then merge."""
    from grpo_data.profile_parts import merge_parts, parts_dir

    deadline = time.monotonic() + timeout_s
    pdir = parts_dir(out)
    while time.monotonic() < deadline:
        if all((pdir / f"shard{i:04d}-of-{n:04d}.done").exists() for i in range(n)):
            table = merge_parts(out, n_shards=n)
            print(f"merged {table.height} problems from {n} ranks -> {out}")
            return
        time.sleep(2)
    raise TimeoutError(f"ranks did not all finish within {timeout_s}s; merge later with --merge")
