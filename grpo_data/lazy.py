"""A package's public names, imported from their modules only when first used (PEP 562).

Each room's `__init__` names where its public names live; `from grpo_data.tables import write_shards`
then imports `grpo_data.tables.shards` and nothing else, so reading a table never loads vLLM, torch
or datasets, and no `__init__` can close an import circle between two modules of its room.
"""

import importlib
from collections.abc import Callable


def lazy_exports(package: str, homes: dict[str, str]) -> tuple[Callable, Callable]:
    """(`__getattr__`, `__dir__`) for `package`, whose name `n` lives in `package.<homes[n]>`."""

    def getattr_(name: str):
        if name not in homes:
            # also how `from package import submodule` falls through to importing the submodule
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(f"{package}.{homes[name]}"), name)

    def dir_() -> list[str]:
        return sorted(homes)

    return getattr_, dir_
