"""A profile on disk: the finished chunks under `NAME.parquet.parts/` (`parts_dir`, `finished_parts`),
the refusal to resume parts drawn or judged otherwise (`check_resumable`, ResumeError), the left-out
problems of every shard (`left_out_parts`), and the merge of every shard's parts into the profile with
its metadata, format and verdict summaries and left-out problems (`merge_parts`). Reading a profile
back is `grpo_data.tables.profile_table`'s (`read_profile`, `read_rejects`)."""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

import polars as pl

from grpo_data.generation.context import LEFT_OUT_SCHEMA, count_reasons
from grpo_data.profile_chunks import UNREAD_EXAMPLES
from grpo_data.profile_metadata import drawing, judging
from grpo_data.tables import io, profile_table
from grpo_data.tables.exports import METADATA_KEY
from grpo_data.verify.verdict import REASONS

logger = logging.getLogger("grpo_data.profiler")  # the profiler's log, as before the split

FORMAT_WARN_BELOW = 0.5  # a run whose completions carry the requested format less often than this warns


def parts_dir(out: str | Path) -> Path:
    return Path(str(out) + ".parts")


class ResumeError(RuntimeError):
    """Parts of a profile judged under other rules than this run's: resuming would mix them."""


def check_resumable(out: str | Path, metadata: dict) -> None:
    """Refuse to add rows to parts under `out`.parts that were drawn or judged otherwise (the
    metadata.json an earlier run left there): counts judged by two rule sets under one rules hash
    would be no one's, and rows drawn under other settings would make a resumed profile differ from an
    uninterrupted one. ResumeError names the profile, what changed and how to start over."""
    old_file = parts_dir(out) / "metadata.json"
    if not old_file.exists() or finished_parts(out).height == 0:
        return
    old_meta = json.loads(old_file.read_text())
    metadata = json.loads(json.dumps(metadata, default=str))  # as it reads back from disk (tuples become lists)
    for view, what, how in [(judging, "judged under other rules", "the verifier settings and libraries that judged them"),
                            (drawing, "drawn under other settings", "the model and profile settings that drew them")]:
        old, new = view(old_meta), view(metadata)
        changed = [f"{name}: {old.get(name)!r} -> {new.get(name)!r}" for name in sorted(set(old) | set(new))
                   if old.get(name) != new.get(name)]
        if changed:
            raise ResumeError(f"{out}: its finished parts ({parts_dir(out)}) were {what} than this run's "
                              f"({'; '.join(changed)}); rerun with --restart to discard them and profile everything "
                              f"again, or resume with {how}")


def discard_parts(out: str | Path) -> None:
    """Remove `out`.parts: every finished chunk of every shard (`grpo profile --restart`)."""
    shutil.rmtree(parts_dir(out), ignore_errors=True)


def left_out_parts(out: str | Path) -> pl.DataFrame:
    """LEFT_OUT_SCHEMA rows of every shard's left-out part under `out`.parts (each shard's run writes
    its own, so a rerun replaces its last one)."""
    files = sorted(parts_dir(out).glob("*.left_out.jsonl")) if parts_dir(out).exists() else []
    frames = [pl.read_ndjson(f, schema=LEFT_OUT_SCHEMA) for f in files if f.stat().st_size]
    return pl.concat(frames) if frames else pl.DataFrame(schema=LEFT_OUT_SCHEMA)


def finished_parts(out: str | Path) -> pl.DataFrame:
    """id, n_correct, k of every problem already written under `out`.parts."""
    files = sorted(parts_dir(out).glob("*.parquet")) if parts_dir(out).exists() else []
    if not files:
        return pl.DataFrame(schema={"id": pl.String, "n_correct": pl.Int64, "k": pl.Int64})
    return pl.concat([pl.read_parquet(f, columns=["id", "n_correct", "k"]) for f in files])


def warn_format(rate: float | None, fmt: str | None, whose: str, unread: list[str] = ()) -> None:
    """Warn when few completions carry the requested format, with a few final sentences the verifier
    read no answer from: the user can tell the model's misses from the prompt's or the extractor's."""
    if rate is not None and rate < FORMAT_WARN_BELOW:
        shown = list(dict.fromkeys(unread))[:UNREAD_EXAMPLES]
        logger.warning("only %.0f%% of %s completions gave the answer in the requested %s format: pass rates "
                       "measure formatting as much as difficulty; check the instruction, the chat template and "
                       "max_tokens before trusting them%s", 100 * rate, whose, fmt,
                       "".join(f"\n  unread final sentence: {s}" for s in shown))


def verdict_totals(table: pl.DataFrame) -> dict[str, int]:
    """Completions per verifier reason over a profile table: `no_answer` (nothing read) apart from
    `wrong` (read, and not the gold)."""
    return {r: int(table[f"n_{r}"].sum()) for r in REASONS if f"n_{r}" in table.columns}


def format_summary(table: pl.DataFrame) -> dict:
    """{"requested", "rate", "problems_below_half"} of a profile table: requested "boxed" when its rows
    counted a format (n_formatted not null), rate None when none was requested."""
    if "n_formatted" not in table.columns or table["n_formatted"].null_count() == table.height:
        return {"requested": None, "rate": None}
    done = table.filter(pl.col("n_formatted").is_not_null())
    return {"requested": "boxed", "rate": float(done["n_formatted"].sum() / max(1, done["k"].sum())),
            "problems_below_half": int((done["n_formatted"] < done["k"] / 2).sum())}


def merge_parts(out: str | Path, expected_ids: set[str] | None = None, n_shards: int | None = None) -> pl.DataFrame:
    """Combine every part under `out`.parts into `out` (+ sidecar json, + the left-out problems in
    `rejects_file(out)`); refuses duplicates or gaps (a left-out problem is no gap)."""
    pdir = parts_dir(out)
    files = sorted(pdir.glob("*.parquet"))
    if not files:
        raise FileNotFoundError(f"{pdir}: no profile parts to merge")
    if n_shards is not None:
        missing = [i for i in range(n_shards) if not (pdir / f"shard{i:04d}-of-{n_shards:04d}.done").exists()]
        if missing:
            raise RuntimeError(f"{pdir}: shards {missing} of {n_shards} have not finished; rerun them first")
    table = pl.concat([pl.read_parquet(f) for f in files], how="diagonal_relaxed").sort("id")
    dup = table.filter(pl.col("id").is_duplicated())["id"].unique().to_list()
    if dup:
        raise RuntimeError(f"{pdir}: ids profiled twice: {dup[:5]} (parts were mixed from different runs?)")
    left = left_out_parts(out)
    if expected_ids is not None:
        gap = expected_ids - set(table["id"].to_list()) - set(left["id"].to_list())
        if gap:
            raise RuntimeError(f"{pdir}: {len(gap)} problems not profiled yet (e.g. {sorted(gap)[:3]}); rerun to finish")
    meta_file = pdir / "metadata.json"
    meta = json.loads(meta_file.read_text()) if meta_file.exists() else {}
    meta["rows"] = table.height
    meta["samples"] = int(table["k"].sum())
    meta["format"] = format_summary(table)
    meta["verdicts"] = verdict_totals(table)
    budget = (meta.get("config") or {}).get("sampling", {}).get("max_tokens")
    meta["left_out"] = count_reasons(left)
    meta["clipped"] = (int((table["max_tokens"] < budget).sum()) if budget is not None and "max_tokens" in table.columns
                       else 0)
    if left.height:
        logger.warning("%d problems were left out of the profile, their prompt does not fit the context (%s): see %s",
                       left.height, ", ".join(f"{r}: {n}" for r, n in meta["left_out"].items()), profile_table.rejects_file(out))
    warn_format(meta["format"]["rate"], meta["format"]["requested"], "the profile's")
    io.write_parquet(out, table, metadata={METADATA_KEY: json.dumps(meta, default=str)})
    io.write_json(Path(out).with_suffix(".json"), meta)
    io.write_ndjson(profile_table.rejects_file(out), left.sort("id"))
    return table
