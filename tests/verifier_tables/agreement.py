"""Measure the verifier on the tables in this folder: agreement with math-verify's own regression
cases and extraction misses on the prose table. Run from the repository root:

    .venv/bin/python tests/verifier_tables/agreement.py                # this checkout
    .venv/bin/python tests/verifier_tables/agreement.py --root OLD     # another checkout's grpo_data

Rows from real model outputs ("real") are reported apart from probes, judged with and without their
question.

(e.g. OLD made by `mkdir /tmp/old && git archive <commit> grpo_data | tar -x -C /tmp/old`). Only
`grpo_data.verify.judge.verify_answer` is used, so any version of the verifier can be measured.
"""

from __future__ import annotations

import argparse
import inspect
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
    takes_question = "question" in inspect.signature(verify_answer).parameters  # checkouts before #64 do not

    def judge(r: dict, with_question: bool = True) -> str:
        if takes_question and with_question:
            return verify_answer(r["gold"], r["pred"], question=r.get("question")).reason
        return verify_answer(r["gold"], r["pred"]).reason

    got = [judge(r) for r in prose]
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
    real = [r for r in prose if r.get("real")]
    for label, with_question in (("with", True), ("without", False)):
        verdicts = [judge(r, with_question) for r in real]
        print(f"real rows ({len(real)}, public model outputs), judged {label} the question: "
              + _figures(verdicts, real))
    probes = [(g, r) for g, r in zip(got, prose, strict=True) if not r.get("real")]
    print(f"probe rows ({len(probes)}): " + _figures([g for g, _ in probes], [r for _, r in probes]))
    from grpo_data.verify.final_answer import final_answer_text
    from grpo_data.verify.prose import final_sentence, flatten_text

    def opens(r: dict) -> str | None:
        answer = final_answer_text(r["pred"]) or final_sentence(r["pred"]) or ""
        m = re.match(r"\W*(?:(?:so|thus|hence|therefore|in conclusion|final answer|answer)\W+)*(yes|no)\b\s*[,.;:!\u2014\u2013]",
                     flatten_text(answer).replace("*", ""), re.I)
        return m.group(1).lower() if m else None

    gold_word = [(g, r, opens(r), re.sub(r"[^a-z]", "", flatten_text(r["gold"]).lower())[:3]) for g, r in zip(got, prose, strict=True)]
    same = [(g, r) for g, r, o, w in gold_word if o and w.startswith(o) and r["expected"] == "ok"]
    opposite = [(g, r) for g, r, o, w in gold_word if o and w[:2] in ("ye", "no") and not w.startswith(o)]
    print(f"final answers opening with the gold's yes/no word: {sum(g == 'ok' for g, _ in same)} of {len(same)} read right "
          f"({sum(bool(r.get('real')) for _, r in same)} real); opening with the opposite word: "
          f"{sum(g == 'ok' for g, _ in opposite)} of {len(opposite)} credited")
    return 0


def _figures(verdicts: list[str], rows: list[dict]) -> str:
    readable = [(g, r) for g, r in zip(verdicts, rows, strict=True) if r["expected"] != "no_answer"]
    return (f"{sum(g == r['expected'] for g, r in zip(verdicts, rows, strict=True))} as expected, "
            f"{sum(g == 'no_answer' for g, _ in readable)} of {len(readable)} readable missed (no_answer), "
            f"{sum(g == 'wrong' for g, r in readable if r['expected'] == 'ok')} right answers judged wrong, "
            f"{sum(g == 'ok' and r['expected'] != 'ok' for g, r in zip(verdicts, rows, strict=True))} false ok")


def yes_no_or_none(gold: str) -> bool:
    """A gold that says yes, no, none or no such ... (the prose answers #38 is about), or the empty set."""
    bare = re.sub(r"\\text\{([^}]*)\}|\\textbf\{([^}]*)\}", r"\1\2", gold).strip(" $().").lower()
    return (re.match(r"(?:yes|no|none)\b", bare) is not None or "no such" in bare
            or bare in ("\\emptyset", "\\varnothing", "\\{\\}", "{}", "\\{ \\}"))


if __name__ == "__main__":
    raise SystemExit(main())
