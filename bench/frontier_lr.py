"""`grpo bench frontier_lr` (issue #59, Amendment 2 of the frontier calibration): the frontier world's
learning rate, chosen on the validation split by a grid that is never bounded by an untested neighbour.

Arm B (uniform + DAPO) is trained from the frontier pipeline's warm start with its training config
(`runs/frontier/train/resolved_config.yaml`, written by `grpo bench frontier`) at each grid rate to
BUDGET rollouts. Validation is scored at k = 32 at the start and at the budget and at k = 4 after every
EVAL_EVERY rollouts. The choice is the stable run with the best final validation accuracy. A run is
unstable when a k = 4 point falls below the start by more than 2 SE. A choice at an edge of the grid
extends it by a factor of 2 on that side, and the choice is read again.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

GRID = (3e-5, 6e-5, 1.2e-4)
BUDGET = 36_000
EVAL_EVERY = 6_000
SEED = 0
SOURCE = Path("runs/frontier")


def base_overrides(source: Path = SOURCE) -> list[str]:
    """The frontier pipeline's training run as it resolved, scored on the validation split."""
    from bench.common import resolved_overrides

    resolved = source / "train" / "resolved_config.yaml"
    if not resolved.exists():
        raise FileNotFoundError(f"{resolved} is missing: run `grpo bench frontier` first (its warm start and "
                                "training config are what this grid trains from)")
    return [*resolved_overrides(resolved), f"data.heldout={source / 'world' / 'val.parquet'}", "run.steps=100000", "run.eval_every=0",
            f"run.eval_every_rollouts={EVAL_EVERY}", "run.eval_k=4", "run.eval_k_ends=32", "run.save_every=0",
            "run.progress=false", f"run.max_rollouts={BUDGET}", f"run.seed={SEED}", "run.eval_first=true"]


def stable(curve: list[dict]) -> bool:
    """No evaluation below the start by more than 2 SE of the two (unpaired)."""
    start = curve[0]
    return all(e["accuracy"] - start["accuracy"] >= -2 * float(np.hypot(e["se"], start["se"])) for e in curve[1:])


def choose(runs: dict[float, list[dict]]) -> dict:
    """The stable rate with the best final accuracy, and whether the grid must grow: `extend` is the
    rate to add (half the lowest or twice the highest) when the choice sits at an edge, else None."""
    ok = {lr: c for lr, c in runs.items() if stable(c)}
    if not ok:
        return {"chosen": None, "extend": min(runs) / 2, "stable": []}
    chosen = max(ok, key=lambda lr: ok[lr][-1]["accuracy"])
    lrs = sorted(runs)
    extend = chosen * 2 if chosen == lrs[-1] else chosen / 2 if chosen == lrs[0] else None
    return {"chosen": chosen, "extend": extend, "stable": sorted(ok)}


def curve(records: list[dict]) -> list[dict]:
    return [{"step": r["step"], "k": r.get("eval_k"), "rollouts": r["rollouts_generated"],
             "tokens": r.get("tokens_generated"), "accuracy": r["heldout_accuracy"], "se": r["heldout_accuracy_se"],
             "by_level": {k.removeprefix("heldout_accuracy_level_"): v for k, v in r.items()
                          if k.startswith("heldout_accuracy_level_")}}
            for r in records if r["kind"] == "eval"]


def run(workdir: str = "runs/bench-frontier-lr", grid: tuple[float, ...] = GRID, max_extensions: int = 2) -> dict:
    """Every grid rate (a finished run with the same key is reused), extended at an edge choice."""

    from bench.common import cached_train_run, now

    started = now()
    base = base_overrides()
    model = next(a.split("=", 1)[1] for a in base if a.startswith("model="))
    inputs = [json.loads(model), str(SOURCE / "world" / "train.decontaminated.parquet"),
              str(SOURCE / "world" / "val.parquet")]
    runs, seconds, lrs = {}, {}, list(grid)
    for _ in range(max_extensions + 1):
        for lr in lrs:
            if lr in runs:
                continue
            records, seconds[lr] = cached_train_run(f"lr{lr:g}", [f"optim.lr={lr}"], base, Path(workdir), inputs, BUDGET)
            runs[lr] = curve(records)
            print(f"frontier_lr {lr:g}: val {runs[lr][0]['accuracy']:.3f} -> {runs[lr][-1]['accuracy']:.3f} "
                  f"({seconds[lr]:.0f}s)", flush=True)
        picked = choose(runs)
        if picked["extend"] is None:
            break
        lrs.append(picked["extend"])
    from bench.common import run_key

    return {"split": "val", "seed": SEED, "budget_rollouts": BUDGET, "eval_every_rollouts": EVAL_EVERY,
            "grid": sorted(runs), "registered_grid": list(grid), "code": run_key(base, inputs)["code"],
            "started": started, "runs": {f"{lr:g}": {"curve": c, "seconds": seconds[lr], "stable": stable(c)}
                                         for lr, c in sorted(runs.items())},
            **{k: v for k, v in picked.items()}, "bounded": picked["extend"] is None}
