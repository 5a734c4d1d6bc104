"""What every generation engine shares, below the factory (`grpo_data.generation.engines`) and the engines
themselves (`grpo_data.generation.vllm_engine`, the transformers engine): the engine protocol, `Completion`,
`EngineSettings`, the sampling check, and vLLM's environment defaults and log filters. Importing it
loads no engine, so the factory and the vLLM module both import it and neither imports the other at
load time."""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from typing import Protocol

from grpo_data.generation.prompting import SamplingConfig


@dataclass(frozen=True)
class Completion:
    """One sampled answer.

    text:          decoded completion, special tokens dropped, cut before a stop string.
    token_ids:     completion token ids (the stop token included when one ended it).
    finish_reason: "stop" (a stop token or string) or "length" (hit max_tokens: truncated).
    logprobs:      log-prob of each token under the sampling distribution (when asked for).
    """

    text: str
    token_ids: tuple[int, ...]
    finish_reason: str
    logprobs: tuple[float, ...] | None = None

    @property
    def truncated(self) -> bool:
        return self.finish_reason == "length"


class GenerationEngine(Protocol):
    name: str
    model_path: str
    context_length: int  # longest prompt + completion in tokens (vLLM's max_model_len)

    def generate(self, prompts: list[str] | list[list[int]], n: int, sampling: SamplingConfig) -> list[list[Completion]]:
        """n completions per prompt (text or token ids), in prompt order."""
        ...

    def reseed(self, seed: int) -> None:
        """Restart the generator the engine samples with from `seed`: the same calls after the same
        reseed draw the same samples on one machine (the profiler reseeds each chunk's rounds)."""
        ...

    def load_weights(self, named_tensors) -> None:
        """Replace the engine's weights in place (for RL), from (name, tensor) pairs."""
        ...

    def sleep(self) -> None:
        """Release generation memory (KV cache) while the learner trains; no-op where unsupported."""
        ...

    def wake_up(self) -> None: ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class EngineSettings:
    """vLLM engine settings (the HF engine ignores them); `rollout.vllm` in a train config, the same
    flags on `grpo profile`. None means: the sensible value for the device kind.

    gpu_memory_utilization: share of each rank's own GPU for vLLM's weights and KV cache; only ranks
                            that share one device split it.
    max_model_len:          longest prompt + completion (None: the model's own limit).
    enforce_eager:          skip compilation / CUDA graphs (None: eager on CPU, graphs on GPU).
    dtype:                  weights and activations dtype ("auto": the model's).
    max_num_seqs:           most sequences decoded together (None: vLLM's default).
    enable_sleep_mode:      release the KV cache and offload weights while DeepSpeed trains, wake
                            before generating (None: on for GPU; a no-op on CPU, so off there).
    """

    gpu_memory_utilization: float = 0.5
    max_model_len: int | None = None
    enforce_eager: bool | None = None
    dtype: str = "auto"
    max_num_seqs: int | None = None
    enable_sleep_mode: bool | None = None

    def __post_init__(self) -> None:
        if not 0 < self.gpu_memory_utilization <= 1:
            raise ValueError(f"gpu_memory_utilization must be in (0, 1], got {self.gpu_memory_utilization}")
        if self.max_model_len is not None and self.max_model_len < 2:
            raise ValueError(f"max_model_len must be >= 2, got {self.max_model_len}")


def check_sampling(n: int, sampling: SamplingConfig) -> None:
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    if sampling.temperature == 0 and n > 1:
        raise ValueError("greedy sampling (temperature 0) gives identical samples: use n=1 or temperature > 0")


def set_vllm_env_defaults() -> None:
    """In-process vLLM engine (weight sync needs it) and a KV cache sized for small machines."""
    os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "2")
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "WARNING")
    install_engine_log_filters()


class _DropMessages(logging.Filter):
    def __init__(self, fragments: tuple[str, ...]) -> None:
        super().__init__()
        self.fragments = fragments

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        return not any(f in message for f in self.fragments)


# Messages vLLM prints on every step of an in-process RL loop that say nothing is wrong, each filtered
# on the one logger that emits it (the cause is vLLM's, the behaviour it reports is the right one):
ENGINE_NOISE = {
    # reload_weights counts the rotary cos/sin cache as loadable; a checkpoint (and HF state dict)
    # never holds it, so vLLM puts its own cache back, which is correct
    "vllm.model_executor.model_loader.reload.layerwise": ("RotaryEmbedding: Failed to load weights",),
    # the CPU worker replaces torch.set_num_threads process-wide; in-process, vLLM's own prompt
    # renderer then calls it for every request and is told it is skipped (threads stay bound)
    "vllm.v1.worker.cpu_worker": ("`torch.set_num_threads` after the thread binding",),
}


def install_engine_log_filters() -> None:
    """Drop exactly the ENGINE_NOISE messages (idempotent)."""
    for name, fragments in ENGINE_NOISE.items():
        log = logging.getLogger(name)
        if not any(isinstance(f, _DropMessages) for f in log.filters):
            log.addFilter(_DropMessages(fragments))
