"""Golds that math-verify would misread as products of symbols: choice letters, words and counts.

math-verify reads "No" as n*o, a choice "E" as Euler's number and "2 inequalities" as a product of
letters, so these golds (`grpo_data.verify.answers.answer_kind` "choice", "text" and "count") are
judged here on the prediction's strings. A choice or word gold is compared with the final answer
(`grpo_data.verify.answers.judge_string`); without a boxed or "answer is" answer, with the final
sentence (`grpo_data.verify.prose`), then with a final sentence that is one formula ("Therefore $E$.",
"So $\\text{odd}$."); a formula elsewhere in the text is no answer. A count gold is judged on its number,
and on its unit when the answer names one ("2 equations" is no answer). Where a value or a number still
has to be compared as math, the caller's judge (`grpo_data.verify.judge`) is passed in, so math-verify
stays in that one module.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from grpo_data.verify.answers import (
    _BOUND_WORDS,
    _MATH_WORDS,
    _OPERATOR_WORDS,
    _SCALE_WORDS,
    answer_kind,
    answer_settled,
    bare_number,
    choice_value_claim,
    count_of,
    count_unit,
    judge_answer,
    judge_prose,
    judge_string,
    numbers_in,
    two_boxed,
    unwrap,
)
from grpo_data.verify.committed import box_unsettled, without_closing
from grpo_data.verify.counts import _COMPARATOR, count_refused, singular
from grpo_data.verify.final_answer import (
    after_final_answer,
    anchored_answers,
    answer_taken_back,
    final_answer_text,
    last_boxed,
)
from grpo_data.verify.prose import _NEGATING_WORD, _SCALE_WORD, final_sentence, flatten_text
from grpo_data.verify.question import Asked
from grpo_data.verify.verdict import Verdict, judged, unread

# Markdown bold and code marks, taken off before a final formula is looked for.
_MARKDOWN = re.compile(r"\*\*|__|`")


def judge_string_gold(gold: str, text: str, kind: str, judge: Callable[[str, str], Verdict],
                      asked: Asked | None = None) -> Verdict:
    """A choice or text gold (`answer_kind`): the prediction's final answer compared as a string
    (`judge_string`), else its final sentence (`_judge_unboxed`). A choice gold's value answered
    without a letter is judged by `judge(value, text)`, the caller's judge with the item's budget.
    `asked`, the problem's question when the caller has it, lets a denial answer a yes/no question."""
    correct, detail = judge_string(gold, text, kind, asked)
    if correct is None:  # no answer (the final sentence may hold one), or one that needs the question
        return unread(text) if detail else _judge_unboxed(gold, text, kind, asked)
    claim = choice_value_claim(gold, text) if kind == "choice" and not correct else None
    if claim is not None:  # "\\textbf{(B)}\\ \\frac{1}{2}" answered with "\\frac12": compare the values as math
        return judge(claim[0], f"\\boxed{{{claim[1]}}}")
    return judged(correct, (final_answer_text(text) or text.strip())[:80], detail)


# A final sentence that is only one formula, maybe after "So"/"Therefore": "Therefore $B$.", "$B$",
# "$$\\text{The midpoints form a regular hexagon}$$".
_WHOLE_FINAL_MATH = re.compile(r"(?:^|[.!?:]\s+|\n\s*)(?:(?:so|thus|hence|therefore)\b[\s,]*)?"
                               r"(\$\$[^$]{1,200}\$\$|\\\[[^\n]{1,200}?\\\]|\$[^$\n]{1,200}\$|\\\([^\n]{1,200}?\\\))\s*\.?\s*$",
                               re.I)


def _judge_unboxed(gold: str, text: str, kind: str, asked: Asked | None = None) -> Verdict:
    """A choice or text gold against a prediction with no boxed or "answer is" answer: its final
    sentence ("No, it is not possible.", "There are no such primes."), else a final sentence that is one
    formula ("Therefore $B$.", "So $\\text{odd}$."). A formula anywhere else is no answer: "Consider
    triangle $ABC$. The point $C$ lies on the circle." names no choice, and "Is it $\\text{Yes}$? Let me
    think." says no yes. Else no answer."""
    if kind == "text":
        correct, said = judge_prose(gold, text, kind, asked)
        if correct is not None:
            return judged(correct, said)
    m = _WHOLE_FINAL_MATH.search(without_closing(_MARKDOWN.sub("", text)))
    if m is None or answer_kind(m.group(1)) != kind:
        return unread(text)
    correct = judge_answer(gold, m.group(1), kind)
    return unread(text) if correct is None else judged(correct, unwrap(m.group(1)))


_COUNT_WORDS_OFF = _SCALE_WORDS | _BOUND_WORDS | _MATH_WORDS | _OPERATOR_WORDS
_LATEX_BOUND = re.compile(r"\\(?:geq?|leq?|geqslant|leqslant|gtrsim|lesssim|ne|neq|gt|lt|approx|sim|simeq|pm|mp|infty)(?![A-Za-z])"
                          r"|[<>\u2264\u2265\u2260\u2248\u00b1]")


# An explanation after an "answer is" count, inside its clause: "3 triangles, namely ABC, ABD and BCD".
_EXPLANATION = re.compile(r"\s*[,;:]?\s+(?:namely|i\.e\.|that is|because|since|as|which|for example|e\.g\.)\b.*$", re.I | re.S)


def judge_count(gold: str, text: str, judge_number: Callable[[str, str], Verdict]) -> Verdict:
    """A count gold ("2 inequalities"): a boxed or "answer is" count or number is compared with its
    number, an answer with two numbers ("2 or 3") is wrong, one taken back later is no answer; anything
    else goes to math-verify (and the final sentence) with the number alone: `judge_number(number, text)`,
    the caller's math judge with the item's budget. (math-verify alone reads the gold as a product of
    letters, so nothing here departs from a verdict it gets right.)"""
    number, unit = count_of(gold), count_unit(gold) or ""
    if answer_taken_back(text):  # "The answer is 2. Hmm, wait, it is 3."
        return unread(text)
    answer = final_answer_text(text)
    if answer is not None and last_boxed(text) is None and len(
            {" ".join(a.split()).rstrip(".").lower() for a in anchored_answers(text)}) > 1:
        return unread(text)  # "The final answer is 3. The answer is 2.": a later answer takes back the first
    boxes = two_boxed(text, gold, "count")
    if boxes:  # "\\boxed{2} ... \\boxed{3}": two answers
        return judged(False, boxes[-1], "two boxed answers: " + " | ".join(b[:30] for b in boxes[-2:]))
    explained = None
    if answer is not None and last_boxed(text) is None:  # "3 triangles, namely ABC, ABD and BCD"
        m = _EXPLANATION.search(answer)
        if m is not None:
            answer, explained = answer[:m.start()], answer[m.start():]
    stated = None if answer is None else count_of(answer) or bare_number(unwrap(answer))
    if stated is not None and explained is not None and box_unsettled(explained, "number", stated):
        return unread(text)
    if stated is not None and "/" not in stated and "frac" not in stated:
        said_unit = count_unit(answer)
        if said_unit and unit and singular(said_unit.split()[-1]) != singular(unit.split()[-1]):
            return unread(text)  # "2 equations" against "2 inequalities": a count of something else
        if float(stated) == float(number) and not _count_settled(text, unit, answer):
            return unread(text)  # "The answer is 2. Edit: 3.", "\\boxed{2}. Hmm, wait."
        return judged(float(stated) == float(number), answer)
    if answer is not None:
        flat = flatten_text(unwrap(answer))
        if len(numbers_in(flat)) > 1:  # "2 or 3": two answers, not the count
            return judged(False, answer)
        # "not 2", "2 million", "\\geq 2", "2 or more": a bound, scale or negation of a number is not the count
        tokens = set(re.findall(r"[a-z]+", flat.lower()))
        if (tokens & (_COUNT_WORDS_OFF) or _COMPARATOR.search(flat) or _NEGATING_WORD.search(flat) or _SCALE_WORD.search(flat)
                or _LATEX_BOUND.search(answer)):
            return judged(False, answer)
        return judge_number(number, "\\boxed{" + answer + "}")  # the answer only, not the whole text
    sentence = final_sentence(text)
    if sentence is not None and count_refused(sentence, unit):  # "Only inequality 2 holds.": a number that is no count
        return unread(text)
    return judge_number(number, text)


def _count_settled(text: str, unit: str, answer: str) -> bool:
    """What follows a count answer leaves it standing (`answer_settled`), the gold's own unit word right
    after a box taken off first ("\\boxed{3} triangles.", "$\\boxed{3}$ \\text{triangles}")."""
    if last_boxed(text) is None or not unit:
        return answer_settled(text, "number", answer)
    after = after_final_answer(text)
    word = re.escape(singular(unit.split()[-1]))
    after = re.sub(r"^\s*\$?\s*(?:\\text\s*\{\s*)?" + r"(?:" + word + r"|" + word + r"s|" + word[:-1] + r"ies|" + word + r"es)\b"
                   r"\s*\}?\s*\$?", "", after, count=1, flags=re.I)
    return not box_unsettled(after, "number", answer)
