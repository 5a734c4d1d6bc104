"""The band scheduler as verl's training sampler: it chooses each batch's prompts and learns from
verl's rewards.

What verl allows, by version (read in each release's source):
- 0.5.0 - 0.7.1: a curriculum sampler from config. `create_rl_sampler` loads `data.sampler.class_path`
  / `class_name` as `cls(data_source=dataset, data_config=config.data)`, and `RayPPOTrainer.fit` calls
  `sampler.update(batch=batch)` after every step with the scored batch. Config lines only:

      data.sampler.class_path=pkg://grpo_data.integrations.verl data.sampler.class_name=CurriculumSampler
      data.dataloader_num_workers=0   (verl asserts it: a worker would prefetch before update)

  verl writes a step's checkpoint before that step's `update`: the sampler then writes its state
  after the update to `global_step_N/curriculum.pt` (under trainer.default_local_dir, or
  `data.sampler.checkpoint_dir`), and a resume prefers it (from trainer.resume_from_path with
  resume_mode=resume_path), so no step's rewards are lost. It is taken only when it is the same run's
  data.pt state one update on; a checkpoint first removes any curriculum.pt at its step.
- 0.9.0 - 0.9.1: the config hook and the `update` call are gone (0.8.0 removed them);
  `RayPPOTrainer(train_sampler=...)` still takes any sampler, but nothing hands it rewards.
  `run_with_curriculum(config)` runs verl's legacy TaskRunner (`main_ppo_v0`, the
  `trainer.use_v1=False` path) with changes made inside its Ray actor: the sampler is this one, and
  the trainer's `_update_actor` first hands the scored batch to it, and its checkpoints carry the
  scheduler in `global_step_N/curriculum.pt` (verl does not restore its dataloader state at an epoch
  boundary). Driver: see docs/guides/verl.md.
- 0.9 V1 trainer (the default): `grpo_data.integrations.verl_v1`, through its dataset and replay
  buffer hooks.
- Not supported: 0.8.0's runner (its TaskRunner lives elsewhere), and recipes with their own `fit`
  (DAPO's legacy `filter_groups` trainer never hands batches to a sampler, and sees only the groups
  it kept).

Settings go under `data.sampler` (seed, success_at, scheduler, and any BandConfig field such as lo,
hi, decay). A dry band fills by informativeness at G answers per prompt: G is learned from the first
scored batch (`rollout.n`), or set `data.sampler.group_size`. The prior and difficulty groups come
from `extra_info` {id, n_correct, k, level, and prior_rate/prior_k with `--prior`}, as `grpo shards
--format verl` writes it. `+data.sampler.prior=SPEC` reads another model's published difficulty from
the dataset's own columns instead (`grpo_data.curriculum.priors`: e.g. skywork_7b for Skywork-OR1's
extra_info.model_difficulty, or FIELD:SCALE:SAMPLES), or `+data.sampler.prior_profile=PATH` an earlier
profile of another checkpoint or model joined by id (`grpo_data.curriculum.prior_profile`; one of the two), at
most `+data.sampler.prior_weight=K` (4) pseudo-samples a problem; the band scheduler only. (verl's `data.sampler` holds only class_path
and class_name: every other key is added with Hydra's `+`.) A response counts as a success when the reward manager's
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
import os
from collections.abc import Mapping

from grpo_data.curriculum.prior_profile import one_source, read_profile_prior
from grpo_data.curriculum.priors import (
    Columns,
    PriorError,
    dataset_columns,
    prior_weight,
    read_prior,
    record_columns,
    stored_prior,
)
from grpo_data.curriculum.scheduler import PRIOR_SCHEDULERS, prior_refusal
from grpo_data.integrations.feedback import Curriculum, MissingColumnError, set_prior, verdicts

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
    raise MissingColumnError(f"row {row}: extra_info has neither `id` nor `index`; the scheduler maps rewards back by "
                         "them (grpo shards --format verl writes both)")


def dataset_fields(dataset) -> Columns:
    """The dataset's top-level columns (`extra_info`, `data_source`, ...) for a prior to read."""
    frame = getattr(dataset, "dataframe", None)
    if frame is not None and hasattr(frame, "column_names"):
        return dataset_columns(frame, "the verl dataset")
    return record_columns([dataset[i] for i in range(len(dataset))], "the verl dataset")


def extra_infos(dataset) -> list:
    frame = getattr(dataset, "dataframe", None)  # verl's RLHFDataset keeps its rows in a datasets.Dataset
    if frame is not None and "extra_info" in getattr(frame, "column_names", ()):
        return list(frame["extra_info"])
    return [dataset[i].get("extra_info") for i in range(len(dataset))]


def dataset_curriculum(dataset, settings: Mapping, default_seed, prefix: str) -> tuple[Curriculum, float]:
    """The Curriculum over a verl dataset's rows (ids, offline counts, levels and prior from each row's
    extra_info) and the success threshold, from the plug-in's settings (`prefix` names where they sit
    in verl's config: data.sampler for the legacy sampler, data.curriculum for the V1 dataset)."""
    opts = {k: v for k, v in dict(settings or {}).items() if k not in RESERVED}
    seed = opts.pop("seed", None)
    seed = int(seed if seed is not None else default_seed or 0)
    success_at = float(opts.pop("success_at", 0.5))
    scheduler = str(opts.pop("scheduler", "band"))
    opts.pop("checkpoint_dir", None)  # where the legacy sampler writes its after-update state, not a scheduler setting
    spec, profile = opts.pop("prior", None), opts.pop("prior_profile", None)
    one_source(spec, profile, (f"{prefix}.prior", f"{prefix}.prior_profile"))
    weight = prior_weight(spec or profile, opts.pop("prior_weight", None),
                          (f"{prefix}.prior or {prefix}.prior_profile", f"{prefix}.prior_weight"))
    infos = extra_infos(dataset)
    ids = [problem_key(info, i) for i, info in enumerate(infos)]

    def field(name):
        values = [(info or {}).get(name) for info in infos]
        return values if any(v is not None for v in values) else None

    if spec or profile:
        if scheduler not in PRIOR_SCHEDULERS:
            raise PriorError(prior_refusal(scheduler, f"{prefix}.prior" + ("_profile" if profile else "")))
        prior = (read_profile_prior(str(profile), ids, weight, where="the dataset") if profile
                 else read_prior(str(spec), dataset_fields(dataset), weight, ids=ids))
    else:  # a `grpo shards --prior` set's pseudo-counts, when it has them (and the scheduler uses them)
        rate, pseudo_k = field("prior_rate"), field("prior_k")
        prior = set_prior(stored_prior(rate, pseudo_k), scheduler) if rate is not None and pseudo_k is not None else None
    cur = Curriculum.from_columns(ids, field("n_correct"), field("k"), field("level"),
                                  scheduler=scheduler, seed=seed, prior=prior, **opts)
    return cur, success_at


class CurriculumSampler(_SamplerBase):
    def __init__(self, data_source, data_config) -> None:
        settings = data_config.get("sampler") or {}
        self.curriculum, self.success_at = dataset_curriculum(data_source, settings, data_config.get("seed"),
                                                              "data.sampler")
        self.batch = int(data_config.get("gen_batch_size") or data_config.get("train_batch_size"))
        self.n = len(self.curriculum.ids)
        if self.n < self.batch:
            raise ValueError(f"a batch needs {self.batch} prompts; the dataset has {self.n}")
        self.pos = 0  # batches handed out in the current pass
        self.last_counted: dict = {}
        # verl 0.5-0.7.1 saves data.pt before the step's update: the state after it goes beside data.pt
        self.checkpoint_dir = checkpoint_dir(data_config) if NATIVE_UPDATE else None
        self.resume_folder = resume_folder(data_config) if NATIVE_UPDATE else None
        if NATIVE_UPDATE and self.checkpoint_dir is None:
            logger.warning("curriculum: no checkpoint folder (trainer.default_local_dir or data.sampler.checkpoint_dir) "
                           "found: a resumed run will lack the rewards of its checkpoint's step")
        self.saved_before_update = False
        # which run wrote a state: a curriculum.pt is accepted only beside the data.pt of its own run
        self.run_id = os.urandom(8).hex()

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
        if self.saved_before_update:  # verl 0.5-0.7.1 just checkpointed this step without its rewards
            self.saved_before_update = False
            if self.checkpoint_dir is not None:
                write_state(self.state(), os.path.join(self.checkpoint_dir, f"global_step_{self.global_step()}"))

    def global_step(self) -> int:
        """verl's global step of the batch last handed out: one batch a step, from step 1."""
        return self.curriculum.batches_sampled

    # StatefulDataLoader saves and restores these with verl's checkpoint (data.pt)
    def state_dict(self) -> dict:
        self.saved_before_update = NATIVE_UPDATE
        if NATIVE_UPDATE and self.checkpoint_dir is not None:  # verl writes this step's data.pt next: a
            # curriculum.pt already there is another run's, and must not pass for this one's after-update state
            stale = os.path.join(self.checkpoint_dir, f"global_step_{self.global_step()}", STATE_FILE)
            if os.path.exists(stale):
                os.remove(stale)
        return self.state()

    def state(self) -> dict:
        cur = self.curriculum
        return {"scheduler": cur.scheduler.state_dict(), "pos": self.pos, "global_step": self.global_step(),
                "run_id": self.run_id, **cur.meta()}

    def load_state_dict(self, state: dict, origin: str = "verl dataloader state") -> None:
        if "scheduler" not in state:
            raise ValueError(f"{origin} holds no curriculum state (it was written without the curriculum sampler); "
                             "start a new run, or resume without data.sampler")
        after = self.after_update_state(state)
        if after is not None:
            state, origin = after
        self.curriculum.restore(state["scheduler"], state, origin)
        self.run_id = state.get("run_id") or self.run_id
        pos = int(state["pos"])
        self.pos = pos if pos < self.n // self.batch else 0  # a finished pass: the next starts from its top

    def after_update_state(self, state: dict) -> tuple[dict, str] | None:
        """verl 0.5-0.7.1: the state written after the checkpointed step's update (its rewards
        counted), when the run got that far; else None, and the checkpoint's own state lacks that step."""
        if not NATIVE_UPDATE or "global_step" not in state:
            return None
        step = state["global_step"]
        if self.resume_folder is not None:  # trainer.resume_mode=resume_path: the folder verl loads data.pt from
            folder = self.resume_folder
        elif self.checkpoint_dir is not None:
            folder = os.path.join(self.checkpoint_dir, f"global_step_{step}")
        else:
            logger.warning("curriculum: no checkpoint folder known (trainer.default_local_dir or "
                           "data.sampler.checkpoint_dir): resuming without the rewards of step %s", step)
            return None
        path = os.path.join(folder, STATE_FILE)
        if not os.path.exists(path):
            logger.warning("curriculum: %s does not exist (the run stopped between the checkpoint and the step's "
                           "update): resuming without the rewards of step %s", path, step)
            return None
        import torch

        after = torch.load(path, weights_only=False)
        mismatch = after_update_mismatch(state, after)
        if mismatch:
            logger.warning("curriculum: %s is not the state after this checkpoint's step (%s; another run wrote it): "
                           "ignored, resuming without the rewards of step %s", path, mismatch, step)
            return None
        return after, path


def after_update_mismatch(before: dict, after: dict) -> str | None:
    """Why `after` is not `before` (a checkpoint's data.pt state) moved on by that step's update alone:
    the same run, step, dataset, batches handed out and pass position, one more batch scored."""
    for key in ("run_id", "global_step", "ids_hash", "batches_sampled", "pos"):
        if after.get(key) != before.get(key):
            return f"{key} {after.get(key)}, the dataloader state's {before.get(key)}"
    if after.get("batches_scored") != before.get("batches_scored", 0) + 1:
        return f"batches_scored {after.get('batches_scored')}, the dataloader state's {before.get('batches_scored')} + 1"
    return None


STATE_FILE = "curriculum.pt"


def checkpoint_dir(data_config) -> str | None:
    """Where verl writes global_step_N: `data.sampler.checkpoint_dir`, else the trainer's
    default_local_dir read through the config `data` belongs to (None when it stands alone)."""
    folder = (data_config.get("sampler") or {}).get("checkpoint_dir")
    if folder is None and hasattr(data_config, "_get_root"):  # an OmegaConf node knows its root config
        from omegaconf import OmegaConf

        folder = OmegaConf.select(data_config._get_root(), "trainer.default_local_dir", default=None)
    return None if folder is None else str(folder)


def resume_folder(data_config) -> str | None:
    """The global_step_N folder verl resumes from when `trainer.resume_mode=resume_path`, else None
    (auto: the latest under checkpoint_dir)."""
    if not hasattr(data_config, "_get_root"):
        return None
    from omegaconf import OmegaConf

    root = data_config._get_root()
    path = OmegaConf.select(root, "trainer.resume_from_path", default=None)
    if OmegaConf.select(root, "trainer.resume_mode", default="auto") != "resume_path" or not path:
        return None
    return os.path.join(os.getcwd(), str(path))  # as verl: a relative path is under the working directory


def write_state(state: dict, folder: str) -> None:
    """The sampler's state as global_step_N/curriculum.pt, written whole or not at all."""
    import torch

    os.makedirs(folder, exist_ok=True)
    tmp = os.path.join(folder, f".{STATE_FILE}.tmp")
    with open(tmp, "wb") as fh:
        torch.save(state, fh)
        fh.flush()
        os.fsync(fh.fileno())  # on disk before the rename makes it the state a resume reads
    os.replace(tmp, os.path.join(folder, STATE_FILE))


def with_curriculum_feedback(trainer_cls: type) -> type:
    """`trainer_cls` (verl 0.9's RayPPOTrainer) whose `_update_actor` first hands the scored batch to
    a CurriculumSampler, and whose checkpoints carry its state (verl 0.5-0.7.1 feeds the sampler
    itself; then the feeding here does nothing)."""

    class CurriculumPPOTrainer(trainer_cls):
        def _curriculum_sampler(self):
            sampler = getattr(getattr(self, "train_dataloader", None), "sampler", None)
            return sampler if isinstance(sampler, CurriculumSampler) else None

        def _update_actor(self, batch):
            sampler = self._curriculum_sampler()
            if sampler is not None and not NATIVE_UPDATE:
                sampler.update(batch)
            return super()._update_actor(batch)

        def _save_checkpoint(self):
            sampler = self._curriculum_sampler()
            if sampler is not None:  # first: verl marks the checkpoint complete as it finishes
                folder = os.path.join(self.config.trainer.default_local_dir, f"global_step_{self.global_steps}")
                write_state({**sampler.state(), "global_step": self.global_steps}, folder)
            return super()._save_checkpoint()

        def _load_checkpoint(self):
            out = super()._load_checkpoint()
            sampler = self._curriculum_sampler()
            if sampler is not None and self.global_steps > 0:
                import torch

                trainer_cfg = self.config.trainer
                if trainer_cfg.get("resume_mode", "auto") == "resume_path":  # the folder verl resumed from
                    folder = os.path.join(os.getcwd(), trainer_cfg.resume_from_path)
                else:  # auto: the latest checkpoint, which verl just loaded
                    folder = os.path.join(trainer_cfg.default_local_dir, f"global_step_{self.global_steps}")
                path = os.path.join(folder, STATE_FILE)
                if not os.path.exists(path):
                    raise FileNotFoundError(f"resuming at step {self.global_steps}, but {path} does not exist: the "
                                            "checkpoint was written without the curriculum")
                state = torch.load(path, weights_only=False)
                if state.get("global_step") != self.global_steps:
                    raise ValueError(f"{path} is from step {state.get('global_step')}, verl resumed at step "
                                     f"{self.global_steps}")
                sampler.load_state_dict(state, origin=path)
            return out

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
    v0.create_rl_sampler = legacy_sampler


def legacy_sampler(data_config, dataset) -> CurriculumSampler:
    workers = data_config.get("dataloader_num_workers", 8)
    if workers:
        raise ValueError(f"data.dataloader_num_workers={workers}: with the curriculum it must be 0 (a worker "
                         "prefetches batches before the previous ones' rewards reach the sampler)")
    return CurriculumSampler(dataset, data_config)


def curriculum_task_runner():
    """verl 0.9's legacy TaskRunner (a Ray actor class) that trains with the curriculum."""
    import ray
    from verl.trainer.main_ppo_v0 import TaskRunner

    base = TaskRunner.__ray_metadata__.modified_class.__ray_actor_class__

    class CurriculumTaskRunner(base):
        def run(self, config):
            install_into_legacy_runner()
            return super().run(config)

    return ray.remote(CurriculumTaskRunner)


def run_with_curriculum(config) -> None:
    """What verl 0.9's `main_ppo.main` does for the legacy trainer, with the curriculum's TaskRunner."""
    from verl.trainer.main_ppo import run_ppo
    from verl.trainer.ppo.utils import need_critic, need_reference_policy
    from verl.utils.config import validate_config
    from verl.utils.device import auto_set_device

    if config.trainer.get("use_v1", False):
        raise ValueError("trainer.use_v1=True: run_with_curriculum drives verl's legacy trainer; for V1 use verl's own "
                         "main_ppo with data.custom_cls and trainer.v1.sampler.custom_sampler from "
                         "grpo_data.integrations.verl_v1 (docs/guides/verl.md), or set trainer.use_v1=False")
    auto_set_device(config)
    validate_config(config=config, use_reference_policy=need_reference_policy(config), use_critic=need_critic(config))
    run_ppo(config, task_runner_class=curriculum_task_runner())
