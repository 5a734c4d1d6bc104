"""The front page and the generated reference. (`make test` also builds the whole site with
`mkdocs build --strict`, where a dead link inside docs/ or a page missing from the navigation fails.)"""

from __future__ import annotations

import dataclasses
import importlib.util
import re
import typing
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _hooks():
    spec = importlib.util.spec_from_file_location("docs_hooks", ROOT / "docs" / "hooks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_readme_is_a_front_page_whose_links_resolve():
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 200
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text)
    assert len(links) >= 10
    missing = [link for link in links if "://" not in link and not (ROOT / link).exists()]
    assert missing == []


def _keys(cls: type, prefix: str = "") -> list[str]:
    hints, keys = typing.get_type_hints(cls), []
    for f in dataclasses.fields(cls):
        key = f"{prefix}{f.name}"
        keys += _keys(hints[f.name], key + ".") if dataclasses.is_dataclass(hints[f.name]) else [key]
    return keys


def test_the_config_reference_lists_every_key_with_its_default():
    from grpo_train.config import RolloutConfig, SchedulerSection, TrainConfig

    page = _hooks().config_reference()
    keys = _keys(TrainConfig)
    assert len(keys) > 80 and "rollout.vllm.max_model_len" in keys
    assert [k for k in keys if f"| `{k}` |" not in page] == []
    row = next(line for line in page.splitlines() if line.startswith("| `scheduler.hi` |"))
    assert row.endswith(f"| `{SchedulerSection().hi!r}` |")
    row = next(line for line in page.splitlines() if line.startswith("| `rollout.temperature` |"))
    assert row.endswith(f"| `{RolloutConfig().temperature!r}` |")


def test_the_cli_reference_lists_every_subcommand_and_flag():
    import argparse

    from pipelines.cli import SUBCOMMANDS, build_parser

    page = _hooks().cli_reference()
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    assert [name for name in SUBCOMMANDS if f"## `grpo {name}`" not in page] == []
    flags = {s for child in sub.choices.values() for a in child._actions if a.help != argparse.SUPPRESS
             for s in a.option_strings if s not in ("-h", "--help")}
    assert len(flags) > 80
    assert sorted(f for f in flags if f"`{f}`" not in page) == []
