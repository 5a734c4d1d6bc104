"""The data pipeline at scale (`grpo bench data`): load, dedup, decontaminate and write a million rows.

Input: N synthetic GSM8K-shaped rows (question of ~45 words, worked answer ending in `#### N`) as
JSON lines, 5% of them broken or repeated in known ways (MESS), and 5,000 evaluation rows of the
same shape, of which PLANTED are copied into the pool (verbatim, re-cased and re-spaced, or behind
an added sentence). Timed, in a child process whose peak memory (the whole process tree) is
sampled: `load_problems` (read, normalize, check golds, dedup) -> `decontaminate` against the
evaluation rows -> the kept rows written as parquet shards, the rejects beside them. The same run
on the same rows as one parquet file is measured too (the Hub's format; polars reads it column by
column).

Checked after the run, from the files written: every planted row removed (and no other), every
broken row in the rejects file with the reason it was broken for.

Goals (2 cores): the whole run <= 60 s and <= 2 GB peak.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import polars as pl

# kind -> (share of the pool, the reject reason it must get)
MESS = {
    "not_json": (0.01, "malformed_row"),
    "no_marker": (0.01, "no_extractable_answer"),
    "null_answer": (0.005, "missing_answer"),
    "empty_question": (0.005, "empty_question"),
    "exact_duplicate": (0.01, "duplicate"),
    "spacing_duplicate": (0.005, "duplicate"),
    "conflicting_duplicate": (0.005, "conflicting_duplicate"),
}
EVAL_ROWS = 5_000
PLANTED = 1_000
WORDS = [f"{a}{b}" for a in ("ba", "ke", "lo", "mi", "nu", "po", "ra", "si", "tu", "ve", "xa", "zo", "di", "fe")
         for b in range(400)]


def _question(rng: np.random.Generator, n_words: int = 45) -> str:
    w = rng.choice(WORDS, size=n_words)
    return " ".join(w[:20]) + f" has {rng.integers(2, 99)} items. " + " ".join(w[20:]) + "?"


def _answer(rng: np.random.Generator, value: int) -> str:
    return " ".join(rng.choice(WORDS, size=40)) + f" <<{value}>>\n#### {value}"


def make_data(folder: Path, n: int, seed: int = 0) -> dict:
    """Write pool.jsonl, pool.parquet and eval.jsonl; return what was planted where."""
    rng = np.random.default_rng(seed)
    evals = [{"question": _question(rng), "answer": _answer(rng, int(rng.integers(1, 9999)))} for _ in range(EVAL_ROWS)]
    rows: list[dict | str] = [{"question": _question(rng), "answer": _answer(rng, int(rng.integers(1, 9999)))}
                              for _ in range(n)]
    positions = rng.permutation(np.arange(1000, n))  # leave early rows clean: duplicates copy them
    cursor, expected, planted = 0, {}, {}
    for kind, (share, reason) in MESS.items():
        for pos in positions[cursor:cursor + int(share * n)].tolist():
            src = rows[int(rng.integers(0, 1000))]
            if kind == "not_json":
                rows[pos] = '{"question": "cut off'
            elif kind == "no_marker":
                rows[pos]["answer"] = rows[pos]["answer"].split("####")[0]
            elif kind == "null_answer":
                rows[pos]["answer"] = None
            elif kind == "empty_question":
                rows[pos]["question"] = "  \n "
            elif kind == "exact_duplicate":
                rows[pos] = dict(src)
            elif kind == "spacing_duplicate":
                rows[pos] = {"question": "  " + src["question"].replace(" ", "   ", 3), "answer": src["answer"]}
            else:
                rows[pos] = {"question": src["question"], "answer": src["answer"] + "1"}
            expected[pos] = reason
        cursor += int(share * n)
    for j, pos in enumerate(positions[cursor:cursor + PLANTED].tolist()):
        e = evals[j]
        q = e["question"]
        if j % 3 == 1:
            q = q.upper().replace(" ", "  ")
        elif j % 3 == 2:
            q = "Read carefully. " + q
        rows[pos] = {"question": q, "answer": e["answer"]}
        planted[pos] = j
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "pool.jsonl", "w") as fh:
        for r in rows:
            fh.write((r if isinstance(r, str) else json.dumps(r)) + "\n")
    valid = [r if isinstance(r, dict) else {"question": None, "answer": None} for r in rows]
    pl.DataFrame(valid, schema={"question": pl.String, "answer": pl.String}).write_parquet(folder / "pool.parquet")
    with open(folder / "eval.jsonl", "w") as fh:
        for r in evals:
            fh.write(json.dumps(r) + "\n")
    return {"expected_rejects": expected, "planted": planted}


# ---------------------------------------------------------------- the timed run (child process)


def run_pipeline(pool: str, evals: str, out: str) -> dict:
    """load -> decontaminate -> write shards; returns the seconds of each step and counts."""
    from grpo_data import io
    from grpo_data.decontam import DecontamConfig, decontaminate, removed_as_rejects
    from grpo_data.loaders import load_problems, read_eval_rows, resolve_preset

    t0 = time.monotonic()
    loaded = load_problems(pool, resolve_preset("gsm8k"))
    t1 = time.monotonic()
    eval_rows = read_eval_rows(evals, resolve_preset("gsm8k"), split="test")
    result = decontaminate(loaded.table, eval_rows, DecontamConfig())
    t2 = time.monotonic()
    written = io.write_parquet_shards(Path(out) / "shards", result.kept, rows_per_file=100_000)
    rejects = pl.concat([loaded.rejects, removed_as_rejects(result.removed, None, 13)], how="diagonal")
    io.write_ndjson(Path(out) / "rejects.jsonl", rejects)
    t3 = time.monotonic()
    return {"seconds": {"load": t1 - t0, "decontaminate": t2 - t1, "write": t3 - t2, "total": t3 - t0},
            "read": loaded.n_read, "kept": result.kept.height, "rejected_on_load": loaded.rejects.height,
            "removed_contaminated": result.removed.height, "shard_files": len(written)}


def _tree_rss_kb(pid: int) -> int:
    """Resident memory of a process and all its descendants (kB), from /proc."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as fh:
                    ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
                children.setdefault(ppid, []).append(int(entry))
            except (OSError, IndexError, ValueError):
                continue
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        try:
            with open(f"/proc/{p}/status") as fh:
                total += next(int(line.split()[1]) for line in fh if line.startswith("VmRSS:"))
        except (OSError, StopIteration):
            pass
        todo += children.get(p, [])
    return total


def measure(pool: Path, evals: Path, out: Path) -> dict:
    """Run the pipeline in a child process; its result plus the peak RSS of its process tree."""
    cmd = [sys.executable, "-m", "bench.data_bench", str(pool), str(evals), str(out)]
    start = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=Path(__file__).resolve().parent.parent)
    peak = [0]

    def poll() -> None:
        while proc.poll() is None:
            peak[0] = max(peak[0], _tree_rss_kb(proc.pid))
            time.sleep(0.05)

    poller = threading.Thread(target=poll, daemon=True)
    poller.start()
    stdout, stderr = proc.communicate()
    poller.join()
    if proc.returncode != 0:
        raise RuntimeError(f"data bench child failed:\n{stderr[-3000:]}")
    result = json.loads(stdout.strip().splitlines()[-1])
    result["wall_seconds_with_startup"] = time.monotonic() - start
    result["peak_rss_mb"] = peak[0] / 1024
    return result


def check(out: Path, truth: dict, n: int) -> dict:
    """What the files say about the planted and broken rows."""
    rejects = pl.read_ndjson(out / "rejects.jsonl", infer_schema_length=None)
    by_row = dict(zip(rejects["row"].to_list(), rejects["reason"].to_list(), strict=True))
    exp = truth["expected_rejects"]
    missing = [p for p in exp if p not in by_row]
    wrong_reason = [p for p in exp if p in by_row and by_row[p] != exp[p]]
    contaminated = set(rejects.filter(pl.col("reason") == "contaminated")["row"].to_list())
    kept = pl.read_parquet(out / "shards" / "*.parquet")
    meta_rows = kept.select(pl.col("meta").str.json_path_match("$.row").cast(pl.Int64))["meta"]
    planted_kept = len(set(truth["planted"]) & set(meta_rows.to_list()))
    return {"broken_rows": len(exp), "broken_in_rejects": len(exp) - len(missing), "broken_wrong_reason": len(wrong_reason),
            "planted": len(truth["planted"]), "planted_removed": len(truth["planted"]) - planted_kept,
            "contaminated_rows_removed": len(contaminated),
            "false_positive_removals": len(contaminated - set(truth["planted"])),
            "rows_accounted": kept.height + rejects.height == n}


def run(quick: bool = False, n: int | None = None) -> dict:
    n = n or (100_000 if quick else 1_000_000)
    with tempfile.TemporaryDirectory(prefix="grpo-data-bench-") as tmp:
        tmp = Path(tmp)
        t = time.monotonic()
        truth = make_data(tmp / "in", n)
        gen_s = time.monotonic() - t
        results = {}
        for fmt in ("jsonl", "parquet"):
            out = tmp / f"out-{fmt}"
            r = measure(tmp / "in" / f"pool.{fmt}", tmp / "in" / "eval.jsonl", out)
            r["checks"] = check(out, truth, n) if fmt == "jsonl" else check_parquet(out, truth, n)
            results[fmt] = r
    goals = {fmt: {"total_s_le_60": r["seconds"]["total"] <= 60, "peak_le_2gb": r["peak_rss_mb"] <= 2048,
                   "every_planted_removed": r["checks"]["planted_removed"] == r["checks"]["planted"],
                   "every_broken_row_rejected": r["checks"]["broken_in_rejects"] == r["checks"]["broken_rows"]}
             for fmt, r in results.items()}
    return {"rows": n, "mess_share": sum(s for s, _ in MESS.values()), "eval_rows": EVAL_ROWS, "planted": PLANTED,
            "generate_seconds_untimed": gen_s, "results": results, "goals": goals}


def check_parquet(out: Path, truth: dict, n: int) -> dict:
    """As `check`, for the parquet copy: its broken JSON lines are rows with null fields (missing_question)."""
    exp = {p: ("missing_question" if r == "malformed_row" else r) for p, r in truth["expected_rejects"].items()}
    return check(out, {**truth, "expected_rejects": exp}, n)


if __name__ == "__main__":  # the child process of `measure`
    print(json.dumps(run_pipeline(*sys.argv[1:4])))
