"""Drives grpo_data.integrations.verl the way a verl release does, without Ray or GPU workers.

Run by tests/test_integrations_verl.py in a process whose path holds one verl release (and its
omegaconf / ANTLR 4.9, which cannot share this project's environment):

    python tests/verl_driver.py TOKENIZER_DIR OUT.json SHARD.parquet...

It builds verl's own RLHFDataset and gets the sampler through the release's own hook (0.7.1: its
`create_rl_sampler` reading `data.sampler.class_path`; 0.9: the curriculum TaskRunner's `run`, which
installs its sampler and trainer into the legacy runner's names). The dataloader comes from
`RayPPOTrainer._create_dataloader`. Then it replays fit()'s per-step order:
- `DataProto.from_single_dict`, `repeat(n, interleave=True)` and scores, half of each group right;
- the feedback call (0.7.1: checkpoint, then `sampler.update`; 0.9: `_update_actor`, then checkpoint);
- each epoch a fresh pass over the dataloader.
Only what needs workers is stubbed: the actor update, and the model part of saving and loading.
Checkpoints are written and resumed the way each release does them, at a step inside an epoch and
at an epoch boundary, where 0.9 does not restore its dataloader. On 0.7.1 the sampler writes its
after-update state beside data.pt (trainer.default_local_dir, read through the config), so neither
resume loses the checkpointed step's rewards.
"""

from __future__ import annotations

import json
import os
import sys

import torch

N_RESP, BATCH, STEPS = 4, 4, 7  # 16 problems: 4 steps an epoch


def main() -> None:
    tokenizer_dir, out_path, files = sys.argv[1], sys.argv[2], sys.argv[3:]
    import ray
    import verl
    from omegaconf import OmegaConf
    from transformers import AutoTokenizer
    from verl import DataProto
    from verl.trainer.ppo.ray_trainer import RayPPOTrainer
    from verl.utils.dataset.rl_dataset import RLHFDataset, collate_fn

    from grpo_data.integrations import verl as integration

    work = out_path + ".ckpt"
    cfg = OmegaConf.create({
        "data": {"train_batch_size": BATCH, "val_batch_size": None, "dataloader_num_workers": 0, "shuffle": True,
                 "seed": 0, "prompt_key": "prompt", "max_prompt_length": 512, "filter_overlong_prompts": False,
                 "return_raw_chat": True, "truncation": "error", "validation_shuffle": False,
                 "sampler": {"class_path": "pkg://grpo_data.integrations.verl", "class_name": "CurriculumSampler",
                             "decay": 1.0, "share": False}},
        "trainer": {"total_epochs": 2, "total_training_steps": None, "default_local_dir": work,
                    "resume_from_path": None},
    })
    tok = AutoTokenizer.from_pretrained(tokenizer_dir)
    out: dict = {"verl": verl.__version__, "native_update": integration.NATIVE_UPDATE}

    # the workers' part of verl's trainer, not run here
    RayPPOTrainer._update_actor = lambda self, b: "actor updated"

    def save_checkpoint(self):  # as verl: the dataloader's state into global_step_N/data.pt
        folder = os.path.join(work, f"global_step_{self.global_steps}")
        os.makedirs(folder, exist_ok=True)
        torch.save(self.train_dataloader.state_dict(), os.path.join(folder, "data.pt"))

    def load_checkpoint(self):  # as verl 0.9: no dataloader restore at an epoch boundary
        self.global_steps = self.resume_step
        if self.global_steps % len(self.train_dataloader) != 0:
            path = os.path.join(work, f"global_step_{self.global_steps}", "data.pt")
            self.train_dataloader.load_state_dict(torch.load(path, weights_only=False))

    RayPPOTrainer._save_checkpoint = save_checkpoint
    RayPPOTrainer._load_checkpoint = load_checkpoint

    if not integration.NATIVE_UPDATE:  # 0.9: through the curriculum TaskRunner's run()
        import verl.trainer.main_ppo_v0 as v0

        runner = integration.curriculum_task_runner()
        actor_cls = runner.__ray_metadata__.modified_class
        ray.cloudpickle.dumps(actor_cls)  # Ray ships the class to the actor's process like this
        base = actor_cls.__ray_actor_class__.__mro__[1]  # verl's own TaskRunner
        base.run = lambda self, config: (v0.create_rl_sampler, v0.RayPPOTrainer)  # stands for the runner's body
        ours = actor_cls.__ray_actor_class__
        make_sampler, trainer_cls = ours.run(object.__new__(ours), cfg)
        out["runner_is_actor_class"] = hasattr(runner, "remote")
        out["ray_started"] = ray.is_initialized()
        bad = cfg.copy()
        bad.data.dataloader_num_workers = 8
        try:
            make_sampler(bad.data, None)
        except ValueError as exc:
            out["workers_error"] = str(exc)
    else:
        from verl.trainer.main_ppo import create_rl_sampler as make_sampler

        trainer_cls = RayPPOTrainer

    def build(conf=cfg):
        dataset = RLHFDataset(data_files=files, tokenizer=tok, config=conf.data, processor=None)
        sampler = make_sampler(conf.data, dataset)
        trainer = object.__new__(trainer_cls)
        trainer.config = conf.copy()
        RayPPOTrainer._create_dataloader(trainer, dataset, dataset, collate_fn, sampler)
        return trainer, sampler

    def fit(trainer, sampler, start: int, checkpoints=(), stop=STEPS, before_update=None,
            at_start=None) -> list[list[str]]:
        """verl's fit loop from global step `start`: a pass over the dataloader per epoch. `at_start`
        gets the posterior as the first batch arrives (a StatefulDataLoader applies a loaded state
        when its iterator starts)."""
        trained, step = [], start
        while step < stop:
            for batch_dict in trainer.train_dataloader:
                if at_start is not None and step == start:
                    at_start.append(sampler.curriculum.scheduler.successes.tolist())
                step += 1
                trainer.global_steps = step
                data = DataProto.from_single_dict(batch_dict)
                trained.append([info["id"] for info in data.non_tensor_batch["extra_info"]])
                data = data.repeat(repeat_times=N_RESP, interleave=True)
                scores = torch.zeros(len(data), 3)
                scores[::2, -1] = 1.0  # responses 0 and 2 of every group right
                data.batch["token_level_scores"] = scores
                if integration.NATIVE_UPDATE:  # 0.7.1's order: actor, checkpoint, then sampler.update
                    trainer._update_actor(data)
                    if step in checkpoints:
                        trainer._save_checkpoint()
                        if before_update is not None:
                            before_update[step] = sampler.curriculum.scheduler.successes.tolist()
                    sampler.update(batch=data)
                    if step in checkpoints and before_update is not None:
                        out.setdefault("after_update", {})[step] = sampler.curriculum.scheduler.successes.tolist()
                else:
                    assert trainer._update_actor(data) == "actor updated"
                    if step in checkpoints:
                        trainer._save_checkpoint()
                if step == stop:
                    break
        return trained

    trainer, sampler = build()
    out["sampler_type"] = type(trainer.train_dataloader.sampler).__name__
    out["trainer_type"] = type(trainer).__name__
    sched = sampler.curriculum.scheduler
    a0, b0 = sched.successes.copy(), sched.failures.copy()
    before_update: dict = {}
    out["steps"] = fit(trainer, sampler, 0, checkpoints=(2, 4), before_update=before_update)
    first3 = [pid for step in out["steps"][:3] for pid in step]
    index = sampler.curriculum.index_of
    # posterior after the run, per problem: (a, b) gained, and which problems moved at all
    out["changed"] = sorted(sampler.curriculum.ids[i] for i in ((sched.successes != a0) | (sched.failures != b0)).nonzero()[0])
    out["deltas"] = {pid: [float(sched.successes[index[pid]] - a0[index[pid]]), float(sched.failures[index[pid]] - b0[index[pid]])]
                     for pid in out["changed"]}
    out["first3"] = first3
    out["sched_step"], out["sched_epoch"] = sched.step, sched.epoch
    out["final_a"] = sched.successes.tolist()
    out["before_update"] = before_update

    out["resumed"] = {}
    for ckpt in (2, 4):
        trainer2, sampler2 = build()
        if integration.NATIVE_UPDATE:  # 0.7.1 restores its dataloader unconditionally
            trainer2.train_dataloader.load_state_dict(
                torch.load(os.path.join(work, f"global_step_{ckpt}", "data.pt"), weights_only=False))
        else:
            trainer2.resume_step = ckpt
            trainer2._load_checkpoint()
        loaded: list = []
        steps = fit(trainer2, sampler2, ckpt, at_start=loaded)
        out["resumed"][str(ckpt)] = {"steps": steps, "loaded_a": loaded[0],
                                     "final_a": sampler2.curriculum.scheduler.successes.tolist()}
    if integration.NATIVE_UPDATE:  # trainer.resume_mode=resume_path, default_local_dir elsewhere: the
        # after-update state comes from the folder resumed from
        moved = cfg.copy()
        moved.trainer.default_local_dir = work + ".elsewhere"
        moved.trainer.resume_mode, moved.trainer.resume_from_path = "resume_path", os.path.join(work, "global_step_2")
        trainer3, sampler3 = build(moved)
        trainer3.train_dataloader.load_state_dict(
            torch.load(os.path.join(work, "global_step_2", "data.pt"), weights_only=False))
        loaded = []
        steps = fit(trainer3, sampler3, 2, at_start=loaded)
        out["resumed_path"] = {"steps": steps, "loaded_a": loaded[0],
                               "final_a": sampler3.curriculum.scheduler.successes.tolist()}
    with open(out_path, "w") as fh:
        json.dump(out, fh)


if __name__ == "__main__":
    main()
