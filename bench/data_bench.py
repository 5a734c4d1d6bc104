"""The data pipeline at scale (`grpo bench data`): load, dedup, decontaminate and write a million rows.

Input: N synthetic GSM8K-shaped rows (question of ~45 words with a `$N$` quantity, worked answer
ending in `#### N`) as JSON lines, and 5,000 evaluation rows (10% of them one-line problems shorter
than a 13-gram). What makes it a fair test rather than a clean one:
  - 5% of the pool is broken or repeated in known ways (MESS);
  - half of all pool and evaluation questions end with the same instruction template (verl's "Let's
    think step by step and output the final answer within \boxed{}."), which a naive 13-gram match
    would take for contamination of every row;
  - PLANTED evaluation rows are copied into the pool: verbatim, re-cased and re-spaced, behind an
    added sentence, with `$N$` rewritten as `\\(N\\)`, and one-liners behind "Problem: ";
  - NEAR_MISS pool rows share a 10-word run with an evaluation row (below a 13-gram) and must stay;
  - gold answers are integers, as GSM8K's are (the fast path judges them without math-verify); what
    other golds cost is measured apart: distinct LaTeX golds checked per second through the verifier
    pool (`latex_golds`), the figure to scale a NuminaMath-like load by.
Timed, in a child process whose memory (the whole process tree) is sampled: `load_problems` (read,
normalize, check golds, dedup) -> `decontaminate` -> the kept rows written as parquet shards, the
rejects beside them. The same rows as one parquet file (the Hub's format) are measured too.

Checked after the run, from the files written: every planted row removed and no other, every broken
row in the rejects file with the reason it was broken for, every row accounted for.

Goals (2 cores): the whole run <= 60 s (child start-up and imports included) and <= 2 GB peak.
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
SHORT_EVAL_SHARE = 0.1
PLANTED = 1_000
NEAR_MISS = 1_000
LATEX_GOLDS = 5_000
TEMPLATE = " Let's think step by step and output the final answer within \\boxed{}."
WORDS = np.array([f"{a}{b}" for a in ("ba", "ke", "lo", "mi", "nu", "po", "ra", "si", "tu", "ve", "xa", "zo", "di",
                                      "fe") for b in range(400)])


def _questions(rng: np.random.Generator, n: int, n_words: int = 45) -> list[str]:
    words = rng.choice(WORDS, size=(n, n_words)).tolist()
    counts, template = rng.integers(2, 999, size=n).tolist(), (rng.random(n) < 0.5).tolist()
    return [" ".join(w[:20]) + f" has ${c}$ items. " + " ".join(w[20:]) + "?" + (TEMPLATE if t else "")
            for w, c, t in zip(words, counts, template, strict=True)]


def _one_liner(rng: np.random.Generator) -> str:
    return f"Compute ${rng.integers(2, 99)} \\cdot {rng.integers(2, 99)}$ " + " ".join(rng.choice(WORDS, size=4)) + "."


def _answers(rng: np.random.Generator, n: int) -> list[str]:
    words = rng.choice(WORDS, size=(n, 40)).tolist()
    values = rng.integers(1, 9999, size=n).tolist()
    return [" ".join(w) + f" <<{v}>>\n#### {v}" for w, v in zip(words, values, strict=True)]


def latex_gold_rate(n: int = LATEX_GOLDS) -> dict:
    """Distinct LaTeX gold answers checked per second by `check_golds` (verifier pool start included)."""
    from grpo_data.tables.loaders import check_golds

    forms = ["\\sqrt{{{v}}}", "{v}\\pi", "x^2+{v}", "\\frac{{\\sqrt{{{v}}}}}{{2}}", "({v}, \\infty)"]
    golds = pl.Series([forms[i % len(forms)].format(v=i // len(forms) + 2) for i in range(n)])
    t = time.monotonic()
    bad = check_golds(golds, None)
    seconds = time.monotonic() - t
    return {"golds": n, "unparseable": len(bad), "seconds": seconds, "golds_per_s": n / seconds,
            "workers": os.cpu_count()}


def make_data(folder: Path, n: int, seed: int = 0) -> dict:
    """Write pool.jsonl, pool.parquet and eval.jsonl; return what was planted where."""
    rng = np.random.default_rng(seed)
    n_short = int(SHORT_EVAL_SHARE * EVAL_ROWS)
    evals = [{"question": q, "answer": a} for q, a in zip(
        [_one_liner(rng) for _ in range(n_short)] + _questions(rng, EVAL_ROWS - n_short), _answers(rng, EVAL_ROWS),
        strict=True)]
    rows: list[dict | str] = [{"question": q, "answer": a}
                              for q, a in zip(_questions(rng, n), _answers(rng, n), strict=True)]
    positions = rng.permutation(np.arange(1000, n))  # leave early rows clean: duplicates copy them
    cursor, expected, planted, near = 0, {}, {}, {}
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
        e = evals[j] if j % 5 == 4 else evals[n_short + j]  # every fifth a one-liner
        q = e["question"]
        if j % 5 == 4:
            q = "Problem: " + q
        elif j % 5 == 1:
            q = q.upper().replace(" ", "  ")
        elif j % 5 == 2:
            q = "Read carefully. " + q
        elif j % 5 == 3:
            q = q.replace("$", "\\(", 1).replace("$", "\\)", 1)
        rows[pos] = {"question": q, "answer": e["answer"]}
        planted[pos] = j
    cursor += PLANTED
    for j, pos in enumerate(positions[cursor:cursor + NEAR_MISS].tolist()):
        words = evals[n_short + PLANTED + j]["question"].split()
        rows[pos]["question"] = " ".join(words[25:35]) + " " + rows[pos]["question"]  # a 10-word run
        near[pos] = j
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "pool.jsonl", "w") as fh:
        for r in rows:
            fh.write((r if isinstance(r, str) else json.dumps(r)) + "\n")
    valid = [r if isinstance(r, dict) else {"question": None, "answer": None} for r in rows]
    pl.DataFrame(valid, schema={"question": pl.String, "answer": pl.String}).write_parquet(folder / "pool.parquet")
    with open(folder / "eval.jsonl", "w") as fh:
        for r in evals:
            fh.write(json.dumps(r) + "\n")
    return {"expected_rejects": expected, "planted": planted, "near_miss": near}


# ---------------------------------------------------------------- the timed run (child process)


def run_pipeline(pool: str, evals: str, out: str) -> dict:
    """load -> decontaminate -> write shards; returns the seconds of each step and counts."""
    from grpo_data.tables import io
    from grpo_data.tables.decontam import DecontamConfig, decontaminate, removed_as_rejects
    from grpo_data.tables.loaders import load_problems, read_eval_rows
    from grpo_data.tables.presets import resolve_preset

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


def _children(pid: int) -> list[int]:
    """Child pids from /proc/PID/task/*/children (cheap), else by scanning /proc."""
    try:
        out = []
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as fh:
                out += [int(x) for x in fh.read().split()]
        return out
    except OSError:
        found = []
        for entry in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open(f"/proc/{entry}/stat") as fh:
                    if int(fh.read().rsplit(")", 1)[1].split()[1]) == pid:
                        found.append(int(entry))
            except (OSError, IndexError, ValueError):
                continue
        return found


def _tree_rss_kb(pid: int) -> int:
    """Resident memory of a process and all its descendants (kB), from /proc."""
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        try:
            with open(f"/proc/{p}/status") as fh:
                total += next(int(line.split()[1]) for line in fh if line.startswith("VmRSS:"))
        except (OSError, StopIteration):
            continue
        todo += _children(p)
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
            time.sleep(0.02)

    poller = threading.Thread(target=poll, daemon=True)
    poller.start()
    stdout, stderr = proc.communicate()
    poller.join()
    if proc.returncode != 0:
        raise RuntimeError(f"data bench child failed:\n{stderr[-3000:]}")
    result = json.loads(stdout.strip().splitlines()[-1])
    result["wall_seconds_with_startup"] = time.monotonic() - start
    result["peak_rss_mb"] = peak[0] / 1024  # sum over the process tree, sampled every 20 ms
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
    kept_rows = set(meta_rows.to_list())
    planted_kept = len(set(truth["planted"]) & kept_rows)
    return {"broken_rows": len(exp), "broken_in_rejects": len(exp) - len(missing), "broken_wrong_reason": len(wrong_reason),
            "planted": len(truth["planted"]), "planted_removed": len(truth["planted"]) - planted_kept,
            "contaminated_rows_removed": len(contaminated),
            "false_positive_removals": len(contaminated - set(truth["planted"])),
            "near_misses": len(truth["near_miss"]), "near_misses_kept": len(set(truth["near_miss"]) & kept_rows),
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
    goals = {fmt: {"total_s_le_60": r["wall_seconds_with_startup"] <= 60,
                   "peak_le_2gb": max(r["peak_rss_mb"], r["main_process_maxrss_mb"]) <= 2048,
                   "every_planted_removed": r["checks"]["planted_removed"] == r["checks"]["planted"],
                   "every_broken_row_rejected": r["checks"]["broken_in_rejects"] == r["checks"]["broken_rows"]}
             for fmt, r in results.items()}
    return {"rows": n, "mess_share": sum(s for s, _ in MESS.values()), "eval_rows": EVAL_ROWS, "planted": PLANTED,
            "near_miss": NEAR_MISS, "template_share": 0.5, "generate_seconds_untimed": gen_s, "results": results,
            "goals": goals, "latex_golds": latex_gold_rate(LATEX_GOLDS if n >= 1_000_000 else 200)}


def check_parquet(out: Path, truth: dict, n: int) -> dict:
    """As `check`, for the parquet copy: its broken JSON lines are rows with null fields (missing_question)."""
    exp = {p: ("missing_question" if r == "malformed_row" else r) for p, r in truth["expected_rejects"].items()}
    return check(out, {**truth, "expected_rejects": exp}, n)


if __name__ == "__main__":  # the child process of `measure`
    out = run_pipeline(*sys.argv[1:4])
    # the kernel's high-water marks (they catch spikes between the parent's samples): this process,
    # and the largest of its finished children (the verifier pool's workers)
    with open("/proc/self/status") as fh:  # VmHWM: this process's own peak (ru_maxrss survives exec)
        out["main_process_maxrss_mb"] = next(int(x.split()[1]) for x in fh if x.startswith("VmHWM:")) / 1024
    print(json.dumps(out))
