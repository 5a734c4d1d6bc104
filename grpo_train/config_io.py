"""Reading and writing the training config: YAML with dotted overrides, into `grpo_train.config`'s sections.

    cfg = load_config("pipelines/arith_demo.yaml", ["rollout.group_size=8", "run.steps=20"])

A file is a bare train config or a pipeline file (`grpo pipeline`), whose `train:` section trains
the model and data its stages write (`pipeline_train_paths`, `train_tree`). Every value is checked
against its field's type (`build_section`); unknown keys are errors naming the key and the accepted
ones; each run writes its resolved config (`resolved_config.yaml`, `dump_config`) beside its outputs.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import math
import types
import typing
from pathlib import Path

import yaml

from grpo_train.config import TrainConfig


def build_section(cls, values: dict, path: str):
    """An instance of the dataclass `cls` from a mapping: nested sections built the same way, every
    value checked against its field's type (`_coerce`), unknown keys are errors naming the key."""
    if not isinstance(values, dict):
        raise ValueError(f"{path or 'config'}: expected a mapping, got {type(values).__name__}")
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(values) - set(fields))
    if unknown:
        where = f"{path}." if path else ""
        raise ValueError(f"unknown config key(s) {', '.join(where + k for k in unknown)}; "
                         f"accepted under {path or 'the top level'}: {', '.join(fields)}")
    hints = _hints(cls)
    kwargs = {}
    for name, value in values.items():
        f = fields[name]
        where = f"{path}.{name}" if path else name
        sub = f.default_factory if f.default_factory is not dataclasses.MISSING else None
        if sub is not None and dataclasses.is_dataclass(sub):
            kwargs[name] = build_section(sub, value, where)
        else:
            kwargs[name] = _coerce(value, hints[name], where)
    return cls(**kwargs)


@functools.cache
def _hints(cls) -> dict:
    return typing.get_type_hints(cls)


def _coerce(value, hint, where: str):
    """`value` as the field type `hint` asks: numbers (YAML reads `3e-5` or `1e3`, with no dot, as
    strings: they are numbers here, 1e3 the integer 1000 in an integer field), booleans, tuples of
    these (lists become tuples, element by element); a value that is not what the field takes is an
    error naming the key. Other types pass through to the dataclass's own checks."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        rest = [a for a in args if a is not type(None)]
        return _coerce(value, rest[0], where) if len(rest) == 1 else value
    if hint in (float, int):
        return _number(value, hint, where)
    if hint is bool:
        if not isinstance(value, bool):
            raise ValueError(f"{where}: expected true or false, got {value!r}")
        return value
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis and isinstance(value, str | int | float):
        value = [value]  # `stop: "###"` is one stop string, not the characters of one
    if origin is tuple and not isinstance(value, list | tuple):
        raise ValueError(f"{where}: expected a list, got {value!r}")
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_coerce(v, args[0], f"{where}[{i}]") for i, v in enumerate(value))
        if len(args) != len(value):
            raise ValueError(f"{where}: expected {len(args)} values, got {len(value)}: {value!r}")
        return tuple(_coerce(v, a, f"{where}[{i}]") for i, (v, a) in enumerate(zip(value, args, strict=True)))
    return tuple(value) if isinstance(value, list) else value


def _number(value, kind: type, where: str):
    wanted = "a number" if kind is float else "an integer"
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ValueError(f"{where}: expected {wanted}, got {value!r}")
    if kind is int and isinstance(value, int):
        return value  # exact, however large
    if kind is int and isinstance(value, str):
        try:
            return int(value)  # "12345678901234567891" exact too
        except ValueError:
            pass  # "1e3" and the like: through float below
    try:
        number = float(value)
    except (ValueError, OverflowError):
        raise ValueError(f"{where}: expected {wanted}, got {value!r}") from None
    if not math.isfinite(number):
        raise ValueError(f"{where}: expected a finite number, got {value!r}")
    if kind is float:
        return number
    if not number.is_integer():
        raise ValueError(f"{where}: expected {wanted}, got {value!r}")
    return int(number)


def _set_dotted(tree: dict, dotted: str, value) -> None:
    keys = dotted.split(".")
    node = tree
    for k in keys[:-1]:
        node = node.setdefault(k, {})
        if not isinstance(node, dict):
            raise ValueError(f"override {dotted}: {k} is not a section")
    node[keys[-1]] = value


def pipeline_train_paths(spec: dict) -> dict:
    """Where `grpo pipeline` writes what training reads, for a pipeline file's spec: the model it
    names (or the warm start it builds), the data stage's tables, the profile and the run folder.
    A pipeline file's `train:` section may set any of these itself. A pipeline whose profile is not
    for training (`profile: {for_training: false}`, the demo's) trains from no profile."""
    out = Path(spec.get("out", "runs/pipeline"))
    data = out / ("world" if "world" in spec else "data")
    for_training = profile_for_training(spec)
    return {"model": spec.get("model") or str(out / "policy-warm"),
            "data": {"train": str(data / "train.parquet"),
                     "heldout": str(data / ("test.parquet" if "world" in spec else "heldout.parquet")),
                     "profile": str(out / "profile.parquet") if for_training else None},
            "run": {"out": str(out / "train")}}


def profile_for_training(spec: dict) -> bool:
    """A pipeline's `profile: {for_training: ...}` (default true): whether training starts from the
    pipeline's profile (its sampler's estimates, its priors) or from none, the profile then taken
    after training as measurement only."""
    value = (spec.get("profile") or {}).get("for_training", True)
    if not isinstance(value, bool):
        raise ValueError(f"profile: for_training must be true or false, got {value!r}")
    return value


def is_pipeline_spec(tree) -> bool:
    return isinstance(tree, dict) and "train" in tree and ("world" in tree or "data" in tree)


def deep_merge(base: dict, extra: dict) -> dict:
    """`extra` over a copy of `base`, section by section (nested dicts merge, other values replace)."""
    out = copy.deepcopy(base)
    for k, v in extra.items():
        out[k] = deep_merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def train_tree(spec: dict) -> dict:
    """The train config tree of a pipeline spec: its `train:` section over the pipeline's paths, its
    `data:` taking the profile section's prior settings unless it names its own (`stage_prior`), or
    when the profile is not for training."""
    tree = deep_merge(pipeline_train_paths(spec), spec.get("train") or {})
    # training that reads no profile takes none of its priors either: only those its own data: names
    inherited = spec.get("profile") if profile_for_training(spec) else None
    tree["data"].update(stage_prior((spec.get("train") or {}).get("data"), inherited))
    return tree


# a pipeline section's prior settings: profile and shards name them so, train under data (data.prior, ...)
PRIOR_KEYS = ("prior", "prior_profile", "prior_weight")


def stage_prior(own: dict | None, profile: dict | None) -> dict:
    """The prior settings (PRIOR_KEYS) a pipeline's shards or train stage uses: those of its own
    section (`own`; train's `data:`) when it names any of them (`prior: null` names none), else the
    `profile:` section's. A profile that stopped early on a prior is read with that prior only
    (`grpo_data.curriculum.priors.check_recorded_prior`), so the stages after it take it by default."""
    own, profile = own or {}, profile or {}
    source = own if any(k in own for k in PRIOR_KEYS) else profile
    return {k: source[k] for k in PRIOR_KEYS if source.get(k) is not None}


def load_config(path: str | Path | None = None, overrides: list[str] | None = None) -> TrainConfig:
    """YAML file (optional) + `key.sub=value` overrides (values parsed as YAML scalars).

    The file is a bare train config, or a pipeline file (`grpo pipeline`): then its `train:` section,
    with the model and data the pipeline names (`pipeline_train_paths`)."""
    tree = {}
    if path is not None:
        loaded = yaml.safe_load(Path(path).read_text()) or {}
        if is_pipeline_spec(loaded):
            tree = train_tree(loaded)
        else:
            tree = loaded.get("train", loaded) if isinstance(loaded, dict) else loaded
    return config_from_tree(tree, overrides)


def config_from_tree(tree: dict, overrides: list[str] | None = None) -> TrainConfig:
    tree = copy.deepcopy(tree)
    for item in overrides or []:
        if "=" not in item:
            raise ValueError(f"override {item!r} must look like key.sub=value")
        key, raw = item.split("=", 1)
        _set_dotted(tree, key.strip(), yaml.safe_load(raw))
    return build_section(TrainConfig, tree, "")


def to_dict(cfg) -> dict:
    def conv(x):
        if isinstance(x, tuple):
            return list(x)
        if isinstance(x, dict):
            return {k: conv(v) for k, v in x.items()}
        return x

    return conv(dataclasses.asdict(cfg))


def dump_config(cfg: TrainConfig) -> str:
    return yaml.safe_dump(to_dict(cfg), sort_keys=False)
