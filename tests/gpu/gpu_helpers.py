"""Helpers of the GPU tests (tests/gpu): the locally built real-shape model, subprocess runs with this
checkout's code, the two-GPU skip. Nothing here downloads."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = Path(__file__).resolve().parent / "scenarios.py"
REAL_VOCAB = 151_936


def real_shape_config():
    from grpo_train.tiny_policy import TinyModelConfig

    return TinyModelConfig(hidden_size=896, num_layers=24, num_heads=14, num_kv_heads=2, intermediate_size=4864,
                           max_positions=1024)


def build_real_shape(out: Path, seed: int) -> Path:
    from grpo_train.tiny_policy import build_model, build_tokenizer

    tok = build_tokenizer()
    build_model(tok, real_shape_config(), seed=seed, vocab_size=REAL_VOCAB).save_pretrained(out)
    tok.save_pretrained(out)
    return out


def subprocess_env() -> dict:
    """This checkout's code first on the path, whatever the venv's editable install points at."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [env.get("PYTHONPATH")])])
    return env


def run_command(cmd: list[str], timeout: int = 1200, env: dict | None = None) -> subprocess.CompletedProcess:
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=ROOT, env=env or subprocess_env())
    assert proc.returncode == 0, (" ".join(cmd), proc.stdout[-3000:], proc.stderr[-6000:])
    return proc


def gpu_count() -> int:
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


two_gpus = pytest.mark.skipif(gpu_count() < 2, reason=f"needs 2 CUDA GPUs (this machine has {gpu_count()})")
