"""Properties of `grpo_data.verify.judge.verify_answer` beyond its tables (#38):

- never worse than math-verify alone: on a grid of (gold, prediction) pairs grown from math-verify's
  own regression tables (each row as it is, with the Minerva closing line "I hope it is correct."
  after it, with a chat template's next turn after it, and each gold against its neighbour row's
  prediction), wherever math-verify alone calls the prediction right, so does this verifier, apart
  from the rows tests/verifier_tables/math_verify_cases.jsonl lists as exceptions with their reason;
- never fooled: a held-out list of predictions that hedge, take back, give two answers, negate what
  they restate or put a condition on it; none is judged ok. These were written before the fix of
  review 2026-12-03 was run against them, and are not rows of the prose table that fix was grown on.
"""

import json
import logging
from pathlib import Path

import pytest
from math_verify import parse, verify

from grpo_data.verify.answers import answer_kind, parse_choice
from grpo_data.verify.judge import verify_answer

TABLE = Path(__file__).parent / "verifier_tables" / "math_verify_cases.jsonl"


def _math_verify_rows() -> list[dict]:
    with open(TABLE, encoding="utf-8") as fh:
        rows = [json.loads(line) for line in fh if line.strip()]
    return [r for r in rows if r["source"].startswith("huggingface/Math-Verify")]


def _grid(rows: list[dict]) -> list[tuple[int, str, str, str]]:
    """(row index, variant, gold, prediction) pairs grown from the table's rows."""
    pairs = []
    for i, r in enumerate(rows):
        pairs.append((i, "as is", r["gold"], r["pred"]))
        pairs.append((i, "closing line", r["gold"], r["pred"] + " I hope it is correct."))
        pairs.append((i, "next turn", r["gold"], r["pred"] + "<|im_end|>\n<|im_start|>user\nThanks!"))
        pairs.append((i, "explanation", r["gold"], r["pred"] + _explanation(r["gold"])))
        test = r["source"].rsplit("[", 1)[0]
        if i + 1 < len(rows) and rows[i + 1]["source"].rsplit("[", 1)[0] == test:
            pairs.append((i, "neighbour's prediction", r["gold"], rows[i + 1]["pred"]))
    return pairs


def _explanation(gold: str) -> str:
    """A realistic explanation after the answer that names other options or numbers: it must not make a
    right answer unread (review 2026-12-03, fifth review)."""
    if answer_kind(gold) == "choice":
        others = [x for x in "ABCDE" if x != parse_choice(gold)[0]]
        return f"\n\nOption {others[0]} gives 12 and option {others[1]} gives 14, so neither matches."
    return "\n\nCheck: 2+3=5."


def _math_verify_alone(gold: str, pred: str) -> bool:
    """math-verify's own verdict, default configs, the gold in `$...$` unless it has a delimiter."""
    text = gold.strip()
    if not any(d in text for d in ("$", "\\boxed", "\\[", "\\(")):
        text = f"${text}$"
    try:
        return verify(parse(text), parse(pred))
    except Exception:  # an unreadable gold or prediction: math-verify does not call it right
        return False


def test_never_wrong_where_math_verify_alone_is_right():
    rows = _math_verify_rows()
    listed = {i for i, r in enumerate(rows) if "ours" in r}  # exceptions, each with its reason in the table
    library_log = logging.getLogger("math_verify")
    level = library_log.level
    library_log.setLevel(logging.ERROR)
    try:
        right = [(i, variant, gold, pred) for i, variant, gold, pred in _grid(rows) if _math_verify_alone(gold, pred)]
        verdicts = [(rows[i]["source"], variant, verify_answer(gold, pred)) for i, variant, gold, pred in right if i not in listed]
        differ = [(source, variant, v.reason) for source, variant, v in verdicts if not v.correct]
    finally:
        library_log.setLevel(level)
    assert len(right) > 300  # the grid holds enough pairs math-verify calls right to mean something
    assert differ == []


def _prose_rows() -> list[dict]:
    with open(TABLE.parent / "prose.jsonl", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def test_never_worse_on_the_prose_table():
    """Every prose row (real outputs, every review's probes): wherever math-verify alone calls a
    prediction right, so does this verifier, unless the row says why it departs
    (`departs_from_math_verify`: a hedge, a second answer, a take-back) or is a listed false ok."""
    library_log = logging.getLogger("math_verify")
    level = library_log.level
    library_log.setLevel(logging.ERROR)
    try:
        rows = [r for r in _prose_rows() if "departs_from_math_verify" not in r and "known_false_ok" not in r]
        right = [r for r in rows if _math_verify_alone(r["gold"], r["pred"])]
        differ = [(r["gold"], r["pred"][-60:], verify_answer(r["gold"], r["pred"]).reason) for r in right
                  if not verify_answer(r["gold"], r["pred"]).correct]
    finally:
        library_log.setLevel(level)
    assert len(right) >= 89
    assert differ == []


def test_a_rational_box_restated_as_a_decimal_stays_right():
    """Sixth review's row: "\\boxed{\\frac12}" then "The final answer is $0.5$." is the same answer
    (math-verify alone calls it right); a later decimal of another value still unsettles the box."""
    assert verify_answer("\\frac{1}{2}", "\\boxed{\\frac12}\n\nThe final answer is $0.5$.").reason == "ok"
    assert verify_answer("\\frac{1}{2}", "\\boxed{\\frac12}\n\nThe final answer is $0.25$.").reason == "no_answer"
    assert verify_answer("\\frac{1}{3}", "\\boxed{\\frac13}\n\nThe final answer is $0.333$.").reason == "no_answer"
    assert verify_answer("\\frac{3}{2}", "\\boxed{\\frac32}. So the final answer is $1.5$.").reason == "ok"



def test_a_restatement_is_the_same_exact_signed_value_and_doubt_about_it_unsettles():
    """#38 review: the decimal form is exact and written out (1/100000 is 0.00001, not 1e-05, whose
    digits read as candidates); a number of the other sign is another candidate; doubt naming the
    answer itself unsettles it unless the stretch confirms it."""
    ok, unread = "ok", "no_answer"
    assert verify_answer("\\frac{1}{100000}", "\\boxed{\\frac{1}{100000}}\n\nThe final answer is $0.00001$.").reason == ok
    assert verify_answer("\\frac{1}{100000}", "\\boxed{\\frac{1}{100000}}\n\nOr $5$.").reason == unread
    assert verify_answer("\\frac{1}{65536}", "\\boxed{\\frac{1}{65536}}\n\nWait, it should be 5.").reason == unread
    assert verify_answer("\\frac{1}{2}", "\\boxed{\\frac{1}{2}}\n\nOr $-0.5$.").reason == unread
    assert verify_answer("-\\frac{1}{2}", "\\boxed{-\\frac12}\n\nWait, it should be 0.5.").reason == unread
    assert verify_answer("-\\frac{1}{2}", "\\boxed{-\\frac12}\n\nThe final answer is $-0.5$.").reason == ok
    assert verify_answer("4", "\\boxed{4}\n\nOr $-4$.").reason == unread
    assert verify_answer("\\frac{1}{2}", "\\boxed{\\frac12}\n\nHmm, 0.5 seems too big.").reason == unread
    assert verify_answer("4", "\\boxed{4}\n\nI'm not sure about 4.").reason == unread
    assert verify_answer("5", "\\boxed{5}\n\nWait, 5 is indeed right.").reason == ok
    assert verify_answer("-4", "\\boxed{-4}\n\nSo x = -4.").reason == ok


# Held-out adversarial predictions: each is wrong or unreadable against its gold, never ok.
ADVERSARIAL = [
    ("Yes", "Yes. Kidding, it is no."),
    ("Yes", "Yes. Well, not always."),
    ("Yes", "Yes. Only when n is odd."),
    ("Yes", "Yes. At least for small n."),
    ("Yes", "Yes. Or rather no."),
    ("Yes", "Yes. Then again, maybe not."),
    ("Yes", "Yes. False alarm, it fails."),
    ("Yes", "Yes? I cannot tell."),
    ("No", "No. Nah, it works."),
    ("No", "No. Psych, it is possible."),
    ("No", "No. Although for n = 2 it works."),
    ("No", "No. Except when n is prime."),
    ("No", "No. That was wrong; it is possible."),
    ("Yes", "\\boxed{Yes}. Unless n is even."),
    ("Yes", "\\boxed{Yes} \\boxed{No}"),
    ("Yes", "The answer is yes. Edit: no."),
    ("Yes", "Yes, for n > 3."),
    ("Yes", "Yes, sometimes."),
    ("(C)", "The answer is C. Never mind, B."),
    ("(C)", "The answer is (C). (D) also works."),
    ("(C)", "The answer is C. E is also possible."),
    ("(C)", "\\boxed{D} \\boxed{C}"),
    ("(C)", "The answer is C. Alternatively D."),
    ("(C)", "The answer is C. Either C or D."),
    ("(C)", "The answer is C. D is equally good."),
    ("2", "The answer is 2. Then again, 3."),
    ("2", "The answer is 2. Revised: 4."),
    ("3 triangles", "The answer is 3 squares."),
    ("2", "Two of them are false."),
    ("3 inequalities", "Three of them are violated."),
    ("2 inequalities", "Exactly two inequalities fail to hold."),
    ("2", "The answer is 2. Typo: it is 3."),
    ("4", "\\boxed{4}. Hmm, that seems off."),
    ("None", "There are no solutions with y positive."),
    ("None", "There are no solutions except zero."),
    ("None", "There are no solutions for the first equation."),
    ("No such values", "There are no values with this property unless n is even."),
    ("None", "There is no solution. Just kidding."),
    # fifth review: signals after a box that the list of signals must keep catching
    ("5", "\\boxed{5}\n\nSo the final answer is 6."),
    ("(C)", "\\boxed{C}\n\nFinal answer: D"),
    ("(C)", "**Final Answer**\n\n\\boxed{C}\n\n(D)"),
    ("Yes", "\\boxed{Yes}\n\nNo."),
    ("Yes", "\\boxed{Yes}. But for n = 1 it is impossible."),
    ("5", "Thus $\\boxed{5}$ (or $6$ if zero is counted)."),
    ("2", "\\boxed{2}\n\nOn the other hand, 3 is also defensible."),
    ("2 inequalities", "\\boxed{2} inequalities fail."),
    ("5", "\\boxed{5}. Wait, 5 is wrong."),
    ("No", "No. Such n exists."),
    ("5", "The answer is either 5 or 6."),
    ("3", "\\boxed{\\geq 3}"),
]


def test_adversarial_list_is_large_enough():
    assert len(ADVERSARIAL) >= 30 and len(set(ADVERSARIAL)) == len(ADVERSARIAL)


@pytest.mark.parametrize(("gold", "pred"), ADVERSARIAL, ids=[p[:40] for _, p in ADVERSARIAL])
def test_adversarial_prediction_is_never_ok(gold, pred):
    v = verify_answer(gold, pred)
    assert v.reason in ("wrong", "no_answer"), v


def test_followup_reading_is_linear_on_degenerate_input():
    """What follows an answer is untrusted text: the whitelist's patterns stay linear on long runs of
    spaces, closers, letters, boxes and numbers. Run in a subprocess with a generous bound, so a
    regression fails instead of hanging the suite."""
    import os
    import subprocess
    import sys

    code = ("from grpo_data.verify.committed import followup_ok, retracted, without_closing\n"
            "from grpo_data.verify.final_answer import boxed_answers, after_final_answer\n"
            "from grpo_data.verify.counts import count_refused, stated_count\n"
            "texts = ['The answer is C.' + ' ' * 1990 + 'x', '\\\\boxed{2}' + '}$.\\\\]' * 400 + 'x',\n"
            "         'The answer is C. ' + 'D ' * 990, '\\\\boxed{' * 300, 'The answer is C. ' + '\\\\(' * 600,\n"
            "         'There are ' + '2 ' * 990 + 'equations', 'The number of ' + 'a ' * 990 + 'is 2.',\n"
            "         'x' + ' I hope it is correct' * 90]\n"
            "for t in texts:\n"
            "    for kind in ('choice', 'yesno', 'number', 'text'):\n"
            "        followup_ok(t, kind, 'C' if kind == 'choice' else 'yes')\n"
            "    retracted(t); without_closing(t); boxed_answers(t); after_final_answer(t)\n"
            "    count_refused(t, 'inequalities'); stated_count(t, 'times')\n")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    subprocess.run([sys.executable, "-c", code], check=True, timeout=5, cwd=root)
