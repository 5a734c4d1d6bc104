"""The prior settings of a pipeline's stages (`grpo pipeline`): `prior`, `prior_profile` and
`prior_weight` in `profile:` and `shards:`, as `data.prior`, ... in `train:`, with the meaning and the
checks of `grpo profile/shards/train --prior/--prior-profile/--prior-weight`
(`grpo_data.curriculum.prior_profile.check_prior_settings`, `read_prior_settings`). The stages after the
profile take the profile's prior unless their section names its own (`grpo_train.config_io.stage_prior`):
an adaptive profile that stopped early on a prior is read with that prior only.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from grpo_data.curriculum.prior_profile import check_prior_settings, read_prior_settings
from grpo_data.curriculum.priors import DEFAULT_WEIGHT, PriorError, keep_patterns
from grpo_data.tables.shards import sha256_file
from grpo_train.config_io import PRIOR_KEYS, profile_for_training, stage_prior


def check_priors(spec: dict, path: str | Path) -> None:
    """Refuse, before any stage runs, prior settings the stages would refuse after hours of work:
    each section's own (`profile:`, `shards:`, `train: data:`) checked as `grpo profile`, `grpo
    shards` and `grpo train` check theirs (`check_prior_settings`), and a shards or train prior other
    than the one an adaptive profile stopped on (the stages after the profile take its prior unless
    they name their own: `stage_prior`). A PriorError names the file and the section."""
    shards = spec.get("shards") or {}
    profile = spec.get("profile") or {}
    train_data = (spec.get("train") or {}).get("data") or {}
    for where, section in (("profile", profile), ("shards", shards), ("train.data", train_data)):
        try:
            check_prior_settings(*(section.get(k) for k in PRIOR_KEYS), PRIOR_KEYS)
        except PriorError as exc:
            raise PriorError(f"{path}: {where}: {exc}") from None
    from grpo_data.profile_config import PIPELINE_FIT_NAMES, check_fit_settings

    try:  # a fitted weight's cap given where the later stages read it
        check_fit_settings(bool(profile.get("fit_prior_weight")), bool(profile.get("adaptive")),
                           bool(profile.get("prior") or profile.get("prior_profile")), profile.get("prior_weight"),
                           PIPELINE_FIT_NAMES)
    except ValueError as exc:
        raise PriorError(f"{path}: profile: {exc}") from None
    if not profile.get("adaptive") or not (profile.get("prior") or profile.get("prior_profile")):
        return  # only an adaptive profile stops on its prior (fixed k draws the same samples whatever it says)

    def said(settings: dict) -> tuple:
        weight = settings.get("prior_weight")
        return settings.get("prior"), settings.get("prior_profile"), DEFAULT_WEIGHT if weight is None else float(weight)

    readers = (("shards", shards), ("train.data", train_data)) if profile_for_training(spec) else (("shards", shards),)
    for where, section in readers:  # training that reads no profile reads it with no prior
        used = said(stage_prior(section, profile))
        if used != said(profile):
            shown = ", ".join(f"{k} {v}" for k, v in zip(PRIOR_KEYS, said(profile), strict=True) if v is not None)
            raise PriorError(f"{path}: {where}: prior settings {dict(zip(PRIOR_KEYS, used, strict=True))} differ from "
                             f"the profile's ({shown}): the adaptive profile stops early where its prior agrees, so "
                             "its counts are read with that prior only; leave the prior settings out of "
                             f"`{where}` (it then takes the profile's) or give the same")


def prior_fields(spec: dict) -> tuple[str, ...]:
    """The fields the data stage keeps in each row's meta (`grpo_data.curriculum.priors.keep_patterns`) for every
    column prior the pipeline's stages read (`prior` of the profile, the shards and training)."""
    profile = spec.get("profile") or {}
    specs = {profile.get("prior"), stage_prior(spec.get("shards"), profile).get("prior"),
             stage_prior((spec.get("train") or {}).get("data"), profile if profile_for_training(spec) else None).get("prior")}
    return tuple(dict.fromkeys(pattern for s in sorted(x for x in specs if x) for pattern in keep_patterns(s)))


def split_prior(section: dict) -> tuple[dict, dict]:
    """A profile or shards section's prior settings (`prior`, `prior_profile`, `prior_weight`, those
    set) and the rest of it."""
    settings = {k: section[k] for k in PRIOR_KEYS if section.get(k) is not None}
    return settings, {k: v for k, v in section.items() if k not in PRIOR_KEYS}


def prior_identity(settings: dict) -> dict:
    """What a stage's output depends on of its prior settings: the spec and weight as given, and an
    earlier profile by content (sha256), so a profile rewritten under the same path redoes the stage."""
    profile = settings.get("prior_profile")
    return {**settings, **({"prior_profile": {"path": str(profile), "sha256": sha256_file(Path(profile))}}
                           if profile else {})}


def read_stage_prior(where: str, settings: dict, table: pl.DataFrame, data: Path):
    """The prior `settings` name over the problems of `table` (`data` names it in errors), read as the
    command line reads its flags (`grpo_data.curriculum.prior_profile.read_prior_settings`); None without one.
    PriorError naming the section `where`."""
    try:
        return read_prior_settings(*(settings.get(k) for k in PRIOR_KEYS), table, str(data), PRIOR_KEYS)
    except PriorError as exc:
        raise PriorError(f"{where}: {exc}") from None
