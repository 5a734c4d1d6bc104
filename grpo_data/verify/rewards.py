"""Rewards, registered by name: what an answer earns. The profiler counts correctness through this
registry and the trainer trains on a weighted sum of its terms, so both read answers the same way.

    reward = build_reward([{"name": "correctness", "weight": 0.9}, {"name": "format", "weight": 0.1}])
    reward(Answer(text, verdict, n_tokens=40, truncated=False, max_tokens=512))  # float, or None

A reward that cannot score an answer returns None ("no score"), never 0: an unreadable gold answer
makes nothing right or wrong. A weighted sum with any unscored term is unscored. A new reward is added here:

    @register_reward("my_reward")
    def my_reward(answer: Answer, **options) -> float | None: ...
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable
from dataclasses import dataclass

from grpo_data.verify.final_answer import last_boxed

REWARDS: dict[str, Callable[..., float | None]] = {}


@dataclass(frozen=True)
class Answer:
    """One sampled answer as rewards see it.

    text: the completion's text; verdict: the verifier's `Verdict` on it; n_tokens: completion
    tokens; truncated: it hit max_tokens (did not stop); max_tokens: the completion budget."""

    text: str
    verdict: object
    n_tokens: int = 0
    truncated: bool = False
    max_tokens: int = 1


def register_reward(name: str):
    def deco(fn):
        REWARDS[name] = fn
        return fn

    return deco


@register_reward("correctness")
def correctness(answer: Answer, undecided: str = "zero") -> float | None:
    """1.0 when the verifier judged the answer equal to the gold one, 0.0 when it judged it wrong or
    found no answer. None when the gold answer cannot be read: nothing could score it.

    undecided: what a verifier timeout or error earns. `zero` (default, as TRL's and verl's math
    rewards do): those are nearly always caused by the answer itself (a degenerate expression, a
    huge number, runaway text), and leaving them unscored would spare exactly the outputs a
    degenerating policy makes from any penalty. `none`: no score, for a verifier you distrust."""
    if undecided not in ("zero", "none"):
        raise ValueError(f"correctness: undecided must be zero or none, got {undecided!r}")
    reason = answer.verdict.reason
    if reason == "unparseable_gold" or (reason in ("timeout", "error") and undecided == "none"):
        return None
    return 1.0 if answer.verdict.correct else 0.0


@register_reward("format")
def format_reward(answer: Answer) -> float:
    """1.0 when the answer stopped on its own (not truncated) and carries a \\boxed{...} answer."""
    return 1.0 if not answer.truncated and last_boxed(answer.text) is not None else 0.0


@register_reward("length_penalty")
def length_penalty(answer: Answer, free_tokens: int = 0) -> float:
    """-(tokens beyond free_tokens) / (max_tokens - free_tokens), in [-1, 0]: 0 for an answer within
    free_tokens, -1 for one that used the whole budget."""
    over = max(0, answer.n_tokens - free_tokens)
    return -min(1.0, over / max(1, answer.max_tokens - free_tokens))


def as_number(value, kind: type):
    """value as a `kind` number when it is text that reads as one: YAML 1.1 reads 1e-2 and 1e3
    (no dot) as strings. Anything else comes back unchanged, for the checks to name."""
    if isinstance(value, str) and kind in (int, float):
        try:
            number = float(value)
        except ValueError:
            return value
        return int(number) if kind is int and number.is_integer() else number
    return value


def check_terms(terms) -> tuple[dict, ...]:
    """Reward terms as {"name", "weight", options...} mappings, checked: a known name, a finite
    weight, options the reward accepts. Raises ValueError naming the term and what to change."""
    if isinstance(terms, str):
        terms = ({"name": terms, "weight": 1.0},)
    out = []
    for i, term in enumerate(terms or ()):
        if not isinstance(term, dict) or "name" not in term:
            raise ValueError(f"reward.terms[{i}] must be a mapping with a name (and weight), got {term!r}")
        name = term["name"]
        if name not in REWARDS:
            raise ValueError(f"reward.terms[{i}]: unknown reward {name!r}; choose one of: {', '.join(REWARDS)}")
        weight = as_number(term.get("weight", 1.0), float)
        if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not math.isfinite(weight):
            raise ValueError(f"reward.terms[{i}] ({name}): weight must be a finite number, got {weight!r}")
        params = inspect.signature(REWARDS[name]).parameters
        options = {k: as_number(v, type(params[k].default)) if k in params else v
                   for k, v in term.items() if k not in ("name", "weight")}
        accepted = set(params) - {"answer"}
        unknown = sorted(set(options) - accepted)
        if unknown:
            raise ValueError(f"reward.terms[{i}] ({name}): unknown option(s) {', '.join(unknown)}; "
                             f"accepted: {', '.join(sorted(accepted)) or 'none'}")
        out.append({"name": name, "weight": float(weight), **options})
    if not out:
        raise ValueError("reward.terms is empty: give at least one reward, e.g. [{name: correctness, weight: 1.0}]")
    return tuple(out)


def build_reward(terms) -> Callable[[Answer], float | None]:
    """The weighted sum of the terms (checked by `check_terms`): Answer -> float, or None when any
    term cannot score it."""
    checked = check_terms(terms)
    parts = [(REWARDS[t["name"]], t["weight"], {k: v for k, v in t.items() if k not in ("name", "weight")})
             for t in checked]

    def reward(answer: Answer) -> float | None:
        total = 0.0
        for fn, weight, options in parts:
            value = fn(answer, **options)
            if value is None:
                return None
            total += weight * value
        return total

    return reward
