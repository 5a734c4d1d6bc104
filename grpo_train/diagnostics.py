"""Training-health detectors over the metric stream: the failures GRPO write-ups tell you to watch
for, noticed while the run is still worth saving.

    health = Health(DiagnosticsConfig())
    for record in stream:                # one metrics.jsonl "train" record per step
        for w in health.observe(record): # each a Warning: what was seen and what to try
            logger.warning(w.message)

Each detector is a pure function of the recent records, registered by name:

    @register_detector("my_detector")
    def my_detector(history: list[dict], cfg: DiagnosticsConfig) -> str | None: ...  # None: healthy

`Health` fires a detector's warning once when it turns on, and again only after it has been off
for a full window (no warning every step while a condition lasts). Each record gets
`diag_<name>`, 1.0 while that detector is on and 0.0 while it is off, so the metrics and
TensorBoard show when.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from grpo_data.curriculum.stats import paired_mean_se

DETECTORS: dict[str, Callable[[list[dict], DiagnosticsConfig], str | None]] = {}


@dataclass(frozen=True)
class DiagnosticsConfig:
    """window: steps a detector looks at (the recent window; the run's first window is the baseline
    where one is needed); collapse_zero_var: mean zero-variance fraction over the window that
    counts as reward collapse; entropy_drop / diversity_drop: recent entropy / distinct wrong
    answers per group (the same mistake repeated) below this share of the baseline's is
    degeneration; kl_max: mean KL per token above this is a blow-up; kl_growth: the window's KL this
    many times the window before it, once that is not the run's first (where KL starts at 0), and
    above kl_max / 10, also is (the window before counts as at least kl_max / 20); reward_std_max: the batch reward's step-to-step noise (median absolute
    first difference / 0.954, the std of white noise; a steady trend or one spike hardly moves it)
    above this is oscillation, as is grad_norm_cv (the same for the gradient norm, over its
    median); length_growth: completion length this many times the baseline's with truncation_min
    of answers truncated is a runaway; zero_var_jump: recent zero-variance fraction this much above
    the baseline's is a surge; dry_occupancy: band occupancy below this, or under-filled batches in
    dry_underfilled of the window's steps, is the band running dry; regression_z /
    regression_min_drop: a held-out evaluation below the starting policy's (step 0) by at least regression_min_drop
    and regression_z standard errors (paired over problems) is a regression (`heldout_regression`)."""

    enabled: bool = True
    window: int = 10
    collapse_zero_var: float = 0.95
    entropy_drop: float = 0.3
    diversity_drop: float = 0.5
    kl_max: float = 0.1
    kl_growth: float = 3.0
    reward_std_max: float = 0.2
    grad_norm_cv: float = 0.5
    length_growth: float = 1.5
    truncation_min: float = 0.1
    zero_var_jump: float = 0.25
    dry_occupancy: float = 0.02
    dry_underfilled: float = 0.5
    regression_z: float = 3.0
    regression_min_drop: float = 0.02


@dataclass(frozen=True)
class Warning:
    """name: the detector; step: where it turned on; message: what it saw and what to try."""

    name: str
    step: int
    message: str


def register_detector(name: str):
    def deco(fn):
        DETECTORS[name] = fn
        return fn

    return deco


def _values(records: list[dict], key: str) -> np.ndarray:
    out = [r.get(key) for r in records]
    return np.array([v for v in out if isinstance(v, (int, float)) and not isinstance(v, bool) and np.isfinite(v)],
                    dtype=np.float64)


def _split(history: list[dict], cfg: DiagnosticsConfig, key: str) -> tuple[np.ndarray, np.ndarray] | None:
    """(baseline, recent) values of `key`: the first and the last window, once they do not overlap."""
    if len(history) < 2 * cfg.window:
        return None
    base, recent = _values(history[: cfg.window], key), _values(history[-cfg.window :], key)
    return (base, recent) if base.size and recent.size else None


@register_detector("reward_collapse")
def reward_collapse(history: list[dict], cfg: DiagnosticsConfig) -> str | None:
    recent = _values(history[-cfg.window :], "zero_variance_fraction")
    if len(history) < cfg.window or not recent.size or recent.mean() < cfg.collapse_zero_var:
        return None
    rate = _values(history[-cfg.window :], "batch_pass_rate")
    side = "right" if rate.size and rate.mean() > 0.5 else "wrong"
    return (f"reward collapse: {recent.mean():.0%} of groups came back all-equal (mostly all-{side}) over the last "
            f"{cfg.window} steps; almost nothing carries a gradient. Try: the band scheduler (scheduler.name=band) "
            "or a refresh (scheduler.refresh_every), harder/easier data, a larger rollout.group_size, or check the "
            "reward (reward.terms) and the verifier on a few answers")


@register_detector("entropy_collapse")
def entropy_collapse(history: list[dict], cfg: DiagnosticsConfig) -> str | None:
    ent, div = _split(history, cfg, "entropy"), _split(history, cfg, "distinct_wrong_ratio")
    seen = []
    if ent is not None and ent[0].mean() > 0 and ent[1].mean() < cfg.entropy_drop * ent[0].mean():
        seen.append(f"entropy fell from {ent[0].mean():.3g} to {ent[1].mean():.3g} per token")
    if div is not None and div[0].mean() > 0 and div[1].mean() < cfg.diversity_drop * div[0].mean():
        seen.append(f"distinct wrong answers per group fell from {div[0].mean():.0%} to {div[1].mean():.0%}")
    if not seen:
        return None
    return (f"policy degeneration: {'; '.join(seen)}. Groups will stop differing. Try: a lower optim.lr, an "
            "entropy bonus (algo.entropy_coef=0.001), a KL term (algo.kl_beta, or algo.kl_target), clip-higher "
            "(algo.clip_high=0.28), or a higher rollout.temperature")


@register_detector("kl_blowup")
def kl_blowup(history: list[dict], cfg: DiagnosticsConfig) -> str | None:
    recent = _values(history[-cfg.window :], "kl")
    if len(history) < cfg.window or not recent.size:
        return None
    if recent.mean() > cfg.kl_max:
        return (f"KL blow-up: KL to the reference {recent.mean():.3g} per token over the last {cfg.window} steps "
                f"(limit {cfg.kl_max}). Try: a lower optim.lr, a larger algo.kl_beta or an adaptive one "
                "(algo.kl_target), tighter clipping (algo.clip_low/clip_high)")
    # against the window before, never the run's first: KL starts at 0 by construction and any
    # ordinary rise is many times that
    before = _values(history[-2 * cfg.window : -cfg.window], "kl") if len(history) >= 3 * cfg.window else np.zeros(0)
    floor = max(before.mean(), cfg.kl_max / 20) if before.size else 0.0
    if before.size and recent.mean() > cfg.kl_max / 10 and recent.mean() > cfg.kl_growth * floor:
        return (f"KL blow-up: KL grew {recent.mean() / floor:.1f}x in {cfg.window} steps, from "
                f"{before.mean():.3g} to {recent.mean():.3g} per token. Try: a lower optim.lr or a KL target "
                "(algo.kl_target)")
    return None


def noise(values: np.ndarray) -> float:
    """Step-to-step noise of a series: median |first difference| / 0.954 (the std of white noise;
    a steady trend or a single spike barely moves it)."""
    return float(np.median(np.abs(np.diff(values))) / 0.954) if values.size > 2 else 0.0


@register_detector("oscillation")
def oscillation(history: list[dict], cfg: DiagnosticsConfig) -> str | None:
    if len(history) < cfg.window:
        return None
    reward = _values(history[-cfg.window :], "reward_mean")
    grad = _values(history[-cfg.window :], "grad_norm")
    seen = []
    if noise(reward) > cfg.reward_std_max:
        seen.append(f"the batch reward jumps {noise(reward):.3g} from step to step over the last {cfg.window} steps")
    if grad.size > 2 and np.median(grad) > 0 and noise(grad) / np.median(grad) > cfg.grad_norm_cv:
        seen.append(f"the gradient norm jumps {noise(grad) / np.median(grad):.2f}x its median from step to step")
    if not seen:
        return None
    return (f"oscillation: {'; '.join(seen)}. Try: a lower optim.lr or warmup (optim.warmup_steps), more groups "
            "per step (rollout.batch_groups), a steadier reward scale (algo.advantage=window_norm or batch_norm), "
            "optim.grad_clip")


@register_detector("length_runaway")
def length_runaway(history: list[dict], cfg: DiagnosticsConfig) -> str | None:
    split = _split(history, cfg, "completion_len_mean")
    trunc = _values(history[-cfg.window :], "truncated_fraction")
    if split is None or not trunc.size or split[0].mean() <= 0:
        return None
    growth = split[1].mean() / split[0].mean()
    if growth < cfg.length_growth or trunc.mean() < cfg.truncation_min:
        return None
    return (f"length runaway: answers grew {growth:.1f}x (from {split[0].mean():.0f} to {split[1].mean():.0f} tokens) "
            f"and {trunc.mean():.0%} hit max_tokens. Try: overlong handling (rollout.overlong=mask or penalty), a "
            "length penalty term (reward.terms), a length-unbiased loss (algo.advantage=dr_grpo or length_norm)")


@register_detector("zero_variance_surge")
def zero_variance_surge(history: list[dict], cfg: DiagnosticsConfig) -> str | None:
    split = _split(history, cfg, "zero_variance_fraction")
    if split is None or split[1].mean() - split[0].mean() < cfg.zero_var_jump:
        return None
    return (f"zero-variance surge: all-equal groups rose from {split[0].mean():.0%} to {split[1].mean():.0%}; "
            "the policy outgrew (or fell behind) the problems it is given. Try: a refresh of the estimates "
            "(scheduler.refresh_every), dynamic resampling (rollout.dynamic_resampling=true), a re-profile")


@register_detector("band_dry")
def band_dry(history: list[dict], cfg: DiagnosticsConfig) -> str | None:
    if len(history) < cfg.window:
        return None
    recent = history[-cfg.window :]
    occupancy = _values(recent, "band_occupancy")
    underfilled = np.mean([bool(r.get("underfilled")) for r in recent])
    seen = []
    if occupancy.size and occupancy.mean() < cfg.dry_occupancy:
        seen.append(f"the scheduler puts the problems it chose in band with probability {occupancy.mean():.1%} on average")
    if underfilled >= cfg.dry_underfilled:
        seen.append(f"{underfilled:.0%} of the last {cfg.window} batches were under-filled")
    if not seen:
        return None
    # the band scheduler's default (scheduler.dry=informative) already fills a dry batch by expected
    # informativeness (its sched_dry_fills counter); a wider band renames problems in band, it does not
    # make more of them informative. Measured (bench/README.md, curriculum benchmark): a 200-problem
    # pool held ~15 problems in a 0.2-0.8 band, which the scheduler then cycled through every 1-2 steps
    return (f"the band is running dry: {'; '.join(seen)}. The pool holds few problems the policy solves "
            "sometimes. Try: more data of the policy's difficulty (helps most), a refresh of stale estimates "
            "(scheduler.refresh_every), more resampling rounds (rollout.max_rounds), or scheduler.dry=informative "
            "(the band scheduler's default) if it is set to widen")


def _level(lv) -> str:
    """A level as written: 7, not the 7.0 of an integer column with nulls read as floats."""
    return f"{lv:g}" if isinstance(lv, float) else str(lv)


def heldout_regression(first: np.ndarray, now: np.ndarray, cfg: DiagnosticsConfig,
                       levels: np.ndarray | None = None) -> str | None:
    """A held-out evaluation against the starting policy's, problem by problem (`first`, `now`: each
    problem's share of correct samples, same problems in the same order): None, or what fell when
    the mean drop is at least regression_min_drop and regression_z standard errors of the paired
    differences. The train-side detectors cannot see this: the band scheduler keeps the batch pass
    rate near its band whatever the policy's accuracy does."""
    first, now = np.asarray(first, dtype=np.float64), np.asarray(now, dtype=np.float64)
    if first.shape != now.shape or first.size < 2:
        return None
    diff = now - first
    gain, se = paired_mean_se(diff)
    drop = -gain
    if drop < cfg.regression_min_drop or drop < cfg.regression_z * se:
        return None
    worst = ""
    if levels is not None:
        known = np.array([lv is not None and lv == lv for lv in levels])  # null levels (None or NaN) left out
        by = {lv: float(diff[known & (levels == lv)].mean()) for lv in np.unique(levels[known])}
        fell = sorted((lv for lv in by if by[lv] < 0), key=lambda lv: by[lv])[:3]
        worst = "; most on level(s) " + ", ".join(f"{_level(lv)} ({by[lv]:+.3f})" for lv in fell) if fell else ""
    return (f"held-out regression: accuracy fell from {first.mean():.3f} at the start to {now.mean():.3f} ({-drop:+.3f}, "
            f"{drop / se if se else float('inf'):.1f} SE paired over {diff.size} problems){worst}. Training is "
            "unlearning what the starting policy could do. Try: a lower optim.lr or warmup (optim.warmup_steps), "
            "a KL term (algo.kl_beta), and an earlier checkpoint (checkpoints/)")


class Health:
    """Runs every registered detector on each new train record; see the module docstring."""

    def __init__(self, cfg: DiagnosticsConfig, history: list[dict] | None = None) -> None:
        self.cfg = cfg
        self.history: list[dict] = list(history or [])
        # a resumed run continues its episodes: a detector on at the checkpoint does not warn again
        last = self.history[-1] if self.history else {}
        self.on: dict[str, bool] = {name: bool(last.get(f"diag_{name}")) for name in DETECTORS}
        self.off_for: dict[str, int] = {name: 0 if self.on[name] else cfg.window for name in DETECTORS}
        self.warnings: list[Warning] = []

    def observe(self, record: dict) -> list[Warning]:
        """Adds `diag_<name>` to `record` for every detector that is on; returns new warnings."""
        if not self.cfg.enabled:
            return []
        self.history.append(record)
        w = self.cfg.window
        if len(self.history) > 3 * w:  # the baseline (first window) and the recent two are all detectors read
            self.history = self.history[:w] + self.history[-2 * w :]
        new = []
        for name, detect in DETECTORS.items():
            message = detect(self.history, self.cfg)
            record[f"diag_{name}"] = float(message is not None)
            if message is None:
                self.on[name] = False
                self.off_for[name] += 1
                continue
            if not self.on[name] and self.off_for[name] >= self.cfg.window:
                new.append(Warning(name, int(record.get("step", len(self.history))), message))
            self.on[name], self.off_for[name] = True, 0
        self.warnings += new
        return new
