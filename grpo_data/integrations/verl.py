"""The band scheduler as verl's training sampler: it chooses each batch's prompts and learns from
verl's rewards.

What verl allows, by version (read in each release's source):
- 0.5.0 - 0.7.1: a curriculum sampler from config. `create_rl_sampler` loads `data.sampler.class_path`
  / `class_name` as `cls(data_source=dataset, data_config=config.data)`, and `RayPPOTrainer.fit` calls
  `sampler.update(batch=batch)` after every step with the scored batch. Config lines only:

      data.sampler.class_path=pkg://grpo_data.integrations.verl data.sampler.class_name=CurriculumSampler
      data.dataloader_num_workers=0   (verl asserts it: a worker would prefetch before update)

- 0.8.0 - 0.9.1: the config hook and the `update` call are gone; `RayPPOTrainer(train_sampler=...)`
  still takes any sampler, but nothing hands it rewards. `curriculum_task_runner()` is verl's legacy
  TaskRunner (the `trainer.use_v1=False` path) with two changes made inside its Ray actor: the
  sampler is this one, and the trainer's `_update_actor` first hands the scored batch to it. Driver:

      from verl.trainer.main_ppo import run_ppo
      from grpo_data.integrations.verl import curriculum_task_runner
      @hydra.main(config_path=<verl>/trainer/config, config_name="ppo_trainer", version_base=None)
      def main(config):
          run_ppo(config, task_runner_class=curriculum_task_runner())

  (The v1 trainer's `custom_sampler` is a replay buffer over already-generated groups: it picks
  among rollouts, not which prompts to roll out, so it is not this.)

Settings go under `data.sampler` (seed, success_at, scheduler, and any BandConfig field such as lo,
hi, decay). The prior and difficulty groups come from `extra_info` {id, n_correct, k, level}, as
`grpo shards --format verl` writes it. A response counts as a success when the reward manager's
`acc` is true, else when its summed `token_level_scores` >= success_at (0.5: 0/1 and -1/+1 rewards).

The scheduler's state rides in verl's own checkpoint: StatefulDataLoader saves `state_dict()` of a
stateful sampler into `data.pt` and restores it on resume, so the next batch is the one the
uninterrupted run would have chosen.

Installing: verl's configs need omegaconf 2.3, which pins the ANTLR runtime 4.9, while this
project's math-verify pin uses 4.13.2 (the two cannot share one environment: `import omegaconf` fails
under 4.13). In verl's environment this module needs only numpy and polars from this project.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from grpo_data.integrations.feedback import Curriculum, MissingIdError, verdicts

logger = logging.getLogger(__name__)

try:  # verl 0.5.0 - 0.7.1: the trainer calls update(batch) on samplers of this type
    from verl.experimental.dataset.sampler import AbstractCurriculumSampler as _SamplerBase

    NATIVE_UPDATE = True
except ImportError:  # verl >= 0.8 (or no verl: the sampler still works as a torch Sampler)
    from torch.utils.data import Sampler as _SamplerBase

    NATIVE_UPDATE = False

RESERVED = ("class_path", "class_name")


def problem_key(info: Mapping | None, row: int) -> str:
    """The problem id in a row's extra_info (`id`, else `index`)."""
    info = info or {}
    for key in ("id", "index"):
        if info.get(key) is not None:
            return str(info[key])
    raise MissingIdError(f"row {row}: extra_info has neither `id` nor `index`; the scheduler maps rewards back by "
                         "them (grpo shards --format verl writes both)")


def extra_infos(dataset) -> list:
    frame = getattr(dataset, "dataframe", None)  # verl's RLHFDataset keeps its rows in a datasets.Dataset
    if frame is not None and "extra_info" in getattr(frame, "column_names", ()):
        return list(frame["extra_info"])
    return [dataset[i].get("extra_info") for i in range(len(dataset))]


class CurriculumSampler(_SamplerBase):
    def __init__(self, data_source, data_config) -> None:
        opts = {k: v for k, v in dict(data_config.get("sampler") or {}).items() if k not in RESERVED}
        seed = opts.pop("seed", None)
        seed = int(seed if seed is not None else data_config.get("seed") or 0)
        self.success_at = float(opts.pop("success_at", 0.5))
        scheduler = str(opts.pop("scheduler", "band"))
        self.batch = int(data_config.get("gen_batch_size") or data_config.get("train_batch_size"))
        infos = extra_infos(data_source)
        ids = [problem_key(info, i) for i, info in enumerate(infos)]

        def field(name):
            values = [(info or {}).get(name) for info in infos]
            return values if any(v is not None for v in values) else None

        self.curriculum = Curriculum.from_columns(ids, field("n_correct"), field("k"), field("level"),
                                                  scheduler=scheduler, seed=seed, **opts)
        self.n = len(infos)
        if self.n < self.batch:
            raise ValueError(f"a batch needs {self.batch} prompts; the dataset has {self.n}")
        self.pos = 0  # batches handed out in the current pass
        self.last_counted: dict = {}

    def __iter__(self):
        for _ in range(self.pos, self.n // self.batch):
            rows = self.curriculum.next_batch(self.batch)
            self.pos += 1
            yield from rows.tolist()
        self.pos = 0

    def __len__(self) -> int:
        return self.n

    def update(self, batch) -> None:
        """One scored training batch (verl's DataProto: responses repeated rollout.n times)."""
        nt = batch.non_tensor_batch
        ids = [problem_key(info, i) for i, info in enumerate(nt["extra_info"])]
        if "acc" in nt:
            ok = [None if a is None else bool(a) for a in nt["acc"]]
        else:
            ok = verdicts(batch.batch["token_level_scores"].sum(-1).tolist(), self.success_at)
        self.last_counted = self.curriculum.record(ids, ok)
        self.curriculum.tick()
        st = self.curriculum.stats()
        logger.info("curriculum: %d groups (%d informative), band [%.2f, %.2f], lag %d", self.last_counted["groups"],
                    self.last_counted["informative"], st.get("band_lo", 0), st.get("band_hi", 1), st["lag_batches"])

    # StatefulDataLoader saves and restores these with verl's checkpoint (data.pt)
    def state_dict(self) -> dict:
        cur = self.curriculum
        return {"scheduler": cur.scheduler.state_dict(), "pos": self.pos,
                "counters": [cur.batches_sampled, cur.batches_scored, cur.groups_seen, cur.informative_seen]}

    def load_state_dict(self, state: dict) -> None:
        cur = self.curriculum
        cur.scheduler.load_state_dict(state["scheduler"], origin="verl dataloader state")
        self.pos = int(state["pos"])
        cur.batches_sampled, cur.batches_scored, cur.groups_seen, cur.informative_seen = state["counters"]


def with_curriculum_feedback(trainer_cls: type) -> type:
    """`trainer_cls` (verl >= 0.8's RayPPOTrainer) whose `_update_actor` first hands the scored
    batch to a CurriculumSampler (verl 0.5-0.7.1 does this itself; then this changes nothing)."""

    class CurriculumPPOTrainer(trainer_cls):
        def _update_actor(self, batch):
            sampler = getattr(self.train_dataloader, "sampler", None)
            if isinstance(sampler, CurriculumSampler) and not NATIVE_UPDATE:
                sampler.update(batch)
            return super()._update_actor(batch)

    CurriculumPPOTrainer.__name__ = f"Curriculum{trainer_cls.__name__}"
    return CurriculumPPOTrainer


def install_into_legacy_runner() -> None:
    """Inside the TaskRunner's process: verl's legacy runner builds its sampler and trainer from
    these two module names, so it builds ours."""
    import verl.trainer.main_ppo_v0 as v0

    if not getattr(v0.RayPPOTrainer, "_curriculum", False):
        trainer = with_curriculum_feedback(v0.RayPPOTrainer)
        trainer._curriculum = True
        v0.RayPPOTrainer = trainer
    v0.create_rl_sampler = lambda data_config, dataset: CurriculumSampler(dataset, data_config)


def curriculum_task_runner():
    """verl 0.8-0.9.1's legacy TaskRunner (a Ray actor class) that trains with the curriculum."""
    import ray
    from verl.trainer.main_ppo_v0 import TaskRunner

    base = TaskRunner.__ray_metadata__.modified_class.__ray_actor_class__

    class CurriculumTaskRunner(base):
        def run(self, config):
            install_into_legacy_runner()
            return super().run(config)

    return ray.remote(CurriculumTaskRunner)
