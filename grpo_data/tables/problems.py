r"""The canonical problem table: the one schema every stage reads.

Columns (polars dtypes):

    id       str    stable identifier: the dataset's id column when one is named, else
                    `sha1(normalized prompt text)[:16]`, so the same problem gets the same id in
                    every run and every copy of a dataset.
    source   str    where the row came from (dataset name or file name, or verl `data_source`).
    prompt   list[struct{role: str, content: str}]
                    chat messages. A plain-string question becomes one user message; verl-style
                    message lists are kept as they are. How messages become model input (chat
                    template, instruction) is decided later, by `grpo_data.generation.prompting`, the same way
                    for profiling and training.
    answer   str    gold final answer as a bare string ("42", "\\frac{1}{2}"), judged by
                    `grpo_data.verify.judge`.
    level    i64?   difficulty level when the dataset has one (MATH "Level 3" -> 3, the world's
                    levels), else null.
    meta     str    JSON object with any extra fields worth keeping (e.g. the original index).

Normalization for ids and duplicate detection: Unicode NFKC, whitespace runs collapsed to one
space, ends stripped. Case is kept: "Let X" and "let x" may be different problems. "Whitespace" is
Unicode's White_Space property, the set that polars' (Rust) `\s` matches, so the columnar loader
(`normalize_expr`) and this Python version give the same ids; Python's own `\s` would also take the
control characters U+001C-U+001F.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata

import polars as pl

MESSAGE = pl.Struct({"role": pl.String, "content": pl.String})
SCHEMA = pl.Schema(
    {
        "id": pl.String,
        "source": pl.String,
        "prompt": pl.List(MESSAGE),
        "answer": pl.String,
        "level": pl.Int64,
        "meta": pl.String,
    }
)

_WS = re.compile(r"[^\S\x1c-\x1f]+")  # Unicode White_Space (see the module docstring)


def normalize_text(text: str) -> str:
    return _WS.sub(" ", unicodedata.normalize("NFKC", text)).strip(" ")


def normalize_expr(text: pl.Expr) -> pl.Expr:
    """`normalize_text` as a polars expression (same result, tested on messy text). Two shortcuts keep
    it fast on a million rows: ASCII text is already NFKC (polars' NFKC costs ~6 µs a row), and only
    runs of whitespace or single non-space whitespace characters need replacing."""
    nfkc = pl.when(text.str.contains(r"[^\x00-\x7F]")).then(text.str.normalize("NFKC")).otherwise(text)
    return nfkc.str.replace_all(r"\s\s+|[^\S ]", " ").str.strip_chars(" ")


def prompt_text_expr(prompt: pl.Expr) -> pl.Expr:
    """`prompt_text` of a List(MESSAGE) column."""
    return prompt.list.eval(pl.concat_str(pl.element().struct.field("role"), pl.lit(": "),
                                          normalize_expr(pl.element().struct.field("content")))).list.join("\n")


def problem_text_expr(prompt: pl.Expr) -> pl.Expr:
    """The text a problem states: its user messages' contents, joined (what decontamination compares)."""
    return prompt.list.eval(pl.element().filter(pl.element().struct.field("role") == "user")
                            .struct.field("content")).list.join(" ")


def spread_prompts(prompts: pl.Series, n: int = 1000) -> list[list[dict]]:
    """About n prompts taken evenly over the whole column (every source of a mixture, not the first)."""
    return prompts.gather_every(max(1, prompts.len() // n)).to_list()


def problem_ids(prompt_texts: pl.Series) -> pl.Series:
    """`problem_id` of each prompt text (sha1 has no polars kernel: a tight Python loop, ~1 s per 1M)."""
    sha1 = hashlib.sha1
    return pl.Series([None if t is None else sha1(t.encode("utf-8")).hexdigest()[:16] for t in prompt_texts],
                     dtype=pl.String)


def prompt_text(messages: list[dict]) -> str:
    """The prompt's text content, role-tagged, used for ids and duplicate detection."""
    return "\n".join(f"{m['role']}: {normalize_text(m['content'])}" for m in messages)


def problem_id(messages: list[dict]) -> str:
    return hashlib.sha1(prompt_text(messages).encode("utf-8")).hexdigest()[:16]


# Chat-template tokens in a prompt given as one string ("<|im_start|>user", "[INST]", "<s>").
_TEMPLATE_TOKEN = re.compile(r"<\|[^<>|]{1,40}\|>(?:user|assistant|system)?|</?s>|\[/?INST\]|<start_of_turn>(?:user|model)?"
                             r"|<end_of_turn>|<\uff5c[^<>]{1,40}\uff5c>")


def question_text(messages: list[dict] | str | None) -> str | None:
    """The question a problem asks, as the verifier reads it: its user messages' contents joined (a
    plain string is its own question), or None when there is none. The same text `problem_text_expr`
    gives a table's column. A prompt given as one templated string (TRL's standard format) is its own
    question with the chat-template tokens taken out."""
    if messages is None or isinstance(messages, str):
        # a prompt given as one templated string: its chat-template tokens end no sentence of the question
        return _TEMPLATE_TOKEN.sub("\n", messages).strip() or None if messages else None
    text = " ".join(str(m.get("content") or "") for m in messages if isinstance(m, dict) and m.get("role") == "user")
    return text or None


def user_prompt(question: str) -> list[dict]:
    return [{"role": "user", "content": question}]


def empty_table() -> pl.DataFrame:
    return pl.DataFrame(schema=SCHEMA)


def to_table(rows: list[dict]) -> pl.DataFrame:
    """Canonical rows (dicts with the SCHEMA keys) -> a DataFrame with exactly SCHEMA."""
    if not rows:
        return empty_table()
    return pl.DataFrame(rows, schema=SCHEMA)


def validate_table(df: pl.DataFrame, where: str) -> None:
    """Raise ValueError naming `where` if df is not a canonical problem table."""
    missing = [c for c in SCHEMA if c not in df.columns]
    if missing:
        raise ValueError(
            f"{where}: not a canonical problem table, missing columns {missing}; "
            "produce one with `grpo load` (or `grpo world` for the embedded arithmetic world)"
        )
    if df["id"].n_unique() != df.height:
        raise ValueError(f"{where}: duplicate ids in the problem table")


def level_array(problems: pl.DataFrame):
    """Each problem's level as float64 (NaN where missing), or None when the table has no levels."""
    if "level" not in problems.columns or problems["level"].null_count() == problems.height:
        return None
    return problems["level"].cast(pl.Float64).fill_null(float("nan")).to_numpy()
