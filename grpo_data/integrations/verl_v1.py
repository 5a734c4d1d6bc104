"""The band scheduler inside verl 0.9's V1 trainer (`trainer.use_v1=true`, the default): it chooses
which prompts get generated, and learns from the rewards of every group whose answers all finished
(a group with a failed answer is not counted).

Where V1 draws prompts (read in verl 0.9.1): `PPOTrainer._init_dataloader` builds the train set with
`create_rl_dataset`, which loads `data.custom_cls.{path,name}` (verl/utils/dataset/rl_dataset.py
`get_dataset_class`), and a StatefulDataLoader over it; `_fetch_one_gen_batch` draws each chunk of
prompts from that loader and `_submit_batch_to_rollout` sends it to the agent loop. Finished groups
reach the trainer only through its replay buffer, `trainer.v1.sampler.custom_sampler.{path,name}`
(`PPOTrainer._build_replay_buffer`), whose `sample` polls TransferQueue for them. So two config hooks,
no trainer or runner of ours:

    data.custom_cls.path=pkg://grpo_data.integrations.verl_v1 data.custom_cls.name=CurriculumDataset
    trainer.v1.sampler.custom_sampler.path=pkg://grpo_data.integrations.verl_v1
    trainer.v1.sampler.custom_sampler.name=CurriculumReplayBuffer
    data.dataloader_num_workers=0   (a worker process would draw from a copy of the scheduler)

- `CurriculumDataset` (an RLHFDataset): over `data.train_files`, each dataloader fetch returns the rows
  the scheduler picks (`__getitems__`; the sampler's positions only say how many). Its state rides in
  verl's own `global_step_N/data.pt` (StatefulDataLoader saves a stateful dataset's `state_dict`) and
  is restored on resume, inside an epoch and at its boundary. verl builds the validation set with the
  same class and does not say which is which: the set over `data.val_files` is a plain RLHFDataset,
  and identical train and val file lists are refused. A replay buffer other than the one here is
  refused (the scheduler would never hear a reward), and the dataset warns when batches go out with
  no reward heard.
- `CurriculumReplayBuffer` (verl's sync ReplayBuffer; `CurriculumReplayBufferAsync` for the async
  modes, with a plain dataset only): each poll hands the groups that finished since the last one to
  the dataset's scheduler, one verdict per answer, before verl selects among them; one scheduler step
  per global step (its `parameter_sync_step` local updates each sample a part of the batch). Its
  selection puts groups whose answers differ ahead of all-equal ones (then verl's order: oldest
  first). Choosing among finished groups saves training steps on no-signal groups, not generation;
  it only has a choice where more groups are finished than a batch takes (the async modes' warm-up
  batches), and with a plain dataset it is the only part that acts.

The buffer finds the dataset through the trainer that built it (its `refill_fn` is the trainer's
bound `_add_prompts_to_generate`, and the trainer keeps `train_dataset`); it reads the trainer's
config as it is built and refuses what cannot work (`setting_refusal`): a colocated reward model
(its rewards arrive after the buffer samples), `algorithm.filter_groups` or
`sync_refill_failed_groups` (verl gives those only to its own buffer, yet fetches one prompt at a
time for them), a buffer class that does not match `trainer.v1.trainer_mode`, and the async modes
with the curriculum dataset. Those are not supported yet: they fetch one prompt per scheduler call,
and verl's checkpoint keeps finished-not-trained groups in TransferQueue, whose rewards the saved
scheduler has already counted, so a resume would count them again.

Settings go under `+data.curriculum` (seed, success_at, scheduler, prior, prior_profile, prior_weight,
and any BandConfig field), as `data.sampler` does for the legacy path (`grpo_data.integrations.verl`).
A response counts as a success when its reward_extra_info `acc` is set, else when its summed
`rm_scores` >= success_at.
"""

from __future__ import annotations

import logging
from collections import defaultdict

import transfer_queue as tq
import verl
from verl.trainer.ppo.v1.replay_buffer import ReplayBuffer, ReplayBufferAsync
from verl.utils.dataset.rl_dataset import RLHFDataset

from grpo_data.integrations.feedback import verdicts
from grpo_data.integrations.verl import dataset_curriculum, problem_key

logger = logging.getLogger(__name__)

TRAIN = "train"


BUFFERS = ("CurriculumReplayBuffer", "CurriculumReplayBufferAsync")
UNHEARD_AFTER = 2  # batches handed out without a reward before the dataset warns
MISSING = object()
READ_FOR = "0.9.1"  # the verl release this module was written against (its V1 trainer changes between releases)


def root_select(config, key: str):
    """`key` in the whole config a `data` node belongs to; MISSING when the node stands alone."""
    if not hasattr(config, "_get_root"):
        return MISSING
    from omegaconf import OmegaConf

    return OmegaConf.select(config._get_root(), key, default=MISSING)


def same_files(a, b) -> bool:
    as_list = lambda x: [str(x)] if isinstance(x, str) else [str(f) for f in x]  # noqa: E731
    return as_list(a) == as_list(b)


class CurriculumDataset(RLHFDataset):
    def __init__(self, data_files, tokenizer, config, processor=None, max_samples: int = -1) -> None:
        super().__init__(data_files=data_files, tokenizer=tokenizer, config=config, processor=processor,
                         max_samples=max_samples)
        self.curriculum = None  # the validation set (verl builds it with the same class)
        self.success_at = 0.5
        self.fetches = self.feeds = 0  # in this process: batches handed out, rewards heard
        if "train_files" in config and not same_files(data_files, config.train_files):
            return
        # verl builds both sets with this class and does not say which is which: told apart by their files
        if "val_files" in config and same_files(config.val_files, config.train_files):
            raise ValueError("data.val_files is data.train_files: with data.custom_cls=CurriculumDataset the two "
                             "sets are told apart by their files; give data.val_files a separate validation file")
        workers = config.get("dataloader_num_workers", 8)
        if workers:
            raise ValueError(f"data.dataloader_num_workers={workers}: with the curriculum it must be 0 (a worker "
                             "process draws from its own copy of the scheduler, which never hears a reward)")
        buffer = root_select(config, "trainer.v1.sampler.custom_sampler.name")
        if buffer is not MISSING and buffer not in BUFFERS:
            raise ValueError(f"data.custom_cls=CurriculumDataset with trainer.v1.sampler.custom_sampler.name={buffer}: "
                             "the scheduler hears rewards only through this module's replay buffer; set "
                             "trainer.v1.sampler.custom_sampler.path=pkg://grpo_data.integrations.verl_v1 and "
                             ".name=CurriculumReplayBuffer")
        self.curriculum, self.success_at = dataset_curriculum(self, config.get("curriculum") or {},
                                                              config.get("seed"), "data.curriculum")

    def __getitems__(self, positions: list[int]) -> list[dict]:
        """One dataloader fetch: the scheduler's next len(positions) rows."""
        if self.curriculum is None:
            return [self[i] for i in positions]
        self.fetches += 1
        if self.fetches == UNHEARD_AFTER + 1 and not self.feeds:
            logger.warning("curriculum: %d batches handed out and no reward heard: the scheduler chooses blind. "
                           "Set trainer.v1.sampler.custom_sampler to grpo_data.integrations.verl_v1."
                           "CurriculumReplayBuffer", UNHEARD_AFTER)
        return [self[int(row)] for row in self.curriculum.next_batch(len(positions))]

    def record_groups(self, ids: list[str], rewards: list, acc: list) -> dict:
        """Finished answers (one entry each, grouped by problem id) into the scheduler."""
        ok = verdicts(rewards, self.success_at)
        ok = [o if a is None else bool(a) for o, a in zip(ok, acc, strict=True)]
        self.feeds += 1
        return self.curriculum.record(ids, ok)

    # StatefulDataLoader saves these into verl's data.pt and restores them as its next iterator starts
    def state_dict(self) -> dict:
        if self.curriculum is None:
            return {}
        cur = self.curriculum
        return {"scheduler": cur.scheduler.state_dict(), **cur.meta()}

    def load_state_dict(self, state: dict) -> None:
        if self.curriculum is None:
            return
        if "scheduler" not in state:
            raise ValueError("verl's data.pt holds no curriculum state (it was written without data.custom_cls="
                             "CurriculumDataset); start a new run, or resume without the curriculum")
        self.curriculum.restore(state["scheduler"], state, "verl's data.pt")


class CurriculumFeed:
    """What both buffers add to verl's: the rewards of every group whose answers all finished go to the
    dataset's scheduler (a failed session leaves its group out), and informative groups come first in
    the selection."""

    def _curriculum_setup(self) -> None:
        self.counted: set[str] = set()  # finished groups already handed to the scheduler
        self.informative: dict[str, bool] = {}  # uid -> answers differ
        self._dataset = None
        self._told_plain = False
        trainer = getattr(self.refill_fn, "__self__", None)  # verl's trainer, which built this buffer
        config = getattr(trainer, "config", None)
        if config is not None:
            refusal = setting_refusal(type(self).__name__, self.trainer_mode, **trainer_settings(config))
            if refusal:
                raise ValueError(refusal)
        if not verl.__version__.startswith(READ_FOR):
            logger.warning("curriculum replay buffer: written against verl %s's V1 trainer, running in verl %s: "
                           "its hooks may have moved", READ_FOR, verl.__version__)

    def curriculum_dataset(self) -> CurriculumDataset | None:
        if self._dataset is None:  # found once the trainer has built its train set; until then, looked up again
            trainer = getattr(self.refill_fn, "__self__", None)
            dataset = getattr(trainer, "train_dataset", None)
            if isinstance(dataset, CurriculumDataset) and dataset.curriculum:
                self._dataset = dataset
            elif dataset is not None and not self._told_plain:
                self._told_plain = True
                logger.info("curriculum replay buffer: the train set is not a CurriculumDataset; only the "
                            "selection (informative groups first) acts")
        return self._dataset

    def _sync_metadata_from_transfer_queue(self):
        super()._sync_metadata_from_transfer_queue()
        self.feed_finished()

    def feed_finished(self) -> dict | None:
        """Groups finished since the last poll: their answers' rewards, read from TransferQueue."""
        live = set().union(*(keys[TRAIN] for keys in (self.pending_keys, self.running_keys, self.finished_keys,
                                                        self.failure_keys)))
        self.counted &= live
        self.informative = {uid: v for uid, v in self.informative.items() if uid in live}
        new = self.finished_keys[TRAIN] - self.counted
        if not new:
            return None
        self.counted |= new
        # one answer per session: keys are {uid}_{session}_{turn}, and every turn carries the final reward
        last: dict[tuple[str, str], tuple[int, str]] = {}
        for key in self.partitions[TRAIN]:
            uid, session, turn = key.split("_")
            if uid in new and int(turn) >= last.get((uid, session), (-1, ""))[0]:
                last[(uid, session)] = (int(turn), key)
        keys = [key for _, key in last.values()]
        if not keys:
            return None
        data = tq.kv_batch_get(keys=keys, partition_id=TRAIN, select_fields=["rm_scores", "extra_info", "extra_fields"])
        rewards, ids, acc = [], [], []
        by_uid: dict[str, set[float]] = defaultdict(set)
        for key, score, info, extra in zip(keys, data["rm_scores"], data["extra_info"], data["extra_fields"],
                                           strict=True):
            reward = float(score.sum().item())
            by_uid[key.split("_")[0]].add(reward)
            extra = getattr(extra, "data", extra)
            rewards.append(reward)
            ids.append(problem_key(getattr(info, "data", info), len(ids)))
            acc.append(((extra or {}).get("reward_extra_info") or {}).get("acc"))
        self.informative.update({uid: len(values) > 1 for uid, values in by_uid.items()})
        dataset = self.curriculum_dataset()
        if dataset is None:
            return None
        counted = dataset.record_groups(ids, rewards, acc)
        logger.info("curriculum: %d groups finished (%d informative)", counted["groups"], counted["informative"])
        return counted

    def _select_prompt_uids(self, partition_id: str, sampleable_keys: set[str], batch_size: int):
        chosen, partition_snapshot, steps = super()._select_prompt_uids(partition_id, sampleable_keys,
                                                                       len(sampleable_keys))
        if partition_id == TRAIN:  # stable: verl's order (oldest first) within each kind
            chosen = sorted(chosen, key=lambda uid: not self.informative.get(uid, True))
        return chosen[:batch_size], partition_snapshot, steps

    def sample(self, global_steps: int, partition_id: str, batch_size: int):
        dataset = self.curriculum_dataset() if partition_id == TRAIN else None
        if dataset is not None and dataset.curriculum.batches_sampled < global_steps:
            # sync mode fetches one batch a step; fewer means verl resumed without restoring the scheduler
            # (StatefulDataLoader skips a dataset whose saved state is None, so the dataset cannot tell)
            raise ValueError(f"verl is at step {global_steps} but the curriculum has chosen "
                             f"{dataset.curriculum.batches_sampled} batches: the checkpoint verl resumed from holds "
                             "no curriculum state (its data.pt was written without data.custom_cls=CurriculumDataset, "
                             "or is missing); start a new run, or resume without the curriculum")
        out = super().sample(global_steps=global_steps, partition_id=partition_id, batch_size=batch_size)
        trainer = getattr(self.refill_fn, "__self__", None)
        last_local = getattr(trainer, "local_trigger_step", 0) == getattr(trainer, "parameter_sync_step", 1) - 1
        if dataset is not None and last_local:  # one scheduler step per global step (its k local updates sample k times)
            dataset.curriculum.tick()
        return out


def trainer_settings(config) -> dict:
    """The few settings of verl's whole config that decide whether the curriculum can work."""
    reward_model = config.reward.reward_model
    custom_cls = config.data.get("custom_cls") or {}
    return {"curriculum_dataset": custom_cls.get("name") == "CurriculumDataset",
            "colocated_reward_model": bool(reward_model.get("enable")) and not reward_model.get("enable_resource_pool"),
            "filter_groups": bool((config.algorithm.get("filter_groups") or {}).get("enable", False)),
            "sync_refill": bool(config.trainer.v1.sampler.get("sync_refill_failed_groups", False))}


def setting_refusal(buffer: str, trainer_mode: str, curriculum_dataset: bool, colocated_reward_model: bool,
                    filter_groups: bool, sync_refill: bool) -> str | None:
    """Why these verl settings cannot run with this buffer (None when they can), saying what to change."""
    if colocated_reward_model:
        return ("reward.reward_model.enable=True without reward.reward_model.enable_resource_pool=True: a colocated "
                "reward model scores the groups only after the replay buffer has sampled them, so the curriculum "
                "buffer has no rewards to read; give the reward model its own pool (enable_resource_pool=True) or "
                "use a rule-based reward")
    if filter_groups or sync_refill:
        name = "algorithm.filter_groups.enable" if filter_groups else "trainer.v1.sampler.sync_refill_failed_groups"
        return (f"{name}=True with the curriculum replay buffer: verl hands that filter only to its own buffer, "
                "and still fetches one prompt at a time for it (data.gen_batch_size=1); set it to False")
    if curriculum_dataset and trainer_mode != "sync":
        return (f"trainer.v1.trainer_mode={trainer_mode} with data.custom_cls=CurriculumDataset: the async modes "
                "are not supported yet (they fetch one prompt per scheduler call, and a resume counts again the "
                "rewards of groups finished before the checkpoint); use trainer.v1.trainer_mode=sync")
    wanted = "CurriculumReplayBuffer" if trainer_mode == "sync" else "CurriculumReplayBufferAsync"
    if buffer != wanted:
        return (f"trainer.v1.sampler.custom_sampler.name={buffer} with trainer.v1.trainer_mode={trainer_mode}: "
                f"verl builds its own {'sync' if trainer_mode == 'sync' else 'async'} buffer for this mode; "
                f"set it to {wanted}")
    return None


class CurriculumReplayBuffer(CurriculumFeed, ReplayBuffer):
    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self._curriculum_setup()


class CurriculumReplayBufferAsync(CurriculumFeed, ReplayBufferAsync):
    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self._curriculum_setup()
