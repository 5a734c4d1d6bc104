"""Verifier throughput (`grpo bench verify`): verdicts per second on a clean set, and with 5%
adversarial predictions mixed in, through the same VerifierPool, measured in one run.

Goals: >= 500 verdicts/s clean on 2 cores; the adversarial mix stays within 2x of clean."""

from __future__ import annotations

import random
import time

from grpo_data.verify.pool import PoolConfig, VerifierPool, summarize

ADVERSARIAL = [
    "\\boxed{9^9^9^9}", "\\boxed{9^{9^{9^{9}}}}", "\\boxed{10^{10^{9}}}", "(" * 10_000 + "1" + ")" * 10_000,
    "x" * 1_000_000, "__import__('os').system('true')", "\\boxed{100000000!}", "\\boxed{2^{2^{33}}}",
]


def clean_pairs(n: int, rng: random.Random) -> list[tuple[str, str]]:
    """Distinct (gold, prediction) pairs in the formats real outputs take; half right, half wrong."""
    pairs = []
    for i in range(n):
        a, b = rng.randint(1, 999), rng.randint(2, 99)
        kind = i % 5
        right = rng.random() < 0.5
        if kind == 0:
            gold, pred = str(a * b), f"So the answer is \\boxed{{{a * b if right else a * b + 1}}}."
        elif kind == 1:
            gold, pred = f"\\frac{{{a}}}{{{b}}}", f"$\\frac{{{2 * a}}}{{{2 * b if right else 2 * b + 1}}}$"
        elif kind == 2:
            gold, pred = str(-a), f"The result is {-a if right else a}."
        elif kind == 3:
            gold, pred = f"{a}.{b}", f"\\boxed{{{a}.{b if right else b + 1}}}"
        else:
            gold, pred = f"{a * 1000}", f"\\boxed{{{a},000}}" if right else f"\\boxed{{{a},001}}"
        pairs.append((gold, pred))
    return pairs


def measure(pool: VerifierPool, pairs: list[tuple[str, str]]) -> dict:
    start = time.monotonic()
    verdicts = pool.verify([g for g, _ in pairs], [p for _, p in pairs])
    seconds = time.monotonic() - start
    return {"items": len(pairs), "seconds": seconds, "verdicts_per_s": len(pairs) / seconds,
            "reasons": summarize(verdicts)}


def run(n: int = 4000, adversarial_share: float = 0.05, seed: int = 0, workers: int = 2) -> dict:
    rng = random.Random(seed)
    clean = clean_pairs(n, rng)
    mixed = list(clean)
    n_adv = int(n * adversarial_share)
    for j in range(n_adv):
        pos = rng.randrange(len(mixed))
        mixed[pos] = (mixed[pos][0], ADVERSARIAL[j % len(ADVERSARIAL)] + " " * j)  # distinct, not deduplicated
    cfg = PoolConfig(workers=workers)
    with VerifierPool(cfg) as pool:
        pool.verify(["1"], ["\\boxed{1}"])  # warm the workers
        clean_r = measure(pool, clean)
        mixed_r = measure(pool, mixed)
        replaced = pool.replaced
    return {"config": {"n": n, "adversarial_share": adversarial_share, "workers": workers,
                       "deadline_s": cfg.deadline_s, "timeout_s": cfg.timeout_s},
            "clean": clean_r, "adversarial_mix": mixed_r, "workers_replaced": replaced,
            "slowdown_mixed_vs_clean": clean_r["verdicts_per_s"] / mixed_r["verdicts_per_s"],
            "goals": {"clean_verdicts_per_s": ">= 500", "slowdown_mixed_vs_clean": "<= 2"}}
