"""Runs verl 0.9's V1 trainer loop (`PPOTrainer.fit`, sync mode) with grpo_data.integrations.verl_v1
installed through its config hooks, without Ray, GPUs or a TransferQueue service.

    python tests/verl_v1_driver.py SPEC.json OUT.json

Its process needs verl 0.9.x, its deps (tests/verl_env.txt) and tests/fake_tq (an in-process
TransferQueue) on the path. verl's own code runs: the full default config
(`_generated_ppo_trainer.yaml`), `_build_replay_buffer` (loading the custom sampler),
`_init_dataloader` (loading the custom dataset, the StatefulDataLoader), `fit`, `step`, `_step_once`,
the replay buffer's `sample`, `AgentLoopWorkerTQ.generate_sequences` / `_run_prompt`,
`_save_checkpoint` / `_load_checkpoint` (data.pt). Stubbed, as the workers' part: each answer's
generation and score (`_run_agent_loop` puts one trajectory with its reward, as the agent loop's
postprocess does), the actor/critic log-probs and update, weight sync, metrics.

SPEC: {"tokenizer", "files", "val_files", "n", "batch", "work", "rewards" ({"id": pass_rate}), "runs":
[{"name", "curriculum" (bool), "buffer" (bool, default: as curriculum), "steps", "save_freq",
"resume_from" (a step or null), "rewards": "half" | {"id": pass_rate} | another string (the spec's), "seed",
"settings" (data.curriculum), "files" (another train set), "val_files", "config" ({dotted key: value}
set last), "expect_error", "select_from" (see below)}]}. A pass rate of "half" gives a group half
right, half wrong; 0 and 1 give all-equal groups. OUT per run: trained ids per step, the ids of each
batch the scheduler chose, every generated group's (id, rewards), each selection's [finished groups,
batch size], the scheduler's successes after the run.

A run with "select_from": K does not fit: verl's `_add_prompts_to_generate` generates K batches (at
global steps 1..K, through the dataloader and the agent-loop worker) into the TransferQueue, and each
of two replay buffers built by verl's `_build_replay_buffer` (verl's default ReplayBuffer, and
CurriculumReplayBuffer) samples one batch from that same store: OUT "picked" per buffer, the
(id, step, rewards) of each group chosen.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

import numpy as np
import torch


def main() -> None:
    spec = json.loads(Path(sys.argv[1]).read_text())
    import transfer_queue as tq
    import verl
    from omegaconf import OmegaConf, open_dict
    from transformers import AutoTokenizer
    from verl.trainer.ppo.v1 import AgentLoopWorkerTQ, PPOTrainerSync

    out = {"verl": verl.__version__, "verl_path": os.path.dirname(verl.__file__), "runs": {}}
    base = OmegaConf.load(Path(verl.__file__).parent / "trainer" / "config" / "_generated_ppo_trainer.yaml")
    tok = AutoTokenizer.from_pretrained(spec["tokenizer"])

    class Stub:  # the worker groups, weight sync, checkpoint callback: not run here
        def __getattr__(self, name):
            return lambda *a, **k: None

    trained: list[list[str]] = []

    def update_actor(self, batch, metrics):
        data = tq.kv_batch_get(keys=batch.keys, partition_id=batch.partition_id, select_fields=["extra_info"])
        trained.append(sorted({info["id"] for info in data["extra_info"]}))
        return batch

    PPOTrainerSync._update_actor = update_actor
    for name in ("_balance_batch", "_compute_old_log_prob", "_compute_advantage"):
        setattr(PPOTrainerSync, name, lambda self, batch, *a, **k: batch)
    PPOTrainerSync._compute_metrics = lambda self, *a, **k: None

    worker_cls = AgentLoopWorkerTQ.__ray_metadata__.modified_class

    class AgentLoop:
        """verl's AgentLoopWorkerTQ (generate_sequences, _run_prompt) with each answer stubbed."""

        def __init__(self, config, rewards, seed):
            self.worker = object.__new__(worker_cls)
            self.worker.config = config
            self.worker.background_tasks = set()
            self.worker._run_agent_loop = self.answer
            self.rewards, self.seed, self.scored, self.step_of = rewards, seed, {}, {}

        async def answer(self, sampling_params, trajectory, trace, session_id, **prompt):
            pid, uid = prompt["extra_info"]["id"], prompt["uid"]
            if self.rewards == "half" or self.rewards.get(pid) == "half":
                reward = float(session_id % 2 == 0)
            else:  # deterministic per (problem, step, answer): both arms and a resumed run see the same draws
                row, step = int(prompt["extra_info"]["index"]), int(prompt["global_steps"])
                reward = float(np.random.default_rng([self.seed, row, step, session_id]).random() < self.rewards[pid])
            self.scored.setdefault(uid, (pid, []))[1].append(reward)
            self.step_of[uid] = int(prompt["global_steps"])
            scores = torch.zeros(3)
            scores[-1] = reward
            await tq.async_kv_batch_put(keys=[f"{uid}_{session_id}_0"], partition_id="train", tags=[
                {"status": "success", "global_steps": prompt["global_steps"]}], fields=[
                {**prompt, "session_id": session_id, "rm_scores": scores,
                 "extra_fields": {"reward_extra_info": {}}}])

        def generate_sequences(self, batch):
            async def go():
                await self.worker.generate_sequences(batch)
                while self.worker.background_tasks:
                    await asyncio.gather(*list(self.worker.background_tasks))

            asyncio.run(go())

    def watched(buffer):
        """The buffer, recording each train selection's [finished groups to choose from, batch size]."""
        buffer.poll_interval, buffer.selects = 0.0, []
        select_prompt_uids = buffer._select_prompt_uids

        def recorded(partition_id, sampleable_keys, batch_size):
            if partition_id == "train":
                buffer.selects.append([len(sampleable_keys), batch_size])
            return select_prompt_uids(partition_id, sampleable_keys, batch_size)

        buffer._select_prompt_uids = recorded
        return buffer

    def select(trainer, cfg, loop, batches: int) -> dict:
        """K batches generated by verl's own refill path, then one batch sampled by each buffer from copies
        of the same TransferQueue store."""
        import copy

        from verl.utils.skip import SkipManager

        SkipManager.init(cfg)  # as fit does (the buffers' sample is annotated with it)
        trainer.agent_loop_manager = loop
        for step in range(1, batches + 1):
            trainer.global_steps = step
            trainer._add_prompts_to_generate(cfg.data.train_batch_size)
        finished = copy.deepcopy(tq.STORE)
        with open_dict(cfg):
            custom = cfg.trainer.v1.sampler.custom_sampler
            custom.path, custom.name = "pkg://grpo_data.integrations.verl_v1", "CurriculumReplayBuffer"
        curriculum = watched(trainer._build_replay_buffer())
        with open_dict(cfg):
            custom.path = custom.name = None
        default = watched(trainer._build_replay_buffer())
        res = {"groups": [[pid, loop.step_of[uid], rw] for uid, (pid, rw) in loop.scored.items()], "picked": {},
               "buffer_types": [type(curriculum).__name__, type(default).__name__], "selects": {}}
        for buffer in (default, curriculum):
            tq.STORE.clear()
            tq.STORE.update(copy.deepcopy(finished))
            meta, _ = buffer.sample(global_steps=batches, partition_id="train", batch_size=cfg.data.train_batch_size)
            uids = sorted({key.split("_")[0] for key in meta.keys}, key=lambda uid: (loop.step_of[uid], uid))
            name = type(buffer).__name__
            res["picked"][name] = [[loop.scored[uid][0], loop.step_of[uid], loop.scored[uid][1]] for uid in uids]
            res["selects"][name] = buffer.selects
        return res

    def run(r: dict) -> dict:
        trained.clear()
        tq.close()
        cfg = base.copy()
        work = os.path.join(spec["work"], r["name"] if r.get("resume_from") is None else r["resumes"])
        with open_dict(cfg):
            d = cfg.data
            d.train_files = r.get("files", spec["files"])
            d.val_files = r.get("val_files", spec.get("val_files", spec["files"][:1]))
            d.train_batch_size, d.dataloader_num_workers, d.seed = spec["batch"], 0, r.get("seed", 0)
            d.max_prompt_length, d.return_raw_chat = 512, True
            if r["curriculum"]:
                d.custom_cls.path = "pkg://grpo_data.integrations.verl_v1"
                d.custom_cls.name = "CurriculumDataset"
                d.curriculum = r.get("settings", {})
            if r.get("buffer", r["curriculum"]):
                cfg.trainer.v1.sampler.custom_sampler.path = "pkg://grpo_data.integrations.verl_v1"
                cfg.trainer.v1.sampler.custom_sampler.name = "CurriculumReplayBuffer"
            cfg.actor_rollout_ref.rollout.n = spec["n"]
            t = cfg.trainer
            t.total_epochs, t.total_training_steps = 1000, r["steps"]
            t.default_local_dir, t.save_freq, t.test_freq = work, r.get("save_freq", -1), -1
            t.val_before_train, t.logger = False, []
            t.resume_mode = "disable" if r.get("resume_from") is None else "resume_path"
            if r.get("resume_from") is not None:
                t.resume_from_path = os.path.join(work, f"global_step_{r['resume_from']}")
            for key, value in r.get("config", {}).items():
                OmegaConf.update(cfg, key, value, force_add=True)
        trainer = object.__new__(PPOTrainerSync)
        trainer.config = cfg
        trainer.checkpoint_callback = trainer.actor_rollout_wg = trainer.checkpoint_manager = Stub()
        trainer.use_critic = trainer.use_reference_policy = trainer.use_teacher_policy = False
        trainer.trainer_mode, trainer.parameter_sync_step, trainer.local_trigger_step = cfg.trainer.v1.trainer_mode, 1, 0
        trainer._restored_tq_prompt_count = 0
        trainer.replay_buffer = watched(trainer._build_replay_buffer())  # verl's: trainer.v1.sampler.custom_sampler
        trainer.tokenizer, trainer.processor = tok, None
        trainer._init_dataloader()  # verl's: create_rl_dataset (data.custom_cls) and its StatefulDataLoader
        chosen: list[list[str]] = []  # the ids of each batch the scheduler chose, to compare with those trained
        cur = getattr(trainer.train_dataset, "curriculum", None)
        if cur is not None:
            next_batch = cur.next_batch

            def recorded(size):
                rows = next_batch(size)
                chosen.append(sorted(cur.ids[int(i)] for i in rows))
                return rows

            cur.next_batch = recorded
        trainer._init_dump_executor()
        trainer.reward_loop_manager = type("RewardLoop", (), {"reward_loop_worker_handles": []})()
        trainer._load_checkpoint()  # verl's: global step and data.pt from resume_from_path
        rewards = r["rewards"] if isinstance(r["rewards"], dict) else "half" if r["rewards"] == "half" else spec["rewards"]
        loop = AgentLoop(cfg, rewards, r.get("seed", 0))
        if r.get("select_from"):
            return select(trainer, cfg, loop, r["select_from"])
        trainer.fit(loop)
        dataset = trainer.train_dataset
        res = {"trained": [list(s) for s in trained], "chosen": chosen, "start_step": r.get("resume_from") or 0,
               "val_curriculum": getattr(trainer.val_dataset, "curriculum", None) is not None,
               "dataset_type": type(dataset).__name__, "buffer_type": type(trainer.replay_buffer).__name__,
               "groups": [[pid, rw] for pid, rw in loop.scored.values()],
               "selects": trainer.replay_buffer.selects}
        if getattr(dataset, "curriculum", None) is not None:
            cur = dataset.curriculum
            res["successes"] = cur.scheduler.successes.tolist()
            res["sched_step"], res["groups_seen"] = cur.scheduler.step, cur.groups_seen
            res["ids_hash"] = cur.fingerprint
        return res

    for r in spec["runs"]:
        try:
            out["runs"][r["name"]] = run(r)
        except Exception as exc:  # a refusal the spec asked for: its message is the result
            if not r.get("expect_error"):
                raise
            out["runs"][r["name"]] = {"error": f"{type(exc).__name__}: {exc}"}
    Path(sys.argv[2]).write_text(json.dumps(out))


if __name__ == "__main__":
    main()
