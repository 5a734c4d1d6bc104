"""Read a dataset's records into columnar frames of the fields a preset names.

    for part in read_parts(spec, fields, splits=["train"], configs=None):   # grpo_data.tables.sources
        for frame in part.chunks():  # <= CHUNK rows each: _row, q_text / q_msgs, a_text, id_raw, level, src, ...
            ...
        part.raw(rows)  # the original records of those rows, as JSON text (for the rejects file)

Inputs (found by `grpo_data.tables.sources`): `.jsonl`/`.json`/`.parquet`/`.csv` files and `datasets`
objects (save_to_disk folders, Hub datasets). Parquet, CSV and Arrow-backed datasets are read
column by column in polars, only the columns the fields name, CHUNK rows at a time, so memory
follows the chunk and not the file. JSON lines are decoded by Python's `json` in blocks: polars'
ndjson reader stops at the first malformed line and silently turns a list answer into the string
"[1]", and both must become named rejects instead.

Field extraction sets `_reason`/`_detail` (the reject reasons of `grpo_data.tables.loaders`) for records it
cannot use: malformed_row, missing_/non_string_question, missing_/non_string_answer. Every other
check runs later on the columns.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from grpo_data.tables.problems import MESSAGE

FILE_SUFFIXES = (".jsonl", ".json", ".parquet", ".csv")
CHUNK = 100_000  # records per frame handed on (bounds the Python objects and raw text alive at once)

EXTRACTED = pl.Schema({
    "_row": pl.Int64, "q_text": pl.String, "q_msgs": pl.List(MESSAGE), "a_text": pl.String,
    "id_raw": pl.String, "level": pl.Int64, "src": pl.String, "_reason": pl.String, "_detail": pl.String,
    "_keep": pl.String,
})


class DataError(ValueError):
    """An input that cannot be read at all (unreadable file, unknown preset, no valid rows)."""


@dataclass(frozen=True)
class Fields:
    """Dotted field paths to read (`reward_model.ground_truth`); None = not read. `keep`: regular
    expressions of top-level field names whose values travel whole, as a JSON object, into each row's
    `meta` (`_keep`): a prior's difficulty column (`grpo_data.curriculum.priors.keep_patterns`)."""

    question: str
    answer: str
    id: str | None = None
    level: str | None = None
    source: str | None = None
    keep: tuple[str, ...] = ()

    def kept(self, names) -> list[str]:
        """The names (in order) that `keep` matches whole."""
        return [n for n in names if any(re.fullmatch(p, n) for p in self.keep)] if self.keep else []


@dataclass
class Part:
    """The extracted records of one file, split or config.

    label:  names the part in rejects and meta (a file path, or `name:config[split]`).
    source: the rows' `source` unless a source field gives one.
    chunks: () -> frames of EXTRACTED columns, one row per record, in input order, <= CHUNK rows each.
    raw:    rows -> {row: original record as JSON text}, read again on demand."""

    label: str
    source: str
    chunks: Callable[[], Iterator[pl.DataFrame]]
    raw: Callable[[list[int]], dict[int, str]]


# ---------------------------------------------------------------- python records (JSON)


def get_field(record: dict, dotted: str):
    """record['a']['b'] for 'a.b'; KeyError when any part is missing. JSON strings are opened."""
    value = record
    for part in dotted.split("."):
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except json.JSONDecodeError:
                raise KeyError(dotted) from None
        if not isinstance(value, dict) or part not in value:
            raise KeyError(dotted)
        value = value[part]
    return value


def _as_messages(value) -> list[dict] | None:
    if hasattr(value, "tolist"):  # numpy arrays from parquet readers
        value = value.tolist()
    if isinstance(value, list) and value and all(
        isinstance(m, dict) and isinstance(m.get("role"), str) and isinstance(m.get("content"), str) for m in value
    ):
        return [{"role": m["role"], "content": m["content"]} for m in value]
    return None


def number_text(value) -> str:
    """3 -> "3", 3.0 -> "3", 0.5 -> "0.5": a numeric answer cell as the string it means."""
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


def _optional(rec: dict, dotted: str | None):
    if dotted is None:
        return None
    try:
        return get_field(rec, dotted)
    except KeyError:
        return None


def parse_level(value) -> int | None:
    """'Level 3' -> 3, 3 -> 3, '3' -> 3; anything else -> None (ASCII digits, as the columnar path)."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    elif isinstance(value, str):
        digits = "".join(ch for ch in value if "0" <= ch <= "9")
        value = int(digits) if digits else None
    # a level that does not fit an int64 is not a level (and the columnar path reads it as null)
    return value if isinstance(value, int) and -(2**63) <= value < 2**63 else None


def extract_record(rec, fields: Fields, error: str = "") -> dict:
    """One EXTRACTED row (without _row) from a decoded record (None when it was not an object)."""
    out = {"q_text": None, "q_msgs": None, "a_text": None, "id_raw": None, "level": None, "src": None,
           "_reason": None, "_detail": None, "_keep": None}
    if not isinstance(rec, dict):
        out["_reason"], out["_detail"] = "malformed_row", error or f"a JSON {type(rec).__name__}, not an object"
        return out
    reason = detail = None
    try:
        q = get_field(rec, fields.question)
    except KeyError:
        q, reason, detail = None, "missing_question", f"field {fields.question!r} not in record"
    if reason is None and q is None:
        reason, detail = "missing_question", f"field {fields.question!r} is null"
    elif reason is None and isinstance(q, str):
        out["q_text"] = q
    elif reason is None:
        msgs = _as_messages(q)
        if msgs is None:
            reason, detail = "non_string_question", f"field {fields.question!r} is {type(q).__name__}"
        out["q_msgs"] = msgs
    try:
        a = get_field(rec, fields.answer)
    except KeyError:
        a, areason, adetail = None, "missing_answer", f"field {fields.answer!r} not in record"
    else:
        areason = adetail = None
        if a is None:
            areason, adetail = "missing_answer", f"field {fields.answer!r} is null"
        elif isinstance(a, (int, float)) and not isinstance(a, bool):
            out["a_text"] = number_text(a)
        elif isinstance(a, str):
            out["a_text"] = a
        else:
            areason, adetail = "non_string_answer", f"field {fields.answer!r} is {type(a).__name__}"
    if reason is None and areason is not None:
        reason, detail = areason, adetail
    explicit = _optional(rec, fields.id)
    out["id_raw"] = None if explicit in (None, "") else str(explicit)
    out["level"] = parse_level(_optional(rec, fields.level))
    src = _optional(rec, fields.source)
    out["src"] = None if src is None else str(src)
    kept = fields.kept(rec)
    out["_keep"] = json.dumps({n: rec[n] for n in kept}, default=str, ensure_ascii=False) if kept else None
    out["_reason"], out["_detail"] = reason, detail
    return out


def _records_frame(rows: list[dict]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema=EXTRACTED) if rows else pl.DataFrame(schema=EXTRACTED)


def _jsonl_chunks(path: Path, fields: Fields) -> Iterator[pl.DataFrame]:
    rows = []
    with open(path, encoding="utf-8") as fh:
        for i, line in enumerate(fh):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
                row = extract_record(rec, fields)
            except json.JSONDecodeError as exc:
                row = extract_record(None, fields, f"line {i + 1} is not JSON: {exc.msg}")
            row["_row"] = i
            rows.append(row)
            if len(rows) >= CHUNK:
                yield _records_frame(rows)
                rows = []
    if rows:
        yield _records_frame(rows)


def _jsonl_raw(path: Path) -> Callable[[list[int]], dict[int, str]]:
    def raw(rows: list[int]) -> dict[int, str]:
        want, out = set(rows), {}
        with open(path, encoding="utf-8") as fh:
            for i, line in enumerate(fh):
                if i in want:
                    out[i] = line.rstrip("\n")
        return out

    return raw


def _json_records(path: Path) -> list:
    data = json.loads(path.read_text(encoding="utf-8"))
    if isinstance(data, dict) and isinstance(data.get("data"), list):
        data = data["data"]
    if not isinstance(data, list):
        raise DataError(f"{path}: a .json file must hold a list of records (or {{'data': [...]}})")
    return data


def _json_chunks(path: Path, fields: Fields) -> Iterator[pl.DataFrame]:
    data = _json_records(path)
    for start in range(0, len(data), CHUNK):
        yield _records_frame([{**extract_record(rec, fields, "not an object"), "_row": start + i}
                              for i, rec in enumerate(data[start:start + CHUNK])])


def _json_raw(path: Path) -> Callable[[list[int]], dict[int, str]]:
    def raw(want: list[int]) -> dict[int, str]:
        again = _json_records(path)
        return {i: json.dumps(again[i], default=str, ensure_ascii=False) for i in want}

    return raw


# ---------------------------------------------------------------- columnar records (parquet, csv, Arrow)


class _JSONText(Exception):
    """A dotted field reaches into a column of JSON text: types are only known per row."""


def _field_expr(schema: pl.Schema, dotted: str) -> tuple[pl.Expr | None, pl.DataType | None]:
    """An expression for a dotted field over a frame with `schema`, and the field's dtype; (None, None)
    when the field does not exist. Struct fields are followed; a JSON-text column raises _JSONText."""
    head, *rest = dotted.split(".")
    if head not in schema:
        return None, None
    expr, dtype = pl.col(head), schema[head]
    for part in rest:
        if isinstance(dtype, pl.Struct):
            names = {f.name: f.dtype for f in dtype.fields}
            if part not in names:
                return None, None
            expr, dtype = expr.struct.field(part), names[part]
        elif dtype == pl.String:  # a JSON object stored as text: its values' types vary per row
            raise _JSONText(dotted)
        else:
            return None, None
    return expr, dtype


def _is_messages(dtype) -> bool:
    if not isinstance(dtype, pl.List) or not isinstance(dtype.inner, pl.Struct):
        return False
    names = {f.name: f.dtype for f in dtype.inner.fields}
    return names.get("role") == pl.String and names.get("content") == pl.String


def _number_as_text(expr: pl.Expr, dtype) -> pl.Expr:
    if dtype.is_integer():
        return expr.cast(pl.String)
    # floats as the record path writes them (1e20 -> "100000000000000000000"); float answer columns are rare
    return expr.map_elements(number_text, return_dtype=pl.String)


def level_expr(expr: pl.Expr, dtype) -> pl.Expr:
    """A level column of `dtype` as Int64, the way `parse_level` reads one value ('Level 3' -> 3); null
    where it holds none."""
    if dtype.is_integer():
        return expr.cast(pl.Int64)
    if dtype.is_float():
        return pl.when(expr == expr.floor()).then(expr.cast(pl.Int64, strict=False))
    if dtype == pl.String:
        return expr.str.replace_all(r"[^0-9]", "").cast(pl.Int64, strict=False)
    return pl.lit(None, dtype=pl.Int64)


def _reason(cond: pl.Expr, reason: str, detail: str) -> tuple[pl.Expr, pl.Expr]:
    return pl.when(cond).then(pl.lit(reason)), pl.when(cond).then(pl.lit(detail))


def extract_columns(df: pl.DataFrame, fields: Fields, offset: int = 0) -> pl.DataFrame:
    """EXTRACTED columns from a columnar frame (its first row is record `offset`), with the same
    reasons as `extract_record`. A field inside a JSON-text column (verl's `reward_model` written as
    a string) is read row by row through `extract_record`, which opens the JSON and sees a list
    answer as a list, not as "[1]"."""
    try:
        return _extract_columns(df, fields, offset)
    except _JSONText:
        rows = [{**extract_record(rec, fields), "_row": offset + i} for i, rec in enumerate(df.iter_rows(named=True))]
        return _records_frame(rows)


def _frame_chunks(df: pl.DataFrame, fields: Fields) -> Iterator[pl.DataFrame]:
    for start in range(0, df.height, CHUNK):
        yield extract_columns(df.slice(start, CHUNK), fields, start)


def _extract_columns(df: pl.DataFrame, fields: Fields, offset: int) -> pl.DataFrame:
    schema = df.schema
    none_s, none_i = pl.lit(None, dtype=pl.String), pl.lit(None, dtype=pl.Int64)
    checks: list[tuple[pl.Expr, pl.Expr]] = []

    q, qt = _field_expr(schema, fields.question)
    q_text, q_msgs = none_s, pl.lit(None, dtype=pl.List(MESSAGE))
    if q is None:
        checks.append(_reason(pl.lit(True), "missing_question", f"field {fields.question!r} not in record"))
    else:
        checks.append(_reason(q.is_null(), "missing_question", f"field {fields.question!r} is null"))
        if qt == pl.String:
            q_text = q
        elif _is_messages(qt):
            q_msgs = q.list.eval(pl.struct(pl.element().struct.field("role"), pl.element().struct.field("content")))
            checks.append(_reason((q.list.len() == 0) | q.list.eval(
                pl.element().struct.field("role").is_null() | pl.element().struct.field("content").is_null()).list.any(),
                "non_string_question", f"field {fields.question!r} is list"))
        else:
            checks.append(_reason(pl.lit(True), "non_string_question", f"field {fields.question!r} is {qt}"))

    a, at = _field_expr(schema, fields.answer)
    a_text = none_s
    if a is None:
        checks.append(_reason(pl.lit(True), "missing_answer", f"field {fields.answer!r} not in record"))
    else:
        checks.append(_reason(a.is_null(), "missing_answer", f"field {fields.answer!r} is null"))
        if at == pl.String:
            a_text = a
        elif at.is_numeric():
            a_text = _number_as_text(a, at)
        else:
            checks.append(_reason(pl.lit(True), "non_string_answer", f"field {fields.answer!r} is {at}"))

    def optional_text(dotted):
        e, _ = _field_expr(schema, dotted) if dotted else (None, None)
        return none_s if e is None else e.cast(pl.String)

    id_raw = optional_text(fields.id)
    kept = fields.kept(schema)
    keep = pl.struct(kept).struct.json_encode() if kept else none_s
    lv, lt = _field_expr(schema, fields.level) if fields.level else (None, None)
    reason = pl.coalesce([c[0] for c in checks]) if checks else none_s
    detail = pl.coalesce([c[1] for c in checks]) if checks else none_s
    return df.select(
        (pl.int_range(pl.len(), dtype=pl.Int64) + offset).alias("_row"),
        q_text.alias("q_text"), q_msgs.alias("q_msgs"), a_text.alias("a_text"),
        pl.when(id_raw != "").then(id_raw).alias("id_raw"),
        (none_i if lv is None else level_expr(lv, lt)).alias("level"),
        optional_text(fields.source).alias("src"),
        reason.alias("_reason"), detail.alias("_detail"), keep.alias("_keep"),
    ).cast(dict(EXTRACTED))


def needed_columns(columns, fields: Fields) -> list[str]:
    """The top-level columns (of `columns`) that the fields reach into."""
    heads = {f.split(".")[0] for f in (fields.question, fields.answer, fields.id, fields.level, fields.source) if f}
    return [c for c in columns if c in heads or c in fields.kept([c])]


def _scan_raw(scan: Callable[[], pl.LazyFrame]) -> Callable[[list[int]], dict[int, str]]:
    """Raw records of some rows of a parquet or CSV file, read with a row filter (not the whole file)."""

    def raw(rows: list[int]) -> dict[int, str]:
        picked = scan().with_row_index("_grpo_row").filter(pl.col("_grpo_row").is_in(sorted(rows))).collect()
        return {int(r.pop("_grpo_row")): json.dumps(r, default=str, ensure_ascii=False)
                for r in picked.iter_rows(named=True)}

    return raw


def _parquet_chunks(path: Path, fields: Fields) -> Iterator[pl.DataFrame]:
    """Only the needed columns, CHUNK rows at a time (the reader skips the row groups outside a slice)."""
    lf = pl.scan_parquet(path)
    columns = needed_columns(lf.collect_schema(), fields)
    rows = lf.select(pl.len()).collect().item()
    for start in range(0, rows, CHUNK):
        if columns:
            df = lf.select(columns).slice(start, CHUNK).collect()
        else:  # none of the fields exist: still one row per record
            df = pl.DataFrame({"_n": pl.int_range(min(CHUNK, rows - start), eager=True)})
        yield extract_columns(df, fields, start)


def _csv_chunks(path: Path, fields: Fields) -> Iterator[pl.DataFrame]:
    yield from _frame_chunks(pl.read_csv(path, infer_schema=False), fields)  # every cell a string: no type guessing


def _guarded(path: Path, chunks: Callable[[], Iterator[pl.DataFrame]]) -> Callable[[], Iterator[pl.DataFrame]]:
    """The chunks of a file, with any failure to read it turned into a DataError naming the file."""

    def read() -> Iterator[pl.DataFrame]:
        try:
            yield from chunks()
        except (DataError, FileNotFoundError):
            raise
        except Exception as exc:
            raise DataError(
                f"{path}: cannot read as {path.suffix[1:]} ({type(exc).__name__}: {exc}); "
                f"accepted inputs: {', '.join(FILE_SUFFIXES)} files, folders of them, datasets.save_to_disk "
                "folders, or a Hub dataset name"
            ) from exc

    return read


def read_file(path: Path, fields: Fields) -> Part:
    """A Part for one local file (its chunks are read lazily, failures named as DataError)."""
    suffix = path.suffix.lower()
    if suffix not in FILE_SUFFIXES:
        raise DataError(f"{path}: unsupported file type; accepted: {', '.join(FILE_SUFFIXES)}")
    if not path.exists():
        raise FileNotFoundError(path)
    reader, raw = {".jsonl": (_jsonl_chunks, _jsonl_raw), ".json": (_json_chunks, _json_raw),
                   ".parquet": (_parquet_chunks, lambda p: _scan_raw(lambda: pl.scan_parquet(p))),
                   ".csv": (_csv_chunks, lambda p: _scan_raw(lambda: pl.scan_csv(p, infer_schema=False)))}[suffix]
    return Part(str(path), path.stem, _guarded(path, lambda: reader(path, fields)), raw(path))


def dataset_part(ds, label: str, source: str, fields: Fields) -> Part:
    """A `datasets.Dataset` through polars (its Arrow table, only the needed columns)."""
    keep = needed_columns(ds.column_names, fields)

    def chunks() -> Iterator[pl.DataFrame]:  # Arrow memory-maps the data: slicing costs no copy
        df = ds.select_columns(keep).to_polars() if keep else pl.DataFrame({"_n": pl.int_range(len(ds), eager=True)})
        yield from _frame_chunks(df, fields)

    def raw(rows: list[int]) -> dict[int, str]:
        picked = ds.select(sorted(rows))
        return {i: json.dumps(rec, default=str, ensure_ascii=False) for i, rec in zip(sorted(rows), picked, strict=True)}

    return Part(label, source, chunks, raw)
