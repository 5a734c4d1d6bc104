"""Reading a count from a final sentence: "At most two of them can hold." states 2, "It happens 5
times." states 5 against a "5 times" gold. Used by the verifier for count and number golds when a
prediction has no `\\boxed{}` and no "answer is X" clause (`grpo_data.verify.prose` reads yes/no and "none").

    stated_count("At most two of them can hold.") == 2
    stated_count("Two of them fail.") is None            # a count of the complement
    stated_count("There are 2 equations.", "inequalities") is None   # a count of something else

A number is read only when the sentence states one number and nothing twists it: a bound ("more
than two"), a hedge or condition, a question, an index ("inequality 2", "The true statement is 2."),
an ordinal, a scale or fraction word ("three quarters"), a negation ("No two of them"), a count of the
complement ("fail", "false"), a unit other than the gold's. Pure: regexes only; the text is only read.
"""

from __future__ import annotations

import re

from grpo_data.verify.prose import (
    _CONDITION,
    _HEDGE,
    _MORE_CONDITION,
    _NEGATING_WORD,
    _NUMBER_TOKEN,
    _NUMBER_WORDS,
    _SCALE_WORD,
    _SECOND_THOUGHT,
    _UNITS,
    _prose,
    says_none,
)

# Words that bound or approximate a number rather than state it ("more than two", "fewer than 3",
# "at least two", "about 5"). "At most N" is read: it is how a maximum is stated ("At most two of them
# can hold."). A sentence that negates near its number ("No two of them can hold", "It can't be two")
# is not read either.
_COMPARATOR = re.compile(r"\b(?:more|less|fewer|greater|larger|smaller|bigger|least|exceeds?|exceeding|above|below"
                         r"|under|beyond|up to|around|about|approximately|approx|nearly|almost|roughly|than|between"
                         r"|or so)\b", re.I)


# A number that is not the count: a question ("Is it two?"), a complement ("All but two"), a count of
# something else ("Two pairs of them"), arithmetic ("two plus one"), an index ("inequality 2",
# "case 3"; not a verb or copula before the number: "The number of correct inequalities is 2.", "It
# happens 5 times.") or an ordinal ("the second one").
_COUNT_TWIST = re.compile(r"\?|\b(?:all but|but|pairs?|couples?|groups?|sets?|plus|minus|double|doubled|triple|tripled"
                          r"|first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|last|\d+(?:st|nd|rd|th))\b"
                          r"|\b(?!(?:is|are|was|were|be|equals?|totals?|happens?|occurs?|appears?|has|have|had|gets?"
                          r"|yields?|takes?|needs?|exists?)\b)[a-z]{2,}"
                          r"\s+\(?#?\d+\)?(?!\s*(?:of|out|among)\b)(?=\s*(?:[.,;:!)]|$|holds?|works?|is|are|can|must|will))", re.I)
# "The true statement is 2." names statement 2 (an index), "The number of true statements is 2." a count:
# a number after a copula is read only in a sentence that says it counts.
_COPULA_NUMBER = re.compile(r"\b(?:is|are|was|were|be|equals?|totals?)\s+\(?#?\d+\)?(?=\s*(?:[.,;:!)]|$))", re.I)
_COUNTS = re.compile(r"\b(?:number|count|total|amount) of\b|\bhow many\b", re.I)


# A count of the complement: "Two of them fail." counts the ones that do not hold, against a gold that
# counts the ones that do ("do not hold" is a negation, refused already).
_COMPLEMENT = re.compile(r"\b(?:fail\w*|false|untrue|invalid|violat\w*|break\w*|broken|exclud\w*|eliminat\w*|discard\w*"
                         r"|reject\w*|remov\w*|impossible|unsatisf\w*|contradict\w*|wrong|incorrect)\b", re.I)
# Plural words after a number that are verbs, not its unit ("2 holds" is odd English but no unit).
_NOT_UNITS = frozenset({"is", "was", "has", "does", "holds", "works", "remains", "satisfies", "exists", "equals", "makes",
                        "gives", "yields", "lies", "occurs", "happens", "appears", "follows", "means", "always", "times"})


def singular(word: str) -> str:
    """"inequalities" -> "inequality", "boxes" -> "box", "times" -> "time": an English plural's singular,
    for comparing a count's unit with the gold's."""
    w = word.lower()
    if w.endswith("ies") and len(w) > 4:
        return w[:-3] + "y"
    if w.endswith("es") and re.search(r"(?:s|x|z|ch|sh)es$", w):
        return w[:-2]
    return w[:-1] if w.endswith("s") and not w.endswith("ss") else w


def _unit_differs(text: str, unit: str) -> bool:
    """A number in the sentence carries a plural unit other than `unit` ("There are 2 equations." against
    "inequalities"), or the sentence counts another thing ("The number of equations is 2.")."""
    want = singular(unit.split()[-1]) if unit else ""
    if not want:
        return False
    for m in _NUMBER_TOKEN.finditer(text):
        after = re.match(r"\s+([A-Za-z]{3,})", text[m.end():])
        if after and singular(after.group(1)) != want and (
                after.group(1).lower().endswith("s") and after.group(1).lower() not in _NOT_UNITS):
            return True
    counted = re.search(r"\bnumber of (?:[a-z\-]+ ){0,2}?([a-z]{3,})(?= (?:is|equals|was)\b)", text, re.I)
    return bool(counted and singular(counted.group(1)) != want)


def _without_unit(text: str, unit: str) -> str:
    """The text with the gold's own unit word after a number taken off ("It happens 5 times." -> "It
    happens 5."): "times" there is the unit, not a product."""
    word = unit.split()[-1] if unit else ""
    if not _SCALE_WORD.fullmatch(word):  # only an operator word needs taking off ("times")
        return text
    return re.sub(r"(?<=[\w])\s+" + re.escape(word) + r"(?=\s*[.!]?\s*$)", "", text.rstrip(), flags=re.I)


def _count_twisted(text: str) -> bool:
    """The sentence hedges, conditions or takes back a number, or its number is not the count
    (`_COUNT_TWIST`, `_COMPLEMENT`): "Maybe two of them hold.", "Two of them can hold if n is even.",
    "Is it two?", "Two of them fail."."""
    return bool(_HEDGE.search(text) or _CONDITION.search(text) or _SECOND_THOUGHT.search(text) or _COUNT_TWIST.search(text)
                or (_COPULA_NUMBER.search(text) and not _COUNTS.search(text)) or _COMPLEMENT.search(text) or _MORE_CONDITION.search(re.sub(r"\bat most\b", "", text, flags=re.I)))


def count_refused(sentence: str, unit: str = "") -> bool:
    """True when the sentence holds a number that `stated_count` refuses to read as a count for a hedge,
    condition, question, index, complement or other twist ("Only inequality 2 holds.", "Two of them
    fail."), or a unit other than the gold's `unit` ("There are 2 equations."): math-verify, which would
    take that number, is not asked either."""
    text = _without_unit(_prose(sentence), unit)
    return bool(_NUMBER_TOKEN.search(sentence)) and (_count_twisted(text) or bool(_SCALE_WORD.search(text))
                                                     or _unit_differs(text, unit))


def number_values(text: str) -> set[float]:
    """The values of the numbers a text holds in digits or words (`_NUMBER_TOKEN`: "twenty-one" -> 21)."""
    values = set()
    for m in _NUMBER_TOKEN.finditer(text):
        if m.group("digits"):
            values.add(float(m.group("digits")))
        elif m.group("tens"):
            values.add(float(_NUMBER_WORDS[m.group("tens").lower()] + _UNITS[m.group("unit").lower()]))
        else:
            values.add(float(_NUMBER_WORDS[m.group("word").lower()]))
    return values


def stated_count(sentence: str, unit: str = "") -> float | None:
    """The one number a sentence states, in digits or words ("At most two of them can hold" -> 2,
    "twenty-one" -> 21); "no such ..." states 0. None when it states none or two different ones, bounds
    or approximates it (`_COMPARATOR`), negates it ("No two of them can hold"), or holds a scale or
    fraction word ("three quarters", "two thousand"); "one" alone is not read ("no one", "the smaller one").
    With the gold's `unit` ("times", "inequalities"), a number with that unit is read ("It happens 5
    times.") and one with another plural unit is not ("There are 2 equations.")."""
    text = _without_unit(_prose(sentence), unit)
    if _SCALE_WORD.search(text) or _COMPARATOR.search(text):
        return None
    if _count_twisted(text) or _unit_differs(text, unit):
        return None
    values = number_values(text)
    if not values:
        return 0.0 if says_none(sentence) else None
    if _NEGATING_WORD.search(text):
        return None
    return values.pop() if len(values) == 1 else None
