"""Answer kinds, the gold fast path, and string judging of choice and text answers."""

import pytest

from grpo_data.verify.answers import (
    answer_kind,
    bare_number,
    choice_letter,
    count_of,
    for_math,
    gold_claim,
    is_number,
    parse_choice,
)
from grpo_data.verify.final_answer import answer_taken_back, final_answer_text
from grpo_data.verify.judge import _math_gold_is_parseable, gold_is_parseable, verify_answer

KINDS = [
    ("42", "number"), ("-7", "number"), ("3.14", "number"), (".5", "number"), ("3/4", "number"),
    ("\\frac{3}{4}", "number"), ("-\\dfrac{3}{4}", "number"), ("\\frac12", "number"), ("007", "number"),
    ("1,000", "math"), ("1e5", "math"), ("x^2+1", "math"), ("\\sqrt{2}", "math"), ("xy", "math"), ("ab", "math"),
    ("infinity", "math"), ("\\pi", "math"), ("e", "math"), ("(1, 2]", "math"),
    ("\\$5", "number"), ("5\\%", "number"), ("10^\\circ", "number"), ("٣", "math"),
    ("\\textbf{(B)}\\ 12", "choice"), ("sin", "math"),
    ("(C)", "choice"), ("\\text{(C)}", "choice"), ("C", "choice"), ("(b)", "choice"), ("$\\textbf{(E)}$", "choice"),
    ("Yes", "text"), ("No", "text"), ("\\text{even}", "text"), ("odd", "text"), ("not possible", "text"),
    ("2 inequalities", "count"), ("12 apples", "count"), ("2 pi", "math"), ("3 x", "math"), ("No such values", "text"),
]


@pytest.mark.parametrize("gold,kind", KINDS)
def test_answer_kind(gold, kind):
    assert answer_kind(gold) == kind


# Every gold the fast path accepts must be one math-verify parses too: same verdict both ways.
FAST_GOLDS = ["\\$5", "5\\%", "0", "42", "-7", "3.14", "-0.5", ".5", "3/4", "-3/4", "10/0", "\\frac{3}{4}", "\\dfrac{-1}{2}",
              "\\tfrac{7}{8}", "\\frac12", "007", "123456789012345678901234567890", "-\\frac{1}{3}"]


@pytest.mark.parametrize("gold", FAST_GOLDS)
def test_fast_path_and_math_verify_agree_on_plain_numbers(gold):
    assert is_number(gold)
    assert gold_is_parseable(gold).reason == "ok"
    assert _math_gold_is_parseable(bare_number(gold), 2).reason == "ok"  # units off, as verify_answer does


def test_non_ascii_digits_are_not_fast_path_numbers():
    assert not is_number("٣") and not is_number("５")


def test_amc_choice_forms():
    assert parse_choice("\\textbf{(B)}\\ 12") == ("B", "12")
    assert parse_choice("\\textbf{(C) } 12") == ("C", "12")
    assert parse_choice("\\textbf{(C) 12}") == ("C", "12")
    assert parse_choice("(c) twelve") == ("C", "twelve")
    assert parse_choice("x") is None and parse_choice("(1, 2)") is None
    assert parse_choice("\\textbf{(B)}\\ \\frac{1}{2}") == ("B", "\\frac{1}{2}")  # braces nest: not one wrapper
    assert parse_choice("(x)(x+1)") is None and parse_choice("(t) = 3") is None and parse_choice("(A), (C)") is None


@pytest.mark.parametrize("gold,pred,ok,reason", [
    ("(C)", "so the answer is \\boxed{C}", True, "ok"),
    ("\\text{(C)}", "The answer is (C).", True, "ok"),
    ("C", "\\boxed{\\text{(C)}}", True, "ok"),
    ("C", "\\boxed{(C) 12}", True, "ok"),
    ("(C)", "The answer is (B).", False, "wrong"),
    ("(C)", "\\boxed{e}", False, "wrong"),
    ("(C)", "I am not sure.", False, "no_answer"),
    ("Yes", "\\boxed{yes}", True, "ok"),
    ("Yes", "Final answer: yes.", True, "ok"),
    ("No", "\\boxed{on}", False, "wrong"),  # math-verify alone would call n*o == o*n equal
    ("No", "\\boxed{\\text{No}}", True, "ok"),
    ("\\text{even}", "\\boxed{odd}", False, "wrong"),
    ("42", "\\boxed{42}", True, "ok"),
    ("\\frac{3}{4}", "it is \\boxed{0.75}", True, "ok"),
    ("\\text{(C)}", "\\boxed{\\textbf{(C)}\\ 12}", True, "ok"),      # AMC solutions' own form
    ("\\text{(C)}", "\\boxed{\\textbf{(C) } 12}", True, "ok"),
    ("\\text{(C)}", "The answer is (C) or (D).", False, "wrong"),     # hedging between letters
    ("\\text{(C)}", "\\boxed{(A)(B)(C)(D)(E)}", False, "wrong"),
    ("\\text{(C)}", "**Answer: (C)**", True, "ok"),
    ("\\textbf{(B)}\\ 12", "\\boxed{B}", True, "ok"),
    ("\\textbf{(B)}\\ 12", "\\boxed{12}", True, "ok"),                # the value of the right choice
    ("\\textbf{(B)}\\ 12", "\\boxed{13}", False, "wrong"),
    ("Yes", "**Answer:** Yes", True, "ok"),
    ("Yes", "The answer is yes, because 2 divides 4.", True, "ok"),
    ("\\$5", "\\boxed{5}", True, "ok"),
    ("5\\%", "\\boxed{0.05}", True, "ok"),                              # math-verify reads the percent
    ("\\textbf{(B)}\\ \\frac{1}{2}", "\\boxed{\\frac12}", True, "ok"),        # a LaTeX value, compared as math
    ("\\textbf{(C)}\\ 12", "\\boxed{12.0}", True, "ok"),
    ("(A) 2\\sqrt{3}", "\\boxed{3\\sqrt2}", False, "wrong"),
    ("(A), (C)", "\\boxed{A}", False, "wrong"),                             # two letters: not a single choice
    ("(A), (C)", "\\boxed{(A), (C)}", True, "ok"),
    ("\\textbf{(C)}\\ 12", "The answer is C, since 12 works.", True, "ok"),
    ("10^\\circ", "\\boxed{10}", True, "ok"),
])
def test_choice_and_text_answers_are_judged_as_strings(gold, pred, ok, reason):
    v = verify_answer(gold, pred)
    assert (v.correct, v.reason) == (ok, reason)


def test_final_answer_text_prefers_boxed_then_the_last_anchor():
    assert final_answer_text("the answer is A. Wait, the answer is B.") == "B"
    assert final_answer_text("answer is (A) but \\boxed{D}") == "D"
    assert final_answer_text("nothing here") is None
    assert choice_letter("(d)") == "D" and choice_letter("d") is None


@pytest.mark.parametrize(("gold", "expected"), [
    ("\\$5", "5"), ("$5", "5"), ("$1$ and $2$ and $3$", "$1$ and $2$ and $3$"), ("$0<f(x)<1$", "$0<f(x)<1$"),
    ("\\$5 and \\$6", "5 and \\$6"), ("5\\%", "5\\%"),
])
def test_for_math_takes_off_a_currency_sign_but_not_a_math_delimiter(gold, expected):
    assert for_math(gold) == expected


@pytest.mark.parametrize(("gold", "claim"), [
    ("Yes", "yes"), ("\\text{No}", "no"), ("None", "none"), ("No such values", "none"), ("no solutions", "none"),
    ("There are no such primes", "none"), ("odd", None), ("not possible", None),
])
def test_gold_claim(gold, claim):
    assert gold_claim(gold) == claim


def test_an_unread_answer_shows_its_final_sentence():
    v = verify_answer("Yes", "We check every case.\n\nThus the robot can stay inside the corridor.")
    assert (v.reason, v.detail) == ("no_answer", "Thus the robot can stay inside the corridor.")
    assert verify_answer("5", "I do not know what to do here.").detail == "I do not know what to do here."


def test_an_anchored_answer_taken_back_is_no_answer_but_a_boxed_one_stands():
    assert answer_taken_back("The answer is (C). Hmm, wait, it is (D).")
    assert answer_taken_back("The answer is 2. Is that right?")
    assert not answer_taken_back("The answer is (C). Let me double check: (C) gives 12, which works.")
    assert not answer_taken_back("\\boxed{C}. Hmm, wait.")  # a boxed answer is final, as math-verify reads it
    assert not answer_taken_back("nothing anchored here. Wait.")


@pytest.mark.parametrize(("text", "number"), [
    ("2 inequalities", "2"), ("5 times", "5"), ("12 apples", "12"),
    ("2 times x", None), ("2 over three", None), ("3 factorial", None), ("3 plus x", None),
    ("2 solutions or fewer", None), ("2 million", None),
])
def test_count_of_takes_unit_words_not_operators_or_bounds(text, number):
    assert count_of(text) == number


def test_letter_list_is_linear_on_degenerate_input():
    """Final review 2026-12-03: `_LETTER_LIST` backtracked exponentially on "A A ... A x" (14 letters:
    38 s; through the pool, workers were killed). Run in a subprocess with a generous bound, so a
    regression fails instead of hanging the suite."""
    import subprocess
    import sys

    code = ("from grpo_data.verify.answers import _LETTER_LIST\n"
            "for n in (14, 40):\n"
            "    assert _LETTER_LIST.fullmatch(' '.join(['A'] * n) + ' x') is None\n"
            "    assert _LETTER_LIST.fullmatch(' , '.join(['(B)'] * n) + ' or (C) x') is None\n"
            "    assert _LETTER_LIST.fullmatch(' '.join(['A'] * n)) is not None\n")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=5, cwd=__import__("os").path.dirname(__import__("os").path.dirname(__import__("os").path.abspath(__file__))))


@pytest.mark.parametrize(("text", "listed"), [
    ("C, D", True), ("(C) and (D)", True), ("C/D", True), ("C or D", True), ("C", False), ("A B", True),
    ("C x", False), ("CD or", False), ("(C) and", False),
])
def test_letter_list_matches_as_before(text, listed):
    from grpo_data.verify.answers import _LETTER_LIST

    assert (_LETTER_LIST.fullmatch(text) is not None) is listed
