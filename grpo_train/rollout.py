"""Rollouts with dynamic resampling: every training batch is full of groups that teach.

`RolloutBatcher.next_batch()` asks the scheduler for problems, generates G answers for each through
the engine, verifies them, reports every group's outcome back to the scheduler (kept or dropped),
and drops groups whose rewards have no variance (all right or all wrong). It asks for replacements
until the batch holds `batch_groups` informative groups or `max_rounds` rounds have run; an
under-filled batch is returned as it is, flagged, with a warning: the trainer trains on what is
there, never hangs, never fails on the first hard batch.

With any scheduler: `uniform` + dropping is DAPO's dynamic sampling; `band` + dropping is this
project's scheduled resampling; dropping off gives plain GRPO.

Multi-rank: every rank runs the same scheduler (same seed, same updates), takes its own slice of
the sampled problems, and the outcomes are all-gathered so all schedulers stay identical.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass, field

import numpy as np

from grpo_data.engines import Completion
from grpo_data.prompting import PromptConfig, SamplingConfig, render_prompt

logger = logging.getLogger(__name__)


@dataclass
class Group:
    """G answers to one problem.

    problem:    index into the problem table.
    prompt_ids: token ids the engine was given.
    completions: the G sampled answers.
    rewards:    (G,) 1.0 for a verified-correct answer, else 0.0.
    """

    problem: int
    prompt_ids: list[int]
    completions: list[Completion]
    rewards: np.ndarray

    @property
    def informative(self) -> bool:
        return bool(self.rewards.std() > 0)


@dataclass
class RolloutBatch:
    """What one step trains on, and what it cost.

    groups: groups to train on (the informative ones when resampling is on);
    generated_groups / generated_rollouts: everything sampled this step, dropped groups included;
    informative_groups: generated groups with reward variance; rounds: sampling rounds used;
    underfilled: fewer than batch_groups groups could be found; gen_seconds / gen_tokens: generation
    cost; n_correct: correct answers among all generated rollouts."""

    groups: list[Group] = field(default_factory=list)
    generated_groups: int = 0
    generated_rollouts: int = 0
    informative_groups: int = 0
    n_correct: int = 0
    rounds: int = 0
    underfilled: bool = False
    gen_seconds: float = 0.0
    gen_tokens: int = 0
    verify_seconds: float = 0.0


class RolloutBatcher:
    def __init__(self, engine, verifier, scheduler, prompts: list[list[dict]], answers: list[str], tokenizer,
                 group_size: int, batch_groups: int, max_rounds: int, dynamic_resampling: bool,
                 sampling: SamplingConfig, prompt_cfg: PromptConfig = PromptConfig(), oversample: float = 1.25,
                 rank: int = 0, world_size: int = 1, all_gather=None) -> None:
        self.engine, self.verifier, self.scheduler = engine, verifier, scheduler
        self.answers = answers
        self.tokenizer = tokenizer
        self.group_size, self.batch_groups = group_size, batch_groups
        self.max_rounds = max_rounds if dynamic_resampling else 1
        self.dynamic = dynamic_resampling
        self.sampling = sampling
        self.oversample = oversample
        self.rank, self.world_size = rank, world_size
        self.all_gather = all_gather
        # token ids of every rendered prompt, computed once
        self._prompts = prompts
        self._prompt_cfg = prompt_cfg
        self._ids: dict[int, list[int]] = {}

    def prompt_ids(self, i: int) -> list[int]:
        if i not in self._ids:
            text = render_prompt(self.tokenizer, self._prompts[i], self._prompt_cfg)
            self._ids[i] = self.tokenizer(text, add_special_tokens=False)["input_ids"]
        return self._ids[i]

    def _generate_groups(self, idx: np.ndarray, batch: RolloutBatch, n: int | None = None) -> list[Group]:
        ids = [self.prompt_ids(int(i)) for i in idx]
        t0 = time.monotonic()
        outs = self.engine.generate(ids, n or self.group_size, self.sampling)
        batch.gen_seconds += time.monotonic() - t0
        t0 = time.monotonic()
        golds = [self.answers[int(i)] for i, g in zip(idx, outs, strict=True) for _ in g]
        verdicts = self.verifier.verify(golds, [c.text for g in outs for c in g]) if golds else []
        batch.verify_seconds += time.monotonic() - t0
        groups, pos = [], 0
        for i, pids, comps in zip(idx, ids, outs, strict=True):
            rewards = np.array([float(v.correct) for v in verdicts[pos : pos + len(comps)]])
            pos += len(comps)
            batch.gen_tokens += sum(len(c.token_ids) for c in comps)
            groups.append(Group(int(i), pids, comps, rewards))
        return groups

    def _share(self, idx: np.ndarray) -> np.ndarray:
        return idx[self.rank :: self.world_size]

    def _gather_outcomes(self, mine: list[Group], idx: np.ndarray) -> np.ndarray:
        """n_correct for every problem in idx (all ranks' shares), in idx order."""
        local = {g.problem: int(g.rewards.sum()) for g in mine}
        if self.world_size > 1 and self.all_gather is not None:
            merged: dict[int, int] = {}
            for part in self.all_gather(local):
                merged.update(part)
            local = merged
        return np.array([local[int(i)] for i in idx])

    def next_batch(self) -> RolloutBatch:
        batch = RolloutBatch()
        want_total = self.batch_groups * self.world_size
        kept_total = 0
        for round_no in range(self.max_rounds):
            need = want_total - kept_total
            ask = need if round_no == 0 else math.ceil(need * self.oversample)
            ask = max(ask, self.world_size)  # every rank gets a share: engines generate in lock-step
            idx = self.scheduler.sample(ask)
            mine = self._generate_groups(self._share(idx), batch)
            n_correct = self._gather_outcomes(mine, idx)
            self.scheduler.update(idx, n_correct, self.group_size)  # every outcome, kept or dropped
            informative = (n_correct > 0) & (n_correct < self.group_size)
            batch.rounds += 1
            batch.generated_groups += len(mine)
            batch.generated_rollouts += len(mine) * self.group_size
            batch.informative_groups += sum(g.informative for g in mine)
            batch.n_correct += int(sum(g.rewards.sum() for g in mine))
            if self.dynamic:
                batch.groups += [g for g in mine if g.informative]
                kept_total += int(informative.sum())
            else:
                batch.groups += mine
                kept_total += len(idx)
            if kept_total >= want_total:
                break
        batch.groups = batch.groups[: self.batch_groups]
        if kept_total < want_total:
            batch.underfilled = True
            logger.warning("batch under-filled: %d of %d informative groups after %d rounds; training on what is there",
                           kept_total, want_total, batch.rounds)
        return batch


def refresh_estimates(batcher: RolloutBatcher, size: int, k: int) -> int:
    """Re-estimate a subset of the pool with the current policy (as the profiler does): the
    scheduler's stalest problems and those nearest the band edges get k fresh samples each, and
    the outcomes update the scheduler. Returns the number of rollouts spent (count them: they are
    real sampling cost). With several ranks every rank refreshes its share of the same subset."""
    idx = batcher.scheduler.refresh_candidates(size)
    if idx.size == 0:
        return 0
    groups = batcher._generate_groups(batcher._share(idx), RolloutBatch(), n=k)
    batcher.scheduler.update(idx, batcher._gather_outcomes(groups, idx), k)
    return int(idx.size) * k
