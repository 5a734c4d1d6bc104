"""Reusable profiles: per-problem counts and the run that measured them, in conventions others read.

    export_profile(profile, meta, "profiles/arith.dart.parquet", fmt="dart", problems=problems)
    export_profile(profile, meta, "profiles/arith.avg.parquet", fmt="avg", k=32)
    table, info = read_export("profiles/arith.dart.parquet")   # the profile's rows back, and its record

What another team needs to reuse a pass-rate profile is the raw counts (samples and successes per
problem, per round when it was sampled in rounds), the rate derived from them and its spread, and
what produced them: the model and its weights hash, the sampling settings, the prompt template, the
verifier and its version, the prior used. `card_record(meta)` gathers those from a profile's run
metadata; cards print it (`grpo_data.tables.cards`) and every export carries it.

Formats, one row per profiled problem, in the profile's row order (`grpo profile` writes them
sorted by id):

    dart  DART-Math's query-info columns (hkust-nlp/dart-math-pool-math-query-info): `query_id`,
          `level`, `n_samples_list`, `n_corrects_list` (one entry per sampling round here, per
          synthesis job there), `tot_n_samples`, `tot_n_corrects`, `pass_rate` (tot_n_corrects /
          tot_n_samples) and `pass_rate_bernoulli_std`, read here as sqrt(p (1 - p) / n), the
          standard error of that rate: the source does not define it, and this reading matches its
          name and its published range (0-0.02 at 191 or more samples). DART's `domain` (the MATH
          subject) has no counterpart here and is not written.
    avg   `id`, `avg@K_<model>` (the pass rate under the name this project's trl/verl shards and
          public RL datasets use), `k`, `n_correct`, `k_rounds`, `n_correct_rounds`, `level`. In
          verl's mean@N and published avg@K tables every problem has exactly K samples; an adaptive
          profile's problems have from screen_k to max_k. K is therefore the fewest samples any
          problem got, or the `k` asked for, which is refused when a problem has fewer: each row's
          rate is the mean of its own `k` >= K samples, so the name never claims more samples than a
          row has (a reader that takes K for every row under-weights the rows with more, the safe
          side). The record states K, `k_min`, `k_max` and how many rows average more than K
          (`more_than_k`); `--prior avg` reads each row's `k`.

The round lists are ragged: entry i is the i-th round in which that problem drew samples (fixed k:
one round; adaptive: the screen, then one entry per step it took part in). A problem that stopped
early has fewer entries, and one whose decision a later round reopened (the prior is refitted as
other problems are sampled) skips the rounds it sat out, so entry i of two problems need not be the
same round of the run. `rounds_recorded` (per row) is false where the profile has no rounds for the
row (written, or merged from a part written, before rounds were recorded): its lists then hold one
round of all its samples, which DART-Math readers sum, and `read_export` gives the row back with null
rounds.

Both also hold `p_est` and `p_std`, the posterior mean and standard deviation of each pass rate under
the grid empirical-Bayes prior shards and the adaptive profiler use (`grpo_data.curriculum.estimates`; per level
when `problems` are given and the profile ran with per-level priors, else one for the pool, with a
warning when the profile ran per level), from this model's own counts, unless the caller gives them
(a card copies its shard set's); and the profile's other columns (Jeffreys posterior and interval,
completion length, truncation, counts per verdict, format, budget), so that `read_export` gives back
the profile's rows, column for column and in order (tested by round trip on tables with unrecorded
rounds). With the problem table, the question (`query`, DART-Math's name), `source` and `meta` (file
and row) are written too, and the record says how ids were made (`ids`): a hashed id is joined on by
recomputing it, or on the question and source.

The parquet footer (key EXPORT_KEY) and a sidecar `OUT.json` hold {"card": card_record, "export":
what was written (format, K, column, k_min, k_max, more_than_k, estimate and its prior, ids, rows,
rounds_recorded, the problems the profile left out with their reasons), "profile": the profile's
whole run metadata}; both are written atomically (`grpo_data.tables.io`). An `out` that would overwrite the
profile or the problem table is refused (`check_out`). The prior readers read exports as another
model's difficulty: `--prior dart` sums the lists, `--prior avg` reads the avg@K column with each
row's `k` as its samples. Checked, and an ExportError naming the file (or the profile), the field and
the first bad row: counts (k >= 1, 0 <= n_correct <= k), round lists (no nulls, as long as each other,
summing to k and n_correct, no round with more successes than samples), an export's rate against its
counts; the problem table's id and level columns and duplicate ids. Other columns are not checked.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from pathlib import Path

import polars as pl

from grpo_data.curriculum.estimates import by_level, with_estimates
from grpo_data.tables import io
from grpo_data.tables.problems import problem_ids, problem_text_expr, prompt_text_expr
from grpo_data.tables.readers import level_expr
from grpo_data.tables.shards import community_column

logger = logging.getLogger(__name__)

EXPORT_KEY = "grpo_card"
METADATA_KEY = "grpo_profile"  # a profile's run metadata in its parquet footer (`grpo_data.profile_parts.merge_parts` writes it)
FORMATS = ("dart", "avg")
# a profile's samples and successes per sampling round (`grpo_data.profile_chunks.summarize_problem` counts them)
ROUND_SCHEMA = {"k_rounds": pl.List(pl.Int64), "n_correct_rounds": pl.List(pl.Int64)}
# per row: whether the round lists are the profile's own (false: one round of all its samples stands in)
ROUNDS_RECORDED = "rounds_recorded"
# profile column -> DART-Math's name for it
DART_NAMES = {"id": "query_id", "k_rounds": "n_samples_list", "n_correct_rounds": "n_corrects_list",
              "k": "tot_n_samples", "n_correct": "tot_n_corrects"}
DART_COLUMNS = ("query_id", "level", "n_samples_list", "n_corrects_list", "tot_n_samples", "tot_n_corrects",
                "pass_rate", "pass_rate_bernoulli_std")
ESTIMATE_COLUMNS = ("p_est", "p_std")
# from the problem table, when given: the question (DART-Math's pool calls it `query`), where the row came from
DATA_COLUMNS = ("query", "source", "meta")
ID_SCHEMES = {"hashed": "sha1 of the normalized prompt text, first 16 hex (grpo_data.tables.problems.problem_id): "
                        "recompute it from the question and the chat messages to join",
              "dataset": "the dataset's own id column"}
SAMPLING_FIELDS = ("temperature", "top_p", "max_tokens", "stop", "stop_token_ids")
# record fields a reuser cannot do without; an export whose profile lacks one warns, naming it
ESSENTIAL = ("model", "weights_hash", "sampling.temperature", "sampling.top_p", "sampling.max_tokens",
             "sampling.seed", "prompt.template_hash", "verifier.version", "verifier.rules_hash",
             "verifier.fingerprint", "verifier.pred_tail_chars")
_RATE_TOLERANCE = 1e-12


class ExportError(ValueError):
    """A profile that cannot be exported, or a file that cannot be read back as one: the message
    names the file, the field and the first bad row."""


def card_record(meta: dict) -> dict:
    """What produced a profile, from its run metadata (`grpo_data.profile_metadata.run_metadata`): model,
    weights hash, engine, backend (local or ray, its workers, the adaptive wave), sampling settings, seed and seeding scheme, samples per problem (k or the adaptive rule),
    prompt template hash and prompt settings, context, verifier (library, its version and those of
    sympy and latex2sympy2_extended, this project's rules hash and version, the verdict fingerprint,
    every verdict-changing pool setting), the prior the adaptive profiler weighed (None without one),
    data and time. Fields the metadata lacks (older profiles) are None."""
    cfg = meta.get("config") or {}
    sampling = cfg.get("sampling") or {}
    versions = meta.get("versions") or {}
    return {
        "model": meta.get("model"), "weights_hash": meta.get("weights_hash"), "engine": meta.get("engine"),
        "backend": {"name": meta.get("backend"), "workers": meta.get("ray_workers"),
                    "wave": cfg.get("wave")},  # where it ran (`grpo_data.ray_profile`); None in older profiles
        "sampling": {**{name: sampling.get(name) for name in SAMPLING_FIELDS}, "seed": cfg.get("seed"),
                     "seeding": meta.get("seeding")},  # how samples were seeded (`grpo_data.generation.seeding.SEEDING`)
        "samples": {"rule": cfg["rule"]} if cfg.get("rule") else {"k": cfg.get("k")},
        "prompt": {"template_hash": meta.get("template_hash"), **(cfg.get("prompt") or {})},
        "context_length": meta.get("context_length"),
        "verifier": {"library": None, "rules_hash": None, "fingerprint": None, **(meta.get("verifier") or {}),
                     "version": versions.get("math-verify"), "sympy": versions.get("sympy"),
                     "latex2sympy2_extended": versions.get("latex2sympy2_extended"),
                     "grpo_curriculum": versions.get("grpo-curriculum")},
        "prior": meta.get("prior"),
        "data": meta.get("data"), "created": meta.get("created"),
    }


def unknown_fields(record: dict) -> list[str]:
    """The ESSENTIAL fields of a card record that are None."""
    def get(path: str):
        value = record
        for part in path.split("."):
            value = (value or {}).get(part)
        return value

    return [path for path in ESSENTIAL if get(path) is None]


def id_scheme(problems: pl.DataFrame) -> dict:
    """How a problem table's ids were made: {"scheme", "columns", "hashed", "dataset"}: rows whose id is
    `problem_id` of their prompt (the loader's id when a dataset has none) and rows with another (the
    dataset's own); "columns" names the export columns another team can join on instead."""
    columns = ["id", *[c for c in ("source", "meta") if c in problems.columns]]
    if "prompt" not in problems.columns:
        return {"scheme": "unknown: the problem table has no prompt to recompute ids from", "columns": columns}
    hashed = int((problems["id"] == problem_ids(problems.select(prompt_text_expr(pl.col("prompt")))
                                                .to_series())).sum())
    own = problems.height - hashed
    scheme = ID_SCHEMES["hashed"] if not own else ID_SCHEMES["dataset"] if not hashed else (
        f"mixed: {ID_SCHEMES['dataset']} where it had one, else {ID_SCHEMES['hashed']}")
    return {"scheme": scheme, "columns": [*columns, "query"], "hashed": hashed, "dataset": own}


# ---------------------------------------------------------------------------- checks
def _row_name(table: pl.DataFrame, i: int, id_column: str) -> str:
    return f"row {i}" + (f" (id {table[id_column][i]!r})" if id_column in table.columns else "")


def _value(table: pl.DataFrame, field: str, i: int):
    value = table[field][i]
    return value.to_list() if isinstance(value, pl.Series) else value  # a list cell comes back as a Series


def _first_bad(table: pl.DataFrame, bad: pl.Expr) -> int | None:
    hits = table.select(pl.arg_where(bad.fill_null(True))).to_series()
    return int(hits[0]) if hits.len() else None


def check_counts(table: pl.DataFrame, where: str, names: dict[str, str]) -> None:
    """Raise ExportError naming `where`, the field (as `names` maps the profile's names to the
    table's) and the first row whose counts are not counts: k >= 1, 0 <= n_correct <= k, round lists
    of equal length whose entries are counts (not null, 0 <= successes <= samples) and sum to k and
    n_correct."""
    ident, k, c = names.get("id", "id"), names.get("k", "k"), names.get("n_correct", "n_correct")
    kl, cl = names.get("k_rounds", "k_rounds"), names.get("n_correct_rounds", "n_correct_rounds")
    missing = [name for name in (ident, k, c, kl, cl) if name not in table.columns]
    if missing:
        raise ExportError(f"{where}: no column(s) {missing} (its columns: {', '.join(table.columns)})")
    checks = [
        (pl.col(k) < 1, k, "is not a sample count of at least 1"),
        ((pl.col(c) < 0) | (pl.col(c) > pl.col(k)), c, f"is not between 0 and `{k}`"),
        (pl.col(kl).list.eval(pl.element().is_null()).list.any(), kl, "holds a null count"),
        (pl.col(cl).list.eval(pl.element().is_null()).list.any(), cl, "holds a null count"),
        (pl.col(kl).list.len() != pl.col(cl).list.len(), cl, f"is not as long as `{kl}`"),
        (pl.col(kl).list.sum() != pl.col(k), kl, f"does not sum to `{k}`"),
        (pl.col(cl).list.sum() != pl.col(c), cl, f"does not sum to `{c}`"),
        (pl.col(kl).list.min() < 0, kl, "holds a negative count"),
        (pl.col(cl).list.min() < 0, cl, "holds a negative count"),
    ]
    for bad, field, what in checks:
        i = _first_bad(table, bad)
        if i is not None:
            raise ExportError(f"{where}: {_row_name(table, i, ident)}: `{field}` = {_value(table, field, i)!r} {what}"
                              f" (`{k}` = {table[k][i]!r}, `{c}` = {table[c][i]!r})")
    rounds = table.select(pl.int_range(pl.len()).alias("_row"), kl, cl).explode(kl, cl)
    over = rounds.filter(pl.col(cl) > pl.col(kl))
    if over.height:
        i = int(over["_row"][0])
        raise ExportError(f"{where}: {_row_name(table, i, ident)}: `{cl}` = {_value(table, cl, i)!r} has more "
                          f"successes than `{kl}` = {_value(table, kl, i)!r} has samples in some round")


def with_rounds(profile: pl.DataFrame, where: str = "the profile") -> tuple[pl.DataFrame, bool]:
    """The profile with `k_rounds`/`n_correct_rounds` (one round of all its samples where a row has
    none: written before rounds were recorded, or merged from such a part) and ROUNDS_RECORDED (whether
    the row had its own), checked (`check_counts`); and whether every row had its own rounds."""
    for name, dtype in ROUND_SCHEMA.items():
        if name not in profile.columns:
            profile = profile.with_columns(pl.lit(None, dtype=dtype).alias(name))
    profile = profile.with_columns(
        (pl.col("k_rounds").is_not_null() & pl.col("n_correct_rounds").is_not_null()).alias(ROUNDS_RECORDED))
    profile = profile.with_columns(
        pl.when(pl.col(ROUNDS_RECORDED)).then(pl.col("k_rounds"))
        .otherwise(pl.concat_list(pl.col("k").cast(pl.Int64))).alias("k_rounds"),
        pl.when(pl.col(ROUNDS_RECORDED)).then(pl.col("n_correct_rounds"))
        .otherwise(pl.concat_list(pl.col("n_correct").cast(pl.Int64))).alias("n_correct_rounds"))
    check_counts(profile, where, {})
    return profile, bool(profile[ROUNDS_RECORDED].all())


def _check_rate(table: pl.DataFrame, where: str, rate: str, k: str, c: str, ident: str) -> None:
    i = _first_bad(table, (pl.col(rate) - pl.col(c) / pl.col(k)).abs() > _RATE_TOLERANCE)
    if i is not None:
        raise ExportError(f"{where}: {_row_name(table, i, ident)}: `{rate}` = {table[rate][i]!r} is not `{c}` / `{k}` "
                          f"= {table[c][i]} / {table[k][i]}")


# ---------------------------------------------------------------------------- export
def export_table(profile: pl.DataFrame, meta: dict, fmt: str, problems: pl.DataFrame | None = None,
                 k: int | None = None, where: str = "the profile",
                 estimates: tuple[pl.DataFrame, dict] | None = None) -> tuple[pl.DataFrame, dict]:
    """The export of `profile` (its run metadata `meta`) in `fmt` (see the module docstring) and what
    the record says of it. `problems` (the problem table: id, level, and where it has them prompt,
    source, meta) gives each problem its level, question (`query`), source and meta, and, unless the
    profile ran with one prior for the pool, per-level estimates; `k` states avg's K. `estimates` (a
    table of id, p_est, p_std, and what the record says of it) are written instead of fitted: a card
    copies its shard set's, so that the two agree; a row they lack gets nulls."""
    if fmt not in FORMATS:
        raise ExportError(f"unknown export format {fmt!r}; choose one of: {', '.join(FORMATS)}")
    if profile.height == 0:
        raise ExportError(f"{where}: no profiled problem to export")
    table, recorded = with_rounds(profile, where)
    table = table.with_row_index("_order")  # the profile's row order, kept through the joins below
    ids = {"scheme": "unknown: exported without the problem table (--data)", "columns": ["id"]}
    if problems is not None:
        if "id" not in problems.columns or "level" not in problems.columns:
            raise ExportError(f"the problem table needs columns id and level (its columns: {', '.join(problems.columns)})")
        joined = problems.select("id", "level", *[c for c in ("source", "meta") if c in problems.columns],
                                 *([problem_text_expr(pl.col("prompt")).alias("query")] if "prompt" in problems.columns
                                   else []))
        if problems["id"].is_duplicated().any():
            raise ExportError(f"the problem table holds id {problems.filter(pl.col('id').is_duplicated())['id'][0]!r} "
                              "more than once; give one row per problem")
        table = table.drop("level", *DATA_COLUMNS, strict=False).join(joined, on="id", how="left")
        missing = table.filter(~pl.col("id").is_in(problems["id"].implode()))["id"]
        ids = {**id_scheme(problems), "not_in_problem_table": missing.len()}
        if missing.len():
            logger.warning("%s: %d of %d profiled problems are not in the problem table (e.g. %s): their level, query, "
                           "source and meta are null; is it the table the profile was run on?", where, missing.len(),
                           table.height, ", ".join(repr(i) for i in missing.head(3).to_list()))
    elif "level" not in table.columns:  # a read-back export keeps the levels it had
        table = table.with_columns(pl.lit(None, dtype=pl.Int64).alias("level"))
    table = table.drop(*ESTIMATE_COLUMNS, strict=False)
    if estimates is None:
        per_level = by_level(meta) and table["level"].null_count() < table.height
        if by_level(meta) and not per_level:
            logger.warning("%s: the profile weighs per-level priors (prior_groups: level), but no level is given: "
                           "p_est/p_std use one prior for the pool and can differ from its shards' and cards'; give "
                           "the problem table (--data) for per-level estimates", where)
        est = with_estimates(table.select("n_correct", "k", "level"), per_level)
        table = table.with_columns(est["p_est"], est["p_std"])
        estimate = {"columns": list(ESTIMATE_COLUMNS), "prior": "per level" if per_level else "pool",
                    "grid_points": 41, "from": "this profile's counts"}
    else:
        given, said = estimates
        table = table.join(given.select("id", *ESTIMATE_COLUMNS), on="id", how="left")
        estimate = {"columns": list(ESTIMATE_COLUMNS), **said, "rows_without": table["p_est"].null_count()}
    table = table.sort("_order").drop("_order")
    rest = [c for c in table.columns
            if c not in (*DART_NAMES, "pass_rate", "level", ROUNDS_RECORDED, *DATA_COLUMNS, *ESTIMATE_COLUMNS)]
    query = [c for c in ("query",) if c in table.columns]
    data = [c for c in ("source", "meta") if c in table.columns]
    info = {"format": fmt, "rows": table.height, "rounds_recorded": recorded, "estimate": estimate, "ids": ids}
    if fmt == "dart":
        p, n = pl.col("pass_rate"), pl.col("k").cast(pl.Float64)
        out = table.select(pl.col("id").alias("query_id"), *query, "level", *data, pl.col("k_rounds").alias("n_samples_list"),
                           pl.col("n_correct_rounds").alias("n_corrects_list"), ROUNDS_RECORDED,
                           pl.col("k").alias("tot_n_samples"),
                           pl.col("n_correct").alias("tot_n_corrects"), "pass_rate",
                           (p * (1 - p) / n).sqrt().alias("pass_rate_bernoulli_std"), *ESTIMATE_COLUMNS, *rest)
        return out, info
    k_min, k_max = int(table["k"].min()), int(table["k"].max())
    if k is not None and k > k_min:
        i = _first_bad(table, pl.col("k") < k)
        raise ExportError(f"{where}: {_row_name(table, i, 'id')}: `k` = {table['k'][i]} samples, fewer than the K = {k} "
                          f"asked for: avg@{k} says every rate averages at least {k} samples; give K <= {k_min} or "
                          "leave it out (K = the fewest samples any problem got)")
    big_k = k_min if k is None else int(k)
    column = community_column(meta, [big_k])
    out = table.select("id", *query, pl.col("pass_rate").alias(column), "k", "n_correct", *ROUND_SCHEMA, ROUNDS_RECORDED,
                       "level",
                       *data, *ESTIMATE_COLUMNS, *rest)
    return out, {**info, "k": big_k, "column": column, "k_min": k_min, "k_max": k_max,
                 "more_than_k": int((table["k"] > big_k).sum())}


def read_problem_table(path: str | Path) -> pl.DataFrame:
    """The columns of a problem table (parquet) an export takes: id (as text: a dataset's integer ids
    are profiled as their text), level (Int64: 'Level 3' reads as 3, as the loaders read it), and
    where it has them prompt, source, meta. ExportError naming the file, the column and the first bad
    row for a file that is not a parquet table, a missing column, a null or duplicate id, an id that
    is not text or an integer, or a level that holds no number."""
    path = Path(path)
    if not path.is_file():
        raise ExportError(f"{path}: no such file (--data takes a canonical problem table, parquet)")
    try:
        schema = pl.read_parquet_schema(path)
    except (pl.exceptions.PolarsError, OSError) as exc:
        raise ExportError(f"{path}: not a parquet problem table ({type(exc).__name__}: {exc})") from None
    if "id" not in schema or "level" not in schema:
        raise ExportError(f"{path}: --data needs columns id and level (its columns: {', '.join(schema)})")
    if not (schema["id"] == pl.String or schema["id"].is_integer()):
        raise ExportError(f"{path}: column `id` is {schema['id']}; ids are text (or integers, read as text)")
    try:
        table = pl.read_parquet(path, columns=["id", "level", *[c for c in ("prompt", "source", "meta") if c in schema]])
    except (pl.exceptions.PolarsError, OSError) as exc:
        raise ExportError(f"{path}: cannot be read ({type(exc).__name__}: {exc})") from None
    raw = table["level"]
    table = table.with_columns(pl.col("id").cast(pl.String), level_expr(pl.col("level"), schema["level"]))
    for bad, what in ((table["id"].is_null(), "`id` is null"), (table["id"].is_duplicated(), "`id` is duplicated"),
                      (table["level"].is_null() & raw.is_not_null(), "`level` holds no level number")):
        hits = bad.arg_true()
        if hits.len():
            i = int(hits[0])
            raise ExportError(f"{path}: row {i}: {what} (id {table['id'][i]!r}, level {raw[i]!r}; {hits.len()} such rows)"
                              "; give a table with one row per problem (`grpo load` writes one)")
    return table


def sidecar(path: str | Path) -> Path:
    """The JSON beside an export: OUT.json."""
    return Path(path).with_suffix(".json")


# what `grpo profile` (and a pipeline) write beside a profile: its metadata, its inputs stamp, its left-out problems
INPUT_SIDECARS = (".json", ".inputs.json", ".rejects.jsonl")


def check_out(out: str | Path, inputs: Sequence[str | Path]) -> None:
    """Refuse an `out` whose parquet or sidecar would overwrite one of `inputs` (the profile, the
    problem table) or a file written beside one (INPUT_SIDECARS): `--out` given the profile's own
    name would destroy it."""
    kept = {}
    for source in inputs:
        source = Path(source)
        for path in (source, *(source.with_suffix(suffix) for suffix in INPUT_SIDECARS)):
            kept[path.resolve()] = (source, path)
    for written in (Path(out), sidecar(out)):
        hit = kept.get(written.resolve())
        if hit is not None:
            source, path = hit
            what = "itself" if path == source else f"the file beside it, {path}"
            raise ExportError(f"--out {out}: writing {written} would overwrite {source} ({what}); give the export "
                              "another name, e.g. NAME.dart.parquet")


def export_profile(profile: pl.DataFrame, meta: dict, out: str | Path, fmt: str = "dart",
                   problems: pl.DataFrame | None = None, k: int | None = None, where: str = "the profile",
                   inputs: Sequence[str | Path] = (), estimates: tuple[pl.DataFrame, dict] | None = None,
                   left_out: pl.DataFrame | None = None) -> dict:
    """Write the export of `profile` to `out` (parquet, footer EXPORT_KEY) and its record beside it
    (`sidecar(out)`), atomically; returns the record ({"card", "export", "profile"}). `inputs` (the
    profile's path, the problem table's) are refused as `out` (`check_out`). `left_out` (id, reason,
    detail: the problems the profile left out, `grpo_data.tables.profile_table.read_rejects`) goes into the
    record: they have no row."""
    check_out(out, inputs)
    table, info = export_table(profile, meta, fmt, problems, k, where, estimates)
    if left_out is not None:
        info["left_out"] = {"rows": left_out.height,
                            "problems": left_out.select("id", "reason", "detail").to_dicts()}
    record = {"card": card_record(meta), "export": info, "profile": meta}
    unknown = unknown_fields(record["card"])
    if unknown:
        logger.warning("%s: the profile's metadata does not say %s; the export records them as unknown (a profile "
                       "written by an older grpo profile?)", where, ", ".join(unknown))
    io.write_parquet(out, table, metadata={EXPORT_KEY: json.dumps(record, default=str)})
    io.write_json(sidecar(out), record)
    return record


# ---------------------------------------------------------------------------- read back
def read_export(path: str | Path) -> tuple[pl.DataFrame, dict]:
    """An export's rows as the profile table they came from (profile column names: id, k, n_correct,
    pass_rate, k_rounds, n_correct_rounds, the other profile columns, level, p_est, p_std) and its
    record; raises ExportError naming the file, field and row when it is not one, or its counts do
    not add up."""
    path = Path(path)
    if not path.is_file():
        raise ExportError(f"{path}: no such file")
    footer = pl.read_parquet_metadata(path).get(EXPORT_KEY)
    if not footer:
        raise ExportError(f"{path}: no `{EXPORT_KEY}` record in its footer, so not written by `grpo export`; a "
                          "published DART-Math or avg@K table reads as a prior instead (--prior dart / avg)")
    record = json.loads(footer)
    info = record.get("export") or {}
    table = pl.read_parquet(path)
    if info.get("format") == "dart":
        need = [c for c in (*DART_COLUMNS, *ESTIMATE_COLUMNS) if c not in table.columns]
        if need:
            raise ExportError(f"{path}: a DART-Math export without column(s) {need}")
        names = DART_NAMES
        check_counts(table, str(path), names)
        _check_rate(table, str(path), "pass_rate", names["k"], names["n_correct"], names["id"])
        table = table.drop("pass_rate_bernoulli_std").rename({b: a for a, b in names.items()})
    elif info.get("format") == "avg":
        column = info.get("column")
        need = [c for c in ("id", column, "k", "n_correct", *ROUND_SCHEMA, "level", *ESTIMATE_COLUMNS)
                if c not in table.columns]
        if need:
            raise ExportError(f"{path}: an avg@K export without column(s) {need}")
        check_counts(table, str(path), {})
        _check_rate(table, str(path), column, "k", "n_correct", "id")
        table = table.rename({column: "pass_rate"})
    else:
        raise ExportError(f"{path}: its record names format {info.get('format')!r}; this version reads "
                          f"{', '.join(FORMATS)}")
    if ROUNDS_RECORDED in table.columns:  # a row whose rounds were not recorded reads back without them
        table = table.with_columns(pl.when(pl.col(ROUNDS_RECORDED)).then(pl.col(name)).alias(name)
                                   for name in ROUND_SCHEMA).drop(ROUNDS_RECORDED)
    front = ["id", "k", "n_correct", "pass_rate"]
    tail = [c for c in DATA_COLUMNS if c in table.columns] + ["level", *ESTIMATE_COLUMNS]
    return table.select(*front, *[c for c in table.columns if c not in (*front, *tail)], *tail), record
