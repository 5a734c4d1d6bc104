"""#64: the verifier reads a yes/no answer with the problem's question in hand
(grpo_data.verify.question), a leading yes/no with any restatement, and restated values after a box;
the question travels from each caller (the profiler, the trainer, TRL's reward, `grpo verify`) to the
verifier workers."""

import json
import subprocess
import sys

import pytest

from grpo_data.generation.rollouts import RolloutSampler
from grpo_data.tables.problems import question_text
from grpo_data.verify.judge import repeating_as_fraction, verify_answer
from grpo_data.verify.question import read_question, reads_denial

EXISTS = "Does there exist a positive integer $n$ such that $n^2 + 1$ is divisible by $3$?"
CAN = "An $8 \\times 8$ board has two opposite corners removed. Can the remaining board be tiled with dominoes?"
WORK = "Squares are $0$ or $1$ modulo $3$, so $n^2+1$ is $1$ or $2$ modulo $3$.\n\n"


@pytest.mark.parametrize(("question", "frame"), [
    (EXISTS, "exists"),
    ("Determine whether there exists an infinite sequence of nonzero digits such that every tail is a square.", "exists"),
    ("Determine, with proof, whether there exists a progression $a_1, \\ldots, a_8$ of odd integers.", "exists"),
    ("Determine whether or not there exist integers $a$ and $b$ such that $a$ does not divide $b$.", "exists"),
    ("Let $S$ be a set. Does there exist a map \\[f(a) = f(b) \\text{ for all } a \\ne b?\\]", "exists"),
    (CAN, "possible"),
    ("Is it always possible to make all the numbers equal?", "possible"),
    ("Is it impossible to tile the board?", None),            # asked in negative words
    ("Is it true that no prime divides $n^2+1$?", None),        # a claim question
    ("Is $n^2 + 1$ prime for every $n$?", None),
    ("Find all $n$ such that $n^2 + 1$ is prime.", None),       # not a yes/no question
    ("Can the frog reach $(1, 0)$? Is it impossible for it to reach $(0, 1)$?", None),  # two asks, two frames
])
def test_the_frame_a_question_asks(question, frame):
    assert read_question(question).frame == frame


def test_a_negation_in_the_description_leaves_only_such_denials():
    asked = read_question("Is it possible to color the board with two colors so that no rectangle is monochromatic?")
    assert asked.frame == "possible" and asked.negated_description
    assert not reads_denial("In this coloring there is no monochromatic rectangle.", asked)
    assert reads_denial("Such a coloring cannot exist.", asked)


@pytest.mark.parametrize(("sentence", "read"), [
    ("Hence no such $n$ exists.", True),
    ("Therefore there is no such integer.", True),
    ("It is impossible.", False),                               # a denial of possibility: no answer to "exist?"
    ("Thus, there does not exist a positive integer $n$ such that $n^2+1$ is divisible by $3$.", True),
    ("So there is no such $n$ for odd $n$.", False),           # limited to part of the answer
    ("There may be no such $n$.", False),                      # tentative
    ("It is not true that no such $n$ exists.", False),         # two negations
    ("No such $n$ exists, but $n = 0$ works.", False),          # a second clause
    ("This is impossible.", False),                             # the end of a step, not the answer
    ("There is no such $n$ below 100.", False),                 # a number the question does not state
    ("Is there no such n?", False),                             # a question
    ("There is no counterexample.", False),                     # a denial that turns around
])
def test_denials_read_against_an_existence_question(sentence, read):
    assert reads_denial(sentence, read_question(EXISTS)) is read


def test_no_denial_is_read_without_a_question_or_a_frame():
    assert not reads_denial("Hence no such n exists.", None)
    assert not reads_denial("Hence no such n exists.", read_question("Is it impossible to find such n?"))


@pytest.mark.parametrize(("gold", "pred", "question", "reason"), [
    ("No", WORK + "Hence no such $n$ exists.", EXISTS, "ok"),
    ("No", WORK + "Hence no such $n$ exists.", None, "no_answer"),   # without the question: as before
    ("Yes", WORK + "Hence no such $n$ exists.", EXISTS, "wrong"),
    ("No", "Each domino covers a black and a white cell.\n\nTherefore the board cannot be tiled.", CAN, "ok"),
    ("Yes", "Each domino covers a black and a white cell.\n\nTherefore it is impossible to tile the board.",
     "Is it impossible to tile the board with dominoes?", "no_answer"),
    ("No", "\\boxed{\\text{No such } n \\text{ exists}}", EXISTS, "ok"),
    ("No", "\\boxed{\\text{No such } n \\text{ exists}}", None, "no_answer"),  # a denial is no answer, never wrong
    # a "none" gold's kinds are its own: the question's are not added (they may qualify another variable)
    ("\\text{No such } n \\text{ exists}", "\\boxed{\\text{No such positive integer } n \\text{ exists}}",
     "Find all positive integers $n$ such that $n^2+1$ is divisible by $3$.", "wrong"),
    ("\\text{No such } n \\text{ exists}", "\\boxed{\\text{No such } n \\text{ exists}}", None, "ok"),
])
def test_existence_answers_with_and_without_the_question(gold, pred, question, reason):
    assert verify_answer(gold, pred, question=question).reason == reason


def test_the_questions_own_words_are_no_answer():
    question = "Is it possible to tile the board? Note that no such tiling exists when the board has odd area."
    echo = "We check the small cases.\n\nNote that no such tiling exists when the board has odd area."
    assert read_question(question).echoes("Note that no such tiling exists when the board has odd area.")
    assert verify_answer("No", echo, question=question).reason == "no_answer"
    asked = "Is it possible to tile the board with dominoes"
    assert verify_answer("No", "Let us see.\n\n" + asked, question=asked + "?").reason == "no_answer"


@pytest.mark.parametrize(("gold", "tail", "reason"), [
    ("No", "No, it is not possible for the frog to reach $(1,0)$, since the parity of $x+y$ never changes.", "ok"),
    ("Yes", "Yes, we can always find two numbers whose difference is divisible by 7, by the pigeonhole principle.", "ok"),
    ("Yes", "**Answer:** Yes, the sequence is bounded; in fact $a_n < 3$ for all $n$.", "ok"),
    ("No", "So the answer is: No, not every such graph is planar.", "ok"),
    ("No", "No, it is not possible. The invariant shows the parity never changes, so the target is never reached.", "ok"),
    ("Yes", "Yes, we can: mirror every move of the opponent.", "no_answer"),  # after a colon: read as a clause
    # the opening word of the other answer is never credited
    ("Yes", "No, it is not possible for the frog to reach $(1,0)$, since the parity of $x+y$ never changes.", "wrong"),
    ("No", "Yes, we can always find two numbers whose difference is divisible by 7.", "wrong"),
    # take-backs
    ("Yes", "Yes, it is possible. Wait, actually it is not.", "no_answer"),
    ("No", "No, such a tiling does not exist. Hmm, maybe it does when n is even.", "no_answer"),
    ("No", "No. Such a tiling exists for every even n.", "no_answer"),
    ("Yes", "Yes. There is no such n.", "no_answer"),
    ("Yes", "Yes, n even.", "no_answer"),
    ("Yes", "Yes, if n is even.", "no_answer"),
])
def test_a_leading_yes_no_with_a_restatement(gold, tail, reason):
    assert verify_answer(gold, "The parity argument above settles it.\n\n" + tail).reason == reason


# The reviews' probes: a wrong, partial or ambiguous answer is never ok (`test_review_probes_are_not_credited`,
# over these and the later reviews' lists below). The first review's: a gold saying more than yes/no, a
# property denied for "such" a thing, a later clause that turns the yes, an alternative or a second ask.
first_probes = [
    ("No, the maximum is 8.", "\\boxed{\\text{No, the maximum is 7.}}", None),   # a gold that says more than no
    ("Yes. The smallest such n is 5.", "Yes. The smallest such n is 7.", None),
    ("No", "Work.\n\nHence such $n$ cannot be even.", EXISTS),                   # a property denied, not existence
    ("No", "Work.\n\nSuch a path cannot be closed.", "Does there exist a path visiting each vertex exactly once?"),
    ("No", "Work.\n\nTherefore no such function is differentiable.", "Does there exist a continuous $f$ with $f(f(x)) = -x$?"),
    ("Yes", "Work.\n\nYes, it works for $n = 2$; in fact it fails for $n = 3$.", None),
    ("Yes", "Work.\n\nYes would be the naive answer.", None),
    ("No", "Work.\n\nNo, if $n$ is even.", "Does there exist $n$, odd or even, such that $2^n + 1$ is divisible by 7?"),
    ("No", "Work.\n\nThe game cannot end.", "Can the game go on forever, or must it end?"),
    ("No", "Work.\n\nIt is impossible.", "Is it possible to reach 100? Is it possible to reach 101?"),
    ("None", "Work.\n\nThere are no positive solutions.", "Find all integers $n$, positive or negative, such that $n^2 = 2$."),
    ("Yes", "Work.\n\nYes. The bound is attained only asymptotically.", None),
    ("\\frac{1}{3}", "\\boxed{\\frac13}. The answer is $0.\\overline{3}$, though $0.\\overline{6}$ is also possible.", None),
]


def test_a_condition_the_question_states_is_a_restatement():
    tail = "\n\nNo, the game cannot end in a draw if both players play optimally."
    question = "Can the game end in a draw if both players play optimally?"
    assert verify_answer("No", tail).reason == "no_answer"
    assert verify_answer("No", tail, question=question).reason == "ok"
    always = "\\boxed{\\text{No, it is not always possible}}"
    assert verify_answer("No.", always).reason == "wrong"  # "not always" hedges when the question is not seen
    assert verify_answer("No.", always, question="Is it always possible to make all numbers equal?").reason == "ok"


@pytest.mark.parametrize(("gold", "kind_claim"), [
    ("No, there do not exist such polynomials.", "no"),
    ("\\text{Yes, there are infinitely many such pairs.}", "yes"),
    ("There exist no such field.", "none"),
    ("\\text{No such } n \\text{ exists}", "none"),
    ("Yes, if $n$ is even.", None),
])
def test_gold_sentences_claim_their_opening_word(gold, kind_claim):
    from grpo_data.verify.answers import answer_kind, gold_claim

    assert gold_claim(gold) == kind_claim
    assert (answer_kind(gold) == "text") is (kind_claim is not None)


@pytest.mark.parametrize(("math", "fraction"), [
    ("0.\\overline{3}", "\\frac{1}{3}"),
    ("0.8\\overline{3}", "\\frac{5}{6}"),
    ("-1.\\overline{142857}", "-\\frac{8}{7}"),
    ("2.\\dot{6}", "\\frac{8}{3}"),
    ("0.5", "0.5"),
])
def test_repeating_decimals_as_fractions(math, fraction):
    assert repeating_as_fraction(math) == fraction


@pytest.mark.parametrize(("gold", "pred", "reason"), [
    ("\\frac{1}{3}", "\\boxed{\\frac{1}{3}}. The final answer is $0.\\overline{3}$.", "ok"),
    ("\\frac{1}{3}", "\\boxed{\\frac{1}{3}}. The final answer is $0.\\overline{6}$.", "no_answer"),
    ("\\frac{1}{4}", "\\boxed{\\frac14}. The final answer is $25\\%$.", "ok"),
    ("\\frac{1}{4}", "\\boxed{\\frac14}. The final answer is $20\\%$.", "no_answer"),
    ("3", "\\boxed{3}. The final answer is $x = 3$.", "ok"),
    ("3", "\\boxed{3}. The final answer is $x = 4$.", "no_answer"),
    ("\\frac{5}{6}", "The answer is $0.8\\overline{3}$.", "ok"),
])
def test_restatements_of_a_boxed_value(gold, pred, reason):
    assert verify_answer(gold, pred).reason == reason


def test_a_no_restated_as_an_affirmation_depends_on_the_question():
    """"No, it is possible." is right to "Is it impossible ...?", a contradiction to "Is it possible
    ...?", and read as no without the question (as before #64)."""
    pred = "Colour the board like a chessboard.\n\nNo, it is possible."
    assert verify_answer("No", pred, question="Is it possible to tile the board?").reason == "no_answer"
    assert verify_answer("No", pred, question="Is it impossible to tile the board?").reason == "ok"
    assert verify_answer("No", pred).reason == "ok"


def test_question_text_of_a_templated_string():
    prompt = ("<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nDoes there exist $n$ such that "
              "$n^2+1$ is divisible by 3?<|im_end|>\n<|im_start|>assistant\n")
    text = question_text(prompt)
    assert "<|" not in text and text.endswith("divisible by 3?")
    assert read_question(text).frame == "exists"
    assert verify_answer("No", WORK + "Hence no such $n$ exists.", question=text).reason == "ok"


def test_question_text_of_a_problem():
    assert question_text([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Is 7 prime?"}]) == "Is 7 prime?"
    assert question_text("Is 7 prime?") == "Is 7 prime?"
    assert question_text([{"role": "system", "content": "x"}]) is None and question_text(None) is None


def test_the_pool_judges_with_the_question(pool):
    pred = WORK + "Hence no such $n$ exists."
    with_q, without = pool.verify(["No", "No"], [pred, pred], [EXISTS, None])
    assert (with_q.reason, without.reason) == ("ok", "no_answer")  # same gold and prediction: not deduplicated together
    with pytest.raises(ValueError, match="questions and golds differ"):
        pool.verify(["No"], [pred], [EXISTS, EXISTS])


class _RecordingVerifier:
    def __init__(self):
        self.calls = []

    def verify(self, golds, preds, questions=None):
        from grpo_data.verify.verdict import Verdict

        self.calls.append(questions)
        return [Verdict(False, "wrong") for _ in golds]


class _TwoArgumentVerifier:
    """A verifier written before #64: `verify(golds, preds)`."""

    calls = 0

    @classmethod
    def verify(cls, golds, preds):
        from grpo_data.verify.verdict import Verdict

        cls.calls += 1
        return [Verdict(False, "wrong") for _ in golds]


class _Engine:
    """Test double: every completion is "No."."""

    def generate(self, prompts, n, sampling):
        from grpo_data.generation.engines import Completion

        return [[Completion("No.", (5, 6), "stop") for _ in range(n)] for _ in prompts]


def _sampler(verifier):
    from grpo_data.generation.prompting import PromptConfig, SamplingConfig
    from grpo_train.tiny_policy import build_tokenizer

    return RolloutSampler(_Engine(), verifier, build_tokenizer(), PromptConfig(), SamplingConfig(max_tokens=8))


def test_the_sampler_hands_each_completion_its_question():
    """Engine: _Engine (test double); the profiler, the trainer and its evaluation call `sample` with
    their problems' questions (`question_text` of each prompt)."""
    verifier = _RecordingVerifier()
    sampler = _sampler(verifier)
    sampler.sample([[1], [2]], ["No", "Yes"], 2, ["Q1", "Q2"])
    sampler.sample([[1]], ["No"], 1)
    assert verifier.calls == [["Q1", "Q1", "Q2", "Q2"], None]
    old = _sampler(_TwoArgumentVerifier)
    assert len(old.sample([[1]], ["No"], 2, ["Q1"])[0].verdicts) == 2 and _TwoArgumentVerifier.calls == 1


def test_the_trainer_passes_each_problems_question(monkeypatch):
    """Engine: _Engine (test double): the bundled trainer's rollouts reach the verifier with the text
    of each problem's user message."""
    import numpy as np

    from grpo_train.rollout import RolloutBatcher

    verifier = _RecordingVerifier()
    prompts = [[{"role": "system", "content": "Box it."}, {"role": "user", "content": f"Is {i} prime?"}] for i in range(4)]

    class Scheduler:
        def sample(self, b):
            return np.arange(b) % 4

        def update(self, idx, c, g):
            pass

    batcher = RolloutBatcher(_sampler(verifier), Scheduler(), prompts, ["No"] * 4, 2, 2, 1, False)
    batcher.next_batch()
    asked = [q for call in verifier.calls for q in call]
    assert asked and set(asked) <= {f"Is {i} prime?" for i in range(4)}


def test_grpo_verify_reads_a_question_column(tmp_path):
    src = tmp_path / "items.jsonl"
    pred = WORK + "Hence no such $n$ exists."
    src.write_text("".join(json.dumps(r) + "\n" for r in [
        {"id": "a", "gold": "No", "pred": pred, "question": EXISTS},
        {"id": "b", "gold": "No", "pred": pred},
        {"id": "c", "gold": "No", "pred": pred, "question": 3},
    ]))
    out = tmp_path / "verdicts.jsonl"
    proc = subprocess.run([sys.executable, "-m", "pipelines.cli", "verify", str(src), "--out", str(out), "--workers", "1"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "line 3: field 'question' must be a string" in proc.stderr
    got = {v["id"]: v["reason"] for v in map(json.loads, out.read_text().splitlines())}
    assert got == {"a": "ok", "b": "no_answer"}


# The second review's probes (a denial meaning yes, a premise or hint, another case, a sub-case, a qualifier
# in a later clause or sentence, a gold saying more than its yes/no, a second value after a restated box, a
# kind of another variable): none is ever credited. And right answers it found lost: still credited.
Q7 = "Does there exist a positive integer $n$ such that $n^2+1$ is divisible by 7?"
TP = "Are there infinitely many primes $p$ such that $p + 2$ is also prime?"
QF = "Determine whether there exists $f:\\mathbb{R}\\to\\mathbb{R}$ with $f(f(x))=-x$ for all real $x$."
probes = [
 ("No", "W.\n\nThere is no largest such prime.", TP), ("No", "W.\n\nThere is no last such prime.", TP),
 ("No", "W.\n\nThere is no upper bound on such primes.", TP),
 ("No", "W.\n\nThere is no finite such sequence.", "Does there exist an infinite sequence of positive integers in which no term divides another?"),
 ("No", "W.\n\nNo, $n = 3$ satisfies it.", Q7), ("No", "W.\n\nNo, n = 3 is such an integer.", Q7), ("No", "W.\n\nNo, $n = 3$ satisfies it.", None),
 ("No", "W.\n\nThus the frog cannot jump diagonally.", "Can the frog reach the point $(1, 0)$? Note that the frog cannot jump diagonally."),
 ("No", "W.\n\nIt cannot jump twice in the same direction.", "A frog cannot jump twice in the same direction. Can it return to the origin?"),
 ("No", "W.\n\nSo the $6 \\times 6$ board cannot be tiled.", "It is known that a $6\\times6$ board cannot be tiled with $1\\times4$ tiles. Is it possible to tile a $10\\times10$ board with them?"),
 ("No", "W.\n\nThere are no integer solutions.", "Show that $x^2-3y^2=2$ has no integer solutions. Does there exist a rational solution?"),
 ("No", "\\boxed{\\text{There is no integer solution}}", "Show that $x^2-3y^2=2$ has no integer solutions. Does there exist a rational solution?"),
 ("No", "W.\n\nThere is no real square that is negative.", "Does there exist a real $x$ with $x^2=-1$? (Hint: no real square is negative.)"),
 ("No", "W.\n\nThe frog cannot reach $(1, 1)$.", "Can the frog reach the point $(1, 0)$?"),
 ("No", "W.\n\nNo even such $n$ exists.", "Does there exist an integer $n>1$ such that $2^n \\equiv 1 \\pmod n$?"),
 ("No", "W.\n\nThere is no such prime $n$.", "Does there exist an integer $n>1$ such that $2^n \\equiv 1 \\pmod n$?"),
 ("No", "W.\n\nNo continuous such function exists.", QF), ("No", "W.\n\nThere is no such function that is continuous.", QF),
 ("No", "W.\n\nNo such $n$ exists among small numbers.", QF), ("No", "W.\n\nNo such function exists for all $x$.", Q7),
 ("No", "W.\n\nIt is impossible to prove.", "Prove or disprove: there exists a real $x$ with $x^2=-1$."),
 ("Yes", "W.\n\nYes, it is possible, at least for $n \\le 10$.", None), ("Yes", "W.\n\nYes, it is possible, in theory.", None),
 ("Yes", "W.\n\nYes, it is possible, partially.", None), ("Yes", "W.\n\nYes, it holds, although a proof is missing.", None),
 ("Yes", "W.\n\nYes, it works, at least numerically.", None), ("Yes", "W.\n\nYes, it is believed so, though unproven.", None),
 ("Yes", "W.\n\nYes, the first player wins, on even boards.", None), ("Yes", "W.\n\nYes, we get a tiling, up to a single uncovered square.", None),
 ("Yes", "W.\n\nYes. This is a conjecture.", None), ("Yes", "W.\n\nYes. (Unverified.)", None),
 ("Yes", "W.\n\nYes. I am not fully confident in this.", None), ("Yes", "W.\n\nYes, it is possible. I could not complete the proof.", None),
 ("No, the largest such n is seven.", "No, the largest such n is eight.", None), ("No, Bob has a winning strategy.", "No, Alice has a winning strategy.", None),
 ("Yes, the only such function is the identity.", "Yes, the only such function is the zero function.", None),
 ("No, it diverges to infinity.", "No, it oscillates.", None), ("Yes, the minimum number of moves is twelve.", "Yes.", None),
 ("\\frac13", "$\\boxed{\\frac13}$. The answer is $0.\\overline{3}$. The correct value is $\\frac{1}{3}$ or 3.", None),
 ("\\frac13", "$\\boxed{\\frac13}$. The answer is $0.\\overline{3}$; the other root is 0.6.", None),
 ("There are no such integers.", "There is no such positive integer.", "Let $a$ be a positive integer. Find all integers $n$ such that $n^2 = a$ and $n^3 = 2a$."),
]
good = [
 ("No", "W.\n\nNo, the sum is always odd.", "Is it possible to make the sum even?"), ("No", "W.\n\nNo; the sum is always odd.", "Is it possible to make the sum even?"),
 ("No", "W.\n\nNo, the invariant holds at every step.", "Is it possible to reach the target?"), ("No", "W.\n\nNo, 3 always divides the sum.", "Can the sum become 100?"),
 ("No", "W.\n\nNo, the coloring argument works.", "Can the board be tiled?"), ("No", "W.\n\nHence no such $n$ exists.", Q7),
 ("No", "W.\n\nTherefore the board cannot be tiled.", "Can the board be tiled with dominoes?"),
]


# The third review's probes: a denial that restates the question's own condition (its description or
# another subject), a condition after a colon, "the only case"; and right answers to keep.
W = "Work.\n\n"
third_probes = [
 ("No", W+"Therefore Bob can never win.", "Can Alice ensure that Bob never wins?"),
 ("No", W+"Therefore Bob cannot win.", "Can Alice make sure that Bob cannot win?"),
 ("No", W+"Therefore the first player can never win.", "Is it possible for the game to continue so that the first player cannot win?"),
 ("No", W+"Hence neighbors cannot sum to a prime.", "Is it possible to arrange the numbers in a circle so that neighbors never sum to a prime?"),
 ("No", W+"Thus the ant cannot cross an edge twice.", "Can the ant walk from one corner to the opposite corner such that it does not cross any edge twice?"),
 ("No", W+"So adjacent cells cannot share a color.", "Is it possible to color the board so that adjacent cells never share a color?"),
 ("No", W+"Hence the total cannot be odd.", "Is it possible to arrange the cards so that the total is never odd?"),
 ("No", W+"Therefore a domino cannot be horizontal.", "Is it possible to tile the board with dominoes so that every domino is horizontal?"),
 ("No", W+"The tiles cannot be covered.", "Is it possible to cover the board with the tiles?"),
 ("Yes", W+"Yes, it is possible: n must be even.", None), ("Yes", W+"Yes, it is possible: n has to be odd.", None),
 ("Yes", W+"Yes, it is possible: in some cases.", None), ("No", W+"No, it is impossible: on odd boards.", None),
 ("Yes", W+"Yes, it exists: in the only case n is even.", None),
]
third_good = [
 ("Yes", W+"Yes, there is at least one.", None), ("Yes", W+"Yes, there exists at least one such triangle.", None),
 ("No", W+"Therefore the board cannot be tiled.", "Can the board be tiled with dominoes?"),
 ("No", W+"Therefore the remaining board cannot be tiled.", "An $8 \\times 8$ board has two opposite corners removed. Can the remaining board be tiled with dominoes?"),
 ("No", W+"Hence the frog cannot reach $(1, 0)$.", "Can the frog reach the point $(1, 0)$?"),
 ("No", W+"It is impossible to tile the board.", "Is it possible to tile the board with dominoes?"),
 ("No", W+"We cannot tile the board.", "Is it possible to tile the board with dominoes?"),
 ("No", W+"The board cannot be tiled.", "Is it possible to tile the board with dominoes?"),
 ("No", "\\boxed{\\text{impossible}}", "Can the remaining board be tiled with dominoes?"),
]


@pytest.mark.parametrize(("gold", "pred", "question"), first_probes + probes + third_probes)
def test_review_probes_are_not_credited(gold, pred, question):
    assert verify_answer(gold, pred, question=question).reason != "ok"


@pytest.mark.parametrize(("gold", "pred", "question"), good + third_good)
def test_review_right_answers_stay_credited(gold, pred, question):
    assert verify_answer(gold, pred, question=question).reason == "ok"
