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
impossible"), a qualifier ("but", "if", "unless"), a question, or two different numbers. The verifier
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

_NUMBER_WORDS = {w: i for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen twenty".split())}
_NUMBER_WORDS.update({"thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90,
                      "hundred": 100, "thousand": 1000})
_NUMBER_TOKEN = re.compile(r"(?<![\w.^_{])(-?\d+(?:\.\d+)?)(?![\w.]?\d)|\b(" + "|".join(_NUMBER_WORDS) + r")\b", re.I)


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
    yes/no word opening the last paragraph ("Yes. Such a sequence can always be found. Specifically, ...")."""
    sentences = _last_paragraph(text)
    if not sentences:
        return None
    said = polarity(sentences[-1])
    if said is None:
        lead = _LEADING.match(_prose(sentences[0]).strip())
        said = lead.group(1).lower() if lead else None
    return said


def _prose(sentence: str) -> str:
    """The sentence with inline math blanked: words inside formulas are not English."""
    return _INLINE_MATH.sub(" ", sentence)


def polarity(sentence: str) -> str | None:
    """"yes" or "no" when the sentence answers a yes/no question unambiguously: a leading yes/no word,
    or exactly one negation and no qualifier; else None. An affirmation without "yes" is not read."""
    text = _prose(sentence).strip()
    lead = _LEADING.match(text)
    if lead:
        return lead.group(1).lower()
    if _QUALIFIER.search(text):
        return None
    return "no" if len(_NEGATION.findall(text)) == 1 else None


def says_none(sentence: str) -> bool:
    """True when the sentence says that nothing satisfies the question ("There are no such primes",
    "None.", "no solution exists"), with no qualifier and no second negation."""
    text = _prose(sentence).strip().rstrip(".")
    if _QUALIFIER.search(text) or not _NONE.search(text):
        return False
    return len(_NEGATING_WORD.findall(text)) == 1


def stated_count(sentence: str) -> float | None:
    """The one number a sentence states, in digits or words ("At most two of them can hold" -> 2);
    "no such ..." states 0. None when it states none or two different ones."""
    text = _prose(sentence)
    values = set()
    for m in _NUMBER_TOKEN.finditer(text):
        values.add(float(m.group(1)) if m.group(1) else float(_NUMBER_WORDS[m.group(2).lower()]))
    if not values and says_none(sentence):
        return 0.0
    return values.pop() if len(values) == 1 else None
