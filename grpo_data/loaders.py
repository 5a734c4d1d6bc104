"""Load any math dataset into the canonical problem table (`grpo_data.problems`).

Sources: local `.jsonl`/`.json`/`.parquet`/`.csv` files, folders of them, folders written by
`datasets.save_to_disk`, and Hub dataset names through `datasets.load_dataset` (same code path as a
local parquet file once the rows are read).

Presets name the common shapes (see PRESETS); `question_field` / `answer_field` / `id_field` /
`level_field` override or replace them. Dotted fields reach into nested records
(`reward_model.ground_truth`).

Bad input never stops the good rows: each rejected row is kept with its file, row number, reason
and the raw record, so `write_load_result` can write it to a rejects file. Reasons:

    malformed_row           a jsonl line that is not JSON, or a record that is not an object
    missing_question / empty_question / non_string_question
    missing_answer / empty_answer / non_string_answer
    no_extractable_answer   the preset's extraction found nothing (no `####`, no `\\boxed{}`)
    prompt_too_long         over max_prompt_chars (or max_prompt_tokens with a tokenizer)
    unparseable_gold        math-verify extracts no answer from the gold string
    duplicate               same normalized prompt and answer as an earlier row (collapsed)
    conflicting_duplicate   same normalized prompt as an earlier row but another answer
    duplicate_id            an explicit id seen before

Numbers in an answer field (int/float, e.g. a CSV or parquet column of ints) are converted to
strings; booleans, lists and objects are `non_string_answer`.
"""

from __future__ import annotations

import json
import logging
import os
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from grpo_data import io
from grpo_data.problems import normalize_text, problem_id, prompt_text, to_table, user_prompt

logger = logging.getLogger(__name__)

FILE_SUFFIXES = (".jsonl", ".json", ".parquet", ".csv")


class DataError(ValueError):
    """An input that cannot be read at all (unreadable file, unknown preset, no valid rows)."""


# ---------------------------------------------------------------- answer extraction (pure)


def answer_after_hashes(text: str) -> str | None:
    """GSM8K: the final answer follows the last '####'; thousands separators dropped."""
    if "####" not in text:
        return None
    ans = text.rsplit("####", 1)[1].strip().replace(",", "")
    return ans or None


def last_boxed(text: str) -> str | None:
    """Content of the last \\boxed{...} (or \\fbox{...}) with balanced braces, else None."""
    for marker in ("\\boxed{", "\\fbox{"):
        start = text.rfind(marker)
        if start < 0:
            continue
        i = start + len(marker)
        depth = 1
        for j in range(i, len(text)):
            if text[j] == "{":
                depth += 1
            elif text[j] == "}":
                depth -= 1
                if depth == 0:
                    return text[i:j].strip() or None
        return None  # unbalanced
    return None


def parse_level(value) -> int | None:
    """'Level 3' -> 3, 3 -> 3, '3' -> 3; anything else -> None."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        digits = "".join(ch for ch in value if ch.isdigit())
        return int(digits) if digits else None
    return None


# ---------------------------------------------------------------- presets


@dataclass(frozen=True)
class Preset:
    """How one dataset shape maps onto the canonical table."""

    question_field: str
    answer_field: str
    description: str
    extract_answer: Callable[[str], str | None] | None = None  # applied to the answer field's text
    id_field: str | None = None
    level_field: str | None = None
    source_field: str | None = None


PRESETS: dict[str, Preset] = {
    "gsm8k": Preset("question", "answer", "GSM8K: question + worked answer ending in '#### N'",
                    extract_answer=answer_after_hashes),
    "math": Preset("problem", "solution", "MATH: problem + solution whose last \\boxed{} is the answer",
                   extract_answer=last_boxed, level_field="level"),
    "problem_answer": Preset("problem", "answer", "problem/answer tables (DeepScaleR, Big-Math style)",
                             level_field="level"),
    "verl": Preset("prompt", "reward_model.ground_truth",
                   "verl parquet: prompt messages + reward_model.ground_truth + data_source",
                   source_field="data_source"),
    "canonical": Preset("prompt", "answer", "this project's own table (grpo load / grpo world output)",
                        id_field="id", level_field="level", source_field="source"),
}


def resolve_preset(
    name: str | None,
    question_field: str | None = None,
    answer_field: str | None = None,
    id_field: str | None = None,
    level_field: str | None = None,
) -> Preset:
    """A preset by name with field overrides; with no name, the fields alone (both required)."""
    if name is None:
        if not question_field or not answer_field:
            raise DataError(
                "give --preset (one of: " + ", ".join(PRESETS) + ") or both --question-field and --answer-field"
            )
        base = Preset(question_field, answer_field, "custom field mapping")
    elif name not in PRESETS:
        raise DataError(f"unknown preset {name!r}; accepted presets: " + ", ".join(PRESETS))
    else:
        base = PRESETS[name]
    return Preset(
        question_field=question_field or base.question_field,
        answer_field=answer_field or base.answer_field,
        description=base.description,
        extract_answer=base.extract_answer,
        id_field=id_field or base.id_field,
        level_field=level_field or base.level_field,
        source_field=base.source_field,
    )


# ---------------------------------------------------------------- reading records


@dataclass(frozen=True)
class RawRow:
    file: str
    row: int
    record: dict | None
    error: str = ""  # set when the row could not be read as an object


def _is_save_to_disk(path: Path) -> bool:
    return (path / "state.json").exists() or (path / "dataset_dict.json").exists()


def _iter_dataset(ds, label: str) -> Iterator[RawRow]:
    for i, rec in enumerate(ds):
        yield RawRow(label, i, dict(rec))


def _read_file(path: Path) -> Iterator[RawRow]:
    label = str(path)
    suffix = path.suffix.lower()
    try:
        if suffix == ".jsonl":
            with open(path, encoding="utf-8") as fh:
                for i, line in enumerate(fh):
                    if not line.strip():
                        continue
                    try:
                        rec = json.loads(line)
                    except json.JSONDecodeError as exc:
                        yield RawRow(label, i, None, f"line {i + 1} is not JSON: {exc.msg}")
                        continue
                    yield RawRow(label, i, rec) if isinstance(rec, dict) else RawRow(
                        label, i, None, f"line {i + 1} is a JSON {type(rec).__name__}, not an object"
                    )
            return
        if suffix == ".json":
            data = json.loads(path.read_text(encoding="utf-8"))
            if isinstance(data, dict) and isinstance(data.get("data"), list):
                data = data["data"]
            if not isinstance(data, list):
                raise DataError(f"{path}: a .json file must hold a list of records (or {{'data': [...]}})")
            for i, rec in enumerate(data):
                yield RawRow(label, i, rec) if isinstance(rec, dict) else RawRow(label, i, None, "not an object")
            return
        if suffix == ".parquet":
            df = pl.read_parquet(path)
        elif suffix == ".csv":
            df = pl.read_csv(path, infer_schema=False)  # every cell a string: no guessing of types
        else:
            raise DataError(f"{path}: unsupported file type; accepted: {', '.join(FILE_SUFFIXES)}")
    except (DataError, FileNotFoundError):
        raise
    except Exception as exc:
        raise DataError(
            f"{path}: cannot read as {suffix[1:]} ({type(exc).__name__}: {exc}); "
            f"accepted inputs: {', '.join(FILE_SUFFIXES)} files, folders of them, datasets.save_to_disk "
            "folders, or a Hub dataset name"
        ) from exc
    for i, rec in enumerate(df.iter_rows(named=True)):
        yield RawRow(label, i, rec)


def _looks_like_path(spec: str) -> bool:
    """True for specs that can only be meant as local paths (Hub names are 'name' or 'owner/name')."""
    return spec.startswith(("/", ".", "~")) or spec.count("/") > 1 or Path(spec).suffix.lower() in FILE_SUFFIXES


def read_records(spec: str, split: str = "train", hub_config: str | None = None) -> Iterator[RawRow]:
    """Rows of a local file/folder, a save_to_disk folder, or a Hub dataset name."""
    path = Path(spec)
    if path.is_file():
        yield from _read_file(path)
        return
    if path.is_dir():
        if _is_save_to_disk(path):
            import datasets

            ds = datasets.load_from_disk(str(path))
            if isinstance(ds, datasets.DatasetDict):
                if split not in ds:
                    raise DataError(f"{path}: split {split!r} not found; available: {', '.join(ds)}")
                ds = ds[split]
            yield from _iter_dataset(ds, str(path))
            return
        files = sorted(p for p in path.rglob("*") if p.suffix.lower() in FILE_SUFFIXES and p.is_file())
        if not files:
            raise DataError(f"{path}: folder holds no {', '.join(FILE_SUFFIXES)} files and is not a save_to_disk folder")
        for f in files:
            yield from _read_file(f)
        return
    if _looks_like_path(spec):
        raise DataError(f"{spec}: no such file or folder")
    import datasets  # a Hub name, "owner/name" or "name"

    try:
        ds = datasets.load_dataset(spec, hub_config, split=split)
    except Exception as exc:
        raise DataError(
            f"{spec}: not a local path, and loading it as a Hub dataset failed ({type(exc).__name__}: {exc})"
        ) from exc
    yield from _iter_dataset(ds, spec)


# ---------------------------------------------------------------- records -> canonical rows


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
    """A question value as chat messages, or None when it is neither a string nor messages."""
    if isinstance(value, str):
        return user_prompt(value)
    if hasattr(value, "tolist"):  # numpy arrays from parquet readers
        value = value.tolist()
    if isinstance(value, list) and value and all(
        isinstance(m, dict) and isinstance(m.get("role"), str) and isinstance(m.get("content"), str) for m in value
    ):
        return [{"role": m["role"], "content": m["content"]} for m in value]
    return None


@dataclass(frozen=True)
class LoadLimits:
    """Row-level limits. max_prompt_tokens needs `tokenizer` (a path or Hub name)."""

    max_prompt_chars: int = 20_000
    max_prompt_tokens: int | None = None
    tokenizer: str | None = None


def canonical_row(raw: RawRow, preset: Preset, source: str) -> tuple[dict | None, str, str]:
    """(row, "", "") for a valid record, else (None, reason, detail). Pure: no verifier here."""
    if raw.record is None:
        return None, "malformed_row", raw.error
    rec = raw.record
    try:
        q = get_field(rec, preset.question_field)
    except KeyError:
        return None, "missing_question", f"field {preset.question_field!r} not in record"
    if q is None:
        return None, "missing_question", f"field {preset.question_field!r} is null"
    messages = _as_messages(q)
    if messages is None:
        return None, "non_string_question", f"field {preset.question_field!r} is {type(q).__name__}"
    if not any(normalize_text(m["content"]) for m in messages):
        return None, "empty_question", ""
    try:
        a = get_field(rec, preset.answer_field)
    except KeyError:
        return None, "missing_answer", f"field {preset.answer_field!r} not in record"
    if a is None:
        return None, "missing_answer", f"field {preset.answer_field!r} is null"
    if isinstance(a, (int, float)) and not isinstance(a, bool):
        a = str(int(a)) if isinstance(a, float) and a.is_integer() else str(a)
    if not isinstance(a, str):
        return None, "non_string_answer", f"field {preset.answer_field!r} is {type(a).__name__}"
    if preset.extract_answer is not None:
        extracted = preset.extract_answer(a)
        if extracted is None:
            return None, "no_extractable_answer", f"no answer found in {preset.answer_field!r} by the preset"
        a = extracted
    a = a.strip()
    if not a:
        return None, "empty_answer", ""
    level = None
    if preset.level_field:
        try:
            level = parse_level(get_field(rec, preset.level_field))
        except KeyError:
            level = None
    row_source = source
    if preset.source_field:
        try:
            row_source = str(get_field(rec, preset.source_field))
        except KeyError:
            pass
    explicit_id = None
    if preset.id_field:
        try:
            explicit_id = get_field(rec, preset.id_field)
        except KeyError:
            explicit_id = None
    rid = str(explicit_id) if explicit_id not in (None, "") else problem_id(messages)
    meta = {"file": raw.file, "row": raw.row}
    return (
        {"id": rid, "source": row_source, "prompt": messages, "answer": a, "level": level,
         "meta": json.dumps(meta), "_explicit_id": explicit_id not in (None, "")},
        "",
        "",
    )


@dataclass
class LoadResult:
    table: pl.DataFrame
    rejects: list[dict] = field(default_factory=list)
    n_read: int = 0

    @property
    def reject_counts(self) -> dict[str, int]:
        return dict(Counter(r["reason"] for r in self.rejects).most_common())

    def summary(self) -> str:
        lines = [f"read {self.n_read} rows: {self.table.height} valid, {len(self.rejects)} rejected"]
        lines += [f"  {reason}: {n}" for reason, n in self.reject_counts.items()]
        return "\n".join(lines)


def _reject(raw: RawRow, reason: str, detail: str) -> dict:
    return {"file": raw.file, "row": raw.row, "reason": reason, "detail": detail,
            "raw": json.dumps(raw.record, default=str, ensure_ascii=False) if raw.record is not None else ""}


def _token_counter(tokenizer: str | None) -> Callable[[str], int] | None:
    if tokenizer is None:
        return None
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tokenizer, trust_remote_code=False)
    return lambda text: len(tok(text, add_special_tokens=False)["input_ids"])


def load_problems(
    spec: str,
    preset: Preset,
    limits: LoadLimits = LoadLimits(),
    split: str = "train",
    hub_config: str | None = None,
    verifier=None,
) -> LoadResult:
    """Read `spec`, map rows with `preset`, check limits, gold parseability and duplicates.

    verifier: an object with `check_golds(list[str]) -> list[Verdict]` (a VerifierPool); one is
    started and closed here when None.
    """
    if limits.max_prompt_tokens is not None and limits.tokenizer is None:
        raise DataError("max_prompt_tokens needs a tokenizer (path or Hub name) to count tokens")
    count_tokens = _token_counter(limits.tokenizer)
    source = Path(spec).stem if Path(spec).exists() else spec
    rows, rejects, raws = [], [], []
    n_read = 0
    for raw in read_records(spec, split, hub_config):
        n_read += 1
        row, reason, detail = canonical_row(raw, preset, source)
        if row is None:
            rejects.append(_reject(raw, reason, detail))
            continue
        text = prompt_text(row["prompt"])
        if len(text) > limits.max_prompt_chars:
            rejects.append(_reject(raw, "prompt_too_long", f"{len(text)} chars > {limits.max_prompt_chars}"))
            continue
        if count_tokens is not None and limits.max_prompt_tokens is not None:
            n_tok = count_tokens(text)
            if n_tok > limits.max_prompt_tokens:
                rejects.append(_reject(raw, "prompt_too_long", f"{n_tok} tokens > {limits.max_prompt_tokens}"))
                continue
        rows.append(row)
        raws.append(raw)

    golds = sorted({r["answer"] for r in rows})
    if golds:
        if verifier is None:
            from grpo_data.verify_pool import VerifierPool

            with VerifierPool() as pool:
                checks = pool.check_golds(golds)
        else:
            checks = verifier.check_golds(golds)
        bad = {g: v.detail for g, v in zip(golds, checks, strict=True) if v.reason != "ok"}
    else:
        bad = {}

    kept, seen_prompt, seen_id = [], {}, set()
    for row, raw in zip(rows, raws, strict=True):
        if row["answer"] in bad:
            rejects.append(_reject(raw, "unparseable_gold", f"{row['answer'][:80]!r}: {bad[row['answer']]}"))
            continue
        key = prompt_text(row["prompt"])
        explicit = row.pop("_explicit_id")
        if explicit and row["id"] in seen_id:
            rejects.append(_reject(raw, "duplicate_id", f"id {row['id']!r} seen before"))
            continue
        if key in seen_prompt:
            first_answer = seen_prompt[key]
            if normalize_text(first_answer) == normalize_text(row["answer"]):
                rejects.append(_reject(raw, "duplicate", "same prompt and answer as an earlier row"))
            else:
                rejects.append(_reject(raw, "conflicting_duplicate", f"earlier row has answer {first_answer!r}"))
            continue
        seen_prompt[key] = row["answer"]
        seen_id.add(row["id"])
        kept.append(row)
    rejects.sort(key=lambda r: (r["file"], r["row"]))
    return LoadResult(to_table(kept), rejects, n_read)


def rejects_path(out: str | os.PathLike) -> Path:
    out = Path(out)
    return out.with_name(out.name.removesuffix(".parquet") + ".rejects.jsonl")


def write_load_result(result: LoadResult, out: str | os.PathLike) -> tuple[Path, Path]:
    """Problems to `out` (parquet), rejects with their reason beside it (`*.rejects.jsonl`)."""
    problems = io.write_parquet(out, result.table)
    rej = io.write_jsonl(rejects_path(out), result.rejects)
    return problems, rej
