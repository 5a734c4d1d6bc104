"""How a profile's samples are seeded: each sampling round of a chunk reseeds the engine from (seed,
the chunk's ids, the round) (`round_seed`), so a resumed run draws what an uninterrupted one would.
`seeding_scheme` names the scheme a run used (its metadata's `seeding`): SEEDING, or
SEEDING_ENGINE_WIDE for an engine that cannot be reseeded (a test double), which draws from its one
stream, so a resumed run draws other samples than an uninterrupted one."""

from __future__ import annotations

import hashlib
import json

SEEDING = "per-chunk round: sha256(seed, chunk ids, round)"
SEEDING_ENGINE_WIDE = "engine-wide: the engine's seed at start only (a resumed run draws other samples)"


def round_seed(seed: int, ids: list[str], round_no: int) -> int:
    """The seed the engine is reseeded with before sampling round `round_no` (0: the screen or the
    fixed-k round) of the chunk holding problems `ids` (in the order they are sampled): the first 4
    bytes of sha256 over the three, so it depends on nothing else, not where the chunk falls in a
    resumed run. 32 bits: numpy's seeding takes no more."""
    digest = hashlib.sha256(json.dumps([int(seed), [str(i) for i in ids], int(round_no)]).encode()).digest()
    return int.from_bytes(digest[:4], "big")


def seeding_scheme(engine) -> str:
    """The metadata's `seeding`: SEEDING for an engine that can be reseeded, else SEEDING_ENGINE_WIDE."""
    return SEEDING if callable(getattr(engine, "reseed", None)) else SEEDING_ENGINE_WIDE
