"""Helpers shared by the benchmarks: where results go and what machine produced them."""

from __future__ import annotations

import os
import platform
import time
from pathlib import Path
from typing import TYPE_CHECKING

from grpo_data.tables import io

if TYPE_CHECKING:
    import polars as pl

RESULTS = Path(__file__).resolve().parent / "results"


def machine() -> dict:
    info = {"platform": platform.platform(), "python": platform.python_version(), "cpus": os.cpu_count(),
            "processor": platform.processor() or platform.machine()}
    try:
        with open("/proc/cpuinfo") as fh:
            fields = dict(line.split(":", 1) for line in fh.read().split("\n\n", 1)[0].splitlines() if ":" in line)
        fields = {k.strip(): v.strip() for k, v in fields.items()}
        info["cpu_model"] = fields.get("model name")
        # a "model name" can hide the generation (AMD EPYC): family/model and the vector ISA decide
        # which kernels torch runs, so float results (and a warm start) can differ between them
        info["cpu_family_model"] = f"{fields.get('cpu family')}/{fields.get('model')}"
        info["cpu_isa"] = sorted(f for f in fields.get("flags", "").split()
                                 if f.startswith(("avx512f", "avx512_bf16", "amx")) or f in ("avx2", "fma"))
        with open("/proc/meminfo") as fh:
            info["mem_total"] = fh.readline().split(":", 1)[1].strip()
    except OSError:
        pass
    try:
        import torch

        info["torch"] = torch.__version__
        info["cuda"] = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    except ImportError:
        pass
    return info


def git_state(root: Path | None = None) -> str:
    """The checkout's commit, with "+dirty" when tracked files differ from it ("unknown" outside git)."""
    import subprocess

    root = root or Path(__file__).resolve().parent.parent
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True)
    if head.returncode != 0:
        return "unknown"
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root, capture_output=True,
                           text=True)
    return head.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")


def now() -> str:
    """The time now, UTC, as results store it (2026-12-08T03:08:25Z)."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def write_result(name: str, result: dict, out_dir: Path | None = None) -> Path:
    """bench/results/NAME.json with the machine and time added."""
    out = (out_dir or RESULTS) / f"{name}.json"
    io.write_json(out, {"benchmark": name, "machine": machine(),
                        "finished": now(), **result})
    return out


def mean_se(values: list[float]) -> dict:
    """Mean, standard error (sample std / sqrt n), min, max and n of a list of per-seed values."""
    import numpy as np

    v = np.asarray(values, dtype=np.float64)
    se = float(v.std(ddof=1) / np.sqrt(v.size)) if v.size > 1 else float("nan")
    return {"mean": float(v.mean()), "se": se, "min": float(v.min()), "max": float(v.max()), "n": int(v.size)}


def train_run(name: str, overrides: list[str], base: list[str], out: Path) -> tuple[list[dict], float]:
    """One training run in its own process (`grpo train`, engines and process groups start clean),
    its log in out/NAME.log; returns its metrics.jsonl records and its wall seconds."""
    import sys

    args = [a for item in base + overrides + [f"run.out={out / name}"] for a in ("-o", item)]
    start = time.monotonic()
    log = out / f"{name}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "w") as fh:
        returncode = run_child([sys.executable, "-m", "pipelines.cli", "train", *args], fh)
    if returncode != 0:
        raise RuntimeError(f"run {name} failed (exit {returncode}); see {log}")
    from grpo_train.metrics import read_metrics

    return read_metrics(out / name), time.monotonic() - start


def run_child(cmd: list[str], log) -> int:
    """`cmd` with its output to the open file `log`, in its own process group, which is killed whole
    (engines, verifier workers) when this process stops first: Ctrl-C, SIGTERM or an error. A stopped
    benchmark leaves no run behind to hold the CPU and the DeepSpeed port. Returns the exit code."""
    import os
    import signal
    import subprocess
    import threading

    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    main = threading.current_thread() is threading.main_thread()
    previous = signal.getsignal(signal.SIGTERM) if main else None

    def stop(signum, frame):
        raise SystemExit(128 + signum)

    if main:
        signal.signal(signal.SIGTERM, stop)
    try:
        return proc.wait()
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        if main:
            signal.signal(signal.SIGTERM, previous)


def run_key(args: list[str], inputs: list[str]) -> dict:
    """What a run depends on: its whole resolved config (but where it writes and whether it
    evaluated its start), a hash of the library's code, and hashes of its input files (policy
    weights, data, profile)."""

    import yaml

    from grpo_train.config_io import config_from_tree, dump_config

    tree = yaml.safe_load(dump_config(config_from_tree({}, args)))
    tree["run"].pop("out"), tree["run"].pop("eval_first")
    return {"config": tree, "code": library_code(), "inputs": input_hashes(inputs)}


def library_code() -> str:
    """A hash of the library's code (grpo_data, grpo_train): what a training run's result depends on."""
    import hashlib

    root = Path(__file__).resolve().parent.parent
    code = hashlib.sha256()
    for path in sorted([*root.glob("grpo_data/**/*.py"), *root.glob("grpo_train/**/*.py")]):
        code.update(path.read_bytes())
    return code.hexdigest()[:16]


def same_as_stored(a, b) -> bool:
    """Equal as stored (JSON: tuples and lists alike, keys in any order)."""
    import json

    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def differing_keys(a: dict, b: dict, keys=None) -> list[str]:
    """`keys` (default: every key of either dict) whose values differ as stored; a key missing on
    one side differs. How a stored benchmark result is checked against the run about to be made."""
    return [k for k in (keys if keys is not None else sorted({*a, *b})) if not same_as_stored(a.get(k), b.get(k))]


def input_hashes(inputs: list[str]) -> dict[str, str]:
    """path -> a hash of its content, for telling whether two runs started from the same policy,
    data and profile, in any session: a model folder by `weights_hash`, a parquet file by its
    rows and columns (not its bytes: the footer holds a creation time, so a rebuilt profile with the
    same rows would differ), any other file by its bytes."""
    import hashlib
    import json
    from pathlib import Path

    import polars as pl

    files = {}
    from grpo_data.profile_metadata import weights_hash

    for name in inputs:
        digest = hashlib.sha256()
        path = Path(name)
        if path.is_dir():  # a model: the weights hash profiles, cards and the demo print
            files[name] = weights_hash(str(path))
            continue
        if path.suffix == ".parquet":
            df = pl.read_parquet(path)
            digest.update(json.dumps([df.columns, df.rows()], default=str).encode())
        else:
            digest.update(path.read_bytes())
        files[name] = digest.hexdigest()[:16]
    return files


def completed(run_dir, key: dict, budget: int | dict) -> tuple[list[dict], float] | None:
    """(records, seconds) of a finished run in run_dir with this exact key (reused when the
    benchmark is run again after a stop), else None: any difference in config, code or inputs, a
    missing key, an unfinished or unreadable run all mean run it again."""
    import json
    from pathlib import Path

    from grpo_train.metrics import read_metrics

    run_dir = Path(run_dir)
    try:
        saved = json.loads((run_dir / "bench-key.json").read_text())
        records = read_metrics(run_dir)
    except (OSError, ValueError):
        return None
    if saved.get("key") != key:
        return None
    return (records, saved["seconds"]) if finished(records, budget) else None


def finished(records: list[dict], budget: int | dict) -> bool:
    """A run's metrics records reach the budget and end with an evaluation. `budget`: training
    rollouts, or {"tokens": N, "charged": C}: generated tokens plus the C charged before the run."""
    trains = [r for r in records if r["kind"] == "train"]
    if not trains or records[-1]["kind"] != "eval":
        return False
    if isinstance(budget, dict):
        return trains[-1].get("tokens_generated", 0) + budget["charged"] >= budget["tokens"]
    return trains[-1]["rollouts_generated"] >= budget


def cached_train_run(name: str, args: list[str], base: list[str], out: Path, inputs: list[str],
                     budget: int | dict) -> tuple[list[dict], float]:
    """`train_run`, or the finished run already in out/NAME when it was made with the same config,
    code and inputs (`run_key`): a stopped benchmark picks up where it stopped."""
    from grpo_data.tables import io

    key = run_key(base + args, inputs)
    found = completed(out / name, key, budget)
    if found is not None:
        print(f"{out / name}: reusing the finished run", flush=True)
        return found
    started, git = now(), git_state()  # the checkout that runs it
    records, seconds = train_run(name, args, base, out)
    io.write_json(out / name / "bench-key.json", {"key": key, "seconds": seconds, "started": started,
                                                  "finished": now(),
                                                  "git": git})
    return records, seconds


def pool_table(train: pl.DataFrame, size: int, level: bool, seed: int = 0) -> pl.DataFrame:
    """The regime's training pool: `size` problems drawn once from the world's pool (the same for
    every arm and seed), with the `level` column removed in the no-level condition (the curriculum
    and prior benchmarks share it)."""
    import numpy as np
    if size > train.height:
        raise ValueError(f"a pool of {size} problems asked from {train.height}")
    rows = np.sort(np.random.default_rng(seed).choice(train.height, size=size, replace=False))
    table = train[rows.tolist()]
    return table if level else table.drop("level", strict=False)


def stored_warm_start(results: Path, name: str) -> Path:
    """A warm start stored under `results` (committed: every session trains from the same weights),
    checked against the weights hash its bootstrap.json records."""
    import json

    from grpo_data.profile_metadata import weights_hash

    stored = Path(results) / name
    if not (stored / "model.safetensors").exists():
        raise FileNotFoundError(f"{stored} is missing: restore it from git (it is the registered warm start)")
    recorded = json.loads((stored / "bootstrap.json").read_text()).get("weights_hash")
    if weights_hash(str(stored)) != recorded:
        raise ValueError(f"{stored}: its weights hash {weights_hash(str(stored))} is not the {recorded} its "
                         "bootstrap.json records (a damaged copy, or a Git LFS pointer): restore it from git")
    return stored


def resolved_overrides(resolved: Path) -> list[str]:
    """A run's resolved_config.yaml as `key=value` overrides (`section.key=value` for each section),
    each value written as JSON, which YAML reads back as written: training again as that run did."""
    import json

    import yaml

    cfg = yaml.safe_load(Path(resolved).read_text())
    flat = [f"{key}={json.dumps(value)}" for key, value in cfg.items() if not isinstance(value, dict)]
    return flat + [f"{section}.{k}={json.dumps(v)}" for section, values in cfg.items() if isinstance(values, dict)
                   for k, v in values.items()]
