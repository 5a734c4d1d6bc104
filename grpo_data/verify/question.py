"""What a problem asks, read only as far as judging a yes/no answer needs it.

A denial ("No such n exists.", "It is not possible to tile the board.", "\\boxed{\\text{impossible}}")
answers "Does such an n exist?" with no and "Is it impossible to tile the board?" with yes: without
the question it is no answer (`grpo_data.verify.prose`). With it, a denial is read as "no" when the
question asks, in positive words, whether something exists or can be done:

    asked = read_question("Determine whether there exists an integer n such that n^2 + 1 is divisible by 3.")
    asked.frame == "exists"
    reads_denial("Hence no such n exists.", asked) is True
    read_question("Is it impossible to tile the board?").frame is None   # asked in negative words: not read

Only denials are read this way, never affirmations ("Such a set exists." stays unread): a model's
last sentence affirms intermediate facts far more often than it denies them. A denial is read only
when it is all of the final claim: one negation, no hedge, condition, restriction ("no other
solutions") or turn ("no counterexample"), no number the question does not state, and words the
question uses or "such"/"it" (so "There is no monochromatic rectangle." is not read against "Can the
board be colored with 3 colors?" unless the question itself speaks of one; and a question that speaks
of one in negative words, "... so that no rectangle is monochromatic?", has no frame at all).

The question's own words never count as the answer: a final sentence that repeats the question
(`Asked.echoes`) is not read, as a denial, a yes/no or a "none".

Pure: regexes only, no math-verify; the question is only read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from grpo_data.verify.prose import (
    _CONDITION,
    _DISPLAY_MATH,
    _HEDGE,
    _INLINE_MATH,
    _INVERTING,
    _NEGATING_WORD,
    _NUMBER_TOKEN,
    _OPENER,
    _QUALIFIER,
    _RESTRICTOR,
    flatten_text,
)

# An asking sentence: a question, or an instruction to decide ("Determine whether ...", "Prove or disprove: ...").
_WITH_PROOF = r"(?:\s*,\s*(?:with proof|with justification|justifying your answer)\s*,)?"
_INSTRUCTION = re.compile(r"^(?:(?:determine|decide|find out|establish|investigate|check|show|prove or disprove)"
                          + _WITH_PROOF + r"\s*(?:,|:)?\s*(?:whether|if)\b|prove or disprove\b)", re.I)
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
# Positive questions on existence and on possibility or ability, after an asking opener is taken off.
_EXISTS = re.compile(r"^(?:(?:does|do|did|will|would|must|can|could) there (?:always )?(?:exists?|be)|is there|are there"
                     r"|there (?:is|are|exists?)|(?:one|we) can find|it is possible to find)\b", re.I)
_POSSIBLE = re.compile(r"^(?:is it (?:always |ever |still )?possible|(?:it is|it's) (?:always |ever )?possible"
                       r"|(?:can|could)\b|(?:[a-z][\w\-]*\s+){1,6}(?:can|could)\b)", re.I)
_ASK_OPENER = re.compile(r"^(?:(?:determine|decide|find out|establish|investigate|check|show)" + _WITH_PROOF
                         + r"\s*(?:,|:)?\s*(?:whether|if)"
                         r"|prove or disprove\s*:?\s*(?:that)?|(?:and|so|then|now)\b)\s*,?\s*", re.I)
# "... or not?": the alternative the question names is no negation of its claim.
_OR_NOT = re.compile(r",?\s*or not\b", re.I)
# Claim questions ("Is it true that ...", "Must every ...") are left unread: a denial there may deny
# the claim or only restate a negative claim.
_CLAIM = re.compile(r"^(?:is it (?:true|the case)|must|should|is|are|does|do|did|will|has|have)\b", re.I)

# A denial of existence or of possibility that can be all of a final claim.
_DENIAL = re.compile(r"\b(?:no such|there (?:is|are|exists?) no|(?:does|do|did) not exist|(?:doesn't|don't) exist"
                     r"|cannot (?:exist|be (?:done|found|achieved|constructed|obtained|reached|made|attained|arranged))"
                     r"|can't exist|(?:is|are|was) (?:not possible|impossible)|not possible|impossible|cannot|can't"
                     r"|can never|can not|no [a-z\-]+(?: [a-z\-]+){0,3} (?:exists?|can|could))\b", re.I)
# A denial of existence: "there is no such n", "no such n exists", "such a set cannot exist" ("no such
# function is differentiable" denies a property, not existence).
_EXISTENCE_DENIAL = re.compile(r"\bthere (?:is|are|exists?) no\b|\b(?:does|do|did) not exist|\b(?:doesn't|don't) exist"
                               r"|\bcannot exist|\bcan't exist|\bno\b(?: [a-z'\-]+){1,8} (?:exists?|can exist)\b"
                               r"|^(?:there (?:is|are|exists?) )?no such(?: (?!(?:is|are|was|were|can|has|have)\b)\S+){1,3}$", re.I)
# Words that make a denial tentative: a modal, a belief, a search.
_TENTATIVE = re.compile(r"\b(?:may|might|would|should|believe[ds]?|think|guess|suspect\w*|expect\w*|found|search\w*"
                        r"|tried|so far|yet|apparently|seems?|probably|likely|known)\b", re.I)
_WORD = re.compile(r"[a-z][a-z']+")
# A sentence that opens by denying a thing: "and" there joins parts of the thing denied.
_DENIED_SUBJECT = re.compile(r"^(?:there (?:is|are|exists?) no|there (?:does|do) not exist|(?:there )?(?:doesn't|don't) exist"
                             r"|no such)\b", re.I)
# Words that carry no subject: a denial made only of these and negations ("It is impossible.") is read.
_FUNCTION_WORDS = frozenset(
    "a an the such it its this that these those there is are was were be been being exist exists existed existing "
    "not no cannot can't can never possible impossible do does did doesn't don't so thus hence therefore consequently "
    "conclusion in we one to of and any for with which who whose as at by on or all every each such "
    # words that point back at the question's own conditions: "satisfying the required property"
    "satisfy satisfies satisfying required requirement requirements property properties condition conditions "
    "given stated described above problem question desired".split())


def _norm(text: str) -> str:
    """Lower-case words of a text, `\\text{}` flattened, inline math blanked and hyphens inside words
    taken out ("non-zero" is "nonzero"), single spaces."""
    plain = _INLINE_MATH.sub(" ", flatten_text(text)) if "\\" in text or "$" in text else text
    plain = re.sub(r"(?<=[A-Za-z])[\-\u2010\u2011](?=[A-Za-z])", "", plain)
    return " ".join(re.findall(r"[a-z0-9][a-z0-9']*", plain.lower()))


@dataclass(frozen=True)
class Asked:
    """A problem's question as the yes/no reader uses it: its normalized words, the numbers it states,
    `frame`, "exists" or "possible" when it asks in positive words whether something exists or can be
    done, else None, and whether its asking sentence holds a negation anywhere ("... so that no two are
    equal?"): then only a denial of "such" a thing, or of "it", is read."""

    text: str
    words: frozenset[str]
    numbers: frozenset[str]
    frame: str | None
    negated_description: bool = False

    def echoes(self, sentence: str) -> bool:
        """The sentence repeats the question's words (at least four of them, in order): the question's
        text, not an answer."""
        said = _norm(sentence)
        return len(said.split()) >= 4 and f" {said} " in f" {self.text} "

    def restates(self, phrase: str) -> bool:
        """`phrase` is the question's own words: a condition it states ("... if both players play
        optimally"), not one the answer adds ("if n is odd" to "... n odd or even ...?"); or "not always"
        / "not necessarily" answering a question that asks "always" / "necessarily"."""
        said = _norm(phrase)
        hedge = re.match(r"(?:it is |it's )?not (always|necessarily)\b", said)
        if hedge:  # "No, it is not always possible." to "Is it always possible ...?"
            return hedge.group(1) in self.words
        return len(said.split()) >= 2 and f" {said} " in f" {self.text} "


def _asking_sentences(question: str) -> list[str]:
    # formulas blanked; a question mark inside a display formula ("... \\[f(a) = 1 \\text{ for all } a?\\]") ends the question
    plain = _DISPLAY_MATH.sub(lambda m: " x?" if "?" in m.group(0) else " x ", flatten_text(question))
    plain = " ".join(_INLINE_MATH.sub(" x ", plain).split())
    parts = [p.strip() for p in _SENTENCE.split(plain) if p.strip()]
    return [p for p in parts if p.endswith("?") or _INSTRUCTION.match(p)]


# Where the thing asked about ends and its description begins ("... such that n^2 + 1 is not prime"): a
# negation there describes the thing; only one before it negates the question.
_DESCRIPTION = re.compile(r"\b(?:such that|so that|for which|in which|satisfying|with the property|where|whose|that)\b", re.I)
_NEGATED = re.compile(r"\b(?:without|fail\w*|never|false|unless|except)\b", re.I)


def _frame(ask: str) -> tuple[str | None, bool]:
    """(frame, whether a negation stands anywhere in the asking sentence) of one asking sentence."""
    body = _OR_NOT.sub("", ask).rstrip("?.! ")
    body = _ASK_OPENER.sub("", body, count=1)
    negated = bool(_NEGATING_WORD.search(body) or _NEGATED.search(body))
    main = _DESCRIPTION.split(body, maxsplit=1)[0]
    if _NEGATING_WORD.search(main) or _NEGATED.search(main) or re.search(r"\bor\b", body, re.I):
        return None, negated  # "Can the game go on forever, or must it end?": a denial may answer either way
    if _EXISTS.match(main):
        return "exists", negated
    if re.match(r"is it (?:always |ever |still )?possible\b", main, re.I) or (_POSSIBLE.match(main) and not _CLAIM.match(main)):
        return "possible", negated
    return None, negated


def read_question(question: str | None) -> Asked | None:
    """The question as `Asked`, or None without one. A question that asks more than one thing (two
    asking sentences with different frames) gets no frame."""
    if not question or not question.strip():
        return None
    read = [_frame(s) for s in _asking_sentences(question)]
    frame = read[0][0] if len(read) == 1 else None  # two asks ("Can it reach 100? Can it reach 101?"): no frame
    text = _norm(question)
    numbers = frozenset(m.group(0) for m in _NUMBER_TOKEN.finditer(flatten_text(question)))
    return Asked(text, frozenset(_WORD.findall(text)), numbers, frame, any(n for _, n in read))


def denies(text: str) -> bool:
    """The text holds a denial of existence or possibility ("No such positive integers a and b exist"):
    without a question to read it against, such an answer is no answer, never a wrong yes/no."""
    return _DENIAL.search(_INLINE_MATH.sub(" ", text)) is not None


def reads_denial(sentence: str, asked: Asked | None) -> bool:
    """True when `sentence` (a final sentence, or a boxed or "answer is" answer) denies, as all of its
    claim, what `asked` asks in positive words: "no" to it. See the module docstring for what is
    refused; False without a question or a frame."""
    if asked is None or asked.frame is None or asked.echoes(sentence):
        return False
    flat = flatten_text(sentence)
    words = _OPENER.sub("", " ".join(_INLINE_MATH.sub(" ", flat).split()).strip().rstrip(".!").strip(), count=1)
    if not words or "?" in words or _DENIAL.search(words) is None:
        return False
    if re.match(r"(?:this|that|which)\b", words, re.I) or re.search(r"\bwhich\b", words, re.I):
        return False  # "This is impossible.": the end of a step (a contradiction), not the answer
    if (_HEDGE.search(words) or _TENTATIVE.search(words) or _QUALIFIER.search(words) or _INVERTING.search(words)
            or _RESTRICTOR.search(words) or re.search(r"[;:]|\b(?:or|but|because|since|so|while|whereas)\b", words, re.I)):
        return False
    if re.search(r"\band\b", words, re.I) and not _DENIED_SUBJECT.match(words):
        return False  # "It is impossible and the game ends.": two claims; "There is no x and y such that" is one
    condition = _CONDITION.search(words)
    if condition and not asked.restates(words[condition.start():]):
        return False
    if len(_NEGATING_WORD.findall(words)) != 1:
        return False
    numbers = {m.group(0) for m in _NUMBER_TOKEN.finditer(flat)}
    if not numbers <= asked.numbers:
        return False  # "A coloring with 2 colors cannot exist.": a case the question does not name
    if not _EXISTENCE_DENIAL.search(words):  # "cannot", "impossible": only of what the question asks be done
        after = re.search(r"\b(?:cannot|can't|can not|can never)\s+(?:be\s+)?([a-z']+)", words, re.I)
        if after and after.group(1).lower() not in asked.words:
            return False  # "Such a path cannot be closed." to "Does there exist a path ...?"
    content = set(_norm(words).split()) - _FUNCTION_WORDS - set(numbers)
    if not content or (re.search(r"\bsuch\b", words, re.I) and _EXISTENCE_DENIAL.search(words)):
        return True
    return not asked.negated_description and content <= asked.words
