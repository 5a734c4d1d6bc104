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

Beside this module, which holds the plan (`ProfilePlan`: shards cut into chunks, each one's history)
and the loop (`profile_problems`): `grpo_data.profile_config` (ProfileConfig, `profile_options`),
`grpo_data.profile_chunks` (one chunk's rounds and rows, seeded by `grpo_data.generation.seeding`; `run_chunk`),
`grpo_data.profile_metadata` (weights hash, versions, `run_metadata`) and `grpo_data.profile_parts`
(the parts on disk: resume checks, left-out problems, `merge_parts`). Reading a profile back is
`grpo_data.tables.profile_table`'s (`read_profile`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import polars as pl

from grpo_data.curriculum.prior_profile import REUSE, check_other_source
from grpo_data.curriculum.priors import Prior
from grpo_data.generation.context import LEFT_OUT_SCHEMA, FitResult, measure_problems
from grpo_data.generation.prompting import detect_format
from grpo_data.generation.rollouts import RolloutSampler
from grpo_data.profile_chunks import ChunkJob, ChunkPrior, ChunkResult, keep_unread, make_sampler, run_chunk
from grpo_data.profile_config import ProfileConfig
from grpo_data.profile_parts import check_resumable, finished_parts, parts_dir, warn_format
from grpo_data.tables import io
from grpo_data.tables.problems import level_array, spread_prompts

logger = logging.getLogger(__name__)


def shard_slice(problems: pl.DataFrame, shard: tuple[int, int]) -> pl.DataFrame:
    """The i-th of n deterministic slices: every n-th problem of the id-sorted table."""
    i, n = shard
    if not (n >= 1 and 0 <= i < n):
        raise ValueError(f"shard must be i/n with 0 <= i < n, got {i}/{n}")
    return problems.sort("id").gather_every(n, offset=i)


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


def prior_group_keys(problems: pl.DataFrame, cfg: ProfileConfig) -> dict[str, float] | None:
    """id -> level (NaN where missing) for per-level adaptive priors, or None (one pool prior)."""
    levels = level_array(problems) if cfg.rule is not None and cfg.prior_groups != "none" else None
    if levels is None:
        return None
    return dict(zip(problems["id"].to_list(), np.nan_to_num(levels, nan=-1.0).tolist(), strict=True))


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
        # the cap of a fitted weight (the prior's pseudo k is read at it), None when the weight is fixed
        self.prior_fit = prior.weight if prior is not None and prior.fit_weight else None
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
            view = ChunkPrior(rate, pk, hr, hpk, fit=self.prior_fit)
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
        # the prior offset (and fitted weight) of the latest chunk in plan order, its position
        self.offset, self.weight, self.latest = 0.0, None, -1
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
            self.latest, self.offset, self.weight = result.position, result.offset, result.weight
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
                **({"prior_offset": self.offset} if plan.prior_of else {}),
                **({"prior_weight_fitted": self.weight} if plan.prior_fit is not None and self.weight is not None
                   else {}), **extra}


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
