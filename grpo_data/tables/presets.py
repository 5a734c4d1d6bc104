"""Dataset shapes: which fields hold the question, the answer, the id and the level, and how the
final answer is read from a worked solution (GSM8K's `#### N`, MATH's last `\\boxed{}`).

`PRESETS` names the common shapes; `resolve_preset` applies a user's field overrides. The loader
(`grpo_data.tables.loaders`) reads records through a preset; an extractor with a column form in
`VECTORIZED` runs as a polars expression, any other per row in Python.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import polars as pl

from grpo_data.tables.readers import DataError
from grpo_data.verify.final_answer import last_boxed

# ---------------------------------------------------------------- answer extraction (pure)


def answer_after_hashes(text: str) -> str | None:
    """GSM8K: the final answer follows the last '####'; thousands separators dropped."""
    if "####" not in text:
        return None
    ans = text.rsplit("####", 1)[1].strip().replace(",", "")
    return ans or None


def hashes_expr(text: pl.Expr) -> pl.Expr:
    """`answer_after_hashes` as a column expression."""
    ans = text.str.split("####").list.last().str.strip_chars().str.replace_all(",", "", literal=True)
    return pl.when(text.str.contains("####", literal=True) & (ans != "")).then(ans)


# Column forms of preset extractors; one without a form here runs per row in Python.
VECTORIZED: dict[Callable, Callable[[pl.Expr], pl.Expr]] = {answer_after_hashes: hashes_expr}


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
    keep: tuple[str, ...] = ()  # top-level fields carried into meta (`Fields.keep`), e.g. a prior's column


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
