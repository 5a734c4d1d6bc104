"""How many answers each problem gets: rollout allocation from the scheduler's posterior.

A group teaches only if it holds a right and a wrong answer. With pass rate p and n answers that
happens with probability 1 - p^n - (1-p)^n: at p = 0.5 two answers give 0.5, at p = 0.9 they give
0.18, and the p = 0.9 problem needs 16 answers to reach 0.8. A fixed G spends the same on both.

Two rules size the groups of one step from each problem's posterior, within a rollout budget:
- `allocate_marginal` (the default, `Sizing.objective = "marginal"`): an exact knapsack that
  maximizes the expected number of informative groups. One more answer gains p^n (1-p) + (1-p)^n p,
  which falls slower near p = 0 or 1, so at a given budget such problems get more answers; but
  mid-band problems are cheaper to include, and with many candidates per answer of budget
  (Sizing.candidates) every problem gets a small group.
- `allocate` (`objective = "target"`): each problem gets the fewest answers whose expected chance
  of an informative group reaches `target`; problems are taken by expected informative groups per
  answer while they fit, so band-edge problems (11 answers at p = 0.2 or 0.8) are trained less
  often, on larger groups.
Neither is measured against a fixed G yet (`grpo bench gsweep`).

Also here, for the sequential mode and the variance-driven G schedule:
- `needs_more`: after a round of answers, whether a problem still lacks a right or a wrong one;
- `VarianceSchedule`: G doubled when the reward variance of the last steps is high, halved when low.

Pure numpy: shapes are in the docstrings, the scheduler's posterior (`BandScheduler.posterior`)
is the input, and nothing here samples.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

import numpy as np

SIZING_MODES = ("fixed", "allocate", "sequential", "screen", "scheduler")


@dataclass(frozen=True)
class Sizing:
    """How many answers each problem gets (`grpo_train.config.RolloutConfig` sizing, size_*).

    mode: `fixed` (G each), `allocate` (per problem from the scheduler's posterior, by `objective`:
    `marginal` maximizes the expected number of informative groups within the step's budget,
    `allocate_marginal`; `target` gives each problem the fewest answers whose expected chance of an
    informative group reaches `target`, taking problems by value per answer, `allocate`; sizes
    within [n_min, n_max]) or `sequential` (answers in rounds of `round_size`; a problem stops at
    its first right-and-wrong mix or at n_max, the rest of the budget goes to other problems) or
    `screen` (SPEED, arXiv 2506.09016: `round_size` answers per problem first; only a problem whose
    screen is a right-and-wrong mix gets the rest of its G, the screen joining its group) or
    `scheduler` (the scheduler sizes each group itself, within [n_min, n_max]: sGPO's about 1/p).
    candidates: problems the scheduler offers per G answers of budget (allocate chooses among them;
    those it leaves out still count as offered in the scheduler's epoch, as a dropped group does);
    in `screen`, problems screened per group the batch still needs.
    The step's budget is batch_groups x G answers per rank, as with a fixed G."""

    mode: str = "fixed"
    target: float = 0.8
    n_min: int = 2
    n_max: int = 32
    round_size: int = 4
    candidates: float = 2.0
    objective: str = "marginal"

    def __post_init__(self) -> None:
        if self.mode not in SIZING_MODES:
            raise ValueError(f"rollout.sizing={self.mode!r}: choose one of {SIZING_MODES}")
        if self.objective not in ("marginal", "target"):
            raise ValueError(f"rollout.size_objective={self.objective!r}: choose marginal or target")
        if not (2 <= self.n_min <= self.n_max and 0 < self.target < 1 and 1 <= self.round_size <= self.n_max
                and self.candidates >= 1):
            raise ValueError(f"group sizing needs 2 <= n_min <= n_max, 0 < target < 1, 1 <= round_size <= n_max, "
                             f"candidates >= 1; got {self}")

    def plan(self, weights: np.ndarray, values: np.ndarray, budget: int) -> Allocation:
        """The `allocate` mode's sizes for these candidates' posteriors within `budget` answers, by
        `objective`: `allocate_marginal` or `allocate` (see `expected_informative` for the arrays)."""
        if self.mode != "allocate":
            raise ValueError(f"Sizing.plan sizes from posteriors in the `allocate` mode only; this sizing is {self.mode!r}")
        if self.objective == "marginal":
            return allocate_marginal(weights, values, budget, self.n_min, self.n_max)
        return allocate(weights, values, budget, self.target, self.n_min, self.n_max)


def p_informative(p: np.ndarray, n: np.ndarray | int) -> np.ndarray:
    """P(a group of n answers holds both a right and a wrong one) at pass rate p; broadcasts."""
    p = np.asarray(p, dtype=np.float64)
    n = np.asarray(n, dtype=np.float64)
    return np.where(n >= 2, 1.0 - p**n - (1.0 - p) ** n, 0.0)


def expected_informative(weights: np.ndarray, values: np.ndarray, n: np.ndarray | int) -> np.ndarray:
    """E[p_informative(p, n)] under each problem's posterior.

    weights: (M, K) posterior weights over K grid points (rows sum to 1); values: (M, K) or (K,)
    the pass rate each grid point stands for; n: (M,) or scalar group sizes. Returns (M,)."""
    n = np.asarray(n, dtype=np.float64)
    n = n[:, None] if n.ndim == 1 else n
    return (weights * p_informative(values, n)).sum(axis=1)


def sizes_for_target(weights: np.ndarray, values: np.ndarray, target: float, n_min: int = 2,
                     n_max: int = 32) -> np.ndarray:
    """(M,) the fewest answers in [n_min, n_max] whose expected P(informative) reaches `target`;
    n_max where none does. Non-decreasing in n: p^n + (1-p)^n falls as n grows, for every p."""
    if not 2 <= n_min <= n_max:
        raise ValueError(f"need 2 <= n_min <= n_max, got n_min={n_min}, n_max={n_max}")
    sizes = np.full(weights.shape[0], n_max, dtype=np.int64)
    todo = np.ones(weights.shape[0], dtype=bool)
    for n in range(n_min, n_max + 1):  # at most n_max - n_min + 1 vectorized passes
        hit = todo & (expected_informative(weights, values, n) >= target)
        sizes[hit] = n
        todo &= ~hit
        if not todo.any():
            break
    return sizes


@dataclass(frozen=True)
class Allocation:
    """One step's plan. chosen: (C,) indices into the candidates, in the order taken; sizes: (C,)
    answers each gets; expected: (C,) each one's expected P(informative) at its size."""

    chosen: np.ndarray
    sizes: np.ndarray
    expected: np.ndarray

    @property
    def rollouts(self) -> int:
        return int(self.sizes.sum())


def allocate(weights: np.ndarray, values: np.ndarray, budget: int, target: float = 0.8, n_min: int = 2,
             n_max: int = 32, order: np.ndarray | None = None) -> Allocation:
    """Spend at most `budget` answers on the candidates (rows of `weights`, see
    `expected_informative`): each sized by `sizes_for_target`, taken by expected informative groups
    per answer (highest first; ties keep `order`, the scheduler's preference, else row order)
    while they fit. A candidate too big for what is left is skipped, not cut down: cutting it would
    drop it below its target."""
    if budget < n_min:
        raise ValueError(f"a step budget of {budget} answers cannot hold one group of n_min={n_min}")
    m = weights.shape[0]
    order = np.arange(m) if order is None else np.asarray(order)
    sizes = sizes_for_target(weights, values, target, n_min, n_max)
    expected = expected_informative(weights, values, sizes)
    rank = np.empty(m, dtype=np.int64)
    rank[order] = np.arange(m)
    by_value = np.lexsort((rank, -(expected / sizes)))  # value per answer, then the scheduler's order
    chosen, left = [], int(budget)
    for i in by_value:
        if sizes[i] <= left:
            chosen.append(i)
            left -= int(sizes[i])
        if left < n_min:
            break
    chosen = np.array(chosen, dtype=np.int64)
    return Allocation(chosen, sizes[chosen], expected[chosen])


def allocate_marginal(weights: np.ndarray, values: np.ndarray, budget: int, n_min: int = 2,
                      n_max: int = 32) -> Allocation:
    """Spend at most `budget` answers to maximize the expected number of informative groups,
    sum_i E[p_informative(p_i, n_i)], with n_i = 0 or n_min <= n_i <= n_max: an exact knapsack
    over the candidates (dynamic programming on the budget, M x (n_max - n_min + 1) vector steps of
    length budget + 1). The gain of one more answer, p^n (1-p) + (1-p)^n p, falls slower the nearer p
    is to 0 or 1, so at a given budget a problem at p = 0.9 is given more answers than one at 0.5,
    while mid-band problems are the cheaper ones to include. Chosen in order of value per answer."""
    if budget < n_min:
        raise ValueError(f"a step budget of {budget} answers cannot hold one group of n_min={n_min}")
    m, n_max = weights.shape[0], min(n_max, budget)
    sizes_all = np.arange(n_min, n_max + 1)
    value = np.stack([expected_informative(weights, values, n) for n in sizes_all], axis=1)  # (M, S)
    best = np.zeros(budget + 1)  # best[b]: the most expected informative groups within b answers
    take = np.zeros((m, budget + 1), dtype=np.int64)  # problem i's size at that optimum (0: left out)
    for i in range(m):
        new = best.copy()
        for j, n in enumerate(sizes_all):
            cand = np.full(budget + 1, -np.inf)
            cand[n:] = best[:-n] + value[i, j]
            better = cand > new + 1e-12
            new[better], take[i, better] = cand[better], n
        best = new
    sizes, b = np.zeros(m, dtype=np.int64), int(np.argmax(best))
    for i in range(m - 1, -1, -1):  # walk back through the table
        sizes[i] = take[i, b]
        b -= sizes[i]
    chosen = np.flatnonzero(sizes)
    expected = np.array([value[i, sizes[i] - n_min] for i in chosen])
    order = np.argsort(-(expected / sizes[chosen]), kind="stable")
    return Allocation(chosen[order], sizes[chosen][order], expected[order])


def needs_more(n_correct: np.ndarray, n: np.ndarray, cap: int, spent: np.ndarray | None = None) -> np.ndarray:
    """Sequential sampling's stopping rule, (M,) bool: True while a problem has only right or only
    wrong answers so far and fewer than `cap` sampled; it stops at its first mix (Reinforce-Ada,
    AR3PO). n_correct and n count the answers the loss trains on (one kept out of it, e.g. a
    truncated answer under overlong=mask, makes no mix); spent: answers sampled (default n)."""
    n_correct, n = np.asarray(n_correct), np.asarray(n)
    spent = n if spent is None else np.asarray(spent)
    return ((n_correct == 0) | (n_correct == n)) & (spent < cap)


@dataclass
class VarianceSchedule:
    """The folklore G schedule, as an option: double G when the mean within-group reward variance of
    the last `window` steps exceeds `high`, halve it below `low`, within [g_min, g_max]; after a
    change the window starts over (the next decision sees only steps at the new G)."""

    g: int = 8
    g_min: int = 2
    g_max: int = 64
    window: int = 10
    low: float = 0.05
    high: float = 0.20
    history: deque = field(default_factory=deque)

    def __post_init__(self) -> None:
        if not (2 <= self.g_min <= self.g <= self.g_max and 0 <= self.low < self.high and self.window >= 1):
            raise ValueError(f"VarianceSchedule needs 2 <= g_min <= g <= g_max, 0 <= low < high, window >= 1; got {self}")

    def observe(self, group_variance: float) -> int:
        """Record one step's mean within-group reward variance; returns G for the next step."""
        self.history.append(float(group_variance))
        if len(self.history) < self.window:
            return self.g
        while len(self.history) > self.window:
            self.history.popleft()
        mean = float(np.mean(self.history))
        new = self.g
        if mean > self.high:
            new = min(self.g * 2, self.g_max)
        elif mean < self.low:
            new = max(self.g // 2, self.g_min)
        if new != self.g:
            self.g = new
            self.history.clear()
        return self.g

    def state_dict(self) -> dict:
        return {"g": self.g, "history": list(self.history)}

    def load_state_dict(self, state: dict) -> None:
        self.g, self.history = int(state["g"]), deque(state["history"])


def deal_by_answers(sizes: np.ndarray, ranks: int) -> list[np.ndarray]:
    """Positions of `sizes` dealt to `ranks` so that ranks generating in lock-step get about equal work
    whatever the groups' sizes: largest group first, each to the rank with the fewest answers so far
    (the lowest rank on a tie; the loads then differ by at most one group's size). Returns each rank's
    positions in their original order."""
    sizes = np.asarray(sizes, dtype=np.int64)
    load = np.zeros(ranks, dtype=np.int64)
    out: list[list[int]] = [[] for _ in range(ranks)]
    for j in np.argsort(-sizes, kind="stable").tolist():
        r = int(np.argmin(load))
        out[r].append(j)
        load[r] += sizes[j]
    return [np.array(sorted(x), dtype=np.int64) for x in out]


def reachable_group_sizes(g: int, g_min: int, g_max: int) -> list[int]:
    """Every G the variance schedule can reach from g by doubling and halving within [g_min, g_max]."""
    out, up, down = [g], g * 2, g // 2
    while up <= g_max:
        out.append(up)
        up *= 2
    while down >= g_min:
        out.append(down)
        down //= 2
    return sorted(out)
