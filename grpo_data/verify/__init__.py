"""Verify: what an answer earns. Model outputs are only parsed here, never executed.

    judge         math-verify's verdict on one answer (the only module that imports math_verify)
    verdict       what a verdict is (Verdict and its reasons), without loading math-verify
    word_golds    golds math-verify would misread: choice letters, words and counts
    pool          killable verifier workers with time and memory limits, so no input stalls a batch
    answers       what kind of answer a gold string is; choice and word answers compared as strings
    final_answer  the final answer a completion commits to (its last box, else its last "answer is X")
    committed     what may follow a committed answer (a retraction voids it)
    counts        a count stated in words ("at most two of them")
    prose         a yes/no or "there are none" answer written as a sentence
    question      what a problem asks, so a denial can answer a yes/no question ("No such n exists.")
    rewards       rewards registered by name (correctness, format, length), built from a spec

Public names import their module on first use: `from grpo_data.verify import VerifierPool`.
"""

from grpo_data.lazy import lazy_exports

_HOMES = {
    "Verdict": "verdict", "verify_answer": "judge", "parse_gold": "judge", "rules_hash": "judge",
    "PoolConfig": "pool", "VerifierPool": "pool",
    "final_answer_text": "final_answer", "answer_kind": "answers",
    "Answer": "rewards", "register_reward": "rewards", "build_reward": "rewards",
}
__all__ = sorted(_HOMES)
__getattr__, __dir__ = lazy_exports(__name__, _HOMES)
