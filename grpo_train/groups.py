"""What a rollout step produces: groups of G scored answers and the batch that counts their cost.

`make_group` turns one problem's sampled, verified answers (`grpo_data.generation.rollouts.ScoredGroup`) into a
`Group`: each answer's reward, the overlong handling (`Overlong`: keep, mask, or DAPO's soft length
penalty) and which answers train. `RolloutBatch` is one step's groups with everything the step
spent. `group_kind`, `level_key` and `trained_counts` are the trace's words for a group. The
batcher that fills a batch (`grpo_train.rollout`) and the learner read these; nothing here samples.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
import torch

from grpo_data.generation.engines import Completion
from grpo_data.generation.prompting import SamplingConfig
from grpo_data.generation.rollouts import ScoredGroup
from grpo_data.verify.rewards import Answer, build_reward
from grpo_train.core_algos import overlong_penalty


@dataclass(frozen=True)
class Overlong:
    """What happens to answers that hit max_tokens (see RolloutConfig.overlong)."""

    mode: str = "keep"
    max_tokens: int = SamplingConfig.max_tokens
    buffer: int = 0
    penalty: float = 1.0


@dataclass
class Group:
    """G answers to one problem.

    problem:     index into the problem table.
    prompt_ids:  token ids the engine was given.
    completions: the G sampled answers.
    rewards:     (G,) the reward each answer is trained with (`reward.terms`; by default 1.0 for
                 verified-correct, else 0.0), plus the overlong penalty when that is on; NaN where
                 no reward could score it.
    correct:     (G,) 1.0 for verified-correct (what the scheduler and the dropping rule see).
    train_mask:  (G,) False for answers kept out of the loss (overlong=mask, unscored); None: all train.
    answers:     the answer the verifier read from each completion ("" for none).
    """

    problem: int
    prompt_ids: list[int]
    completions: list[Completion]
    rewards: np.ndarray
    correct: np.ndarray | None = None
    train_mask: np.ndarray | None = None
    answers: list[str] | None = None

    def __post_init__(self) -> None:
        if self.correct is None:
            self.correct = self.rewards

    @property
    def distinct_wrong_answers(self) -> float | None:
        """Distinct answers among the wrong ones (no answer counts as one), over how many were wrong;
        None with fewer than 2 wrong. Wrong answers, not all: as a policy learns, its right answers
        merge into one by themselves; a degenerating one repeats its mistakes too."""
        wrong = [a for a, c in zip(self.answers or [], self.correct, strict=False) if not c]
        return len(set(wrong)) / len(wrong) if len(wrong) >= 2 else None

    @property
    def trained(self) -> np.ndarray:
        """(G,) bool: the answers the loss trains on (a reward, and not masked, e.g. by overlong=mask)."""
        scored = np.isfinite(self.rewards)
        return scored if self.train_mask is None else scored & self.train_mask

    @property
    def informative(self) -> bool:
        """A right and a wrong answer among those the loss trains on (DAPO's accuracy filter, on what
        trains): with overlong=mask a group whose only wrong answer was cut off trains as all right
        and teaches nothing. Correctness, not reward variance: a length penalty or a format term
        alone would turn an all-wrong group into full-size advantages after normalization."""
        correct = self.correct[self.trained]
        return correct.size > 1 and bool(0 < correct.sum() < correct.size)


CORRECTNESS = build_reward("correctness")


def make_group(problem: int, prompt_ids: list[int], scored: ScoredGroup, overlong: Overlong,
               reward=CORRECTNESS) -> Group:
    """A Group from sampled, verified answers: each answer's reward from `reward` (a
    `grpo_data.verify.rewards.build_reward` sum; None becomes NaN and keeps the answer out of the loss)."""
    correct = scored.correct
    answers = [Answer(c.text, v, len(c.token_ids), c.truncated, overlong.max_tokens)
               for c, v in zip(scored.completions, scored.verdicts, strict=True)]
    rewards = np.array([np.nan if (r := reward(a)) is None else r for a in answers], dtype=np.float64)
    mask = np.isfinite(rewards)
    if overlong.mode == "penalty":
        lengths = torch.tensor([len(c.token_ids) for c in scored.completions])
        rewards = rewards + overlong_penalty(lengths, overlong.max_tokens, overlong.buffer, overlong.penalty).numpy()
    elif overlong.mode == "mask":
        mask = mask & ~scored.truncated
    return Group(problem, prompt_ids, scored.completions, rewards, correct, None if mask.all() else mask,
                 [v.answer for v in scored.verdicts])


@dataclass
class RolloutBatch:
    """What one step trains on, and what it cost.

    groups: groups to train on (the informative ones when resampling is on);
    generated_groups / generated_rollouts: everything sampled this step, dropped groups included;
    informative_groups: generated groups with a right and a wrong answer among those that train
    (`Group.informative`); rounds: sampling rounds used;
    underfilled: fewer than batch_groups groups could be found; gen_seconds / gen_tokens: generation
    cost; n_correct: correct answers among all generated rollouts; truncated: generated answers
    that hit max_tokens; formatted: generated answers in the prompt's requested answer format;
    distinct_wrong_sum / distinct_wrong_groups: `Group.distinct_wrong_answers` summed over the
    generated groups that have it, and how many those are; informative_rollouts: the answers that
    train in informative groups; group_sizes: every generated group's size (G each with
    a fixed G); group_var_sum: the within-group reward variances (sample, ddof 1) of the generated
    groups, summed (the variance-driven G schedule reads its mean); baseline_var_sum: the estimated
    variance of each group's mean reward (its sample variance / its size), summed: the noise the
    group baseline puts into every advantage, which a larger G shrinks; predicted_correct /
    predicted_rollouts: the scheduler's expected correct answers for the generated groups whose
    problems it estimates (`pass_rate`, asked before their outcomes update it), and their answers;
    draws: this rank's generated groups, one `Draw` each, in the order generated (the run's trace)."""

    groups: list[Group] = field(default_factory=list)
    generated_groups: int = 0
    generated_rollouts: int = 0
    informative_groups: int = 0
    n_correct: int = 0
    truncated: int = 0
    formatted: int = 0
    rounds: int = 0
    underfilled: bool = False
    gen_seconds: float = 0.0
    gen_tokens: int = 0
    verify_seconds: float = 0.0
    distinct_wrong_sum: float = 0.0
    distinct_wrong_groups: int = 0
    informative_rollouts: int = 0
    group_sizes: list[int] = field(default_factory=list)
    group_var_sum: float = 0.0
    baseline_var_sum: float = 0.0
    groups_all_right: int = 0
    groups_all_wrong: int = 0
    groups_in_band: int = 0
    level_groups: Counter = field(default_factory=Counter)
    screen_rollouts: int = 0
    predicted_correct: float = 0.0
    predicted_rollouts: int = 0
    draws: list[Draw] = field(default_factory=list)


class Draw(NamedTuple):
    """One generated group as the trace stores it: its problem (row of the pool), the scheduler's
    predicted pass rate for it before its outcome (None when the scheduler estimates none), its right
    answers and size, the round of the step it was drawn in, and whether it was informative (mixed)."""

    problem: int
    predicted: float | None
    n_correct: int
    size: int
    round: int
    informative: bool


def draws_record(draws: list[Draw], ids: list[str]) -> dict[str, list]:
    """A step's draws as parallel lists, problems by id: one line of draws.jsonl."""
    return {"id": [ids[d.problem] for d in draws], **{f: [getattr(d, f) for d in draws] for f in Draw._fields[1:]}}


def level_key(level) -> str:
    """A level as the trace names it: `3` for 3.0, `none` for a problem without one (NaN)."""
    value = float(level)
    if np.isnan(value):
        return "none"
    return str(int(value)) if value.is_integer() else str(value)


def group_kind(group: Group) -> str:
    """`mixed` (a right and a wrong answer among those that train: `Group.informative`), else
    `all_right` when every answer that trains is right, else `all_wrong` (a group none of whose
    answers trains, all cut off and masked, counts as all-wrong: it teaches nothing either way).
    The three shares of a step's generated groups add up to 1."""
    if group.informative:
        return "mixed"
    correct = group.correct[group.trained]
    return "all_right" if correct.size and bool(correct.all()) else "all_wrong"


def trained_counts(groups: list[Group]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(right answers, answers) among those the loss trains on (`Group.trained`: the same answers
    `Group.informative` judges), and answers sampled, per group."""
    return (np.array([int(g.correct[g.trained].sum()) for g in groups]), np.array([int(g.trained.sum()) for g in groups]),
            np.array([len(g.completions) for g in groups]))
