"""What kind of answer a gold string is, and the string comparison for answers that are not math.

    answer_kind("42") == "number"          # checked without math-verify (the loader's fast path)
    answer_kind("\\text{(C)}") == "choice"  # judged by comparing letters
    answer_kind("Yes") == "text"           # judged by comparing normalized words
    answer_kind("x^2+1") == "math"         # parsed and compared by math-verify

Why words are not math: math-verify reads "Yes" as the product of symbols E*s*y and "No" as n*o,
so "\\boxed{on}" would be judged equal to "No", and a choice "E" would be Euler's number. Words and
choice letters are therefore compared as strings, case-insensitively, after taking off `\\text{}`,
parentheses, `$` and a final period.

The prediction's answer for a string comparison is the last `\\boxed{}` when there is one, else the
last "answer is X" / "answer: X" clause. (math-verify's `StringExtractionConfig` was tried for choices
and missed "The answer is (C)." and "\\boxed{C}", so the extraction here is our own and tested.)

Pure: regexes only, no math-verify, so the loader can classify a million gold answers cheaply.
"""

from __future__ import annotations

import re

KINDS = ("number", "choice", "text", "math")

# Plain numbers and simple fractions: math-verify parses every one of these (tests/test_answers.py
# checks the fast verdict against math-verify's on a table), so a loader need not ask it.
_NUMBER = re.compile(
    r"-?(\d+|\d+\.\d+|\.\d+|\d+/\d+|\\[dt]?frac\{-?\d+\}\{-?\d+\}|\\[dt]?frac\d\d)"
)
NUMBER_PATTERN = r"^" + _NUMBER.pattern + r"$"  # the same test as a polars/Rust regex

_WRAPPER = re.compile(r"^\\(?:text|textbf|mathrm|mathbf|textit|texttt)\s*\{(.*)\}$", re.S)
_CHOICE = re.compile(r"^\(\s*([A-Za-z])\s*\)$|^([A-J])$")
_WORDS = re.compile(r"^[A-Za-z]+(?:[ '\-][A-Za-z]+)*$")
# Words that are math: math-verify reads them as numbers (infinity -> oo), so they stay "math".
_MATH_WORDS = frozenset({"infinity", "inf", "pi", "oo"})
_SHORT_TEXT = frozenset({"no", "ok"})

_ANCHOR = re.compile(r"answer(?:\s+is|\s*[:=])\s*:?\s*(?P<ans>\$?\\?\(?[^\n]*?)\s*(?:\.\s*$|\.\s|\n|$)",
                     re.IGNORECASE)


def unwrap(text: str) -> str:
    """`\\text{ Yes }` -> `Yes`; `$(C)$` -> `(C)`; a final period and surrounding space removed."""
    s = text.strip()
    for _ in range(3):  # nested wrappers: $\text{\textbf{(C)}}$
        before = s
        if len(s) >= 2 and s[0] == "$" and s[-1] == "$":
            s = s.strip("$").strip()
        m = _WRAPPER.match(s)
        if m:
            s = m.group(1).strip()
        s = s.rstrip(".").strip()
        if s == before:
            break
    return s


def is_number(gold: str) -> bool:
    return _NUMBER.fullmatch(gold.strip()) is not None


def choice_letter(text: str) -> str | None:
    """`(c)`, `\\text{(C)}`, `C` -> "C"; anything else None. A bare letter counts only as A-J upper case
    (a bare lower-case letter is more often a variable)."""
    m = _CHOICE.match(unwrap(text))
    if not m:
        return None
    return (m.group(1) or m.group(2)).upper()


def words(text: str) -> str | None:
    """Normalized words (lower case, single spaces) when `text` is only words, else None."""
    s = unwrap(text)
    if not _WORDS.match(s):
        return None
    return " ".join(s.lower().split())


def answer_kind(gold: str) -> str:
    """One of KINDS. A text answer is words only with a word of >= 3 letters (or "no"), so that
    products of variables such as "xy" stay math."""
    if is_number(gold):
        return "number"
    if choice_letter(gold) is not None:
        return "choice"
    w = words(gold)
    if w is not None and w not in _MATH_WORDS and (any(len(t) >= 3 for t in w.split()) or w in _SHORT_TEXT):
        return "text"
    return "math"


def last_boxed(text: str) -> str | None:
    """Content of the last \\boxed{...} (or \\fbox{...}) with balanced braces, else None."""
    for marker in ("\\boxed{", "\\fbox{"):
        start = text.rfind(marker)
        if start < 0:
            continue
        i = start + len(marker)
        depth = 1
        for j in range(i, len(text)):
            if text[j] == "{":
                depth += 1
            elif text[j] == "}":
                depth -= 1
                if depth == 0:
                    return text[i:j].strip() or None
        return None  # unbalanced
    return None


def final_answer_text(pred: str) -> str | None:
    """The prediction's final answer as a string: the last \\boxed{}, else the last "answer is X"."""
    boxed = last_boxed(pred)
    if boxed is not None:
        return boxed
    found = None
    for m in _ANCHOR.finditer(pred):
        found = m.group("ans")
    return found.strip() if found else None


def judge_string(gold: str, pred: str, kind: str) -> tuple[bool | None, str]:
    """(correct, detail) of a choice or text answer; correct is None when the prediction holds no answer."""
    answer = final_answer_text(pred)
    if answer is None:
        return None, ""
    if kind == "choice":
        got = choice_letter(answer)
        if got is None:  # "C) 12", "(C) twelve": a leading choice letter
            m = re.match(r"^\(?([A-Ja-j])\)", unwrap(answer))
            got = m.group(1).upper() if m else None
        return got == choice_letter(gold), answer[:80]
    got_words = words(answer)
    return got_words is not None and got_words == words(gold), answer[:80]
