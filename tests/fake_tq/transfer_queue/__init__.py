"""An in-process stand-in for TransferQueue, the key-value store verl 0.9's V1 trainer keeps prompts and
trajectories in (a Ray-backed service in verl's own installs), for tests/verl_v1_driver.py only.

It keeps what the V1 code reads back: per partition, each key's tag (merged on every put, as the
replay buffer expects a prompt's `is_prompt`/`global_steps` to survive its status updates) and fields.
"""

from __future__ import annotations

from dataclasses import dataclass, field

STORE: dict[str, dict[str, dict]] = {}


@dataclass
class KVBatchMeta:
    partition_id: str
    keys: list
    tags: list
    extra_info: dict = field(default_factory=dict)


def init(*args, **kwargs) -> None:
    return None


def close() -> None:
    STORE.clear()


def rows(fields, n: int) -> list[dict]:
    """Per-key field dicts from a list of dicts or a TensorDict of n rows."""
    if fields is None:
        return [{} for _ in range(n)]
    if isinstance(fields, list):
        return fields
    out = []
    for i in range(n):
        row = {}
        for k in fields.keys():
            v = fields.get(k)
            item = v[i] if hasattr(v, "__getitem__") else v
            row[k] = getattr(item, "data", item)
        out.append(row)
    return out


def kv_batch_put(keys, partition_id, tags=None, fields=None) -> None:
    part = STORE.setdefault(partition_id, {})
    tags = tags or [{} for _ in keys]
    for key, tag, value in zip(keys, tags, rows(fields, len(keys)), strict=True):
        entry = part.setdefault(str(key), {"tag": {}, "fields": {}})
        entry["tag"].update(tag or {})
        entry["fields"].update(value)


async def async_kv_put(key, partition_id, tag=None, fields=None) -> None:
    kv_batch_put([key], partition_id, [tag or {}], None if fields is None else [fields])


async def async_kv_batch_put(keys, partition_id, fields=None, tags=None) -> None:
    kv_batch_put(keys, partition_id, tags, fields)


def kv_list(partition_id=None) -> dict:
    parts = [partition_id] if partition_id is not None else list(STORE)
    return {p: {k: dict(v["tag"]) for k, v in STORE.get(p, {}).items()} for p in parts}


def kv_batch_get(keys, partition_id, select_fields=None) -> dict:
    part = STORE[partition_id]
    names = select_fields or sorted({n for k in keys for n in part[k]["fields"]})
    return {n: [part[k]["fields"].get(n) for k in keys] for n in names}


def kv_clear(keys, partition_id) -> None:
    part = STORE.get(partition_id, {})
    for key in keys:
        part.pop(str(key), None)
