"""What a verdict is: `Verdict`, its REASONS, and how a judging path builds one (`judged`, `unread`).

Pure (no math-verify): the pool, rewards and summaries read verdicts without loading the judge.
"""

from __future__ import annotations

from dataclasses import dataclass

from grpo_data.verify.prose import final_sentence

# Verdict reasons, in the order summaries print them.
REASONS = ("ok", "wrong", "no_answer", "timeout", "error", "unparseable_gold")


@dataclass(frozen=True)
class Verdict:
    """The judgement of one prediction.

    correct: True only when reason == "ok".
    reason:  one of REASONS. "timeout" and "error" are scored as not correct: they say the verifier
             could not decide, which summaries report apart from "wrong".
    detail:  short free text for logs (exception type, extracted answer), never parsed.
    answer:  the answer the verifier read from the prediction (the parsed expression's text, or the
             choice/text answer), "" when none: majority voting compares these strings.
    """

    correct: bool
    reason: str
    detail: str = ""
    answer: str = ""


def unread(text: str) -> Verdict:
    """"no_answer", with the final sentence that was not read (for the user to see what models write)."""
    return Verdict(False, "no_answer", (final_sentence(text) or "")[:160])


def judged(correct: bool, said: str, detail: str = "") -> Verdict:
    return Verdict(True, "ok", "", said[:80]) if correct else Verdict(False, "wrong", detail or said[:80], said[:80])
