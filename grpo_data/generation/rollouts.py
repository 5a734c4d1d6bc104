"""Render -> token ids -> generate -> verify: the one path that profiling, training rollouts and
held-out evaluation share, so an offline pass rate is measured on exactly what training samples.

    sampler = RolloutSampler(engine, verifier, tokenizer, PromptConfig(...), SamplingConfig(...))
    ids = sampler.encode(messages)                     # the template's tokens, nothing added
    groups = sampler.sample([ids, ...], golds, n=8)    # list[ScoredGroup], prompt order

Every prompt goes to the engine as token ids (`encode_prompt`: no special tokens added beyond the
template's, so a tokenizer that adds BOS and a template that writes it give one BOS, not two). The
sampling settings get their stop tokens from the tokenizer once (`resolve_stops`: the template's
end-of-turn token and EOS unless given). With a `ContextPolicy` (`grpo_data.generation.context`) each prompt
is generated with the budget that fits the engine's context (max_tokens, or clipped); callers leave
out the problems that cannot fit before sampling (`fit`, `grpo_data.generation.context.measure_problems`), and
one that reaches `sample` anyway is an error naming it, not vLLM's refusal of the whole batch.
"""

from __future__ import annotations

import inspect
import time
from dataclasses import dataclass, replace

import numpy as np

from grpo_data.generation.context import ContextPolicy, Fit
from grpo_data.generation.engines import Completion
from grpo_data.generation.prompting import (
    PromptConfig,
    SamplingConfig,
    encode_prompt,
    has_format,
    requested_format,
    resolve_stops,
)


@dataclass
class ScoredGroup:
    """The answers sampled for one prompt and the verifier's verdict on each.

    completions: the sampled answers; verdicts: one `grpo_data.verify.verdict.Verdict` per answer;
    formatted: per answer, whether it carries the answer in the requested format (None: not requested)."""

    completions: list[Completion]
    verdicts: list
    formatted: list | None = None

    @property
    def correct(self) -> np.ndarray:
        """(n,) 1.0 for a verified-correct answer, else 0.0."""
        return np.array([float(v.correct) for v in self.verdicts])

    @property
    def truncated(self) -> np.ndarray:
        """(n,) True where the answer hit max_tokens."""
        return np.array([c.truncated for c in self.completions], dtype=bool)

    @classmethod
    def concat(cls, parts: list[ScoredGroup]) -> ScoredGroup:
        """One group of every part's answers, in order (answers to one prompt sampled in pieces)."""
        fmt = None if any(p.formatted is None for p in parts) else [f for p in parts for f in p.formatted]
        return cls([c for p in parts for c in p.completions], [v for p in parts for v in p.verdicts], fmt)


@dataclass
class SamplingCost:
    """What sampling cost so far: seconds generating and verifying, completions and their tokens, and
    how many carried the requested answer format (`formatted`, counted only when one is requested)."""

    gen_seconds: float = 0.0
    verify_seconds: float = 0.0
    completions: int = 0
    tokens: int = 0
    truncated: int = 0
    formatted: int = 0


def takes_questions(verifier) -> bool:
    """Whether `verifier.verify` takes a third argument, the problems' questions (`VerifierPool` does);
    a verifier written for `verify(golds, preds)` is called without them, and a denial then answers no
    yes/no question (`grpo_data.verify.question`)."""
    try:
        params = inspect.signature(verifier.verify).parameters.values()
    except (TypeError, ValueError):
        return False
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(positional) >= 3 or any(p.kind == p.VAR_POSITIONAL for p in params)


class RolloutSampler:
    def __init__(self, engine, verifier, tokenizer, prompt: PromptConfig, sampling: SamplingConfig,
                 answer_format: str | None = "auto", context: ContextPolicy | None = None) -> None:
        """answer_format: the format whose rate is counted ("boxed", None), or "auto": the one the
        prompt config asks for (callers that know the problems pass `prompting.detect_format`'s).
        context: how prompts are fitted to the engine's context (None: not checked, every prompt
        generates with max_tokens)."""
        self.engine, self.verifier, self.tokenizer = engine, verifier, tokenizer
        self.prompt = prompt
        self.sampling = resolve_stops(sampling, tokenizer)
        self.answer_format = requested_format(prompt) if answer_format == "auto" else answer_format
        self.context = context
        self.cost = SamplingCost()

    def encode(self, messages: list[dict]) -> list[int]:
        return encode_prompt(self.tokenizer, messages, self.prompt)

    def fit(self, prompt_ids: list[int]) -> Fit:
        """Whether (and with which budget) an encoded prompt is generated (always kept without a policy)."""
        if self.context is None:
            return Fit("kept", len(prompt_ids), self.sampling.max_tokens)
        return self.context.fit(len(prompt_ids), self.sampling.max_tokens)

    def _budgets(self, prompt_ids: list[list[int]]) -> list[int]:
        budgets = []
        for i, ids in enumerate(prompt_ids):
            fit = self.fit(ids)
            if fit.status == "left_out":
                raise ValueError(f"prompt {i} of this call does not fit the engine's context ({fit.reason}: "
                                 f"{fit.detail}); leave such problems out before sampling "
                                 "(grpo_data.generation.context.measure_problems)")
            budgets.append(fit.max_tokens)
        return budgets

    def sample(self, prompt_ids: list[list[int]], golds: list[str], n: int | list[int],
               questions: list[str | None] | None = None) -> list[ScoredGroup]:
        """n (or n[i]) answers for each prompt, verified against its gold answer (and, when given, with
        its problem's text `questions[i]`, which lets a denial answer a yes/no question); prompt order.
        Prompts asking for the same n (and, with a context policy, fitting the same budget) are
        generated together; n = 0 gives an empty group."""
        counts = [n] * len(prompt_ids) if isinstance(n, int) else list(n)
        budgets = self._budgets(prompt_ids)
        out: list[ScoredGroup | None] = [None] * len(prompt_ids)
        for size, budget in sorted(set(zip(counts, budgets, strict=True))):
            idx = [i for i, (m, b) in enumerate(zip(counts, budgets, strict=True)) if m == size and b == budget]
            if size == 0:
                for i in idx:
                    out[i] = ScoredGroup([], [])
                continue
            sampling = self.sampling if budget == self.sampling.max_tokens else replace(self.sampling, max_tokens=budget)
            t0 = time.monotonic()
            groups = self.engine.generate([prompt_ids[i] for i in idx], size, sampling)
            t1 = time.monotonic()
            flat = [c for g in groups for c in g]
            each = [i for i, g in zip(idx, groups, strict=True) for _ in g]
            if questions is None or not takes_questions(self.verifier):
                verdicts = self.verifier.verify([golds[i] for i in each], [c.text for c in flat])
            else:
                verdicts = self.verifier.verify([golds[i] for i in each], [c.text for c in flat], [questions[i] for i in each])
            self.cost.gen_seconds += t1 - t0
            self.cost.verify_seconds += time.monotonic() - t1
            self.cost.completions += len(flat)
            self.cost.tokens += sum(len(c.token_ids) for c in flat)
            self.cost.truncated += sum(c.truncated for c in flat)
            formatted = [has_format(c.text, self.answer_format) for c in flat]
            self.cost.formatted += sum(bool(f) for f in formatted)
            pos = 0
            for i, g in zip(idx, groups, strict=True):
                out[i] = ScoredGroup(list(g), list(verdicts[pos : pos + len(g)]),
                                     None if self.answer_format is None else formatted[pos : pos + len(g)])
                pos += len(g)
        return out
