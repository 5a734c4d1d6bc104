"""`grpo verify FILE.jsonl`: judge predictions against gold answers with math-verify, in killable workers.

Prints a count per verdict reason: `wrong` (an answer was read and differs) apart from `no_answer`
(no answer could be read: the extractor's miss or the format's, not the model's), and a few of the
final sentences that were not read, so the prompt or the extractor can be fixed.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

HELP = "judge predictions against gold answers (math-verify in killable workers); writes verdicts jsonl"

logger = logging.getLogger(__name__)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("input", help="jsonl with fields gold, pred and optional id and question (the problem's text, "
                        "which lets a denial answer a yes/no question)")
    parser.add_argument("--out", help="verdicts jsonl (default: INPUT stem + .verdicts.jsonl)")
    parser.add_argument("--workers", type=int, default=None, help="verifier processes (default: CPU count)")
    parser.add_argument("--deadline", type=float, default=5.0, help="hard seconds per item before the worker is killed")
    parser.add_argument("--timeout", type=int, default=2, help="math-verify's own timeout per parse/compare (s)")
    parser.add_argument("--memory-mb", type=int, default=2048, help="address-space cap per worker (MiB)")


def run(args: argparse.Namespace) -> int:
    from grpo_data.tables import io
    from grpo_data.verify.pool import PoolConfig, VerifierPool, summarize, unread_examples

    src = Path(args.input)
    if not src.is_file():
        print(f"grpo verify: {src}: no such file", file=sys.stderr)
        return 2
    items, bad = [], []
    with open(src, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as exc:
                bad.append(f"line {n}: not JSON ({exc.msg})")
                continue
            if not isinstance(rec, dict) or not isinstance(rec.get("gold"), str) or not isinstance(rec.get("pred"), str):
                bad.append(f"line {n}: needs string fields 'gold' and 'pred'")
                continue
            if rec.get("question") is not None and not isinstance(rec["question"], str):
                bad.append(f"line {n}: field 'question' must be a string (the problem's text) when given")
                continue
            items.append(rec)
    for msg in bad[:20]:
        logger.error("%s: %s", src, msg)
    if bad:
        logger.error("%s: %d lines skipped (fields: gold, pred, optional id and question)", src, len(bad))
    cfg = PoolConfig(**{k: v for k, v in dict(
        workers=args.workers, deadline_s=args.deadline, timeout_s=args.timeout, memory_mb=args.memory_mb
    ).items() if v is not None})
    with VerifierPool(cfg) as pool:
        questions = [r.get("question") for r in items]
        verdicts = pool.verify([r["gold"] for r in items], [r["pred"] for r in items],
                               questions if any(q is not None for q in questions) else None)
    out = Path(args.out) if args.out else src.with_name(src.stem + ".verdicts.jsonl")
    io.write_jsonl(out, (
        {"id": r.get("id", i), "correct": v.correct, "reason": v.reason, "detail": v.detail, "answer": v.answer}
        for i, (r, v) in enumerate(zip(items, verdicts, strict=True))
    ))
    counts = summarize(verdicts)
    print(f"{len(items)} verdicts -> {out}")
    for reason, n in counts.items():
        print(f"  {reason:17s} {n}")
    if bad:
        print(f"  skipped lines     {len(bad)}")
    unread = unread_examples(verdicts)
    if unread:
        print(f"final sentences not read as an answer ({counts['no_answer']} no_answer; ask for \\boxed{{}} "
              "in the prompt, or add the form to the verifier's tables):")
        for sentence in unread:
            print(f"  - {sentence}")
    return 0 if items else 1
