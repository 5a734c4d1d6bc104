"""The band scheduler inside verl 0.9's V1 trainer (`trainer.use_v1=true`, the default): it chooses
which prompts get generated, and learns from the rewards of every finished group.

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
  is restored on resume, inside an epoch and at its boundary. Over `data.val_files` it is RLHFDataset.
- `CurriculumReplayBuffer` (verl's sync ReplayBuffer; `CurriculumReplayBufferAsync` for the async
  modes): each poll hands the groups that finished since the last one to the dataset's scheduler, one
  verdict per answer, before verl selects among them; one scheduler step per sampled batch. Its
  selection puts groups whose answers differ ahead of all-equal ones (then verl's order: oldest
  first). Choosing among finished groups saves training steps on no-signal groups, not generation;
  it only has a choice where more groups are finished than a batch takes (the async modes' warm-up
  batches), and with a plain dataset it is the only part that acts.

The buffer finds the dataset through the trainer that built it (its `refill_fn` is the trainer's
bound `_add_prompts_to_generate`, and the trainer keeps `train_dataset`). A custom replay buffer
does not get verl's `algorithm.filter_groups` (DAPO) settings; that filter stays with verl's own buffer.

Settings go under `+data.curriculum` (seed, success_at, scheduler, prior, prior_profile, prior_weight,
and any BandConfig field), as `data.sampler` does for the legacy path (`grpo_data.integrations.verl`).
A response counts as a success when its reward_extra_info `acc` is set, else when its summed
`rm_scores` >= success_at.
"""

from __future__ import annotations

import logging
from collections import defaultdict

import transfer_queue as tq
from verl.trainer.ppo.v1.replay_buffer import ReplayBuffer, ReplayBufferAsync
from verl.utils.dataset.rl_dataset import RLHFDataset

from grpo_data.integrations.feedback import verdicts
from grpo_data.integrations.verl import dataset_curriculum, problem_key

logger = logging.getLogger(__name__)

TRAIN = "train"


def same_files(a, b) -> bool:
    as_list = lambda x: [str(x)] if isinstance(x, str) else [str(f) for f in x]  # noqa: E731
    return as_list(a) == as_list(b)


class CurriculumDataset(RLHFDataset):
    def __init__(self, data_files, tokenizer, config, processor=None, max_samples: int = -1) -> None:
        super().__init__(data_files=data_files, tokenizer=tokenizer, config=config, processor=processor,
                         max_samples=max_samples)
        self.curriculum = None  # the validation set (verl builds it with the same class)
        self.success_at = 0.5
        if "train_files" in config and not same_files(data_files, config.train_files):
            return
        workers = config.get("dataloader_num_workers", 8)
        if workers:
            raise ValueError(f"data.dataloader_num_workers={workers}: with the curriculum it must be 0 (a worker "
                             "process draws from its own copy of the scheduler, which never hears a reward)")
        self.curriculum, self.success_at = dataset_curriculum(self, config.get("curriculum") or {},
                                                              config.get("seed"), "data.curriculum")

    def __getitems__(self, positions: list[int]) -> list[dict]:
        """One dataloader fetch: the scheduler's next len(positions) rows."""
        if self.curriculum is None:
            return [self[i] for i in positions]
        return [self[int(row)] for row in self.curriculum.next_batch(len(positions))]

    def record_groups(self, ids: list[str], rewards: list, acc: list) -> dict:
        """Finished answers (one entry each, grouped by problem id) into the scheduler."""
        ok = verdicts(rewards, self.success_at)
        ok = [o if a is None else bool(a) for o, a in zip(ok, acc, strict=True)]
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
    """What both buffers add to verl's: every finished group's rewards to the dataset's scheduler,
    informative groups first in the selection."""

    def _curriculum_setup(self) -> None:
        self.counted: set[str] = set()  # finished groups already handed to the scheduler
        self.informative: dict[str, bool] = {}  # uid -> answers differ
        self._dataset = None

    def curriculum_dataset(self) -> CurriculumDataset | None:
        if self._dataset is None:
            trainer = getattr(self.refill_fn, "__self__", None)
            dataset = getattr(trainer, "train_dataset", None)
            self._dataset = dataset if isinstance(dataset, CurriculumDataset) and dataset.curriculum else False
            if not self._dataset:
                logger.info("curriculum replay buffer: the train set is not a CurriculumDataset; only the "
                            "selection (informative groups first) acts")
        return self._dataset or None

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
        out = super().sample(global_steps=global_steps, partition_id=partition_id, batch_size=batch_size)
        dataset = self.curriculum_dataset() if partition_id == TRAIN else None
        if dataset is not None:  # one scheduler step per batch the actor trains on
            dataset.curriculum.tick()
        return out


class CurriculumReplayBuffer(CurriculumFeed, ReplayBuffer):
    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self._curriculum_setup()


class CurriculumReplayBufferAsync(CurriculumFeed, ReplayBufferAsync):
    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self._curriculum_setup()
