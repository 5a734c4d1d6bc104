"""The embedded arithmetic world: procedural problems with graded difficulty, no downloads needed.

Every problem is an integer expression; its level sets the operand sizes and operators:

    level  form          operands                       example
    1      a + b         a, b in 0..9                   What is 3+5?
    2      a + b         a in 10..99, b in 0..9         What is 47+8?
    3      a - b         a in 10..99, b in 0..9         What is 52-7?
    4      a + b         a, b in 10..99                 What is 38+47?
    5      a - b         a, b in 10..99                 What is 31-58?
    6      a * b         a in 10..99, b in 2..9         What is 23*7?
    7      a + b + c     a, b, c in 10..99              What is 12+45+78?
    8      (a + b) * c   a, b in 10..99, c in 2..9      What is (12+45)*7?

The question is the user message "What is EXPR?"; the gold answer is the integer as a string
("-27"). The policy is expected to answer with `\\boxed{N}`, which `grpo_data.verify` extracts
(a bare final number is accepted too). Generation is deterministic from the seed: the same seed gives
the same problems, ids and splits. Train and held-out splits share no problem text.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import dataclass

import polars as pl

from grpo_data.problems import problem_id, to_table, user_prompt

SOURCE = "grpo-arith-world"
ANSWER_FORMAT = "\\boxed{N}"


def _r(rng: random.Random, lo: int, hi: int) -> int:
    return rng.randint(lo, hi)


# level -> expression generator (rng -> expression text); evaluated with a tiny parser below
LEVELS: dict[int, Callable[[random.Random], str]] = {
    1: lambda g: f"{_r(g, 0, 9)}+{_r(g, 0, 9)}",
    2: lambda g: f"{_r(g, 10, 99)}+{_r(g, 0, 9)}",
    3: lambda g: f"{_r(g, 10, 99)}-{_r(g, 0, 9)}",
    4: lambda g: f"{_r(g, 10, 99)}+{_r(g, 10, 99)}",
    5: lambda g: f"{_r(g, 10, 99)}-{_r(g, 10, 99)}",
    6: lambda g: f"{_r(g, 10, 99)}*{_r(g, 2, 9)}",
    7: lambda g: f"{_r(g, 10, 99)}+{_r(g, 10, 99)}+{_r(g, 10, 99)}",
    8: lambda g: f"({_r(g, 10, 99)}+{_r(g, 10, 99)})*{_r(g, 2, 9)}",
}


def evaluate(expr: str) -> int:
    """Value of an expression of non-negative integers, + - *, and parentheses (no eval())."""
    tokens: list[str] = []
    i = 0
    while i < len(expr):
        ch = expr[i]
        if ch.isdigit():
            j = i
            while j < len(expr) and expr[j].isdigit():
                j += 1
            tokens.append(expr[i:j])
            i = j
        elif ch in "+-*()":
            tokens.append(ch)
            i += 1
        elif ch == " ":
            i += 1
        else:
            raise ValueError(f"unexpected character {ch!r} in {expr!r}")
    pos = 0

    def atom() -> int:
        nonlocal pos
        tok = tokens[pos]
        pos += 1
        if tok == "(":
            value = expr_sum()
            pos += 1  # ')'
            return value
        return int(tok)

    def term() -> int:
        nonlocal pos
        value = atom()
        while pos < len(tokens) and tokens[pos] == "*":
            pos += 1
            value *= atom()
        return value

    def expr_sum() -> int:
        nonlocal pos
        value = term()
        while pos < len(tokens) and tokens[pos] in "+-":
            op = tokens[pos]
            pos += 1
            value = value + term() if op == "+" else value - term()
        return value

    return expr_sum()


def question(expr: str) -> str:
    return f"What is {expr}?"


@dataclass(frozen=True)
class WorldConfig:
    """Size and seed of a generated world.

    per_level_train / per_level_heldout: problems per level in each split (capped by how many
        distinct expressions a level has: level 1 has 100).
    levels: which levels to generate.
    """

    seed: int = 0
    per_level_train: int = 600
    per_level_heldout: int = 100
    levels: tuple[int, ...] = tuple(LEVELS)

    def __post_init__(self) -> None:
        unknown = [lv for lv in self.levels if lv not in LEVELS]
        if unknown:
            raise ValueError(f"unknown levels {unknown}; known levels: {sorted(LEVELS)}")
        if self.per_level_train < 1 or self.per_level_heldout < 0:
            raise ValueError("per_level_train must be >= 1 and per_level_heldout >= 0")


def generate(cfg: WorldConfig) -> dict[str, pl.DataFrame]:
    """{"train": table, "heldout": table}: canonical problem tables with `level`, disjoint by text."""
    rows = {"train": [], "heldout": []}
    for level in cfg.levels:
        rng = random.Random(f"{cfg.seed}:{level}")
        want = cfg.per_level_train + cfg.per_level_heldout
        seen: list[str] = []
        seen_set: set[str] = set()
        attempts = 0
        while len(seen) < want and attempts < want * 50:
            attempts += 1
            expr = LEVELS[level](rng)
            if expr not in seen_set:
                seen_set.add(expr)
                seen.append(expr)
        # held-out takes its share first so a small level (level 1: 100 expressions) still has one
        n_held = min(cfg.per_level_heldout, len(seen) // 5)
        for split, exprs in (("heldout", seen[:n_held]), ("train", seen[n_held:])):
            for expr in exprs:
                messages = user_prompt(question(expr))
                rows[split].append({
                    "id": problem_id(messages), "source": SOURCE, "prompt": messages,
                    "answer": str(evaluate(expr)), "level": level,
                    "meta": json.dumps({"expr": expr, "split": split, "seed": cfg.seed}),
                })
    return {split: to_table(r) for split, r in rows.items()}
