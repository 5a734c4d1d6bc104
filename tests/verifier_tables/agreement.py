"""Measure the verifier on the tables in this folder: agreement with math-verify's own regression
cases and extraction misses on the prose table. Run from the repository root:

    .venv/bin/python tests/verifier_tables/agreement.py                # this checkout
    .venv/bin/python tests/verifier_tables/agreement.py --root OLD     # another checkout's grpo_data

(e.g. OLD made by `mkdir /tmp/old && git archive <commit> grpo_data | tar -x -C /tmp/old`). Only
`grpo_data.verify.judge.verify_answer` is used, so any version of the verifier can be measured.
"""

from __future__ import annotations

import argparse
import json
import logging
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def read_rows(name: str) -> list[dict]:
    with open(HERE / name, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=str(HERE.parents[1]), help="checkout whose grpo_data is measured")
    args = parser.parse_args()
    sys.path.insert(0, args.root)
    logging.disable(logging.WARNING)  # math-verify logs every unparsable candidate
    from grpo_data.verify.judge import verify_answer

    table = [r for r in read_rows("math_verify_cases.jsonl") if r["source"].startswith("huggingface/Math-Verify")]
    got = [verify_answer(r["gold"], r["pred"]).correct for r in table]
    same = [g == r["math_verify"] for g, r in zip(got, table, strict=True)]
    # a listed exception ("ours", "why") differs from math-verify by design; any other difference is a failure
    expected = [g == r.get("ours", r["math_verify"]) for g, r in zip(got, table, strict=True)]
    listed = sum("ours" in r for r in table)
    no_boxed = [s for s, r in zip(same, table, strict=True) if "test_boxed.py" not in r["source"]]
    print(f"math-verify tables: agree on {sum(same)} of {len(same)} "
          f"({sum(no_boxed)} of {len(no_boxed)} without test_boxed.py); {listed} listed exception(s); "
          f"{sum(expected)} of {len(expected)} agree or are listed exceptions")
    for s, e, r in zip(same, expected, table, strict=True):
        if not s:
            tag = "listed exception" if e else "differs"
            print(f"  {tag}: {r['source']}: gold {r['gold'][:40]!r} pred {r['pred'][-40:]!r}"
                  + (f"\n    why: {r['why']}" if e and "why" in r else ""))
    prose = read_rows("prose.jsonl")
    got = [verify_answer(r["gold"], r["pred"]).reason for r in prose]
    readable = [(g, r) for g, r in zip(got, prose, strict=True) if r["expected"] != "no_answer"]
    missed = sum(g == "no_answer" for g, _ in readable)
    false_ok = sum(g == "ok" and r["expected"] != "ok" for g, r in zip(got, prose, strict=True))
    print(f"prose table: {missed} of {len(readable)} readable answers missed (no_answer), "
          f"{false_ok} judged ok against the table, {sum(g == r['expected'] for g, r in zip(got, prose, strict=True))} "
          f"of {len(prose)} rows as expected; {sum('known_false_ok' in r for r in prose)} listed known false ok(s), "
          f"{sum('known_miss' in r for r in prose)} listed known miss(es)")
    subset = [(g, r) for g, r in zip(got, prose, strict=True) if yes_no_or_none(r["gold"])]
    readable = [(g, r) for g, r in subset if r["expected"] != "no_answer"]
    print(f"  of which yes/no and none / no-such golds: {sum(g == 'no_answer' for g, _ in readable)} of {len(readable)} "
          f"readable answers missed, {sum(g == 'ok' and r['expected'] != 'ok' for g, r in subset)} judged ok against "
          f"the table ({len(subset)} rows)")
    return 0


def yes_no_or_none(gold: str) -> bool:
    """A gold that says yes, no, none or no such ... (the prose answers #38 is about), or the empty set."""
    bare = re.sub(r"\\text\{([^}]*)\}|\\textbf\{([^}]*)\}", r"\1\2", gold).strip(" $().").lower()
    return (re.match(r"(?:yes|no|none)\b", bare) is not None or "no such" in bare
            or bare in ("\\emptyset", "\\varnothing", "\\{\\}", "{}", "\\{ \\}"))


if __name__ == "__main__":
    raise SystemExit(main())
