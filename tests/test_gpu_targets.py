"""The GPU tests (tests/gpu, `make test-gpu`) run only where CUDA is: this CPU test catches their drift
from the code they call, so a renamed function, keyword, config key or CLI flag fails CI here
instead of on the next GPU machine. It imports every project symbol they and tests/gpu/scenarios.py
use, binds the keywords they pass, and parses their config overrides and CLI flags."""

from __future__ import annotations

import argparse
import importlib.util
import inspect
import sys
from pathlib import Path

import pytest

GPU_DIR = Path(__file__).resolve().parent / "gpu"


def _load(name: str):
    if str(GPU_DIR) not in sys.path:  # their `from gpu_helpers import ...`, as pytest's rootdir-relative import gives them
        sys.path.insert(0, str(GPU_DIR))
    spec = importlib.util.spec_from_file_location(f"gpu_tests_{name}", GPU_DIR / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _accepts(fn, *args, **kwargs) -> None:
    inspect.signature(fn).bind(*args, **kwargs)  # raises TypeError naming the keyword that is gone


def test_gpu_tests_call_project_code_that_exists_with_the_keywords_they_pass():
    from grpo_data.generation.engines import EngineSettings, HFEngine, make_engine
    from grpo_data.generation.prompting import SamplingConfig, encode_prompt
    from grpo_data.generation.vllm_engine import VLLMEngine
    from grpo_data.profile_parts import parts_dir
    from grpo_data.profiler import shard_slice
    from grpo_train.config import AlgoConfig, DeepSpeedSection, OptimConfig
    from grpo_train.learner import DeepSpeedLearner
    from grpo_train.logprobs import token_logprobs
    from grpo_train.rank_check import max_weight_difference, synthetic_groups
    from grpo_train.sequences import Sequence, flatten_groups, pad_batch, sequence_advantages
    from grpo_train.tiny_policy import TinyModelConfig, build_model, build_tokenizer
    from pipelines.pipeline import launch_command

    for method in ("generate", "load_weights", "sleep", "wake_up", "close"):
        assert callable(getattr(VLLMEngine, method)), method
    _accepts(make_engine, "vllm", "m", seed=0, settings=EngineSettings(dtype="float32"))
    _accepts(HFEngine, "m", device="cuda")
    EngineSettings(dtype="float32")
    SamplingConfig(temperature=1.0, max_tokens=24, logprobs=True)
    _accepts(encode_prompt, object(), [])
    _accepts(DeepSpeedLearner, "m", OptimConfig(lr=1e-5, micro_batch_tokens=4096, gradient_checkpointing=True),
             DeepSpeedSection(zero_stage=3, bf16=True), AlgoConfig(), seed=0, temperature=0.6, max_tokens=64,
             total_steps=2)
    for method in ("update", "named_weights", "save_hf", "save_state", "load_state"):
        assert callable(getattr(DeepSpeedLearner, method)), method
    Sequence((1, 2), 1, 0.0, 0, True, None)
    _accepts(token_logprobs, None, None, 1.0, chunk_tokens=256)
    _accepts(synthetic_groups, 0, 0, 0, 1, 100)
    for fn in (flatten_groups, pad_batch, sequence_advantages, max_weight_difference, parts_dir, shard_slice,
               build_model, build_tokenizer):
        assert callable(fn)
    assert launch_command(2, Path("c.yaml"))[1:6] == ["--num_gpus", "2", "--module", "pipelines.cli", "train"]
    helpers = _load("gpu_helpers")
    cfg = helpers.real_shape_config()
    assert isinstance(cfg, TinyModelConfig) and cfg.hidden_size // cfg.num_heads == 64


def test_gpu_scenarios_exist_and_take_the_specs_the_tests_send():
    scenarios = _load("scenarios")
    specs = {"engine_sleep": {"model": "m", "settings": {}},
             "engine_sync": {"model_a": "a", "model_b": "b", "settings": {"dtype": "float32"}},
             "learner_step": {"model": "m", "out_dir": "o", "lr": 1e-5, "zero_stage": 3, "bf16": True},
             "learner_reload": {"model": "m", "out_dir": "o", "lr": 1e-5, "zero_stage": 3, "bf16": True}}
    assert set(scenarios.SCENARIOS) == set(specs)
    for name, spec in specs.items():
        _accepts(scenarios.SCENARIOS[name], **spec)
    sources = "".join((GPU_DIR / f).read_text() for f in ("test_gpu_engine.py", "test_gpu_learner.py"))
    assert all(f'"{name}"' in sources for name in specs)  # every scenario has a test


def test_gpu_train_overrides_and_profile_flags_are_accepted():
    from grpo_train.config_io import load_config
    from pipelines.commands.profile import add_arguments, options_from_args

    train = _load("test_gpu_train")
    cfg = load_config(None, ["model=m", "data.train=t.parquet", "run.steps=2", "run.ranks=2", *train.TRAIN_OVERRIDES])
    assert cfg.deepspeed.zero_stage == 3 and cfg.deepspeed.bf16 and cfg.rollout.vllm.enable_sleep_mode
    profile = _load("test_gpu_profile")
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    args = parser.parse_args(["--data", "d", "--model", "m", "--out", "o", *profile.PROFILE_ARGS,
                              "--gpu-memory-utilization", "0.6"])
    options = options_from_args(args)
    assert options["k"] == 1 and options["temperature"] == 0 and options["vllm"]["dtype"] == "float32"


@pytest.mark.parametrize("name", ["test_gpu_engine", "test_gpu_learner", "test_gpu_train", "test_gpu_profile"])
def test_every_gpu_test_is_marked_gpu_and_says_what_it_proves(name):
    module = _load(name)
    marks = module.pytestmark if isinstance(module.pytestmark, list) else [module.pytestmark]
    assert any(m.name == "gpu" for m in marks), name
    tests = [f for n, f in vars(module).items() if n.startswith("test_") and callable(f)]
    assert tests and all(f.__doc__ and "prove" in f.__doc__ for f in tests), name
