"""Helpers shared by the benchmarks: where results go and what machine produced them."""

from __future__ import annotations

import os
import platform
import time
from pathlib import Path

from grpo_data import io

RESULTS = Path(__file__).resolve().parent / "results"


def machine() -> dict:
    info = {"platform": platform.platform(), "python": platform.python_version(), "cpus": os.cpu_count(),
            "processor": platform.processor() or platform.machine()}
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    info["cpu_model"] = line.split(":", 1)[1].strip()
                    break
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


def write_result(name: str, result: dict, out_dir: Path | None = None) -> Path:
    """bench/results/NAME.json with the machine and time added."""
    out = (out_dir or RESULTS) / f"{name}.json"
    io.write_json(out, {"benchmark": name, "machine": machine(),
                        "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), **result})
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
    import subprocess
    import sys

    args = [a for item in base + overrides + [f"run.out={out / name}"] for a in ("-o", item)]
    start = time.monotonic()
    log = out / f"{name}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "w") as fh:
        proc = subprocess.run([sys.executable, "-m", "pipelines.cli", "train", *args], stdout=fh, stderr=subprocess.STDOUT)
    if proc.returncode != 0:
        raise RuntimeError(f"run {name} failed (exit {proc.returncode}); see {log}")
    from grpo_train.trainer import read_metrics

    return read_metrics(out / name), time.monotonic() - start
