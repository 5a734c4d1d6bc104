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

import functools
import re
from dataclasses import dataclass

from grpo_data.verify.prose import (
    _CONDITION,
    _DISPLAY_MATH,
    _HEDGE,
    _INLINE_MATH,
    _INVERTING,
    _KIND,
    _NEGATING_WORD,
    _NUMBER_TOKEN,
    _OPENER,
    _QUALIFIER,
    _RESTRICTOR,
    _none_grammar,
    flatten_text,
)

_KIND_WORD = re.compile(_KIND, re.I)

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
# Words that make a denial tentative: a modal, a belief, a search.
_TENTATIVE = re.compile(r"\b(?:may|might|would|should|believe[ds]?|think|guess|suspect\w*|expect\w*|found|search\w*"
                        r"|tried|so far|yet|apparently|seems?|probably|likely|known)\b", re.I)
_WORD = re.compile(r"[a-z][a-z']+")
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
    """A problem's question as the yes/no reader uses it: its normalized words, the words and formulas of
    its asking sentence (what a denial must speak of: a premise or a hint is not asked), `frame`,
    "exists" or "possible" when it asks in positive words whether something exists or can be done, else
    None, and whether its asking sentence holds a negation anywhere ("... so that no two are equal?")."""

    text: str
    words: frozenset[str]
    ask_words: frozenset[str]
    ask_math: frozenset[str]
    frame: str | None
    negated_description: bool = False
    # a possibility ask's parts ("Can the frog reach (1, 0)?": subject "frog", verb "reach"; "Is it
    # possible to tile the board ...?": verb "tile", object "board"); empty when it has none
    ask_subject: frozenset[str] = frozenset()
    ask_verb: frozenset[str] = frozenset()
    ask_object: frozenset[str] = frozenset()

    @functools.cached_property
    def ask_stems(self) -> set[str]:
        return set().union(*(_stems(w) for w in self.ask_words)) if self.ask_words else set()

    def echoes(self, sentence: str) -> bool:
        """The sentence repeats the question's words (at least four of them, in order, an opening
        "Thus" aside): the question's text, not an answer."""
        said = _norm(_OPENER.sub("", flatten_text(sentence).strip(), count=1))
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


def _stems(word: str) -> set[str]:
    """A word and the stems its common endings leave ("tiled" -> "tile", "coloring" -> "color", "sets" -> "set"):
    a denial may say "cannot be tiled" of "Can the board be tiled?" and "such sets" of "a set"."""
    out = {word}
    for end, back in (("s", ""), ("es", ""), ("ed", ""), ("ed", "e"), ("ing", ""), ("ing", "e"), ("d", "")):
        if word.endswith(end) and len(word) > len(end) + 2:
            out.add(word[: -len(end)] + back)
    return out


def _math_key(formula: str) -> str:
    """A formula compared by its characters, delimiters and white space off: "$6 \\times 6$" == "6\\times6"."""
    return re.sub(r"\s+|\\[,;:! ]", "", formula.strip("$").removeprefix("\\(").removesuffix("\\)"))


def _asking_sentences(question: str) -> list[tuple[str, list[str]]]:
    """(sentence with formulas blanked, its formulas) of each asking sentence: a question, or an
    instruction to decide. A question mark inside a display formula ("... \\[f(a) = 1 \\text{ for all } a?\\]")
    ends the question."""
    formulas: list[str] = []

    def hold(m: re.Match) -> str:
        formulas.append(m.group(0))
        return f" \x00{len(formulas) - 1}\x00 " + ("?" if m.group(0).count("?") else "")

    plain = _INLINE_MATH.sub(hold, _DISPLAY_MATH.sub(hold, question))
    plain = " ".join(flatten_text(plain).split())
    out = []
    for part in (p.strip() for p in _SENTENCE.split(plain) if p.strip()):
        text = re.sub(r"\x00\d+\x00", "x", part)
        if text.endswith("?") or _INSTRUCTION.match(text):
            out.append((text, [formulas[int(i)] for i in re.findall(r"\x00(\d+)\x00", part)]))
    return out


# Where the thing asked about ends and its description begins ("... such that n^2 + 1 is not prime"): a
# negation there describes the thing; only one before it negates the question.
_DESCRIPTION = re.compile(r"\b(?:such that|so that|for which|in which|satisfying|with the property|where|whose|that)\b", re.I)
_NEGATED = re.compile(r"\b(?:without|fail\w*|never|false|unless|except)\b", re.I)


def _ask_body(ask: str) -> str:
    """An asking sentence without "or not", its end mark and its opener ("Determine whether ...")."""
    return _ASK_OPENER.sub("", _OR_NOT.sub("", ask).rstrip("?.! "), count=1)


def _frame(ask: str) -> tuple[str | None, bool]:
    """(frame, whether a negation stands anywhere in the asking sentence) of one asking sentence."""
    body = _ask_body(ask)
    negated = bool(_NEGATING_WORD.search(body) or _NEGATED.search(body))
    main = _DESCRIPTION.split(body, maxsplit=1)[0]
    if _NEGATING_WORD.search(main) or _NEGATED.search(main) or re.search(r"\bor\b", body, re.I):
        return None, negated  # "Can the game go on forever, or must it end?": a denial may answer either way
    if _EXISTS.match(main):
        return "exists", negated
    if re.match(r"is it (?:always |ever |still )?possible\b", main, re.I) or (_POSSIBLE.match(main) and not _CLAIM.match(main)):
        return "possible", negated
    return None, negated


_ARTICLES = {"the", "a", "an", "this", "that", "these", "those", "his", "her", "their", "its", "our", "my", "your"}
_PRONOUNS = {"it", "we", "one", "you", "they", "he", "she", "i"}
_ENDS_PHRASE = {"with", "in", "into", "on", "by", "from", "to", "so", "such", "for", "using", "without", "that", "if",
                "when", "after", "before", "at", "x"}


def _phrase(words: list[str]) -> frozenset[str]:
    """The content words of a noun phrase: up to four words, to the first preposition or clause word."""
    out = []
    for w in words[:4]:
        if w in _ENDS_PHRASE:
            break
        out.append(w)
    return frozenset(w for w in out if w not in _ARTICLES)


def _possibility_parts(ask: str) -> tuple[frozenset, frozenset, frozenset]:
    """(subject, verb stems, object) of a possibility ask: "can SUBJECT (be) VERB OBJECT ...", "is it
    possible (for SUBJECT) to (be) VERB OBJECT ..."; empty sets when it has neither shape."""
    body = _ask_body(ask).lower()
    words = re.findall(r"[a-z']+", body)
    m = re.match(r"is it (?:always |ever |still )?possible (?:for (?P<subj>.+?) )?to (?:be )?(?P<rest>.+)", " ".join(words))
    if m is None:
        m = re.match(r"(?:can|could) (?P<subj>.+?) be (?P<rest>.+)", " ".join(words))
    if m is None:
        m = re.match(r"(?:can|could) (?P<subj>(?:(?:the|a|an|this|that|his|her|their|its) )?[a-z']+) (?:always |ever )?(?P<rest>.+)",
                     " ".join(words))
    if m is None:
        return frozenset(), frozenset(), frozenset()
    rest = m.group("rest").split()
    subject = _phrase((m.group("subj") or "").split())
    return subject, frozenset(_stems(rest[0])) if rest else frozenset(), _phrase(rest[1:])


@functools.lru_cache(maxsize=4096)
def read_question(question: str | None) -> Asked | None:
    """The question as `Asked`, or None without one. A question that asks more than one thing (two
    asking sentences) gets no frame. Cached: a group's answers share their question."""
    if not question or not question.strip():
        return None
    asks = _asking_sentences(question)
    read = [_frame(text) for text, _ in asks]
    frame = read[0][0] if len(read) == 1 else None  # two asks ("Can it reach 100? Can it reach 101?"): no frame
    text = _norm(question)
    ask_text = _norm(" ".join(t for t, _ in asks))
    parts = _possibility_parts(asks[0][0]) if frame == "possible" else (frozenset(), frozenset(), frozenset())
    return Asked(text, frozenset(_WORD.findall(text)), frozenset(re.findall(r"[a-z0-9']+", ask_text)),
                 frozenset(_math_key(f) for _, fs in asks for f in fs), frame, any(n for _, n in read), *parts)


def denies(text: str) -> bool:
    """The text holds a denial of existence or possibility ("No such positive integers a and b exist"):
    without a question to read it against, such an answer is no answer, never a wrong yes/no."""
    return _DENIAL.search(_INLINE_MATH.sub(" ", text)) is not None


def reads_denial(sentence: str, asked: Asked | None) -> bool:
    """True when `sentence` (a final sentence, or a boxed or "answer is" answer) denies, as all of its
    claim, what `asked` asks in positive words: "no" to it. Read only in a few shapes, and only when
    every word and formula it names is its asking sentence's own (a premise, a hint, another case or a
    sub-case is never read as the answer):

    - of existence, either frame: "There is no such n.", "No such n exists.", "Such a sequence does not
      exist." (`grpo_data.verify.prose` `says_none`'s grammar, with "such" as its only adjective);
    - of possibility, frame "possible": "It is impossible (to tile the board).", "The board cannot be
      tiled.", "Such a tiling is impossible." (the verb the question asks).

    False without a question or a frame, for an echo of the question, a hedge, a tentative word, a
    condition the question does not state, a turn ("no counterexample"), a restriction ("no other"),
    a second clause or a second negation."""
    if asked is None or asked.frame is None or asked.echoes(sentence):
        return False
    maths = [m.group(0) for m in _INLINE_MATH.finditer(sentence)]
    if any(_math_key(m) not in asked.ask_math for m in maths):
        return False  # "The frog cannot reach $(1, 1)$." to "Can the frog reach $(1, 0)$?"
    flat = flatten_text(_INLINE_MATH.sub(" x ", sentence))
    words = _OPENER.sub("", " ".join(flat.split()).strip().rstrip(".!").strip(), count=1)
    if not words or "?" in words or _DENIAL.search(words) is None:
        return False
    if re.match(r"(?:this|that|which)\b", words, re.I) or re.search(r"\bwhich\b", words, re.I):
        return False  # "This is impossible.": the end of a step (a contradiction), not the answer
    restricted = [m.group(0).lower() for m in _RESTRICTOR.finditer(words)]  # "no other n"; "the remaining board" of
    if any(r.split()[0] not in asked.ask_words for r in restricted):            # "Can the remaining board ...?" is its own
        return False
    if (_HEDGE.search(words) or _TENTATIVE.search(words) or _QUALIFIER.search(words) or _INVERTING.search(words)
            or re.search(r"[;:,]|\b(?:or|but|because|since|so|while|whereas)\b", words, re.I)):
        return False
    condition = _CONDITION.search(words)
    if condition and not asked.restates(words[condition.start():]):
        return False
    if len(_NEGATING_WORD.findall(words)) != 1 or _NUMBER_TOKEN.search(words):
        return False
    content = set(_norm(words).split()) - _FUNCTION_WORDS - {"x"}
    letters = {w for w in content if len(w) == 1}  # "No such n exists": a variable the asking sentence's formulas name
    if any(not any(letter in key.lower() for key in asked.ask_math) for letter in letters):
        return False
    if any(not _stems(w) & asked.ask_stems for w in content - letters):
        return False  # a word the asking sentence does not use: another thing, a premise, a sub-case
    kinds = [w for w in asked.ask_words if _KIND_WORD.fullmatch(w)]  # "No such positive integer k exists."
    if _none_grammar(words, kinds):
        # under a negated description ("... so that no two are equal?") only "such" a thing: the
        # description's own denial ("there is no equal pair") restates the condition, it is no answer
        return not asked.negated_description or re.search(r"\bsuch\b", words, re.I) is not None
    if asked.frame != "possible" or asked.negated_description or re.search(r"\band\b", words, re.I):
        return False
    return _denies_possibility(words.lower(), asked)


def _denies_possibility(words: str, asked: Asked) -> bool:
    """A possibility denial of what the ask asks: "(it is) impossible (to VERB ...)", "such a NOUN is
    impossible", or "SUBJECT cannot (be) VERB ..." whose verb is the ask's and whose subject is a
    pronoun, the ask's subject or, passive, its object ("Can the frog reach (1, 0)?" <- "The frog cannot
    reach it."; "Is it possible to tile the board?" <- "The board cannot be tiled.", "We cannot tile it.")."""
    m = re.fullmatch(r"(?:(?:it is|it's) )?(?:not possible|impossible)(?: to (?:be )?(?P<verb>[a-z']+)(?P<rest>(?: [a-z']+)*))?", words)
    if m is not None:
        return m.group("verb") is None or bool(_stems(m.group("verb")) & asked.ask_verb)
    if re.fullmatch(r"such (?:an? )?[a-z']+ is (?:not possible|impossible)", words):
        return True
    m = re.fullmatch(r"(?P<subj>(?:[a-z']+ ){0,2}?[a-z']+) (?:cannot|can't|can not|can never) (?P<be>be )?(?P<verb>[a-z']+)"
                     r"(?P<rest>(?: [a-z']+)*)", words)
    if m is None or not _stems(m.group("verb")) & asked.ask_verb:
        return False
    subject = set(m.group("subj").split()) - _ARTICLES - {"such"}
    if subject <= _PRONOUNS:
        return True
    allowed = asked.ask_subject | (asked.ask_object if m.group("be") else frozenset())
    return all(_stems(w) & set().union(*(_stems(a) for a in allowed)) for w in subject) if allowed else False
