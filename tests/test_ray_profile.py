"""Issue #37: profiling on Ray equals the single-process profile, survives a lost worker and a killed
driver, and names the address it cannot reach.

Engine: the scripted test double (`tests/test_profiler.py`, reseedable as vLLM is) inside real Ray
actors of a local cluster, judged by each actor's own killable VerifierPool (math-verify); the real
vLLM engine on a two-node cluster is in `bench/ray_profile_bench.py`."""

import os
import signal
import socket
import sys
import time
from functools import partial

import polars as pl
import pytest

ray = pytest.importorskip("ray")

from grpo_data.curriculum.stats import StoppingRule  # noqa: E402
from grpo_data.profile_config import ProfileConfig  # noqa: E402
from grpo_data.profile_parts import merge_parts, parts_dir  # noqa: E402
from grpo_data.profiler import ProfilePlan, profile_problems  # noqa: E402
from grpo_data.ray_profile import (  # noqa: E402
    ClusterError,
    ProfileWorker,
    RayCluster,
    WorkerSpec,
    check_reachable,
    default_workers,
    parse_address,
    profile_problems_ray,
)
from grpo_data.verify.pool import PoolConfig  # noqa: E402
from tests import test_profiler  # noqa: E402
from tests.test_profiler import ReseedableEngine, scripted_problems  # noqa: E402

ADAPTIVE = StoppingRule(confidence=0.9, screen_k=2, step_k=2, max_k=16)
WORKER_POOL = PoolConfig(workers=1, deadline_s=4.0, timeout_s=1)


@pytest.fixture(scope="module")
def cluster():
    ray.cloudpickle.register_pickle_by_value(test_profiler)  # the workers get the test doubles by value
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
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
    """kill -9 of one actor's process while it is inside a chunk (its pid asked before any chunk ran:
    a later call would queue behind its chunks), with a second chunk waiting at it (prefetch 2): both go
    to a new actor; the profile equals the single-process one, every id once."""
    problems, rates = scripted_problems(48)
    cfg = ProfileConfig(k=6, chunk_size=4, seed=2, prior_groups="none")
    want = single(tmp_path, problems, rates, cfg, pool)
    killed, victim = [], []

    def find_victim(actor_pool):
        victim.append(ray.get(actor_pool.actors[1].pid.remote()))

    def kill_one(chunk_no):
        if chunk_no == 1 and not killed:
            os.kill(victim[0], signal.SIGKILL)
            killed.append(victim[0])

    out = tmp_path / "ray.parquet"
    stats = profile_problems_ray(problems, spec(rates), cfg, out, cluster, workers=2, progress=False,
                                 on_start=find_victim, on_chunk=kill_one)
    assert killed and stats["replaced"] >= 1 and stats["samples"] == int(want["k"].sum())  # no chunk counted twice
    got = merge_parts(out, expected_ids=set(problems["id"].to_list())).sort("id")
    assert got.equals(want) and got["id"].is_unique().all()


class FaultOnceEngine(ReseedableEngine):
    """Raises what a CUDA fault inside a live vLLM actor raises, on the first chunk of the first actor
    to claim `flag` (a file, so only one actor of the run faults, once)."""

    def __init__(self, rates, flag, message, seed=0):
        super().__init__(rates, seed)
        self.flag, self.message = flag, message

    def generate(self, prompts, n, sampling):
        try:
            with open(self.flag, "x"):
                pass
        except FileExistsError:
            return super().generate(prompts, n, sampling)
        raise RuntimeError(self.message)


def test_an_engine_fault_in_a_live_actor_replaces_it_and_reruns_the_chunk(tmp_path, pool, cluster):
    """A CUDA error raised inside a live actor (the common GPU fault: the process lives, its engine is
    dead) is a lost worker, not a bad chunk: replaced, the chunk run again; the profile equals the
    single-process one. A plain exception from our code still stops the run."""
    problems, rates = scripted_problems(32)
    cfg = ProfileConfig(k=6, chunk_size=4, seed=2, prior_groups="none")
    want = single(tmp_path, problems, rates, cfg, pool)
    cuda = "CUDA error: an illegal memory access was encountered"
    faulty = WorkerSpec(partial(FaultOnceEngine, rates, str(tmp_path / "fault"), cuda), WORKER_POOL, cpus=1)
    out = tmp_path / "ray.parquet"
    stats = profile_problems_ray(problems, faulty, cfg, out, cluster, workers=2, progress=False)
    assert stats["replaced"] == 1 and stats["retried"] >= 1 and stats["samples"] == int(want["k"].sum())
    got = merge_parts(out, expected_ids=set(problems["id"].to_list())).sort("id")
    assert got.equals(want)
    buggy = WorkerSpec(partial(FaultOnceEngine, rates, str(tmp_path / "bug"), "KeyError in our code"), WORKER_POOL,
                       cpus=1)
    with pytest.raises(ray.exceptions.RayTaskError, match="KeyError in our code"):
        profile_problems_ray(problems, buggy, cfg, tmp_path / "bug.parquet", cluster, workers=2, progress=False)


def test_engine_fault_is_read_from_the_remote_traceback():
    from grpo_data.ray_profile import engine_fault

    def task_error(message):
        try:
            raise RuntimeError(message)
        except RuntimeError as exc:
            return ray.exceptions.RayTaskError("run", "Traceback ...\n" + message, exc)

    assert engine_fault(task_error("vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue"))
    assert engine_fault(task_error("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"))
    assert not engine_fault(task_error("ValueError: prompt 'id7' has no answer"))
    assert not engine_fault(RuntimeError("CUDA error"))  # raised on the driver, not by an actor


def kill_and_strand(slot: int):
    """on_start / on_chunk pair and the pids killed: actor `slot` is killed inside chunk 1, and its
    replacement asks for a resource no node has, as after a node is lost with no room left elsewhere."""
    victim, killed = [], []

    def find_victim(actor_pool):
        victim.append(ray.get(actor_pool.actors[slot].pid.remote()))
        actor_pool.remote = ray.remote(ProfileWorker).options(num_cpus=1, resources={"node_that_is_gone": 1},
                                                              max_restarts=0, max_concurrency=1)

    def kill_one(chunk_no):
        if chunk_no == 1 and not killed:
            os.kill(victim[0], signal.SIGKILL)
            killed.append(victim[0])

    return find_victim, kill_one, killed


def test_a_replacement_no_node_can_place_is_given_up(tmp_path, pool, cluster):
    """The lost actor's replacement cannot be placed: after the start timeout it is given up and its
    chunks run on the actor left, instead of the run waiting forever; nothing lost or counted twice."""
    problems, rates = scripted_problems(32)
    cfg = ProfileConfig(k=6, chunk_size=4, seed=2, prior_groups="none")
    want = single(tmp_path, problems, rates, cfg, pool)
    find_victim, kill_one, killed = kill_and_strand(1)
    out = tmp_path / "ray.parquet"
    started = time.monotonic()
    stats = profile_problems_ray(problems, spec(rates), cfg, out, cluster, workers=2, progress=False,
                                 on_start=find_victim, on_chunk=kill_one, start_timeout_s=10)
    assert killed and stats["replaced"] == 1 and time.monotonic() - started < 60
    got = merge_parts(out, expected_ids=set(problems["id"].to_list())).sort("id")
    assert got.equals(want) and got["id"].is_unique().all()


def no_engine(*_):
    raise FileNotFoundError("/models/qwen-7b is not on this node")


def test_a_replacement_whose_engine_cannot_start_is_retired_not_charged_to_a_chunk(tmp_path, pool, cluster):
    """The replacement's engine fails to load (its node lacks the model): that slot is retired and the
    chunks go on on the actor left; no chunk is charged the failure, nothing lost or counted twice."""
    problems, rates = scripted_problems(32)
    cfg = ProfileConfig(k=6, chunk_size=4, seed=2, prior_groups="none")
    want = single(tmp_path, problems, rates, cfg, pool)
    find_victim, kill_one, killed = kill_and_strand(1)

    def broken_node(actor_pool):
        find_victim(actor_pool)
        actor_pool.remote = ray.remote(ProfileWorker).options(num_cpus=1, max_restarts=0, max_concurrency=1)
        actor_pool.args = (WorkerSpec(no_engine, WORKER_POOL, cpus=1), *actor_pool.args[1:])

    out = tmp_path / "ray.parquet"
    stats = profile_problems_ray(problems, spec(rates), cfg, out, cluster, workers=2, progress=False,
                                 on_start=broken_node, on_chunk=kill_one, start_timeout_s=30)
    assert killed and stats["replaced"] == 1 and stats["samples"] == int(want["k"].sum())
    assert merge_parts(out, expected_ids=set(problems["id"].to_list())).sort("id").equals(want)


def test_with_no_worker_left_the_run_stops_with_what_to_do(tmp_path, cluster):
    """One actor, killed, and a replacement no node can place: ClusterError after the start timeout,
    the chunks written before it stay for a rerun."""
    problems, rates = scripted_problems(32)
    cfg = ProfileConfig(k=6, chunk_size=4, seed=2, prior_groups="none")
    find_victim, kill_one, killed = kill_and_strand(0)
    out = tmp_path / "ray.parquet"
    with pytest.raises(ClusterError, match="no profile worker left.*within 10 s.*add a node"):
        profile_problems_ray(problems, spec(rates), cfg, out, cluster, workers=1, progress=False,
                             on_start=find_victim, on_chunk=kill_one, start_timeout_s=10)
    assert killed and len(list(parts_dir(out).glob("*.parquet"))) >= 1


def test_more_workers_than_the_cluster_places_is_named(tmp_path, cluster):
    """Three 1-CPU actors on a 2-CPU cluster: ClusterError naming the resources, not a hang."""
    problems, rates = scripted_problems(8)
    with pytest.raises(ClusterError, match="3 profile workers.*did not all start within 10 s.*--ray-workers"):
        profile_problems_ray(problems, spec(rates), ProfileConfig(k=2), tmp_path / "p.parquet", cluster, workers=3,
                             progress=False, start_timeout_s=10)
    deadline = time.monotonic() + 20
    while ray.available_resources().get("CPU", 0) < 2 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert ray.available_resources().get("CPU", 0) == 2  # the two placed ones killed


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


def broken_engine():
    raise FileNotFoundError("no model folder at /nowhere")


def test_a_worker_that_cannot_start_its_engine_is_named(tmp_path, cluster):
    """An engine that fails on the worker's node stops the run at once with what failed, not after
    retrying chunks, and gives the worker's resources back."""
    problems, _ = scripted_problems(8)
    with pytest.raises(ClusterError, match="did not start.*every node") as info:
        profile_problems_ray(problems, WorkerSpec(broken_engine, WORKER_POOL, cpus=1), ProfileConfig(k=2),
                             tmp_path / "p.parquet", cluster, workers=2, progress=False)
    assert "/nowhere" in str(info.value.__cause__)
    assert not list(parts_dir(tmp_path / "p.parquet").glob("*.parquet"))
    deadline = time.monotonic() + 20  # ray.kill returns before the cluster has the CPUs back
    while ray.available_resources().get("CPU", 0) < 2 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert ray.available_resources().get("CPU", 0) == 2  # both actors killed


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


def test_the_pipeline_puts_one_engine_on_each_gpu():
    """`backend: auto` (the default): one Ray actor per GPU on a machine with several, in this process on
    one GPU or none; an explicit backend wins; bad settings are named."""
    from pipelines.pipeline import profile_backend

    assert profile_backend({}, gpus=4, ray_installed=True) == ("ray", {"workers": 4, "gpus_per_worker": 1.0})
    assert profile_backend({}, gpus=1, ray_installed=True) == ("local", {})
    assert profile_backend({}, gpus=0, ray_installed=True) == ("local", {})
    assert profile_backend({}, gpus=8, ray_installed=False) == ("local", {})
    assert profile_backend({"backend": "local"}, gpus=8, ray_installed=True) == ("local", {})
    assert profile_backend({"backend": "ray", "ray": {"address": "h:1"}}, 0, True) == ("ray", {"address": "h:1"})
    with pytest.raises(ValueError, match="needs Ray"):
        profile_backend({"backend": "ray"}, 0, ray_installed=False)
    with pytest.raises(ValueError, match="unknown"):
        profile_backend({"ray": {"nodes": 2}}, 2, True)


def test_the_pipeline_profile_stage_shards_over_fake_gpus(tmp_path, monkeypatch):
    """With 4 (fake) GPUs the stage hands the profile to 4 Ray actors holding one GPU each, and its
    inputs key does not depend on the backend (the profiles are equal)."""
    import pipelines.pipeline as pipeline
    from grpo_data.tables.problems import to_table, user_prompt

    train = tmp_path / "train.parquet"
    to_table([{"id": f"id{i}", "source": "t", "prompt": user_prompt(f"q{i}"), "answer": str(i), "level": None,
               "meta": "{}"} for i in range(4)]).write_parquet(train)
    seen = {}

    def fake_ray(model, problems, cfg, choice, ray_settings, out, data, prior):
        seen.update(ray_settings, rows=problems.height)
        from grpo_data.profile_chunks import summarize_problem
        from grpo_data.profile_parts import parts_dir
        from grpo_data.tables import io
        from grpo_data.tables.profile_table import PROFILE_COLUMNS

        parts_dir(out).mkdir(parents=True, exist_ok=True)
        rows = pl.DataFrame([{"id": i, **summarize_problem(1, 2, [], 0, {})} for i in problems["id"]])
        io.write_parquet(parts_dir(out) / "shard0000-of-0001-id0.parquet", rows.select(PROFILE_COLUMNS))
        return {"problems": 4, "skipped": 0, "left_out": 0, "samples": 8, "seconds": 0.0}

    monkeypatch.setattr(pipeline, "visible_gpus", lambda: 4)
    monkeypatch.setattr(pipeline, "_profile_on_ray", fake_ray)
    pipeline.profile_stage("scripted", train, {"k": 2}, tmp_path / "profile.parquet")
    assert seen == {"workers": 4, "gpus_per_worker": 1.0, "rows": 4}
    assert pipeline.profile_key("scripted", train, {"k": 2, "backend": "ray"}) == pipeline.profile_key("scripted", train, {"k": 2})


def test_the_card_records_the_backend():
    from grpo_data.tables.card_provenance import backend_note
    from grpo_data.tables.exports import card_record

    ray_meta = {"backend": "ray", "ray_workers": 8, "config": {"wave": 16}}
    assert card_record(ray_meta)["backend"] == {"name": "ray", "workers": 8, "wave": 16}
    assert backend_note(ray_meta).startswith(", on 8 Ray workers, adaptive decisions in waves of 16 chunks (equal to a "
                                             "single-process profile with the same seed and wave on CPU engines")
    assert backend_note({"backend": "local", "config": {"wave": 1}}) == ", in one process"
    assert backend_note({}) == "" and card_record({})["backend"] == {"name": None, "workers": None, "wave": None}


def _cli(*args, timeout=600):
    import subprocess

    return subprocess.run([sys.executable, "-m", "pipelines.cli", "profile", *map(str, args)], capture_output=True,
                          text=True, timeout=timeout)


def test_grpo_profile_names_an_address_with_no_cluster(tmp_path, world_tables, untrained_policy):
    data = tmp_path / "train.parquet"
    world_tables["train"].head(4).write_parquet(data)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = _cli("--data", data, "--model", untrained_policy, "--out", tmp_path / "p.parquet", "--backend", "ray",
                "--ray-address", f"127.0.0.1:{port}", timeout=120)
    assert proc.returncode == 2 and f"no Ray cluster reachable at 127.0.0.1:{port}" in proc.stderr, proc.stderr[-2000:]
    assert not (tmp_path / "p.parquet").exists()


@pytest.mark.slow
def test_grpo_profile_on_ray_with_vllm_equals_the_local_profile(tmp_path, world_tables, untrained_policy):
    """Engine: the real vLLM engine (vllm-cpu) inside a Ray actor of the local cluster the command
    starts, math-verify in the actor's verifier pool; against the same command in one process. Adaptive,
    wave 2, T = 0.6, a prompt over the context (left out through the actor's measure, listed on the
    driver's disk): equal row for row, the same rejects."""
    from grpo_data.tables.problems import to_table, user_prompt

    long = to_table([{"id": "zz0", "source": "t", "prompt": user_prompt("1+2" * 80), "answer": "3", "level": 1,
                      "meta": "{}"}])
    data = tmp_path / "train.parquet"
    pl.concat([world_tables["train"].head(40), long]).write_parquet(data)
    common = ["--data", data, "--model", untrained_policy, "--adaptive", "--wave", "2", "--chunk-size", "8",
              "--temperature", "0.6", "--max-tokens", "48", "--max-k", "8", "--seed", "3", "--workers", "1"]
    local = _cli(*common, "--out", tmp_path / "local.parquet")
    assert local.returncode == 0, local.stderr[-3000:]
    on_ray = _cli(*common, "--out", tmp_path / "ray.parquet", "--backend", "ray", "--ray-workers", "1",
                  "--ray-cpus-per-worker", "2")
    assert on_ray.returncode == 0, on_ray.stderr[-3000:]
    assert "on 1 Ray workers (0 lost and replaced" in on_ray.stdout
    a, b = pl.read_parquet(tmp_path / "local.parquet"), pl.read_parquet(tmp_path / "ray.parquet")
    assert a.height == 40 and a.equals(b)
    assert (tmp_path / "ray.rejects.jsonl").read_text() == (tmp_path / "local.rejects.jsonl").read_text() != ""


def test_engine_workers_take_a_gpu_where_the_cluster_has_them(tmp_path, monkeypatch):
    """The CLI's and the pipeline's one rule: a GPU per actor on a cluster with GPUs (else Ray leaves
    every GPU visible to every actor), 1 CPU beside it, 2 without; a local model folder by its
    absolute path, a Hub name as given."""
    from grpo_data.ray_profile import engine_worker_spec

    monkeypatch.chdir(tmp_path)
    (tmp_path / "policy").mkdir()
    on_gpus = engine_worker_spec("vllm", "policy", {"CPU": 64.0, "GPU": 8.0}, WORKER_POOL)
    assert (on_gpus.gpus, on_gpus.cpus) == (1.0, 1.0)
    assert on_gpus.engine_factory.args == ("vllm", str(tmp_path / "policy"))
    on_cpus = engine_worker_spec("vllm", "Qwen/Qwen2.5-0.5B", {"CPU": 8.0}, WORKER_POOL, seed=3)
    assert (on_cpus.gpus, on_cpus.cpus) == (0.0, 2.0) and on_cpus.engine_factory.args[1] == "Qwen/Qwen2.5-0.5B"
    assert on_cpus.engine_factory.keywords["seed"] == 3
    given = engine_worker_spec("vllm", "m", {"GPU": 8.0}, WORKER_POOL, cpus=4, gpus=0.5)
    assert (given.gpus, given.cpus) == (0.5, 4.0)
