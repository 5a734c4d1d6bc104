"""The GRPO training loop: scheduled rollouts from a colocated engine, DeepSpeed updates, weight sync,
metrics, held-out evaluation, checkpoints and exact resume of the learner and scheduler.

    run_dir = train(load_config("pipelines/arith_demo.yaml"))

Run folder (`run.out`):
    resolved_config.yaml     the config after defaults and overrides
    metrics.jsonl            one JSON object per step (and per evaluation, "kind": "eval")
    draws.jsonl              per step, every group a training round generated (refresh samples are
                             not): problem id, the scheduler's predicted pass rate (asked before the
                             outcome), right answers, size, round, mixed
    tb/                      the same metrics for tensorboard
    checkpoints/step-NNNNNN/ hf/ (save_pretrained export), ds/ (DeepSpeed state), scheduler/,
                             state.json (step, counters), rng.npz (python/numpy/torch RNG states),
                             trained.npz (groups trained per problem)
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import random
import shutil
import time
from collections import Counter
from pathlib import Path

import numpy as np
import polars as pl
import torch

from grpo_data.curriculum.stats import majority_correct
from grpo_data.generation.prompting import PromptConfig, detect_format
from grpo_data.generation.rollouts import RolloutSampler
from grpo_data.tables import io
from grpo_data.tables.problems import level_array, question_text, spread_prompts
from grpo_data.verify.rewards import build_reward
from grpo_train.config import TrainConfig, schedule_steps
from grpo_train.config_io import dump_config
from grpo_train.diagnostics import Health, heldout_regression
from grpo_train.groups import Overlong, RolloutBatch, draws_record
from grpo_train.metrics import (
    MetricsLog,
    budget_spent,
    checkpoints_to_prune,
    coverage,
    eval_due,
    eval_summary,
    latest_checkpoint,
    read_metrics,
    refresh_triggered,
    step_trace,
)
from grpo_train.prompt_fit import fit_run_data, rollout_context
from grpo_train.rollout import RolloutBatcher, refresh_estimates
from grpo_train.scheduler_start import build_scheduler, check_start

logger = logging.getLogger(__name__)


def evaluate(sampler: RolloutSampler, heldout: pl.DataFrame, k: int, rank: int = 0, world: int = 1,
             all_gather=None) -> dict:
    """Held-out accuracy at the sampling temperature from k samples per problem, through the same
    render -> ids -> generate -> verify path as training and profiling: mean@k (`heldout_accuracy`,
    the mean over samples: pass@1), with its standard error over problems, overall and by level;
    pass@j for j = 1, 2, 4, ... up to k (unbiased estimator); maj@k (majority vote over the answers
    the verifier extracted). With several ranks each evaluates every world-th problem and the
    results are gathered."""
    return eval_summary(heldout, *eval_counts(sampler, heldout, k, rank, world, all_gather), k)


def eval_counts(sampler: RolloutSampler, heldout: pl.DataFrame, k: int, rank: int = 0, world: int = 1,
                all_gather=None) -> tuple[np.ndarray, np.ndarray]:
    """Per problem of `heldout`: correct answers of k, and whether the majority answer is right
    (every rank gets all of them)."""
    mine = np.arange(heldout.height)[rank::world]
    messages, answers = heldout["prompt"].to_list(), heldout["answer"].to_list()
    groups = sampler.sample([sampler.encode(messages[i]) for i in mine], [answers[i] for i in mine], k,
                            [question_text(messages[i]) for i in mine])
    local = [(int(g.correct.sum()), majority_correct([v.answer for v in g.verdicts], [v.correct for v in g.verdicts]))
             for g in groups]
    n_correct, majority = np.zeros(heldout.height, dtype=np.int64), np.zeros(heldout.height)
    parts = all_gather((mine.tolist(), local)) if world > 1 else [(mine.tolist(), local)]
    for idx, vals in parts:
        for i, (c, m) in zip(idx, vals, strict=True):
            n_correct[i], majority[i] = c, m
    return n_correct, majority


def check_inputs(cfg: TrainConfig) -> None:
    """Every path the run reads exists, and `data.prior` (or `data.prior_profile`) can be read, before any
    engine starts: one line naming the path (or the column) and the command that makes it."""
    from grpo_data.generation.engines import check_model_path

    check_model_path(cfg.model)
    for key, path, make in (("data.train", cfg.data.train, "grpo load / grpo world (or grpo pipeline)"),
                            ("data.heldout", cfg.data.heldout, "grpo load / grpo world (or grpo pipeline)"),
                            ("data.profile", cfg.data.profile, "grpo profile (or grpo pipeline)"),
                            ("data.prior_profile", cfg.data.prior_profile, "grpo profile of another checkpoint or model")):
        if path and not Path(path).exists():
            raise FileNotFoundError(f"{key} {path} does not exist: write it with {make}, or set {key}=PATH")
    if cfg.data.prior or cfg.data.prior_profile or cfg.data.profile:  # a bad prior or profile stops the run here
        check_start(pl.read_parquet(cfg.data.train), cfg)


def _rng_state() -> dict[str, np.ndarray]:
    """torch and python RNG states as arrays (the scheduler saves its own numpy generator)."""
    return {"torch": torch.get_rng_state().numpy(), "python": np.array(random.getstate()[1], dtype=np.int64)}


def _set_rng_state(z) -> None:
    torch.set_rng_state(torch.from_numpy(z["torch"].copy()))
    random.setstate((3, tuple(int(x) for x in z["python"]), None))


class Trainer:
    def __init__(self, cfg: TrainConfig, resume: bool = False) -> None:
        self.cfg = cfg
        self.run_dir = Path(cfg.run.out)
        torch.set_num_threads(cfg.run.threads)
        random.seed(cfg.run.seed)
        torch.manual_seed(cfg.run.seed)
        check_inputs(cfg)
        self.problems = pl.read_parquet(cfg.data.train)
        self.heldout = pl.read_parquet(cfg.data.heldout) if cfg.data.heldout else None
        if cfg.run.eval_limit and self.heldout is not None:
            self.heldout = self.heldout.sort("id").head(cfg.run.eval_limit)

        from grpo_train.learner import DeepSpeedLearner

        ro = cfg.rollout
        self.learner = DeepSpeedLearner(cfg.model, cfg.optim, cfg.deepspeed, cfg.algo, cfg.run.seed, cfg.trust_remote_code,
                                        temperature=ro.temperature, max_tokens=ro.max_tokens,
                                        total_steps=schedule_steps(cfg, int(os.environ.get("WORLD_SIZE", "1"))))
        self.rank, self.world = self.learner.rank, self.learner.world_size
        self.is_main = self.rank == 0
        # problems whose prompt cannot fit the engine's context leave both tables before the scheduler is built
        fit = fit_run_data(self.problems, self.heldout, self.learner.tokenizer,
                           PromptConfig(system_prompt=ro.system_prompt, instruction_suffix=ro.instruction_suffix),
                           ro.max_tokens, rollout_context(cfg.model, ro, cfg.trust_remote_code),
                           self.run_dir if self.is_main else None)
        self.problems, self.heldout, self.context, self.heldout_left_out = (fit.problems, fit.heldout, fit.policy,
                                                                            fit.heldout_left_out)
        if self.heldout is not None and self.heldout.height < self.world:
            raise ValueError(f"data.heldout has {self.heldout.height} problems for {self.world} ranks: every rank "
                             "needs at least one (vLLM's data parallelism generates in lock-step)")
        if ro.top_p < 1:
            logger.warning("rollout.top_p=%s: vLLM samples from the top-p truncated distribution, the learner's "
                           "log-probs are of the full softmax(logits / T); logprob_diff_rollout and tis_cap "
                           "compare the two", ro.top_p)
        if self.is_main:
            self.run_dir.mkdir(parents=True, exist_ok=True)
            io.write_text(self.run_dir / "resolved_config.yaml", dump_config(cfg))
        sc = cfg.scheduler
        self.scheduler = build_scheduler(self.problems, cfg, self.run_dir if self.is_main else None)
        self.levels = level_array(self.problems)
        self.times_trained = np.zeros(self.problems.height, dtype=np.int64)  # groups trained per problem
        self.step = 0
        self.totals = {"rollouts_generated": 0, "informative_rollouts": 0, "groups_generated": 0, "tokens_generated": 0,
                       "refresh_rollouts": 0, "screen_rollouts": 0}
        self._resumed_g_schedule = None  # a checkpoint's G schedule state, applied once the batcher exists
        ckpt = latest_checkpoint(self.run_dir) if resume else None
        if resume and ckpt is None:
            logger.warning("--resume: no checkpoint under %s, starting fresh", self.run_dir)
        if ckpt is not None:
            self._load_checkpoint(ckpt)
        self.metrics = MetricsLog(self.run_dir, self.is_main)
        if ckpt is not None:
            self.metrics.truncate_after(self.step)
        elif self.is_main:  # a fresh run: nothing of an earlier run in this folder may pass for this one's
            self.metrics.path.unlink(missing_ok=True)
            self.metrics.draws_path.unlink(missing_ok=True)
            shutil.rmtree(self.run_dir / "evals", ignore_errors=True)
        self.health = Health(cfg.diagnostics, history=[r for r in read_metrics(self.run_dir) if r["kind"] == "train"]
                             if ckpt is not None else None)

        from grpo_data.generation.engines import check_engine_context, make_engine
        from grpo_data.verify.pool import VerifierPool

        # each rank (and each resume point) seeds its own engine differently but deterministically
        self.engine = make_engine(ro.engine, cfg.model, seed=cfg.run.seed + 1000 * self.rank + self.step,
                                  settings=ro.vllm, trust_remote_code=cfg.trust_remote_code)
        check_engine_context(self.engine, self.context.context)
        if ckpt is not None:
            self.engine.load_weights(self.learner.named_weights())
        self.verifier = VerifierPool(workers=max(1, cfg.run.threads // self.world))
        sampling = ro.sampling(logprobs=True)
        prompt_cfg = PromptConfig(system_prompt=ro.system_prompt, instruction_suffix=ro.instruction_suffix)
        tok = self.learner.tokenizer
        fmt = detect_format(prompt_cfg, spread_prompts(self.problems["prompt"]))
        self.sampler = RolloutSampler(self.engine, self.verifier, tok, prompt_cfg, sampling, answer_format=fmt,
                                      context=self.context)
        self.eval_sampler = RolloutSampler(self.engine, self.verifier, tok, prompt_cfg,
                                           dataclasses.replace(sampling, logprobs=False), context=self.context)
        self.batcher = RolloutBatcher(
            self.sampler, self.scheduler, self.problems["prompt"].to_list(), self.problems["answer"].to_list(),
            ro.group_size, ro.batch_groups, ro.max_rounds, ro.dynamic_resampling,
            Overlong(ro.overlong, ro.max_tokens, ro.overlong_buffer, ro.overlong_penalty), ro.oversample,
            self.rank, self.world, all_gather=self._all_gather if self.world > 1 else None,
            reward=build_reward(cfg.reward.terms), sizing=ro.group_sizing(), band=(sc.lo, sc.hi), levels=self.levels)
        # the variance-driven G schedule keeps batch_groups x G answers per step as G moves
        self.g_schedule = ro.variance_schedule() if ro.g_schedule == "variance" else None
        self.step_answers = ro.batch_groups * ro.group_size
        if self.g_schedule is not None and self._resumed_g_schedule:
            self.g_schedule.load_state_dict(self._resumed_g_schedule)
            self._set_group_size(self.g_schedule.g)

    @property
    def problem_ids(self) -> list[str]:
        """The pool's ids by row, as the scheduler indexes them (the trace names problems by id)."""
        if getattr(self, "_ids", None) is None or len(self._ids) != self.problems.height:
            self._ids = [str(i) for i in self.problems["id"].to_list()]
        return self._ids

    # ------------------------------------------------------------ distributed helpers
    def _all_gather(self, obj):
        return self.learner.all_gather(obj)

    # ------------------------------------------------------------ one step
    def train_step(self) -> dict:
        t0 = time.monotonic()
        batch = self.batcher.next_batch()
        self.engine.sleep()  # GPU sleep mode: the KV cache is released while DeepSpeed trains
        info = self.learner.update(batch.groups)
        t_sync = time.monotonic()
        self.engine.load_weights(self.learner.named_weights())  # wakes the engine first
        sync_s = time.monotonic() - t_sync
        self.scheduler.tick()
        self.step += 1
        lens = [len(c.token_ids) for g in batch.groups for c in g.completions]
        kept_rewards = [r for g in batch.groups for r in g.rewards if np.isfinite(r)]
        unscored = sum(int((~np.isfinite(g.rewards)).sum()) for g in batch.groups)

        counts = {"generated_rollouts": batch.generated_rollouts, "informative_groups": batch.informative_groups,
                  "generated_groups": batch.generated_groups, "n_correct": batch.n_correct,
                  "truncated": batch.truncated, "formatted": batch.formatted, "kept_reward_sum": float(sum(kept_rewards)),
                  "kept_sequences": len(kept_rewards), "kept_len_sum": sum(lens), "kept_lens": len(lens), "gen_tokens": batch.gen_tokens,
                  "unscored": unscored, "distinct_wrong_sum": batch.distinct_wrong_sum,
                  "distinct_wrong_groups": batch.distinct_wrong_groups,
                  "informative_rollouts": batch.informative_rollouts, "group_var_sum": batch.group_var_sum,
                  "baseline_var_sum": batch.baseline_var_sum, "groups_all_right": batch.groups_all_right,
                  "groups_all_wrong": batch.groups_all_wrong, "groups_in_band": batch.groups_in_band,
                  "screen_rollouts": batch.screen_rollouts, "predicted_correct": batch.predicted_correct,
                  "predicted_rollouts": batch.predicted_rollouts,
                  **{f"groups_level_{lv}": c for lv, c in sorted(batch.level_groups.items())},
                  **{f"groups_size_{n}": c for n, c in sorted(Counter(batch.group_sizes).items())}}
        len_max = max(lens) if lens else 0
        if self.world > 1:  # all ranks' rollouts, so every rank logs and budgets the same totals
            parts = self._all_gather((counts, len_max))
            counts = {k: sum(part[0].get(k, 0) for part in parts) for k in {k for part in parts for k in part[0]}}
            len_max = max(part[1] for part in parts)
        refresh_rollouts = refresh_tokens = 0
        sc = self.cfg.scheduler
        # decided from gathered counts, so every rank makes the same decision
        drifted = refresh_triggered(sc.refresh_trigger, sc.refresh_drift, counts, (sc.lo + sc.hi) / 2)
        if sc.refresh_every and hasattr(self.scheduler, "refresh_candidates") and (
                self.step % sc.refresh_every == 0 or drifted):
            spend = RolloutBatch()
            refresh_rollouts = refresh_estimates(self.batcher, sc.refresh_size, sc.refresh_k, cost=spend)
            refresh_tokens = sum(self._all_gather(spend.gen_tokens)) if self.world > 1 else spend.gen_tokens
        self.totals["rollouts_generated"] += refresh_rollouts  # refresh samples are real sampling cost
        # every generated token is charged: training rounds (screens and dropped groups included) and refresh
        self.totals["tokens_generated"] = self.totals.get("tokens_generated", 0) + counts["gen_tokens"] + refresh_tokens
        self.totals["refresh_rollouts"] = self.totals.get("refresh_rollouts", 0) + refresh_rollouts
        self.totals["screen_rollouts"] = self.totals.get("screen_rollouts", 0) + counts["screen_rollouts"]
        informative_rollouts = counts["informative_rollouts"]  # groups may differ in size
        self.totals["rollouts_generated"] += counts["generated_rollouts"]
        self.totals["informative_rollouts"] += informative_rollouts
        self.totals["groups_generated"] += counts["generated_groups"]
        trained = np.array([g.problem for g in batch.groups], dtype=np.int64)
        if self.world > 1:
            trained = np.concatenate(self._all_gather(trained))
        np.add.at(self.times_trained, trained, 1)
        draws = batch.draws
        if self.world > 1:  # every rank's groups, rank by rank
            draws = [d for part in self._all_gather(draws) for d in part]
        self.metrics.write_draws(self.step, draws_record(draws, self.problem_ids))
        sched = self.scheduler.stats()
        kept = max(1, counts["kept_sequences"])
        record = {
            "kind": "train", "step": self.step,
            "reward_mean": counts["kept_reward_sum"] / kept if counts["kept_sequences"] else 0.0,
            "batch_pass_rate": counts["n_correct"] / max(1, counts["generated_rollouts"]),
            "predicted_pass_rate": (counts["predicted_correct"] / counts["predicted_rollouts"]
                                    if counts["predicted_rollouts"] else float("nan")),
            "zero_variance_fraction": 1 - counts["informative_groups"] / max(1, counts["generated_groups"]),
            "informative_rollout_ratio_step": informative_rollouts / max(1, counts["generated_rollouts"]),
            "informative_rollout_ratio": self.totals["informative_rollouts"] / max(1, self.totals["rollouts_generated"]),
            "rollouts_generated": self.totals["rollouts_generated"],
            "truncated_fraction": counts["truncated"] / max(1, counts["generated_rollouts"]),
            "format_rate": (counts["formatted"] / max(1, counts["generated_rollouts"])
                            if self.batcher.sampler.answer_format else None),
            "groups_trained": len(trained), "rounds": batch.rounds, "underfilled": batch.underfilled,
            "group_size": self.batcher.group_size,
            "samples_per_problem": counts["generated_rollouts"] / max(1, counts["generated_groups"]),
            "group_reward_var": counts["group_var_sum"] / max(1, counts["generated_groups"]),
            "baseline_variance": counts["baseline_var_sum"] / max(1, counts["generated_groups"]),
            **{k: v for k, v in counts.items() if k.startswith("groups_size_")},
            "gen_tokens_per_s": counts["gen_tokens"] / max(batch.gen_seconds, 1e-9),
            "completion_len_mean": counts["kept_len_sum"] / max(1, counts["kept_lens"]),
            "completion_len_max": int(len_max),
            "unscored_answers": counts["unscored"],
            "distinct_wrong_ratio": (counts["distinct_wrong_sum"] / counts["distinct_wrong_groups"]
                                     if counts["distinct_wrong_groups"] else float("nan")),
            "weight_sync_s": sync_s, "refresh_rollouts": refresh_rollouts, "step_seconds": time.monotonic() - t0,
            **step_trace(counts, self.levels is not None),
            "gen_tokens_step": counts["gen_tokens"], "refresh_tokens": refresh_tokens,
            "tokens_generated": self.totals["tokens_generated"],
            "refresh_rollouts_total": self.totals["refresh_rollouts"], "screen_rollouts_total": self.totals["screen_rollouts"],
            "verify_seconds": batch.verify_seconds,
            "band_occupancy": sched.get("band_occupancy", float("nan")),
            **{k: v for k, v in sched.items() if k in ("band_lo", "band_hi")},
            # the scheduler's own state (dry fills, pool sizes, skips, exploration): what each sampler did
            **{f"sched_{k}": float(v) for k, v in sched.items()
               if k not in ("band_lo", "band_hi", "band_occupancy") and isinstance(v, (int, float, np.integer, np.floating))},
            **coverage(self.times_trained, trained, self.levels),
            **info,
        }
        if self.g_schedule is not None:  # decided from gathered counts: every rank moves G together
            self._set_group_size(self.g_schedule.observe(record["group_reward_var"]))
        return record

    def _set_group_size(self, g: int) -> None:
        self.batcher.group_size, self.batcher.batch_groups = g, max(1, self.step_answers // g)

    def run(self) -> Path:
        from tqdm import tqdm

        cfg = self.cfg.run
        evaluating = self.heldout is not None and bool(cfg.eval_every or cfg.eval_every_rollouts or cfg.eval_every_tokens)
        if self.step == 0 and evaluating and cfg.eval_first:
            self._evaluate(cfg.eval_k_ends or cfg.eval_k)
        # on resume, whether the checkpoint's step was evaluated is in the (truncated) log; every rank
        # reads it (the run folder is shared, as for checkpoints), so all of them agree to evaluate
        evals_done = {r["step"] for r in read_metrics(self.run_dir) if r["kind"] == "eval"}
        evaluated_at = self.step if (self.step == 0 or self.step in evals_done) else -1
        end_k = cfg.eval_k_ends or cfg.eval_k
        # the k of the evaluations already at this step: the last one is at end_k once, never twice
        ks_here = {r.get("eval_k") for r in read_metrics(self.run_dir) if r["kind"] == "eval" and r["step"] == self.step}

        def end_due() -> bool:
            return evaluating and (evaluated_at != self.step or end_k not in ks_here)
        bar = tqdm(total=cfg.steps, initial=self.step, desc="grpo train", disable=not (cfg.progress and self.is_main))
        while self.step < cfg.steps:
            spent = budget_spent(cfg, self.totals)
            if spent:
                logger.info("%s reached at step %d", spent, self.step)
                if end_due():
                    self._evaluate(end_k)
                if cfg.save_every:
                    self.save_checkpoint()
                break
            before = self.totals["rollouts_generated"]
            tokens_before = cfg.charged_tokens + self.totals.get("tokens_generated", 0)
            record = self.train_step()
            for w in self.health.observe(record):
                record.setdefault("warnings", []).append({"name": w.name, "message": w.message})
                if self.is_main:
                    logger.warning("step %d: %s", w.step, w.message)
            self.metrics.write(record)
            bar.update(1)
            bar.set_postfix(reward=f"{record['reward_mean']:.2f}", pass_rate=f"{record['batch_pass_rate']:.2f}",
                            inf=f"{record['informative_rollout_ratio']:.2f}")
            if evaluating and eval_due(self.step, before, self.totals["rollouts_generated"], cfg.eval_every,
                                       cfg.eval_every_rollouts,
                                       (tokens_before, cfg.charged_tokens + self.totals.get("tokens_generated", 0)),
                                       cfg.eval_every_tokens):
                ks_here = {self._evaluate()["eval_k"]}
                evaluated_at = self.step
            if cfg.save_every and (self.step % cfg.save_every == 0 or self.step == cfg.steps):
                self.save_checkpoint()
        else:  # all steps done: the run's last evaluation is at its end
            if end_due():
                self._evaluate(end_k)
        bar.close()
        return self.run_dir

    def _check_ranks_agree(self) -> bool:
        """Every rank must hold the same scheduler state (same seed, same gathered outcomes) and the
        same weights (DeepSpeed's reduced gradients); raises naming the step where they diverged."""
        if self.world == 1:
            return True
        import hashlib
        import tempfile

        digest = hashlib.sha256()
        with tempfile.TemporaryDirectory() as tmp:
            self.scheduler.save(tmp)
            digest.update((Path(tmp) / "scheduler.npz").read_bytes())
        for name, tensor in self.learner.named_weights():
            digest.update(name.encode())
            digest.update(tensor.float().numpy().tobytes())
        digests = self._all_gather(digest.hexdigest())
        if len(set(digests)) != 1:
            raise RuntimeError(f"scheduler state or weights diverged across ranks at step {self.step}: {digests}")
        return True

    def _evaluate(self, k: int | None = None) -> dict:
        agree = self._check_ranks_agree()
        t0 = time.monotonic()
        k = k or self.cfg.run.eval_k
        n_correct, majority = eval_counts(self.eval_sampler, self.heldout, k, self.rank, self.world, self._all_gather)
        out = eval_summary(self.heldout, n_correct, majority, k)
        if self.is_main:  # per problem, for frontier and per-problem analyses (bench/e2e_bench.py)
            self._check_regression(out, n_correct / k)
            table = self.heldout.select("id", *(["level"] if "level" in self.heldout.columns else []))
            io.write_parquet(self.run_dir / "evals" / f"step-{self.step:06d}.parquet",
                             table.with_columns(pl.Series("n_correct", n_correct), pl.lit(k).alias("k")))
        out["heldout_left_out"] = self.heldout_left_out  # not in heldout_problems, the accuracy's denominator
        out.update({"kind": "eval", "step": self.step, "rollouts_generated": self.totals["rollouts_generated"],
                    "tokens_generated": self.totals.get("tokens_generated", 0),
                    "eval_seconds": time.monotonic() - t0, "ranks": self.world, "ranks_agree": agree})
        self.metrics.write(out)
        logger.info("step %d: held-out accuracy %.3f", self.step, out["heldout_accuracy"])
        return out

    def _check_regression(self, record: dict, correct: np.ndarray) -> None:
        """Against the starting policy's evaluation of the same problems (evals/step-000000.parquet;
        a run that did not evaluate its start has nothing to compare with): `diag_heldout_regression`
        on the record, and a warning while it holds."""
        if not self.cfg.diagnostics.enabled or self.step == 0:
            return
        start = self.run_dir / "evals" / "step-000000.parquet"
        first = pl.read_parquet(start) if start.exists() else None
        if first is None or first["id"].to_list() != self.heldout["id"].to_list():
            if not getattr(self, "_regression_skip_noted", False):
                logger.info("held-out regression check off: %s", "no evaluation of the starting policy (run.eval_first)"
                            if first is None else f"{start} holds other problems than data.heldout")
                self._regression_skip_noted = True
            return
        levels = self.heldout["level"].to_numpy() if "level" in self.heldout.columns else None
        message = heldout_regression((first["n_correct"] / first["k"]).to_numpy(), correct, self.cfg.diagnostics,
                                     levels)
        record["diag_heldout_regression"] = float(message is not None)
        if message:
            record.setdefault("warnings", []).append({"name": "heldout_regression", "message": message})
            logger.warning("step %d: %s", self.step, message)

    # ------------------------------------------------------------ checkpoints
    def save_checkpoint(self) -> Path:
        ckpts = self.run_dir / "checkpoints"
        final = ckpts / f"step-{self.step:06d}"
        tmp = ckpts / f".tmp-step-{self.step:06d}"
        if self.is_main and tmp.exists():
            shutil.rmtree(tmp)
        self._barrier()
        self.learner.save_hf(tmp / "hf")
        self.learner.save_state(tmp / "ds", tag="state")
        if self.is_main:
            self.scheduler.save(tmp / "scheduler")
            np.savez(tmp / "rng.npz", **_rng_state())
            np.savez(tmp / "trained.npz", times_trained=self.times_trained)
            io.write_json(tmp / "state.json", {"step": self.step, "totals": self.totals,
                                               "g_schedule": self.g_schedule.state_dict() if self.g_schedule else None})
            if final.exists():
                shutil.rmtree(final)
            tmp.rename(final)
            for old in checkpoints_to_prune(list(ckpts.glob("step-*")), self.cfg.run.keep_last):
                shutil.rmtree(old)
        self._barrier()
        return final

    def _load_checkpoint(self, ckpt: Path) -> None:
        state = json.loads((ckpt / "state.json").read_text())
        self.learner.load_state(ckpt / "ds", tag="state")
        self.scheduler.load(ckpt / "scheduler")
        with np.load(ckpt / "rng.npz", allow_pickle=False) as z:
            _set_rng_state(z)
        if (ckpt / "trained.npz").exists():  # checkpoints written before this file existed lack it
            with np.load(ckpt / "trained.npz", allow_pickle=False) as z:
                self.times_trained = z["times_trained"].copy()
        self.step = state["step"]
        self.totals = state["totals"]
        self._resumed_g_schedule = state.get("g_schedule")
        logger.info("resumed from %s at step %d", ckpt, self.step)

    def _barrier(self) -> None:
        if self.world > 1:
            torch.distributed.barrier()

    def close(self) -> None:
        self.verifier.close()
        self.engine.close()


def train(cfg: TrainConfig, resume: bool = False) -> Path:
    trainer = Trainer(cfg, resume=resume)
    try:
        return trainer.run()
    finally:
        trainer.close()
