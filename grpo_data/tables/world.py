"""The embedded arithmetic world: chains of written steps whose difficulty is their length.

A level-k problem is a chain of k one-digit additions and subtractions on a running value that
stays in 0..99, and its expected solution writes every step on its own line:

    What is 47+5-8+3?           17+5=22          (level 1: one step)
                                22-3=19
    47+5=52                     \\boxed{19}
    52-8=44
    44+3=47
    \\boxed{47}

A model that gets each step right with probability r solves a k-step chain about r**k of the time,
so long chains fail by per-step slips, not by a wall: their pass rate is low but real, and rises as
the steps get more reliable. RL on the short and middle chains therefore lifts the long ones: the
frontier moves (see ../shared/STACK_NOTES.md, "A probe of a moving frontier world").

Splits, all disjoint by problem text and drawn deterministically from the seed:
- `sft`: the warm start's supervised data (grpo_train/bootstrap.py), never used by RL or evaluation;
- `train`: the RL pool, shaped per level (`pool`) as a real dataset is for a given model: mostly
  chains the warm policy always solves or never does, with a frontier in between;
- `val`: every choice of band, epoch mode or learning rate is made on it;
- `test`: only reported.

The gold answer is the final value as a string; the policy answers with `\\boxed{N}` after its steps.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass, field, replace

import polars as pl

from grpo_data.tables.problems import problem_id, to_table, user_prompt

SOURCE = "grpo-arith-chains"
ANSWER_FORMAT = "\\boxed{N}"
LEVELS = tuple(range(1, 11))  # chain length
# drawn in this order from one list per level: the evaluation splits never run short, and resizing the
# RL pool (drawn last) changes neither them nor the warm start's data
SPLITS = ("test", "val", "sft", "train")


def default_pool() -> dict[int, int]:
    """RL pool problems per level: many short chains (solved) and long ones (mostly failed), a
    thinner middle: the shape public math sets have for a model that is neither weak nor strong."""
    return {1: 150, 2: 120, 3: 70, 4: 35, 5: 35, 6: 35, 7: 50, 8: 60, 9: 95, 10: 150}


def default_sft() -> dict[int, int]:
    """Distinct warm-start problems per level (how often each level is *seen* is the bootstrap's
    `level_weights`)."""
    return {1: 600, 2: 1500, 3: 1500, 4: 1200, 5: 1000, 6: 800, 7: 600, 8: 600, 9: 500, 10: 500}


def chain(rng: random.Random, steps: int) -> tuple[str, list[str], int]:
    """(expression, written step lines, final value) of a random `steps`-step chain in 0..99."""
    value = rng.randint(1, 99)
    expr, lines = str(value), []
    for _ in range(steps):
        d = rng.randint(1, 9)
        op = rng.choice("+-") if d <= value <= 99 - d else ("+" if value < d else "-")
        new = value + d if op == "+" else value - d
        lines.append(f"{value}{op}{d}={new}")
        expr += f"{op}{d}"
        value = new
    return expr, lines, value


def evaluate(expr: str) -> int:
    """Value of a chain `a+b-c...` of non-negative integers (parsed, never eval()-ed)."""
    total, number, sign = 0, "", 1
    for ch in expr + "+":
        if ch.isdigit():
            number += ch
        elif ch in "+-":
            if not number:
                raise ValueError(f"malformed chain {expr!r}")
            total += sign * int(number)
            number, sign = "", (1 if ch == "+" else -1)
        elif ch != " ":
            raise ValueError(f"unexpected character {ch!r} in {expr!r}")
    return total


def solution(expr: str) -> str:
    """The written solution of a chain: one line per step, then the boxed value."""
    numbers, ops = re.findall(r"\d+", expr), re.findall(r"[+-]", expr)
    value, lines = int(numbers[0]), []
    for op, d in zip(ops, numbers[1:], strict=True):
        new = value + int(d) if op == "+" else value - int(d)
        lines.append(f"{value}{op}{d}={new}")
        value = new
    return "\n".join([*lines, f"\\boxed{{{value}}}"])


def question(expr: str) -> str:
    return f"What is {expr}?"


@dataclass(frozen=True)
class WorldConfig:
    """Size and seed of a generated world: problems per level in each split."""

    seed: int = 0
    pool: dict[int, int] = field(default_factory=default_pool)
    val_per_level: int = 30
    test_per_level: int = 40
    sft: dict[int, int] = field(default_factory=default_sft)

    def __post_init__(self) -> None:
        unknown = sorted(set(self.pool) - set(LEVELS) | set(self.sft) - set(LEVELS))
        if unknown:
            raise ValueError(f"unknown levels {unknown}; known levels (chain lengths): {list(LEVELS)}")
        if min(self.pool.values(), default=0) < 0 or self.val_per_level < 0 or self.test_per_level < 0:
            raise ValueError("problem counts must be >= 0")

    @property
    def levels(self) -> tuple[int, ...]:
        return tuple(sorted(set(self.pool) | set(self.sft)))

    def wanted(self, level: int) -> dict[str, int]:
        return {"test": self.test_per_level, "val": self.val_per_level, "train": self.pool.get(level, 0),
                "sft": self.sft.get(level, 0)}

    def scaled(self, factor: float) -> WorldConfig:
        """The same world with `factor` times the RL pool and evaluation splits (SFT unchanged)."""
        if factor <= 0:
            raise ValueError(f"scale must be > 0, got {factor}")
        if factor == 1:
            return self
        return replace(self, pool={lv: max(1, round(n * factor)) for lv, n in self.pool.items()},
                       val_per_level=max(2, round(self.val_per_level * factor)),
                       test_per_level=max(2, round(self.test_per_level * factor)))

    def to_dict(self) -> dict:
        return {"seed": self.seed, "pool": {str(k): v for k, v in self.pool.items()},
                "val_per_level": self.val_per_level, "test_per_level": self.test_per_level,
                "sft": {str(k): v for k, v in self.sft.items()}}


def _distinct_chains(rng: random.Random, steps: int, want: int) -> list[str]:
    seen: dict[str, None] = {}
    attempts = 0
    while len(seen) < want and attempts < want * 50:
        attempts += 1
        seen.setdefault(chain(rng, steps)[0], None)
    if len(seen) < want:
        raise ValueError(f"level {steps} has only {len(seen)} distinct chains for the {want} asked")
    return list(seen)


def generate(cfg: WorldConfig = WorldConfig()) -> dict[str, pl.DataFrame]:
    """{"sft", "train", "val", "test"}: canonical problem tables with `level`, disjoint by text."""
    rows: dict[str, list[dict]] = {s: [] for s in SPLITS}
    for level in cfg.levels:
        want = cfg.wanted(level)
        exprs = _distinct_chains(random.Random(f"{cfg.seed}:{level}"), level, sum(want.values()))
        start = 0
        for split in SPLITS:
            for expr in exprs[start : start + want[split]]:
                messages = user_prompt(question(expr))
                rows[split].append({
                    "id": problem_id(messages), "source": SOURCE, "prompt": messages,
                    "answer": str(evaluate(expr)), "level": level,
                    "meta": json.dumps({"expr": expr, "split": split, "seed": cfg.seed}),
                })
            start += want[split]
    return {split: to_table(r) for split, r in rows.items()}
