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
LEVELS = tuple(range(1, 11))  # chain length: the default world's levels
MAX_LEVEL = 14  # the longest chain a world may hold (its solution fits the tiny policy's 192 positions)
# drawn in this order from one list per level: the evaluation splits never run short, and resizing the
# RL pool changes neither them nor the warm start's data
SPLITS = ("test", "val", "sft", "train")
# splits a world may add (the frontier world's): drawn after SPLITS, so a world without them is unchanged
#   transfer:  held-out problems of levels the RL pool does not hold (past-frontier lengths RL never trains)
#   reference: held-out problems drawn with the RL pool's level distribution (how the pool itself moves)
EXTRA_SPLITS = ("transfer", "reference")


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
    # per-level evaluation sizes that override val_per_level / test_per_level (the frontier world weighs
    # its evaluation toward the frontier); None: the same size at every level
    val_levels: dict[int, int] | None = None
    test_levels: dict[int, int] | None = None
    transfer: dict[int, int] | None = None   # EXTRA_SPLITS, per level; None: no such split
    reference: dict[int, int] | None = None

    def __post_init__(self) -> None:
        for name in ("pool", "sft", "val_levels", "test_levels", "transfer", "reference"):
            value = getattr(self, name)
            if value is not None:  # levels may arrive as strings from JSON
                object.__setattr__(self, name, {int(k): int(v) for k, v in value.items()})
        known = set(range(1, MAX_LEVEL + 1))
        unknown = sorted(set().union(*(set(getattr(self, n) or {}) for n in
                                       ("pool", "sft", "val_levels", "test_levels", "transfer", "reference"))) - known)
        if unknown:
            raise ValueError(f"unknown levels {unknown}; known levels (chain lengths): 1..{MAX_LEVEL}")
        counts = [v for n in ("pool", "sft", "val_levels", "test_levels", "transfer", "reference")
                  for v in (getattr(self, n) or {}).values()]
        if min(counts, default=0) < 0 or self.val_per_level < 0 or self.test_per_level < 0:
            raise ValueError("problem counts must be >= 0")
        if self.transfer and set(self.transfer) & {lv for lv, n in self.pool.items() if n > 0}:
            raise ValueError("transfer levels must be levels the RL pool does not hold (they measure transfer)")

    @property
    def levels(self) -> tuple[int, ...]:
        extra = set(self.val_levels or {}) | set(self.test_levels or {}) | set(self.transfer or {}) | set(self.reference or {})
        return tuple(sorted(set(self.pool) | set(self.sft) | extra))

    def wanted(self, level: int) -> dict[str, int]:
        test = self.test_per_level if self.test_levels is None else self.test_levels.get(level, 0)
        val = self.val_per_level if self.val_levels is None else self.val_levels.get(level, 0)
        return {"test": test, "val": val, "train": self.pool.get(level, 0), "sft": self.sft.get(level, 0),
                "transfer": (self.transfer or {}).get(level, 0), "reference": (self.reference or {}).get(level, 0)}

    @property
    def splits(self) -> tuple[str, ...]:
        """The splits this world holds: SPLITS, and the EXTRA_SPLITS it asks for."""
        return SPLITS + tuple(s for s in EXTRA_SPLITS if getattr(self, s))

    def scaled(self, factor: float) -> WorldConfig:
        """The same world with `factor` times the RL pool and evaluation splits (SFT unchanged)."""
        if factor <= 0:
            raise ValueError(f"scale must be > 0, got {factor}")
        if factor == 1:
            return self
        def per_level(counts: dict[int, int] | None) -> dict[int, int] | None:
            return None if counts is None else {lv: max(2, round(n * factor)) if n else 0 for lv, n in counts.items()}

        return replace(self, pool={lv: max(1, round(n * factor)) for lv, n in self.pool.items()},
                       val_per_level=max(2, round(self.val_per_level * factor)),
                       test_per_level=max(2, round(self.test_per_level * factor)),
                       val_levels=per_level(self.val_levels), test_levels=per_level(self.test_levels),
                       transfer=per_level(self.transfer), reference=per_level(self.reference))

    def to_dict(self) -> dict:
        d = {"seed": self.seed, "pool": {str(k): v for k, v in self.pool.items()},
             "val_per_level": self.val_per_level, "test_per_level": self.test_per_level,
             "sft": {str(k): v for k, v in self.sft.items()}}
        for name in ("val_levels", "test_levels", "transfer", "reference"):  # only when set: a world without
            value = getattr(self, name)                                        # them keeps its dict (and caches)
            if value is not None:
                d[name] = {str(k): v for k, v in value.items()}
        return d


def frontier_world(seed: int = 0) -> WorldConfig:
    """The frontier world (issue #59): an instrument on which RL moves held-out accuracy a lot.

    The warm start sees every level 1-12 in SFT, densely up to a frontier (levels 1-6) and thinly past
    it (`frontier_level_weights`), so past the frontier chains fail by per-step slips, not by a wall.
    The RL pool (levels 1-10) is shaped like real data for that warm start: most of it short chains the
    policy always solves and long ones it almost never does, a thinner middle. Validation and test weigh
    the frontier and past it (levels 6-10 hold 250 of test's 330 problems): a real evaluation set is
    harder than the training pool, and the short levels, near their ceiling, cannot move. `reference`
    keeps 200 held-out problems drawn with the pool's level distribution beside them; `transfer` holds
    120 problems of levels 11-12, which the pool never holds: whether per-step reliability learned on
    levels up to 10 carries to longer chains RL never trained. The counts are chosen against the warm
    start's measured pass rates (docs/results/frontier.md)."""
    pool = {1: 130, 2: 130, 3: 100, 4: 60, 5: 50, 6: 50, 7: 60, 8: 70, 9: 80, 10: 110}
    total = sum(pool.values())
    return WorldConfig(
        seed=seed, pool=pool,
        sft={1: 600, 2: 1500, 3: 1500, 4: 1200, 5: 1000, 6: 800, 7: 600, 8: 600, 9: 500, 10: 500, 11: 400, 12: 400},
        val_levels={1: 5, 2: 5, 3: 5, 4: 10, 5: 15, 6: 25, 7: 30, 8: 35, 9: 35, 10: 35},
        test_levels={1: 10, 2: 10, 3: 10, 4: 20, 5: 30, 6: 40, 7: 50, 8: 50, 9: 55, 10: 55},
        transfer={11: 60, 12: 60},
        reference={lv: max(1, round(200 * n / total)) for lv, n in pool.items()})


def frontier_level_weights() -> dict[int, float]:
    """The frontier world's warm-start mix (a `BootstrapConfig.level_weights`): levels 1-6 dense,
    7-12 thin but present, so no length is a wall."""
    return {1: 0.22, 2: 0.19, 3: 0.15, 4: 0.11, 5: 0.08, 6: 0.06, 7: 0.045, 8: 0.04, 9: 0.035, 10: 0.03,
            11: 0.02, 12: 0.02}  # Amendment 1 (bench/PREREGISTRATION.md): 0.008-0.005 past level 9 left a wall


PRESETS = {"default": WorldConfig, "frontier": frontier_world}


def world_config(preset: str = "default", seed: int = 0) -> WorldConfig:
    """The named world: "default" (today's, whose stored results stay comparable) or "frontier"."""
    if preset not in PRESETS:
        raise ValueError(f"unknown world preset {preset!r}: one of {', '.join(PRESETS)}")
    return PRESETS[preset](seed=seed)


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
    """{"sft", "train", "val", "test"} and the EXTRA_SPLITS the config asks for: canonical problem tables
    with `level`, disjoint by text."""
    rows: dict[str, list[dict]] = {s: [] for s in cfg.splits}
    for level in cfg.levels:
        want = cfg.wanted(level)
        exprs = _distinct_chains(random.Random(f"{cfg.seed}:{level}"), level, sum(want.values()))
        start = 0
        for split in cfg.splits:
            for expr in exprs[start : start + want[split]]:
                messages = user_prompt(question(expr))
                rows[split].append({
                    "id": problem_id(messages), "source": SOURCE, "prompt": messages,
                    "answer": str(evaluate(expr)), "level": level,
                    "meta": json.dumps({"expr": expr, "split": split, "seed": cfg.seed}),
                })
            start += want[split]
    return {split: to_table(r) for split, r in rows.items()}
