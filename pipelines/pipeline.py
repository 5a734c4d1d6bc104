"""YAML pipelines: data (world or a real dataset) -> model (warm start or given) -> profile -> shards +
card -> train -> evaluation, each stage reading the previous one's outputs by path and skipped when
its inputs are unchanged. With `profile: {for_training: false}` (the demo's) training comes before
the profile, which then measures the warm start for the report and the card and feeds no run.

    outputs = run_pipeline("pipelines/arith_demo.yaml", quick=False)

Stage outputs under the pipeline's `out` folder: world/ or data/ (train.parquet, heldout.parquet),
policy-warm/, profile.parquet (+ .json), shards/, train/, profile-after.parquet, summary.json,
summary.md and plots (*.png).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import logging
import shutil
import time
from dataclasses import replace
from pathlib import Path

import polars as pl
import yaml

from grpo_data.tables import io
from grpo_train.config_io import PRIOR_KEYS, deep_merge, profile_for_training
from pipelines.pipeline_priors import (
    check_priors,
    prior_fields,
    prior_identity,
    read_stage_prior,
    split_prior,
)
from pipelines.pipeline_summary import summarize, summary_table, warm_start_identity

logger = logging.getLogger(__name__)

SHARDS_KEYS = ("edges", "format", *PRIOR_KEYS)  # what a pipeline's `shards:` section takes


def load_spec(path: str | Path, quick: bool = False, seed: int | None = None) -> dict:
    """The pipeline YAML, with its `quick:` block merged when quick. A seed replaces every seed the
    pipeline has (world, warm start, profile, training) and writes under OUT-seedN: the demo's figures
    are a range over whole pipelines (a new world draws new test problems too), not over one stage."""
    spec = yaml.safe_load(Path(path).read_text())
    quick_block = spec.pop("quick", {}) or {}
    if quick:
        spec = deep_merge(spec, quick_block)
        spec["out"] = spec["out"].rstrip("/") + "-quick"
    if seed is not None:
        spec = deep_merge(spec, {"bootstrap": {"seed": seed}, "profile": {"seed": seed}, "train": {"run": {"seed": seed}},
                                 **({"world": {"seed": seed}} if "world" in spec else {})})
        spec["out"] = spec["out"].rstrip("/") + f"-seed{seed}"
    known = {"name", "out", "world", "data", "decontaminate", "model", "bootstrap", "profile", "shards", "card", "train"}
    unknown = sorted(set(spec) - known)
    if unknown:
        raise ValueError(f"{path}: unknown pipeline section(s) {unknown}; known: {sorted(known)}")
    if ("world" in spec) == ("data" in spec):
        raise ValueError(f"{path}: give exactly one of `world` (embedded default) or `data` (a dataset)")
    unknown = sorted(set(spec.get("shards") or {}) - set(SHARDS_KEYS))
    if unknown:
        raise ValueError(f"{path}: shards: unknown key(s) {unknown}; accepted: {', '.join(SHARDS_KEYS)}")
    if not profile_for_training(spec) and ((spec.get("train") or {}).get("data") or {}).get("profile"):
        raise ValueError(f"{path}: train.data.profile is set but profile.for_training is false (training reads no "
                         "profile): remove one of them; for_training: true trains from the pipeline's profile")
    check_priors(spec, path)
    return spec


def _stage(name: str):
    logger.info("=== stage: %s", name)
    print(f"\n=== {name}", flush=True)
    return time.monotonic()


def data_stage(spec: dict, out: Path) -> dict[str, Path]:
    """The world, or a dataset (`data.source`) or mixture (`data.sources`, see grpo_data/tables/mixture.py),
    split into train and held-out by id hash; reused when `data:` is unchanged."""
    from pipelines.stages import write_world

    if "world" in spec:
        return write_world(out / "world", **spec["world"])
    from grpo_data.tables.loaders import PROVENANCE_KEY, Source, load_sources, provenance, write_load_result
    from grpo_data.tables.mixture import build_mixture, parse_mixture
    from grpo_data.tables.presets import resolve_preset

    d = spec["data"]
    folder = out / "data"
    paths = {"train": folder / "train.parquet", "heldout": folder / "heldout.parquet", "config": folder / "data.json"}
    keep = prior_fields(spec)  # as `grpo load --prior` keeps them: the stages read the prior from each row's meta
    stamp = {**d, **({"prior_fields": list(keep)} if keep else {})}
    if paths["config"].exists() and json.loads(paths["config"].read_text()) == stamp and paths["train"].exists():
        return paths
    extra = {}
    if "sources" in d:
        mix = parse_mixture({k: d[k] for k in ("sources", "total", "seed") if k in d}, "data")
        mix = replace(mix, entries=tuple(replace(e, source=replace(e.source, preset=replace(e.source.preset, keep=keep)))
                                         for e in mix.entries))
        result, report = build_mixture(mix)
        extra["mixture"] = {"seed": d.get("seed", 0), "total": d.get("total"), "sources": report}
    else:
        preset = replace(resolve_preset(d.get("preset"), d.get("question_field"), d.get("answer_field")), keep=keep)
        result = load_sources([Source.of(d["source"], preset, d.get("split", "train"), d.get("hub_config"))])
    write_load_result(result, folder / "problems.parquet", **extra)
    frac = float(d.get("heldout_fraction", 0.02))
    # deterministic split by id hash
    table = result.table.with_columns((pl.col("id").hash(seed=0) % 10_000 < int(frac * 10_000)).alias("_held"))
    io.write_parquet(paths["train"], table.filter(~pl.col("_held")).drop("_held"),
                     metadata={PROVENANCE_KEY: json.dumps(provenance(result, **extra), default=str)})
    io.write_parquet(paths["heldout"], table.filter(pl.col("_held")).drop("_held"))
    io.write_json(paths["config"], stamp)
    return paths


def decontaminate_stage(spec: dict, paths: dict[str, Path]) -> dict[str, Path]:
    """With a `decontaminate:` section, the training split without rows that overlap the named
    evaluation sets (`heldout`, `val`, `test` name the pipeline's own splits); reused when unchanged."""
    from grpo_data.tables.decontam import DecontamConfig
    from pipelines.stages import decontaminate_file

    d = dict(spec["decontaminate"] or {})
    accepted = {"against", "preset", "question_field", "split", "config", *DecontamConfig.__dataclass_fields__}
    unknown = sorted(set(d) - accepted)
    if unknown:
        raise ValueError(f"decontaminate: unknown key(s) {unknown}; accepted: {', '.join(sorted(accepted))}")
    against = [str(paths[a]) if a in paths else str(a) for a in d.pop("against", ["heldout"])]
    options = {k: d.pop(k) for k in ("preset", "question_field", "split", "config") if k in d}
    cfg = DecontamConfig(**d)
    train = paths["train"]
    out = train.with_name(train.stem + ".decontaminated.parquet")
    key = {"train": hashlib.sha256(train.read_bytes()).hexdigest(), "against": against, "cfg": d, **options}
    stamp = out.with_suffix(".inputs.json")
    if out.exists() and stamp.exists() and json.loads(stamp.read_text()) == key:
        print(f"{out} is up to date")
    else:
        summary = decontaminate_file(train, against, out, cfg, options.get("preset"), options.get("split", "test"),
                                     options.get("config"), options.get("question_field"))
        print(f"decontaminated {train}: removed {summary['removed']} of {summary['checked']} "
              f"({summary['removed_exact']} by exact text) against {summary['eval_rows']} evaluation rows")
        io.write_json(stamp, key)
    return {**paths, "train": out}


BACKEND_KEYS = ("backend", "ray")  # how a profile section runs, not what it computes


def split_backend(pcfg: dict) -> tuple[dict, dict]:
    """A profile section's backend settings (`backend`: local, ray or auto; `ray`: address, workers,
    cpus_per_worker, gpus_per_worker) and the rest of it: the backend changes where the profile runs,
    not what it holds (the Ray profile equals the local one), so it is no part of `profile_key`."""
    return {k: pcfg[k] for k in BACKEND_KEYS if k in pcfg}, {k: v for k, v in pcfg.items() if k not in BACKEND_KEYS}


RAY_SETTINGS = ("address", "workers", "cpus_per_worker", "gpus_per_worker", "start_timeout_s")


def profile_backend(backend: dict, gpus: int, ray_installed: bool) -> tuple[str, dict]:
    """Where a pipeline profiles: ("ray", settings) or ("local", {}). `backend: auto` (the default) puts
    one engine on each GPU of a machine with more than one (a local Ray cluster, one actor per GPU),
    and runs in this process otherwise; "ray" uses the `ray:` settings (an address connects to a
    cluster); "local" always runs here, on one device."""
    name = backend.get("backend", "auto")
    ray = dict(backend.get("ray") or {})
    unknown = sorted(set(ray) - set(RAY_SETTINGS))
    if name not in ("auto", "local", "ray") or unknown:
        raise ValueError(f"profile: backend must be auto, local or ray (got {name!r}) and its ray: section takes "
                         f"{', '.join(RAY_SETTINGS)} (got unknown {unknown})")
    if name == "auto":
        if gpus <= 1:
            return "local", {}
        if not ray_installed:
            print(f"profile: {gpus} GPUs but Ray is not installed (pip install 'grpo-curriculum[ray]'): profiling on one")
            return "local", {}
        return "ray", {"workers": gpus, "gpus_per_worker": 1.0, **ray}
    if name == "ray" and not ray_installed:
        raise ValueError("profile: backend ray needs Ray: pip install 'grpo-curriculum[ray]'")
    return name, ray if name == "ray" else {}


def visible_gpus() -> int:
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def profile_key(model: str, train: Path, pcfg: dict, seed: int = 0, limit: int | None = None) -> dict:
    """What a profile depends on (stored beside it as OUT.inputs.json): the model and its weights,
    the data, the settings, and what judges the samples (rules hash, verdict fingerprint, pool
    settings, judging libraries' versions): a change to any starts the profile over."""
    from grpo_data.profile_config import profile_options
    from grpo_data.profile_metadata import JUDGING_PACKAGES, package_versions, weights_hash
    from grpo_data.verify.judge import rules_hash, verdict_fingerprint
    from grpo_data.verify.pool import PoolConfig

    settings, options = split_prior(split_backend(pcfg)[1])
    cfg, _ = profile_options({"seed": seed, **options})
    rows = pl.read_parquet(train).height
    pool = PoolConfig()  # what profile_stage's VerifierPool() runs with
    versions = package_versions()
    judged = {"rules_hash": rules_hash(), "fingerprint": verdict_fingerprint(pool.pred_tail_chars),
              **pool.verdict_settings(), **{name: versions.get(name) for name in JUDGING_PACKAGES}}
    key = {"model": model, "weights": weights_hash(model), "data": str(train), "rows": min(rows, limit or rows),
           "cfg": cfg.to_dict(), "judged": judged, **({"prior": prior_identity(settings)} if settings else {})}
    return json.loads(json.dumps(key))  # as it reads back from disk (tuples become lists)


def _profile_on_ray(model: str, problems: pl.DataFrame, cfg, choice: dict, ray: dict, out: Path, data: str,
                    prior) -> dict:
    """The profile stage on Ray actors (`grpo_data.ray_profile`): one per GPU by default."""
    from grpo_data.generation.engines import engine_settings
    from grpo_data.ray_profile import RayCluster, engine_worker_spec, profile_problems_ray, worker_env
    from grpo_data.verify.pool import PoolConfig

    with RayCluster(address=ray.get("address"), env=worker_env()) as cluster:
        spec = engine_worker_spec(choice["engine"] or "vllm", model, cluster.resources(), PoolConfig(workers=1),
                                  seed=cfg.seed, settings=engine_settings(choice["vllm"]),
                                  cpus=ray.get("cpus_per_worker"), gpus=ray.get("gpus_per_worker"))
        timeout = {"start_timeout_s": ray["start_timeout_s"]} if ray.get("start_timeout_s") else {}
        return profile_problems_ray(problems, spec, cfg, out, cluster, workers=ray.get("workers"), data_spec=data,
                                    prior=prior, **timeout)


def profile_section(spec: dict) -> tuple[dict, bool]:
    """The `profile:` section's engine settings and `for_training` (default true). True: the pool is
    profiled before training, which starts its scheduler from the profile (and is charged for it).
    False: training starts with no profile (its scheduler's online estimates only, as the pipeline's
    default sampler, uniform + DAPO, needs none) and the warm start's profile is taken after training,
    as measurement for the report's before/after panels and the card, charged to no run."""
    for_training = profile_for_training(spec)
    return {k: v for k, v in (spec.get("profile") or {}).items() if k != "for_training"}, for_training


def shards_key(profile: Path, shards_spec: dict) -> dict:
    """What a pipeline's shard set depends on (kept in its manifest): the profile's content (sha256,
    as training's key has it: a profile re-run under other settings, same rows and weights, rebuilds
    the set, whose card refuses a profile other than the one the set was built from) and the shards
    section."""
    from grpo_data.tables.shards import sha256_file

    return {"profile": sha256_file(Path(profile)), "layout": 2, **shards_spec}


def profile_stage(model: str, train: Path, pcfg: dict, out: Path, seed: int = 0, limit: int | None = None) -> Path:
    """Profile `train` with `model`; reuse a finished profile of the same model, data and settings."""
    from grpo_data.curriculum.prior_profile import REUSE, check_other_source
    from grpo_data.generation.engines import engine_settings, make_engine
    from grpo_data.profile_config import (
        PIPELINE_FIT_NAMES,
        check_fit_settings,
        profile_options,
        with_fitted_weight,
    )
    from grpo_data.profile_metadata import run_metadata, weights_hash
    from grpo_data.profile_parts import merge_parts, parts_dir
    from grpo_data.profiler import profile_problems
    from grpo_data.verify.pool import VerifierPool

    backend_spec, rest = split_backend(pcfg)
    settings, options = split_prior(rest)
    cfg, choice = profile_options({"seed": seed, **options})
    gpus = visible_gpus()
    if cfg.rule is not None and cfg.wave < 2 and backend_spec.get("backend", "auto") == "auto":
        gpus = min(gpus, 1)  # adaptive with wave 1 decides one chunk at a time: more engines would idle
        if visible_gpus() > 1:
            print(f"profile: adaptive with wave 1 runs on one GPU; set profile.wave to {visible_gpus()} or more to "
                  f"profile on all {visible_gpus()} (the wave is part of what the profile is)")
    backend, ray_settings = profile_backend(backend_spec, gpus, importlib.util.find_spec("ray") is not None)
    problems = pl.read_parquet(train)
    if limit:
        problems = problems.sort("id").head(limit)
    key = profile_key(model, train, pcfg, seed, limit)
    stamp = out.with_suffix(".inputs.json")
    if out.exists() and stamp.exists() and json.loads(stamp.read_text()) == key:
        print(f"profile {out} is up to date")
        return out
    check_fit_settings(cfg.fit_prior_weight, cfg.rule is not None, bool(settings.get("prior") or settings.get("prior_profile")),
                       settings.get("prior_weight"), PIPELINE_FIT_NAMES)
    prior = with_fitted_weight(read_stage_prior("profile", settings, problems, train), cfg)
    if prior is not None:  # the same weights' own counts are no prior: refused before the engine starts
        check_other_source(prior, weights_hash(model), f"model {model}", REUSE)
        print(prior.summary() + ("" if cfg.rule else " (not used: fixed k draws the same samples; see adaptive: true)"))
    if stamp.exists() and json.loads(stamp.read_text()) != key:  # other inputs: earlier parts are not ours
        shutil.rmtree(parts_dir(out), ignore_errors=True)
    io.write_json(stamp, key)
    if backend == "ray":
        stats = _profile_on_ray(model, problems, cfg, choice, ray_settings, out, str(train), prior)
    else:
        engine = make_engine(choice["engine"] or "vllm", model, seed=cfg.seed, settings=engine_settings(choice["vllm"]))
        with VerifierPool() as pool:
            meta = run_metadata(engine, cfg, str(train), pool.config.verdict_settings())
            stats = profile_problems(problems, engine, pool, cfg, out, metadata=meta, prior=prior)
        engine.close()
    merge_parts(out, expected_ids=set(problems["id"].to_list()))
    print(f"profiled {stats['problems']} problems ({stats['skipped']} resumed, {stats['left_out']} left out: prompt "
          f"does not fit the context), {stats['samples']} samples, {stats['seconds']:.0f}s"
          + (f"; this model against the prior's: {stats['prior_offset']:+.2f} logits" if "prior_offset" in stats else "")
          + (f"; the prior's fitted weight: {stats['prior_weight_fitted']:g}" if "prior_weight_fitted" in stats else ""))
    return out


def shards_stage(spec: dict, train: Path, profile: Path, out: Path) -> Path:
    """Shards of `train` under OUT/shards, bucketed on `profile` and the shards' prior (the `shards:`
    section's own, else the profile's: `stage_prior`), rebuilt when the profile's content, the section
    or the prior changed; and the card (OUT/card/NAME.md), which draws training's band. The profile's
    left-out problems stay out of the set, prior or not. Returns the card's path."""
    from grpo_data.curriculum.prior_profile import check_other_source
    from grpo_data.curriculum.priors import check_recorded_prior
    from grpo_data.tables.cards import write_card
    from grpo_data.tables.loaders import read_provenance
    from grpo_data.tables.profile_table import read_profile, read_rejects
    from grpo_data.tables.shards import DEFAULT_EDGES, ShardIntegrityError, read_manifest, write_shards
    from grpo_train.config import RolloutConfig, SchedulerSection
    from grpo_train.config_io import stage_prior

    shards_dir = out / "shards"
    prof_table, prof_meta = read_profile(profile)
    settings = stage_prior(spec.get("shards"), spec.get("profile"))
    _, s = split_prior(spec.get("shards") or {})
    shard_key = shards_key(profile, {**s, **({"prior": prior_identity(settings)} if settings else {})})
    try:
        current = read_manifest(shards_dir).get("pipeline_key")
    except ShardIntegrityError:  # no complete set yet
        current = None
    if current != shard_key:
        problems = pl.read_parquet(train)
        prior = read_stage_prior("shards", settings, problems, train)
        # a profile that stopped early on a prior is read with that prior only; one of its own weights is no prior
        prior = check_recorded_prior(prof_meta, prior, str(profile), "Set shards: {{{option}: {spec}, prior_weight: {weight}}}",
                             ("prior", "prior_profile"))
        check_other_source(prior, prof_meta.get("weights_hash"), f"the pipeline's profile {profile}",
                           "give it as the pipeline's model's profile instead (two profiles of one model do not "
                           "combine here)", profile)
        if prior is not None:
            print(prior.summary())
        write_shards(problems, prof_table, shards_dir, s.get("edges", DEFAULT_EDGES), s.get("format", "native"),
                     source=str(train), profile_meta=prof_meta, prior=prior,
                     left_out=set(read_rejects(profile)["id"].to_list()),
                     extra={"pipeline_key": shard_key, "data": read_provenance(train)})
    card_name = spec.get("card", {}).get("name", spec.get("name", "dataset"))
    # the card draws the band training will use and counts all-same groups at its group size
    train_spec = spec.get("train") or {}
    sched, rollout = train_spec.get("scheduler") or {}, train_spec.get("rollout") or {}
    return write_card(shards_dir, card_name, out / "card" / f"{card_name}.md",
                      band=(float(sched.get("lo", SchedulerSection.lo)), float(sched.get("hi", SchedulerSection.hi))),
                      group_size=int(rollout.get("group_size", RolloutConfig.group_size)), profile=profile)


def run_pipeline(path: str | Path, quick: bool = False, seed: int | None = None) -> dict:
    """Run every stage; returns the summary dict (also written to OUT/summary.json)."""
    from grpo_train.config_io import config_from_tree, dump_config, train_tree
    from pipelines.plots import write_plots
    from pipelines.report import write_report

    spec = load_spec(path, quick, seed)
    out = Path(spec["out"])
    out.mkdir(parents=True, exist_ok=True)
    timings = {}

    t = _stage("data")
    paths = data_stage(spec, out)
    if "decontaminate" in spec:
        paths = decontaminate_stage(spec, paths)
    timings["data"] = time.monotonic() - t

    t = _stage("model (warm start)")
    if spec.get("model"):
        model = spec["model"]
    else:
        from grpo_train.bootstrap import BootstrapConfig, bootstrap
        from grpo_train.config_io import build_section

        bcfg = build_section(BootstrapConfig, spec.get("bootstrap", {}) or {}, "bootstrap")
        if "sft" not in paths:
            raise ValueError(f"{path}: the warm start needs the world's SFT split; give `model:` for a dataset")
        model = str(bootstrap(pl.read_parquet(paths["sft"]), out / "policy-warm", bcfg))
    timings["model"] = time.monotonic() - t

    pcfg, for_training = profile_section(spec)
    profile, card = out / "profile.parquet", None
    if for_training:
        t = _stage("profile")
        profile = profile_stage(model, paths["train"], pcfg, profile)
        timings["profile"] = time.monotonic() - t

        t = _stage("shards + card")
        card = shards_stage(spec, paths["train"], profile, out)
        timings["shards"] = time.monotonic() - t

    t = _stage("train (scheduled GRPO)" if for_training else "train (GRPO, no profile)")
    # the pipeline's paths (pipeline_train_paths), the ones this run just wrote
    tree = deep_merge(train_tree(spec), {"model": str(model), "data": {"train": str(paths["train"]),
                      "heldout": str(paths["heldout"]), "profile": str(profile) if for_training else None},
                      "run": {"out": str(out / "train")}})
    cfg = config_from_tree(tree)
    run_dir = Path(cfg.run.out)
    from grpo_data.profile_metadata import weights_hash
    from grpo_train.metrics import latest_checkpoint, run_complete

    # resume only a run of the same inputs: a new warm start or profile under the same paths starts over
    key = {"config": dump_config(cfg), "weights": weights_hash(str(model)),
           "profile": hashlib.sha256(Path(profile).read_bytes()).hexdigest() if for_training else None}
    stamp = run_dir / "pipeline-key.json"
    if run_dir.exists() and (not stamp.exists() or json.loads(stamp.read_text()) != key):
        print(f"inputs of {run_dir} changed since it was trained: training starts over")
        shutil.rmtree(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    io.write_json(stamp, key)
    if run_complete(latest_checkpoint(run_dir), cfg.run):
        print(f"training in {run_dir} is complete")
    elif cfg.run.ranks > 1:
        launch_training(cfg, out / "train-config.yaml")
    else:
        from grpo_train.trainer import train

        train(cfg, resume=True)
    timings["train"] = time.monotonic() - t

    t = _stage("evaluate")
    if not for_training:  # measurement for the report and the card, after training, which never read it
        profile = profile_stage(model, paths["train"], pcfg, profile)
        card = shards_stage(spec, paths["train"], profile, out)
    final = latest_checkpoint(run_dir) / "hf"
    after = profile_stage(str(final), paths["train"], pcfg, out / "profile-after.parquet")
    summary = summarize(run_dir, profile, after, paths["train"], (cfg.scheduler.lo, cfg.scheduler.hi),
                        profile_charged=for_training)
    summary["timings_s"] = timings
    summary["warm_start"] = warm_start_identity(model)
    summary["card"] = str(card)
    summary["plots"] = [str(p) for p in write_plots(run_dir, profile, after, out)]
    summary["report"] = str(write_report(run_dir, profile, after))
    io.write_json(out / "summary.json", summary)
    io.write_text(out / "summary.md", summary_table(summary))
    timings["evaluate"] = time.monotonic() - t
    print(summary_table(summary))
    return summary


def launch_command(ranks: int, config: Path) -> list[str]:
    """The documented multi-rank launch: DeepSpeed's launcher running the `grpo` module on each rank."""
    import sys

    launcher = str(Path(sys.executable).with_name("deepspeed"))
    return [launcher, "--num_gpus", str(ranks), "--module", "pipelines.cli", "train", "--config", str(config),
            "--resume"]


def launch_training(cfg, config_path: Path) -> None:
    """Train in cfg.run.ranks processes through the launcher; the resolved config goes by file."""
    import subprocess

    from grpo_train.config_io import dump_config

    io.write_text(config_path, dump_config(cfg))
    cmd = launch_command(cfg.run.ranks, config_path)
    print("launching:", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True)
