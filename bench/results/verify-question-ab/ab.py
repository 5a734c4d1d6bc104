"""Verifier throughput A/B in one run: bench.verify_bench's clean set through each checkout's pool,
alternated 3 times. Usage: ab.py NEW_ROOT OLD_ROOT"""
import json
import os
import platform
import subprocess
import sys

CHILD = r'''
import sys, time, random, logging, json
sys.path.insert(0, sys.argv[1]); sys.path.insert(1, sys.argv[2])
logging.disable(logging.WARNING)
from bench.verify_bench import clean_pairs
from grpo_data.verify.pool import VerifierPool, PoolConfig
pairs = clean_pairs(3000, random.Random(0))
with VerifierPool(PoolConfig(workers=2)) as pool:
    pool.verify(["1"], ["\\boxed{1}"])
    t = time.perf_counter(); v = pool.verify([g for g, _ in pairs], [p for _, p in pairs]); dt = time.perf_counter() - t
print(json.dumps({"per_s": len(pairs) / dt, "ok": sum(x.correct for x in v)}))
'''
new, old = sys.argv[1], sys.argv[2]
res = {"new": [], "old": []}
for _ in range(3):
    for name, root in (("new", new), ("old", old)):
        out = subprocess.run([sys.executable, "-c", CHILD, root, new], capture_output=True, text=True, cwd="/tmp",
                             env={**os.environ, "PYTHONPATH": f"{root}:{new}"})
        res[name].append(json.loads(out.stdout.strip().splitlines()[-1]))
summary = {k: sorted(r["per_s"] for r in v) for k, v in res.items()}
med = {k: v[1] for k, v in summary.items()}
print(json.dumps({"machine": platform.processor() or platform.machine(), "cpus": os.cpu_count(), "verdicts_per_s": summary,
                  "median_new_over_old": med["new"] / med["old"], "ok_counts": {k: [r["ok"] for r in v] for k, v in res.items()}}))
