"""Stage functions shared by the CLI subcommands and the YAML pipelines: each reads the previous
stage's outputs by path and writes its own, skipping work whose inputs have not changed."""

from __future__ import annotations

import json
import logging
from pathlib import Path

from grpo_data.tables import io

logger = logging.getLogger(__name__)


def write_world(out: str | Path, seed: int = 0, scale: float = 1.0, preset: str = "default") -> dict[str, Path]:
    """Generate the world into `out`/{sft,train,val,test}.parquet (and the preset's extra splits:
    the frontier world's transfer and reference) + world.json; reuse it when unchanged. `scale`
    multiplies the RL pool and the evaluation splits (not the SFT data). The returned paths name the
    test split `heldout` too: it is what training evaluates on."""
    from grpo_data.tables.world import generate, world_config

    out = Path(out)
    cfg = world_config(preset, seed).scaled(scale)
    spec = {**cfg.to_dict(), "scale": scale, **({"preset": preset} if preset != "default" else {})}
    paths = {split: out / f"{split}.parquet" for split in cfg.splits}
    paths["config"] = out / "world.json"
    if paths["config"].exists() and json.loads(paths["config"].read_text()) == spec and all(p.exists() for p in paths.values()):
        logger.info("world at %s is up to date", out)
        return {**paths, "heldout": paths["test"]}
    for split, table in generate(cfg).items():
        io.write_parquet(paths[split], table)
    io.write_json(paths["config"], spec)
    return {**paths, "heldout": paths["test"]}


def load_from_args(args):
    """The load result the data flags of `grpo load` (or profile/train's --data flags) ask for."""
    from dataclasses import replace

    from grpo_data.curriculum.priors import keep_patterns
    from grpo_data.tables.loaders import LoadLimits, load_problems
    from grpo_data.tables.presets import resolve_preset

    preset = resolve_preset(args.preset, args.question_field, args.answer_field, args.id_field, args.level_field)
    preset = replace(preset, keep=keep_patterns(getattr(args, "prior", None)))
    given = {"max_prompt_chars": args.max_prompt_chars, "max_prompt_tokens": args.max_prompt_tokens,
             "tokenizer": args.tokenizer}
    if getattr(args, "context_length", None) is not None:  # `grpo load` only; profile and train measure their own
        given.update(context_length=args.context_length, max_tokens=args.max_tokens,
                     overlong_prompts=args.overlong_prompts, min_clipped_tokens=args.min_clipped_tokens)
    limits = LoadLimits(**{name: value for name, value in given.items() if value is not None})  # unset: its default
    return load_problems(args.data, preset, limits, split=args.split, hub_config=args.hub_config)


def read_problems(args, loaded_to: Path | None = None):
    """The canonical problem table named by --data: read directly when it already is one (no
    --preset given), else loaded through the loaders with the data flags, and then written to
    `loaded_to` with its rejects beside it. Raises DataError when no valid row remains."""
    import polars as pl

    from grpo_data.tables.loaders import DataError, write_load_result
    from grpo_data.tables.problems import SCHEMA, validate_table

    path = Path(args.data)
    if args.preset is None and not args.question_field and path.suffix == ".parquet" and path.is_file():
        columns = pl.read_parquet_schema(path)
        if all(c in columns for c in SCHEMA):
            table = pl.read_parquet(path).select(list(SCHEMA))
            validate_table(table, str(path))
            return table
    if args.preset is None and not args.question_field:
        args.preset = "canonical"
    result = load_from_args(args)
    if loaded_to is not None:
        write_load_result(result, loaded_to)
    if result.table.height == 0:
        raise DataError(f"{args.data}: no valid rows\n{result.summary()}")
    logger.info("%s", result.summary())
    return result.table


def warm_policy(world_dir: str | Path = "runs/world", out: str | Path = "runs/policy-warm", seed: int = 0,
                steps: int | None = None, progress: bool = True) -> Path:
    """World + warm-started tiny policy, each reused when its inputs are unchanged."""
    import dataclasses

    import polars as pl

    from grpo_train.bootstrap import BootstrapConfig, bootstrap

    paths = write_world(world_dir, seed=seed)
    cfg = BootstrapConfig(seed=seed)
    if steps:
        cfg = dataclasses.replace(cfg, steps=steps)
    return bootstrap(pl.read_parquet(paths["sft"]), out, cfg, progress=progress)


def eval_rows(spec: str, preset: str | None, split: str = "test", config: str | None = None,
              question_field: str | None = None):
    """Evaluation rows (eval_file, eval_row, eval_id, text) of a canonical table (recognized by its
    columns, whatever the preset) or, with `preset` or `question_field`, of any dataset the loaders read."""
    import polars as pl

    from grpo_data.tables.loaders import DataError, read_eval_rows
    from grpo_data.tables.presets import resolve_preset
    from grpo_data.tables.problems import SCHEMA

    path = Path(spec)
    if path.suffix == ".parquet" and path.is_file() and all(c in pl.read_parquet_schema(path) for c in SCHEMA):
        return read_eval_rows(spec, resolve_preset("canonical"))
    if preset is None and question_field is None:
        raise DataError(f"{spec}: not a canonical problem table; name its shape with --against-preset "
                        "(e.g. problem_answer, math, gsm8k) or its question field with --against-question-field")
    fields = resolve_preset(preset, question_field, None if preset else question_field)
    return read_eval_rows(spec, fields, split, config)


def decontaminate_file(data: str | Path, against: list[str], out: str | Path, cfg, preset: str | None = None,
                       split: str = "test", config: str | None = None, question_field: str | None = None) -> dict:
    """Decontaminate the canonical table at `data` against evaluation sets; write the kept rows to
    `out` (provenance carried on, with the decontamination summary) and the removed ones to its
    rejects file. Returns the summary."""
    import polars as pl

    from grpo_data.tables.decontam import decontaminate, removed_as_rejects
    from grpo_data.tables.loaders import PROVENANCE_KEY, read_provenance, rejects_path
    from grpo_data.tables.problems import SCHEMA, validate_table

    if Path(out).resolve() == Path(data).resolve():
        raise ValueError(f"{out}: write the decontaminated table to another file than its input (the input's "
                         "rejects file would be overwritten)")
    table = pl.read_parquet(data)
    validate_table(table, str(data))
    evals = pl.concat([eval_rows(a, preset, split, config, question_field) for a in against])
    result = decontaminate(table.select(list(SCHEMA)), evals, cfg)
    summary = {**result.summary(), "against": list(against)}
    prov = read_provenance(data)
    rejected = dict(prov.get("rejected", {}))
    if summary["removed"]:
        rejected["contaminated"] = rejected.get("contaminated", 0) + summary["removed"]
    prov.update(rejected=rejected, rows=result.kept.height, decontamination=summary)
    io.write_parquet(out, result.kept, metadata={PROVENANCE_KEY: json.dumps(prov, default=str)})
    io.write_ndjson(rejects_path(out), removed_as_rejects(result.removed, str(data), cfg.ngram))
    return summary
