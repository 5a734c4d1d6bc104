"""Fixtures of the GPU tests (`make test-gpu`). Nothing here downloads: the models are built locally.

`real_shape_policy` is Qwen2.5-0.5B's decoder (hidden 896, 24 layers, 14 query heads of 64, 2 KV
heads, MLP 4864, tied head) over Qwen's 151,936-token vocabulary, randomly initialized, with the
project's character tokenizer (ids past the tokenizer's own decode to nothing): the memory, kernels
and weight names of a real 0.5B model without a Hub download. Tests whose numbers need a policy that
solves some problems (training, profiling) use the CPU suite's warm-started tiny policy
(`warm_policy` in tests/conftest.py: built on the CPU once, about 4 minutes, then cached under
runs/.test-cache).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from gpu_helpers import SCENARIOS, build_real_shape, run_command


@pytest.fixture(scope="session")
def real_shape_policy(tmp_path_factory) -> Path:
    """A random-init Qwen2.5-0.5B-shaped policy (seed 0), fp32 on disk as `build_model` saves it."""
    return build_real_shape(tmp_path_factory.mktemp("real-shape-a"), seed=0)


@pytest.fixture(scope="session")
def real_shape_policy_b(tmp_path_factory) -> Path:
    """The same shape, another seed: weights to sync into an engine started on `real_shape_policy`."""
    return build_real_shape(tmp_path_factory.mktemp("real-shape-b"), seed=1)


@pytest.fixture
def run_scenario(tmp_path):
    """run_scenario(NAME, **spec) -> the dict tests/gpu/scenarios.py measured, in a fresh process."""

    def run(name: str, timeout: int = 1200, **spec) -> dict:
        spec_file, out_file = tmp_path / f"{name}.spec.json", tmp_path / f"{name}.out.json"
        spec_file.write_text(json.dumps(spec, default=str))
        run_command([sys.executable, str(SCENARIOS), name, str(spec_file), str(out_file)], timeout=timeout)
        return json.loads(out_file.read_text())

    return run
