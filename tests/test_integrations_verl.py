"""The scheduler as verl's sampler: unit behaviour here (no verl), and (slow) each supported verl
release loading and driving it in its own process (tests/verl_driver.py; see tests/verl_env.txt for
why verl cannot share this environment)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import polars as pl
import pytest
import torch

from grpo_data.integrations import verl as verl_integration
from grpo_data.integrations.feedback import MissingColumnError
from grpo_data.integrations.verl import CurriculumSampler

ROOT = Path(__file__).resolve().parent.parent
VERL_ENV = Path(os.environ.get("GRPO_VERL_ENV", ROOT / ".venv" / "verl"))  # make verl-env installs it here


class Rows:
    """A map-style dataset with verl's extra_info (like RLHFDataset's rows)."""

    def __init__(self, infos):
        self.infos = infos

    def __len__(self):
        return len(self.infos)

    def __getitem__(self, i):
        return {"extra_info": self.infos[i]}


def infos(n=12):
    return [{"index": i, "id": f"p{i}", "k": 4, "n_correct": i % 5, "level": 1 + i % 3} for i in range(n)]


def scored(ids, scores, acc=None):
    """The parts of a verl DataProto the sampler reads."""
    nt = {"extra_info": np.array([{"id": i} for i in ids], dtype=object)}
    if acc is not None:
        nt["acc"] = np.array(acc, dtype=object)
    tl = torch.zeros(len(scores), 3)
    tl[:, -1] = torch.tensor(scores)
    return SimpleNamespace(non_tensor_batch=nt, batch={"token_level_scores": tl})


def test_sampler_reads_config_prior_and_hands_out_whole_batches():
    cfg = {"train_batch_size": 4, "seed": 3, "sampler": {"class_path": "x", "class_name": "y", "lo": 0.3, "hi": 0.7}}
    s = CurriculumSampler(Rows(infos()), cfg)
    assert s.curriculum.scheduler.cfg.lo == 0.3 and s.curriculum.scheduler.cfg.hi == 0.7
    assert s.curriculum.scheduler.pass_rate()[4] > 0.8  # 4 of 4 offline
    order = list(s)
    assert len(order) == len(s) == 12 and s.pos == 0
    assert all(len(set(order[i:i + 4])) == 4 for i in range(0, 12, 4))


def test_update_counts_acc_or_scores_and_ticks():
    s = CurriculumSampler(Rows(infos()), {"train_batch_size": 4, "sampler": {"decay": 1.0, "share": False}})
    a0, b0 = s.curriculum.scheduler.successes.copy(), s.curriculum.scheduler.failures.copy()
    s.update(scored(["p1", "p1", "p2", "p2", "zz"], [1.0, -1.0, -1.0, -1.0, 1.0]))  # DAPO's +1/-1
    assert s.last_counted == {"groups": 2, "informative": 1, "unknown": 1, "unscored": 0}
    assert (s.curriculum.scheduler.successes - a0)[[1, 2]].tolist() == [1, 0]
    assert (s.curriculum.scheduler.failures - b0)[[1, 2]].tolist() == [1, 2]
    s.update(scored(["p3", "p3"], [0.0, 0.0], acc=[True, None]))  # the reward manager's acc wins
    assert (s.curriculum.scheduler.successes - a0)[3] == 1 and (s.curriculum.scheduler.failures - b0)[3] == 0
    assert s.curriculum.scheduler.step == 2


def test_state_dict_round_trip_resumes_mid_pass():
    cfg = {"train_batch_size": 4}
    s = CurriculumSampler(Rows(infos()), cfg)
    it = iter(s)
    first = [next(it) for _ in range(4)]
    s.update(scored([f"p{i}" for i in first], [1.0, 0.0, 1.0, 0.0]))
    state = s.state_dict()
    rest = list(it)
    t = CurriculumSampler(Rows(infos()), cfg)
    t.load_state_dict(state)
    assert list(t) == rest  # the next batches are the uninterrupted pass's


def test_after_update_state_is_taken_only_from_the_same_run_and_step(tmp_path, monkeypatch, caplog):
    """verl 0.7.1's order (data.pt at step 2, then that step's update writes curriculum.pt beside it):
    a resume takes the after-update state of its own run, never another run's file in the same folder."""
    monkeypatch.setattr(verl_integration, "NATIVE_UPDATE", True)  # the 0.5-0.7.1 path, without verl installed

    def run(seed, crash_before_update=False):
        s = CurriculumSampler(Rows(infos()), {"train_batch_size": 4, "seed": seed,
                                              "sampler": {"checkpoint_dir": str(tmp_path)}})
        it = iter(s)
        for step in (1, 2):
            batch = [next(it) for _ in range(4)]
            data_pt = s.state_dict() if step == 2 else None  # verl checkpoints step 2 before its update
            if step == 2 and crash_before_update:
                return s, data_pt
            s.update(scored([f"p{i}" for i in batch for _ in range(2)], [1.0, 0.0] * 4))
        return s, data_pt

    def resume(data_pt):
        t = CurriculumSampler(Rows(infos()), {"train_batch_size": 4, "sampler": {"checkpoint_dir": str(tmp_path)}})
        t.load_state_dict(data_pt)
        return t.curriculum

    after = tmp_path / "global_step_2" / "curriculum.pt"
    a, data_a = run(seed=0)
    assert after.exists() and resume(data_a).batches_scored == 2  # the state after step 2's update
    assert resume(data_a).scheduler.successes.tolist() == a.curriculum.scheduler.successes.tolist()
    _, data_b = run(seed=1, crash_before_update=True)  # another run, same folder, stops before the update
    assert not after.exists()  # its checkpoint removed run a's file
    with caplog.at_level("WARNING"):
        assert resume(data_b).batches_scored == 1  # its own data.pt: without step 2's rewards, said so
    assert "does not exist" in caplog.text
    run(seed=0)  # run a's file again, now beside run b's data.pt (a copied folder, a racing run)
    caplog.clear()
    with caplog.at_level("WARNING"):
        assert resume(data_b).batches_scored == 1
    assert "another run wrote it" in caplog.text and "run_id" in caplog.text
    _, data_a = run(seed=0)  # the same run, but its file moved on by more than the one step's update
    moved = torch.load(after, weights_only=False)
    torch.save({**moved, "batches_scored": moved["batches_scored"] + 1}, after)
    caplog.clear()
    with caplog.at_level("WARNING"):
        assert resume(data_a).batches_scored == 1
    assert "batches_scored 3" in caplog.text


def test_a_checkpoint_without_the_curriculum_is_named():
    s = CurriculumSampler(Rows(infos()), {"train_batch_size": 4})
    with pytest.raises(ValueError, match="holds no curriculum state"):
        s.load_state_dict({"pos": 0})


def test_rows_without_ids_are_named():
    with pytest.raises(MissingColumnError, match="row 1: extra_info has neither `id` nor `index`"):
        CurriculumSampler(Rows([{"id": "a"}, {}]), {"train_batch_size": 1})
    with pytest.raises(ValueError, match="a batch needs 8 prompts; the dataset has 3"):
        CurriculumSampler(Rows(infos(3)), {"train_batch_size": 8})


@pytest.fixture(scope="module")
def verl_inputs(tmp_path_factory, world_tables):
    from grpo_data.tables.shards import write_shards
    from grpo_train.tiny_policy import build_tokenizer

    out = tmp_path_factory.mktemp("verl")
    t = world_tables["train"].head(16)
    c = np.arange(t.height) % 5
    prof = pl.DataFrame({"id": t["id"], "k": np.full(t.height, 4), "n_correct": c, "pass_rate": c / 4,
                         "ci_low": 0.0, "ci_high": 1.0})
    manifest = write_shards(t, prof, out / "shards", fmt="verl", profile_meta={"model": "tiny"})
    build_tokenizer().save_pretrained(out / "tok")
    files = [str(out / "shards" / rel) for rel, info in manifest["files"].items() if info["rows"]]
    return out, files


@pytest.mark.slow
@pytest.mark.parametrize("version", ["0.7.1", "0.9.1"])
def test_verl_release_loads_and_drives_the_sampler(verl_inputs, version):
    """Engine: verl's own RLHFDataset, sampler hook, _create_dataloader (StatefulDataLoader), DataProto
    and checkpointed dataloader state; no Ray cluster, no workers."""
    if not (VERL_ENV / version / "verl").is_dir():
        pytest.skip(f"{VERL_ENV / version} is missing: run `make verl-env` (make test does)")
    out, files = verl_inputs
    result = out / f"result-{version}.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(VERL_ENV / version), str(VERL_ENV / "deps")])}
    proc = subprocess.run([sys.executable, str(ROOT / "tests" / "verl_driver.py"), str(out / "tok"), str(result), *files],
                          env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    r = json.loads(result.read_text())
    assert r["verl"] == version and r["sampler_type"] == "CurriculumSampler"
    assert r["native_update"] is (version == "0.7.1")
    if version == "0.9.1":
        assert r["trainer_type"] == "CurriculumRayPPOTrainer"
        assert r["runner_is_actor_class"] and not r["ray_started"]
        assert "dataloader_num_workers=8" in r["workers_error"]
    steps = r["steps"]
    assert len(steps) == 7 and all(len(set(s)) == 4 for s in steps)
    # the posterior moved for exactly the prompts trained, by their half-right groups (decay 1)
    trained = [p for s in steps for p in s]
    assert r["changed"] == sorted(set(trained))
    assert all(d == [2.0 * trained.count(p), 2.0 * trained.count(p)] for p, d in r["deltas"].items())
    assert r["sched_step"] == 7
    # resumed inside the epoch and at its boundary: the uninterrupted run's prompts and posterior (on
    # 0.7.1 too: the state written after the checkpointed step's update carries that step's rewards)
    for ckpt in ("2", "4"):
        res = r["resumed"][ckpt]
        assert res["steps"] == steps[int(ckpt):], ckpt
        assert res["final_a"] == r["final_a"], ckpt
    if version == "0.7.1":  # verl saved data.pt before the update; the resumed state is the one after it
        assert r["before_update"]["2"] != r["after_update"]["2"]
        assert r["resumed"]["2"]["loaded_a"] == r["after_update"]["2"]
        # resume_mode=resume_path with default_local_dir elsewhere: found in the folder resumed from
        assert r["resumed_path"]["loaded_a"] == r["after_update"]["2"]
        assert r["resumed_path"]["steps"] == steps[2:] and r["resumed_path"]["final_a"] == r["final_a"]


def verl_v1_run(out: Path, spec: dict, version: str = "0.9.1") -> dict:
    """tests/verl_v1_driver.py in a process with one verl release and the in-process TransferQueue."""
    if not (VERL_ENV / version / "verl").is_dir():
        pytest.skip(f"{VERL_ENV / version} is missing: run `make verl-env` (make test does)")
    (out / "spec.json").write_text(json.dumps(spec))
    path = [str(ROOT), str(ROOT / "tests" / "fake_tq"), str(VERL_ENV / version), str(VERL_ENV / "deps")]
    proc = subprocess.run([sys.executable, str(ROOT / "tests" / "verl_v1_driver.py"), str(out / "spec.json"),
                           str(out / "out.json")], env={**os.environ, "PYTHONPATH": os.pathsep.join(path)},
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return json.loads((out / "out.json").read_text())


@pytest.mark.slow
def test_verl_v1_trainer_draws_prompts_from_the_scheduler_and_resumes(verl_inputs, tmp_path):
    """Engine: verl 0.9.1's V1 PPOTrainer.fit (sync) with data.custom_cls=CurriculumDataset and
    trainer.v1.sampler.custom_sampler=CurriculumReplayBuffer from its default config; verl's dataloader,
    replay buffer, agent-loop worker and checkpoint code; answers, actor and TransferQueue stubbed."""
    out, files = verl_inputs
    rows = pl.concat([pl.read_parquet(f) for f in files])
    shuffled = tmp_path / "reordered.parquet"  # the same rows in another order: another dataset to the state
    rows.reverse().write_parquet(shuffled)
    val = tmp_path / "val.parquet"
    rows.head(4).write_parquet(val)
    settings = {"decay": 1.0, "share": False}
    run = {"curriculum": True, "steps": 7, "rewards": "half", "settings": settings}
    spec = {"tokenizer": str(out / "tok"), "files": files, "val_files": [str(val)], "n": 4, "batch": 4,
            "work": str(tmp_path / "ckpt"), "rewards": {}, "runs": [
                {**run, "name": "full", "save_freq": 2},
                {**run, "name": "inside_epoch", "resumes": "full", "resume_from": 2},
                {**run, "name": "epoch_boundary", "resumes": "full", "resume_from": 4},
                {**run, "name": "other_dataset", "resumes": "full", "resume_from": 2, "files": [str(shuffled)],
                 "expect_error": True},
                {**run, "name": "plain", "curriculum": False, "buffer": False, "save_freq": 2, "steps": 2},
                {**run, "name": "from_plain", "resumes": "plain", "resume_from": 2, "expect_error": True}]}
    r = verl_v1_run(tmp_path, spec)
    assert r["verl"] == "0.9.1" and r["verl_path"].endswith(os.path.join("0.9.1", "verl"))
    full = r["runs"]["full"]
    assert full["dataset_type"] == "CurriculumDataset" and full["buffer_type"] == "CurriculumReplayBuffer"
    assert not full["val_curriculum"]  # the validation set (its own file) is a plain RLHFDataset
    steps = full["trained"]
    assert len(steps) == 7 and all(len(s) == 4 for s in steps)
    # the prompts trained are the ones the scheduler chose, batch by batch (not the sampler's positions)
    assert steps == full["chosen"][:7]
    # every finished group reached the scheduler (2 of 4 right each), one scheduler step per batch
    assert full["groups_seen"] == 28 and full["sched_step"] == 7
    assert all(rw.count(1.0) == 2 for _, rw in full["groups"])
    for name, ckpt in (("inside_epoch", 2), ("epoch_boundary", 4)):  # 16 problems, 4 a step: 4 steps an epoch
        res = r["runs"][name]
        assert res["trained"] == steps[ckpt:] == res["chosen"][:7 - ckpt], name
        assert res["successes"] == full["successes"], name
    assert "saved for another dataset" in r["runs"]["other_dataset"]["error"]
    assert "holds no curriculum state" in r["runs"]["from_plain"]["error"]


@pytest.mark.slow
def test_verl_v1_refuses_settings_the_curriculum_cannot_run_with(verl_inputs, tmp_path):
    """Each refused at setup with a message naming the setting, before any prompt is generated."""
    out, files = verl_inputs
    val = tmp_path / "val.parquet"
    pl.read_parquet(files[0]).head(2).write_parquet(val)
    run = {"curriculum": True, "steps": 1, "rewards": "half", "expect_error": True}
    refused = {  # run name -> (its changes, what its message must say)
        "colocated_rm": ({"config": {"reward.reward_model.enable": True}}, "reward.reward_model.enable_resource_pool"),
        "async": ({"config": {"trainer.v1.trainer_mode": "colocate_async"}}, "trainer_mode=colocate_async"),
        "dapo": ({"config": {"algorithm.filter_groups.enable": True}}, "algorithm.filter_groups.enable=True"),
        "refill": ({"config": {"trainer.v1.sampler.sync_refill_failed_groups": True}}, "sync_refill_failed_groups"),
        "async_buffer_sync_mode": ({"config": {"trainer.v1.sampler.custom_sampler.name": "CurriculumReplayBufferAsync"}},
                                   "set it to CurriculumReplayBuffer"),
        "no_buffer": ({"buffer": False}, "trainer.v1.sampler.custom_sampler.name=None"),
        "val_is_train": ({"val_files": files}, "data.val_files is data.train_files"),
    }
    spec = {"tokenizer": str(out / "tok"), "files": files, "val_files": [str(val)], "n": 2, "batch": 4,
            "work": str(tmp_path / "ckpt"), "rewards": {},
            "runs": [{**run, **change, "name": name} for name, (change, _) in refused.items()]}
    r = verl_v1_run(tmp_path, spec)
    for name, (_, says) in refused.items():
        assert says in r["runs"][name].get("error", ""), (name, r["runs"][name])


def all_equal_share(groups) -> float:
    """The share of groups (entries ending in their answers' rewards) whose answers all got one reward."""
    return sum(len(set(g[-1])) == 1 for g in groups) / len(groups)


@pytest.mark.slow
def test_verl_v1_buffer_alone_trains_informative_groups_first(verl_inputs, tmp_path):
    """Engine: CurriculumReplayBuffer over a plain RLHFDataset (no data.custom_cls), verl 0.9.1's own
    dataloader, refill path, agent-loop worker and ReplayBuffer.sample; answers and TransferQueue stubbed.

    In sync mode verl's `step` generates one train batch (`_add_batch_to_generate`) and samples one
    batch, so the buffer never has a choice: the fit runs show it. The choice exists where more groups
    are finished than a batch takes (the async modes' warm-up): there both buffers sample one batch
    from the same finished groups, generated by verl's refill path at global steps 1..K."""
    out, files = verl_inputs
    rows = pl.concat([pl.read_parquet(f) for f in files])
    plain = tmp_path / "plain.parquet"  # one file, read in order (data.shuffle=False): known rows per batch
    rows.write_parquet(plain)
    val = tmp_path / "val.parquet"
    rows.head(4).write_parquet(val)
    ids = [info["id"] for info in rows["extra_info"].to_list()]
    # hand-built: 3 batches of 4; step 1 all-equal, step 2 one half-right group, step 3 two
    hand = dict(zip(ids[:12], [0.0, 1.0, 0.0, 1.0, "half", 0.0, 1.0, 0.0, "half", "half", 1.0, 0.0], strict=True))
    # a pool where most groups come back all-equal: 6 nearly hopeless, 6 nearly solved, 4 in the band
    pool = dict(zip(ids, [0.03] * 6 + [0.97] * 6 + [0.5] * 4, strict=True))
    plain_run = {"curriculum": False, "files": [str(plain)], "config": {"data.shuffle": False}}
    spec = {"tokenizer": str(out / "tok"), "files": [str(plain)], "val_files": [str(val)], "n": 4, "batch": 4,
            "work": str(tmp_path / "ckpt"), "rewards": pool, "runs": [
                {**plain_run, "name": "hand", "buffer": True, "rewards": hand, "steps": 1, "select_from": 3},
                *({**plain_run, "name": f"pool{seed}", "buffer": True, "rewards": "pool", "steps": 1, "seed": seed,
                   "select_from": 4} for seed in range(3)),
                {**plain_run, "name": "fit_buffer", "buffer": True, "rewards": "pool", "steps": 4},
                {**plain_run, "name": "fit_default", "buffer": False, "rewards": "pool", "steps": 4}]}
    r = verl_v1_run(tmp_path, spec)["runs"]
    ours, verls = "CurriculumReplayBuffer", "ReplayBuffer"

    # sync fit: each step generates the batch it trains, so the buffer never chooses and trains what verl's does
    fit, base = r["fit_buffer"], r["fit_default"]
    assert fit["dataset_type"] == base["dataset_type"] == "RLHFDataset"
    assert (fit["buffer_type"], base["buffer_type"]) == (ours, verls)
    assert fit["selects"] == base["selects"] == [[4, 4]] * 4  # 4 finished, 4 taken: no choice
    assert fit["trained"] == base["trained"] == [sorted(ids[4 * s:4 * s + 4]) for s in range(4)]
    assert fit["groups"] == base["groups"]

    # hand-built: 12 finished groups, 3 of them half right; a batch of 4
    h = r["hand"]
    assert h["buffer_types"] == [ours, verls] and h["selects"] == {ours: [[12, 4]], verls: [[12, 4]]}
    assert sorted(pid for pid, _, _ in h["picked"][verls]) == sorted(ids[:4])  # verl's: the oldest batch
    picked = h["picked"][ours]  # ours: the three half-right groups, then one of the oldest all-equal
    assert sorted(pid for pid, _, rw in picked if len(set(rw)) > 1) == sorted([ids[4], ids[8], ids[9]])
    assert [(step, len(set(rw))) for pid, step, rw in picked if pid not in (ids[4], ids[8], ids[9])] == [(1, 1)]
    assert all_equal_share(h["picked"][verls]) == 1.0 and all_equal_share(picked) == 0.25

    # the pool: 16 finished groups (4 batches), most all-equal; each buffer's share is what its rule gives
    shares = {ours: [], verls: []}
    for seed in range(3):
        p = r[f"pool{seed}"]
        informative = sum(len(set(rw)) > 1 for _, _, rw in p["groups"])
        assert len(p["groups"]) == 16 and all_equal_share(p["groups"]) >= 0.5
        assert sorted(g[:2] for g in p["picked"][verls]) == [[pid, 1] for pid in sorted(ids[:4])]  # the oldest batch
        assert all_equal_share(p["picked"][ours]) == max(0, 4 - informative) / 4, seed
        for name in shares:
            shares[name].append(all_equal_share(p["picked"][name]))
    mean = {name: float(np.mean(s)) for name, s in shares.items()}
    assert mean[verls] - mean[ours] >= 0.75, shares  # 0.0 against 0.83 with these draws
