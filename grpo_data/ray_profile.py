"""Profiling on a Ray cluster: the single-process profile's plan, run on a pool of engine actors.

    with RayCluster(address=None, ...) as cluster:            # None: start a local cluster
        profile_problems_ray(problems, WorkerSpec(engine_factory, pool_cfg), cfg, out, cluster, workers=8)

The driver holds the plan (`grpo_data.profiler.ProfilePlan`): chunks cut from the shard's id-sorted
problems, each one's history, the parts already written. Each actor (`ProfileWorker`, one per GPU or
per `cpus_per_worker` CPUs) builds the project's own engine with the run's settings, its own killable
verifier pool (`grpo_data.verify.pool`) and the same rollout path as a single-process run, and profiles
one whole chunk per call (`run_chunk`: the chunk's rounds seeded from the seed and its ids). Chunks go
to whichever actor is free, so a slow node takes fewer. The driver writes each returned chunk as the
same atomic part a single-process run writes, named by its first id: the merge, the metadata and a
rerun's resume are the single-process ones.

Faults: an actor or node lost mid-chunk (its process killed, its node gone) raises on the driver; that
chunk goes back to the queue, the actor is replaced (Ray places the new one on any node with room) and
nothing of the lost call was written, so nothing is counted twice. A killed driver resumes from the
parts on disk. A chunk that takes down `max_attempts` actors stops the run with its ids: a
problem that kills every engine is a bug to see, not to retry forever.

Same answer: a chunk's samples depend on the seed, its ids and the round only; adaptive decisions
weigh the chunks of earlier waves (`ProfileConfig.wave`), never which actor finished first. With the
same seed and wave the Ray profile equals the single-process profile problem by problem, when every
actor runs the same engine build (vLLM seeds a whole batch per reseed: the chunk is the unit a worker
must take whole). Adaptive mode with wave 1 (the default) profiles one chunk at a time: set wave to at
least the number of workers.

Ray's Dataset streaming (`map_batches`) is not used: adaptive chunks wait on earlier waves' counts,
which a one-pass map cannot express; the driver's queue gives fixed and adaptive mode one path.
"""

from __future__ import annotations

import logging
import os
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from grpo_data.profile_chunks import ChunkResult, make_sampler, run_chunk
from grpo_data.profile_config import START_TIMEOUT_S, ProfileConfig
from grpo_data.profile_metadata import run_metadata
from grpo_data.profiler import ProfilePlan, RunTally, prepare_parts
from grpo_data.verify.pool import PoolConfig

logger = logging.getLogger(__name__)

MAX_ATTEMPTS = 3  # actors a chunk may take down before the run stops with its ids


class ClusterError(RuntimeError):
    """No Ray cluster to run on: none reachable at the address, or too small for one worker."""


def parse_address(address: str) -> tuple[str, int]:
    """host, port of a Ray address ("host:port", "ray://host:port" for Ray Client); ValueError otherwise."""
    text = address.removeprefix("ray://")
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise ValueError(f"--ray-address {address!r}: give host:port of the head node (e.g. 10.0.0.1:6379, the "
                         "address `ray start --head` prints), or auto for the cluster this machine belongs to")
    return host, int(port)


def check_reachable(address: str, timeout_s: float = 5.0) -> None:
    """Fail fast, naming the address, when nothing listens there: `ray.init` itself retries for minutes
    and then exits the process."""
    host, port = parse_address(address)
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return
    except OSError as exc:
        raise ClusterError(f"no Ray cluster reachable at {address} ({exc.strerror or exc}): start its head with "
                           f"`ray start --head --port {port}` on {host}, check the address and that the port is open "
                           "from here, or leave --ray-address out to start a local cluster") from None


@dataclass
class RayCluster:
    """A connection to a Ray cluster for the run's lifetime: `address` None starts a local one
    (num_cpus / num_gpus of this machine unless given), "auto" the one this machine already joined
    (RAY_ADDRESS), or host:port of a head node."""

    address: str | None = None
    num_cpus: int | None = None
    num_gpus: int | None = None
    env: dict[str, str] = field(default_factory=dict)  # variables every worker starts with
    started: bool = False

    def __enter__(self) -> RayCluster:
        import ray

        if self.address not in (None, "auto"):
            check_reachable(self.address)
        elif self.address == "auto" and os.environ.get("RAY_ADDRESS"):
            check_reachable(os.environ["RAY_ADDRESS"])
        runtime_env = {"env_vars": dict(self.env)} if self.env else None
        kwargs: dict = {"include_dashboard": False, "log_to_driver": False, "runtime_env": runtime_env}
        if self.address is None:
            kwargs |= {"num_cpus": self.num_cpus, "num_gpus": self.num_gpus}
        else:
            kwargs["address"] = self.address
        if not ray.is_initialized():
            try:
                ray.init(**kwargs)
            except ConnectionError as exc:  # "auto" with no cluster on this machine
                raise ClusterError(f"no Ray cluster to join ({exc}): start one with `ray start --head`, give "
                                   "--ray-address host:port, or leave --ray-address out to start a local one") from None
            self.started = True
        return self

    def __exit__(self, *exc) -> None:
        import ray

        if self.started:
            ray.shutdown()

    def resources(self) -> dict[str, float]:
        import ray

        return ray.cluster_resources()


@dataclass(frozen=True)
class WorkerSpec:
    """What every actor builds: its engine (a picklable factory, e.g. `functools.partial(make_engine,
    "vllm", model, settings=...)`, called on the actor's node) and its verifier pool; the resources each
    one holds (one GPU each where the cluster has GPUs)."""

    engine_factory: Callable
    pool: PoolConfig = field(default_factory=PoolConfig)
    cpus: float = 1.0
    gpus: float = 0.0
    verifier_factory: Callable | None = None  # None: a VerifierPool(pool); tests may pass a plain verifier


def engine_worker_spec(engine: str, model: str, resources: dict[str, float], pool: PoolConfig, seed: int = 0,
                       settings=None, trust_remote_code: bool = False, cpus: float | None = None,
                       gpus: float | None = None) -> WorkerSpec:
    """The WorkerSpec of `make_engine(engine, model, ...)` actors on a cluster with `resources`: one GPU
    each where it has GPUs (Ray sets CUDA_VISIBLE_DEVICES only for an actor that asks for one), else
    none; 1 CPU beside a GPU, 2 without; a local model folder by its absolute path (the workers' cwd
    is not the driver's)."""
    from functools import partial

    from grpo_data.generation.engines import EngineSettings, make_engine

    gpus = gpus if gpus is not None else (1.0 if resources.get("GPU", 0) > 0 else 0.0)
    cpus = cpus if cpus is not None else (1.0 if gpus else 2.0)
    model = str(Path(model).resolve()) if Path(model).exists() else model
    factory = partial(make_engine, engine, model, seed=seed, settings=settings or EngineSettings(),
                      trust_remote_code=trust_remote_code)
    return WorkerSpec(factory, pool, cpus=float(cpus), gpus=float(gpus))


def default_workers(resources: dict[str, float], spec: WorkerSpec) -> int:
    """As many workers as the cluster holds: one per `spec.gpus` GPUs when it asks for GPUs, else one
    per `spec.cpus` CPUs; ClusterError when not even one fits."""
    if spec.gpus > 0:
        n = int(resources.get("GPU", 0) // spec.gpus)
        what = f"{spec.gpus:g} GPU per worker, the cluster has {resources.get('GPU', 0):g}"
    else:
        n = int(resources.get("CPU", 0) // spec.cpus)
        what = f"{spec.cpus:g} CPU per worker, the cluster has {resources.get('CPU', 0):g}"
    if n < 1:
        raise ClusterError(f"no profile worker fits the Ray cluster ({what}): add nodes or lower --ray-cpus-per-worker")
    return n


class ProfileWorker:
    """One engine, one verifier pool and the rollout path, on a Ray worker; `run` profiles a chunk."""

    def __init__(self, spec: WorkerSpec, cfg: ProfileConfig, answer_format: str | None) -> None:
        self.engine = spec.engine_factory()
        if spec.verifier_factory is not None:
            self.verifier, self._pool = spec.verifier_factory(), None
        else:
            from grpo_data.verify.pool import VerifierPool

            self._pool = VerifierPool(spec.pool)
            self.verifier = self._pool.__enter__()
        self.cfg = cfg
        self.sampler = make_sampler(self.engine, self.verifier, cfg, answer_format)

    def pid(self) -> int:
        return os.getpid()

    def node(self) -> str:
        import ray

        return ray.get_runtime_context().get_node_id()

    def metadata(self, data_spec: str, verdict_settings: dict) -> dict:
        return run_metadata(self.engine, self.cfg, data_spec, verdict_settings)

    def fit(self, plan: ProfilePlan):
        """The plan's problems to do measured against this worker's engine context (`ProfilePlan.fit`);
        the driver applies it (and writes the left-out part on its own disk)."""
        return plan.fit(self.sampler)

    def run(self, job) -> ChunkResult:
        return run_chunk(self.sampler, job, self.cfg)


class _Pool:
    """The driver's actors: start, replace a lost one, hand out chunks to whichever is free."""

    def __init__(self, spec: WorkerSpec, cfg: ProfileConfig, answer_format: str | None, n: int) -> None:
        import ray

        self.remote = ray.remote(ProfileWorker).options(num_cpus=spec.cpus, num_gpus=spec.gpus, max_restarts=0,
                                                        max_concurrency=1)
        self.args = (spec, cfg, answer_format)
        self.actors = [self.start() for _ in range(n)]
        self.replaced = 0
        self.starting: dict = {}  # a replacement's readiness ref -> when it was asked for

    def start(self):
        return self.remote.remote(*self.args)

    def replace(self, actor):
        import ray

        ray.kill(actor, no_restart=True)
        slot = self.actors.index(actor)
        self.actors[slot] = new = self.start()
        self.starting[new.pid.remote()] = (slot, time.monotonic())
        self.replaced += 1
        return new

    def live(self) -> list[int]:
        return [slot for slot, actor in enumerate(self.actors) if actor is not None]

    def wait_s(self, start_timeout_s: float) -> float | None:
        """How long the driver may wait for a chunk before it must look at the replacements again
        (None: no replacement is starting, wait for the chunks)."""
        if not self.starting:
            return None
        return max(1.0, min(asked for _, asked in self.starting.values()) + start_timeout_s - time.monotonic())

    def ready(self) -> list[int]:
        """Live slots that can take chunks: not a replacement still being placed or loading its engine
        (a chunk sent there would wait minutes while the others idle at the end of a wave)."""
        starting = {slot for slot, _ in self.starting.values()}
        return [slot for slot in self.live() if slot not in starting]

    def give_up_stuck(self, start_timeout_s: float) -> list[tuple[int, str]]:
        """Forget replacements that are up; kill each one the cluster has not placed or started within
        `start_timeout_s` (no node with its resources is left), or whose engine failed to start (its node
        cannot run it: a missing model path, a GPU still held), and retire its slot, so the run goes on
        with the actors it has instead of waiting forever or charging the failure to a chunk. Returns the
        retired slots with why."""
        import ray

        retired = []
        for ref, (slot, asked) in list(self.starting.items()):
            ready, _ = ray.wait([ref], timeout=0)
            why = ""
            if ready:
                try:
                    ray.get(ref)
                except Exception as exc:  # noqa: BLE001 - the replacement's engine or verifier did not start
                    why = f"its engine did not start ({type(exc).__name__}: {str(exc).splitlines()[0][:200]})"
            elif time.monotonic() - asked > start_timeout_s:
                why = f"it did not start within {start_timeout_s:.0f} s (no node has its resources free)"
            else:
                continue
            del self.starting[ref]
            if why:
                ray.kill(self.actors[slot], no_restart=True)
                self.actors[slot] = None
                retired.append((slot, why))
        return retired


# Errors inside a live actor that mean its engine or device is broken (retry on a new actor), not that
# the chunk is bad: vLLM's dead engine, CUDA faults and device OOM, NCCL. Matched in the remote traceback.
ENGINE_FAULTS = ("EngineDeadError", "EngineGenerateError", "CUDA error", "illegal memory access",
                 "CUDA out of memory", "OutOfMemoryError", "NCCL error", "cudaErrorLaunchFailure")


def engine_fault(exc: BaseException) -> bool:
    """A task error raised by a broken engine or device on a live actor (see ENGINE_FAULTS)."""
    import ray.exceptions as rex

    return isinstance(exc, rex.RayTaskError) and any(mark in str(exc) for mark in ENGINE_FAULTS)


def lost(exc: BaseException) -> bool:
    """A Ray error that means the actor or its node is gone (retry elsewhere), not our code raising."""
    import ray.exceptions as rex

    return isinstance(exc, (rex.RayActorError, rex.WorkerCrashedError, rex.NodeDiedError,
                            rex.ObjectLostError, rex.OwnerDiedError)) and not isinstance(exc, rex.RayTaskError)


def profile_problems_ray(problems: pl.DataFrame, spec: WorkerSpec, cfg: ProfileConfig, out: str | Path,
                         cluster: RayCluster, workers: int | None = None, shard: tuple[int, int] = (0, 1),
                         data_spec: str = "", progress: bool = True, prior=None,
                         on_chunk: Callable[[int], None] | None = None, on_start: Callable | None = None,
                         max_attempts: int = MAX_ATTEMPTS, prefetch: int = 2,
                         start_timeout_s: float = START_TIMEOUT_S) -> dict:
    """Profile this shard's problems that `out` does not hold yet on `workers` actors of `cluster`
    (default: as many as it holds, `default_workers`); returns the counts `profile_problems` returns
    plus `workers`, `replaced` (actors lost and replaced) and `retried` (chunks run again). The run's
    metadata (the first actor's engine, `run_metadata`) records backend "ray" and the worker count.
    `on_start(pool)` is called once every actor is up (the fault benchmark kills one from there).
    `prefetch`: chunks each actor holds at once (a lost actor's queued chunks run again elsewhere).
    `start_timeout_s`: the longest an actor may take to be placed and load its engine (ClusterError after)."""
    import ray

    n = workers or default_workers(cluster.resources(), spec)
    plan = ProfilePlan(problems, out, cfg, shard, prior)
    if cfg.rule is not None and cfg.wave < n:
        logger.warning("adaptive profile with wave %d on %d workers: at most %d chunks run at once (each waits on the "
                       "counts of every earlier wave); set wave to %d or more to keep every worker busy",
                       cfg.wave, n, cfg.wave, n)
    pool = _Pool(spec, cfg, plan.fmt, n)
    try:
        return _drive(plan, pool, spec, cfg, out, data_spec, prior, progress, on_chunk, on_start, max_attempts, n,
                      prefetch, start_timeout_s)
    finally:
        for slot in pool.live():  # also when the run stops: their resources go back to the cluster
            ray.kill(pool.actors[slot])


def _drive(plan: ProfilePlan, pool: _Pool, spec: WorkerSpec, cfg: ProfileConfig, out, data_spec: str, prior,
           progress: bool, on_chunk, on_start, max_attempts: int, n: int, prefetch: int,
           start_timeout_s: float) -> dict:
    """The driver's loop: chunks of each wave to free actors, results written as they come back."""
    import ray

    first = pool.actors[0]
    try:
        meta = ray.get(first.metadata.remote(data_spec, spec.pool.verdict_settings()), timeout=start_timeout_s)
        ray.get([a.pid.remote() for a in pool.actors], timeout=start_timeout_s)  # every engine up before the clock
    except ray.exceptions.GetTimeoutError as exc:
        raise ClusterError(f"{n} profile workers ({spec.cpus} CPUs, {spec.gpus} GPUs each) did not all start within "
                           f"{start_timeout_s:.0f} s: the cluster cannot place that many (its resources: "
                           f"{ray.cluster_resources()}), or their engines load slower; ask for fewer workers "
                           "(--ray-workers) or raise the start timeout") from exc
    except Exception as exc:  # noqa: BLE001 - a worker that cannot start its engine
        raise ClusterError(f"a profile worker did not start ({type(exc).__name__}): its engine or verifier failed on "
                           "its node (the model path must exist on every node; the cause is below)") from exc
    meta |= {"backend": "ray", "ray_workers": n}
    prepare_parts(out, meta, cfg, prior)
    plan.apply(ray.get(first.fit.remote(plan)))
    if on_start is not None:
        on_start(pool)
    tally = RunTally(plan, progress, f"profile {plan.shard[0]}/{plan.shard[1]} on {n} Ray workers", on_chunk)
    retried = 0
    failures: dict[int, int] = {}

    def submit(queue: list[int], running: dict, inflight: list[int]) -> None:
        # each actor holds up to `prefetch` chunks: the next one waits at the actor, so it starts the moment the
        # last one returns instead of after the driver has written it and sent another
        while queue and pool.ready():
            slot = min(pool.ready(), key=inflight.__getitem__)
            if inflight[slot] >= prefetch:
                return
            position, actor = queue.pop(0), pool.actors[slot]
            running[actor.run.remote(plan.job(position))] = (slot, actor, position)
            inflight[slot] += 1

    for wave in plan.waves():
        queue = list(wave)
        running: dict = {}  # ref -> (slot, actor, position)
        inflight = [0] * len(pool.actors)
        submit(queue, running, inflight)
        while running or queue:  # a queue with nothing running: every actor left is a replacement starting
            refs = list(running) or list(pool.starting)
            if not refs:  # cannot happen while an actor lives (submit ran); guard against a busy loop
                raise ClusterError("no profile worker can take the chunks left; rerun to resume")
            ready, _ = ray.wait(refs, num_returns=1, timeout=pool.wait_s(start_timeout_s))
            for slot, why in pool.give_up_stuck(start_timeout_s):
                stuck = [ref for ref, job in running.items() if job[0] == slot]
                queue[:0] = sorted(running.pop(ref)[2] for ref in stuck)  # they never ran: no attempt counted
                inflight[slot] = 0
                if not pool.live():
                    raise ClusterError(f"no profile worker left: a replacement ({spec.cpus} CPUs, {spec.gpus} GPUs) "
                                       f"was given up: {why}; so no node of the cluster can run one now (a lost "
                                       "node took its resources, or the model path is missing there); add a node "
                                       "or fix it and rerun (the parts written so far stay, a rerun resumes)")
                logger.warning("a replacement Ray worker was given up: %s; going on with %d workers", why,
                               len(pool.live()))
            submit(queue, running, inflight)  # a replacement that came up takes chunks from here
            if not ready or ready[0] not in running:  # nothing back yet, a replacement's start, or a retired actor's
                continue
            [ref] = ready
            slot, actor, position = running.pop(ref)
            inflight[slot] -= 1
            try:
                result = ray.get(ref)
            except Exception as exc:  # noqa: BLE001 - sorted by `lost` and `engine_fault` below
                if not (lost(exc) or engine_fault(exc)):
                    raise
                retried += 1
                queue.insert(0, position)
                if pool.actors[slot] is actor:  # the first of this actor's chunks to fail: it ran there, not queued
                    failures[position] = failures.get(position, 0) + 1
                    ids = plan.chunks[position]["id"]
                    if failures[position] >= max_attempts:
                        raise RuntimeError(f"profile chunk {ids[0]}..{ids[-1]} ({len(ids)} problems) lost "
                                           f"{max_attempts} workers (last: {type(exc).__name__}): see the workers' "
                                           "logs under /tmp/ray/session_latest/logs; the parts written so far stay, "
                                           "a rerun resumes") from exc
                    logger.warning("Ray worker lost on chunk %s..%s (%s); replacing it and running the chunk again",
                                   ids[0], ids[-1], "engine fault" if engine_fault(exc) else type(exc).__name__)
                    pool.replace(actor)
                submit(queue, running, inflight)
                continue
            tally.done(result)
            submit(queue, running, inflight)
    plan.finish()
    return tally.close(workers=n, replaced=pool.replaced, retried=retried, backend="ray",
                       context_length=meta.get("context_length"))


def worker_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """Variables the workers start with: the engine defaults a single-process run sets for itself
    (in-process vLLM, the CPU KV-cache size), unless the driver's environment sets them."""
    keys = ("VLLM_ENABLE_V1_MULTIPROCESSING", "VLLM_CPU_KVCACHE_SPACE", "VLLM_CPU_OMP_THREADS_BIND", "HF_HOME",
            "HF_HUB_OFFLINE")
    env = {k: os.environ[k] for k in keys if k in os.environ}
    return {**env, **(extra or {})}

