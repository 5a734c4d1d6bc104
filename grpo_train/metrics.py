"""A run's records without the engines: the metrics log and its reader, the evaluation summaries
(mean@k, pass@j, maj@k, the paired gain), coverage and the per-step trace, and the checkpoint folders.
Imports no torch (the tensorboard writer loads it only when a rank writes), so the run report, the
plots and the benchmarks read a run without loading the learner."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import polars as pl

from grpo_data.curriculum.stats import paired_mean_se, pass_at_k
from grpo_data.tables import io

logger = logging.getLogger(__name__)


class MetricsLog:
    """metrics.jsonl + tensorboard, and draws.jsonl (per step, every group the training rounds generated:
    its problem, the scheduler's prediction, its outcome; a refresh's samples are counted in the step's
    refresh_rollouts, not drawn there), written by rank 0 only."""

    def __init__(self, folder: Path, enabled: bool) -> None:
        self.enabled = enabled
        self.path = folder / "metrics.jsonl"
        self.draws_path = folder / "draws.jsonl"
        self.tb = None
        if enabled:
            from torch.utils.tensorboard import SummaryWriter

            self.tb = SummaryWriter(str(folder / "tb"))

    def write(self, record: dict) -> None:
        if not self.enabled:
            return
        with open(self.path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(record) + "\n")
        prefix = "eval/" if record.get("kind") == "eval" else "train/"
        for k, v in record.items():
            if isinstance(v, (int, float)) and not isinstance(v, bool) and k != "step":
                self.tb.add_scalar(prefix + k, v, record["step"])
        self.tb.flush()

    def write_draws(self, step: int, draws: dict[str, list]) -> None:
        """One line for the step: `draws` holds parallel lists (`groups.draws_record`)."""
        if self.enabled:
            with open(self.draws_path, "a", encoding="utf-8") as fh:
                fh.write(json.dumps({"step": step, **draws}) + "\n")

    def truncate_after(self, step: int) -> None:
        """On resume: drop records (and per-problem evaluations) of steps after the checkpoint, so
        the log has no duplicates."""
        if not self.enabled:
            return
        for stale in (self.path.parent / "evals").glob("step-*.parquet"):  # evaluations after the resume point
            if int(stale.stem.removeprefix("step-")) > step:
                stale.unlink()
        if self.draws_path.exists():  # streamed: a long run's draws need not fit in memory as objects
            io.keep_lines(self.draws_path, lambda line: _step_of(line) <= step)
        if not self.path.exists():
            return
        keep = [r for r in read_metrics(self.path.parent) if r["step"] <= step]
        io.write_text(self.path, "".join(json.dumps(r) + "\n" for r in keep))


def crossed(before: int, after: int, every: int) -> bool:
    """Whether going from `before` to `after` crossed a multiple of `every` (0: never)."""
    return bool(every) and after // every > before // every


def eval_due(step: int, rollouts_before: int, rollouts_after: int, every_steps: int, every_rollouts: int,
             tokens: tuple[int, int] = (0, 0), every_tokens: int = 0) -> bool:
    """Whether the step just done (`step`, which took the rollouts count from before to after, and
    the generated tokens from tokens[0] to tokens[1]) ends with an evaluation: every `every_steps`
    steps, or when a multiple of `every_rollouts` or of `every_tokens` was crossed (0 turns each off)."""
    by_steps = bool(every_steps) and step % every_steps == 0
    return by_steps or crossed(rollouts_before, rollouts_after, every_rollouts) or crossed(*tokens, every_tokens)


def budget_spent(run, totals: dict) -> str | None:
    """Which budget of the `run` settings the totals have reached (rollouts, or charged tokens:
    charged_tokens + tokens generated), as a log line; None while neither is."""
    if run.max_rollouts and totals.get("rollouts_generated", 0) >= run.max_rollouts:
        return f"rollout budget {run.max_rollouts}"
    if run.token_budget and run.charged_tokens + totals.get("tokens_generated", 0) >= run.token_budget:
        return f"token budget {run.token_budget} ({run.charged_tokens} charged before the run)"
    return None


def run_complete(ckpt: Path | None, run) -> bool:
    """Whether the checkpoint `ckpt` ends a run with these `run` settings: all its steps done, or
    its rollout or token budget spent (`budget_spent`)."""
    if ckpt is None:
        return False
    state = json.loads((ckpt / "state.json").read_text())
    return state["step"] >= run.steps or budget_spent(run, state.get("totals", {})) is not None


def read_metrics(run_dir: str | Path) -> list[dict]:
    """The records of a run's metrics.jsonl (none when it does not exist yet). A last line cut off
    by a crash mid-write is dropped with a warning; a bad line anywhere else is an error."""
    return read_jsonl(Path(run_dir) / "metrics.jsonl")


def _step_of(line: str) -> int:
    """The step of one draws.jsonl line, read from its head (`{"step": N, ...`) without parsing the
    rest; a line cut off by a crash counts as past every checkpoint."""
    head = line[:40]
    try:
        return int(head.split('"step":', 1)[1].split(",", 1)[0])
    except (IndexError, ValueError):
        return 2**62


def read_draws(run_dir: str | Path) -> list[dict]:
    """A run's draws.jsonl: per step, every group its training rounds generated (refresh samples are
    not drawn: they are counted in refresh_rollouts): its problem id, the scheduler's predicted
    pass rate for it (asked before its outcome; None for a scheduler that estimates none), its right
    answers, its size, the round it was drawn in and whether it was mixed (informative; a mixed group
    can still be left out of the batch when the step's quota is full)."""
    return read_jsonl(Path(run_dir) / "draws.jsonl")


def read_jsonl(path: Path) -> list[dict]:
    """One JSON object per line, as `read_metrics` reads them."""
    lines = [line for line in path.read_text().splitlines() if line] if path.exists() else []
    out = []
    for i, line in enumerate(lines):
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError as exc:
            if i < len(lines) - 1:
                raise ValueError(f"{path}: line {i + 1} is not JSON ({exc}); the file is damaged") from exc
            logger.warning("%s: dropping a cut-off last line (a crash while writing it)", path)
    return out


def eval_summary(heldout: pl.DataFrame, n_correct: np.ndarray, majority: np.ndarray, k: int) -> dict:
    """The evaluation metrics (see `evaluate`) from per-problem counts."""
    correct = n_correct / k
    out = {"heldout_accuracy": float(correct.mean()),
           "heldout_accuracy_se": float(correct.std(ddof=1) / np.sqrt(correct.size)) if correct.size > 1 else 0.0,
           "heldout_problems": heldout.height, "eval_k": k, f"heldout_maj_at_{k}": float(majority.mean())}
    for j in sorted({2 ** e for e in range(int(np.log2(k)) + 1)} | {k}):
        out[f"heldout_pass_at_{j}"] = float(np.mean([pass_at_k(k, int(c), j) for c in n_correct]))
    if "level" in heldout.columns and heldout["level"].null_count() < heldout.height:
        for level, acc in (pl.DataFrame({"level": heldout["level"], "acc": correct})
                           .group_by("level").agg(pl.col("acc").mean()).sort("level").iter_rows()):
            out[f"heldout_accuracy_level_{level}"] = float(acc)
    return out


def paired_gain(first: pl.DataFrame, last: pl.DataFrame) -> dict:
    """Last minus first evaluation of the same problems (tables of id, n_correct, k: a run's
    evals/step-*.parquet), paired per problem: the mean of the per-problem accuracy differences and
    its SE (sd / sqrt(problems)). The problems' own difficulty cancels, so the SE is what sampling
    leaves, far below the unpaired SE of either accuracy; the k of both is reported."""
    both = first.join(last, on="id", how="inner", suffix="_last")
    if both.height != first.height or both.height != last.height:
        raise ValueError(f"paired gain over different problems: {first.height} and {last.height} problems, "
                         f"{both.height} in both")
    d = (both["n_correct_last"] / both["k_last"] - both["n_correct"] / both["k"]).to_numpy()
    mean, se = paired_mean_se(d)
    return {"mean": mean, "se": se, "problems": int(d.size), "k_first": int(first["k"].max()),
            "k_last": int(last["k"].max())}


def coverage(times_trained: np.ndarray, trained: np.ndarray, levels: np.ndarray | None) -> dict:
    """What the step trained on: distinct problems trained so far (and their share of the pool),
    the mean times each was trained, and this step's groups per level (when the data has levels)."""
    seen = times_trained > 0
    out = {"distinct_problems_trained": int(seen.sum()), "pool_coverage": float(seen.mean()),
           "times_trained_mean": float(times_trained[seen].mean()) if seen.any() else 0.0}
    if levels is not None and trained.size:
        lv = levels[trained]
        out["trained_level_mean"] = float(np.nanmean(lv)) if np.isfinite(lv).any() else float("nan")
        values, counts = np.unique(lv[np.isfinite(lv)].astype(np.int64), return_counts=True)
        out.update({f"trained_groups_level_{v}": int(c) for v, c in zip(values, counts, strict=True)})
    return out


def step_trace(counts: dict, by_level: bool) -> dict:
    """One step's trace from its summed counts (all ranks): the shares of the generated groups that
    came back all-right, all-wrong and mixed (they add up to 1; `groups.group_kind`), the share
    whose observed pass rate lies in the training band (`groups_in_band_share`: the one in-band
    share the report and the benchmarks use), the screen's answers, and the level mix of the
    generated groups."""
    n = max(1, counts["generated_groups"])
    mixed = counts["informative_groups"]
    out = {"groups_generated": counts["generated_groups"], "groups_all_right_share": counts["groups_all_right"] / n, "groups_all_wrong_share": counts["groups_all_wrong"] / n,
           "groups_mixed_share": mixed / n, "groups_in_band_share": counts["groups_in_band"] / n,
           "screen_rollouts": counts["screen_rollouts"]}
    if by_level:
        out.update({f"level_share_{k.removeprefix('groups_level_')}": v / n for k, v in sorted(counts.items())
                    if k.startswith("groups_level_")})
    return out


def refresh_triggered(trigger: str, threshold: float, counts: dict, centre: float) -> bool:
    """Whether a step's outcomes call for a refresh before the next `refresh_every`: `centre` when
    its pass rate over every generated answer is further than `threshold` from the band centre
    (also true of a batch a dry band filled on purpose with problems off the band); `surprise`
    when the pass rate of the answers the scheduler had estimated is further than `threshold`
    from its own prediction for them (the estimates went stale; false without estimates)."""
    if trigger == "centre":
        return abs(counts["n_correct"] / max(1, counts["generated_rollouts"]) - centre) > threshold
    if trigger != "surprise":
        raise ValueError(f"refresh trigger must be centre or surprise, got {trigger!r}")
    if not counts.get("predicted_rollouts") or not np.isfinite(counts["predicted_correct"]):
        return False  # a scheduler without estimates is never surprised
    observed = counts["n_correct"] / max(1, counts["generated_rollouts"])  # the same groups: all were estimated
    return abs(observed - counts["predicted_correct"] / counts["predicted_rollouts"]) > threshold


def checkpoints_to_prune(checkpoints: list[Path], keep_last: int) -> list[Path]:
    """The checkpoints to delete so the newest keep_last remain; keep_last 0 keeps every one."""
    return sorted(checkpoints)[:-keep_last] if keep_last else []


def latest_checkpoint(run_dir: Path) -> Path | None:
    ckpts = sorted((run_dir / "checkpoints").glob("step-*"))
    ckpts = [c for c in ckpts if (c / "state.json").exists()]
    return ckpts[-1] if ckpts else None
