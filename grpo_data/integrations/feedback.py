"""One scheduler over a trainer's dataset, fed by the groups the trainer scored.

    cur = Curriculum.from_columns(ids, n_correct=c, k=k, level=level, seed=0)
    cur = Curriculum.from_columns(ids, level=level, prior=read_prior("bigmath", dataset_columns(ds)))
    rows = cur.next_batch(64)                       # dataset positions the trainer should generate for
    cur.record(["id-1", "id-1", "id-7"], [True, False, None])   # one entry per scored completion
    cur.tick()                                      # after each optimizer step

Completions are grouped by problem id, whatever order or rank they came from; a completion the reward
could not score (None) is not counted, and ids outside the dataset (an evaluation set) are ignored.
Band settings: the scheduler's own band, [0.2, 0.8] around 50% correct (where a group of G is least
likely to come back all-equal: at G = 8, 0.8^8 + 0.2^8 = 17% against 66% at p = 0.95), and, as in
`grpo train`, each problem at most once per band epoch. Any BandConfig field can be passed; with
scheduler="pools" or "greso" (the peers' samplers, `grpo_data.curriculum.peer_schedulers`) their PoolsConfig or
GresoConfig fields instead. Unknown settings of these are refused, naming the accepted ones.
A `prior` (`grpo_data.curriculum.priors`: another model's published difficulty, discounted, or an earlier
profile of another checkpoint or model, `grpo_data.curriculum.prior_profile`; the band scheduler only,
`PRIOR_SCHEDULERS`, others refuse it) joins the offline counts: added to them where both exist,
alone where the offline counts leave a problem unprofiled,
those in difficulty groups of their own so that their drift learns the offset between that model and
the policy.
"""

from __future__ import annotations

import hashlib
import logging
import math
import re
from collections.abc import Sequence

import numpy as np

from grpo_data.curriculum.prior_profile import one_source, read_profile_prior
from grpo_data.curriculum.priors import (
    Columns,
    Prior,
    PriorError,
    merge_offline,
    origin_groups,
    prior_weight,
    read_prior,
    stored_prior,
)
from grpo_data.curriculum.scheduler import (
    PRIOR_SCHEDULERS,
    Scheduler,
    difficulty_groups,
    make_scheduler,
    prior_refusal,
)

logger = logging.getLogger(__name__)

COUNTERS = ("batches_sampled", "batches_scored", "groups_seen", "informative_seen")


class MissingColumnError(ValueError):
    """A column the integration needs (the problem id, the gold answer) is missing."""


def verdicts(rewards: Sequence, success_at: float) -> list[bool | None]:
    """Success per completion: reward >= success_at (0.5 suits 0/1 and -1/+1 rewards); None or NaN is
    a reward that could not score."""
    out = []
    for r in rewards:
        value = None if r is None else float(r)  # numpy and 0-d torch scalars too
        out.append(None if value is None or math.isnan(value) else value >= success_at)
    return out


def float_column(values, n: int) -> np.ndarray:
    """A numeric column with None as NaN (unprofiled problems)."""
    if values is None:
        return np.full(n, np.nan)
    return np.array([np.nan if v is None else float(v) for v in values], dtype=np.float64)


def level_column(values, n: int) -> np.ndarray | None:
    """Levels as float64 (NaN where missing), or None when no row has one (the trainer's rule,
    `grpo_data.tables.problems.level_array`). Text levels such as MATH's "Level 3" take their number, or
    else their rank among the distinct texts."""
    if values is None or all(v is None for v in values):
        return None
    try:
        return float_column(values, n)
    except (TypeError, ValueError):
        text = ["" if v is None else str(v) for v in values]
        numbers = [re.findall(r"\d+", t) for t in text]
        if all(num or not t for num, t in zip(numbers, text, strict=True)):
            return np.array([float(num[-1]) if num else np.nan for num in numbers])
        codes = {t: float(i) for i, t in enumerate(sorted(set(text) - {""}))}
        return np.array([codes.get(t, np.nan) for t in text])


def dataset_prior(columns: Columns, spec: str | None, weight: float | None, ids: Sequence | None = None,
                  scheduler: str = "band", profile: str | None = None,
                  options: tuple[str, str, str] = ("prior=", "prior_profile=", "prior_weight=")) -> Prior | None:
    """The plug-ins' prior: `spec` read from the dataset's columns (`grpo_data.curriculum.priors`), or the
    earlier profile at `profile` joined to `ids` (`grpo_data.curriculum.prior_profile`; one source at a time),
    at most `weight` pseudo-samples a problem (None: the default; refused for a scheduler that
    cannot use a prior, `PRIOR_SCHEDULERS`); else the `prior_rate`/`prior_k` columns a `grpo shards
    --prior` set carries (for the band scheduler); else None. `options` names the three settings as
    the plug-in spells them."""
    one_source(spec, profile, options[:2])
    asked = options[0] if spec or not profile else options[1]
    weight = prior_weight(spec or profile, weight, (f"{options[0]} or {options[1]}", options[2]))
    if spec or profile:
        if scheduler not in PRIOR_SCHEDULERS:
            raise PriorError(prior_refusal(scheduler, asked))
        if profile:
            return read_profile_prior(profile, list(ids if ids is not None else range(columns.rows)), weight,
                                      where=columns.where)
        return read_prior(spec, columns, weight, ids=ids)
    if "prior_rate" in columns.names and "prior_k" in columns.names:
        return set_prior(stored_prior(columns.get("prior_rate"), columns.get("prior_k")), scheduler)
    return None


def set_prior(prior: Prior | None, scheduler: str) -> Prior | None:
    """The prior a `grpo shards --prior` set carries, for `scheduler`: None (logged) for one that
    cannot use it, which starts as it would without (the user asked for no prior)."""
    if prior is not None and scheduler not in PRIOR_SCHEDULERS:
        logger.info("%s scheduler: the set's prior_rate/prior_k are not used (only %s start from a prior)",
                    scheduler, ", ".join(PRIOR_SCHEDULERS))
        return None
    return prior


def start_summary(profiled: bool, prior: Prior | None, offset: float) -> str:
    """What a scheduler starts from, for the log: the offline profile and the prior, with the offset
    fitted between them only where there was a profile to fit it to."""
    if prior is None:
        return "with offline profile" if profiled else "no offline profile"
    if not profiled:
        return f"no offline profile; {prior.summary()}; its offset to the policy is learned online"
    return f"with offline profile; {prior.summary()}, {offset:+.2f} logits from the profile's counts"


class Curriculum:
    def __init__(self, scheduler: Scheduler, ids: Sequence[str]) -> None:
        self.scheduler = scheduler
        self.ids = [str(i) for i in ids]
        self.index_of = {pid: i for i, pid in enumerate(self.ids)}
        if len(self.index_of) != len(self.ids):
            raise MissingColumnError(f"{len(self.ids) - len(self.index_of)} duplicate problem ids in the dataset; "
                                 "ids must be unique (grpo load deduplicates them)")
        self.groups_seen = 0
        self.informative_seen = 0
        self.batches_sampled = 0
        self.batches_scored = 0
        self.fingerprint = hashlib.sha1("\n".join(self.ids).encode()).hexdigest()[:16]  # ids, in dataset order
        # the G a dry band's fill expects (BandConfig.group_size): learned from the first scored batch
        # (TRL's num_generations, verl's rollout.n) unless the user set it
        self.group_size_set = False

    def meta(self) -> dict:
        """What a checkpoint holds beside the scheduler's own state: the ids hash and the counters."""
        return {"ids_hash": self.fingerprint, **{name: getattr(self, name) for name in COUNTERS}}

    def restore(self, scheduler_state: dict, meta: dict, origin: str) -> None:
        """The scheduler's `state_dict()` and `meta()` as saved. Saved state describes the problems by
        position: it is refused for another dataset, or the same rows in another order."""
        if meta["ids_hash"] != self.fingerprint:
            raise ValueError(f"{origin}: the curriculum state was saved for another dataset (or the same rows in "
                             f"another order; ids hash {meta['ids_hash']}, this dataset {self.fingerprint}); resume "
                             "with the dataset it was trained on")
        self.scheduler.load_state_dict(scheduler_state, origin=origin)
        for name in COUNTERS:
            setattr(self, name, meta[name])
        saved = (scheduler_state.get("meta", {}).get("config") or {}).get("group_size")
        if saved:  # the G learned before the checkpoint, not the default, chooses the first batch after it
            self.use_group_size(int(saved))

    @classmethod
    def from_columns(cls, ids: Sequence[str], n_correct=None, k=None, level=None, scheduler: str = "band",
                     seed: int = 0, share: bool = True, prior: Prior | None = None, **settings) -> Curriculum:
        """A scheduler over `ids`, starting from offline counts (None or NaN: unprofiled) and one fitted
        prior per level (without `level`: the pool's prior, offline-estimate buckets sharing drift, as
        the trainer does); `share` False keeps each problem's estimate to its own outcomes (no drift,
        no refits). `prior` (one row per id) gives the problems without offline counts its discounted
        pseudo-counts and adds them, moved by the offset fitted on the problems both cover, to the
        counts of the others, as the trainer's `data.prior` does (`grpo_data.curriculum.priors.merge_offline`)."""
        if ids is None:
            raise MissingColumnError("the dataset has no `id` column: the scheduler needs one id per problem to map "
                                 "scored completions back (grpo shards writes it; or add one with "
                                 "dataset.map(lambda r, i: {'id': str(i)}, with_indices=True))")
        n = len(ids)
        offline = None
        if k is not None and n_correct is not None:
            offline = (float_column(n_correct, n), float_column(k, n))
            if np.isnan(offline[1]).all():
                offline = None
        if prior is not None and prior.rate.size != n:
            raise ValueError(f"the prior has {prior.rate.size} rows for {n} ids; read it from the same dataset")
        if prior is not None and scheduler not in PRIOR_SCHEDULERS:
            raise PriorError(prior_refusal(scheduler, "prior"))
        profiled = offline
        offline, from_prior, offset = merge_offline(offline, prior)
        groups = None
        if scheduler == "band":  # as the trainer groups (grpo_train.scheduler_start.scheduler_groups / scheduler_kwargs)
            levels = level_column(level, n)
            groups = origin_groups(difficulty_groups(n, offline, levels), from_prior)
            settings = {"share": share, "group_priors": levels is not None, **settings}
        sched = make_scheduler(scheduler, n, seed=seed, offline=offline, groups=groups, **settings)
        logger.info("curriculum: %s scheduler over %d problems (%s)", scheduler, n,
                    start_summary(profiled is not None, prior, offset))
        cur = cls(sched, ids)
        cur.group_size_set = "group_size" in settings  # the user's G stays; else the first scored batch's
        return cur

    def next_batch(self, batch: int) -> np.ndarray:
        self.batches_sampled += 1
        return self.scheduler.sample(batch)

    def record(self, ids: Sequence, correct: Sequence[bool | None]) -> dict:
        """Fold one scored generation batch into the posterior; returns what was counted."""
        if len(ids) != len(correct):
            raise ValueError(f"{len(ids)} ids but {len(correct)} verdicts")
        self.batches_scored += 1
        rows, hits = [], []
        unknown = unscored = 0
        for pid, ok in zip(ids, correct):
            row = self.index_of.get(str(pid))
            if row is None:
                unknown += 1
            elif ok is None:
                unscored += 1
            else:
                rows.append(row)
                hits.append(1.0 if ok else 0.0)
        if not rows:
            return {"groups": 0, "informative": 0, "unknown": unknown, "unscored": unscored}
        idx, inverse = np.unique(np.asarray(rows), return_inverse=True)
        size = np.bincount(inverse).astype(np.float64)
        if not self.group_size_set:
            self.use_group_size(int(np.median(size)))
        n_correct = np.bincount(inverse, weights=np.asarray(hits))
        self.scheduler.update(idx, n_correct, size)
        informative = int(np.count_nonzero((n_correct > 0) & (n_correct < size)))
        self.groups_seen += idx.size
        self.informative_seen += informative
        return {"groups": int(idx.size), "informative": informative, "unknown": unknown, "unscored": unscored}

    def use_group_size(self, g: int) -> None:
        """Tell a scheduler that weighs informativeness at G (the band scheduler's dry fill) the G the
        trainer samples; once set (here or by the user's `group_size`) it stays."""
        import dataclasses

        self.group_size_set = True
        cfg = getattr(self.scheduler, "cfg", None)
        if g < 2 or cfg is None or not hasattr(cfg, "group_size") or cfg.group_size == g:
            return
        logger.info("curriculum: %d answers per prompt (the trainer's G; was %d): a dry band fills by "
                    "informativeness at G = %d", g, cfg.group_size, g)
        self.scheduler.cfg = dataclasses.replace(cfg, group_size=g)

    def tick(self) -> None:
        self.scheduler.tick()

    def stats(self) -> dict:
        """Scheduler state plus the lag between choosing a batch and hearing its outcome."""
        return {**self.scheduler.stats(), "lag_batches": self.batches_sampled - self.batches_scored,
                "informative_frac": self.informative_seen / max(self.groups_seen, 1)}
