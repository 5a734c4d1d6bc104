"""Profiling on Ray (`grpo bench ray_profile`, issue #37), on the embedded world and the warm-started
policy, real vLLM engines in Ray actors and math-verify in each actor's verifier pool:

1. overhead: the same problems, settings and cores profiled in this process and on a local Ray
   cluster with one engine actor holding every core; profiling seconds of each (engines already up),
   interleaved repetitions, the ratio ray / local per repetition (goal: overhead <= 10%);
2. faults: a cluster of a head and a second node process (one CPU each), one engine actor per node;
   the second node's actor process killed with SIGKILL when the run's second chunk returns, while that
   actor is inside a chunk (each actor holds two, `prefetch`); the run finishes
   and its profile is compared with the single-process one problem by problem (goal: 0 problems lost,
   0 counted twice, counts equal).
"""

from __future__ import annotations

import os
import shutil
import signal
import time
from functools import partial
from pathlib import Path

import polars as pl

from grpo_data.generation.engines import make_engine
from grpo_data.generation.prompting import SamplingConfig
from grpo_data.profile_config import ProfileConfig
from grpo_data.profile_parts import merge_parts
from grpo_data.profiler import profile_problems
from grpo_data.verify.pool import PoolConfig, VerifierPool

POOL = PoolConfig(workers=1)  # one verifier process per engine, in both paths


def _compare(got: pl.DataFrame, want: pl.DataFrame) -> dict:
    ids, want_ids = got["id"].to_list(), set(want["id"].to_list())
    joined = want.join(got, on="id", how="left", suffix="_ray")
    differ = joined.filter((pl.col("k") != pl.col("k_ray")) | (pl.col("n_correct") != pl.col("n_correct_ray"))
                           | pl.col("k_ray").is_null())
    return {"problems": len(want_ids), "lost": len(want_ids - set(ids)), "duplicated": len(ids) - len(set(ids)),
            "extra": len(set(ids) - want_ids), "counts_differ": differ.height,
            "rows_equal": bool(got.sort("id").equals(want.sort("id")))}


def run(quick: bool = False, workdir: str = "runs/bench-ray-profile", reps: int = 5) -> dict:
    import ray
    from ray.cluster_utils import Cluster

    from grpo_data.ray_profile import RayCluster, WorkerSpec, profile_problems_ray
    from pipelines.stages import warm_policy, write_world

    # a warm start already built here (any seed's: the figures compare paths, not policies), else the demo's
    built = [p for p in ("runs/policy-warm", "runs/policy-warm-seed1") if (Path(p) / "config.json").exists()]
    policy = str(Path(built[0] if built else warm_policy()).resolve())
    train = pl.read_parquet(write_world("runs/world")["train"]).sort("id")
    problems = train.head(128 if quick else 512)
    work = Path(workdir)
    shutil.rmtree(work, ignore_errors=True)
    cfg = ProfileConfig(k=4, chunk_size=32, seed=7, sampling=SamplingConfig(temperature=1.0, max_tokens=128))
    factory = partial(make_engine, "vllm", policy, seed=0)
    cores = os.cpu_count() or 1
    result = {"policy": policy, "problems": problems.height, "k": cfg.k, "chunk_size": cfg.chunk_size,
              "max_tokens": cfg.sampling.max_tokens, "cores": cores, "ray": ray.__version__}

    local_seconds, ray_seconds, local_tables = [], [], []
    engine = factory()
    with VerifierPool(POOL) as pool:
        cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": cores})
        with RayCluster(address=cluster.address) as rc:
            for rep in range(reps):
                out = work / f"local-{rep}.parquet"
                stats = profile_problems(problems, engine, pool, cfg, out, progress=False)
                local_seconds.append(stats["seconds"])
                local_tables.append(merge_parts(out).sort("id"))
                out = work / f"ray-{rep}.parquet"
                stats = profile_problems_ray(problems, WorkerSpec(factory, POOL, cpus=cores), cfg, out, rc, workers=1,
                                             progress=False)
                ray_seconds.append(stats["seconds"])
                result.setdefault("ray_one_worker_vs_local", []).append(_compare(merge_parts(out), local_tables[0]))
        cluster.shutdown()
    del engine
    samples = int(local_tables[0]["k"].sum())
    ratios = [r / loc for r, loc in zip(ray_seconds, local_seconds, strict=True)]
    result["overhead"] = {
        "local_seconds": local_seconds, "ray_seconds": ray_seconds, "ratio_per_rep": ratios,
        "overhead_mean": sum(ratios) / len(ratios) - 1, "samples": samples,
        "local_samples_per_s": samples / (sum(local_seconds) / reps), "ray_samples_per_s": samples / (sum(ray_seconds) / reps),
        "local_repeats_equal": all(t.equals(local_tables[0]) for t in local_tables),
        "goal": "overhead <= 0.10"}

    # faults: head + second node, one actor each, the second node's actor killed mid-run
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
    second = cluster.add_node(num_cpus=1)
    killed: list[dict] = []
    victims: list[int] = []

    def find_victim(pool) -> None:
        # the second node's actor's pid, asked before any chunk runs (a call made later would queue behind its
        # chunks), so the kill below lands while that actor is in the middle of one
        for actor in pool.actors:
            if ray.get(actor.node.remote()) == second.node_id:
                victims.append(ray.get(actor.pid.remote()))

    def kill_second_node_actor(chunk_no: int) -> None:
        if chunk_no != 1 or killed or not victims:
            return
        os.kill(victims[0], signal.SIGKILL)
        killed.append({"pid": victims[0], "node": second.node_id, "after_chunk": chunk_no, "at": time.time()})

    with RayCluster(address=cluster.address) as rc:
        cluster.wait_for_nodes()
        out = work / "fault.parquet"
        stats = profile_problems_ray(problems, WorkerSpec(factory, POOL, cpus=1), cfg, out, rc, workers=2,
                                     progress=False, on_start=find_victim, on_chunk=kill_second_node_actor)
        nodes = len([n for n in ray.nodes() if n.get("Alive")])
    cluster.shutdown()
    fault = _compare(merge_parts(out), local_tables[0])
    result["fault"] = {**fault, "nodes": nodes, "killed": killed, "replaced": stats["replaced"],
                       "retried": stats["retried"], "seconds": stats["seconds"],
                       "goal": "lost 0, duplicated 0, counts_differ 0"}
    result["goals_met"] = {"overhead": result["overhead"]["overhead_mean"] <= 0.10,
                           "fault": bool(killed) and fault["lost"] == 0 and fault["duplicated"] == 0
                           and fault["counts_differ"] == 0}
    return result
