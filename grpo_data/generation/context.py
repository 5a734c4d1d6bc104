"""Whether a prompt fits the engine's context with its completion budget: one decision for loading,
profiling, training and evaluation.

An engine holds at most `context` tokens of prompt plus completion (vLLM's `max_model_len`). A
prompt longer than that makes vLLM refuse the whole `generate` call it is in (one such problem
stopped a profile at 0 of 266); a prompt that fits but leaves less room than `max_tokens` is cut
off silently at the context and counted as truncated, measured under another budget than the rest.
So every rendered prompt is measured before generation (`fit_prompt`), and one that cannot fit with
`max_tokens` is either left out with its reason (policy "skip", the default) or generated with the
room that is left (policy "clip": max_tokens = context - prompt tokens), unless that room is below
`min_tokens`, where it is left out anyway.

    fit = fit_prompt(prompt_tokens=202, max_tokens=128, context=192)
    fit.status, fit.reason   # "left_out", "prompt_over_context"

Reasons a prompt is left out:

    prompt_over_context   the prompt leaves fewer than min_tokens of the context (clipping would
                          not help: shorten the prompt or raise the context)
    budget_over_context   the prompt fits, but not with max_tokens (policy "clip" would keep it)
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import polars as pl

logger = logging.getLogger(__name__)

OVERLONG_PROMPTS = ("skip", "clip")
MIN_CLIPPED_TOKENS = 32
LEFT_OUT_SCHEMA = pl.Schema({"id": pl.String, "reason": pl.String, "detail": pl.String, "prompt_tokens": pl.Int64,
                             "max_tokens": pl.Int64, "context": pl.Int64})


@dataclass(frozen=True)
class ContextPolicy:
    """What to do with prompts that do not fit.

    context:    the engine's longest prompt + completion in tokens (vLLM's max_model_len).
    policy:     "skip" leaves a prompt out when prompt + max_tokens > context; "clip" generates it with
                the room left instead.
    min_tokens: the smallest clipped budget; a prompt leaving less room is left out under either
                policy (an answer cut to a few tokens measures the cut, not the problem). Capped at
                max_tokens.
    """

    context: int
    policy: str = OVERLONG_PROMPTS[0]  # skip: the default everywhere (loader, profiler, trainer)
    min_tokens: int = MIN_CLIPPED_TOKENS

    def __post_init__(self) -> None:
        if self.policy not in OVERLONG_PROMPTS:
            raise ValueError(f"overlong prompts policy must be one of {', '.join(OVERLONG_PROMPTS)}, got {self.policy!r}")
        if self.context < 2:
            raise ValueError(f"context must be >= 2 tokens, got {self.context}")
        if self.min_tokens < 1:
            raise ValueError(f"min clipped tokens must be >= 1, got {self.min_tokens}")

    def fit(self, prompt_tokens: int, max_tokens: int) -> Fit:
        return fit_prompt(prompt_tokens, max_tokens, self.context, self.policy, self.min_tokens)


@dataclass(frozen=True)
class Fit:
    """The decision for one prompt.

    status:     "kept" (fits with max_tokens), "clipped" (generated with a smaller budget) or "left_out".
    max_tokens: the completion budget to generate with (0 when left out).
    reason:     None, or why it is left out (module docstring); detail says it in numbers.
    """

    status: str
    prompt_tokens: int
    max_tokens: int
    reason: str | None = None
    detail: str = ""


def fit_prompt(prompt_tokens: int, max_tokens: int, context: int, policy: str = OVERLONG_PROMPTS[0],
               min_tokens: int = MIN_CLIPPED_TOKENS) -> Fit:
    """Keep, clip or leave out a prompt of `prompt_tokens` asking for `max_tokens` in `context`
    (vLLM admits prompt + completion == context: the room is context - prompt_tokens)."""
    if policy not in OVERLONG_PROMPTS:
        raise ValueError(f"overlong prompts policy must be one of {', '.join(OVERLONG_PROMPTS)}, got {policy!r}")
    room = context - prompt_tokens
    if room >= max_tokens:
        return Fit("kept", prompt_tokens, max_tokens)
    floor = min(min_tokens, max_tokens)
    if policy == "clip" and room >= floor:
        return Fit("clipped", prompt_tokens, room, None,
                   f"{prompt_tokens} prompt tokens + {max_tokens} max_tokens > context {context}: budget clipped to {room}")
    need = f"{prompt_tokens} prompt tokens + {max_tokens} max_tokens > context {context}"
    if room < floor:
        return Fit("left_out", prompt_tokens, 0, "prompt_over_context",
                   f"{need}; {max(room, 0)} tokens of room, fewer than the {floor} an answer needs at least")
    return Fit("left_out", prompt_tokens, 0, "budget_over_context",
               f"{need}; overlong prompts 'clip' would generate it with {room}")


@dataclass
class FitResult:
    """A problem table split by `fit_problems`.

    kept:     the problems that will be generated (clipped ones included), in their order.
    left_out: LEFT_OUT_SCHEMA rows, one per problem left out.
    budgets:  per kept problem, the completion budget it is generated with (max_tokens, or clipped).
    clipped:  how many kept problems have a clipped budget."""

    kept: pl.DataFrame
    left_out: pl.DataFrame
    budgets: list[int]
    clipped: int

    def counts(self) -> dict[str, int]:
        """reason -> problems left out (the reject counts a card shows)."""
        return count_reasons(self.left_out)


def count_reasons(left_out: pl.DataFrame) -> dict[str, int]:
    if left_out.height == 0:
        return {}
    counts = left_out.group_by("reason").len().sort(["len", "reason"], descending=[True, False])
    return dict(zip(counts["reason"].to_list(), counts["len"].to_list(), strict=True))


def fit_problems(problems: pl.DataFrame, prompt_tokens: Sequence[int], max_tokens: int,
                 policy: ContextPolicy) -> FitResult:
    """Split `problems` (with an `id` column) by the fit of each one's prompt of `prompt_tokens[i]`."""
    if len(prompt_tokens) != problems.height:
        raise ValueError(f"{len(prompt_tokens)} prompt lengths for {problems.height} problems")
    fits = [policy.fit(int(n), max_tokens) for n in prompt_tokens]
    keep = [f.status != "left_out" for f in fits]
    ids = problems["id"].to_list()
    left = [{"id": i, "reason": f.reason, "detail": f.detail, "prompt_tokens": f.prompt_tokens,
             "max_tokens": max_tokens, "context": policy.context}
            for i, f in zip(ids, fits, strict=True) if f.status == "left_out"]
    return FitResult(kept=problems.filter(pl.Series(keep, dtype=pl.Boolean)),
                     left_out=pl.DataFrame(left, schema=LEFT_OUT_SCHEMA),
                     budgets=[f.max_tokens for f in fits if f.status != "left_out"],
                     clipped=sum(f.status == "clipped" for f in fits))


def measure_problems(problems: pl.DataFrame, encode: Callable[[list[dict]], list[int]], max_tokens: int,
                     policy: ContextPolicy, what: str = "problems") -> FitResult:
    """`fit_problems` on each problem's rendered prompt (`encode(messages)` gives its token ids, as the
    engine will get them); logs how many were left out or clipped, naming `what` they were."""
    lengths = [len(encode(m)) for m in problems["prompt"].to_list()]
    result = fit_problems(problems, lengths, max_tokens, policy)
    log_fit(result, what, max_tokens, policy)
    return result


def log_fit(result: FitResult, what: str, max_tokens: int, policy: ContextPolicy) -> None:
    total = result.kept.height + result.left_out.height
    if result.left_out.height:
        longest = int(result.left_out["prompt_tokens"].max())
        logger.warning("%s: %d of %d left out, their prompt does not fit the context of %d tokens with max_tokens %d "
                       "(%s; longest prompt %d tokens)%s", what, result.left_out.height, total, policy.context,
                       max_tokens, ", ".join(f"{r}: {n}" for r, n in result.counts().items()), longest,
                       "; overlong prompts 'clip' would keep the budget_over_context ones"
                       if "budget_over_context" in result.counts() else "")
    if result.clipped:
        logger.warning("%s: %d of %d generate with a completion budget clipped below max_tokens %d to fit the "
                       "context of %d tokens", what, result.clipped, total, max_tokens, policy.context)
