"""Answer verification with math-verify: the only module that imports `math_verify`.

`verify_answer(gold, pred)` judges one model output against one gold answer and returns a `Verdict`.
It runs inside the worker processes of `grpo_data.verify.pool.VerifierPool`, never in a trainer's
thread: math-verify's own timeouts use SIGALRM, which only works in a process's main thread, and a
hang inside sympy can outlive them, so the pool adds a hard deadline and kills the worker.

Model output is only parsed (regex extraction + latex2sympy + sympy comparison), never executed.

Gold answers that are choice letters, words or counts ("(C)", "Yes", "2 inequalities") are judged in
`grpo_data.verify.word_golds`: math-verify would read "No" as the product n*o. Those string paths read the
prediction's `\\boxed{}` or "answer is X" (`grpo_data.verify.final_answer`); without either, the final
sentence (`grpo_data.verify.prose`: "No, it is not possible." is no), then a final sentence that is one
formula ("Therefore $E$.", "So $\\text{odd}$."); a formula elsewhere in the text is no answer. A count
gold is judged on its number, and on its unit when the answer names one ("2 equations" is no answer).
Where they still compare math (a choice's value, a count's number) they call back into this module.

What may follow a committed answer (`grpo_data.verify.committed`): after an "answer is X" clause, a boxed
word answer or a leading yes/no sentence, only a closing remark (a whitelist: "I hope it is correct.",
a short restatement or reason naming no other answer), else no_answer ("The answer is C. Or D.",
"Yes. Just kidding.", "The answer is 2. Edit: 3."). After a boxed choice, yes/no, count or math answer
any explanation may follow; only doubt or another answer unsettles it (`box_unsettled`). Boxes are
judged one by one against the gold: two that disagree are wrong. The prediction ends at its first
turn-ending token ("<|im_end|>"). A number gold's final answer that hedges ("5 or 6", "at least 3")
is wrong. math-verify's
own regression tables run through this function in tests/test_verifier_tables.py, and a grid grown
from them in tests/test_verifier_properties.py: where math-verify is right, this is right too.

Answer format. The prediction's final answer is taken, in priority order, from the last `\\boxed{}`,
then from LaTeX in `$...$`/`\\[...\\]`, then from a plain number or expression (math-verify's
`LatexExtractionConfig(boxed_match_priority=0)` + `ExprExtractionConfig()`). Only the last
`pred_tail_chars` characters of a prediction are read: the final answer sits at the end, and a
megabyte of rambling must not cost a megabyte of regex work. An answer followed by more than that
much text is not read (no_answer): in a truncated output it is as often a tentative guess ("First
guess: \\boxed{5}. Hmm, ...") as a final answer. Gold answers are bare strings
("42", "\\frac{1}{2}", "(1, 2]"): they are wrapped in `$...$` unless they already carry a delimiter.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import json
import logging
import math
import re
import time
from math import gcd as math_gcd
from pathlib import Path

import sympy
from math_verify import ExprExtractionConfig, LatexExtractionConfig, parse, verify
from math_verify.errors import TimeoutException

from grpo_data.verify.answers import (
    answer_kind,
    for_math,
    is_empty_set,
    judge_prose,
    none_followup,
    numbers_in,
    unwrap,
)
from grpo_data.verify.committed import _FIRST_CLAUSE, _LATER_ANSWER, box_unsettled, end_of_turn, followup_ok
from grpo_data.verify.final_answer import after_final_answer, answer_taken_back, final_answer_text, last_boxed
from grpo_data.verify.prose import (
    _CONDITION,
    _prose,
    final_says_none,
    final_sentence,
    flatten_text,
    says_none,
)
from grpo_data.verify.question import Asked, read_question
from grpo_data.verify.verdict import Verdict, judged, unread
from grpo_data.verify.word_golds import judge_count, judge_string_gold

# The modules whose code decides a verdict and whether it counts as correct (the pool's, which turns a
# hang or a crash into "timeout"/"error", included): their code is the verifier's version beside
# math-verify's (`rules_hash`).
RULE_MODULES = ("judge.py", "verdict.py", "word_golds.py", "answers.py", "final_answer.py", "prose.py", "counts.py",
                "committed.py", "question.py", "rewards.py", "pool.py")
# (gold, prediction) pairs whose verdicts fingerprint the judging stack as it runs (`verdict_fingerprint`):
# each path of `verify_answer` (numbers, fractions, LaTeX, sets and intervals, choices, words, counts,
# percents, prose, no answer, an answer followed by more than pred_tail_chars of text) and forms whose
# reading math-verify, latex2sympy2_extended or sympy could change.
FINGERPRINT_PAIRS = (
    ("42", "The answer is \\boxed{42}."),
    ("42", "So we get \\boxed{41}."),
    ("\\frac{1}{2}", "\\boxed{0.5}"),
    ("\\frac{1}{2}", "\\boxed{\\dfrac{2}{4}}"),
    ("2\\sqrt{2}", "\\boxed{\\sqrt{8}}"),
    ("(1, 2]", "\\boxed{(1,2]}"),
    ("\\{1, 2\\}", "\\boxed{\\{2, 1\\}}"),
    ("x^2 + 2x + 1", "\\boxed{(x+1)^2}"),
    ("\\pi/2", "$\\frac{\\pi}{2}$"),
    ("5\\%", "\\boxed{0.05}"),
    ("(C)", "The answer is (C)."),
    ("Yes", "Yes, it is possible."),
    ("2 inequalities", "\\boxed{2}"),
    ("12", "After all that, the total is 12"),
    ("7", "I am not sure."),
    ("5", "First guess: \\boxed{5}. " + "Let me check that again. " * 90),
)
# (gold, prediction, question) triples in the fingerprint: how a denial reads against a question.
FINGERPRINT_QUESTIONS = (
    ("No", "Hence no such $n$ exists.", "Does there exist a positive integer $n$ such that $n^2 + 1$ is divisible by 3?"),
    ("Yes", "Therefore it is impossible to tile the board.", "Is it impossible to tile the board with dominoes?"),
)
_PRED_CONFIG = (LatexExtractionConfig(boxed_match_priority=0), ExprExtractionConfig())
_GOLD_CONFIG = (LatexExtractionConfig(), ExprExtractionConfig())


def rules_digest(sources: dict[str, str]) -> str:
    """sha256 (first 16 hex) over modules' code, {name: source text}, as Python parses it with the
    docstrings removed (`ast.dump`): a comment, a docstring or a line break does not change it, a change
    to the code does."""
    h = hashlib.sha256()
    for name, text in sources.items():
        tree = ast.parse(text)
        for node in ast.walk(tree):
            body = getattr(node, "body", None)
            if (isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and body
                    and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
                    and isinstance(body[0].value.value, str)):
                node.body = body[1:] or [ast.Pass()]
        h.update(name.encode())
        h.update(ast.dump(tree).encode())
    return h.hexdigest()[:16]


@functools.cache
def rules_hash() -> str:
    """`rules_digest` of this project's judging rules (RULE_MODULES): any change to how an answer is
    read or compared changes it, with no version number to forget to bump. Recorded in a profile's
    metadata beside the versions of math-verify, sympy and latex2sympy2_extended and the verdict
    fingerprint, so a card says which rules judged its counts."""
    here = Path(__file__).parent
    return rules_digest({name: (here / name).read_text(encoding="utf-8") for name in RULE_MODULES})


@functools.lru_cache(maxsize=8)
def verdict_fingerprint(pred_tail_chars: int = 2000) -> str:
    """sha256 (first 16 hex) of the verdicts (reason, correct) `verify_answer` gives FINGERPRINT_PAIRS
    (and FINGERPRINT_QUESTIONS, with their questions) here, in-process, reading `pred_tail_chars`: what the installed math-verify, latex2sympy2_extended
    and sympy decide, so an upgrade that changes a verdict changes it where their version numbers may
    not say. math-verify's own timeouts are off (they need the main thread's SIGALRM; these pairs
    take milliseconds)."""
    library_log = logging.getLogger("math_verify")
    level = library_log.level
    library_log.setLevel(logging.ERROR)  # its warning that the timeouts are off is expected here
    try:
        verdicts = [verify_answer(gold, pred, timeout_s=0, pred_tail_chars=pred_tail_chars)
                    for gold, pred in FINGERPRINT_PAIRS]
        verdicts += [verify_answer(gold, pred, timeout_s=0, pred_tail_chars=pred_tail_chars, question=question)
                     for gold, pred, question in FINGERPRINT_QUESTIONS]
    finally:
        library_log.setLevel(level)
    return hashlib.sha256(json.dumps([[v.reason, v.correct] for v in verdicts]).encode()).hexdigest()[:16]


def _wrap_gold(gold: str) -> str:
    text = gold.strip()
    if "$" in text or "\\boxed" in text or "\\[" in text or "\\(" in text:
        return text
    return f"${text}$"


@functools.lru_cache(maxsize=4096)
def parse_gold(gold: str, timeout_s: int = 2) -> tuple:
    """Parsed gold answer (a tuple of sympy objects / strings), cached: a profile checks k predictions
    against each gold. Raises TimeoutException or other errors from math-verify."""
    # no_fallback: a gold answer must parse into a math object; a raw string match ("\\frac{")
    # would only ever equal the identical string.
    return tuple(parse(_wrap_gold(gold), extraction_config=_GOLD_CONFIG, fallback_mode="no_fallback",
                       parsing_timeout=timeout_s, raise_on_error=True))


def gold_is_parseable(gold: str, timeout_s: int = 2) -> Verdict:
    """Verdict "ok" when `gold` can be judged: a plain number or simple fraction, a choice letter or
    words (`grpo_data.verify.answers`, no math-verify needed), or anything math-verify extracts an answer
    from; else "unparseable_gold"."""
    if answer_kind(gold) != "math":
        return Verdict(True, "ok")
    return _math_gold_is_parseable(gold, timeout_s)


def _math_gold_is_parseable(gold: str, timeout_s: int) -> Verdict:
    try:
        parsed = parse_gold(gold, timeout_s)
    except TimeoutException:
        return Verdict(False, "unparseable_gold", "timeout while parsing gold")
    except Exception as exc:  # math-verify raises arbitrary sympy/antlr errors on odd input
        return Verdict(False, "unparseable_gold", type(exc).__name__)
    if not parsed:
        return Verdict(False, "unparseable_gold", "no math expression found")
    return Verdict(True, "ok")


MAX_LOG10_MAGNITUDE = 10_000  # numbers beyond 10^10000 are not answers; comparing them can hang sympy


def _log10_magnitude(expr) -> float:
    """Upper estimate of log10|value| of a numeric power tower / factorial; 0 for anything else."""
    if isinstance(expr, sympy.Pow) and not expr.free_symbols:
        base, exp = expr.args
        exp_log = _log10_magnitude(exp)
        if exp_log > 300:
            return math.inf
        try:
            e = float(abs(exp)) if exp_log == 0 else 10.0**exp_log
            b = abs(float(base)) if not isinstance(base, sympy.Pow) else 10.0 ** min(_log10_magnitude(base), 300)
        except (TypeError, ValueError, OverflowError):
            return 0.0
        return e * math.log10(b) if b > 1 else 0.0
    if isinstance(expr, sympy.factorial) and not expr.free_symbols:
        try:
            n = float(expr.args[0])
        except (TypeError, ValueError):
            return 0.0
        return n * math.log10(max(n, 1.0))  # log10(n!) <= n log10 n
    return 0.0


def too_large(parsed) -> bool:
    """True when a parsed answer contains a number too large to compare (9^9^9^9, 10^{10^9}, 10^8!)."""
    for item in parsed:
        if not isinstance(item, sympy.Basic):
            continue
        for node in item.atoms(sympy.Pow, sympy.factorial):
            if _log10_magnitude(node) > MAX_LOG10_MAGNITUDE:
                return True
    return False


class _Clock:
    """math-verify's whole-second limit for each parse or comparison of one item, within the item's
    budget: one item may parse the gold, parse the prediction and compare (three calls), and three
    full timeouts would outlast the pool's hard deadline, which then kills the worker. With a budget,
    a call starts with what is left (at most `timeout_s`), and one with under a second left is not
    started: it raises math-verify's own TimeoutException, which every call site reports as "timeout"."""

    def __init__(self, timeout_s: int, budget_s: float | None) -> None:
        self.timeout_s = timeout_s
        self.end = None if budget_s is None else time.monotonic() + budget_s

    def limit(self) -> int:
        if self.end is None:
            return self.timeout_s
        left = int(self.end - time.monotonic())
        if left < 1:
            raise TimeoutException("the item's verification budget is spent")
        return min(self.timeout_s, left)


def verify_answer(gold: str, pred: str, timeout_s: int = 2, pred_tail_chars: int = 2000,
                  budget_s: float | None = None, question: str | None = None) -> Verdict:
    """Judge `pred` (a model's full output) against `gold` (gold first: math-verify is asymmetric).
    Choice and text golds (`grpo_data.verify.answers.answer_kind`) are compared as strings, count golds by
    their number (`grpo_data.verify.word_golds`). A "no_answer" verdict carries the final sentence it
    could not read in `detail`.
    `timeout_s` limits each math-verify call; `budget_s`, when given, all of them together (`_Clock`).
    `question`, the problem's text, lets a yes/no gold be answered by a denial of what it asks ("No
    such n exists." to "Does there exist n ...?", `grpo_data.verify.question`) and keeps a final
    sentence that repeats the question from being read; without it, a denial is no answer."""
    pred = end_of_turn(pred)  # text after the first turn-ending token ("<|im_end|>") is not the model's
    tail = pred[-pred_tail_chars:] if pred_tail_chars > 0 else pred
    return _judge(gold, tail, _Clock(timeout_s, budget_s), read_question(question))


def _judge(gold: str, text: str, clock: _Clock, asked: Asked | None = None) -> Verdict:
    kind = answer_kind(gold)
    if kind in ("choice", "text"):
        return judge_string_gold(gold, text, kind, lambda value, pred: _judge(value, pred, clock), asked)
    if kind == "count":
        return judge_count(gold, text, lambda number, pred: _judge_math(number, pred, clock, "number"))
    return _judge_math(gold, text, clock, kind)


def _same_unparsed(gold: str, text: str, clock: _Clock) -> bool:
    """A gold math-verify reads only as a string ("x = \\frac{1}{2}, x = \\frac{-1 \\pm \\sqrt{13}}{4}")
    answered with that same string: math-verify calls it right, and so does this."""
    try:
        gold_strings = parse(_wrap_gold(gold), extraction_config=_GOLD_CONFIG, parsing_timeout=clock.limit())
        pred_strings = parse(text, extraction_config=_PRED_CONFIG, parsing_timeout=clock.limit())
    except TimeoutException:
        return False
    wanted = {" ".join(x.split()) for x in gold_strings if isinstance(x, str)}
    return any(isinstance(x, str) and " ".join(x.split()) in wanted for x in pred_strings)


def _judge_math(gold: str, text: str, clock: _Clock, kind: str) -> Verdict:
    gold = for_math(gold)  # "\\$5" -> "5"; a percent stays: math-verify knows 5\\% = 0.05
    if is_empty_set(gold):  # math-verify reads "\\varnothing" and "\\text{None}" as no empty set
        answer = final_answer_text(text)
        if answer is not None and not answer_taken_back(text) and (
                is_empty_set(answer) or says_none(flatten_text(unwrap(answer)))):
            return judged(True, answer)
    try:
        gold_limit = clock.limit()  # the same limit for both parse_gold calls: the second is a cache hit
    except TimeoutException:
        return Verdict(False, "timeout", "budget spent before parsing gold")
    gold_check = _math_gold_is_parseable(gold, gold_limit)
    if gold_check.reason != "ok":
        if _same_unparsed(gold, text, clock):
            return Verdict(True, "ok", "same string as the gold", gold[:80])
        return gold_check
    gold_parsed = parse_gold(gold, gold_limit)
    try:
        # a repeating decimal ("0.\\overline{3}") read as the fraction it is; math-verify reads it as 0.3
        pred_parsed = parse(repeating_as_fraction(text), extraction_config=_PRED_CONFIG, parsing_timeout=clock.limit(),
                            raise_on_error=True)
    except TimeoutException:
        return Verdict(False, "timeout", "parsing prediction")
    except Exception as exc:
        return Verdict(False, "error", f"parsing prediction: {type(exc).__name__}")
    if not pred_parsed:
        return _judge_math_prose(gold, text, kind)
    hedged = _hedged_number(text) if kind == "number" else None
    if hedged is not None:
        return hedged
    if kind == "number" and final_answer_text(text) is None and _PROSE_BOUND.search(_prose(final_sentence(text) or "")):
        return unread(text)  # "There are at least 3 such triangles.": a bound, not the number
    if too_large(pred_parsed):  # cheap structural check instead of a sympy comparison that hangs
        return Verdict(False, "error", f"number beyond 10^{MAX_LOG10_MAGNITUDE}")
    try:
        ok = verify(list(gold_parsed), pred_parsed, timeout_seconds=clock.limit(), raise_on_error=True)
    except TimeoutException:
        return Verdict(False, "timeout", "comparing")
    except Exception as exc:
        return Verdict(False, "error", f"comparing: {type(exc).__name__}")
    said = str(pred_parsed[0])[:80]  # sympy's form: "1/2" for \\frac12 and 1/2 alike
    if ok and (_unsettled(text, " ".join([*(str(x) for x in pred_parsed[1:2]), *_decimal_form(pred_parsed[0]),
                                          *_restatements(text, gold_parsed, clock)]))
               or _later_answer_disagrees(text, gold_parsed, clock)):
        return unread(text)
    return Verdict(True, "ok", "", said) if ok else Verdict(False, "wrong", str(pred_parsed[-1])[:80], said)


# A number answer that is two answers or a bound: "5 or 6", "either 5 or 6", "5 (or 6)", "at least 3",
# "\\geq 3", "3 or more"; "or equivalently 0.5" names the same answer.
_NUMBER_HEDGE = re.compile(r"\bor\b(?!\s+(?:equivalently|in other words|simply|written|expressed|as a decimal|in decimal))"
                           r"[\s,(]*(?:possibly|maybe|perhaps|even|else|also|just)?[\s$\\(]*-?\d"
                           r"|\b(?:at least|at most|or more|or less|or fewer|or greater|more than|less than|fewer than"
                           r"|greater than|up to|no more than|no less than|approximately|roughly|about|around|nearly|almost)\b"
                           r"|\\(?:geq?|leq?|geqslant|leqslant|gt|lt|approx)(?![A-Za-z])|[<>\u2264\u2265\u2248]", re.I)


# A bound in a final sentence with no box or "answer is" clause ("There are at least 3 such triangles.").
# "At most N" is how a maximum is stated ("At most two of them can hold."), as the count reader takes it.
_PROSE_BOUND = re.compile(r"\b(?:at least|more than|fewer than|less than|greater than|or more|or fewer|or less"
                          r"|no fewer than|no less than)\s+\S*\d|\d\S*\s+or (?:more|fewer|less|greater)\b", re.I)


def _hedged_number(text: str) -> Verdict | None:
    """A number gold's final answer (box or "answer is" clause) that states two numbers or a bound
    ("The answer is 5 or 6.", "\\boxed{\\geq 3}"): wrong, as the count path judges it (math-verify
    credits the first number); one with a condition ("5, unless n is even, in which case it is 6"): no
    answer. None when the answer is neither."""
    answer = final_answer_text(text)
    if answer is None:
        return None
    flat = flatten_text(answer)
    if _NUMBER_HEDGE.search(flat) or _NUMBER_HEDGE.search(answer):
        return judged(False, answer)
    if _CONDITION.search(flat) and len(numbers_in(flat)) > 1:
        return unread(text)
    return None


def _unsettled(text: str, extracted: str = "") -> bool:
    """A right math answer that the text after it unsettles: an "answer is X" clause (no `\\boxed{}`)
    followed by more than a closing remark (`followup_ok`: "The answer is 2. Edit: 3."), or a boxed
    answer followed by doubt or another answer (`box_unsettled`: "\\boxed{4}. Hmm, that seems off.",
    "\\boxed{5}\n\nFinal answer: 6"). After a box only such signals are looked for: math-verify's own
    tables credit boxed answers followed by whole explanations, and this verifier is not worse there."""
    if last_boxed(text) is not None:
        # the answer is the box and what math-verify took ("... \\boxed{255} ... The final answer is $10,455$.")
        return box_unsettled(after_final_answer(text), "math", f"{last_boxed(text)} {extracted}")
    answer = final_answer_text(text)
    return answer is not None and (answer_taken_back(text) or not followup_ok(after_final_answer(text), "math", answer))


MAX_DECIMAL_PLACES = 12  # the longest decimal form `_decimal_form` writes


def _decimal_form(value) -> list[str]:
    """A rational answer's exact decimal form ("0.5" for \\frac12, "-0.000075" for -3/40000), so that
    a later "The final answer is $0.5$." restates the box instead of naming another number; [] for
    anything else: a non-terminating decimal (1/3's matches no rounded decimal a model writes: those
    stay unsettled, conservatively) or one of more than MAX_DECIMAL_PLACES places. Written out in
    full, never in scientific notation, whose exponent digits would read as stray numbers."""
    try:
        if not getattr(value, "is_Rational", False) or getattr(value, "is_Integer", True):
            return []
        p, q = int(value.p), int(value.q)
    except (TypeError, ValueError, AttributeError):
        return []
    twos, fives, rest = 0, 0, q
    while rest % 2 == 0:
        rest, twos = rest // 2, twos + 1
    while rest % 5 == 0:
        rest, fives = rest // 5, fives + 1
    places = max(twos, fives)
    if rest != 1 or places > MAX_DECIMAL_PLACES:
        return []
    scaled = abs(p) * (10 ** places // q)  # exact: q divides 10**places
    whole, frac = divmod(scaled, 10 ** places)
    return [f"{'-' if p < 0 else ''}{whole}.{frac:0{places}d}"]


_MATH_SPAN = re.compile(r"\$\$?(?P<m>[^$]{1,200})\$")
# A repeating decimal: "0.\\overline{3}", "0.8\\overline{3}", "1.\\dot{6}".
_REPEATING = re.compile(r"(?P<sign>-?)(?P<whole>\d*)\.(?P<fixed>\d*)\\(?:overline|dot)\s*\{(?P<period>\d{1,12})\}")


def repeating_as_fraction(math: str) -> str:
    """LaTeX with each repeating decimal written as the fraction it is ("0.\\overline{3}" ->
    "\\frac{1}{3}", "0.8\\overline{3}" -> "\\frac{5}{6}"), so math-verify compares its value."""
    def fraction(m: re.Match) -> str:
        whole, fixed, period = m.group("whole") or "0", m.group("fixed"), m.group("period")
        den = 10 ** len(fixed) * (10 ** len(period) - 1)
        num = int(whole) * den + int(fixed + period) - int(fixed or "0")
        g = math_gcd(num, den)
        return f"{m.group('sign')}\\frac{{{num // g}}}{{{den // g}}}"
    return _REPEATING.sub(fraction, math)


def _restatements(text: str, gold_parsed, clock: _Clock) -> list[str]:
    """After a box, the later answer clauses that restate the gold's value in another form: a repeating
    decimal ("\\boxed{\\frac13} ... The final answer is $0.\\overline{3}$."), a percent ("... is $25\\%$"
    for \\frac14), an equation ("... is $x = 3$"). Their text counts as the answer's own, so their digits
    name no other candidate; a clause math-verify does not read as the gold's value is left out."""
    if last_boxed(text) is None:
        return []
    found, after = [], after_final_answer(text)
    for m in _LATER_ANSWER.finditer(after):
        span = _MATH_SPAN.search(m.group("x"))
        if span is None or m.group("x")[span.end():].strip(" \t.!,"):
            continue  # a clause saying more than one value ("$0.\\overline{3}$, though $0.\\overline{6}$ ...")
        try:
            said = parse(f"${repeating_as_fraction(span.group('m').strip())}$", extraction_config=_PRED_CONFIG,
                         parsing_timeout=clock.limit())
            if said and verify(list(gold_parsed), said, timeout_seconds=clock.limit()):
                found.append(span.group("m"))
        except Exception:  # a timeout or an unreadable clause: not a restatement
            continue
    rest = after
    for span in found:
        rest = rest.replace(span, " ")
    if re.search(r"\d", rest):
        return []  # another number beside the restatement ("... the other root is 0.6"): read as before, not excused
    return found


def _later_answer_disagrees(text: str, gold_parsed, clock: _Clock) -> bool:
    """After a box, a later answer clause whose math is not the gold ("\\boxed{\\frac12} ... The
    final answer is $\\frac13$.", "... is $x^2+2$."): math-verify alone reads the later answer there,
    and the digit comparison of `box_unsettled` cannot see that 1/3 or x^2+2 differs. The clause's
    first $...$ span, else its first clause; one that does not parse, or errs, unsettles nothing."""
    if last_boxed(text) is None:
        return False
    for m in _LATER_ANSWER.finditer(after_final_answer(text)):
        span = _MATH_SPAN.search(m.group("x"))
        clause = span.group("m") if span else _FIRST_CLAUSE.split(m.group("x"), maxsplit=1)[0]
        if not clause.strip(" \t.:"):
            continue
        try:
            said = parse(f"${repeating_as_fraction(clause.strip())}$", extraction_config=_PRED_CONFIG,
                         parsing_timeout=clock.limit())
            if said and not verify(list(gold_parsed), said, timeout_seconds=clock.limit()):
                return True
        except Exception:  # a timeout or an unreadable clause: no evidence either way
            continue
    return False


def _judge_math_prose(gold: str, text: str, kind: str) -> Verdict:
    """No math in the prediction: a number gold against a number in words ("At most two of them can
    hold."), an empty-set gold against "There are no such primes."; else no answer."""
    if kind == "number":
        correct, said = judge_prose(gold, text, kind)
        if correct is not None:
            return judged(correct, said)
    sentence = final_sentence(text)  # math-verify extracted nothing (the caller's check)
    if sentence is not None and is_empty_set(gold) and final_says_none(text, "", none_followup):
        return judged(True, "none")
    return unread(text)
