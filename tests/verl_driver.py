"""Drives grpo_data.integrations.verl the way a verl release does, without Ray or GPU workers.

Run by tests/test_integrations_verl.py in a process whose path holds one verl release (and its
omegaconf / ANTLR 4.9, which cannot share this project's environment):

    python tests/verl_driver.py TOKENIZER_DIR OUT.json SHARD.parquet...

It builds verl's own RLHFDataset, gets the sampler through the release's own hook (0.7.1: its
`create_rl_sampler` reading `data.sampler.class_path`; 0.8+: `curriculum_task_runner`'s install step,
then the legacy runner's names), builds the dataloader with `RayPPOTrainer._create_dataloader`, and
runs fit()'s per-step sequence: DataProto.from_single_dict, repeat(n, interleave=True), scores, then
the release's feedback call. Half of each group is scored right. Then it checkpoints the dataloader
as verl does (torch.save of state_dict) and resumes a fresh one from it.
"""

from __future__ import annotations

import json
import sys

import torch


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

    n_resp, batch = 4, 4
    cfg = OmegaConf.create({
        "data": {"train_batch_size": batch, "val_batch_size": None, "dataloader_num_workers": 0, "shuffle": True,
                 "seed": 0, "prompt_key": "prompt", "max_prompt_length": 512, "filter_overlong_prompts": False,
                 "return_raw_chat": True, "truncation": "error", "validation_shuffle": False,
                 "sampler": {"class_path": "pkg://grpo_data.integrations.verl", "class_name": "CurriculumSampler",
                             "decay": 1.0, "share": False}},
        "trainer": {"total_epochs": 1, "total_training_steps": None},
    })
    tok = AutoTokenizer.from_pretrained(tokenizer_dir)
    out: dict = {"verl": verl.__version__, "native_update": integration.NATIVE_UPDATE}
    RayPPOTrainer._update_actor = lambda self, b: "actor updated"  # the workers' part, not run here

    def build():
        dataset = RLHFDataset(data_files=files, tokenizer=tok, config=cfg.data, processor=None)
        if integration.NATIVE_UPDATE:  # 0.5-0.7.1: the config hook
            from verl.trainer.main_ppo import create_rl_sampler

            sampler = create_rl_sampler(cfg.data, dataset)
            trainer_cls = RayPPOTrainer
        else:  # 0.8+: what curriculum_task_runner installs inside the runner's actor
            import verl.trainer.main_ppo_v0 as v0

            integration.install_into_legacy_runner()
            sampler = v0.create_rl_sampler(cfg.data, dataset)
            trainer_cls = v0.RayPPOTrainer
        trainer = object.__new__(trainer_cls)
        trainer.config = cfg.copy()
        RayPPOTrainer._create_dataloader(trainer, dataset, dataset, collate_fn, sampler)
        return trainer, sampler

    def step(trainer, sampler, it) -> list[str]:
        data = DataProto.from_single_dict(next(it))
        ids = [info["id"] for info in data.non_tensor_batch["extra_info"]]
        data = data.repeat(repeat_times=n_resp, interleave=True)
        scores = torch.zeros(len(data), 3)
        scores[::2, -1] = 1.0  # responses 0 and 2 of every group right
        data.batch["token_level_scores"] = scores
        if integration.NATIVE_UPDATE:
            sampler.update(batch=data)  # what RayPPOTrainer.fit does after each step in 0.5-0.7.1
        else:
            assert trainer._update_actor(data) == "actor updated"
        return ids

    trainer, sampler = build()
    out["sampler_type"] = type(trainer.train_dataloader.sampler).__name__
    out["trainer_type"] = type(trainer).__name__
    sched = sampler.curriculum.scheduler
    a0, b0 = sched.a.copy(), sched.b.copy()
    it = iter(trainer.train_dataloader)
    out["steps"] = [step(trainer, sampler, it) for _ in range(3)]
    index = sampler.curriculum.index_of
    out["changed"] = sorted(sampler.curriculum.ids[i] for i in ((sched.a != a0) | (sched.b != b0)).nonzero()[0])
    out["deltas"] = {pid: [float(sched.a[index[pid]] - a0[index[pid]]), float(sched.b[index[pid]] - b0[index[pid]])]
                     for pid in out["changed"]}
    out["sched_step"] = sched.step
    state = trainer.train_dataloader.state_dict()
    blob = out_path + ".data.pt"
    torch.save(state, blob)  # as RayPPOTrainer._save_checkpoint writes data.pt
    out["after_checkpoint"] = [step(trainer, sampler, it) for _ in range(2)]
    out["final_a"] = sched.a.tolist()

    trainer2, sampler2 = build()
    trainer2.train_dataloader.load_state_dict(torch.load(blob, weights_only=False))
    it2 = iter(trainer2.train_dataloader)
    out["resumed"] = [step(trainer2, sampler2, it2) for _ in range(2)]
    out["resumed_final_a"] = sampler2.curriculum.scheduler.a.tolist()
    if not integration.NATIVE_UPDATE:
        runner = integration.curriculum_task_runner()
        out["runner_is_actor_class"] = hasattr(runner, "remote")
        out["ray_started"] = ray.is_initialized()
    with open(out_path, "w") as fh:
        json.dump(out, fh)


if __name__ == "__main__":
    main()
