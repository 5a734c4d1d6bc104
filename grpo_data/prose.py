"""Reading a final answer written as a sentence: "No, it is not possible.", "There are no such primes.",
"At most two of them can hold." Used by the verifier when a prediction has no `\\boxed{}` and no
"answer is X" clause, for gold answers that are Yes/No, "none"/"no such ...", or a count.

    final_sentence("... so the sum is odd.\\n\\nHence such a tiling cannot exist.") == "Hence such a tiling cannot exist."
    polarity("No, it is not possible to do so.") == "no"    # a leading yes/no word
    polarity("Hence such a tiling cannot exist.") == "no"   # one plain negation, nothing that qualifies it
    polarity("Thus the robot can stay inside.") is None     # an affirmation without "yes": not read
    says_none("There are no such primes.") is True
    stated_count("At most two of them can hold.") == 2

Every reader returns None (or False) when the sentence is not unambiguous: two negations ("it is not
impossible"), a second clause ("since 5 is not divisible by 3", "exists and it is not unique", any
comma), a negation of anything but an existence, possibility or truth, a hedge ("No, wait."), a
question, two different numbers, "one", or a fraction or scale word ("three quarters"). The verifier
then reports "no_answer", never a guess. Pure: regexes only, no math-verify; the text is only read.
"""

from __future__ import annotations

import re

_MARKDOWN = re.compile(r"\*\*|__|\*|`|^#+\s*", re.M)
_PARAGRAPHS = re.compile(r"\n\s*\n")
# a sentence ends at . ! ? before white space, or at a line break (lists, "Conclusion:" lines)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\s*\n\s*")
_HAS_WORD = re.compile(r"[A-Za-z]{2,}")
_INLINE_MATH = re.compile(r"\\\(.*?\\\)|\$[^$]*\$", re.S)
_DISPLAY_MATH = re.compile(r"\\\[.*?\\\]|\$\$.*?\$\$", re.S)

# "No, ...", "Yes.", "So, no." and "Answer: yes": the word must be followed by punctuation or the end
# ("No matter what n is ..." and "No such set exists" are not a leading answer word).
_LEADING = re.compile(r"^(?:(?:so|thus|hence|therefore|answer|final answer|in conclusion|conclusion)\b[\s,:]*)?"
                      r"(yes|no)(?=\s*(?:[,.!;:]|$|--|\u2014|\u2013))", re.I)
# Negations of the main claim. "no" as a determiner ("contains no cycle") is not among them: a
# sentence can deny a detail while the answer is yes ("it is continuous and has no jumps").
_NEGATION = re.compile(r"\b(?:not|cannot|can't|impossible|never|none|neither|nor|no such|there (?:is|are|exists?) no"
                       r"|(?:is|are|was|were|does|do|did|has|have|can|could|will|would|should)n't|won't)\b", re.I)
_QUALIFIER = re.compile(r"\b(?:but|however|although|though|unless|if|whether|otherwise|except|only)\b|\?", re.I)
# "There are no such primes", "No solution exists", "x does not exist", "None."
_NONE = re.compile(r"\b(?:no such|none|there (?:is|are|exists?) no|(?:does|do|did) not exist|(?:does|do)n't exist"
                   r"|cannot exist|can't exist|no (?:\w+ )?(?:solutions?|values?|roots?|numbers?|primes?|integers?|pairs?"
                   r"|triples?|sets?|functions?|polynomials?) (?:exists?|satisfy|satisfies|work|works|can)"
                   r"|the empty set|is empty|are empty)\b", re.I)

# every negating word, "no" included: "It is not true that no solution exists" negates twice
_NEGATING_WORD = re.compile(r"\b(?:no|not|none|never|cannot|impossible|neither|nor)\b|n't\b", re.I)

# "one" is not a number word ("no one", "the smaller one", "one can show"), nor are multipliers
# ("hundred"): a sentence holding a scale or fraction word is not read as a count at all.
_NUMBER_WORDS = {w: i for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen twenty".split()) if w != "one"}
_NUMBER_WORDS.update({"thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90})
_NUMBER_TOKEN = re.compile(r"(?<![\w.^_{])(-?\d+(?:\.\d+)?)(?![\w.]?\d)|\b(" + "|".join(_NUMBER_WORDS) + r")\b", re.I)
_SCALE_WORD = re.compile(r"\b(?:hundreds?|thousands?|millions?|billions?|dozens?|half|halves|thirds?|quarters?|fourths?"
                         r"|fifths?|sixths?|sevenths?|eighths?|ninths?|tenths?|percent|per cent|sqrt|square roots?|roots?"
                         r"|squared|cubed|times|twice|thrice|over)\b|%", re.I)

# A hedge or self-correction: a sentence or paragraph holding one is not read as a final yes/no.
_HEDGE = re.compile(r"\b(?:wait|actually|hmm+|however|but|maybe|perhaps|not sure|unsure|i think|i guess|guess|"
                    r"probably|likely|seems?|unclear|don't know|do not know)\b", re.I)
# An opening transition word ("Hence", "Therefore,") is not a clause of its own.
_OPENER = re.compile(r"^(?:so|thus|hence|therefore|consequently|accordingly|in conclusion|in summary|in short|overall"
                     r"|finally|conclusion|answer|final answer)\b[\s,:]*", re.I)
# A subordinate or coordinate clause, or a comma/semicolon: the sentence says more than one thing,
# and a negation in it may belong to a detail ("since 5 is not divisible by 3"). Not read.
_CLAUSE = re.compile(r"[,;:()]|\b(?:since|because|as|so|which|who|whom|whose|while|whereas|and|but|or|if|when|unless"
                     r"|although|though|until|except|only|otherwise|whether|that|where)\b|\?", re.I)
# The only negations read in prose: of an existence, a possibility or a truth.
_CLAIM_NEGATION = re.compile(
    r"\b(?:cannot|can't|can not|could not|couldn't|impossible|not possible"
    r"|(?:does|do|did|can|could|will|would) not (?:\w+ )?exist|(?:doesn't|don't|didn't) (?:\w+ )?exist"
    r"|not exist|there (?:is|are|exists?) no|no such \w+(?: \w+)? (?:exists?|can exist)"
    r"|(?:is|are) not true|(?:isn't|aren't) true|(?:does|do) not hold|(?:doesn't|don't) hold)\b", re.I)
# Short answers that mean no, read in a boxed or "answer is" answer: the whole answer must be one.
_SHORT_NO = re.compile(r"(?:it is |it's |this is )?(?:impossible|not possible)|no such(?: [a-z\-]+){1,3}"
                       r"|(?:it |they |such (?:a |an )?[a-z\-]+ )?(?:does|do) not exist|(?:it |they )?(?:doesn't|don't) exist"
                       r"|there (?:is|are) no such(?: [a-z\-]+){1,3}|not possible|cannot be done", re.I)
_TEXT_WRAP = re.compile(r"\\(?:text|textbf|mathrm|mathbf|textit|texttt|emph)\s*\{([^{}]*)\}")


def flatten_text(text: str) -> str:
    """`\\text{Yes, because } f \\text{ is not constant}` -> `Yes, because  f  is not constant`: the
    words of `\\text{}` (and similar) wrappers with the wrappers removed, `$` and `\\ ` spacing off."""
    s = text
    for _ in range(3):
        s = _TEXT_WRAP.sub(lambda m: f" {m.group(1)} ", s)
    s = s.replace("$", " ").replace("\\ ", " ").replace("~", " ")
    return " ".join(s.split())


def _last_paragraph(text: str) -> list[str]:
    """The sentences of a text's last paragraph that holds words (a trailing "6. **" or display
    formula is skipped), markdown emphasis removed; [] when there is none."""
    plain = _MARKDOWN.sub("", text)
    for paragraph in reversed(_PARAGRAPHS.split(plain)):
        sentences = [s.strip() for s in _SENTENCE_END.split(_DISPLAY_MATH.sub(" ", paragraph))]
        worded = [s for s in sentences if _HAS_WORD.search(_INLINE_MATH.sub(" ", s))]
        if worded:
            return worded
    return []


def final_sentence(text: str) -> str | None:
    """The last sentence of the text's last paragraph with words, or None."""
    sentences = _last_paragraph(text)
    return sentences[-1] if sentences else None


def final_polarity(text: str) -> str | None:
    """"yes"/"no" of a text's final answer in prose: the last sentence (`polarity`), or a leading
    yes/no word opening the last paragraph ("Yes. Such a sequence can always be found. Specifically, ...")
    when nothing in that paragraph hedges or corrects it ("No, wait. Actually ..." is not read)."""
    sentences = _last_paragraph(text)
    if not sentences:
        return None
    said = polarity(sentences[-1])
    if said is None:
        first = _prose(sentences[0]).strip()
        lead = _LEADING.match(first)
        rest = [first[lead.end():]] + [_prose(s) for s in sentences[1:]] if lead else []
        if lead and not any(_HEDGE.search(r) for r in rest):
            said = lead.group(1).lower()
    return said


def _prose(sentence: str) -> str:
    """The sentence with inline math blanked: words inside formulas are not English."""
    return _INLINE_MATH.sub(" ", sentence)


def polarity(sentence: str) -> str | None:
    """"yes" or "no" when the sentence answers a yes/no question unambiguously: a leading yes/no word
    (not followed by a hedge: "No, wait."), or one negation of an existence, possibility or truth
    ("Hence such a tiling cannot exist.") in a sentence of one clause, with no other negating word;
    else None. An affirmation without "yes" is not read."""
    text = _prose(flatten_text(sentence) if "\\" in sentence else sentence).strip()
    lead = _LEADING.match(text)
    if lead:
        return None if _HEDGE.search(text[lead.end():]) else lead.group(1).lower()
    body = _OPENER.sub("", text, count=1)
    if _CLAUSE.search(body) or _QUALIFIER.search(body) or _HEDGE.search(body):
        return None
    if len(_NEGATING_WORD.findall(body)) != 1 or not _CLAIM_NEGATION.search(body):
        return None
    return "no"


def answer_polarity(answer: str) -> str | None:
    """"yes"/"no" of a boxed or "answer is" answer: it starts with a yes/no word ("Yes, because f is
    not constant" is yes), or it is exactly a short claim ("impossible", "no such function", "does not
    exist"); else None ("Not sure.", "I do not know")."""
    text = flatten_text(answer).strip().rstrip(".").strip()
    lead = re.match(r"(yes|no)(?=\s*(?:[,.!;:]|$|--|\u2014|\u2013))", text, re.I)
    if lead:
        return None if _HEDGE.search(text[lead.end():]) else lead.group(1).lower()
    return "no" if _SHORT_NO.fullmatch(text) else None


# "None.", "None of them work.", "none exist": the only sentences in which a bare "none" is read
_BARE_NONE = re.compile(r"none(?: of (?:them|these|those))? (?:exists?|works?|satisfy|satisfies)|none", re.I)
_STATES_VALUE = re.compile(r"=|\\in\b|^\s*-?\d")


def says_none(sentence: str) -> bool:
    """True when the sentence says that nothing satisfies the question ("There are no such primes",
    "None.", "no solution exists"), in one clause, with no second negation, and stating no number or
    value ("There is no such thing as a free lunch, so the values are 2 and 3." is not read)."""
    text = _prose(sentence).strip().rstrip(".").strip()
    if any(_STATES_VALUE.search(m.group(0).strip("$\\()[] ")) for m in _INLINE_MATH.finditer(sentence)):
        return False
    if _NUMBER_TOKEN.search(text) or _SCALE_WORD.search(text):
        return False
    body = _OPENER.sub("", text, count=1)
    if re.search(r"\bnone\b", body, re.I):
        return _BARE_NONE.fullmatch(body) is not None
    if _QUALIFIER.search(body) or _HEDGE.search(body) or re.search(r"[,;]|\b(?:so|and|but|because|since)\b", body, re.I):
        return False
    if not _NONE.search(body):
        return False
    return len(_NEGATING_WORD.findall(body)) == 1


def stated_count(sentence: str) -> float | None:
    """The one number a sentence states, in digits or words ("At most two of them can hold" -> 2);
    "no such ..." states 0. None when it states none or two different ones, or holds a scale or
    fraction word ("three quarters", "two thousand"); "one" is not read ("no one", "the smaller one")."""
    text = _prose(sentence)
    if _SCALE_WORD.search(text):
        return None
    values = set()
    for m in _NUMBER_TOKEN.finditer(text):
        values.add(float(m.group(1)) if m.group(1) else float(_NUMBER_WORDS[m.group(2).lower()]))
    if not values and says_none(sentence):
        return 0.0
    return values.pop() if len(values) == 1 else None
