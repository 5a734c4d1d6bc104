"""MkDocs hooks: the reference pages are generated from the code at every build, so they cannot go
stale. `reference/cli.md` from the argparse parsers `grpo` builds, `reference/config.md` from the
training config's dataclasses (every key, its type, default and the section's doc), and the results
tables from `bench/README.md` with the plots under `bench/results/`. Nothing is written into docs/."""

from __future__ import annotations

import argparse
import dataclasses
import typing
from pathlib import Path

from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parent.parent
SUPPRESS = argparse.SUPPRESS


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _flag_rows(parser: argparse.ArgumentParser) -> list[str]:
    rows = ["| flag | default | what it does |", "| --- | --- | --- |"]
    for action in parser._actions:
        if action.help == SUPPRESS or isinstance(action, argparse._HelpAction):
            continue
        if isinstance(action, argparse._SubParsersAction):
            continue
        flag = ", ".join(f"`{s}`" for s in action.option_strings) or f"`{action.dest}` (positional)"
        if action.choices and not isinstance(action, argparse._SubParsersAction):
            flag += "<br>one of " + ", ".join(f"`{c}`" for c in action.choices)
        default = "" if action.default in (None, SUPPRESS) or action.required else f"`{action.default}`"
        rows.append(f"| {flag} | {_cell(default)} | {_cell(action.help or '')} |")
    return rows


def cli_reference() -> str:
    from pipelines.cli import build_parser

    parser = build_parser()
    lines = ["# Command line", "", "Generated from the parsers `grpo` builds (`pipelines/cli.py`); "
             "`grpo SUBCOMMAND --help` prints the same.", "", "## `grpo`", "", parser.description or "", "",
             *_flag_rows(parser), ""]
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for name, child in sub.choices.items():
        lines += [f"## `grpo {name}`", "", child.description or "", "", *_flag_rows(child), ""]
    return "\n".join(lines)


def _type_name(tp: object) -> str:
    text = tp if isinstance(tp, str) else getattr(tp, "__name__", str(tp))
    return str(text).replace("typing.", "")


def _default(f: dataclasses.Field) -> str:
    if f.default is not dataclasses.MISSING:
        return repr(f.default)
    if f.default_factory is not dataclasses.MISSING:
        value = f.default_factory()
        return "" if dataclasses.is_dataclass(value) else repr(value)
    return "(required)"


def _section(prefix: str, cls: type) -> list[str]:
    hints = typing.get_type_hints(cls)
    doc = (cls.__doc__ or "").strip()
    lines = [f"## `{prefix}`" if prefix else "## top level", "", f"`{cls.__module__}.{cls.__qualname__}`", ""]
    if doc and not doc.startswith(cls.__name__ + "("):
        lines += [" ".join(doc.split()), ""]
    lines += ["| key | type | default |", "| --- | --- | --- |"]
    nested = []
    for f in dataclasses.fields(cls):
        if not f.init:
            continue
        key = f"{prefix}.{f.name}" if prefix else f.name
        if dataclasses.is_dataclass(hints.get(f.name)):
            nested.append((key, hints[f.name]))
            continue
        lines.append(f"| `{key}` | `{_cell(_type_name(hints.get(f.name, f.type)))}` | `{_cell(_default(f))}` |")
    lines.append("")
    for key, sub in nested:
        lines += _section(key, sub)
    return lines


def config_reference() -> str:
    from grpo_train.config import TrainConfig

    return "\n".join(["# Training config", "",
                      "Every key `grpo train --config FILE` and its dotted overrides (`KEY=VALUE`) accept, generated "
                      "from the dataclasses in `grpo_train/config.py`; an unknown key is an error naming the ones "
                      "accepted. Each run writes its resolved config (`resolved_config.yaml`).", "",
                      *_section("", TrainConfig)])


def on_files(files: Files, config) -> Files:
    results = ROOT / "bench" / "results"
    plots = sorted(results.glob("*.png"))
    # bench/README.md (written by `grpo bench all`) shows each plot beside its table, linked from bench/
    tables = (ROOT / "bench" / "README.md").read_text(encoding="utf-8")
    tables = tables.replace("# Benchmarks", "# Benchmark tables", 1).replace("](results/", "](plots/")
    for uri, content in (("reference/cli.md", cli_reference()), ("reference/config.md", config_reference()),
                         ("results/tables.md", tables)):
        files.append(File.generated(config, uri, content=content))
    for png in plots:
        files.append(File.generated(config, f"results/plots/{png.name}", abs_src_path=str(png)))
    return files
