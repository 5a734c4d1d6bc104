"""Rollouts with dynamic resampling: every training batch is full of groups that teach.

`RolloutBatcher.next_batch()` asks the scheduler for problems, samples G answers for each through
the shared path (`grpo_data.generation.rollouts.RolloutSampler`: the same token ids, stops and verification as
profiling and evaluation), reports every group's outcome back to the scheduler (kept or dropped),
and drops groups whose answers are all right or all wrong. It asks for replacements until the batch
holds `batch_groups` informative groups or `max_rounds` rounds have run; an under-filled batch is
returned as it is, flagged, with a warning: the trainer trains on what is there, never hangs,
never fails on the first hard batch.

With any scheduler: `uniform` + dropping is DAPO's dynamic sampling; `band` + dropping is this
project's scheduled resampling; dropping off gives plain GRPO.

Answers that hit max_tokens are handled by `overlong`: kept as they are, masked out of the loss
(DAPO's overlong filtering), or given DAPO's soft length penalty on top of their reward.

Multi-rank: every rank runs the same scheduler (same seed, same updates), takes its own slice of
the sampled problems, and the outcomes are all-gathered so all schedulers stay identical.
"""

from __future__ import annotations

import logging
import math

import numpy as np

from grpo_data.curriculum.allocation import Sizing, deal_by_answers, expected_informative, needs_more
from grpo_data.curriculum.stats import DEFAULT_BAND
from grpo_data.generation.rollouts import RolloutSampler, ScoredGroup
from grpo_data.tables.problems import question_text
from grpo_train.groups import (
    CORRECTNESS,
    Draw,
    Group,
    Overlong,
    RolloutBatch,
    group_kind,
    level_key,
    make_group,
    trained_counts,
)

logger = logging.getLogger(__name__)


class RolloutBatcher:
    def __init__(self, sampler: RolloutSampler, scheduler, prompts: list[list[dict]], answers: list[str],
                 group_size: int, batch_groups: int, max_rounds: int, dynamic_resampling: bool,
                 overlong: Overlong = Overlong(), oversample: float = 1.25, rank: int = 0, world_size: int = 1,
                 all_gather=None, reward=CORRECTNESS, sizing: Sizing = Sizing(), band: tuple[float, float] = DEFAULT_BAND,
                 levels: np.ndarray | None = None) -> None:
        self.sampler, self.scheduler = sampler, scheduler
        self.answers = answers
        self.group_size, self.batch_groups = group_size, batch_groups
        self.max_rounds = max_rounds if dynamic_resampling else 1
        self.dynamic = dynamic_resampling
        self.overlong = overlong
        self.oversample = oversample
        self.rank, self.world_size = rank, world_size
        self.all_gather = all_gather
        self.reward = reward
        self.sizing = sizing
        self.band = band
        self.levels = levels
        if sizing.mode == "allocate" and not hasattr(scheduler, "posterior"):
            raise ValueError("rollout.sizing=allocate sizes groups from the scheduler's posterior: use "
                             "scheduler.name=band (this scheduler keeps none)")
        if sizing.mode == "scheduler" and not hasattr(scheduler, "sample_sized"):
            raise ValueError("rollout.sizing=scheduler takes each group's size from the scheduler: use "
                             "scheduler.name=sgpo (this scheduler sizes none)")
        self._prompts = prompts
        self._ids: dict[int, list[int]] = {}  # token ids of every rendered prompt, computed once

    def prompt_ids(self, i: int) -> list[int]:
        if i not in self._ids:
            self._ids[i] = self.sampler.encode(self._prompts[i])
        return self._ids[i]

    def _sample(self, idx: np.ndarray, batch: RolloutBatch, n: int) -> list[ScoredGroup]:
        """n answers for each of idx, scored, with their cost added to batch; one engine call."""
        cost = self.sampler.cost
        before = (cost.gen_seconds, cost.verify_seconds, cost.tokens, cost.truncated, cost.formatted)
        scored = self.sampler.sample([self.prompt_ids(int(i)) for i in idx], [self.answers[int(i)] for i in idx], n,
                                     [question_text(self._prompts[int(i)]) for i in idx])
        batch.gen_seconds += cost.gen_seconds - before[0]
        batch.verify_seconds += cost.verify_seconds - before[1]
        batch.gen_tokens += cost.tokens - before[2]
        batch.truncated += cost.truncated - before[3]
        batch.formatted += cost.formatted - before[4]
        return scored

    def _generate_groups(self, idx: np.ndarray, batch: RolloutBatch, n: int | None = None) -> list[Group]:
        scored = self._sample(idx, batch, n or self.group_size)
        return [self._group(int(i), s) for i, s in zip(idx, scored, strict=True)]

    def _sample_sized(self, idx: np.ndarray, sizes: np.ndarray, batch: RolloutBatch) -> list[ScoredGroup]:
        """sizes[j] answers for idx[j], in one engine call of one answer per repeated prompt (so every
        rank makes the same number of calls, whatever its sizes: data-parallel vLLM steps in lock-step)."""
        flat = self._sample(np.repeat(idx, sizes), batch, 1)
        ends = np.cumsum(sizes)
        return [ScoredGroup.concat(flat[end - size : end]) for size, end in zip(sizes, ends, strict=True)]

    def _count(self, batch: RolloutBatch, mine: list[Group]) -> None:
        """Add the generated groups of one round to the batch's counters (this rank's)."""
        batch.generated_groups += len(mine)
        batch.generated_rollouts += sum(len(g.completions) for g in mine)
        batch.informative_groups += sum(g.informative for g in mine)
        batch.informative_rollouts += sum(int(g.trained.sum()) for g in mine if g.informative)  # answers that train
        batch.group_sizes += [len(g.completions) for g in mine]
        # sample variance (ddof 1) of the rewards that train: its expectation p(1-p) does not depend on
        # the group's size, so a G schedule reading it can move G both ways
        variances = [(np.var(g.rewards[g.trained], ddof=1), int(g.trained.sum())) for g in mine if g.trained.sum() > 1]
        batch.group_var_sum += float(sum(v for v, _ in variances))
        batch.baseline_var_sum += float(sum(v / n for v, n in variances))  # the group mean's variance: var / n
        batch.n_correct += int(sum(g.correct.sum() for g in mine))
        for g in mine:  # the trace: what every generated group gave, whether or not it trains
            kind = group_kind(g)
            batch.groups_all_right += kind == "all_right"
            batch.groups_all_wrong += kind == "all_wrong"
            trained = g.correct[g.trained]  # the answers that train, as group_kind judges them
            batch.groups_in_band += bool(trained.size and self.band[0] <= trained.mean() <= self.band[1])
            if self.levels is not None:
                batch.level_groups[level_key(self.levels[g.problem])] += 1
        shares = [d for d in (g.distinct_wrong_answers for g in mine) if d is not None]
        batch.distinct_wrong_sum += float(sum(shares))
        batch.distinct_wrong_groups += len(shares)

    def _predict(self, batch: RolloutBatch, mine: list[Group]) -> np.ndarray | None:
        """The scheduler's pass rates for this rank's generated groups, asked before their outcomes
        update it (None for a scheduler that estimates none): the trace stores them beside the
        outcomes. With fixed group sizes they are also added up as the expected correct answers (what
        a surprise-triggered refresh compares the outcomes with); a size decided after seeing some
        answers correlates with the pass rate (a screen continues the mixed ones), so mean x size
        would be a biased prediction there."""
        if not mine or not hasattr(self.scheduler, "pass_rate"):
            return None
        rates = self.scheduler.pass_rate(np.array([g.problem for g in mine], dtype=np.int64))
        if self.sizing.mode == "fixed":
            sizes = np.array([len(g.completions) for g in mine])
            batch.predicted_correct += float(rates @ sizes)
            batch.predicted_rollouts += int(sizes.sum())
        return rates

    def _trace(self, batch: RolloutBatch, mine: list[Group], rates: np.ndarray | None) -> None:
        """One `Draw` per generated group of this round (this rank's)."""
        for j, g in enumerate(mine):
            predicted = None if rates is None or not np.isfinite(rates[j]) else round(float(rates[j]), 4)
            batch.draws.append(Draw(int(g.problem), predicted, int(g.correct.sum()), len(g.completions),
                                    batch.rounds, bool(g.informative)))

    def _share(self, idx: np.ndarray) -> np.ndarray:
        return idx[self.rank :: self.world_size]

    def _gather_outcomes(self, mine: list[Group], interleaved: bool = True) -> tuple[np.ndarray, np.ndarray]:
        """(n_correct, informative) for every group of the round over all ranks, in the round's order:
        rank r's groups are idx[r::world] (`_share`, interleaved) or the r-th block (allocate's per-rank
        plans). Gathered as lists in order, never keyed by problem: a pool smaller than the ranks
        repeats a problem within a round, and each repeat is its own outcome."""
        parts = self._all_ranks([(int(g.correct.sum()), g.informative) for g in mine])
        if interleaved:
            merged = _interleave(parts)
        else:
            merged = [outcome for part in parts for outcome in part]
        n_correct = np.array([c for c, _ in merged], dtype=np.int64)
        return n_correct, np.array([i for _, i in merged], dtype=bool)

    def _quota(self, mine: int, want_total: int) -> int:
        """How many of its kept groups this rank trains: the batch is want_total groups over all
        ranks, not batch_groups on each (a rank short of groups leaves room for another's)."""
        if self.world_size == 1 or self.all_gather is None:
            return min(mine, want_total)
        return int(rank_quotas(np.array(self.all_gather(mine)), want_total)[self.rank])

    def next_batch(self) -> RolloutBatch:
        return self._fixed_batch() if self.sizing.mode in ("fixed", "screen") else self._sized_batch()

    def _fixed_batch(self) -> RolloutBatch:
        batch = RolloutBatch()
        want_total = self.batch_groups * self.world_size
        kept_total = 0
        for round_no in range(self.max_rounds):
            need = want_total - kept_total
            ask = need if round_no == 0 else math.ceil(need * self.oversample)
            if self.sizing.mode == "screen":  # most screens stop: screen `candidates` problems per group wanted
                ask = math.ceil(need * self.sizing.candidates)
            ask = max(ask, self.world_size)  # every rank gets a share: engines generate in lock-step
            idx = self.scheduler.sample(ask)
            if idx.size < self.world_size:  # a pool smaller than the ranks: repeat problems (each its own outcome)
                idx = np.resize(_nonempty(idx), self.world_size)
            if self.sizing.mode == "screen":
                mine = self._screen_round(idx, batch)
                sizes = np.array(_interleave(self._all_ranks([len(g.completions) for g in mine])), dtype=np.int64)
            else:
                mine = self._generate_groups(self._share(idx), batch)
                sizes = self.group_size
            n_correct, informative = self._gather_outcomes(mine)
            self._trace(batch, mine, self._predict(batch, mine))
            self.scheduler.update(idx, n_correct, sizes)  # every outcome, kept or dropped, at its own size
            batch.rounds += 1
            self._count(batch, mine)
            if self.dynamic:
                batch.groups += [g for g in mine if g.informative]
                kept_total += int(informative.sum())
            else:
                batch.groups += mine
                kept_total += len(idx)
            if kept_total >= want_total:
                break
        batch.groups = batch.groups[: self._quota(len(batch.groups), want_total)]
        if kept_total < want_total:
            batch.underfilled = True
            logger.warning("batch under-filled: %d of %d informative groups after %d rounds; training on what is there",
                           kept_total, want_total, batch.rounds)
        return batch

    def _screen_round(self, idx: np.ndarray, batch: RolloutBatch) -> list[Group]:
        """SPEED's screen-then-continue (arXiv 2506.09016, Alg. 1): round_size answers for each problem
        of this rank's share of idx; a problem whose screen holds a right and a wrong answer among those
        that train gets G - round_size more, and its screen joins its group (G answers); the others stop
        at the screen, their answers charged in full (`screen_rollouts`). Returns this rank's groups, the
        stopped screens included (all-equal by construction, so resampling drops them).

        Ranks stay in lock-step (one engine call each for screens, one for continuations when any rank
        continues): a rank with nothing to continue then continues its first screen anyway, a full
        group that trains only if it comes back mixed."""
        r, g = self.sizing.round_size, self.group_size
        mine_idx = self._share(idx)
        screens = self._sample(mine_idx, batch, r)
        groups = [self._group(int(i), sg) for i, sg in zip(mine_idx, screens, strict=True)]
        go = [j for j, grp in enumerate(groups) if grp.informative]
        forced = False
        if sum(self._all_ranks(len(go))):
            if not go:
                go, forced = [0], True
            more = self._sample(mine_idx[go], batch, g - r)
            for j, sg in zip(go, more, strict=True):
                screens[j] = ScoredGroup.concat([screens[j], sg])
                groups[j] = self._group(int(mine_idx[j]), screens[j])
        # a continuation made only to keep the ranks in lock-step is screening spend unless it trains
        continued = set(go) if not (forced and not groups[0].informative) else set()
        batch.screen_rollouts += sum(len(grp.completions) for j, grp in enumerate(groups) if j not in continued)
        return groups

    def _sized_batch(self) -> RolloutBatch:
        """A batch of variable-size groups: rounds until the kept groups hold batch_groups x G
        answers on all ranks together (a fixed G's batch, counted in answers) or max_rounds ran.
        Kept groups are not cut to an exact count: a group is never split."""
        batch = RolloutBatch()
        want = self.batch_groups * self.group_size * self.world_size
        kept = 0
        for round_no in range(self.max_rounds):
            need = want - kept
            # at least one smallest group per rank: n_min answers, or a round of round_size in sequential
            smallest = self.sizing.round_size if self.sizing.mode == "sequential" else self.sizing.n_min
            budget = max(need if round_no == 0 else math.ceil(need * self.oversample), smallest * self.world_size)
            if self.sizing.mode in ("allocate", "scheduler"):
                plans = self._allocate(budget) if self.sizing.mode == "allocate" else self._scheduled(budget)
                idx, sizes = np.concatenate([p[0] for p in plans]), np.concatenate([p[1] for p in plans])
                my_idx, my_sizes = plans[self.rank]
                scored = self._sample_sized(my_idx, my_sizes, batch)
                mine = [self._group(int(i), sg) for i, sg in zip(my_idx, scored, strict=True)]
            else:
                idx, sizes, _, mine = self._sequential(budget, batch)
            n_correct, informative = self._gather_outcomes(mine, interleaved=False)
            self._trace(batch, mine, self._predict(batch, mine))
            self.scheduler.update(idx, n_correct, sizes)  # every outcome at its own size, kept or dropped
            batch.rounds += 1
            self._count(batch, mine)
            if self.dynamic:
                batch.groups += [g for g in mine if g.informative]
                kept += int(sizes[informative].sum())
            else:
                batch.groups += mine
                kept += int(sizes.sum())
            if kept >= want:
                break
        if kept < want:
            batch.underfilled = True
            logger.warning("batch under-filled: %d of %d answers in informative groups after %d rounds; training on "
                           "what is there", kept, want, batch.rounds)
        return batch

    def _allocate(self, budget: int) -> list[tuple[np.ndarray, np.ndarray]]:
        """(problems, sizes) for each rank in one round of `budget` answers over all ranks: the
        scheduler offers candidates, dealt to the ranks in turn; each rank's share is sized from its
        posteriors within budget / ranks answers, by the sizing objective (`grpo_data.curriculum.allocation`).
        Every rank computes every plan (the schedulers are identical), so all agree on the round's
        outcome. A rank whose plan is empty gets its most promising candidate at n_min (every rank
        generates: data-parallel vLLM steps in lock-step)."""
        z = self.sizing
        offered = self.scheduler.sample(max(self.world_size, math.ceil(z.candidates * budget / self.group_size)))
        if offered.size < self.world_size:  # a pool smaller than the ranks: repeat problems
            offered = np.resize(_nonempty(offered), self.world_size)
        weights, values = self.scheduler.posterior(offered)
        share = budget // self.world_size
        plans = []
        for r in range(self.world_size):
            rows = np.arange(r, offered.size, self.world_size)
            plan = z.plan(weights[rows], values[rows], share)
            if plan.chosen.size == 0:
                best = rows[int(np.argmax(expected_informative(weights[rows], values[rows], z.n_min)))]
                plans.append((offered[[best]], np.array([z.n_min], dtype=np.int64)))
            else:
                plans.append((offered[rows[plan.chosen]], plan.sizes))
        return plans

    def _scheduled(self, budget: int) -> list[tuple[np.ndarray, np.ndarray]]:
        """(problems, sizes) for each rank in one round of `budget` answers over all ranks, from a
        scheduler that sizes its own groups (`sample_sized`: sGPO's about 1/p each, within [n_min,
        n_max]), each to the rank with the fewest answers so far (`deal_by_answers`: lock-step ranks get
        about equal work). Every rank asks the same (identical) scheduler, so all agree on the round; a
        pool smaller than the ranks repeats problems."""
        idx, sizes = self.scheduler.sample_sized(budget, self.sizing.n_min, self.sizing.n_max)
        if idx.size < self.world_size:
            idx, sizes = np.resize(_nonempty(idx), self.world_size), np.resize(sizes, self.world_size)
        return [(idx[rows], sizes[rows]) for rows in deal_by_answers(sizes, self.world_size)]

    def _sequential(self, budget: int, batch: RolloutBatch) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[Group]]:
        """Answers in rounds of round_size, `budget` answers over all ranks: about budget / (2 round_size)
        problems start, dealt to the ranks in turn; each later round continues the problems still
        without a right-and-wrong mix among the answers that train (below n_max), and when none is
        left anywhere, starts new ones; until a round cannot give every rank one problem.

        Ranks move in lock-step (data-parallel vLLM generates together): each round every rank makes
        one engine call. In a round of continuations a rank with none to continue starts a fresh
        problem, and new problems are drawn from the scheduler by every rank alike, so the schedulers
        stay identical (the price: near the end of the budget an idle rank may start a problem no
        round is left to continue, and a scheduler with no new problem ends every rank's round).
        On one rank this is the plain loop: continue while any problem needs it, else start new
        ones. Returns the round's problems and sizes over all ranks (rank blocks, in
        rank order), and this rank's problems and their groups (rewarded, masked: `make_group`)."""
        r, cap, world = self.sizing.round_size, self.sizing.n_max, self.world_size
        problems: list[int] = []  # this rank's
        scored: list[ScoredGroup] = []  # their answers so far
        groups: list[Group] = []  # the same, rewarded and masked (rebuilt only when a problem gets answers)
        taken: set[int] = set()  # problems started on any rank this round
        left = budget
        start = max(1, math.ceil(budget / (2 * r)))
        while left // r >= world:
            slots = left // r
            if groups:
                n_correct, n_trained, spent = trained_counts(groups)
                more = np.flatnonzero(needs_more(n_correct, n_trained, cap - r + 1, spent))
            else:
                more = np.array([], dtype=np.int64)
            counts = np.array(self._all_ranks(int(more.size)))
            if counts.sum():  # continuations; a rank with none starts a fresh problem, so every rank generates
                idle = np.flatnonzero(counts == 0)
                allowed = rank_quotas(counts, slots - idle.size)
                fresh = self._fresh(idle.size, taken) if idle.size else np.array([], dtype=np.int64)
                if fresh.size == 0 and idle.size:  # the scheduler offered only problems already in this step
                    break
                fresh = np.resize(fresh, idle.size)  # fewer than the idle ranks: repeat them
                more = more[: allowed[self.rank]]
                new = fresh[np.flatnonzero(idle == self.rank)]
                answers = self._sample(np.concatenate([np.array(problems, dtype=np.int64)[more], new]), batch, r)
                for j, sg in zip(more, answers[: more.size], strict=True):
                    scored[j] = ScoredGroup.concat([scored[j], sg])
                    groups[j] = self._group(problems[j], scored[j])
                self._start(problems, scored, groups, new, answers[more.size :])
                left -= (int(allowed.sum()) + idle.size) * r
                continue
            fresh = self._fresh(min(start, slots), taken)
            if fresh.size == 0:
                break
            if fresh.size < world:  # fewer new problems than ranks: repeat them, every rank generates
                fresh = np.resize(fresh, world)
            new = fresh[self.rank :: world]
            self._start(problems, scored, groups, new, self._sample(new, batch, r))
            left -= fresh.size * r
        sizes = np.array([len(g.completions) for g in groups], dtype=np.int64)
        mine = np.array(problems, dtype=np.int64)
        parts = self._all_ranks((mine.tolist(), sizes.tolist()))
        return (np.array([i for p, _ in parts for i in p], dtype=np.int64),
                np.array([n for _, s in parts for n in s], dtype=np.int64), mine, groups)

    def _fresh(self, n: int, taken: set[int]) -> np.ndarray:
        """Up to n problems from the scheduler not yet started this round (every rank draws alike)."""
        drawn = [i for i in dict.fromkeys(self.scheduler.sample(n).tolist()) if i not in taken]
        taken.update(drawn)
        return np.array(drawn, dtype=np.int64)

    def _all_ranks(self, obj) -> list:
        """obj from every rank, in rank order ([obj] on one rank)."""
        return self.all_gather(obj) if self.world_size > 1 and self.all_gather is not None else [obj]

    def _group(self, problem: int, scored: ScoredGroup) -> Group:
        return make_group(problem, self.prompt_ids(problem), scored, self.overlong, self.reward)

    def _start(self, problems: list[int], scored: list[ScoredGroup], groups: list[Group], new: np.ndarray,
               answers: list[ScoredGroup]) -> None:
        """Append the problems `new` started this round, with their first answers, to the running lists."""
        for i, sg in zip(new.tolist(), answers, strict=True):
            problems.append(i)
            scored.append(sg)
            groups.append(self._group(i, sg))


def _interleave(parts: list[list]) -> list:
    """Per-rank lists (rank r's items are the round's r::world, `RolloutBatcher._share`) back in the
    round's order."""
    merged: list = [None] * sum(len(part) for part in parts)
    for r, part in enumerate(parts):
        merged[r :: len(parts)] = part
    return merged


def _nonempty(idx: np.ndarray) -> np.ndarray:
    """idx, or an error when the scheduler offered nothing (np.resize would invent problem 0)."""
    if idx.size == 0:
        raise RuntimeError("the scheduler offered no problems: the training pool is empty")
    return idx


def rank_quotas(available: np.ndarray, total: int) -> np.ndarray:
    """Groups each rank keeps so that together they keep min(total, sum(available)), as evenly as
    their holdings allow (water-filling). available: (world,) -> (world,) ints."""
    quota = np.zeros_like(available)
    left = min(int(total), int(available.sum()))
    while left > 0:
        open_ranks = np.flatnonzero(quota < available)
        share = max(1, left // open_ranks.size)
        for r in open_ranks:
            take = min(share, int(available[r] - quota[r]), left)
            quota[r] += take
            left -= take
            if left == 0:
                break
    return quota


def refresh_estimates(batcher: RolloutBatcher, size: int, k: int, cost: RolloutBatch | None = None) -> int:
    """Re-estimate a subset of the pool with the current policy (as the profiler does): the
    scheduler's stalest problems and those nearest the band edges get k fresh samples each, and
    the outcomes update the scheduler. Returns the number of rollouts spent (count them: they are
    real sampling cost); `cost` collects this rank's generation cost (tokens, seconds). With several
    ranks every rank refreshes its share of the same subset."""
    idx = batcher.scheduler.refresh_candidates(size)
    if idx.size < batcher.world_size:  # every rank must generate (vLLM's data parallelism steps in lock-step)
        return 0
    groups = batcher._generate_groups(batcher._share(idx), RolloutBatch() if cost is None else cost, n=k)
    batcher.scheduler.update(idx, batcher._gather_outcomes(groups)[0], k)
    return int(idx.size) * k
