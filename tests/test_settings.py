"""One home per setting: the sampling defaults live in SamplingConfig, the band's in
`grpo_data.curriculum.stats.DEFAULT_BAND` (BandConfig and the stopping rule read it), and every section, flag
and option table that needs them derives them; allowed names come from the registries; a setting a
scheduler does not take is an error, not silently dropped."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LIBRARY = ("grpo_data", "grpo_train", "pipelines")


def _library_hits(pattern: str) -> list[str]:
    rx = re.compile(pattern)
    return [str(p.relative_to(ROOT)) for package in LIBRARY for p in sorted((ROOT / package).rglob("*.py"))
            for line in p.read_text().splitlines() if rx.search(line)]


def test_the_band_and_the_sampling_defaults_are_written_once():
    assert _library_hits(r"\(0\.2, ?0\.8\)|[\"']0\.2, ?0\.8[\"']|\b(lo|hi): float = 0\.[28]\b") == ["grpo_data/curriculum/stats.py"]
    # BandConfig.temperature is another setting: how sharply selection prefers P(in band)
    assert _library_hits(r"\btemperature: float = [0-9]") == ["grpo_data/curriculum/band_scheduler.py", "grpo_data/generation/prompting.py"]
    assert _library_hits(r"\b(max_tokens: int = 256|top_p: float = 1\.0)\b") == ["grpo_data/generation/prompting.py"] * 2
    # any completion budget written as a default (the learner's once read 1024), not only SamplingConfig's own value
    assert _library_hits(r"\bmax_tokens: int = [0-9]{2,}") == ["grpo_data/generation/prompting.py"]
    assert _library_hits(r"MIN_CLIPPED_TOKENS = [0-9]|min_clipped?_tokens: int = [0-9]") == ["grpo_data/generation/context.py"]
    assert _library_hits(r"OVERLONG_PROMPTS = |: str = \"skip\"|choices=\(\"skip\"") == ["grpo_data/generation/context.py"]
    assert _library_hits(r"ANSWER_FORMATS = |choices=\(\"auto\", \"boxed\"") == ["grpo_data/generation/prompting.py"]
    assert _library_hits(r"DEFAULT_GROUP_SIZE = |group_size: int = 8\b|--group-size.*default=[0-9]") == ["grpo_data/curriculum/stats.py"]
    assert _library_hits(r"DEFAULT_EDGES = |0, ?0?\.1, ?0?\.3, ?0?\.7") == ["grpo_data/tables/shards.py"] * 2  # and its usage line


def test_sections_and_option_tables_derive_the_owners_defaults():
    from grpo_data.curriculum.band_scheduler import BandConfig
    from grpo_data.curriculum.stats import DEFAULT_BAND, StoppingRule
    from grpo_data.generation.prompting import SamplingConfig
    from grpo_data.profile_config import PROFILE_OPTIONS, ProfileConfig, profile_options
    from grpo_train.config import RolloutConfig, SchedulerSection

    band, section = BandConfig(), SchedulerSection()
    assert (band.lo, band.hi) == (StoppingRule().lo, StoppingRule().hi) == DEFAULT_BAND
    for name in ("lo", "hi", "decay", "max_prior_k", "explore", "epoch", "skip_below", "dry"):
        assert getattr(section, name) == getattr(band, name), name
    assert RolloutConfig().sampling() == SamplingConfig()
    assert RolloutConfig(temperature=0.6, max_tokens=4096).sampling(logprobs=True) == SamplingConfig(
        temperature=0.6, max_tokens=4096, logprobs=True)
    cfg, _ = profile_options({"adaptive": True})
    assert cfg.sampling == SamplingConfig() and cfg.rule == StoppingRule()
    assert (cfg.k, cfg.chunk_size, cfg.wave) == (ProfileConfig().k, ProfileConfig().chunk_size, ProfileConfig().wave)
    assert PROFILE_OPTIONS["band"] == DEFAULT_BAND


def test_the_trainer_the_plug_ins_and_the_simulation_start_the_band_scheduler_from_band_configs_defaults():
    """No adapter between two sets of defaults: the section, the trainer's kwargs and the TRL/verl
    plug-in's scheduler all read BandConfig (without_replacement included: once per epoch)."""
    from dataclasses import fields

    from grpo_data.curriculum.band_scheduler import BandConfig
    from grpo_data.integrations.feedback import Curriculum
    from grpo_train.config import SchedulerSection
    from grpo_train.scheduler_start import scheduler_kwargs

    band, section = BandConfig(), SchedulerSection()
    assert band.without_replacement is True and section.without_replacement is True
    shared = {f.name for f in fields(BandConfig)} & {f.name for f in fields(SchedulerSection)}
    assert shared == {"lo", "hi", "decay", "max_prior_k", "explore", "without_replacement", "epoch", "skip_below", "dry"}
    assert scheduler_kwargs(section) == {**{name: getattr(band, name) for name in shared}, "group_priors": True}
    cfg = Curriculum.from_columns([str(i) for i in range(6)]).scheduler.cfg
    assert {f.name: getattr(cfg, f.name) for f in fields(BandConfig) if f.name not in ("share", "group_priors")} == {
        f.name: getattr(band, f.name) for f in fields(BandConfig) if f.name not in ("share", "group_priors")}


def test_the_profile_command_leaves_defaults_to_the_dataclasses():
    from pipelines.cli import build_parser

    args = build_parser().parse_args(["profile", "--data", "t.parquet", "--model", "m", "--out", "p.parquet"])
    assert [name for name in ("band", "confidence", "temperature", "top_p", "max_tokens", "k", "screen_k",
                              "step_k", "max_k", "prior_screen_k", "chunk_size") if getattr(args, name) is not None] == []


def test_a_bad_sampling_setting_in_the_rollout_section_is_refused_there():
    from grpo_train.config import RolloutConfig

    with pytest.raises(ValueError, match="top_p must be in"):
        RolloutConfig(top_p=1.5)


def test_allowed_names_come_from_the_registries():
    from grpo_data.curriculum.scheduler import SCHEDULERS
    from grpo_data.generation.engines import ENGINES
    from grpo_train.config_io import load_config

    with pytest.raises(ValueError, match=" or ".join([", ".join(ENGINES[:-1]), ENGINES[-1]])):
        load_config("pipelines/arith_demo.yaml", ["rollout.engine=sglang"])
    with pytest.raises(ValueError, match=re.escape(", ".join(list(SCHEDULERS)[:-1]))):
        load_config("pipelines/arith_demo.yaml", ["scheduler.name=curriculum"])


@pytest.mark.parametrize("name,setting", [("uniform", "lo"), ("uniform", "decay"), ("offline_band", "decay")])
def test_a_setting_a_scheduler_does_not_take_is_an_error(name, setting):
    import numpy as np

    from grpo_data.curriculum.scheduler import make_scheduler

    offline = (np.array([2.0, 1.0, 3.0]), np.array([4.0, 4.0, 4.0]))
    with pytest.raises(ValueError, match=rf"unknown {name} scheduler setting\(s\) \['{setting}'\]"):
        make_scheduler(name, 3, offline=offline, **{setting: 0.5})
    assert make_scheduler(name, 3, offline=offline, without_replacement=False).sample(2).shape == (2,)
