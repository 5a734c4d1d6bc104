"""Problems filed by cell, for drawing them in proportion to a score that is shared within each cell.

The band scheduler's proposal score of a problem depends only on its cell (its difficulty group and
its evidence rounded to half samples) and on its group's prior and drift, which change at every
batch. Scoring the few thousand occupied cells costs far less than scoring a million problems, so
the pool is kept as cells, each cell's members split into those still offerable this epoch and those
already offered:

    index = CellIndex(keys, offered)       # O(N log N), at a rescore
    cells = index.occupied()               # slots with members; score them, then
    i = index.member(slot, u)              # a uniform offerable member of a slot, O(1)
    picks = index.draw(slots, weight, m, rng)  # or m of them, cells in proportion to weight
    index.offer(i); index.move(i, key)     # O(1) each
    index.reset_offered()                  # a new epoch: O(cells)

Each slot's members are a Python list: [offerable ... | offered ...], the boundary at `avail`;
`slot[i]` and `pos[i]` say where problem i is, so every operation is a swap or an append.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np


def sort_by_cell(codes: np.ndarray) -> np.ndarray:
    """A permutation sorting `codes` (N,) ascending. Pools hold far fewer distinct codes than
    problems, so the codes are ranked (O(N) through a table when they are small) and the ranks
    sorted by numpy's O(N) radix sort for 16-bit integers; else a comparison sort."""
    if codes.size and codes.min() >= 0 and codes.max() < 1 << 24:
        seen = np.bincount(codes)
        if np.count_nonzero(seen) < 1 << 16:
            rank = (np.cumsum(seen > 0) - 1).astype(np.uint16)
            return np.argsort(rank[codes], kind="stable")
    return np.argsort(codes, kind="stable")


class CellTable(NamedTuple):
    """The occupied cells of a CellIndex with their proposal scores, all (U,)."""

    slots: np.ndarray
    group: np.ndarray
    successes: np.ndarray
    failures: np.ndarray
    sizes: np.ndarray
    avail: np.ndarray
    score: np.ndarray
    informative: np.ndarray


class CellIndex:
    def __init__(self, keys: np.ndarray, offered: np.ndarray) -> None:
        keys = np.asarray(keys, dtype=np.int64)
        offered = np.asarray(offered, dtype=bool)
        order = sort_by_cell(keys * 2 + offered)  # by cell, offerable first within each
        sorted_keys = keys[order]
        starts = np.flatnonzero(np.r_[True, sorted_keys[1:] != sorted_keys[:-1]])
        sizes = np.diff(np.r_[starts, keys.size])
        cell_keys = sorted_keys[starts]
        self.keys: list[int] = cell_keys.tolist()
        self.slot_of: dict[int, int] = {k: s for s, k in enumerate(self.keys)}
        flat = order.tolist()  # one conversion, then list slices: much faster than a tolist per cell
        self.members: list[list[int]] = [flat[a:b] for a, b in zip(starts.tolist(), (starts + sizes).tolist())]
        self.avail: list[int] = np.add.reduceat((~offered[order]).astype(np.int64), starts).tolist()
        self.slot = np.empty(keys.size, dtype=np.int64)  # (N,) each problem's slot
        self.slot[order] = np.repeat(np.arange(cell_keys.size), sizes)
        self.pos = np.empty(keys.size, dtype=np.int64)  # (N,) its place in its slot's list
        self.pos[order] = np.arange(keys.size) - np.repeat(starts, sizes)

    def occupied(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(slots, keys, members, offerable members) of the slots that have members, as arrays."""
        sizes = np.fromiter(map(len, self.members), dtype=np.int64, count=len(self.members))
        slots = np.flatnonzero(sizes)
        return slots, np.asarray(self.keys, dtype=np.int64)[slots], sizes[slots], np.asarray(self.avail)[slots]

    def member(self, slot: int, u: float) -> int:
        """The offerable member at fraction u in [0, 1) of the slot's offerable ones."""
        return self.members[slot][int(u * self.avail[slot])]

    def draw(self, slots: np.ndarray, weight: np.ndarray, m: int, rng: np.random.Generator) -> np.ndarray:
        """Up to m distinct offerable problems: a cell of `slots` in proportion to `weight` (U,) (a
        score x its offerable members), then one of its offerable members uniformly."""
        cum = np.cumsum(weight)
        if m < 1 or cum[-1] <= 0:
            return np.zeros(0, dtype=np.int64)
        pick = np.minimum(np.searchsorted(cum, rng.random(m) * cum[-1], side="right"), cum.size - 1)
        within = rng.random(m)
        return np.unique([self.member(int(slots[j]), float(u)) for j, u in zip(pick, within)])

    def _swap(self, slot: int, a: int, b: int) -> None:
        m = self.members[slot]
        m[a], m[b] = m[b], m[a]
        self.pos[m[a]], self.pos[m[b]] = a, b

    def offer(self, i: int) -> None:
        """Problem i is no longer offerable this epoch."""
        s, p = int(self.slot[i]), int(self.pos[i])
        if p < self.avail[s]:
            self._swap(s, p, self.avail[s] - 1)
            self.avail[s] -= 1

    def move(self, i: int, key: int) -> None:
        """File problem i under cell `key` (its evidence changed), keeping whether it is offerable."""
        s, p = int(self.slot[i]), int(self.pos[i])
        if self.keys[s] == key:
            return
        offerable = p < self.avail[s]
        if offerable:  # to the end of the offerable part, then out of it
            self._swap(s, p, self.avail[s] - 1)
            p = self.avail[s] - 1
            self.avail[s] -= 1
        self._swap(s, p, len(self.members[s]) - 1)
        self.members[s].pop()
        t = self.slot_of.get(key)
        if t is None:
            t = self.slot_of[key] = len(self.keys)
            self.keys.append(key)
            self.members.append([])
            self.avail.append(0)
        self.members[t].append(i)
        self.slot[i], self.pos[i] = t, len(self.members[t]) - 1
        if offerable:  # into the offerable part: swap with the first offered member
            self._swap(t, len(self.members[t]) - 1, self.avail[t])
            self.avail[t] += 1

    def reset_offered(self) -> None:
        """A new epoch: every member offerable again."""
        self.avail = [len(m) for m in self.members]

    def key_of(self) -> np.ndarray:
        """(N,) each problem's cell key."""
        return np.asarray(self.keys, dtype=np.int64)[self.slot]

    # ------------------------------------------------------------ state (exact resume: draws depend on list order)
    def state(self) -> dict[str, np.ndarray]:
        sizes = np.fromiter(map(len, self.members), dtype=np.int64, count=len(self.members))
        order = np.fromiter((i for m in self.members for i in m), dtype=np.int64, count=int(sizes.sum()))
        return {"cell_keys": np.asarray(self.keys, dtype=np.int64), "cell_sizes": sizes,
                "cell_avail": np.asarray(self.avail, dtype=np.int64), "cell_order": order}

    @classmethod
    def from_state(cls, state: dict[str, np.ndarray]) -> CellIndex:
        index = cls.__new__(cls)
        sizes = state["cell_sizes"]
        order = state["cell_order"]
        index.keys = state["cell_keys"].tolist()
        index.slot_of = {k: s for s, k in enumerate(index.keys)}
        flat, ends = order.tolist(), np.cumsum(sizes).tolist()
        index.members = [flat[b - n:b] for b, n in zip(ends, sizes.tolist())]
        index.avail = state["cell_avail"].tolist()
        index.slot = np.empty(order.size, dtype=np.int64)
        index.slot[order] = np.repeat(np.arange(sizes.size), sizes)
        index.pos = np.empty(order.size, dtype=np.int64)
        index.pos[order] = np.arange(order.size) - np.repeat(np.cumsum(sizes) - sizes, sizes)
        return index
