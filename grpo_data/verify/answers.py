"""What kind of answer a gold string is, and the string comparison for answers that are not math.

    answer_kind("42") == "number"          # checked without math-verify (the loader's fast path)
    answer_kind("\\text{(C)}") == "choice"  # judged by comparing letters
    answer_kind("Yes") == "text"           # judged by comparing normalized words
    answer_kind("2 inequalities") == "count"  # a number with its unit word: the number is compared
    answer_kind("x^2+1") == "math"         # parsed and compared by math-verify

Why words are not math: math-verify reads "Yes" as the product of symbols E*s*y and "No" as n*o,
so "\\boxed{on}" would be judged equal to "No", and a choice "E" would be Euler's number. Words and
choice letters are therefore compared as strings, case-insensitively, after taking off `\\text{}`,
parentheses, `$` and a final period.

The prediction's answer for a string comparison is its final answer (`grpo_data.verify.final_answer`:
the last `\\boxed{}` when there is one, else the last "answer is X" / "answer: X" clause). Without
either, a Yes/No, "none" or count gold is judged on the prediction's final sentence
(`grpo_data.verify.prose`: "No, it is not possible." reads as no; an ambiguous sentence reads as nothing).
A Yes/No answer is a leading yes/no word, or, with the problem's question in hand, a denial of what it
asks in positive words (`grpo_data.verify.question`): "It is impossible." (boxed or not) answers "Is it
possible?" with no but "Is it impossible?" with yes, so without the question it is no answer.
A right answer followed by more than a closing remark ("The answer is C. Or D.") is no answer, and
two boxed answers that differ are wrong (`grpo_data.verify.committed`, `judge_string`).

Pure: regexes only, no math-verify, so the loader can classify a million gold answers cheaply.
"""

from __future__ import annotations

import re

from grpo_data.verify.committed import box_unsettled, followup_ok, yes_no_settled
from grpo_data.verify.counts import stated_count
from grpo_data.verify.final_answer import (
    _MARKDOWN,
    after_final_answer,
    answer_taken_back,
    boxed_answers,
    final_answer_text,
    last_boxed,
)
from grpo_data.verify.prose import (
    after_final_sentence,
    answer_polarity,
    final_polarity,
    final_says_none,
    final_sentence,
    flatten_text,
    is_short_denial,
    says_none,
)
from grpo_data.verify.question import Asked, denies, reads_denial

KINDS = ("number", "choice", "text", "count", "math")

# Plain numbers and simple fractions, with an optional currency sign, percent or degree mark (MATH
# writes "\$5", "5\%", "10^\circ"): math-verify parses every bare number here (tests/test_answers.py
# checks the fast verdict against its own on a table), so a loader need not ask it. ASCII digits only:
# "٣" and "５" are digits to Python's \d but not to math-verify.
_NUMBER = re.compile(r"-?([0-9]+|[0-9]+\.[0-9]+|\.[0-9]+|[0-9]+/[0-9]+|\\[dt]?frac\{-?[0-9]+\}\{-?[0-9]+\}|\\[dt]?frac[0-9][0-9])")
_UNITS = re.compile(r"^(?:\\\$|\$)\s*|\s*(?:\\%|%|\^\s*\\circ|\^\s*\{\s*\\circ\s*\})$")
_CURRENCY = re.compile(r"^(?:\\\$|\$)\s*(?=[0-9.])")
_UNESCAPED_DOLLAR = re.compile(r"(?<!\\)\$")

_WRAP = r"\\(?:text|textbf|mathrm|mathbf|textit|texttt)\s*\{"
_WRAPPER = re.compile(r"^" + _WRAP + r"(.*)\}$", re.S)
# "(C)", "\textbf{(C)}\ 12", "\text{(C) } 12", "(c) twelve": a letter in parentheses, maybe a value
# after a space ("(x)(x+1)" and "(t) = 3" are not choices)
_PAREN_CHOICE = re.compile(r"^(?:" + _WRAP + r"\s*)?\(\s*([A-Za-z])\s*\)(\s*\}?)((?:\s|\\[ ,;:!]|~|\\quad)*)(.*?)\s*$", re.S)
_BARE_CHOICE = re.compile(r"^(?:" + _WRAP + r"\s*)?([A-J])\s*\}?$")
_ANY_PAREN_LETTER = re.compile(r"\(\s*([A-Za-z])\s*\)")
_WORDS = re.compile(r"^[A-Za-z]+(?:[ '\-][A-Za-z]+)*$")
# Words that are math: math-verify reads them as numbers or functions, so they stay "math".
_MATH_WORDS = frozenset({"infinity", "inf", "pi", "oo", "sin", "cos", "tan", "cot", "sec", "csc", "log", "ln", "exp",
                         "max", "min", "mod", "det", "lim", "gcd", "lcm"})
# Multiplier and fraction words: "2 million", "3 halves", "2 sqrt three" are not a count of 2 or 3.
_SCALE_WORDS = frozenset({"hundred", "hundreds", "thousand", "thousands", "million", "millions", "billion", "billions",
                          "trillion", "dozen", "dozens", "half", "halves", "third", "thirds", "quarter", "quarters",
                          "fourth", "fourths", "fifth", "fifths", "sixth", "sixths", "eighth", "eighths", "tenth",
                          "tenths", "percent", "sqrt", "root", "roots", "squared", "cubed", "factorial", "choose",
                          "plus", "minus", "divided", "multiplied", "power", "powers", "arcsin", "arccos", "arctan",
                          "sinh", "cosh", "tanh"})
# Operators that are a unit only as the last word: "5 times" counts times, "2 times x" is a product
# and "2 over three" a fraction.
_OPERATOR_WORDS = frozenset({"times", "over"})
# Words that bound, approximate or list a count: "2 solutions or fewer", "3 at least", "about 5 apples".
_BOUND_WORDS = frozenset({"or", "and", "than", "least", "most", "not", "no", "nor", "about", "approximately", "nearly",
                          "almost", "roughly", "around", "maximum", "minimum", "max", "min"})
_SHORT_TEXT = frozenset({"no", "ok"})
# An explanation after the answer: "yes, because 2 divides 4", "C, since 12 works". A comma alone does
# not end the answer ("odd, even" and "C, D" list two answers).
_CLAUSE_END = re.compile(r"\s*[,;]?\s+(?:because|since|as|so|which)\b.*$", re.I | re.S)
# Two or more choice letters listed: "C, D", "C; D", "C/D", "(C) and (D)".
# Atomic (`(?>...)`) and possessive (`++`): white space, separators, parentheses and letters are disjoint,
# so the greedy reading is the only one, and without them a fullmatch of "A A A ... A x" backtracks
# through every split of the white space (exponential: 14 letters took 38 s).
_LETTER_LIST = re.compile(r"(?>\(?\s*[A-J]\s*\)?)(?>\s*(?:[,;/&]|\bor\b|\band\b)?\s*\(?\s*[A-J]\s*\)?)++")
_HEDGE_WORDS = re.compile(r"\b(?:wait|actually|hmm+|however|but|maybe|perhaps|not sure|unsure|probably|likely|or)\b", re.I)

# "2 inequalities", "12 apples": a number and one to three unit words (math-verify reads the words as a
# product of symbols, so "\\boxed{2}" would be wrong against it)
_COUNT = re.compile(r"^(-?[0-9]+(?:\.[0-9]+)?)\s+([A-Za-z]{3,}(?:[ \-][A-Za-z]+){0,2})$")
# Gold answers that say nothing satisfies the question: "None", "No such values", "no solution"
_NONE_GOLD = re.compile(r"^(?:none|no such(?: [a-z]+){1,2}|no(?: [a-z]+)? solutions?|(?:it |they )?(?:does|do) not exist"
                        r"|there (?:is|are|exists?) no(?: [a-z\-]+){1,6}|there (?:does|do) not exist(?: [a-z\-]+){1,6}"
                        r"|no(?: [a-z\-]+){1,3} exists?|the empty set|empty set)$")
# A gold that is a sentence opening with yes or no: "No, there do not exist such polynomials.", "Yes, there
# are infinitely many such pairs." (Omni-MATH writes references so): its claim is the opening word.
_LEADING_GOLD = re.compile(r"^(?:yes|no)\s*[,.;:\u2014\u2013]\s*\S", re.I)
# What such a gold may restate: existence or possibility, nothing else ("No, it diverges." is a claim of its own).
_GOLD_RESTATES = re.compile(r"\b(?:exists?|possible|impossible|there (?:is|are)|infinitely many|can(?:not|'t)?)\b", re.I)
_GOLD_MORE = re.compile(r"\b(?:only|unique|largest|smallest|least|greatest|minimum|maximum|minimal|maximal|exactly"
                        r"|zero|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|hundred|thousand)\b", re.I)

# Two answers in one: "2 or 3", "2 inequalities, or maybe 3"
_NUMBER_IN_TEXT = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?![\w.]?\d)")


def unwrap(text: str) -> str:
    """`\\text{ Yes }` -> `Yes`; `$(C)$` -> `(C)`; markdown emphasis, a final period and surrounding
    space removed."""
    s = _MARKDOWN.sub("", text).strip()
    for _ in range(3):  # nested wrappers: $\text{\textbf{(C)}}$
        before = s
        if len(s) >= 2 and s[0] == "$" and s[-1] == "$":
            s = s.strip("$").strip()
        m = _WRAPPER.match(s)
        if m and _balanced(m.group(1)):  # "\text{a}\ \frac{1}{2}" is not one wrapper around everything
            s = m.group(1).strip()
        s = s.rstrip(".").strip()
        if s == before:
            break
    return s


def _balanced(text: str) -> bool:
    """Braces nest properly and never close more than they opened."""
    depth = 0
    for ch in text:
        depth += (ch == "{") - (ch == "}")
        if depth < 0:
            return False
    return depth == 0


def for_math(gold: str) -> str:
    """A gold answer as math-verify should read it: a leading currency sign off ("\\$5" -> "5"); a
    percent or degree mark kept (math-verify knows 5\\% = 0.05). A `$` that a second `$` closes is a
    math delimiter, not a currency sign: "$1$ and $2$" stays as it is."""
    text = gold.strip()
    if text.startswith("$") and len(_UNESCAPED_DOLLAR.findall(text)) > 1:
        return text
    return _CURRENCY.sub("", text)


def bare_number(gold: str) -> str | None:
    """The number a gold answer is ("\\$5" -> "5", "10^\\circ" -> "10", "3/4"), or None."""
    core = _UNITS.sub("", gold.strip())
    return core if _NUMBER.fullmatch(core) else None


def is_number(gold: str) -> bool:
    return bare_number(gold) is not None


def parse_choice(text: str) -> tuple[str, str] | None:
    """(letter, value) of a multiple-choice answer: `(c)` -> ("C", ""), `\\textbf{(B)}\\ 12` -> ("B", "12"),
    `C` -> ("C", ""); else None. A bare letter counts only as A-J upper case (a bare lower-case letter
    is more often a variable)."""
    s = unwrap(text)
    m = _PAREN_CHOICE.match(s)
    if m:
        value = m.group(4)
        if s.startswith("\\") and "}" not in m.group(2) and value.endswith("}"):  # \textbf{(C) 12}: value inside
            value = value[:-1].strip()
        separated = m.group(3) or m.group(2).strip(" }") != m.group(2).strip("}") or " " in m.group(2)
        if value and (not separated or value[0] in "=+-*/^<>" or _ANY_PAREN_LETTER.search(value)):
            return None  # "(x)(x+1)", "(t) = 3", "(A), (C)": not one choice
        return m.group(1).upper(), unwrap(value) if value else ""
    m = _BARE_CHOICE.match(s)
    return (m.group(1), "") if m else None


def choice_letter(text: str) -> str | None:
    parsed = parse_choice(text)
    return parsed[0] if parsed else None


def words(text: str) -> str | None:
    """Normalized words (lower case, single spaces) when `text` is only words, else None."""
    s = unwrap(text)
    if not _WORDS.match(s):
        return None
    return " ".join(s.lower().split())


def answer_kind(gold: str) -> str:
    """One of KINDS. A text answer is words only with a word of >= 3 letters (or "no"), so that
    products of variables such as "xy" stay math; a count is a number and unit words ("2 inequalities")."""
    if is_number(gold):
        return "number"
    if parse_choice(gold) is not None:
        return "choice"
    if _leading_claim(gold) is not None:  # "No, there do not exist such polynomials.": a yes/no, not math
        return "text"
    if "\\" in gold and words(gold) is None and gold_claim(gold) is not None:  # "\\text{No such } n \\text{ exists}"
        return "text"
    w = words(gold)
    if w is not None and w not in _MATH_WORDS and (any(len(t) >= 3 for t in w.split()) or w in _SHORT_TEXT):
        return "text"
    if count_of(gold) is not None:
        return "count"
    return "math"


def count_of(text: str) -> str | None:
    """The number of a count answer ("2 inequalities" -> "2", "5 times" -> "5"), or None. Unit words that
    are math ("2 pi", "3 sin", "3 factorial", "2 times x") or scale it ("2 million", "3 halves", "2 sqrt
    three"), and words that bound or list it ("2 solutions or fewer"), do not make a count."""
    m = _COUNT.match(unwrap(text))
    if m is None:
        return None
    units = [t.lower() for t in re.split(r"[ \-]", m.group(2))]
    if any(t in _MATH_WORDS or t in _SCALE_WORDS or t in _BOUND_WORDS for t in units):
        return None
    if any(t in _OPERATOR_WORDS for t in units[:-1]):
        return None
    return m.group(1)


def count_unit(text: str) -> str | None:
    """The unit words of a count answer ("2 inequalities" -> "inequalities"), or None."""
    m = _COUNT.match(unwrap(text))
    return m.group(2) if m is not None and count_of(text) is not None else None


_EMPTY_SET = re.compile(r"\\(?:emptyset|varnothing)|\\\{\s*\\\}|\u2205|\\left\\\{\s*\\right\\\}")


def is_empty_set(gold: str) -> bool:
    """`\\emptyset`, `\\varnothing`, `\\{\\}`: a gold that "There are no such primes." answers."""
    return _EMPTY_SET.fullmatch(unwrap(gold)) is not None


def gold_claim(gold: str) -> str | None:
    """"yes", "no" or "none" when a text gold answers a yes/no question or says nothing satisfies the
    question ("No such values", "There exist no such field"); else None (a gold compared word for word).
    A gold sentence opening with yes or no ("No, there do not exist such polynomials.") claims that
    word when nothing in it qualifies the word (`answer_polarity`: "Yes, if n is even." claims nothing)."""
    w = words(gold)
    if w is None and "\\" in gold:  # "\\text{No such } n \\text{ exists}"
        w = words(flatten_text(gold))
    if w in ("yes", "no"):
        return w
    if w is not None and _NONE_GOLD.match(w):
        return "none"
    return _leading_claim(gold)


def _leading_claim(gold: str) -> str | None:
    """"yes"/"no" of a gold sentence opening with that word and a restatement, else None."""
    flat = flatten_text(unwrap(gold))
    if not _LEADING_GOLD.match(flat) or re.search(r"\d|\$|\\[(\[]|\band\b|[;:]", flat[3:]):
        return None  # "No, the maximum is 8.", "Yes, and there are 12 such sets.": more than a yes/no to compare
    if not _GOLD_RESTATES.search(flat[3:]) or _GOLD_MORE.search(flat[3:]):
        return None  # "No, Bob has a winning strategy.", "Yes, the only such function is the identity."
    return answer_polarity(flat)



def numbers_in(answer: str) -> set[float]:
    """The distinct plain numbers an answer holds ("2 inequalities, or maybe 3" -> {2, 3})."""
    return {float(x) for x in _NUMBER_IN_TEXT.findall(answer)}


def _first_clause(answer: str) -> str:
    """"yes, because 2 divides 4" -> "yes": a text answer is judged on its first clause when an
    explanation follows it ("odd, even" stays as it is)."""
    return _CLAUSE_END.sub("", unwrap(answer)).strip()


def _named_letter(answer: str) -> str | None:
    """The choice letter an answer names: a choice form ("(C) 15", "C, since 12 works" by its first
    clause), or a bare letter of either case."""
    got = parse_choice(answer) or parse_choice(_first_clause(answer))
    if got is not None:
        return got[0]
    bare = unwrap(answer)
    return bare.upper() if len(bare) == 1 and bare.isalpha() else None


def choice_value_claim(gold: str, pred: str) -> tuple[str, str] | None:
    """(gold's value, prediction's answer) when a choice gold carries a value (`\\textbf{(B)}\\ \\frac12`)
    and the prediction states an answer without naming a letter: the two to compare as math."""
    parsed, answer = parse_choice(gold), final_answer_text(pred)
    if not parsed or not parsed[1] or answer is None:
        return None
    if _named_letter(answer) is not None or _ANY_PAREN_LETTER.search(answer):
        return None
    return parsed[1], answer


def _box_verdict(gold: str, box: str, kind: str) -> bool | None:
    """Whether one boxed answer states the gold, or None when it cannot be judged for this gold's kind
    (a value "\\boxed{12}" for a letter gold, a box with no count or yes/no word)."""
    if kind == "choice":
        named = _named_letter(box) is not None or _ANY_PAREN_LETTER.search(box) or _LETTER_LIST.fullmatch(
            flatten_text(unwrap(box)))
        if not named and not parse_choice(gold)[1]:
            return None
        return judge_answer(gold, box, kind)
    if kind == "count":
        flat = flatten_text(unwrap(box))
        number = count_of(flat) or bare_number(unwrap(flat))
        gold_number = count_of(gold)
        if number is None or gold_number is None or "/" in number or "frac" in number:
            return None
        return float(number) == float(gold_number)
    claim = gold_claim(gold)
    if claim in ("yes", "no"):
        said = answer_polarity(unwrap(box))
        return None if said is None else said == claim
    return judge_answer(gold, box, kind)


def two_boxed(pred: str, gold: str, kind: str) -> list[str]:
    """The prediction's boxed answers when they state different answers ("\\boxed{No}\\boxed{Yes}",
    "\\boxed{C} ... \\boxed{(D)}"): each box is judged against the gold (`_box_verdict`), boxes that
    cannot be judged for its kind are skipped ("\\boxed{12} ... \\boxed{C}" for a letter gold), and
    two answers are found only when a judged box is right and another wrong; [] otherwise ("\\boxed{3}
    ... \\boxed{3 \\text{ triangles}}" is one answer twice). Two answers are never a right one."""
    boxes = boxed_answers(pred)
    if len(boxes) < 2:
        return []
    verdicts = {v for v in (_box_verdict(gold, b, kind) for b in boxes) if v is not None}
    return boxes if len(verdicts) > 1 else []


def answer_settled(pred: str, kind: str, answer: str) -> bool:
    """What follows the final answer leaves it standing: after a `\\boxed{}` (choice, yes/no, count
    and math answers) only signals of doubt or of another answer unsettle it
    (`grpo_data.verify.committed.box_unsettled`); after an "answer is X" clause, a boxed word answer or a
    leading yes/no sentence only a closing remark may follow (`followup_ok`, a whitelist)."""
    after = after_final_answer(pred)
    if last_boxed(pred) is not None and kind != "text":
        return not box_unsettled(after, kind, answer)
    if kind == "yesno":  # an answer opening with yes/no: only a take-back unsettles it
        return yes_no_settled(after, answer)
    return followup_ok(after, kind, answer)


def _followup_kind(gold: str, kind: str, answer: str) -> tuple[str, str]:
    """(kind, answer) for `followup_ok`: what competes with the answer after it."""
    if kind == "choice":
        return "choice", answer
    claim = gold_claim(gold)
    if claim in ("yes", "no"):
        return "yesno", claim
    return ("number", answer) if kind == "count" else ("text", answer)


def judge_string(gold: str, pred: str, kind: str, asked: Asked | None = None) -> tuple[bool | None, str]:
    """(correct, detail) of a choice or text answer. correct is None with detail "" when the prediction
    holds no answer (no `\\boxed{}`, no "answer is X", or an "answer is X" that later text takes back):
    `judge_prose` may still read its final sentence; None with a detail when its answer cannot be judged
    without the question (`judge_answer`), or when a right answer is followed by more than a closing
    remark (`grpo_data.verify.committed.followup_ok`: "The answer is C. Or D."): nothing else in the text is
    read then. Two boxed answers that differ ("\\boxed{No}\\boxed{Yes}") are wrong."""
    answer = final_answer_text(pred)
    if answer is None or answer_taken_back(pred):
        return None, ""
    boxes = two_boxed(pred, gold, kind)
    if boxes:
        return False, "two boxed answers: " + " | ".join(b[:30] for b in boxes[-2:])
    correct = judge_answer(gold, answer, kind, asked)
    if correct and not answer_settled(pred, *_followup_kind(gold, kind, answer)):
        return None, "text after the answer: " + after_final_answer(pred).strip()[:60]
    return correct, answer[:80]


def judge_answer(gold: str, answer: str, kind: str, asked: Asked | None = None) -> bool | None:
    """Whether `answer` (the prediction's final answer, already extracted) states a choice or text gold;
    None when that depends on the question's wording, which is not seen here.

    A choice is right when the answer names the gold's letter and no other one ("(C) or (D)" and "C, D"
    are wrong), or, when the gold carries a value (`\\textbf{(B)}\\ 12`), states that value (compared
    here as a number or words; `verify_answer` compares other values with math-verify). A Yes/No gold
    takes a leading yes/no word nothing hedges, conditions or contradicts ("Yes, No" and "Yes, if n is
    even" are neither: wrong); a short denial ("\\boxed{\\text{It is impossible}}") gives None, since it
    is no to "Is it possible?" and yes to "Is it impossible?". Another text answer is right when it has
    the gold's words, alone or before an explanation ("odd, since ..."; "odd, even" is wrong); a "none"
    gold also takes any way of saying none (`says_none`)."""
    if kind == "choice":
        letter, value = parse_choice(gold)
        if len({x.upper() for x in _ANY_PAREN_LETTER.findall(answer)}) > 1:
            return False
        listed = _LETTER_LIST.fullmatch(flatten_text(unwrap(answer)))
        if listed and len(set(re.findall(r"[A-J]", listed.group(0)))) > 1:  # "C, D": two answers
            return False
        got = _named_letter(answer)
        if got is not None:
            return got == letter
        if value:
            mine, theirs = bare_number(value), bare_number(unwrap(answer))
            return mine == theirs if mine is not None and theirs is not None else unwrap(value).lower() == unwrap(answer).lower()
        return False
    claim = gold_claim(gold)
    if claim in ("yes", "no"):  # "Yes, because ..."; "Not sure.", "Yes, No" are neither
        said = answer_polarity(unwrap(answer), *_question_checks(asked))
        if said is None and reads_denial(unwrap(answer), asked):  # "No such n exists." to "Does such an n exist?"
            said = "no"
        if said is None and (is_short_denial(unwrap(answer)) or denies(flatten_text(unwrap(answer)))):
            return None  # a denial whose question is not seen, or not asked in positive words: no answer
        return said == claim
    clause = _first_clause(answer)
    rest = unwrap(answer)[len(clause):]
    got_words = words(clause)
    if got_words is not None and got_words == words(gold) and not _HEDGE_WORDS.search(rest):
        return True
    return claim == "none" and (says_none(flatten_text(unwrap(answer)), _kinds(gold, asked)) or is_empty_set(answer))


def _kinds(gold: str, asked: Asked | None) -> str:
    """The words a "none" answer may limit its denial by ("no positive solutions"): the gold's (the
    question's are not added: "Let a be a positive integer. Find all integers n ..." names a kind of
    another variable)."""
    own = words(gold) or words(flatten_text(gold)) or ""
    return own


def _question_checks(asked: Asked | None) -> tuple:
    """(restates, positive) for the yes/no readers: the question's restatement check and whether it
    asks in positive words; (None, False) without a question."""
    return (None, False) if asked is None else (asked.restates, asked.frame is not None)


def _yes_no_followup(after: str, said: str) -> bool:
    return yes_no_settled(after, said)


def none_followup(after: str, said: str) -> bool:
    """What may follow a "none" final sentence: no number, no other answer (`followup_ok`)."""
    return followup_ok(after, "number", "")


def judge_prose(gold: str, pred: str, kind: str, asked: Asked | None = None) -> tuple[bool | None, str]:
    """(correct, what was read) from the prediction's final sentence, for a Yes/No, "none" or count gold
    (`kind` "text", "count" or "number"); correct None when the sentence says nothing unambiguous.
    For predictions with no `\\boxed{}` and no "answer is X"."""
    sentence = final_sentence(pred)
    if sentence is None or (asked is not None and asked.echoes(sentence)):  # the question's words are no answer
        return None, ""
    if kind == "text":
        claim = gold_claim(gold)
        if claim == "none":
            return (True, "none") if final_says_none(pred, _kinds(gold, asked), none_followup) else (None, "")
        said = None
        if claim in ("yes", "no"):
            said = final_polarity(pred, _yes_no_followup, *_question_checks(asked))
            if said is None and reads_denial(sentence, asked) and yes_no_settled(after_final_sentence(pred), "no"):
                said = "no"  # "Hence such a tiling cannot exist." to "Can the board be tiled?"
        return (None, "") if said is None else (said == claim, said)
    number = count_of(gold) if kind == "count" else bare_number(gold) if kind == "number" else None
    count = stated_count(sentence, count_unit(gold) or "")
    if number is None or count is None or "/" in number or "frac" in number:
        return None, ""
    if not followup_ok(after_final_sentence(pred), "number", f"{count:g}"):  # "Two of them hold.\n\n$$3$$"
        return None, ""
    return count == float(number), f"{count:g}"
