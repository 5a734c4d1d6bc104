"""Issue #37: profiling on Ray equals the single-process profile, survives a lost worker and a killed
driver, and names the address it cannot reach.

Engine: the scripted test double (`tests/test_profiler.py`, reseedable as vLLM is) inside real Ray
actors of a local cluster, judged by each actor's own killable VerifierPool (math-verify); the real
vLLM engine on a two-node cluster is in `bench/ray_profile_bench.py`."""

import os
import signal
import socket
import sys
from functools import partial

import pytest

ray = pytest.importorskip("ray")

from grpo_data.profiler import (  # noqa: E402
    ProfileConfig,
    ProfilePlan,
    merge_parts,
    parts_dir,
    profile_problems,
)
from grpo_data.ray_profile import (  # noqa: E402
    ClusterError,
    RayCluster,
    WorkerSpec,
    check_reachable,
    default_workers,
    parse_address,
    profile_problems_ray,
)
from grpo_data.stats import StoppingRule  # noqa: E402
from grpo_data.verify_pool import PoolConfig  # noqa: E402
from tests import test_profiler  # noqa: E402
from tests.test_profiler import ReseedableEngine, scripted_problems  # noqa: E402

ADAPTIVE = StoppingRule(confidence=0.9, screen_k=2, step_k=2, max_k=16)
WORKER_POOL = PoolConfig(workers=1, deadline_s=4.0, timeout_s=1)


@pytest.fixture(scope="module")
def cluster():
    ray.cloudpickle.register_pickle_by_value(test_profiler)  # the workers get the test double by value
    sys.modules.setdefault("tests.test_profiler", test_profiler)
    with RayCluster(num_cpus=2, num_gpus=0) as c:
        yield c


def spec(rates):
    return WorkerSpec(partial(ReseedableEngine, rates), WORKER_POOL, cpus=1)


def single(tmp_path, problems, rates, cfg, pool, name="single.parquet"):
    out = tmp_path / name
    profile_problems(problems, ReseedableEngine(rates), pool, cfg, out, progress=False)
    return merge_parts(out, expected_ids=set(problems["id"].to_list())).sort("id")


@pytest.mark.parametrize("rule", [None, ADAPTIVE], ids=["fixed", "adaptive"])
def test_ray_profile_equals_the_single_process_one(tmp_path, pool, cluster, rule):
    """Same seed and wave: every problem's counts and rounds equal, on 2 actors that took chunks in
    whatever order they finished; the metadata says which backend ran it."""
    problems, rates = scripted_problems(48)
    cfg = ProfileConfig(k=6, rule=rule, chunk_size=6, seed=5, prior_groups="none", wave=2)
    want = single(tmp_path, problems, rates, cfg, pool)
    out = tmp_path / "ray.parquet"
    stats = profile_problems_ray(problems, spec(rates), cfg, out, cluster, workers=2, progress=False)
    got = merge_parts(out, expected_ids=set(problems["id"].to_list())).sort("id")
    assert got.equals(want)
    assert stats["workers"] == 2 and stats["problems"] == 48 and stats["samples"] == int(want["k"].sum())
    meta = (out.with_suffix(".json")).read_text()
    assert '"backend": "ray"' in meta and '"ray_workers": 2' in meta
    if rule is not None:
        assert want["k"].n_unique() > 1  # adaptive rounds really differed between problems


def test_a_killed_worker_loses_nothing_and_counts_nothing_twice(tmp_path, pool, cluster):
    """kill -9 of one actor's process after its first chunk: its chunk in flight goes to a new actor;
    the profile equals the single-process one, every id once."""
    problems, rates = scripted_problems(48)
    cfg = ProfileConfig(k=6, chunk_size=4, seed=2, prior_groups="none")
    want = single(tmp_path, problems, rates, cfg, pool)
    killed = []

    def kill_one(chunk_no):
        if chunk_no == 1 and not killed:
            victim = pools[0].actors[1]
            pid = ray.get(victim.pid.remote())
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)

    pools = []
    out = tmp_path / "ray.parquet"
    stats = profile_problems_ray(problems, spec(rates), cfg, out, cluster, workers=2, progress=False,
                                 on_start=pools.append, on_chunk=kill_one)
    assert killed and stats["replaced"] >= 1
    got = merge_parts(out, expected_ids=set(problems["id"].to_list())).sort("id")
    assert got.equals(want) and got["id"].is_unique().all()


def test_a_killed_driver_resumes_from_the_parts(tmp_path, pool, cluster):
    """The driver stops after 3 chunks (as a kill would leave it: parts on disk, nothing else); a second
    run profiles only the rest and the merged profile equals an uninterrupted one (adaptive, wave 2)."""
    problems, rates = scripted_problems(48)
    cfg = ProfileConfig(k=6, rule=ADAPTIVE, chunk_size=6, seed=1, prior_groups="none", wave=2)
    want = single(tmp_path, problems, rates, cfg, pool)

    class Stop(Exception):
        pass

    def stop(chunk_no):
        if chunk_no == 2:
            raise Stop

    out = tmp_path / "ray.parquet"
    with pytest.raises(Stop):
        profile_problems_ray(problems, spec(rates), cfg, out, cluster, workers=2, progress=False, on_chunk=stop)
    assert len(list(parts_dir(out).glob("*.parquet"))) == 3
    stats = profile_problems_ray(problems, spec(rates), cfg, out, cluster, workers=2, progress=False)
    assert stats["problems"] == 48 - 18 and stats["skipped"] == 18
    assert merge_parts(out, expected_ids=set(problems["id"].to_list())).sort("id").equals(want)


def test_adaptive_resume_is_exact_when_a_later_chunk_finished_first(tmp_path, pool):
    """Parts a Ray run leaves can hold chunk 5 without chunk 3: the history of each chunk is its plan's
    earlier waves, not whatever is on disk, so the resumed profile still equals the uninterrupted one."""
    problems, rates = scripted_problems(48)
    cfg = ProfileConfig(k=6, rule=ADAPTIVE, chunk_size=6, seed=4, prior_groups="none", wave=1)
    want = single(tmp_path, problems, rates, cfg, pool, "whole.parquet")
    out = tmp_path / "holes.parquet"
    profile_problems(problems, ReseedableEngine(rates), pool, cfg, out, progress=False)
    parts = sorted(parts_dir(out).glob("*.parquet"))
    for part in parts[1:5]:  # keep chunks 0 and 5.., as an out-of-order run's crash can leave them
        part.unlink()
    stats = profile_problems(problems, ReseedableEngine(rates), pool, cfg, out, progress=False)
    assert stats["problems"] == 24
    assert merge_parts(out, expected_ids=set(problems["id"].to_list())).sort("id").equals(want)


def test_a_chunk_weighs_only_earlier_waves(tmp_path):
    """Wave 2 and chunks of 4: chunks 2 and 3 weigh chunks 0-1; chunk 4 weighs 0-3; fixed k weighs none."""
    problems, _ = scripted_problems(20)
    plan = ProfilePlan(problems, tmp_path / "p.parquet", ProfileConfig(rule=ADAPTIVE, chunk_size=4, wave=2,
                                                                         prior_groups="none"))
    plan.apply(None)
    assert plan.waves() == [[0, 1], [2, 3], [4]]
    for pos in range(5):  # every chunk recorded with 1 of 2 right
        assert plan.chunks[pos].height == 4
        plan.blocks.setdefault(pos, []).extend(plan._entry(i, 1, 2) for i in plan.chunks[pos]["id"])
    sizes = {pos: plan.job(pos).history[1].size for pos in range(5)}
    assert sizes == {0: 0, 1: 0, 2: 8, 3: 8, 4: 16}
    fixed = ProfilePlan(problems, tmp_path / "f.parquet", ProfileConfig(chunk_size=4, wave=2))
    fixed.apply(None)
    assert fixed.waves() == [[0, 1, 2, 3, 4]] and fixed.job(4).history[1].size == 0


def test_an_unreachable_address_is_named_with_what_to_do():
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(ClusterError, match=rf"127\.0\.0\.1:{port}.*ray start --head --port {port}"):
        check_reachable(f"127.0.0.1:{port}", timeout_s=2)
    with pytest.raises(ClusterError, match=f"127.0.0.1:{port}"):
        RayCluster(address=f"127.0.0.1:{port}").__enter__()
    with pytest.raises(ValueError, match="host:port"):
        parse_address("head-node")
    assert parse_address("ray://10.0.0.1:10001") == ("10.0.0.1", 10001)


def test_default_workers_fit_the_cluster():
    engine = partial(ReseedableEngine, {})
    assert default_workers({"CPU": 16.0, "GPU": 8.0}, WorkerSpec(engine, gpus=1)) == 8
    assert default_workers({"CPU": 16.0}, WorkerSpec(engine, cpus=4)) == 4
    with pytest.raises(ClusterError, match="GPU"):
        default_workers({"CPU": 16.0}, WorkerSpec(engine, gpus=1))


def test_worker_env_passes_the_engine_defaults(monkeypatch):
    from grpo_data.ray_profile import worker_env

    monkeypatch.setenv("VLLM_CPU_KVCACHE_SPACE", "3")
    monkeypatch.delenv("VLLM_CPU_OMP_THREADS_BIND", raising=False)
    env = worker_env({"X": "1"})
    assert env["VLLM_CPU_KVCACHE_SPACE"] == "3" and env["X"] == "1" and "VLLM_CPU_OMP_THREADS_BIND" not in env
