"""Verifier throughput A/B (`grpo bench verify_ab --against COMMIT`): the clean set of
`bench.verify_bench` judged by this checkout's verifier and by COMMIT's, in one run on one machine,
alternating (new, old) `rounds` times, each side in a fresh process whose `grpo_data` is its own
checkout's (COMMIT's is a `git archive` of its `grpo_data`). The result is the ratio of the medians:
a verifier change is held to a throughput goal against the code it replaces, never to a timed test."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

_CHILD = r"""
import json, logging, random, sys, time
logging.disable(logging.WARNING)
from bench.verify_bench import clean_pairs
from grpo_data.verify.pool import PoolConfig, VerifierPool
n = int(sys.argv[1])
pairs = clean_pairs(n, random.Random(0))
with VerifierPool(PoolConfig(workers=2)) as pool:
    pool.verify(["1"], ["\\boxed{1}"])
    start = time.perf_counter()
    verdicts = pool.verify([g for g, _ in pairs], [p for _, p in pairs])
    seconds = time.perf_counter() - start
print(json.dumps({"verdicts_per_s": n / seconds, "ok": sum(v.correct for v in verdicts)}))
"""


def _side(grpo_data_root: Path, n: int) -> dict:
    """One measurement in a fresh process that imports `grpo_data` from `grpo_data_root` (its verifier
    workers too: PYTHONPATH reaches the forkserver) and `bench` from this checkout."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(grpo_data_root), str(ROOT)])}
    done = subprocess.run([sys.executable, "-c", _CHILD, str(n)], capture_output=True, text=True, env=env,
                          cwd=tempfile.gettempdir(), timeout=1800)
    if done.returncode != 0:
        raise RuntimeError(f"verify_ab: the measurement under {grpo_data_root} failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def run(against: str, n: int = 3000, rounds: int = 3) -> dict:
    """`rounds` alternating measurements of this checkout's verifier and `against`'s on n clean pairs."""
    commit = subprocess.run(["git", "rev-parse", "--verify", f"{against}^{{commit}}"], cwd=ROOT, capture_output=True,
                            text=True)
    if commit.returncode != 0:
        raise ValueError(f"verify_ab: --against {against!r} names no commit of this repository")
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    with tempfile.TemporaryDirectory() as tmp:
        archive = Path(tmp) / "old.tar"
        subprocess.run(["git", "archive", "-o", str(archive), commit.stdout.strip(), "grpo_data"], cwd=ROOT, check=True)
        with tarfile.open(archive) as tar:
            tar.extractall(Path(tmp) / "old", filter="data")
        sides = {"new": [], "old": []}
        for _ in range(rounds):
            sides["new"].append(_side(ROOT, n))
            sides["old"].append(_side(Path(tmp) / "old", n))
    rates = {k: [s["verdicts_per_s"] for s in v] for k, v in sides.items()}
    return {"config": {"n": n, "rounds": rounds, "workers": 2},
            "new": {"commit": head, "verdicts_per_s": rates["new"], "ok": [s["ok"] for s in sides["new"]]},
            "old": {"commit": commit.stdout.strip(), "verdicts_per_s": rates["old"], "ok": [s["ok"] for s in sides["old"]]},
            "median_new_over_old": statistics.median(rates["new"]) / statistics.median(rates["old"]),
            "goals": {"median_new_over_old": ">= 0.9 (#64: within 10% of the previous verifier)"}}
