"""Reading a final answer written as a sentence: "No, it is not possible.", "There are no such primes.",
"At most two of them can hold." Used by the verifier when a prediction has no `\\boxed{}` and no
"answer is X" clause, for gold answers that are Yes/No, "none"/"no such ...", or a count (the count
reader, `stated_count`, is in `grpo_data.verify.counts`).

    final_sentence("... so the sum is odd.\\n\\nHence such a tiling cannot exist.") == "Hence such a tiling cannot exist."
    polarity("No, it is not possible to do so.") == "no"    # a leading yes/no word
    polarity("Hence such a tiling cannot exist.") is None   # a negation of a claim: not a yes/no (below)
    polarity("Thus the robot can stay inside.") is None     # an affirmation without "yes": not read
    says_none("There are no such primes.") is True

A Yes/No answer is read here only from an explicit leading yes/no word. A negation of a claim ("It is
impossible to tile the board.") is no yes/no on its own: against "Is it impossible to tile the
board?" (gold "No": it is possible) that sentence is a wrong answer that a negation reading would
turn into a right "no". With the problem's question in hand, `grpo_data.verify.question` reads a
denial against a question asked in positive words. Negations are read here only where the denial
itself is the answer: a "none" gold ("There are no such primes.", `says_none`).

Every reader returns None (or False) when the sentence is not unambiguous: two negations ("it is not
true that no solution exists"), a second clause ("there are no such primes if n is even", any comma;
only a sentence opening with "There is no ..." takes "and"/"such that", which describe what does not
exist), a denial that turns around ("there is no counterexample") or covers part of the answer
("there are no other solutions"), a hedge or condition ("No, wait.", "Yes, if n is even."), two
answers ("No, yes."), a question, two different numbers, a bounded or negated number ("more than
two", "no two"), "one", or a fraction or scale word ("three quarters"). The verifier then reports
"no_answer", never a guess. Pure: regexes only, no math-verify; the text is only read.
"""

from __future__ import annotations

import re
from collections.abc import Callable

_MARKDOWN = re.compile(r"\*\*|__|\*|`|^#+\s*", re.M)
_PARAGRAPHS = re.compile(r"\n\s*\n")
# a sentence ends at . ! ? before white space, or at a line break (lists, "Conclusion:" lines)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\s*\n\s*")
_HAS_WORD = re.compile(r"[A-Za-z]{2,}")
_INLINE_MATH = re.compile(r"\\\(.*?\\\)|\$[^$]*\$", re.S)
_DISPLAY_MATH = re.compile(r"\\\[.*?\\\]|\$\$.*?\$\$", re.S)

# "No, ...", "Yes.", "So, no." and "Answer: yes": the word must be followed by punctuation or the end
# ("No matter what n is ..." and "No such set exists" are not a leading answer word).
_LEAD_OPENER = r"^(?:(?:so|thus|hence|therefore|answer|final answer|in conclusion|conclusion)\b[\s,:]*)?"
_LEADING = re.compile(_LEAD_OPENER + r"(yes|no)(?=\s*(?:[,.!;:]|$|--|\u2014|\u2013))", re.I)
_QUALIFIER = re.compile(r"\b(?:but|however|although|though|unless|if|whether|otherwise|except|only)\b|\?", re.I)
# "There are no such primes", "No solution exists", "x does not exist", "the equation has no solutions", "None."
_NONE = re.compile(r"\b(?:no such|none|there (?:is|are|exists?) no|(?:does|do|did) not exist|(?:does|do)n't exist"
                   r"|cannot exist|can't exist|no (?:\w+ )?(?:solutions?|values?|roots?|numbers?|primes?|integers?|pairs?"
                   r"|triples?|sets?|functions?|polynomials?) (?:exists?|satisfy|satisfies|work|works|can)"
                   r"|(?:has|have) no (?:\w+ )?(?:solutions?|roots?|zeros?)"
                   r"|the empty set|is empty|are empty)\b", re.I)

# every negating word, "no" included: "It is not true that no solution exists" negates twice
_NEGATING_WORD = re.compile(r"\b(?:no|not|none|never|cannot|impossible|neither|nor)\b|n't\b", re.I)

# "one" is not a number word ("no one", "the smaller one", "one can show"), nor are multipliers
# ("hundred"): a sentence holding a scale or fraction word is not read as a count at all. A number word
# joined by a hyphen is part of another word ("non-zero", "three-dimensional"), except "twenty-one".
_NUMBER_WORDS = {w: i for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen twenty".split()) if w != "one"}
_NUMBER_WORDS.update({"thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90})
_UNITS = {w: i for i, w in enumerate("one two three four five six seven eight nine".split(), start=1)}
# "twenty-one", "forty two": a tens word and a unit word are one number
_TENS = "twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety"
_NUMBER_TOKEN = re.compile(r"\b(?P<tens>" + _TENS + r")[\s\-\u2010\u2011](?P<unit>" + "|".join(_UNITS) + r")\b"
                           r"|(?<![\w.^_{])(?P<digits>-?\d+(?:\.\d+)?)(?![\w.]?\d)"
                           r"|(?<![\-\u2010\u2011])\b(?P<word>" + "|".join(_NUMBER_WORDS) + r")\b(?![\-\u2010\u2011])", re.I)
_SCALE_WORD = re.compile(r"\b(?:hundreds?|thousands?|millions?|billions?|dozens?|half|halves|thirds?|quarters?|fourths?"
                         r"|fifths?|sixths?|sevenths?|eighths?|ninths?|tenths?|percent|per cent|sqrt|square roots?|roots?"
                         r"|squared|cubed|times|twice|thrice|over)\b|%", re.I)

# A hedge or self-correction: a sentence or paragraph holding one is not read as a final yes/no.
_HEDGE = re.compile(r"\b(?:wait|actually|hmm+|however|but|maybe|perhaps|not sure|unsure|i think|i guess|guess|"
                    r"probably|likely|seems?|unclear|don't know|do not know|depends?|depending|sometimes|not always"
                    r"|not necessarily|in general)\b", re.I)
# A condition on a leading yes/no ("Yes, if n is even.", "No, unless n is prime."): the answer is
# qualified, not given. Read in the leading word's own sentence (later sentences may explain with "if").
_CONDITION = re.compile(r"\b(?:if|unless|only (?:if|for|when|in|under)|except|provided|assuming|whenever|when|for some"
                        r"|for certain|for (?:even|odd|large|small|sufficiently|infinitely|finitely|most))\b", re.I)
# A second answer word after a leading one ("No, yes.", "\boxed{Yes, No}", "yes, or no"): two answers.
# "no" as a determiner ("Yes, no two of them coincide") is not one.
_OTHER_ANSWER = re.compile(r"\byes\b|\bno\b(?=\s*(?:[,.!;:?/]|$|--|\u2014|\u2013))", re.I)
# An opening transition word ("Hence", "Therefore,") is not a clause of its own.
_OPENER = re.compile(r"^(?:so|thus|hence|therefore|consequently|accordingly|in conclusion|in summary|in short|overall"
                     r"|finally|conclusion|answer|final answer)\b[\s,:]*", re.I)
# A sentence that opens with a denied existence ("There is no ...", "There does not exist ...") denies
# everything after it: "and" and "such that" there describe the thing that does not exist ("there does
# not exist a sequence of digits and an integer N such that ..."). Any other clause is still not read.
_DENIED_EXISTENCE = re.compile(r"^there (?:(?:is|are|exists?) no|(?:does|do) not exist|(?:doesn't|don't) exist)\b", re.I)
_CLAUSE_AFTER_DENIAL = re.compile(r"[,;:()]|\b(?:since|because|as|so|which|who|whom|whose|while|whereas|but|or|if|when"
                                  r"|whenever|unless|although|though|until|except|only|otherwise|whether|where|hence"
                                  r"|thus|therefore|answer)\b|\?", re.I)
# Words that turn a denial around or away from the thing denied: "there is no counterexample" (so
# something holds), "no contradiction", "no reason to doubt", "no solution fails". Not read as "none".
_INVERTING = re.compile(r"\b(?:counter-?examples?|contradictions?|exceptions?|obstructions?|violations?|problems?|issues?"
                        r"|doubts?|need|loss|harm|mistakes?|errors?|flaws?|gaps?|conflicts?|reasons?|difference"
                        r"|converse|opposite|negation|contrary|fail(?:s|ed|ure)?|avoid(?:s|ed)?|prevent(?:s|ed)?"
                        r"|violate[sd]?|refute[sd]?|disproved?|wrong|false|incorrect|invalid|determine[sd]?|decide[sd]?"
                        r"|tell|know|say|conclude)\b", re.I)
# Words that deny only part of the answer: "There are no other solutions" (besides those found),
# "no further values", "no solution for odd n". Not read as a denial of everything.
_RESTRICTOR = re.compile(r"\b(?:other|others|more|further|additional|else|new|remaining|extra|besides|except|apart|aside"
                         r"|than|for (?!(?:which|whom|every|all|any|each)\b)|when|whenever|unless)\b", re.I)
# Kinds of number a "none" answer may be limited to ("no positive solutions", "no solution in the
# integers", "no largest such number"): read only when the gold names the same kind, since "no positive
# solutions" is not "no solutions" when negative ones exist. Only the denied thing's own kind counts:
# "There is no sequence of digits and positive integer N ..." limits nothing.
_KIND = (r"(?:positive|negative|real|complex|integer|integral|rational|irrational|natural|odd|even|prime|trivial"
         r"|nontrivial|non-trivial|nonzero|non-zero|nonnegative|non-negative|distinct|whole|largest|smallest|greatest"
         r"|least|maximum|minimum|maximal|minimal)")
_DENIED_KIND = re.compile(r"\b(?:no|not exist|n't exist|exists? no)\s+(?:such\s+|an?\s+)?(?:[a-z\-]+\s+)?(?P<kind>" + _KIND
                          + r")\s+[a-z]|\b(?:in|among|over) (?:the )?(?:set of )?(?P<domain>" + _KIND + r")s?\b", re.I)


# Short boxed or "answer is" answers that deny a claim ("impossible", "no such function"): what they
# answer to a Yes/No question depends on its wording ("Is it impossible ...?"), so they are no yes/no.
_SHORT_DENIAL = re.compile(r"(?:it is |it's |this is )?(?:impossible|not possible)|no such(?: [a-z\-]+){1,3}"
                           r"|(?:it |they |such (?:a |an )?[a-z\-]+ )?(?:does|do) not exist"
                           r"|(?:it |they )?(?:doesn't|don't) exist"
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


def _worded(paragraph: str) -> list[str]:
    """The paragraph's sentences that hold words, display formulas blanked."""
    sentences = [s.strip() for s in _SENTENCE_END.split(paragraph)]
    return [s for s in sentences if _HAS_WORD.search(_INLINE_MATH.sub(" ", s))]


def _final_parts(text: str) -> tuple[str, list[str], str, str]:
    """(paragraph, its worded sentences, the text after its first worded sentence, the text after its
    last one) for the text's last paragraph that holds words, markdown emphasis removed; the texts
    after run to the end, trailing formulas and lists included ("Yes.\n\n$$\\text{No}$$"): what
    follows an answer sentence is for the caller to judge. ("", [], "", "") when there is none."""
    plain = _MARKDOWN.sub("", text)
    ends = [m.span() for m in _PARAGRAPHS.finditer(plain)]
    starts = [0] + [e for _, e in ends]
    stops = [s for s, _ in ends] + [len(plain)]
    for start, stop in reversed(list(zip(starts, stops, strict=True))):
        paragraph = plain[start:stop]
        worded = _worded(_DISPLAY_MATH.sub(" ", paragraph))
        if worded:
            # the same split with formulas blanked to their own length locates the sentences in the text
            blanked = _DISPLAY_MATH.sub(lambda m: " " * len(m.group(0)), paragraph)
            same_length = _worded(blanked) or [""]
            first_end = blanked.find(same_length[0]) + len(same_length[0])
            last_end = blanked.rfind(same_length[-1]) + len(same_length[-1])
            return paragraph, worded, plain[start + first_end:], plain[start + last_end:]
    return "", [], "", ""


def _final_paragraph(text: str) -> tuple[str, list[str]]:
    """The text's last paragraph that holds words (a trailing "6. **" or display formula is skipped),
    markdown emphasis removed, and its sentences that hold words; ("", []) when there is none."""
    return _final_parts(text)[:2]


def after_final_sentence(text: str) -> str:
    """The text after its final worded sentence (`final_sentence`): trailing formulas, list markers."""
    return _final_parts(text)[3]


def _last_paragraph(text: str) -> list[str]:
    """The sentences of a text's last paragraph that holds words (see `_final_paragraph`)."""
    return _final_paragraph(text)[1]


def final_sentence(text: str) -> str | None:
    """The last sentence of the text's last paragraph with words, or None."""
    sentences = _last_paragraph(text)
    return sentences[-1] if sentences else None


def _nothing_follows(after: str, said: str) -> bool:
    return not after.strip()


def final_polarity(text: str, followup_ok: Callable[[str, str], bool] = _nothing_follows,
                   restates: Callable[[str], bool] | None = None, positive: bool = False) -> str | None:
    """"yes"/"no" of a text's final answer in prose: a leading yes/no word opening the last sentence
    (`polarity`) or the last paragraph ("Yes. Such a sequence can always be found. Specifically, ...")
    when `followup_ok(the sentences after it, "yes"/"no")` accepts what follows it (the verifier passes
    `grpo_data.verify.committed.yes_no_settled`, which looks for take-backs; by default nothing may
    follow). "No, wait. Actually ...", "Yes. Just kidding." and "Yes! No!" are not read. `restates` and
    `positive` as for `polarity`."""
    _, sentences, after_first, after_last = _final_parts(text)
    if not sentences:
        return None
    plain = [_plain(s) for s in sentences]
    leads = {m.group(1).lower() for m in map(_LEADING.match, plain) if m}
    said = polarity(sentences[-1], restates, positive)
    if said is not None and not followup_ok(after_last, said):  # "Yes.\n\n$$\\text{No}$$"
        return None
    if said is None:
        first = polarity(sentences[0], restates, positive)
        if first and not any(_takes_back(t) for t in sentences[1:]) and followup_ok(after_first, first):
            said = first
    return said if said is not None and leads <= {said} else None


def _prose(sentence: str) -> str:
    """The sentence with inline math blanked: words inside formulas are not English."""
    return _INLINE_MATH.sub(" ", sentence)


def _plain(sentence: str) -> str:
    """The sentence's words: `\\text{}` wrappers flattened, inline math blanked, outer space off."""
    return _prose(flatten_text(sentence) if "\\" in sentence else sentence).strip()


# A leading yes/no word is read as the answer, whatever restatement follows it ("No, it is not possible
# for the frog to reach (1, 0), since ...", "Yes, we can always find such a pair; in fact ..."), unless
# the rest takes it back or qualifies it: a hedge, a condition ("Yes, if n is even.", "Yes, usually.",
# "Yes, under the Riemann hypothesis."), a second thought, the other answer word. A rest whose first
# clause has no verb is a qualifier too ("Yes, n even", "Yes, for odd n"), unless it is one of the short
# restatements listed (`_RESTATEMENT`: "Yes, it is.", "No, none."). A yes restated with a denial is not
# read (`_unless_denied`). The restatement never overrides the opening word.
_RESTATEMENT = re.compile(r"(?:(?:it|it's|this|that|they|there|such|the|every|each|all|both|no|any|a|an|because|since|we|you"
                          r"|one)\b|\d+(?=\s+[a-z]))[^,;:]*", re.I)
# A verb: a clause holding one states something ("the game cannot end in a draw", "such integers exist").
_VERB = re.compile(r"\b(?:is|are|was|were|be|been|am|isn't|aren't|wasn't|weren't|can|cannot|can't|could|couldn't|does|do|did"
                   r"|doesn't|don't|didn't|has|have|had|hasn't|haven't|must|will|won't|would|shall|should|may|might|exists?"
                   r"|holds?|works?|wins?|loses?|converges?|diverges?|terminates?|divides?|equals?|satisf(?:y|ies)|contains?"
                   r"|reach(?:es)?|needs?|lies?|remains?|stays?|forms?|becomes?|gets?|makes?|gives?|implies|follows?)\b", re.I)
# A second thought after an answer: "Yes. Scratch that.", "No. Correction: it holds.", "Yes. Not really."
_SECOND_THOUGHT = re.compile(r"\b(?:scratch that|never ?mind|oops|nope|not really|corrections?|reconsider\w*|second thoughts?"
                             r"|on reflection|on further reflection|wrong|incorrect|actually|wait|hmm+|retract\w*"
                             r"|mistaken|mistake|rather|instead)\b", re.I)
# more words that qualify an answer without a listed condition word
_MORE_CONDITION = re.compile(r"\b(?:iff|as long as|so long as|under|usually|mostly|most|generally|typically|often|apart"
                             r"|aside|besides|save|barring|hypothes[ie]s|conjectur\w*|assum\w*|suppos\w*|almost|nearly)\b", re.I)


# Hedges that answer a question asking "always" or "necessarily": read when the question asks it.
_ANSWERED_HEDGE = re.compile(r"not always|not necessarily", re.I)


def _qualified(rest: str, raw_rest: str | None = None, restates: Callable[[str], bool] | None = None,
               blanked: str | None = None) -> bool:
    """What follows a leading yes/no hedges it, puts a condition on it, takes it back, gives a second
    answer (also inside math: `No, \\(\\text{Yes}\\)`, looked for in `raw_rest` before math is
    blanked), or opens with a clause that states nothing (no verb: "n even"). A condition the question
    itself states is no qualifier when `restates(the condition's clause)` says so (the caller's
    question: "No, the game cannot end in a draw if both players play optimally.")."""
    if raw_rest is not None and _OTHER_ANSWER.search(flatten_text(raw_rest)):
        return True
    if _OTHER_ANSWER.search(rest) or _SECOND_THOUGHT.search(rest):
        return True
    for m in _HEDGE.finditer(rest):  # "No, it is not always possible." answers "Is it always possible ...?"
        own = _CLAUSE_SPLIT.split(re.sub(r"^[\s,.!;:\-\u2014\u2013]+", "", rest), maxsplit=1)[0]
        if not (restates and _ANSWERED_HEDGE.fullmatch(m.group(0)) and restates(own)):
            return True
    for pattern in (_CONDITION, _MORE_CONDITION):
        for m in pattern.finditer(rest):
            if restates is None or not restates(_CLAUSE_SPLIT.split(rest[m.start():], maxsplit=1)[0]):
                return True
    # clauses are split with formulas blanked (`blanked`): "$f: \\mathbb{R} \\to \\mathbb{R}$" and "$1, 2, \\dots$"
    # hold no clause
    clause = re.sub(r"^[\s,.!;:\-\u2014\u2013]+", "", rest if blanked is None else blanked).rstrip().rstrip(".!").rstrip()
    if not clause:
        return False
    if _LIMITING.search(clause):
        return True  # "Yes, it is possible, at least for n <= 10.", "Yes, in theory.", "Yes: only for even n."
    first, *more = _CLAUSE_SPLIT.split(clause)
    raw = re.sub(r"^[\s,.!;:\-\u2014\u2013]+", "", flatten_text(rest if raw_rest is None else raw_rest))
    if re.match(r"[A-Za-z]\s*=\s*-?\d", raw):
        return True  # "No, n = 3 satisfies it.": a value, not a restatement of the word
    if _RESTATEMENT.fullmatch(first) is None and _VERB.search(first) is None:
        return True  # "Yes, n even", "Yes, for odd n"
    # a later clause only gives a reason or an example (which runs to the end), or restates ("...; it
    # oscillates"): anything else may qualify the answer ("Yes, it is possible, at least for n <= 10.",
    # "..., in theory.", "..., partially.")
    for part in (p for p in more if p.strip()):
        if _REASON_OPENER.match(part):
            return False
        if _RESTATEMENT.fullmatch(part) is None:
            return True
    return False


# A restatement that turns part of the answer ("... it fails for n = 3", "... a counterexample exists").
_TURNS = re.compile(r"\b(?:fail\w*|counter-?examples?|except\w*|false|untrue)\b", re.I)


# Words that limit an answer wherever they stand in its restatement.
# ("the only X" is uniqueness, "at least one" existence: neither limits). `committed._DOUBTING` reads the same
# words, and doubts, in the sentences after the answer.
LIMIT_WORDS = (r"(?<!the )(?<!an )(?<!its )only|only (?:case|cases|when|if|for|in)|except|at least(?! one\b)|at most|up to"
               r"|partial\w*|in theory|approximately|roughly|numerically|conjectur\w*|unproven|unverified|heuristic\w*")
_LIMITING = re.compile(r"\b(?:" + LIMIT_WORDS + r"|theoretically)\b", re.I)
# The clauses of what follows a leading yes/no: "it is not possible, because the sum is always odd",
# "the sequence does not converge; it oscillates", "it can be done, as the coloring shows".
_CLAUSE_SPLIT = re.compile(r"\s*(?:[,;:]|\s[\u2014\u2013]|\s-\s)\s*")
# A later clause that gives a reason or an example: it may follow the restatement.
_REASON_OPENER = re.compile(r"(?:because|since|as|so|hence|thus|namely|for example|for instance|e\.g\.|i\.e\.|that is"
                            r"|regardless of|which|whence|in fact|indeed|by (?:the|a|an|this|our)|as shown|see)\b", re.I)


def _main_clauses(rest: str) -> str:
    """What follows a leading yes/no without its reason clauses ("because no prime divides it")."""
    clause = re.sub(r"^[\s,.!;:\-\u2014\u2013]+", "", rest)
    return " ".join(p for p in _CLAUSE_SPLIT.split(clause) if _REASON_OPENER.match(p) is None)


def _takes_back(sentence: str) -> bool:
    """A sentence after a leading yes/no that hedges, takes back or contradicts it, or holds another
    yes/no word (in words or inside math)."""
    return bool(_HEDGE.search(_plain(sentence)) or _SECOND_THOUGHT.search(_plain(sentence))
                or _OTHER_ANSWER.search(flatten_text(sentence)))


def polarity(sentence: str, restates: Callable[[str], bool] | None = None, positive: bool = False) -> str | None:
    """"yes" or "no" when the sentence opens with a yes/no word that nothing after it hedges, qualifies
    or contradicts ("No, it is not possible."; not "No, wait.", "Yes, if n is even.", "No, yes."); else
    None. A sentence without a leading yes/no word is not read, whatever it denies or affirms: "It is
    impossible to tile the board." answers "Is it possible ...?" with no and "Is it impossible ...?"
    with yes (`grpo_data.verify.question` reads it with the question). `restates(clause)`, the
    question's check when the caller has one, lets a condition the question states stand in the
    restatement; `positive`, that the question asks in positive words ("Is it possible ...?"), makes a
    "no" restated as an affirmation ("No, it is possible.") a contradiction, not read (to "Is it
    impossible ...?" it is the right answer, and without the question it is read as no)."""
    text = _plain(sentence)
    lead = _LEADING.match(text)
    if lead is None:
        return None
    raw = flatten_text(sentence) if "\\" in sentence else sentence
    raw_lead = _LEADING.match(raw.strip())
    if _qualified(text[lead.end():], raw.strip()[raw_lead.end():] if raw_lead else raw, restates, _blanked_rest(sentence)):
        return None
    return _unless_denied(lead.group(1).lower(), text[lead.end():], positive)


def _blanked_rest(text: str) -> str | None:
    """What follows a text's leading yes/no word with its formulas blanked (before `\\text{}` is flattened,
    so `$...$` is still a formula), or None without a leading word."""
    blanked = flatten_text(_INLINE_MATH.sub(" x ", text)).strip()
    lead = re.match(_LEAD_OPENER + r"(?:yes|no)\b", blanked, re.I)
    return blanked[lead.end():] if lead else None


def _unless_denied(said: str, rest: str, positive: bool = False) -> str | None:
    """`said`, or None when a "yes" is restated with a negation or a turn ("Yes, we cannot.", "Yes, it
    is not possible.", "Yes, ...; it fails for n = 3.") or a "no" with an affirmation ("No, it is
    possible.") or, when the question asks in positive words (`positive`), a "no" with an affirmation
    ("No, it is possible."): a yes and a denial answer "Is it possible?" oppositely, so the two together
    say nothing. A reason may deny ("Yes, because no prime divides it.")."""
    if said == "yes" and (_NEGATING_WORD.search(_main_clauses(rest)) or _TURNS.search(rest)
                          or re.search(r"\band\b[^,;]*\b(?:fails?|not|no)\b", rest, re.I)):
        return None  # "Yes, it works for n = 2; in fact it fails for n = 3.", "Yes, n even works and n odd fails."
    main = _main_clauses(rest)
    if said == "no" and positive and _AFFIRMS.search(main) and not _NEGATING_WORD.search(main):
        return None  # "No, it is possible.", "No, we can always find such a pair.": the restatement says yes
    return said


# An affirmation of possibility or existence: after a "no" with no negation it contradicts the word.
_AFFIRMS = re.compile(r"\b(?:possible|exists?|there (?:is|are) (?:an?|some|such)|(?:we|one|it|you) can|can be (?:done|found|built|made))\b",
                      re.I)


def answer_polarity(answer: str, restates: Callable[[str], bool] | None = None, positive: bool = False) -> str | None:
    """"yes"/"no" of a boxed or "answer is" answer: it starts with a yes/no word that nothing after it
    hedges, qualifies or contradicts ("Yes, because f is not constant" is yes; "Yes, No", "Yes, but only
    if n is even" and "No, wait, yes" are neither); else None ("Not sure.", "impossible": see
    `is_short_denial`)."""
    text = flatten_text(answer).strip().rstrip(".").strip()
    lead = re.match(r"(yes|no)(?=\s*(?:[,.!;:/]|$|--|\u2014|\u2013))", text, re.I)
    if lead is None or _qualified(_prose(text[lead.end():]), text[lead.end():], restates, _blanked_rest(answer)):
        return None
    return _unless_denied(lead.group(1).lower(), _prose(text[lead.end():]), positive)


def is_short_denial(answer: str) -> bool:
    """True when a boxed or "answer is" answer is all of a denied claim ("impossible", "\\text{It is not
    possible}", "no such function", "does not exist"): against a Yes/No gold it is no answer rather than
    a wrong one, since whether it means yes or no depends on how the question is worded."""
    return _SHORT_DENIAL.fullmatch(flatten_text(answer).strip().rstrip(".").strip()) is not None


# "None.", "None of them work.", "none exist": the only sentences in which a bare "none" is read
_BARE_NONE = re.compile(r"none(?: of (?:them|these|those))? (?:exists?|works?|satisfy|satisfies)|none", re.I)
_STATES_VALUE = re.compile(r"=|\\in\b|^\s*-?\d")
# A short answer that is all of a "none" ("\\boxed{\\text{no solution}}", "no real roots", "empty")
_SHORT_NONE = re.compile(r"(?:no|zero) (?:[a-z\-]+ )?(?:solutions?|values?|roots?|answers?|such [a-z\-]+)"
                         r"|(?:the )?empty(?: set)?|(?:it |they )?(?:does|do) not exist", re.I)


# Words that make a denial tentative or partial whatever the grammar: a modal ("There may be no such
# solutions"), a belief or a search ("I believe ...", "No such solutions were found by our search"), a
# limit to easy or small cases ("no obvious solutions", "no small primes").
_TENTATIVE = re.compile(r"\b(?:may|might|could|would|should|must|believe[ds]?|think|thought|guess|suspect\w*|expect\w*"
                        r"|found|find|finds|search\w*|check\w*|tried|try|tested|known|aware|observed|seen|see|we|our|us|i|my"
                        r"|so far|yet|apparently|obvious\w*|easy|easily|small|simple|trivially|unique|range|given|listed"
                        r"|considered|shown|here|above|below)\b", re.I)
_NOUN = r"[a-z][a-z\-\u2010\u2011]*"


def _none_grammar(body: str, kinds: list[str]) -> bool:
    """True when a "none" sentence has one of the few shapes read (a whitelist, since the ways to limit a
    denial, "no small primes", "no solution to the second equation", "no such primes in this range",
    cannot all be listed): "There is/are no [such|KIND] NOUN [exist(s) | that/such that/satisfying/for
    which/with ...]" (also "There does not exist ..."), "No [such|KIND] NOUN exist(s)/work(s)/satisfy",
    "Such a NOUN does not/cannot exist", "The NOUN has no [KIND] solutions/roots", and the short forms
    of `_SHORT_NONE`; KIND is a kind of number the gold names. No tentative word (`_TENTATIVE`)."""
    text = " ".join(body.split())
    if _TENTATIVE.search(text):
        return False
    if re.fullmatch(r"none(?: of (?:them|these|those))?(?: (?:exists?|works?|satisfy|satisfies))?", text, re.I):
        return True
    adj = r"(?:(?:such|" + "|".join(map(re.escape, [k for k in kinds if re.fullmatch(_KIND, k, re.I)]) or ["such"]) + r")\s+)*"
    noun = adj + _NOUN + r"(?:\s+of\s+(?!(?:the|this|that|these|those)\b)" + _NOUN + r"(?:\s+" + _NOUN + r")?)?(?:\s+[a-z])?"
    other = r"(?:\s+and\s+(?:an?\s+)?(?:" + _KIND + r"\s+)?" + _NOUN + r"(?:\s+[a-z])?)?"
    domain = r"(?:\s+(?:in|among|over)\s+(?:the\s+)?(?:set\s+of\s+)?" + _KIND + r"s?)?"
    tail = r"(?:\s+(?:exists?|works?|satisf(?:y|ies)|(?:such\s+)?that\b.*|satisfying\b.*|for\s+which\b.*|which\b.*))?"
    shapes = [
        r"there\s+(?:(?:is|are|exists?)\s+no|(?:does|do)\s+not\s+exist(?:\s+(?:an?|any))?|(?:doesn't|don't)\s+exist"
        r"(?:\s+(?:an?|any))?)\s+" + noun + other + domain + tail,
        r"no\s+" + noun + other + domain + r"\s+(?:exists?|works?|satisf(?:y|ies)|can\s+exist)",
        r"(?:such\s+(?:an?\s+)?" + _NOUN + r"|it|they|[a-z])\s+(?:(?:does|do)\s+not|(?:doesn't|don't)|cannot|can't)\s+exist",
        r"(?:(?:the|this)\s+" + _NOUN + r"(?:\s+" + _NOUN + r")?|it|they)\s+(?:has|have)\s+no\s+" + adj
        + r"(?:solutions?|roots?|zeros?)" + domain,
        r"(?:no|zero)\s+" + adj + r"(?:solutions?|values?|roots?|answers?|" + _NOUN + r")" + domain,
        r"(?:the\s+)?empty(?:\s+set)?|(?:it\s+|they\s+)?(?:does|do)\s+not\s+exist|(?:it\s+is|is|are)\s+empty",
    ]
    return any(re.fullmatch(shape, text, re.I) for shape in shapes)


def says_none(sentence: str, kinds: str = "") -> bool:
    """True when the sentence says that nothing satisfies the question ("There are no such primes",
    "None.", "no solution exists"), in one clause (or one opening with "There is no ...", see
    `_DENIED_EXISTENCE`), with no second negation, stating no number or value ("There is no such thing
    as a free lunch, so the values are 2 and 3." is not read), and denying everything: "There are no
    other solutions", "no further values" and "no solution for odd n" deny part of the answer only. A
    kind of number ("no positive solutions") is read only when `kinds` (the gold's words) names it."""
    text = _prose(sentence).strip().rstrip(".").strip()
    if any(_STATES_VALUE.search(m.group(0).strip("$\\()[] ")) for m in _INLINE_MATH.finditer(sentence)):
        return False
    if _NUMBER_TOKEN.search(text) or _SCALE_WORD.search(text):
        return False
    body = _OPENER.sub("", text, count=1)
    if re.search(r"\bnone\b", body, re.I):
        return _BARE_NONE.fullmatch(body) is not None
    if _QUALIFIER.search(body) or _HEDGE.search(body) or _INVERTING.search(body) or _RESTRICTOR.search(body):
        return False
    allowed = kinds.lower().split()
    if any((m.group("kind") or m.group("domain")).lower() not in allowed for m in _DENIED_KIND.finditer(body)):
        return False
    if not _none_grammar(body, allowed):
        return False
    if _SHORT_NONE.fullmatch(body):
        return True
    if _DENIED_EXISTENCE.match(body):
        if _CLAUSE_AFTER_DENIAL.search(body):
            return False
    elif re.search(r"[,;]|\b(?:so|and|but|because|since)\b", body, re.I):
        return False
    if not _NONE.search(body):
        return False
    return len(_NEGATING_WORD.findall(body)) == 1


def final_says_none(text: str, kinds: str = "",
                    followup_ok: Callable[[str, str], bool] = _nothing_follows) -> bool:
    """True when a text's final sentence says nothing satisfies the question (`says_none`), no formula
    in its paragraph states a value ("So $x = 2$. There are no such primes." is not read) and
    `followup_ok(what follows the sentence, "none")` accepts what follows it ("\\n\\n$$x = 2$$" is not)."""
    paragraph, sentences, _, after = _final_parts(text)
    if not sentences or not followup_ok(after, "none"):
        return False
    formulas = [m.group(0) for m in _INLINE_MATH.finditer(paragraph)] + [m.group(0) for m in _DISPLAY_MATH.finditer(paragraph)]
    if any(_STATES_VALUE.search(f.strip("$\\()[] ")) for f in formulas):
        return False
    return says_none(sentences[-1], kinds)
