"""What may follow a committed final answer (a `\\boxed{}`, an "answer is X" clause, a leading yes/no).

The text after a committed answer is read with a whitelist, not a list of bad words: the ways to take
an answer back ("Yes. Just kidding.", "The answer is 2. Edit: 3.", "The answer is C. Or D.") cannot
all be listed. What may follow is

- nothing but punctuation, closing math delimiters or markup ("}$.", "\\n\\\\]"), or the end of the
  model's turn (a chat-template token such as `<|im_start|>`: what comes after it is not the model's);
- "I hope it is correct." (the Minerva format's closing line);
- at most `MAX_FOLLOWUPS` short sentences, each opening with a word that continues a statement
  (`_OPENER`: "This", "It", "Since", "Let me double check: ..."), holding no hedge, condition,
  take-back or alternative (`_UNSETTLING`) and no competing answer candidate: another choice letter,
  another yes/no word, a number the answer does not hold. After a yes, a follow-up sentence holds no
  negation; after a no, at most one; after either, no word on truth ("That is not true.": of the
  question's claim, or of the answer just given?).

Anything else makes the answer unread ("no_answer"), never a guess. `followup_ok` is that whitelist,
used after an unboxed "answer is X" clause and a leading yes/no sentence. After a `\\boxed{}` answer
(choice, yes/no, count, math) `box_unsettled` looks for signals instead: models explain a boxed answer
with other options and numbers ("\\boxed{C}. Options A, B and D are ruled out."), and math-verify
credits those; only doubt (`retracted`), a later answer or lone sentence naming another candidate, a
competitor after "or", or an alternative beside another value unsettles it.

Pure: regexes only; the text is only read.
"""

from __future__ import annotations

import re

from grpo_data.verify.counts import _COMPLEMENT, number_values
from grpo_data.verify.prose import (
    _CONDITION,
    _HEDGE,
    _MORE_CONDITION,
    _NEGATING_WORD,
    _NUMBER_TOKEN,
    _OTHER_ANSWER,
    _SCALE_WORD,
    _SECOND_THOUGHT,
    _SENTENCE_END,
    LIMIT_WORDS,
    _prose,
    flatten_text,
)

MAX_FOLLOWUPS = 3      # sentences after the answer; more is continued reasoning, not a closing remark
MAX_FOLLOWUP_CHARS = 400

# The end of the model's turn: a chat-template token; what follows is the template's, not an answer.
# Only tokens that end or open a turn: "<|begin_of_thought|>" and the like sit inside an answer.
_TURN_END = re.compile(r"<\|(?:im_end|im_start|endoftext|end_of_text|eot_id|eom_id|end|user|assistant|start_header_id)\|>"
                       r"|</s>|<eos>|<end_of_turn>|<\uff5c(?:end\u2581of\u2581sentence|User|Assistant)\uff5c>")
_MARKUP = re.compile(r"\*\*|__|`|^#+\s*", re.M)
# What may sit right after an answer before any words: closing braces and math delimiters, punctuation.
_CLOSERS = re.compile(r"^(?:\s|[.!,;:)\]}$]|\\[\])]|\\quad|\\qquad|\\,|\\;|\\!)+")
_BOILERPLATE = re.compile(r"(?:i hope (?:it|this|that) is (?:correct|right|helpful|clear)|hope (?:it|this) helps)[.!]?", re.I)
# The words a closing remark may open with: it continues or justifies the statement just made.
_OPENER = re.compile(r"(?:this|that|these|those|it|it's|its|they|there|here|the|such|so|thus|hence|therefore|because"
                     r"|since|as|indeed|in fact|note|notice|check|checking|verification|verifying|let|we|one|for example"
                     r"|for instance|namely|specifically|in particular|each|every|all|both|a|an|any|equivalently"
                     r"|that is|explanation|reason|proof|by|using|clearly|substituting|plugging)\b", re.I)
# Words that unsettle an answer given just before: a take-back, a joke, an alternative, an addition.
_TAKE_BACK = re.compile(r"\b(?:edit(?:ed)?|kidding|joking|joke|jk|lol|typo|revis\w*|updat\w*|amend\w*|alternativ\w*|either"
                        r"|or|otherwise|also|too|another|other|equally|false alarm|psych|nah|well|then again|apolog\w*"
                        r"|sorry|hold on|unless|except|although|though|only|sometimes|not always|at least|opposite|contrary|converse"
                        r"|reverse|reversed|inverse|negation|flip\w*)\b", re.I)
_TRUTH = re.compile(r"\b(?:true|false|untrue|correct|incorrect|right|wrong|valid|invalid|mistaken)\b", re.I)
# A choice letter: "(D)", "D", "$D$"; not the article "A" before a lower-case word ("A quick check ..."),
# unless that word is a verb ("A gives 12, which works.").
_LETTER = re.compile(r"\(\s*([A-Ja-j])\s*\)|(?<![\w\\])(A(?![\w'])(?!\s+(?!(?:is|was|gives|works|holds|also|and|or"
                     r"|fits|satisfies|yields|equals|can|could|would|must|should|matches|fails|too)\b)[a-z])|[B-J](?![\w']))")
# "... the answer is no for odd n": the word an "answer is" clause in a closing remark names
_ANSWER_CLAUSE = re.compile(r"\banswer(?:\s+is|\s*[:=])\s*:?\s*([^\s,.;:!?]*)", re.I)
# A word that takes an answer back or doubts it: checked after a boxed math answer (see `retracted`).
_RETRACTING = re.compile(r"\b(?:edit(?:ed)?|kidding|joking|typo|revised|correction|scratch that|never ?mind|oops"
                         r"|false alarm|on second thought|wrong|incorrect|mistake|mistaken|not sure|wait|hmm+|actually"
                         r"|maybe|perhaps|probably|unsure|seems? off|doubt\w*)\b|\?", re.I)
# After a boxed answer, words that doubt or take it back ("\\boxed{4}. Hmm, that seems off."): they
# unsettle it unless what follows the last of them restates the answer ("Actually, let me double check
# ... hmm, we get the same answer, 5."). Not a bare "?" or "maybe": "Is that right? Let's verify: ...",
# "Why 5? Because ...", "Maybe a quicker way: ..." explain a right answer.
_DOUBT = re.compile(r"\b(?:edit(?:ed)?|kidding|joking|typo|revised|correction|erratum|scratch that|never ?mind|oops"
                    r"|false alarm|on second thought|on reflection|reconsider\w*|not sure|unsure|wait|hmm+|actually"
                    r"|perhaps|probably|doubt\w*|seems? off|hold on|nope|retract\w*"
                    r"|not (?:\d+% |entirely |completely |quite |totally )?(?:sure|certain|confident))\b", re.I)
# Words that rule something out: a doubt only when the sentence names no other candidate ("That is
# wrong.") or names the answer itself ("5 is wrong."); "Option D is incorrect because ..." explains.
_ELIMINATING = re.compile(r"\b(?:wrong|incorrect|mistake|mistaken|errors?)\b", re.I)
# Words that put another answer beside the boxed one: a doubt only in a sentence that names another
# candidate and not the answer ("On the other hand, 3 is also defensible.", "..., otherwise $3$.").
_ALTERNATIVE = re.compile(r"\b(?:alternativ\w*|could also|might also|may also|also (?:works?|correct|valid|possible"
                          r"|plausible|defensible|right|acceptable|true)|should be|would be|could be|might be"
                          r"|on the other hand|otherwise|instead|rather|or else|either|unless|except)\b", re.I)
# A later answer clause: "So the final answer is 6.", "Final answer: D", "**Final Answer**\n6",
# "The correct value is 6, not 5.", "the answer would be 6"; its first clause is what it names.
_LATER_ANSWER = re.compile(r"\b(?:answer|correct (?:value|choice|option|letter|result|number|count))[ \t]*"
                           r"(?:is|was|would be|should be|could be|might be|becomes|=|:|\n)[ \t]*:?[ \t]*"
                           r"(?:actually[ \t]+|really[ \t]+)?(?P<x>(?:[^\n.;]|\.(?=\d|\\(?:overline|dot)\b)){0,80})", re.I)
_FIRST_CLAUSE = re.compile(r"[,;(]|\b(?:since|because|as|which|where|from|by|when|for|so|and|that|this|we)\b", re.I)
# A competitor right after "or"/"alternatively": "(or $6$ if zero is counted)", "Hmm, or D."
_OR = re.compile(r"\b(?:or|alternatively|otherwise)\b(?!\s+(?:equivalently|in other words|simply|written|expressed))"
                 r"[\s,:(]*(?:possibly|maybe|perhaps|even|else|also|just)?[\s,:($\\]*(?P<c>\S{1,12})", re.I)


def end_of_turn(text: str) -> str:
    """The text up to the first chat-template token (`<|im_start|>` and the like), which ends the model's turn."""
    m = _TURN_END.search(text)
    return text if m is None else text[:m.start()]


def without_closing(text: str) -> str:
    """The text up to the end of the model's turn (`end_of_turn`), without a final "I hope it is
    correct." line: what is left ends with the answer when nothing else follows it."""
    text = end_of_turn(text).rstrip()
    m = re.search(r"(?:^|(?<=[\s.!$\]}]))" + _BOILERPLATE.pattern + r"\s*$", text, re.I)
    return text[:m.start()].rstrip() if m else text


def _numbers(text: str) -> set[float]:
    """The numbers a text states, with their signs (`number_values`: "-0.5" is not a restatement of
    1/2; "3-5" reads 3 and 5); thousands separators ("12,\\!000") are not read as two numbers."""
    return {v for v in number_values(re.sub(r"(?<=\d),(?:\\!)?(?=\d{3}(?!\d))", "", text))}


def _letters(text: str) -> set[str]:
    return {(m.group(1) or m.group(2)).upper() for m in _LETTER.finditer(text)}


def _competes(sentence: str, kind: str, answer: str) -> bool:
    """The sentence names an answer other than `answer`: another choice letter ("choice"), another yes/no
    word ("yesno", `answer` "yes" or "no"), a number `answer` does not hold (any other kind but "text")."""
    flat = flatten_text(sentence)
    if kind == "choice":
        return bool(_letters(flat) - _letters(answer))
    if kind == "yesno":
        return any(m.group(0).lower() != answer for m in _OTHER_ANSWER.finditer(flat))
    if kind == "text":
        return bool(_OTHER_ANSWER.search(flat))
    return bool(_numbers(flat) - _numbers(flatten_text(answer)))


def _sentence_ok(sentence: str, kind: str, answer: str) -> bool:
    flat = flatten_text(sentence).strip()
    if _BOILERPLATE.fullmatch(flat):
        return True
    words = re.sub(r"\$[^$]*\$|\\\(.*?\\\)", " ", flat).strip()
    if not re.search(r"[A-Za-z]{2,}", words):  # a formula or number alone: only the answer again
        return not _competes(sentence, kind, answer) and bool(re.search(r"\w", flat))
    if _OPENER.match(words) is None:
        return False
    if (_HEDGE.search(words) or _CONDITION.search(words) or _MORE_CONDITION.search(words) or _SECOND_THOUGHT.search(words)
            or _TAKE_BACK.search(words) or _RETRACTING.search(words)):
        return False
    competes = _number_in_answer_position if kind in ("number", "math") else _competes
    if competes(sentence, kind, answer) or not all(_same_answer(m.group(1), kind, answer)
                                                   for m in _ANSWER_CLAUSE.finditer(flat)):
        return False
    if kind in ("number", "math") and (_SCALE_WORD.search(words) or _COMPLEMENT.search(words)):
        return False  # "That is in thousands.", "These are the ones that fail."
    if kind == "text" and not _holds_words(words, answer):
        return False  # "\\boxed{odd}. The parity is even.": only a restatement follows a word answer
    if kind == "yesno" and (_TURNING.search(words) if answer == "yes" else
                            _AFFIRMING.search(words) and not _NEGATING_WORD.search(words)):
        return False  # "Yes. It fails for every n.", "No. Such n exists.": the follow-up says the opposite
    if kind == "yesno" and answer == "no":  # "No. Since 7 does not divide 100, it is impossible.": a reason may deny
        words = _REASON_CLAUSE.sub(" ", words)
    negations = len(_NEGATING_WORD.findall(words))
    if kind == "yesno" and _TRUTH.search(words):
        return False
    return negations <= (1 if kind == "yesno" and answer == "no" else 0)


# A because/since clause: "Since 7 does not divide 100, it is impossible." (to the comma), ", because the
# sum is odd." (to the end).
_REASON_CLAUSE = re.compile(r"^\s*(?:since|because|as)\b[^,;]*[,;]|[,;]?\s*\b(?:since|because)\b.*$", re.I)
_COPULA_BEFORE = re.compile(r"\b(?:is|are|was|were|be|equals?|gives?|get|got|obtain)\s*$", re.I)


def _number_in_answer_position(sentence: str, kind: str, answer: str) -> bool:
    """A closing sentence after an "answer is" number names another number as an answer: the sentence is
    only that number ("$6$."), or a copula or "or" stands right before it ("It is 6.", "Or 6."). A list
    or an explanation naming other numbers ("Those are triangles 1, 2 and 4.") is no competitor."""
    flat = flatten_text(sentence)
    mine = _answer_numbers(answer)
    if not (_numbers(flat) - mine):
        return False
    if _is_candidate(flat, kind):
        return True
    for m in _NUMBER_TOKEN.finditer(flat):
        if _numbers(m.group(0)) - mine and (_COPULA_BEFORE.search(flat[:m.start()])
                                            or re.search(r"\b(?:or|nor|not)\s*$", flat[:m.start()], re.I)):
            return True
    return False


def _same_answer(named: str, kind: str, answer: str) -> bool:
    """The word an "answer is" clause in a closing remark names is the committed answer again."""
    token = flatten_text(named).strip("$()\\{}*").lower()
    if kind == "choice":
        return _letters(f"({token})" if len(token) == 1 else token) == _letters(answer)
    if kind == "yesno":
        return token == answer
    if kind == "text":
        return bool(token) and token in flatten_text(answer).lower().split()
    return bool(_numbers(token)) and _numbers(token) <= _numbers(flatten_text(answer))


def _holds_words(words: str, answer: str) -> bool:
    """The sentence holds every word of a word answer ("It is odd." restates "odd")."""
    said = set(re.findall(r"[a-z]+", words.lower()))
    return set(re.findall(r"[a-z]+", flatten_text(answer).lower())) <= said


def followup_ok(after: str, kind: str, answer: str) -> bool:
    """True when `after`, the text after a committed answer, only closes it (see the module docstring).
    `kind` names the candidates that compete with `answer`: "choice" (letters), "yesno" (`answer` is
    "yes" or "no"), "number" or "math" (numbers `answer` does not hold), "text" (yes/no words)."""
    text = _CLOSERS.sub("", _MARKUP.sub("", end_of_turn(after))).strip()
    if not text:
        return True
    if len(text) > MAX_FOLLOWUP_CHARS:
        return False
    sentences = [s.strip() for s in _SENTENCE_END.split(text) if s.strip()]
    sentences = [s for s in sentences if not re.fullmatch(r"[\s.!,;:)\]}$\\]*", s)]
    return len(sentences) <= MAX_FOLLOWUPS and all(_sentence_ok(s, kind, answer) for s in sentences)


# Words that turn a stretch of doubt naming the answer itself into a check that holds ("Wait, 5 is
# indeed right.", "Hmm, so the answer is 5."); without one, doubt about the answer unsettles it
# ("Hmm, 0.5 seems too big.", "I'm not sure about 4.", "Wait, maybe 0.5.").
_CONFIRMING = re.compile(r"\b(?:indeed|correct|right|confirm\w*|checks? out|verif\w*|holds|consistent|matches"
                         r"|(?:the|my|final) answer is|so|thus|therefore|hence|yes|same|agree\w*|as expected)\b", re.I)


def _confirms(stretch: str) -> bool:
    """A stretch of doubt that names the answer confirms it: a confirming word and no negation."""
    return bool(_CONFIRMING.search(stretch)) and not _NEGATING_WORD.search(stretch)


def retracted(after: str, kind: str = "math", answer: str = "") -> bool:
    """True when words of doubt unsettle a boxed answer (`_DOUBT`: "\\\\boxed{4}. Hmm, that seems off.",
    "\\\\boxed{2}. Edit: 3."): the last of them starts a stretch (to its sentence's end) that names no
    candidate of `kind`, names another one, rules out ("\\\\boxed{5}. Wait, 5 is wrong."), or names the
    answer without confirming it (`_confirms`: "Hmm, 5 seems too big." unsettles, "Wait, 5 is indeed
    right." does not); or a
    sentence rules out (`_ELIMINATING`) without naming another candidate ("That was a mistake.")."""
    text = _MARKUP.sub("", end_of_turn(after))
    last = next(reversed(list(_DOUBT.finditer(text))), None)  # the last word of doubt
    if last is not None:
        stretch = _SENTENCE_END.split(text[last.start():], maxsplit=1)[0]
        same, other = _names(stretch, kind, answer)
        if other or not same or _ELIMINATING.search(stretch) or not _confirms(stretch):
            return True
    for sentence in _SENTENCE_END.split(text):
        if _ELIMINATING.search(sentence):
            same, other = _names(sentence, kind, answer)
            if same or not other:
                return True
    return False


_TURNING = re.compile(r"\b(?:fail\w*|impossible|false|untrue|counter-?examples?|contradict\w*)\b", re.I)
_PRONOUN_I = re.compile(r"\bI(?:'m|'ve|'d|'ll)?(?=\s+[a-z])")
_CONTRAST = re.compile(r"\b(?:but|however|although|though|yet|nevertheless|nonetheless|still)\b", re.I)
_AFFIRMING = re.compile(r"\b(?:works?|holds?|possible|exists?|true|succeeds?)\b", re.I)
_YESNO_HEDGE = re.compile(r"\b(?:maybe|perhaps|not sure|unsure|i think|i guess|probably|likely|seems?|unclear|don't know"
                          r"|do not know|depends?|depending|sometimes|not always|not necessarily|in general)\b", re.I)


_YESNO_QUALIFIER = re.compile(r"\b(?:iff|as long as|so long as|usually|mostly|generally|typically|often|apart from"
                              r"|aside from|besides|barring|assuming|supposing|provided)\b", re.I)
_LIST_MARKER = re.compile(r"\(?\d{1,2}[.)]")


def _sentences(text: str) -> list[str]:
    """The text's sentences, list markers ("1." before more text on its line) left out."""
    found = []
    for line in text.split("\n"):
        parts = [p for p in _SENTENCE_END.split(line) if p.strip()]
        found += [p for i, p in enumerate(parts) if not (i + 1 < len(parts) and _LIST_MARKER.fullmatch(p.strip()))]
    return found


def _answer_numbers(answer: str) -> set[float]:
    return _numbers(flatten_text(answer)) | {float(x) for x in re.findall(r"(?<![\w.])-?\d+(?:\.\d+)?", answer)}


def _names(text: str, kind: str, answer: str) -> tuple[bool, bool]:
    """(the text names the answer, it names another candidate of `kind`): choice letters, yes/no words,
    else numbers."""
    flat = flatten_text(text)
    if kind == "choice":
        got, mine = _letters(_PRONOUN_I.sub(" ", flat)), _letters(flatten_text(answer))
    elif kind == "yesno":
        got, mine = {m.group(0).lower() for m in _OTHER_ANSWER.finditer(flat)}, {answer}
    elif kind == "text":
        got, mine = {m.group(0).lower() for m in _OTHER_ANSWER.finditer(flat)}, set()
    else:
        got, mine = _numbers(flat), _answer_numbers(answer)
    return bool(got & mine), bool(got - mine)


def _is_candidate(token: str, kind: str) -> bool:
    """`token` (the text right after "or", a whole sentence) is only an answer of `kind`: "(D)", "No", "$6$"."""
    bare = flatten_text(token).strip(" \t.,;:!)($\\[]{}*").strip()
    if kind == "choice":
        return re.fullmatch(r"\(?[A-J]\)?", bare) is not None
    if kind in ("yesno", "text"):
        return re.fullmatch(r"(?:yes|no)", bare, re.I) is not None
    return re.fullmatch(r"-?\d+(?:\.\d+)?", bare) is not None


def box_unsettled(after: str, kind: str, answer: str) -> bool:
    """True when the text after a boxed answer unsettles it; explanations that name other options or
    numbers do not ("\\\\boxed{C}. Options A, B and D are ruled out.", "\\\\boxed{3}\\n\\nNote that we
    excluded the 2 degenerate triangles."). A list of signals, not a whitelist (math-verify credits a
    box followed by any explanation, and this verifier is not worse than math-verify there):

    - words of doubt (`retracted`);
    - a later answer clause naming another candidate ("So the final answer is 6.", "Final answer: D",
      "**Final Answer**\\n6", "The correct value is 6, not 5.");
    - a sentence that is only another candidate ("(D).", "No.");
    - another candidate right after "or"/"alternatively" ("(or $6$ if zero is counted)");
    - a sentence that puts another candidate beside the answer (`_ALTERNATIVE`: "On the other hand, 3
      is also defensible.", "..., otherwise $3$.");
    - after a yes/no: the other yes/no word, a hedge or a condition ("\\\\boxed{Yes}. Unless n is even."),
      or a contrast that turns it ("\\\\boxed{Yes}. But for n = 1 it is impossible.").

    `kind` and `answer` as for `followup_ok` ("math" like "number")."""
    text = _CLOSERS.sub("", _MARKUP.sub("", end_of_turn(after)))
    if not text.strip():
        return False
    if retracted(text, kind, answer):
        return True
    flat_lines = "\n".join(flatten_text(line) for line in text.split("\n"))
    for m in _LATER_ANSWER.finditer(flat_lines):
        named = _FIRST_CLAUSE.split(m.group("x"), maxsplit=1)[0]
        if kind == "yesno":
            said = re.match(r"\s*(yes|no)\b", named, re.I)
            if said and said.group(1).lower() != answer:
                return True
        elif _names(named, kind, answer)[1]:
            return True
    for m in _OR.finditer(flat_lines):
        if _is_candidate(m.group("c"), kind) and _names(m.group("c"), kind, answer)[1]:
            return True
    # the rest of the box's own line and sentence: "\\boxed{2} inequalities fail."
    own = _CLOSERS.sub("", _MARKUP.sub("", end_of_turn(after)).split("\n", 1)[0])
    own = _SENTENCE_END.split(own.strip(), maxsplit=1)[0] if own.strip() else ""
    if kind == "number" and (_COMPLEMENT.search(own) or _NEGATING_WORD.search(_prose(flatten_text(own)))):
        return True
    for sentence in _sentences(text):
        same, other = _names(sentence, kind, answer)
        if other and (_is_candidate(sentence, kind) or (not same and _ALTERNATIVE.search(flatten_text(sentence)))):
            return True
        if kind == "yesno":
            words = _prose(flatten_text(sentence))
            if other or _YESNO_HEDGE.search(words) or _CONDITION.search(words) or _YESNO_QUALIFIER.search(words):
                return True
            if _CONTRAST.search(words) and (_NEGATING_WORD.search(words) if answer == "yes"
                                           else _AFFIRMING.search(words) and not _NEGATING_WORD.search(words)):
                return True
    return False



# The most text after a leading yes/no (or an unboxed "answer is" yes/no) that is read for take-backs: a
# longer stretch is more reasoning, in which the word may have answered a step, not the question.
MAX_YES_NO_FOLLOWUP_CHARS = 1500


def yes_no_settled(after: str, answer: str) -> bool:
    """What follows a leading yes/no sentence, or an unboxed "answer is" yes/no, leaves `answer` ("yes"
    or "no") standing: a restatement or an explanation may follow ("No, it is not possible. The
    invariant above never changes, so the target cannot be reached."), and only a take-back unsettles
    it: the signals that unsettle a boxed yes/no (`box_unsettled`: doubt, the other word, a hedge, a
    condition, a contrast that turns it), a sentence that turns it (after a yes "It fails for n = 3.",
    after a no "Such n exists." with no negation), a question, or more than
    MAX_YES_NO_FOLLOWUP_CHARS of text."""
    text = _CLOSERS.sub("", _MARKUP.sub("", end_of_turn(after))).strip()
    if not text:
        return True
    if len(text) > MAX_YES_NO_FOLLOWUP_CHARS or box_unsettled(after, "yesno", answer):
        return False
    if _OTHER_ANSWER.search(re.sub(r"\\[\[\]()]|\$", " ", flatten_text(text))):  # "\\[\\text{No}\\]"
        return False
    for sentence in _sentences(text):
        words = _prose(flatten_text(sentence))
        if ("?" in words or _SECOND_THOUGHT.search(words) or _TRUTH.search(words) or _REVERSING.search(words)
                or _DOUBTING.search(words)):
            return False
        if (_TURNING.search(words) or _DENYING.search(words) if answer == "yes"
                else _AFFIRMING.search(words) and not _NEGATING_WORD.search(words)):
            return False  # "Yes. There is no such n.", "No. Such a tiling exists."
    return True


# After a yes, a sentence that denies ("Yes. There is no such n."); after either, one that reverses it.
_DENYING = re.compile(r"\b(?:no such|there (?:is|are|exists?) no|(?:does|do) not exist|(?:doesn't|don't) exist|cannot|can't"
                      r"|impossible|not possible|never|none)\b", re.I)
_REVERSING = re.compile(r"\b(?:opposite|converse|contrary|reverse|otherwise)\b", re.I)
# A limit, a doubt or a missing proof after a yes/no ("Yes. This is a conjecture.", "Yes, it is possible. I
# could not complete the proof.", "Yes. The bound is attained only asymptotically.").
_DOUBTING = re.compile(r"\b(?:" + LIMIT_WORDS + r"|unless|unconfirmed|not (?:fully |entirely |completely )?"
                       r"(?:confident|sure|certain|proven|proved|verified)|could not|couldn't|cannot (?:prove|show|verify)"
                       r"|uncertain|incomplete|missing|unclear|guess\w*|assum\w*|believe\w*|probably|likely|seems?)\b", re.I)
