"""Load any math dataset into the canonical problem table (`grpo_data.tables.problems`).

Sources: local `.jsonl`/`.json`/`.parquet`/`.csv` files, folders of them, folders written by
`datasets.save_to_disk` (one, or one per config), and Hub dataset names with one, several or all
configs and splits (`grpo_data.tables.sources`, `grpo_data.tables.readers`). Several sources can load together
(`load_sources`): duplicates are found across all of them, the earlier source winning.

Columnar: records are read into polars frames and every check below is a column expression; the
only per-row Python is sha1 for ids and the preset's answer extraction when it has no vectorized
form. Gold answers are checked once per distinct string: plain numbers, simple fractions, choice
letters and words without math-verify (`grpo_data.verify.answers`), the rest in the verifier pool's
processes, in parallel.

Presets (`grpo_data.tables.presets`) name the common shapes; `question_field` / `answer_field` / `id_field` /
`level_field` override or replace them. Dotted fields reach into nested records
(`reward_model.ground_truth`).

Bad input never stops the good rows: each rejected row is kept with its file, row number, reason
and the raw record, so `write_load_result` can write it to a rejects file. Reasons:

    malformed_row           a jsonl line that is not JSON, or a record that is not an object
                            (its raw text is the line itself)
    missing_question / empty_question / non_string_question
    missing_answer / empty_answer / non_string_answer
    no_extractable_answer   the preset's extraction found nothing (no `####`, no `\\boxed{}`)
    prompt_too_long         over max_prompt_chars (or max_prompt_tokens with a tokenizer)
    prompt_over_context / budget_over_context
                            with a tokenizer and a context length: the prompt rendered with the
                            tokenizer's chat template cannot fit the context with max_tokens
                            (`grpo_data.generation.context`; the check profiling and training make again with
                            their prompt settings, which may add a system prompt or an instruction)
    unparseable_gold        math-verify extracts no answer from the gold string
    duplicate_id            an explicit id that an earlier row with a valid gold also has
    duplicate               (of the rest) same normalized prompt and answer as an earlier row
    conflicting_duplicate   (of the rest) same normalized prompt as an earlier row, another answer

Numbers in an answer field (int/float, e.g. a CSV or parquet column of ints) are converted to
strings; booleans, lists and objects are `non_string_answer`.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from grpo_data.generation.context import MIN_CLIPPED_TOKENS, ContextPolicy
from grpo_data.generation.prompting import SamplingConfig
from grpo_data.tables import io
from grpo_data.tables.presets import VECTORIZED, Preset
from grpo_data.tables.problems import SCHEMA, normalize_expr, problem_ids, problem_text_expr, prompt_text_expr
from grpo_data.tables.readers import DataError, Fields, Part
from grpo_data.tables.sources import parse_configs, parse_splits, read_parts
from grpo_data.verify.answers import answer_kind

logger = logging.getLogger(__name__)


# ---------------------------------------------------------------- limits and sources


@dataclass(frozen=True)
class LoadLimits:
    """Row-level limits. max_prompt_tokens and context_length need `tokenizer` (a path or Hub name).

    context_length: the engine context the problems will be generated in; a prompt (rendered with the
                    tokenizer's chat template) that cannot fit it with max_tokens is rejected, as
                    profiling and training would leave it out (overlong_prompts "clip" keeps those
                    that leave at least min_clipped_tokens).
    """

    max_prompt_chars: int = 20_000
    max_prompt_tokens: int | None = None
    tokenizer: str | None = None
    context_length: int | None = None
    max_tokens: int = SamplingConfig.max_tokens
    overlong_prompts: str = ContextPolicy.policy
    min_clipped_tokens: int = MIN_CLIPPED_TOKENS


@dataclass(frozen=True)
class Source:
    """One input of a load: where (`spec`), its shape (`preset`), which splits and configs."""

    spec: str
    preset: Preset
    splits: tuple[str, ...] = ("train",)
    configs: tuple[str, ...] | str | None = None  # None, "all" or names

    @staticmethod
    def of(spec: str, preset: Preset, split=None, hub_config=None) -> Source:
        configs = parse_configs(hub_config)
        return Source(spec, preset, tuple(parse_splits(split)), configs if configs in (None, "all") else tuple(configs))


def fields_of(preset: Preset) -> Fields:
    return Fields(preset.question_field, preset.answer_field, preset.id_field, preset.level_field, preset.source_field,
                  preset.keep)


# ---------------------------------------------------------------- records -> canonical rows (columnar)


def _extract_answers(answer: pl.Series, preset: Preset) -> pl.Series:
    if preset.extract_answer in VECTORIZED:
        return answer.to_frame("a").select(VECTORIZED[preset.extract_answer](pl.col("a")))["a"]
    fn = preset.extract_answer
    return pl.Series([None if a is None else fn(a) for a in answer], dtype=pl.String)


def _first_reason(*pairs: tuple[pl.Expr, str, pl.Expr | str]) -> list[pl.Expr]:
    """Reason and detail columns: the existing ones, else the first (condition, reason, detail) that holds."""
    reason, detail = pl.col("_reason"), pl.col("_detail")
    for cond, why, what in reversed(pairs):
        what = pl.lit(what) if isinstance(what, str) else what
        reason = pl.when(pl.col("_reason").is_null() & cond).then(pl.lit(why)).otherwise(reason)
        detail = pl.when(pl.col("_reason").is_null() & cond).then(what).otherwise(detail)
    return [reason.alias("_reason"), detail.alias("_detail")]


def canonical_chunks(part: Part, preset: Preset, limits: LoadLimits, count_tokens=None) -> Iterator[pl.DataFrame]:
    """`canonicalize` of each chunk of a part."""
    for frame in part.chunks():
        yield canonicalize(frame, part.label, part.source, preset, limits, count_tokens)


def canonicalize(df: pl.DataFrame, label: str, source: str, preset: Preset, limits: LoadLimits,
                 count_tokens=None) -> pl.DataFrame:
    """Canonical columns plus `_label`, `_row`, `_reason`, `_detail`, `_explicit` and `_k1`/`_k2`
    for a chunk of a part's records. `_k1`/`_k2` are two 64-bit hashes of the normalized prompt text
    (`problems.prompt_text`, which ids are the sha1 of): duplicates are judged on them, so the text
    itself, as long as the prompt, is not kept for the whole load."""
    extracted = (_extract_answers(df["a_text"], preset) if preset.extract_answer is not None else df["a_text"])
    df = df.with_columns(extracted.alias("_extracted")).drop("a_text")  # the worked solutions are done with
    prompt = pl.when(pl.col("q_msgs").is_not_null()).then(pl.col("q_msgs")).otherwise(
        pl.concat_list(pl.struct(pl.lit("user").alias("role"), pl.col("q_text").alias("content"))))
    # a plain question's key is computed on the string; only message lists go through list.eval
    df = df.with_columns(prompt.alias("prompt"), normalize_expr(pl.col("q_text")).alias("_norm_q")).with_columns(
        pl.coalesce(pl.concat_str(pl.lit("user: "), pl.col("_norm_q")),
                    prompt_text_expr(pl.col("q_msgs"))).alias("_key"),
        pl.coalesce(pl.col("_norm_q") != "", pl.col("q_msgs").list.eval(
            normalize_expr(pl.element().struct.field("content")) != "").list.any()).alias("_has_text"),
        pl.col("_extracted").str.strip_chars().alias("answer"),
    )
    # an empty question is named before a missing answer, as the record path did
    answer_reason = pl.col("_reason").is_in(["missing_answer", "non_string_answer"])
    df = df.with_columns(pl.when(answer_reason & ~pl.col("_has_text")).then(None).otherwise(pl.col("_reason")).alias("_reason"))
    df = df.with_columns(*_first_reason(
        (~pl.col("_has_text"), "empty_question", ""),
        (pl.col("_extracted").is_null(), "no_extractable_answer", f"no answer found in {preset.answer_field!r} by the preset"),
        (pl.col("answer") == "", "empty_answer", ""),
        (pl.col("_key").str.len_chars() > limits.max_prompt_chars, "prompt_too_long",
         pl.format("{} chars > {}", pl.col("_key").str.len_chars(), pl.lit(limits.max_prompt_chars))),
    ))
    if count_tokens is not None and limits.max_prompt_tokens is not None:
        valid = df["_reason"].is_null()
        counts = [count_tokens(t) if ok else 0 for t, ok in zip(df["_key"], valid, strict=True)]
        df = df.with_columns(pl.Series("_tokens", counts, dtype=pl.Int64)).with_columns(*_first_reason(
            (pl.col("_tokens") > limits.max_prompt_tokens, "prompt_too_long",
             pl.format("{} tokens > {}", pl.col("_tokens"), pl.lit(limits.max_prompt_tokens)))))
    quoted = json.dumps(label, ensure_ascii=False)
    return df.with_columns(
        pl.col("id_raw").is_not_null().alias("_explicit"),
        pl.coalesce(pl.col("id_raw"), problem_ids(df["_key"])).alias("id"),
        pl.coalesce(pl.col("src"), pl.lit(source)).alias("source"),
        pl.concat_str(pl.lit('{"file": ' + quoted + ', "row": '), pl.col("_row").cast(pl.String),
                      pl.when(pl.col("_keep").is_not_null()).then(pl.concat_str(pl.lit(', "fields": '), pl.col("_keep")))
                      .otherwise(pl.lit("")), pl.lit("}")).alias("meta"),
        pl.lit(label).alias("_label"),
        pl.col("_key").hash(seed=1).alias("_k1"), pl.col("_key").hash(seed=2).alias("_k2"),
    ).select("_label", "_row", "_reason", "_detail", "_explicit", "_k1", "_k2", *SCHEMA)


# ---------------------------------------------------------------- global checks


def check_golds(answers: pl.Series, verifier) -> dict[str, str]:
    """{gold: why} for the distinct golds no judge can use. Numbers, fractions, choices and words are
    judged without math-verify (`answer_kind`); only the rest go to the verifier pool."""
    distinct = answers.drop_nulls().unique()
    math_golds = sorted(g for g in distinct.to_list() if answer_kind(g) == "math")
    if not math_golds:
        return {}
    if verifier is None:
        from grpo_data.verify.pool import VerifierPool

        with VerifierPool() as pool:
            checks = pool.check_golds(math_golds)
    else:
        checks = verifier.check_golds(math_golds)
    return {g: v.detail for g, v in zip(math_golds, checks, strict=True) if v.reason != "ok"}


def _duplicates_in_order(df: pl.DataFrame) -> pl.DataFrame:
    """mark_duplicates row by row, for tables whose explicit ids collide (the order of checks matters)."""
    live = df.select(pl.col("_reason").is_null(), "_explicit", "id", pl.struct("_k1", "_k2").alias("_key"), "answer",
                     normalize_expr(pl.col("answer")).alias("_norm"))
    reasons, details = df["_reason"].to_list(), df["_detail"].to_list()
    seen_prompt: dict[tuple[int, int], tuple[str, str]] = {}
    seen_id: set[str] = set()
    for i, (ok, explicit, rid, key, answer, norm) in enumerate(live.iter_rows()):
        if not ok:
            continue
        key = (key["_k1"], key["_k2"])
        if explicit and rid in seen_id:
            reasons[i], details[i] = "duplicate_id", f"id '{rid}' seen before"
        elif key in seen_prompt:
            first_answer, first_norm = seen_prompt[key]
            if first_norm == norm:
                reasons[i], details[i] = "duplicate", "same prompt and answer as an earlier row"
            else:
                reasons[i], details[i] = "conflicting_duplicate", f"earlier row has answer '{first_answer}'"
        else:
            seen_prompt[key] = (answer, norm)
            seen_id.add(rid)
    return df.with_columns(pl.Series("_reason", reasons, dtype=pl.String), pl.Series("_detail", details, dtype=pl.String))


def mark_duplicates(df: pl.DataFrame) -> pl.DataFrame:
    """Set duplicate_id / duplicate / conflicting_duplicate on rows that so far have no reason, in
    order: a row is a duplicate_id when an earlier kept row has its explicit id, else a duplicate when
    an earlier kept row has the same normalized prompt (`_k1`, `_k2`) and answer, a conflicting_duplicate
    when the answer differs (the detail names the earlier answer).

    Without colliding explicit ids (the usual case) this is column work; with them, a loop over the
    rows, because whether a row is kept then depends on which earlier rows were."""
    kept = df.filter(pl.col("_reason").is_null())
    if (kept["_explicit"] & kept["id"].is_duplicated()).any():  # with another explicit id, or a hashed one
        return _duplicates_in_order(df)
    df = df.with_columns(pl.struct("_k1", "_k2").is_first_distinct().over(pl.col("_reason").is_null()).alias("_first"))
    firsts = df.filter(pl.col("_reason").is_null() & pl.col("_first")).select(
        "_k1", "_k2", normalize_expr(pl.col("answer")).alias("_first_norm"), pl.col("answer").alias("_first_answer"))
    df = df.join(firsts, on=["_k1", "_k2"], how="left", maintain_order="left")
    dup = pl.col("_reason").is_null() & ~pl.col("_first")
    same = normalize_expr(pl.col("answer")) == pl.col("_first_norm")
    df = df.with_columns(*_first_reason(
        (dup & same, "duplicate", "same prompt and answer as an earlier row"),
        (dup & ~same, "conflicting_duplicate", pl.format("earlier row has answer '{}'", pl.col("_first_answer"))),
    ))
    # two different prompts whose sha1 ids share their 16 hex digits (2^-64 a pair): keep ids unique
    first_any = pl.col("id").is_first_distinct().over(pl.col("_reason").is_null())
    df = df.with_columns(*_first_reason((~first_any, "duplicate_id", pl.format("id '{}' seen before", pl.col("id")))))
    return df.drop("_first", "_first_norm", "_first_answer")


REJECT_SCHEMA = pl.Schema({"file": pl.String, "row": pl.Int64, "reason": pl.String, "detail": pl.String,
                           "raw": pl.String})


def reject_rows(flagged: pl.DataFrame, parts: dict[str, Part]) -> pl.DataFrame:
    """REJECT_SCHEMA rows for `flagged` (`_label`, `_row`, `_reason`, `_detail`), the raw records read
    again from their parts."""
    if flagged.height == 0:
        return pl.DataFrame(schema=REJECT_SCHEMA)
    raws = []
    for (label,), rows in flagged.group_by("_label", maintain_order=True):
        got = parts[label].raw(rows["_row"].to_list())
        raws.append(pl.DataFrame({"_label": label, "_row": list(got), "raw": list(got.values())},
                                 schema={"_label": pl.String, "_row": pl.Int64, "raw": pl.String}))
    out = flagged.join(pl.concat(raws), on=["_label", "_row"], how="left")
    return out.select(pl.col("_label").alias("file"), pl.col("_row").alias("row"), pl.col("_reason").alias("reason"),
                      pl.col("_detail").fill_null("").alias("detail"), pl.col("raw").fill_null("")).sort("file", "row")


@dataclass
class LoadResult:
    """The canonical table, the rejected rows (REJECT_SCHEMA, with their reason) and what was read.

    sources: per part, {"label", "source", "read", "kept"}.
    origin:  per table row, the index of the `Source` (in `load_sources`' list) it came from."""

    table: pl.DataFrame
    rejects: pl.DataFrame = field(default_factory=lambda: pl.DataFrame(schema=REJECT_SCHEMA))
    n_read: int = 0
    sources: list[dict] = field(default_factory=list)
    origin: pl.Series = field(default_factory=lambda: pl.Series([], dtype=pl.Int64))

    @property
    def reject_counts(self) -> dict[str, int]:
        if self.rejects.height == 0:
            return {}
        counts = self.rejects.group_by("reason").len().sort(["len", "reason"], descending=[True, False])
        return dict(zip(counts["reason"].to_list(), counts["len"].to_list(), strict=True))

    def summary(self) -> str:
        lines = [f"read {self.n_read} rows: {self.table.height} valid, {self.rejects.height} rejected"]
        lines += [f"  {reason}: {n}" for reason, n in self.reject_counts.items()]
        return "\n".join(lines)


def _load_tokenizer(tokenizer: str):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tokenizer, trust_remote_code=False)


def _token_counter(tokenizer: str | None) -> Callable[[str], int] | None:
    if tokenizer is None:
        return None
    tok = _load_tokenizer(tokenizer)
    return lambda text: len(tok(text, add_special_tokens=False)["input_ids"])


def mark_overlong(df: pl.DataFrame, tokenizer, limits: LoadLimits) -> pl.DataFrame:
    """Set prompt_over_context / budget_over_context on rows with no reason yet whose prompt, rendered
    with `tokenizer`'s chat template (no prompt settings), cannot fit limits.context_length."""
    from grpo_data.generation.context import ContextPolicy
    from grpo_data.generation.prompting import encode_prompt

    policy = ContextPolicy(limits.context_length, limits.overlong_prompts, limits.min_clipped_tokens)
    valid = df["_reason"].is_null().to_list()
    fits = [policy.fit(len(encode_prompt(tokenizer, m)), limits.max_tokens) if ok else None
            for m, ok in zip(df["prompt"].to_list(), valid, strict=True)]
    out = [f if f is not None and f.status == "left_out" else None for f in fits]
    reason = pl.Series([f.reason if f else None for f in out], dtype=pl.String)
    detail = pl.Series([f.detail if f else None for f in out], dtype=pl.String)
    return df.with_columns(pl.when(reason.is_not_null()).then(reason).otherwise(pl.col("_reason")).alias("_reason"),
                           pl.when(reason.is_not_null()).then(detail).otherwise(pl.col("_detail")).alias("_detail"))


def load_sources(sources: Sequence[Source], limits: LoadLimits = LoadLimits(), verifier=None) -> LoadResult:
    """Read every source, check limits, gold answers and duplicates across all of them (in source order)."""
    if limits.max_prompt_tokens is not None and limits.tokenizer is None:
        raise DataError("max_prompt_tokens needs a tokenizer (path or Hub name) to count tokens")
    if limits.context_length is not None and limits.tokenizer is None:
        raise DataError("context_length needs a tokenizer (path or Hub name) to render and count prompts")
    count_tokens = _token_counter(limits.tokenizer)
    frames, parts = [], {}
    for number, src in enumerate(sources):
        for part in read_parts(src.spec, fields_of(src.preset), list(src.splits), src.configs):
            if part.label in parts:
                raise DataError(f"{part.label}: named twice in one load")
            parts[part.label] = part
            for chunk in canonical_chunks(part, src.preset, limits, count_tokens):
                frames.append(chunk.with_columns(pl.lit(number, dtype=pl.Int64).alias("_origin")))
                logger.info("read %s: %d rows so far", part.label, int(chunk["_row"].max() or 0) + 1)
    df = pl.concat(frames, rechunk=False) if frames else None  # no copy of the chunks
    if df is None or df.height == 0:
        return LoadResult(pl.DataFrame(schema=SCHEMA), n_read=0)
    bad = check_golds(df.filter(pl.col("_reason").is_null())["answer"], verifier)
    if bad:
        bad_df = pl.DataFrame({"answer": list(bad), "_why": list(bad.values())})
        df = df.join(bad_df, on="answer", how="left", maintain_order="left").with_columns(*_first_reason(
            (pl.col("_why").is_not_null(), "unparseable_gold",
             pl.format("'{}': {}", pl.col("answer").str.slice(0, 80), pl.col("_why"))))).drop("_why")
    if limits.context_length is not None:
        df = mark_overlong(df, _load_tokenizer(limits.tokenizer), limits)
    df = mark_duplicates(df)
    kept = df.filter(pl.col("_reason").is_null())
    per_part = df.group_by("_label", maintain_order=True).agg(
        pl.first("source"), pl.len().alias("read"), pl.col("_reason").is_null().sum().alias("kept"))
    return LoadResult(
        table=kept.select(list(SCHEMA)),
        origin=kept["_origin"],
        rejects=reject_rows(df.filter(pl.col("_reason").is_not_null()).select("_label", "_row", "_reason", "_detail"),
                            parts),
        n_read=df.height,
        sources=[{"label": r["_label"], "source": r["source"], "read": r["read"], "kept": r["kept"]}
                 for r in per_part.iter_rows(named=True)],
    )


def read_eval_rows(spec: str, preset: Preset, split: str | list[str] = "test",
                   hub_config: str | list[str] | None = None) -> pl.DataFrame:
    """Every evaluation row with question text, whatever its answer (decontamination compares
    questions): columns eval_file, eval_row, eval_id, text (the user messages' contents)."""
    unusable = ["malformed_row", "missing_question", "non_string_question", "empty_question"]
    frames = []
    for part in read_parts(spec, fields_of(preset), parse_splits(split), parse_configs(hub_config)):
        chunks = list(canonical_chunks(part, preset, LoadLimits(max_prompt_chars=2**62)))
        if not chunks:
            raise DataError(f"{part.label}: holds no rows")
        df = pl.concat(chunks)
        usable = df.filter(pl.col("_reason").is_null() | ~pl.col("_reason").is_in(unusable))
        if usable.height == 0:  # checking against nothing would look like a clean pool
            why = df.group_by("_reason").len().sort("len", descending=True).head(3).iter_rows()
            raise DataError(f"{part.label}: no evaluation question could be read with field "
                            f"{preset.question_field!r} ({', '.join(f'{r}: {n}' for r, n in why)}); name the "
                            "question field (--against-question-field) or the shape (--against-preset)")
        frames.append(usable.select(pl.col("_label").alias("eval_file"), pl.col("_row").alias("eval_row"),
                                    pl.col("id").alias("eval_id"), problem_text_expr(pl.col("prompt")).alias("text")))
    return pl.concat(frames)


def load_problems(spec: str, preset: Preset, limits: LoadLimits = LoadLimits(), split: str | list[str] = "train",
                  hub_config: str | list[str] | None = None, verifier=None) -> LoadResult:
    """Read `spec` (`split`: one or a comma list; `hub_config`: None, "all" or names), map rows with
    `preset`, check limits, gold parseability and duplicates.

    verifier: an object with `check_golds(list[str]) -> list[Verdict]` (a VerifierPool); one is
    started and closed here when None and some gold needs math-verify.
    """
    return load_sources([Source.of(spec, preset, split, hub_config)], limits, verifier)


def rejects_path(out: str | os.PathLike) -> Path:
    out = Path(out)
    return out.with_name(out.name.removesuffix(".parquet") + ".rejects.jsonl")


PROVENANCE_KEY = "grpo_data"  # parquet footer key: where a problem table came from


def provenance(result: LoadResult, **extra) -> dict:
    """What a card needs to know about a loaded table: its parts, reject counts, and `extra`
    (a mixture report, a decontamination summary)."""
    return {"sources": result.sources, "rejected": result.reject_counts, "rows": result.table.height, **extra}


def read_provenance(path: str | os.PathLike) -> dict:
    """The provenance a problem parquet carries in its footer ({} for one written elsewhere)."""
    raw = pl.read_parquet_metadata(path).get(PROVENANCE_KEY)
    return json.loads(raw) if raw else {}


def write_load_result(result: LoadResult, out: str | os.PathLike, **extra) -> tuple[Path, Path]:
    """Problems to `out` (parquet, provenance in the footer), rejects with their reason beside it
    (`*.rejects.jsonl`). `extra` keys are added to the provenance."""
    meta = {PROVENANCE_KEY: json.dumps(provenance(result, **extra), default=str)}
    problems = io.write_parquet(out, result.table, metadata=meta)
    rej = io.write_ndjson(rejects_path(out), result.rejects)
    return problems, rej
