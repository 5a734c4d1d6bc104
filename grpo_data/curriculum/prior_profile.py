"""An earlier profile as a prior: another checkpoint's or another model's own counts, read as the
discounted pseudo-counts a published difficulty column gives (`grpo_data.curriculum.priors`).

    prior = read_profile_prior("profiles/base.parquet", problems["id"].to_list(), weight=4)

Joined by problem id: a problem the earlier profile measured gets its pass rate n_correct / k from
its k samples, counted as min(k, weight) pseudo-samples (the same discount as a column's: another
model's view predicts this one's only up to a logit offset and a per-problem scatter); a problem it
lacks stays unprofiled. Everything downstream takes it as it takes a column prior: the offset fitted
to this model's counts (`merge_offline`, the adaptive profiler), the drift groups of rows only it
covers, the recorded-prior refusal, the card and manifest. Its source names the file (path and
sha256) and, from its metadata, the model and weights hash that drew the samples.

Amortization: one profile of a base model is the prior of every later profile of a sweep (each
checkpoint, each model): each of those stops early where the base model's view, moved by the
fitted offset, already settles the band decision.

Refused with what to do: a missing file, one that is not a profile, ids the profile and the data do
not share, counts out of range, and a profile made by the same weights as the model it would be a
prior for, or the very profile beside it (`check_other_source`): those are this model's own samples,
to reuse as its profile, not another model's view to discount and shift. One prior source at a time
(`one_source`): a column prior and a profile prior together are refused.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import polars as pl

from grpo_data.curriculum.priors import (
    DEFAULT_WEIGHT,
    Prior,
    PriorError,
    PriorSource,
    frame_columns,
    parse_spec,
    prior_weight,
    read_prior,
)
from grpo_data.tables.exports import METADATA_KEY
from grpo_data.tables.shards import sha256_file

PREFIX = "profile:"  # a profile prior's spec: profile:PATH
COUNT_COLUMNS = ("id", "n_correct", "k")  # what a prior reads of a profile
# what `grpo profile` says to do with a prior profile its own model's weights drew
REUSE = ("reuse it as the profile (grpo shards --profile {path}, grpo train data.profile={path}), or profile "
         "without a prior")
# the three prior settings as the command line spells them (a pipeline's sections: prior, prior_profile, prior_weight)
CLI_NAMES = ("--prior", "--prior-profile", "--prior-weight")


def one_source(spec: str | None, profile: str | None, options: tuple[str, str]) -> None:
    """Refuse a column prior (`spec`) and a profile prior (`profile`) given together; `options`
    names the two settings as the caller spells them."""
    if spec and profile:
        raise PriorError(f"{options[0]} {spec} and {options[1]} {profile}: one prior source at a time (another "
                         f"model's difficulty from a column of the data, or an earlier profile); drop one of them")


def check_prior_settings(spec: str | None, profile: str | None, weight: float | None,
                         names: tuple[str, str | None, str] = CLI_NAMES) -> float:
    """The weight a run asks for (DEFAULT_WEIGHT when `weight` is None; a 0 is kept, for the reader to
    refuse), the settings checked before any data is read: a column prior and a profile prior together
    (`one_source`), a weight without either, a malformed spec (`parse_spec`) or a prior profile that is
    not a file (`check_path`) is a PriorError. `names` spells the spec's, the profile's and the weight's
    settings as the caller does (the profile's None where the caller has no such setting)."""
    one_source(spec, profile, (names[0], str(names[1])))
    either = names[0] if names[1] is None else f"{names[0]} or {names[1]}"
    weight = prior_weight(spec or profile, weight, (either, names[2]))
    if spec:
        parse_spec(spec)
    if profile:
        check_path(profile)
    return weight


def read_prior_settings(spec: str | None, profile: str | None, weight: float | None, table: pl.DataFrame,
                        where: str, names: tuple[str, str | None, str] = CLI_NAMES) -> Prior | None:
    """The prior the settings name (`check_prior_settings`), over the problems of `table` (a loaded or
    canonical table; `where` names it in errors): the column `spec` read from its columns (or the
    fields `grpo load --prior` kept in its meta), or the earlier profile `profile` joined to its ids;
    None without either. PriorError when it cannot be read."""
    weight = check_prior_settings(spec, profile, weight, names)
    if profile:
        return read_profile_prior(profile, table["id"].to_list(), weight, where=where)
    if not spec:
        return None
    return read_prior(spec, frame_columns(table, where), weight, ids=table["id"].to_list())


def profile_record(path: str | Path, meta: dict, table: pl.DataFrame, sha256: str) -> dict:
    """What a card, a manifest or a run's metadata says about the earlier profile: the file (path as
    given, sha256), who drew its samples (model, weights hash), how (sampling, fixed or adaptive), when."""
    config = meta.get("config") or {}
    sampling = config.get("sampling") or {}
    return {"path": str(path), "sha256": sha256, "model": meta.get("model"), "weights_hash": meta.get("weights_hash"),
            "created": meta.get("created"), "rows": table.height, "samples": int(table["k"].sum()),
            "adaptive": config.get("rule") is not None,
            **{name: sampling.get(name) for name in ("temperature", "top_p", "max_tokens")},
            **({"its_prior": meta["prior"].get("spec")} if meta.get("prior") else {})}


def check_path(path: str | Path) -> None:
    """Refuse a prior profile path that is not a file, before any data is read."""
    if not Path(path).is_file():
        raise PriorError(f"prior profile {path} does not exist: give the .parquet `grpo profile --out` wrote for "
                         "another checkpoint or model, or leave the prior profile out")


def _read(path: str | Path) -> tuple[pl.DataFrame, dict]:
    """The earlier profile's id, n_correct and k and its run metadata; PriorError naming the file
    and what to give instead. Read here, not with `grpo_data.tables.profile_table.read_profile`: only
    the counts are read, and a file that is no profile is a PriorError the plug-ins report as theirs."""
    check_path(path)
    try:
        names = pl.read_parquet_schema(path)
        footer = pl.read_parquet_metadata(path).get(METADATA_KEY)
        missing = [c for c in COUNT_COLUMNS if c not in names]
        if footer is None or missing:
            why = f"no columns {', '.join(missing)}" if missing else f"no `{METADATA_KEY}` metadata in its footer"
            raise PriorError(f"prior profile {path} is not a profile `grpo profile` wrote ({why}): give its .parquet "
                             "output, or read another table's pass rates with --prior COLUMN (grpo_data.curriculum.priors)")
        return pl.read_parquet(path, columns=list(COUNT_COLUMNS)), json.loads(footer)
    except (pl.exceptions.PolarsError, OSError, json.JSONDecodeError) as exc:
        raise PriorError(f"prior profile {path} cannot be read as a parquet profile ({type(exc).__name__}: {exc}); "
                         "give the .parquet `grpo profile --out` wrote") from None


def read_profile_prior(path: str | Path, ids: Sequence, weight: float = DEFAULT_WEIGHT,
                       where: str = "the data") -> Prior:
    """The earlier profile at `path` as a prior over the problems `ids` (one row per id, NaN where
    the profile lacks it), each value counted as at most `weight` pseudo-samples."""
    if not weight >= 1:
        raise PriorError(f"the prior's weight must be at least 1 pseudo-sample, got {weight} (to ignore the prior, "
                         "leave it out)")
    table, meta = _read(path)
    rows = table.select(pl.col("id").cast(pl.String), pl.col("n_correct").cast(pl.Float64), pl.col("k").cast(pl.Float64))
    twice = rows.filter(pl.col("id").is_duplicated())["id"].unique().sort().to_list()
    if twice:
        raise PriorError(f"prior profile {path}: ids profiled twice ({', '.join(twice[:3])}); merge its parts with "
                         "`grpo profile --merge`, which refuses duplicates, or give another profile")
    counted = (pl.col("k") >= 1) & (pl.col("n_correct") >= 0) & (pl.col("n_correct") <= pl.col("k"))
    bad = rows.filter(~counted.fill_null(False))
    if bad.height:
        first = bad.row(0, named=True)
        raise PriorError(f"prior profile {path}: {bad.height} rows hold no counts of at least 1 sample, e.g. id "
                         f"{first['id']}: n_correct {first['n_correct']} of k {first['k']}; give a profile "
                         "`grpo profile` wrote")
    found = dict(zip(rows["id"].to_list(), zip(rows["n_correct"].to_list(), rows["k"].to_list(), strict=True),
                     strict=True))
    keys = [str(i) for i in ids]
    counts = np.array([found.get(i, (np.nan, np.nan)) for i in keys], dtype=np.float64).reshape(-1, 2)
    if not np.isfinite(counts[:, 1]).any():
        raise PriorError(f"prior profile {path}: none of its {rows.height} ids is among the {len(keys)} problems of "
                         f"{where} (its ids e.g. {', '.join(rows['id'].head(3).to_list())}; the data's e.g. "
                         f"{', '.join(keys[:3])}): give a profile of the same problems, loaded the same way (ids are "
                         "the dataset's own, or sha1 of the prompt text: `grpo load`)")
    record = profile_record(path, meta, table, sha256_file(Path(path)))
    model = meta.get("model")
    named = (f"{model} (weights {record['weights_hash'] or 'hash not recorded'})" if model
             else "a model its metadata does not name")
    source = PriorSource(f"{PREFIX}{path}", ("n_correct", "k"), "counts", 1.0, None, named,
                         f"grpo profile output {path}, sha256 {record['sha256'][:16]}: {record['rows']} problems, "
                         f"{record['samples']} samples", profile=record)
    return Prior(source, counts[:, 0] / counts[:, 1], counts[:, 1], float(weight))


def check_other_source(prior: Prior | None, weights: str | None, whose: str, use: str,
                       profile: str | Path | None = None) -> None:
    """Refuse a profile prior drawn by `weights` (the weights hash of what it would be a prior for:
    the model being profiled or trained, or the profile it joins), or whose file is `profile` (same
    sha256): its counts are that model's own samples, so discounting them to a few pseudo-samples and
    shifting them by a fitted offset throws most of them away. `whose` names that model or profile
    in the message; `use` says how to reuse the prior profile instead ({path} filled in)."""
    record = None if prior is None else prior.source.profile
    if not record:
        return
    same_file = profile is not None and Path(profile).is_file() and sha256_file(Path(profile)) == record["sha256"]
    if not same_file and not (weights and record.get("weights_hash") == weights):
        return
    what = "is the same file as" if same_file else f"was drawn by the same weights ({weights}) as"
    raise PriorError(f"prior profile {record['path']} {what} {whose}: its counts are that model's own samples, not "
                     f"another model's view to discount and shift; {use.format(path=record['path'])}. A prior "
                     "profile comes from another checkpoint or model")

