"""Scheduler state on disk: a scheduler's `state_dict()` as scheduler.npz (arrays, no pickle) and
scheduler.json (settings, counters, the random generator's state), each written atomically."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from grpo_data.tables import io


def check_state_matches(meta: dict, name: str, n: int, origin: str) -> None:
    if meta["name"] != name or meta["n"] != n:
        raise ValueError(f"{origin}: scheduler state is {meta['name']} over {meta['n']} problems, "
                         f"not {name} over {n}")


def save_state(state: dict, folder: str | Path) -> None:
    """A scheduler's `state_dict()` as scheduler.npz (arrays, no pickle) + scheduler.json, each atomic."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / ".scheduler.tmp.npz"
    np.savez(tmp, **state["arrays"])
    tmp.replace(folder / "scheduler.npz")
    io.write_json(folder / "scheduler.json", state["meta"])


def load_state(folder: str | Path) -> dict:
    folder = Path(folder)
    meta = json.loads((folder / "scheduler.json").read_text())
    with np.load(folder / "scheduler.npz", allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    return {"arrays": arrays, "meta": meta}


class StateFiles:
    """`save(folder)` and `load(folder)` for a scheduler from its `state_dict()` / `load_state_dict(state,
    origin)`: the files `save_state` writes, the folder named in any refusal on loading."""

    def save(self, folder: str | Path) -> None:
        save_state(self.state_dict(), folder)

    def load(self, folder: str | Path) -> None:
        self.load_state_dict(load_state(folder), origin=str(folder))
