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
