"""What the trainer's scheduler starts from: an offline profile's counts, another model's
difficulty read from the training table (`data.prior`) or from an earlier profile of another
checkpoint or model (`data.prior_profile`), combined as `grpo_data.curriculum.priors.merge_offline` combines
them, and the difficulty groups whose drift learns the offset between the two.

    start = scheduler_start(problems, cfg)     # offline counts, groups, prior, offset; no engine
    scheduler = build_scheduler(problems, cfg, run_dir)   # the scheduler, and RUN/prior.json

Pure data work (polars, numpy): `grpo_train.trainer` calls it after it has left out the problems
that cannot fit the engine's context; its `check_inputs` runs `check_start` before any engine starts.
"""

from __future__ import annotations

import logging
from dataclasses import fields
from pathlib import Path
from typing import NamedTuple

import numpy as np
import polars as pl

from grpo_data.curriculum.band_scheduler import BandConfig
from grpo_data.curriculum.prior_profile import check_other_source, read_prior_settings
from grpo_data.curriculum.priors import (
    Prior,
    at_fitted_weight,
    check_recorded_prior,
    merge_offline,
    origin_groups,
)
from grpo_data.curriculum.scheduler import Scheduler, difficulty_groups, make_scheduler
from grpo_data.tables import io
from grpo_data.tables.problems import level_array

logger = logging.getLogger(__name__)


def profile_mismatches(meta: dict, cfg) -> list[str]:
    """How the offline profile was measured differently from how training samples: each one makes
    the profile's counts describe another distribution than the policy's rollouts (a stale prior)."""
    out = []
    sampling = (meta.get("config") or {}).get("sampling") or {}
    for name, ours in (("temperature", cfg.rollout.temperature), ("top_p", cfg.rollout.top_p),
                       ("max_tokens", cfg.rollout.max_tokens)):
        theirs = sampling.get(name)
        if theirs is not None and float(theirs) != float(ours):
            out.append(f"{name} {theirs} in the profile, {ours} in training")
    model = meta.get("model")
    if model and Path(str(model)).expanduser().resolve() != Path(str(cfg.model)).expanduser().resolve():
        out.append(f"model {model} in the profile, {cfg.model} in training")
    return out


def offline_counts(problems: pl.DataFrame, profile_path: str | None, cfg=None,
                   prior: Prior | None = None) -> tuple[tuple[np.ndarray, np.ndarray] | None, Prior | None]:
    """(n_correct, k) per problem from an offline profile, NaN where a problem was not profiled, and
    the prior to read them with. With the train config `cfg`, warns when the profile was sampled
    differently from training and logs how many problems it leaves unprofiled (without: quiet). A
    profile whose adaptive stopping weighed a prior is refused unless `prior` (data.prior) is that
    same spec and weight, and read with its weight fitted again where the profile's was
    (`grpo_data.curriculum.priors.check_recorded_prior`)."""
    if not profile_path:
        return None, prior
    from grpo_data.tables.profile_table import read_profile

    prof, meta = read_profile(profile_path)
    prior = check_recorded_prior(meta, prior, f"data.profile {profile_path}", "Set data.{option}={spec} data.prior_weight={weight}",
                         ("prior", "prior_profile"))
    # a prior profile of the profile's own weights is that model's counts, not a prior
    check_other_source(prior, meta.get("weights_hash"), f"data.profile {profile_path}",
                       "set one of the two as data.profile (two profiles of one model do not combine here)", profile_path)
    differences = profile_mismatches(meta, cfg) if cfg is not None else []
    if differences:
        logger.warning("the offline profile %s was measured unlike training (%s): the scheduler starts from "
                       "counts of another sampling distribution; re-profile, or lower its weight with "
                       "scheduler.max_prior_k", profile_path, "; ".join(differences))
    joined = problems.select("id").join(prof.select("id", "n_correct", "k"), on="id", how="left")
    missing = joined["k"].null_count()
    if missing and cfg is not None:
        logger.info("scheduler prior: %d of %d problems have no offline profile (their group's prior)", missing,
                    problems.height)
    return (joined["n_correct"].cast(pl.Float64).fill_null(float("nan")).to_numpy(),
            joined["k"].cast(pl.Float64).fill_null(float("nan")).to_numpy()), prior


def training_prior(problems: pl.DataFrame, data, log: bool = True) -> Prior | None:
    """`data.prior` read from the training table's own columns (or the fields `grpo load --prior`
    kept in its meta), or the earlier profile `data.prior_profile` joined to its ids, at most
    `data.prior_weight` pseudo-samples a problem; None without either."""
    prior = read_prior_settings(data.prior, data.prior_profile, data.prior_weight, problems, f"data.train {data.train}",
                                ("data.prior", "data.prior_profile", "data.prior_weight"))
    if prior is not None and log:
        logger.info("scheduler %s; its offset to this policy is learned online (the groups' drift)", prior.summary())
    return prior


def check_prior_model(prior: Prior | None, model: str) -> None:
    """Refuse a prior profile the policy's own weights drew (`check_other_source`): the run's start
    is that profile, as data.profile. Hashes the model's weights only when the prior is a profile."""
    if prior is not None and prior.source.profile:
        from grpo_data.profile_metadata import weights_hash

        check_other_source(prior, weights_hash(model), f"the policy, model {model}",
                           "set it as data.profile={path} instead of data.prior_profile")


def scheduler_groups(problems: pl.DataFrame, offline, sc) -> np.ndarray | None:
    """Difficulty groups of the band scheduler, one fitted prior each (refitted online): the data's
    level, as the profiler fits its priors; without a level column, the offline-estimate bucket;
    without either (or with `groups: none`), None: one prior for the whole pool."""
    if sc.name != "band" or sc.groups == "none":
        return None
    level = level_array(problems)
    if level is not None:
        return difficulty_groups(problems.height, offline, level)
    if offline is None:
        logger.info("scheduler: no level column and no offline profile; one prior for the whole pool")
        return None
    logger.info("scheduler: the data has no level column; problems are grouped by their offline estimate")
    return difficulty_groups(problems.height, offline)


def scheduler_kwargs(sc, problems: pl.DataFrame | None = None) -> dict:
    """The settings a SchedulerSection hands `make_scheduler` beside name, pool, seed and profile.
    Groups that are offline-estimate buckets (no level column) share the pool's prior."""
    if sc.name == "band":  # every BandConfig field the section holds, under the same name
        shared = {f.name: getattr(sc, f.name) for f in fields(BandConfig) if hasattr(sc, f.name)}
        return {**shared, "group_priors": problems is None or level_array(problems) is not None}
    if sc.name in ("pools", "greso", "thompson", "sgpo"):
        return dict(sc.settings)
    if sc.name == "offline_band":
        return {"lo": sc.lo, "hi": sc.hi, "without_replacement": sc.without_replacement}
    return {"without_replacement": sc.without_replacement}  # uniform


class SchedulerStart(NamedTuple):
    """What `build_scheduler` starts the scheduler from.

    offline:  (n_correct, k) per problem: the profile's counts plus the prior's moved pseudo-counts
              (`merge_offline`), NaN where neither has one; None without either.
    groups:   (N,) difficulty group per problem (band only; the prior's rows apart, `origin_groups`),
              or None for one pool prior.
    prior:    the prior read from data.train or data.prior_profile (None without either).
    offset:   the logit offset of the profiling model against the prior's (0 without both).
    from_prior: (N,) the rows only the prior covers (None without a prior): their groups' drift is the
              offset against the prior learned online (`sched_prior_logit_shift` in the metrics).
    """

    offline: tuple[np.ndarray, np.ndarray] | None
    groups: np.ndarray | None
    prior: Prior | None
    offset: float
    from_prior: np.ndarray | None = None


def check_start(problems: pl.DataFrame, cfg) -> None:
    """What `scheduler_start` refuses (a prior that cannot be read, a profile that stopped on another
    prior, a prior repeating the profile's own samples, a prior profile of the policy's or the
    profile's own weights), checked quietly before any engine starts."""
    prior = training_prior(problems, cfg.data, log=False)
    check_prior_model(prior, cfg.model)
    merge_offline(*offline_counts(problems, cfg.data.profile, None, prior))


def scheduler_start(problems: pl.DataFrame, cfg) -> SchedulerStart:
    """The profile's own counts with another model's discounted pseudo-counts added (moved by the
    offset between the two), those alone where the profile has none, and the groups they share
    drift in. `cfg` is the TrainConfig."""
    prior = training_prior(problems, cfg.data)
    check_prior_model(prior, cfg.model)
    counts, prior = offline_counts(problems, cfg.data.profile, cfg, prior)
    prior = None if prior is None else at_fitted_weight(counts, prior)  # RUN/prior.json states the weight used
    offline, from_prior, offset = merge_offline(counts, prior)
    groups = scheduler_groups(problems, offline, cfg.scheduler)
    if cfg.scheduler.name == "band":
        groups = origin_groups(groups, from_prior)
    return SchedulerStart(offline, groups, prior, offset, from_prior)


def build_scheduler(problems: pl.DataFrame, cfg, run_dir: Path | None = None) -> Scheduler:
    """The scheduler `cfg.scheduler` names over `problems`, started from `scheduler_start`; with a
    prior and a `run_dir` (rank 0's), RUN/prior.json says which model and how many samples stand
    behind the start, the weight and the offset."""
    start = scheduler_start(problems, cfg)
    if start.prior is not None and run_dir is not None:
        io.write_json(Path(run_dir) / "prior.json", {**start.prior.describe(), "offset_from_profile": start.offset})
    sc = cfg.scheduler
    band_g = {"group_size": cfg.rollout.group_size} if sc.name == "band" else {}  # a dry band's fill scores at G
    scheduler = make_scheduler(sc.name, problems.height, seed=cfg.run.seed, offline=start.offline,
                               groups=start.groups, **scheduler_kwargs(sc, problems), **band_g)
    if start.from_prior is not None and hasattr(scheduler, "mark_prior_rows"):  # the online offset, logged apart
        scheduler.mark_prior_rows(start.from_prior)
    return scheduler
