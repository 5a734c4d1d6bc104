"""How a problem becomes model input, and how it is sampled: one definition for profiling and training.

Offline pass rates are only useful if they were measured under what training sees, so the profiler,
the trainer's rollouts and evaluation all turn a problem into token ids with `encode_prompt` and
sample with a `SamplingConfig` whose stops `resolve_stops` fills in (`grpo_data.generation.rollouts` is that one
path); a profile records `template_hash` and the sampling settings in its metadata.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, replace


@dataclass(frozen=True)
class SamplingConfig:
    """Sampling settings shared by every engine.

    temperature:    softmax temperature (0 = greedy; greedy allows only n=1 in vLLM).
    top_p:          nucleus mass kept.
    max_tokens:     completion length cap; a completion that hits it counts as truncated.
    stop:           stop strings (generation ends after the token that completes one).
    stop_token_ids: tokens that end generation; None = the chat template's end-of-turn token and
                    EOS (`default_stop_token_ids`), resolved where the tokenizer is known.
    logprobs:       also return each sampled token's log-prob under the sampling distribution
                    (temperature applied; top-p too when below 1), for the learner's mismatch check.
    """

    temperature: float = 1.0
    top_p: float = 1.0
    max_tokens: int = 256
    stop: tuple[str, ...] = ()
    stop_token_ids: tuple[int, ...] | None = None
    logprobs: bool = False

    def __post_init__(self) -> None:
        if self.temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {self.temperature}")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p}")
        if self.max_tokens < 1:
            raise ValueError(f"max_tokens must be >= 1, got {self.max_tokens}")

    def to_dict(self) -> dict:
        ids = None if self.stop_token_ids is None else list(self.stop_token_ids)
        return {**asdict(self), "stop": list(self.stop), "stop_token_ids": ids}


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


def requested_format(cfg: PromptConfig) -> str | None:
    """The answer format the prompt asks for: "boxed" when the instruction or system prompt mentions
    \\boxed, else None (nothing to check)."""
    text = (cfg.instruction_suffix or "") + (cfg.system_prompt or "")
    return "boxed" if "\\boxed" in text else None


ANSWER_FORMATS = ("auto", "boxed", "none")


def detect_format(cfg: PromptConfig, prompts: list[list[dict]] | None = None, setting: str = "auto") -> str | None:
    """The answer format to count: `setting` "boxed"/"none" as given; "auto" asks the prompt config,
    then the problems' own messages (verl-style data carries its instruction in the prompt): "boxed"
    when at least half of them mention \\boxed."""
    if setting not in ANSWER_FORMATS:
        raise ValueError(f"answer format must be one of {', '.join(ANSWER_FORMATS)}, got {setting!r}")
    if setting != "auto":
        return None if setting == "none" else setting
    if requested_format(cfg) or not prompts:
        return requested_format(cfg)
    asking = sum(any("\\boxed" in m["content"] for m in p) for p in prompts)
    return "boxed" if asking >= len(prompts) / 2 else None


def has_format(text: str, fmt: str | None, tail_chars: int = 2000) -> bool | None:
    """Whether a completion carries its answer in the requested format (None when none was requested):
    for "boxed", a \\boxed{} with balanced braces in its last `tail_chars` characters."""
    if fmt is None:
        return None
    if fmt == "boxed":
        from grpo_data.verify.final_answer import last_boxed

        return last_boxed(text[-tail_chars:]) is not None
    raise ValueError(f"unknown answer format {fmt!r}; known: boxed")


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


def end_of_turn_token_id(tokenizer) -> int | None:
    """The special token the chat template writes right after an assistant's message (Qwen's
    `<|im_end|>`, Llama 3's `<|eot_id|>`), or None when the template writes none there."""
    content = "grpo end-of-turn probe"
    messages = [{"role": "user", "content": "q"}, {"role": "assistant", "content": content}]
    text = tokenizer.apply_chat_template(messages, tokenize=False)
    after = text[text.rindex(content) + len(content):]
    ids = tokenizer(after, add_special_tokens=False)["input_ids"] if after else []
    special = set(tokenizer.all_special_ids) | {i for i, t in tokenizer.added_tokens_decoder.items() if t.special}
    return ids[0] if ids and ids[0] in special else None


def default_stop_token_ids(tokenizer) -> tuple[int, ...]:
    """EOS and the template's end-of-turn token: a base model whose template ends turns with a token
    other than EOS otherwise runs on into turns it invents."""
    ids = [i for i in (tokenizer.eos_token_id, end_of_turn_token_id(tokenizer)) if i is not None]
    return tuple(dict.fromkeys(ids))


def resolve_stops(sampling: SamplingConfig, tokenizer) -> SamplingConfig:
    """`sampling` with its stop tokens filled in from the tokenizer when they were left to default."""
    if sampling.stop_token_ids is not None:
        return sampling
    return replace(sampling, stop_token_ids=default_stop_token_ids(tokenizer))


def encode_prompt(tokenizer, messages: list[dict], cfg: PromptConfig = PromptConfig()) -> list[int]:
    """The token ids every engine is given: the rendered template, tokenized with no special tokens
    added, so the prompt holds exactly the special tokens (BOS included) that the template writes."""
    return tokenizer(render_prompt(tokenizer, messages, cfg), add_special_tokens=False)["input_ids"]


def template_hash(tokenizer, cfg: PromptConfig = PromptConfig()) -> str:
    """Identifies the prompt definition: chat template + prompt config."""
    payload = json.dumps({"template": tokenizer.chat_template, "prompt": asdict(cfg)}, sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()[:16]
