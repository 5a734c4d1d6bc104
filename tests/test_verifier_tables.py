"""The verifier against tables kept as data in tests/verifier_tables/:

- math_verify_cases.jsonl: math-verify's own regression cases (huggingface/Math-Verify, Apache-2.0;
  each row names its test and index) with math-verify's verdict. Where math-verify is right, this
  verifier must be right too; a row with "ours" is a listed exception and says why.
- prose.jsonl: final answers written as sentences, from public model outputs (each row names its
  source) and the guards beside them. Every false negative or false positive found later becomes a row.
  A row with "known_miss" is one the verifier does not read yet (it must give no_answer, never a
  guess); its "expected" stays the true verdict, so agreement.py counts it as missed. A row with
  "known_false_ok" is a wrong or unreadable answer the verifier still calls ok, with the reason it is
  left (agreement.py counts it as a false ok); one with "departs_from_math_verify" is not ok though
  math-verify alone calls it right (a hedge or a second answer), with the reason. A row with "question"
  is judged with the problem's text (a denial then answers a yes/no question); "real" marks rows from
  real model outputs, which agreement.py reports apart from probes; "known_wrong" with "now" is a row
  the verifier still judges otherwise than "expected" (a sentence gold with math, a two-part answer).

`tests/verifier_tables/agreement.py` prints the same figures for any checkout.
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from grpo_data.verify.judge import verify_answer

TABLES = Path(__file__).parent / "verifier_tables"


def _rows(name: str) -> list[dict]:
    with open(TABLES / name, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


MATH_VERIFY = _rows("math_verify_cases.jsonl")
PROSE = _rows("prose.jsonl")


def _expected_correct(row: dict) -> bool:
    return row.get("ours", row["math_verify"])


def test_tables_are_well_formed():
    assert len([r for r in MATH_VERIFY if r["source"].startswith("huggingface/Math-Verify")]) == 121
    for r in MATH_VERIFY:
        assert ("ours" in r) == ("why" in r), r["source"]  # an exception always says why
    assert {r["expected"] for r in PROSE} <= {"ok", "wrong", "no_answer"}
    assert all(r["expected"] != "no_answer" for r in PROSE if "known_miss" in r)
    review = [r for r in PROSE if r["source"].startswith("review 2026-12-03 (adversarial)")]
    assert len(review) >= 26 and all(r["expected"] != "ok" for r in review)  # the review's false positives
    second = [r for r in PROSE if r["source"].startswith("second review 2026-12-03 (adversarial)")]
    assert len(second) >= 45 and all(r["expected"] != "ok" for r in second)  # lists, hedges, inverted or partial denials
    third = [r for r in PROSE if r["source"].startswith("third review 2026-12-03 (adversarial)")]
    assert len(third) >= 12 and all(r["expected"] == "no_answer" for r in third)  # negatively phrased questions
    fourth = [r for r in PROSE if r["source"].startswith("review 2026-12-03 (fourth review, false ok)")]
    assert len(fourth) >= 14 and all(r["expected"] != "ok" for r in fourth)  # what follows an answer, units, complements
    fixed = [r for r in PROSE if r["source"].startswith("review 2026-12-03 (fourth review, false negative)")]
    assert len(fixed) >= 5 and all(r["expected"] == "ok" and "known_miss" not in r for r in fixed)
    fifth = [r for r in PROSE if r["source"].startswith("review 2026-12-03 (fifth review)")]
    endings = [r for r in fifth if "realistic correct ending" in r["source"]]
    assert len(endings) >= 75 and all(r["expected"] == "ok" for r in endings)  # explanations after a right answer
    assert len(fifth) - len(endings) >= 150  # the review's adversarial probes and the brief's examples
    latest = [r for r in PROSE if r["source"].startswith("review 2026-12-04 (#38 review)")]
    assert len(latest) >= 23 and sum(r["expected"] == "no_answer" for r in latest) >= 16  # signs, notation, doubt
    assert all(r["expected"] != "ok" for r in PROSE if "known_false_ok" in r or "departs_from_math_verify" in r)
    assert all(r["source"] for r in MATH_VERIFY + PROSE)


@pytest.mark.parametrize("row", MATH_VERIFY, ids=[r["source"].rsplit("::", 1)[-1] for r in MATH_VERIFY])
def test_math_verify_tables(row):
    v = verify_answer(row["gold"], row["pred"])
    assert v.correct is _expected_correct(row), (row["source"], v)


def test_math_verify_tables_through_the_workers(pool):
    verdicts = pool.verify([r["gold"] for r in MATH_VERIFY], [r["pred"] for r in MATH_VERIFY])
    differ = [r["source"] for r, v in zip(MATH_VERIFY, verdicts, strict=True) if v.correct is not _expected_correct(r)]
    assert differ == []


def test_math_verify_tables_through_grpo_verify(tmp_path):
    src = tmp_path / "math_verify.jsonl"
    src.write_text("".join(json.dumps({"id": i, "gold": r["gold"], "pred": r["pred"]}) + "\n"
                           for i, r in enumerate(MATH_VERIFY)))
    out = tmp_path / "verdicts.jsonl"
    proc = subprocess.run([sys.executable, "-m", "pipelines.cli", "verify", str(src), "--out", str(out)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    verdicts = [json.loads(line) for line in out.read_text().splitlines()]
    assert [v["id"] for v in verdicts] == list(range(len(MATH_VERIFY)))
    differ = [r["source"] for r, v in zip(MATH_VERIFY, verdicts, strict=True) if v["correct"] is not _expected_correct(r)]
    assert differ == []


def _expected_reason(row: dict) -> str:
    """What the verifier gives a row today: its expected verdict, or for a listed miss no_answer, for a
    listed false ok ok, and for a listed wrong verdict (`known_wrong`, with `now`) the reason it gets."""
    if "now" in row:
        return row["now"]
    return "no_answer" if "known_miss" in row else "ok" if "known_false_ok" in row else row["expected"]


@pytest.mark.parametrize("row", PROSE, ids=[f"{i}-{r['expected']}" for i, r in enumerate(PROSE)])
def test_prose_table(row):
    v = verify_answer(row["gold"], row["pred"], question=row.get("question"))
    assert v.reason == _expected_reason(row), (row["source"], v)


def test_prose_table_through_the_workers(pool):
    verdicts = pool.verify([r["gold"] for r in PROSE], [r["pred"] for r in PROSE], [r.get("question") for r in PROSE])
    assert [v.reason for v in verdicts] == [_expected_reason(r) for r in PROSE]


def test_real_rows_carry_their_question_and_source():
    """#64: rows from real model outputs are marked `real`, name their public source and hold the
    problem's text; a listed wrong verdict says why and what the verifier gives today."""
    real = [r for r in PROSE if r.get("real")]
    assert len(real) >= 25
    assert all(r["source"].startswith("public GitHub file") and r.get("question") for r in real)
    assert all(("known_wrong" in r) == ("now" in r) for r in PROSE if "now" in r or r.get("real"))
