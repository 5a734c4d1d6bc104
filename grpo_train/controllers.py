"""Quantities that change over a run: the learning-rate schedule, an adaptive KL coefficient and
the reward window of `window_norm`. Pure python; the learner owns one of each and checkpoints
their state.

    lr = base_lr * lr_factor(step, total=400, warmup=20, kind="cosine", min_ratio=0.1)
    kl = AdaptiveKL(beta=0.05, target=0.02, horizon=10); kl.update(observed_kl)  # kl.beta moves
    window = RewardWindow(groups=100); window.add(group_stats); window.std()
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass

LR_SCHEDULES = ("constant", "linear", "cosine")


def lr_factor(step: int, total: int, warmup: int = 0, kind: str = "constant", min_ratio: float = 0.0) -> float:
    """Multiplier of the base learning rate at optimizer step `step` (0-based): linear warmup from
    1/warmup over the first `warmup` steps, then constant, or a linear or cosine decay that reaches
    min_ratio at step `total` (and stays there)."""
    if kind not in LR_SCHEDULES:
        raise ValueError(f"lr schedule must be one of {', '.join(LR_SCHEDULES)}, got {kind!r}")
    if step < warmup:
        return (step + 1) / warmup
    if kind == "constant":
        return 1.0
    progress = min(1.0, (step - warmup) / max(1, total - warmup))
    shape = 1 - progress if kind == "linear" else 0.5 * (1 + math.cos(math.pi * progress))
    return min_ratio + (1 - min_ratio) * shape


@dataclass
class AdaptiveKL:
    """Proportional controller of the KL coefficient toward a target KL per token (Ziegler et al.
    2019, as TRL and verl offer it): beta *= 1 + clip(kl / target - 1, -0.2, 0.2) / horizon, once
    per optimizer step. A KL above target raises beta, below lowers it; horizon sets how fast."""

    beta: float
    target: float
    horizon: float = 10.0

    def update(self, kl: float) -> float:
        if math.isfinite(kl):
            error = min(0.2, max(-0.2, kl / self.target - 1))
            self.beta *= 1 + error / self.horizon
        return self.beta


class RewardWindow:
    """Sum, sum of squares and count of the rewards of the last `groups` groups, group by group, so
    the window's reward std (population) is exact for whatever group sizes came in."""

    def __init__(self, groups: int = 100) -> None:
        self.groups: deque[tuple[float, float, float]] = deque(maxlen=groups)

    def add(self, stats: list[tuple[float, float, float]]) -> None:
        """stats: (sum, sum of squares, count) of each new group, oldest first."""
        self.groups.extend(stats)

    def std(self) -> float:
        total = sum(s for s, _, _ in self.groups)
        sq = sum(q for _, q, _ in self.groups)
        n = sum(c for _, _, c in self.groups)
        if n == 0:
            return 0.0
        return math.sqrt(max(0.0, sq / n - (total / n) ** 2))

    def state_dict(self) -> dict:
        return {"maxlen": self.groups.maxlen, "groups": [list(g) for g in self.groups]}

    def load_state_dict(self, state: dict) -> None:
        """The saved groups, in this window's own size (a resumed run may have changed it)."""
        self.groups = deque((tuple(g) for g in state["groups"]), maxlen=self.groups.maxlen)
