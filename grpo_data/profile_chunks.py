"""One chunk of a profile, sampled and summarized: the per-problem tally and row (`summarize_problem`;
the columns are `grpo_data.tables.profile_table`'s), the fixed-k or adaptive rounds of `profile_chunk`
(each round seeded by `grpo_data.generation.seeding.round_seed`), and the unit a worker takes whole:
a `ChunkJob` in, a `ChunkResult` out (`run_chunk`, on the rollout path of `make_sampler`). Nothing
here reads or writes files: where a chunk's rows go is `grpo_data.profile_parts`'s."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from grpo_data.curriculum.priors import fit_logit_offset, fit_moved_weight, offset_evidence
from grpo_data.curriculum.stats import JEFFREYS, beta_mean, credible_interval, posterior, row_priors
from grpo_data.generation import seeding
from grpo_data.generation.context import ContextPolicy
from grpo_data.generation.rollouts import RolloutSampler
from grpo_data.profile_config import ProfileConfig
from grpo_data.tables.exports import ROUND_SCHEMA
from grpo_data.tables.problems import question_text
from grpo_data.tables.profile_table import PROFILE_COLUMNS
from grpo_data.verify.rewards import Answer, correctness
from grpo_data.verify.verdict import REASONS

UNREAD_EXAMPLES = 3  # unread final sentences the format warning shows (and each problem keeps while sampling)


def summarize_problem(n_correct: int, k: int, lengths: list[int], truncated: int, reasons: dict[str, int],
                      formatted: int | None = None, max_tokens: int | None = None,
                      rounds: tuple[list[int], list[int]] | None = None) -> dict:
    """One profile row (without id) from raw counts; `formatted` None when no format was requested;
    `max_tokens` the completion budget the samples were drawn with; `rounds` (samples, successes)
    per sampling round, one round of all of them when None."""
    k_rounds, c_rounds = rounds if rounds is not None else ([k], [n_correct])
    a, b = posterior(n_correct, k, JEFFREYS)
    lo, hi = credible_interval(a, b, 0.9)
    return {
        "k": k, "n_correct": n_correct, "pass_rate": n_correct / k, "post_a": float(a), "post_b": float(b),
        "post_mean": float(beta_mean(a, b)), "ci_low": float(lo), "ci_high": float(hi),
        "mean_completion_tokens": float(np.mean(lengths)) if lengths else 0.0,
        "truncation_rate": truncated / k, **{f"n_{r}": reasons.get(r, 0) for r in REASONS},
        "n_formatted": formatted, "max_tokens": max_tokens, "k_rounds": list(k_rounds),
        "n_correct_rounds": list(c_rounds),
    }


class _Tally:
    """Running counts for one problem across sampling rounds."""

    def __init__(self) -> None:
        self.k = 0
        self.correct = 0
        self.lengths: list[int] = []
        self.truncated = 0
        self.reasons: dict[str, int] = {}
        self.formatted: int | None = None
        self.unread: list[str] = []  # a few final sentences the verifier read no answer from
        self.rounds: tuple[list[int], list[int]] = ([], [])  # samples, successes of each round that drew any

    def add(self, completions, verdicts, formatted=None) -> None:
        k0, c0 = self.k, self.correct
        if formatted is not None:
            self.formatted = (self.formatted or 0) + sum(bool(f) for f in formatted)
        for comp, v in zip(completions, verdicts, strict=True):
            self.k += 1
            # the trainer's correctness reward; an undecided verdict counts as not correct here, and
            # is reported apart in n_timeout / n_error
            self.correct += int(correctness(Answer(comp.text, v)) == 1.0)
            self.lengths.append(len(comp.token_ids))
            self.truncated += int(comp.truncated)
            self.reasons[v.reason] = self.reasons.get(v.reason, 0) + 1
            if v.reason == "no_answer" and v.detail and len(self.unread) < UNREAD_EXAMPLES:
                self.unread.append(v.detail)
        if self.k > k0:
            self.rounds[0].append(self.k - k0)
            self.rounds[1].append(self.correct - c0)


def _sample_round(sampler: RolloutSampler, prompts: list[list[int]], golds: list[str], n_each: list[int],
                  tallies: list[_Tally], seed: int | None = None, questions: list[str | None] | None = None) -> int:
    """Sample n_each[i] completions for each prompt, verify (with each problem's question when given),
    add to tallies; returns samples drawn. With `seed`, the engine is reseeded with it first."""
    if seed is not None:
        sampler.engine.reseed(seed)
    for tally, group in zip(tallies, sampler.sample(prompts, golds, n_each, questions), strict=True):
        tally.add(group.completions, group.verdicts, group.formatted)
    return int(sum(n_each))


@dataclass
class ChunkPrior:
    """A prior's view of one chunk: rate and pseudo-samples k (M,) per prompt (NaN without a value),
    the same for the history's problems, and the offset last fitted (set by `profile_chunk`)."""

    rate: np.ndarray
    k: np.ndarray
    history_rate: np.ndarray
    history_k: np.ndarray
    offset: float = 0.0
    fit: float | None = None  # fit the discount, at most this cap, to the counts so far (`fit_prior_weight`)
    weight: float | None = None  # with `fit`, the weight last fitted (set by `profile_chunk`)


def profile_chunk(sampler: RolloutSampler, prompts: list[list[int]], golds: list[str], cfg: ProfileConfig,
                  history: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
                  groups: np.ndarray | None = None, unread: list[str] | None = None,
                  prior: ChunkPrior | None = None, ids: list[str] | None = None,
                  questions: list[str | None] | None = None) -> tuple[list[dict], int]:
    """Profile rows (without ids) for one chunk of encoded prompts, and the number of samples drawn.

    Adaptive decisions use an empirical-Bayes grid prior fitted to this chunk's counts together
    with `history` (n_correct, k, group of problems profiled before), so it sharpens as the run
    goes; with `groups` (one key per prompt, e.g. its level) one prior per group. With `prior`
    (another model's pass rates and pseudo-counts for this chunk, its rates for `history`) they
    also weigh its pseudo-counts, moved by the offset fitted to all counts so far. `unread`, when
    given, collects a few distinct final sentences the verifier read no answer from (for the format
    warning; `keep_unread`). With the chunk's problem `ids` and an engine that can be reseeded, each
    round is seeded from (cfg.seed, ids, round) (`round_seed`). `questions`, the problems' texts, go
    to the verifier with their answers."""
    tallies = [_Tally() for _ in prompts]
    seeded = ids is not None and seeding.seeding_scheme(sampler.engine) == seeding.SEEDING

    def seed_of(round_no: int) -> int | None:
        return seeding.round_seed(cfg.seed, ids, round_no) if seeded else None

    if cfg.rule is None:
        samples = _sample_round(sampler, prompts, golds, [cfg.k] * len(prompts), tallies, seed_of(0), questions)
    else:
        rule = cfg.rule
        hc, hk, hg = history if history is not None else (np.zeros(0), np.zeros(0), np.zeros(0))

        def evidence(c: np.ndarray, k: np.ndarray):
            """The grid prior rows and the prior's pseudo-counts (None without one) for this chunk's
            counts `c` of `k`, with the offset refitted on everything so far."""
            all_c, all_k = np.concatenate([hc, c]), np.concatenate([hk, k])
            s = f = 0.0
            if prior is not None:  # the other model's view, moved by how far off it has been so far
                rate = np.concatenate([prior.history_rate, prior.rate])
                prior.offset = fit_logit_offset(rate, all_c, all_k)
                pk = np.concatenate([prior.history_k, prior.k])
                if prior.fit is not None:  # and counted at the weight it has earned on them, as readers refit it
                    prior.weight = fit_moved_weight(rate, pk, all_c, all_k, prior.offset, prior.fit)
                    pk = np.minimum(pk, prior.weight)
                s, f = offset_evidence(rate, pk, prior.offset)
            # one prior per group (when given), fitted on everything so far (pseudo-counts included: the
            # evidence it is a prior for); rows only for this chunk
            weights = row_priors(all_c + s, all_k + s + f,
                                 None if groups is None else np.concatenate([hg, groups]), rows=groups)
            return weights, None if prior is None else (s[hc.size:], f[hc.size:])

        first = np.full(len(prompts), rule.screen_k)
        fitted_on = 0 if prior is None else int((np.isfinite(prior.history_rate) & (hk > 0)).sum())
        if fitted_on and rule.prior_screen_k < rule.screen_k:
            # the offset fitted on the problems before this chunk (its own rows hold no samples yet); only a
            # row with a prior value can be settled by it (the pool's prior alone settles nothing here)
            none = np.zeros(len(prompts))
            has = np.isfinite(prior.rate) & (np.nan_to_num(prior.k) > 0)
            first = rule.first_round(has & ~rule.undecided(none, none, *evidence(none, none)))
        samples = _sample_round(sampler, prompts, golds, first.tolist(), tallies, seed_of(0), questions)
        round_no = 0
        while True:
            c = np.array([t.correct for t in tallies])
            k = np.array([t.k for t in tallies])
            weights, pseudo = evidence(c, k)
            more = rule.undecided(c, k, weights, pseudo)
            if not more.any():
                break
            extra = np.where(more, rule.next_k(k) - k, 0).tolist()
            round_no += 1
            samples += _sample_round(sampler, prompts, golds, extra, tallies, seed_of(round_no), questions)
    budgets = [sampler.fit(p).max_tokens for p in prompts]  # what sample() generated each one with
    rows = [summarize_problem(t.correct, t.k, t.lengths, t.truncated, t.reasons, t.formatted, b, t.rounds)
            for t, b in zip(tallies, budgets, strict=True)]
    if unread is not None:
        keep_unread(unread, (s for t in tallies for s in t.unread))
    return rows, samples


def keep_unread(unread: list[str], sentences) -> None:
    """Add distinct `sentences` to `unread` until it holds UNREAD_EXAMPLES: the format warning shows no
    more, and a run over a million problems must not hold a few sentences for every one of them."""
    for sentence in sentences:
        if len(unread) >= UNREAD_EXAMPLES:
            return
        if sentence not in unread:
            unread.append(sentence)


@dataclass
class ChunkJob:
    """One chunk's work, whatever runs it (this process or a remote worker): its position in the
    shard's plan, its problems, and what its adaptive decisions weigh (the history's counts and
    groups, the prior's view); `run_chunk` turns it into a ChunkResult."""

    position: int
    ids: list[str]
    prompts: list
    golds: list[str]
    groups: np.ndarray | None
    history: tuple[np.ndarray, np.ndarray, np.ndarray]
    prior: ChunkPrior | None = None


@dataclass
class ChunkResult:
    """A profiled chunk: its PROFILE_COLUMNS rows, the samples drawn, a few unread final sentences and
    the prior offset its last decision used (None without a prior) and the weight it fitted (None
    unless the prior fits one)."""

    position: int
    table: pl.DataFrame
    samples: int
    unread: list[str]
    offset: float | None
    weight: float | None = None


def run_chunk(sampler: RolloutSampler, job: ChunkJob, cfg: ProfileConfig) -> ChunkResult:
    """Encode, sample, judge and summarize one chunk (`profile_chunk`), its rounds seeded from
    (cfg.seed, its ids, the round): the same job gives the same result on any process that holds the
    same engine build."""
    prompts = [sampler.encode(m) for m in job.prompts]
    unread: list[str] = []
    rows, samples = profile_chunk(sampler, prompts, job.golds, cfg, job.history, job.groups, unread, job.prior,
                                  job.ids, [question_text(m) for m in job.prompts])
    table = pl.DataFrame([{"id": i, **r} for i, r in zip(job.ids, rows, strict=True)],
                         schema_overrides={"n_formatted": pl.Int64, "max_tokens": pl.Int64, **ROUND_SCHEMA})
    return ChunkResult(job.position, table.select(PROFILE_COLUMNS), samples, unread,
                       None if job.prior is None else job.prior.offset, None if job.prior is None else job.prior.weight)


def make_sampler(engine, verifier, cfg: ProfileConfig, answer_format: str | None) -> RolloutSampler:
    """The profile's rollout path on `engine`: training's rendering and tokens, the engine's context
    (when it states one) measured against max_tokens under cfg's policy."""
    # an engine that states no context (a test double) generates every prompt with max_tokens
    context = getattr(engine, "context_length", None)
    policy = ContextPolicy(context, cfg.overlong_prompts, cfg.min_clipped_tokens) if context else None
    return RolloutSampler(engine, verifier, engine.tokenizer, cfg.prompt, cfg.sampling, answer_format=answer_format,
                          context=policy)
