"""A table's columns read as a prior: the fields a spec names (dotted for nested ones), one pass
rate and sample count per row, checked value by value (`read_prior`), and the prior a shard set
carries (`stored_prior`). Re-exported by `grpo_data.curriculum.priors`.

An avg@K column (the `avg` preset or a spec naming one) is the mean of K samples per row in verl's
mean@N and published tables; a table that also has each row's sample count, `k` (or verl's
`extra_info.k`: this project's exports and shards, whose rows can have more or fewer samples than K),
is read with that count, so a row of 8 samples under an avg@2 name counts as 8 samples, not 2.

Rows without a value (a null, NaN, an empty string, a missing nested key) are simply unprofiled: the
scheduler gives them their group's prior. A missing column, a value outside its range or one that is
not a number is a `PriorError` naming the column, the row and what to do.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from grpo_data.curriculum.prior_sources import (
    AVG_COLUMN,
    DEFAULT_WEIGHT,
    Prior,
    PriorError,
    PriorSource,
    parse_spec,
    resolve,
)

SAMPLE_COUNT_FIELDS = ("k", "extra_info.k")  # an avg@K table's samples per row, where it states them
_FRACTION = re.compile(r"\s*(\d+(?:\.\d*)?)\s*/\s*(\d+(?:\.\d*)?)\s*")
_TOLERANCE = 1e-9  # rates this far outside [0, 1] are rounding, not errors


# ---------------------------------------------------------------------------- columns
@dataclass(frozen=True)
class Columns:
    """A table's top-level fields: their names and a getter of one field's values (a list, one Python
    value per row); `where` names the table in errors."""

    names: tuple[str, ...]
    get: Callable[[str], list]
    rows: int
    where: str = "the data"


def frame_columns(frame, where: str = "the data") -> Columns:
    """Columns of a polars DataFrame; fields a loader kept in each row's `meta` JSON (under
    "fields", see `keep_patterns`) count as columns too."""
    kept: list[dict] = []
    if "meta" in frame.columns:
        for text in frame["meta"].to_list():
            try:
                meta = json.loads(text) if text else {}
            except json.JSONDecodeError:
                meta = {}
            kept.append(meta.get("fields") or {} if isinstance(meta, dict) else {})
    extra = [n for n in dict.fromkeys(k for row in kept for k in row) if n not in frame.columns]

    def get(name: str) -> list:
        return frame[name].to_list() if name in frame.columns else [row.get(name) for row in kept]

    return Columns(tuple(frame.columns) + tuple(extra), get, frame.height, where)


def dataset_columns(dataset, where: str = "the dataset") -> Columns:
    """Columns of a map-style `datasets.Dataset` (TRL's train set, verl's RLHFDataset.dataframe)."""
    return Columns(tuple(dataset.column_names), lambda name: list(dataset[name]), len(dataset), where)


def record_columns(records: Sequence[dict | None], where: str = "the data") -> Columns:
    """Columns of a list of row dicts (missing keys read as None)."""
    rows = [r or {} for r in records]
    names = tuple(dict.fromkeys(k for r in rows for k in r))
    return Columns(names, lambda name: [r.get(name) for r in rows], len(rows), where)


def _head(path: str, names: Sequence[str]) -> tuple[str, list[str]] | None:
    """The longest dot-prefix of `path` that is a column name, and the rest of its segments."""
    parts = path.split(".")
    for i in range(len(parts), 0, -1):
        if ".".join(parts[:i]) in names:
            return ".".join(parts[:i]), parts[i:]
    return None


_ABSENT = object()


def _descend(value, parts: list[str]):
    """value[a][b]... for the segments `parts`, a key holding a dot matched whole (longest first);
    _ABSENT where a key is missing. JSON text is opened."""
    while parts:
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except json.JSONDecodeError:
                return _ABSENT
        if not isinstance(value, dict):
            return _ABSENT
        for i in range(len(parts), 0, -1):
            key = ".".join(parts[:i])
            if key in value:
                value, parts = value[key], parts[i:]
                break
        else:
            return _ABSENT
    return value


def field_values(columns: Columns, path: str, spec: str) -> list:
    """One value per row of the dotted field `path` (_ABSENT where a nested key is missing); raises
    when the field is not in the table at all."""
    head = _head(path, columns.names)
    values = None if head is None else [_descend(v, head[1]) for v in columns.get(head[0])]
    if values is None or all(v is _ABSENT for v in values):
        shown = ", ".join(columns.names[:20]) + (", ..." if len(columns.names) > 20 else "")
        raise PriorError(f"prior {spec}: {columns.where} has no field `{path}` (its columns: {shown}). A table "
                         f"written by `grpo load` keeps it only when loaded with `--prior {spec}`; or name the field "
                         "that holds it: FIELD[:SCALE[:SAMPLES]] (grpo_data.curriculum.priors)")
    return values


# ---------------------------------------------------------------------------- values
def _missing(value) -> bool:
    return (value is None or value is _ABSENT or (isinstance(value, float) and math.isnan(value))
            or (isinstance(value, str) and not value.strip()))


def parse_number(value) -> tuple[float, float | None]:
    """(number, denominator) of one cell: a number or numeric string (denominator None), or a fraction
    string `c/k` (Polaris' `3/8`: 0.375 with denominator 8). ValueError for anything else."""
    if isinstance(value, bool):
        raise ValueError("a boolean")
    if isinstance(value, int | float | np.integer | np.floating):
        return float(value), None
    if isinstance(value, str):
        fraction = _FRACTION.fullmatch(value)
        if fraction:
            c, k = float(fraction.group(1)), float(fraction.group(2))
            if k <= 0:
                raise ValueError("a fraction over 0")
            return c / k, k
        try:
            return float(value), None
        except ValueError:
            raise ValueError("not a number") from None
    raise ValueError(f"a {type(value).__name__}, not a number")


def _row_rate(source: PriorSource, values: tuple) -> tuple[float, float] | None:
    """(pass rate, samples, NaN when unknown) of one row, None when it has no value; ValueError names
    what is wrong with the value."""
    if source.kind == "counts":
        corrects, drawn = values
        if _missing(corrects) or _missing(drawn):
            return None
        try:
            c, n = (float(np.sum(np.asarray(x, dtype=np.float64))) for x in (corrects, drawn))
        except (TypeError, ValueError):
            raise ValueError("not lists of counts") from None
        if n <= 0:
            return None
        if not 0 <= c <= n:
            raise ValueError(f"{c:g} correct of {n:g} samples")
        return c / n, n
    (value,) = values
    if _missing(value):
        return None
    number, denominator = parse_number(value)
    if not math.isfinite(number):
        raise ValueError("not finite")
    if denominator is not None and source.scale != 1:
        # Polaris' `3/8` is 3 of 8 samples; divided by 100 (lime's percents) it would read as 0.996
        raise ValueError(f"a fraction string c/k, which reads as c of k samples only with SCALE 1 (the polaris preset, "
                         f"FIELD:1 for solved or FIELD:-1 for failed samples), not over {source.scale:g}")
    rate = number / source.scale if source.kind == "rate" else 1.0 - number / source.scale
    if not -_TOLERANCE <= rate <= 1 + _TOLERANCE:
        raise ValueError(f"outside [0, {source.scale:g}]")
    samples = denominator if denominator is not None else source.samples
    return min(max(rate, 0.0), 1.0), float("nan") if samples is None else samples


def row_sample_counts(source: PriorSource, columns: Columns) -> tuple[str, list] | None:
    """(field, one value per row) of the table's per-row sample count (SAMPLE_COUNT_FIELDS) when
    `source` reads an avg@K column and the table has one, else None."""
    if not AVG_COLUMN.fullmatch(source.fields[0]):
        return None
    for path in SAMPLE_COUNT_FIELDS:
        head = _head(path, columns.names)
        if head is not None:
            values = [_descend(v, head[1]) for v in columns.get(head[0])]
            if not all(_missing(v) for v in values):  # a `k` with no value falls through to `extra_info.k`
                return path, values
    return None


def _sample_count(value, field: str, stated: float) -> float:
    """A row's own sample count from `field` (`stated`, the K of avg@K, where the row has none);
    ValueError for a value that is not a count of at least 1."""
    if _missing(value):
        return stated
    count, _ = parse_number(value)
    if not (count >= 1 and float(count).is_integer()):
        raise ValueError(f"read with `{field}` = {value!r}, not a sample count of at least 1")
    return count


def read_prior(spec: str, columns: Columns, weight: float = DEFAULT_WEIGHT, ids: Sequence | None = None) -> Prior:
    """The prior `spec` names, read from `columns`; `ids` (one per row) name rows in errors."""
    if not weight >= 1:
        raise PriorError(f"the prior's weight must be at least 1 pseudo-sample, got {weight} (to ignore the prior, "
                         "leave it out)")
    source = resolve(parse_spec(spec), columns.names)
    fields = [field_values(columns, path, source.name) for path in source.fields]
    counted = row_sample_counts(source, columns)
    rate, samples = np.full(columns.rows, np.nan), np.full(columns.rows, np.nan)
    bad, first = 0, ""
    for i, values in enumerate(zip(*fields, strict=True)):
        try:
            got = _row_rate(source, values)
            if got is not None and counted is not None:
                got = (got[0], _sample_count(counted[1][i], counted[0], got[1]))
        except (ValueError, TypeError) as exc:
            if not bad:
                shown = values[0] if len(values) == 1 else values
                first = (f"row {i}" + (f" (id {ids[i]})" if ids is not None else "")
                         + f": `{'`, `'.join(source.fields)}` = {shown!r} is {exc}")
            bad += 1
            continue
        if got is not None:
            rate[i], samples[i] = got
    if bad:
        tail = "" if source.samples is None else f":{source.samples:g}"
        hint = (f"; if the column holds percents use `{source.fields[0]}:100{tail}` when they count solved samples "
                f"or `{source.fields[0]}:-100{tail}` when they count failed ones (as lime-nlp's `difficulty`: the "
                "lime preset)" if source.kind == "rate" else "")
        raise PriorError(f"prior {source.name}: {bad} rows of {columns.where} cannot be read as a pass rate, "
                         f"e.g. {first}{hint}; fix or drop those rows, or describe the column with "
                         "FIELD[:SCALE[:SAMPLES]] (grpo_data.curriculum.priors)")
    if np.isnan(rate).all():
        raise PriorError(f"prior {source.name}: no row of {columns.where} has a value in "
                         f"`{'`, `'.join(source.fields)}`")
    return Prior(source, rate, samples, float(weight))


def stored_prior(rate, k) -> Prior | None:
    """The prior a shard set carries (`prior_rate`, `prior_k` as `grpo shards --prior` writes them,
    None or NaN where a row has none), or None when no row has one. The pseudo-samples are already
    discounted; the set's card names the model behind them."""
    r = np.array([np.nan if v is None else float(v) for v in rate], dtype=np.float64)
    n = np.array([np.nan if v is None else float(v) for v in k], dtype=np.float64)
    if not np.isfinite(r).any():
        return None
    source = PriorSource("shards", ("prior_rate", "prior_k"), citation="the shard set's prior (see its card)")
    return Prior(source, r, n, float(np.nanmax(n)))
