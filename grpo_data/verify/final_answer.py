"""The final answer a completion commits to, found by regexes alone (no math-verify).

    final_answer_text("... so \\boxed{C}.") == "C"          # the last \\boxed{} (or \\fbox{})
    final_answer_text("The answer is (C).") == "(C)"        # else the last "answer is X" / "answer: X"
    after_final_answer("The answer is 2. Edit: 3.") == " Edit: 3."  # what follows it

(math-verify's `StringExtractionConfig` was tried for choices and missed "The answer is (C)." and
"\\boxed{C}", so the extraction here is our own and tested.) An "answer is X" clause that later text
doubts or takes back ("Hmm, wait, it is (D).") is no final answer (`answer_taken_back`); a boxed one
is final, as math-verify reads it. What may follow a final answer is `grpo_data.verify.committed`'s.
"""

from __future__ import annotations

import re

# Markdown emphasis, taken off before an "answer is X" clause is looked for (and by `answers.unwrap`).
_MARKDOWN = re.compile(r"\*\*|__|\*|`")

_ANCHOR = re.compile(r"answer(?:\s+is|\s*[:=])\s*:?\s*(?P<ans>[^\n]*?)\s*(?:\.\s*$|\.\s|\n|$)", re.IGNORECASE)
# Second thoughts after an "answer is X" clause ("The answer is (C). Hmm, wait, it is (D)."): the clause
# was a guess. (A \boxed{} answer is a deliberate final answer, as math-verify takes it too.)
_SECOND_THOUGHT = re.compile(r"\b(?:wait|actually|hmm+|mistake|correction|instead|rather|reconsider|on second thought"
                             r"|oops|scratch that|never ?mind|nope|(?:the )?correct (?:answer|choice|option|one|letter)|incorrect|wrong|retract\w*"
                             r"|not sure|maybe|perhaps)\b|\?", re.I)


def _last_boxed_span(text: str) -> tuple[int, str | None] | None:
    """(end index, content) of the last \\boxed{...} (or, without one, \\fbox{...}); content None when its
    braces do not balance or it is empty; None when there is no box."""
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
                    return j + 1, text[i:j].strip() or None
        return len(text), None  # unbalanced
    return None


def last_boxed(text: str) -> str | None:
    """Content of the last \\boxed{...} (or \\fbox{...}) with balanced braces, else None."""
    span = _last_boxed_span(text)
    return None if span is None else span[1]


def boxed_answers(text: str) -> list[str]:
    """The contents of every \\boxed{...} with balanced braces, in order ("\\boxed{No}\\boxed{Yes}" ->
    ["No", "Yes"]); a box inside another closed one is part of its content. One pass with a stack
    (many unclosed "\\boxed{" cost no rescans)."""
    marker = "\\boxed{"
    closed, stack, depth, i = [], [], 0, 0
    while i < len(text):
        if text.startswith(marker, i):
            stack.append((i + len(marker), depth))
            depth += 1
            i += len(marker)
            continue
        ch = text[i]
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if stack and stack[-1][1] == depth:
                start, _ = stack.pop()
                closed.append((start, i))
        i += 1
    found, last_end = [], -1
    for start, end in sorted(closed):
        if start > last_end:  # not inside an earlier closed box
            found.append(text[start:end].strip())
            last_end = end
    return found


def after_final_answer(pred: str) -> str:
    """The text after the prediction's final answer (`final_answer_text`): after the last `\\boxed{}`,
    else after the last "answer is X" clause; "" when there is no answer."""
    span = _last_boxed_span(pred)
    if span is not None:
        return pred[span[0]:]
    plain = _MARKDOWN.sub("", pred)
    ends = [m.end() for m in _ANCHOR.finditer(plain)]
    return plain[ends[-1]:] if ends else ""


def final_answer_text(pred: str) -> str | None:
    """The prediction's final answer as a string: the last \\boxed{}, else the last "answer is X"."""
    boxed = last_boxed(pred)
    if boxed is not None:
        return boxed
    found = None
    for m in _ANCHOR.finditer(_MARKDOWN.sub("", pred)):
        found = m.group("ans")
    answer = _innermost(found) if found else ""  # the last clause, even when it names nothing
    return answer or None


# "Final Answer: The final answer is (C)": the Minerva format names the answer twice
_NESTED_ANCHOR = re.compile(r"(?:the\s+)?(?:final\s+)?answer(?:\s+is|\s*[:=])\s*:?\s*", re.I)


def _innermost(answer: str) -> str:
    """"The final answer is (C)" -> "(C)": the X of an "answer is X" clause inside another one's."""
    for _ in range(3):
        m = _NESTED_ANCHOR.match(answer)
        if m is None:
            break
        answer = answer[m.end():]
    return answer.strip()


def anchored_answers(pred: str) -> list[str]:
    """Every "answer is X" clause's X, in order ("The final answer is 3. The answer is 2." -> ["3", "2"];
    "Final Answer: The final answer is 3." -> ["3"])."""
    found = [_innermost(m.group("ans")) for m in _ANCHOR.finditer(_MARKDOWN.sub("", pred))]
    return [a for a in found if a]


def answer_taken_back(pred: str) -> bool:
    """True when the final answer is an "answer is X" clause (no `\\boxed{}`) that later text doubts or
    takes back: it is read as no answer, not as X."""
    if last_boxed(pred) is not None:
        return False
    plain = _MARKDOWN.sub("", pred)
    ends = [m.end() for m in _ANCHOR.finditer(plain)]
    return bool(ends) and _SECOND_THOUGHT.search(plain[ends[-1]:]) is not None
