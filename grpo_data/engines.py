"""Generation engines behind one interface: vLLM (default wherever it imports) and transformers `generate`.

    engine = make_engine("vllm", model_path, seed=0)
    groups = engine.generate(prompts, n=16, sampling=SamplingConfig(temperature=1.0, max_tokens=32))
    # groups[i] is a list of n Completion for prompts[i]

Prompts are finished strings from `grpo_data.prompting.render_prompt`, or their token ids (what a
trainer passes, so the learner scores exactly the tokens the engine saw): every engine sees exactly
the same input. vLLM lives in `grpo_data.vllm_engine` (the only module importing vllm); the
transformers engine here is the reference and the fallback.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from grpo_data.prompting import SamplingConfig

logger = logging.getLogger(__name__)

ENGINES = ("vllm", "hf")


@dataclass(frozen=True)
class Completion:
    """One sampled answer.

    text:          decoded completion, special tokens dropped.
    token_ids:     completion token ids (EOS included when generated).
    finish_reason: "stop" (EOS or a stop string) or "length" (hit max_tokens: truncated).
    """

    text: str
    token_ids: tuple[int, ...]
    finish_reason: str

    @property
    def truncated(self) -> bool:
        return self.finish_reason == "length"


class GenerationEngine(Protocol):
    name: str
    model_path: str

    def generate(self, prompts: list[str] | list[list[int]], n: int, sampling: SamplingConfig) -> list[list[Completion]]:
        """n completions per prompt (text or token ids), in prompt order."""
        ...

    def load_weights(self, named_tensors) -> None:
        """Replace the engine's weights in place (for RL), from (name, tensor) pairs."""
        ...

    def close(self) -> None: ...


def check_model_path(model: str) -> None:
    """Fail early, before any data is read, when a local model path does not exist."""
    path = Path(model).expanduser()
    if path.exists():
        if path.is_dir() and not (path / "config.json").exists():
            raise FileNotFoundError(f"model folder {model} has no config.json (save it with save_pretrained)")
        return
    if model.startswith(("/", ".", "~")) or model.count("/") > 1:
        raise FileNotFoundError(f"model path {model} does not exist (give a local folder or a Hub name)")


def vllm_available() -> bool:
    try:
        import vllm  # noqa: F401
    except ImportError:
        return False
    return True


def default_engine() -> str:
    return "vllm" if vllm_available() else "hf"


def check_sampling(n: int, sampling: SamplingConfig) -> None:
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    if sampling.temperature == 0 and n > 1:
        raise ValueError("greedy sampling (temperature 0) gives identical samples: use n=1 or temperature > 0")


def make_engine(name: str, model: str, seed: int = 0, **kwargs) -> GenerationEngine:
    """An engine by name ("vllm" or "hf"); unknown names and missing model paths fail here."""
    if name not in ENGINES:
        raise ValueError(f"unknown engine {name!r}; choose one of: {', '.join(ENGINES)}")
    check_model_path(model)
    if name == "vllm":
        from grpo_data.vllm_engine import VLLMEngine

        return VLLMEngine(model, seed=seed, **kwargs)
    return HFEngine(model, seed=seed, **kwargs)


class HFEngine:
    """transformers `generate`: reference implementation and fallback where vLLM is missing."""

    name = "hf"

    def __init__(self, model: str, seed: int = 0, batch_size: int = 256, trust_remote_code: bool = False,
                 device: str | None = None, threads: int | None = None, **_ignored) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        if threads:
            torch.set_num_threads(threads)
        self.model_path = model
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        self.tokenizer = AutoTokenizer.from_pretrained(model, trust_remote_code=trust_remote_code)
        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token_id is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.model = AutoModelForCausalLM.from_pretrained(model, trust_remote_code=trust_remote_code).to(self.device)
        self.model.eval()
        self.batch_size = batch_size
        self.generator = torch.Generator(device="cpu").manual_seed(seed)
        self._seed = seed

    def generate(self, prompts: list[str], n: int, sampling: SamplingConfig) -> list[list[Completion]]:
        import torch

        check_sampling(n, sampling)
        eos = self.tokenizer.eos_token_id
        per_batch = max(1, self.batch_size // n)
        out: list[list[Completion]] = []
        for start in range(0, len(prompts), per_batch):
            chunk = prompts[start : start + per_batch]
            if chunk and not isinstance(chunk[0], str):  # token ids: left-pad ourselves
                enc = self.tokenizer.pad({"input_ids": [list(c) for c in chunk]}, return_tensors="pt").to(self.device)
            else:
                enc = self.tokenizer(chunk, return_tensors="pt", padding=True, add_special_tokens=False).to(self.device)
            # torch's global RNG drives HF sampling; reseed per chunk from our generator for determinism
            torch.manual_seed(int(torch.randint(0, 2**31 - 1, (1,), generator=self.generator)))
            with torch.no_grad():
                gen = self.model.generate(
                    **enc, do_sample=sampling.temperature > 0, temperature=sampling.temperature or None,
                    top_p=sampling.top_p, top_k=0, max_new_tokens=sampling.max_tokens, num_return_sequences=n,
                    pad_token_id=self.tokenizer.pad_token_id, eos_token_id=eos,
                    stop_strings=list(sampling.stop) or None,
                    tokenizer=self.tokenizer if sampling.stop else None,
                )
            new = gen[:, enc["input_ids"].shape[1] :].tolist()  # (len(chunk) * n, <= max_tokens)
            for i in range(len(chunk)):
                group = []
                for ids in new[i * n : (i + 1) * n]:
                    if eos in ids:
                        ids = ids[: ids.index(eos) + 1]
                        reason = "stop"
                    else:
                        ids = [t for t in ids if t != self.tokenizer.pad_token_id]
                        reason = "length" if len(ids) >= sampling.max_tokens else "stop"
                    text = self.tokenizer.decode(ids, skip_special_tokens=True)
                    group.append(Completion(text, tuple(ids), reason))
                out.append(group)
        return out

    def load_weights(self, named_tensors) -> None:
        import torch

        with torch.no_grad():
            self.model.load_state_dict(dict(named_tensors), strict=False)

    def close(self) -> None:
        self.model = None


def set_vllm_env_defaults() -> None:
    """In-process vLLM engine (weight sync needs it) and a KV cache sized for small machines."""
    os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "2")
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "WARNING")
