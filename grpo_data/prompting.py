"""How a problem becomes model input, and how it is sampled: one definition for profiling and training.

Offline pass rates are only useful if they were measured under what training sees, so the profiler
and the trainer's rollouts both build prompts with `render_prompt` and sample with a
`SamplingConfig`; a profile records `template_hash` and the sampling settings in its metadata.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class SamplingConfig:
    """Sampling settings shared by every engine.

    temperature: softmax temperature (0 = greedy; greedy allows only n=1 in vLLM).
    top_p:       nucleus mass kept.
    max_tokens:  completion length cap; a completion that hits it counts as truncated.
    stop:        extra stop strings besides the tokenizer's EOS.
    """

    temperature: float = 1.0
    top_p: float = 1.0
    max_tokens: int = 32
    stop: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {self.temperature}")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p}")
        if self.max_tokens < 1:
            raise ValueError(f"max_tokens must be >= 1, got {self.max_tokens}")

    def to_dict(self) -> dict:
        return {**asdict(self), "stop": list(self.stop)}


@dataclass(frozen=True)
class PromptConfig:
    """What is added to a problem's chat messages before the chat template.

    system_prompt:      prepended as a system message when set (and the problem has none).
    instruction_suffix: appended to the last user message, e.g. a real model's
                        "Please put your final answer within \\boxed{}." (empty for the tiny policy,
                        which was trained on bare questions).
    """

    system_prompt: str | None = None
    instruction_suffix: str = ""


def build_messages(messages: list[dict], cfg: PromptConfig) -> list[dict]:
    out = [{"role": m["role"], "content": m["content"]} for m in messages]
    if cfg.instruction_suffix:
        for m in reversed(out):
            if m["role"] == "user":
                m["content"] = f"{m['content']} {cfg.instruction_suffix}".strip()
                break
    if cfg.system_prompt and not any(m["role"] == "system" for m in out):
        out.insert(0, {"role": "system", "content": cfg.system_prompt})
    return out


def render_prompt(tokenizer, messages: list[dict], cfg: PromptConfig = PromptConfig()) -> str:
    """The exact text the engine is given: the tokenizer's chat template with a generation prompt."""
    return tokenizer.apply_chat_template(build_messages(messages, cfg), tokenize=False, add_generation_prompt=True)


def template_hash(tokenizer, cfg: PromptConfig = PromptConfig()) -> str:
    """Identifies the prompt definition: chat template + prompt config."""
    payload = json.dumps({"template": tokenizer.chat_template, "prompt": asdict(cfg)}, sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()[:16]
