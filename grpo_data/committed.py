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

Anything else makes the answer unread ("no_answer"), never a guess. `followup_ok` is that whitelist;
`retracted` is the narrower check used after a boxed math answer, where math-verify's own tables hold
boxed answers followed by long explanations (and a restarted solution) that it rightly credits.

Pure: regexes only; the text is only read.
"""

from __future__ import annotations

import re

from grpo_data.counts import _COMPLEMENT, number_values
from grpo_data.prose import (
    _CONDITION,
    _HEDGE,
    _MORE_CONDITION,
    _NEGATING_WORD,
    _OTHER_ANSWER,
    _SCALE_WORD,
    _SECOND_THOUGHT,
    _SENTENCE_END,
    flatten_text,
)

MAX_FOLLOWUPS = 3      # sentences after the answer; more is continued reasoning, not a closing remark
MAX_FOLLOWUP_CHARS = 400

# The end of the model's turn: a chat-template token; what follows is the template's, not an answer.
# Only tokens that end or open a turn: "<|begin_of_thought|>" and the like sit inside an answer.
_TURN_END = re.compile(r"<\|(?:im_end|im_start|endoftext|end_of_text|eot_id|end|user|assistant|start_header_id)\|>"
                       r"|</s>|<eos>|<end_of_turn>")
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
    """The numbers a text states, their signs off (`number_values`); thousands separators
    ("12,\\!000") are not read as two numbers."""
    return {abs(v) for v in number_values(re.sub(r"(?<=\d),(?:\\!)?(?=\d{3}(?!\d))", "", text))}


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
    if _competes(sentence, kind, answer) or not all(_same_answer(m.group(1), kind, answer)
                                                   for m in _ANSWER_CLAUSE.finditer(flat)):
        return False
    if kind in ("number", "math") and (_SCALE_WORD.search(words) or _COMPLEMENT.search(words)):
        return False  # "That is in thousands.", "These are the ones that fail."
    if kind == "text" and not _holds_words(words, answer):
        return False  # "\\boxed{odd}. The parity is even.": only a restatement follows a word answer
    negations = len(_NEGATING_WORD.findall(words))
    if kind == "yesno" and _TRUTH.search(words):
        return False
    return negations <= (1 if kind == "yesno" and answer == "no" else 0)


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


def retracted(after: str) -> bool:
    """True when the text after a boxed math answer takes it back or doubts it ("\\boxed{4}. Hmm, that
    seems off.", "\\boxed{2}. Edit: 3."). A list of words, not a whitelist: math-verify's own tables
    credit boxed answers followed by explanations that hold other numbers, and this verifier must not
    be worse than math-verify there."""
    return _RETRACTING.search(flatten_text(end_of_turn(after))) is not None
