"""Reading final answers written as sentences (grpo_data.verify.prose): each reader on a small table."""

import pytest

from grpo_data.verify.committed import followup_ok
from grpo_data.verify.counts import stated_count
from grpo_data.verify.prose import (
    answer_polarity,
    final_polarity,
    final_sentence,
    is_short_denial,
    polarity,
    says_none,
)


@pytest.mark.parametrize(("text", "expected"), [
    ("So the sum is odd.\n\nHence such a tiling cannot exist.", "Hence such a tiling cannot exist."),
    ("Hence such a sequence cannot exist.\n\n6. **", "Hence such a sequence cannot exist."),  # a cut-off list item
    ("We are done. **There is no such set.**", "There is no such set."),
    ("Therefore\n\\[\nx = 2\n\\]", "Therefore"),
    ("$$x^2$$", None),
    ("", None),
])
def test_final_sentence(text, expected):
    assert final_sentence(text) == expected


@pytest.mark.parametrize(("sentence", "expected"), [
    ("No, it is not possible.", "no"),
    ("Yes.", "yes"),
    ("So, yes: every such graph is planar.", "yes"),
    ("Answer: no", "no"),
    # third review 2026-12-03: a negation of a claim is no yes/no ("Is it impossible to tile the
    # board?" is answered no by "It is possible"), so only a leading yes/no word is read
    ("Hence such an infinite sequence cannot exist.", None),
    ("Thus, there does not exist such a sequence.", None),
    ("It is impossible to tile the board.", None),
    ("There is no way to tile the board.", None),
    ("It is not true that every such graph is planar.", None),
    ("The statement is not true.", None),
    ("No, it is impossible to tile the board.", "no"),
    ("No. The board can be tiled.", "no"),
    ("It is not impossible to tile the board.", None),   # two negations
    ("It cannot be done if n is odd.", None),            # a condition
    ("Is it possible?", None),                           # a question
    ("No matter which n we take, the sum is even.", None),
    ("Thus the robot can stay inside the corridor.", None),  # an affirmation without yes
    ("The graph contains no cycle.", None),              # "no" as a determiner
    ("Therefore $a \\neq b$ and $x$ is not in $S$.", None),  # two clauses; "is not in" negates no existence
    ("Hence such a tiling does not exist.", None),
    # review 2026-12-03 (adversarial): a negation of a detail, in a second clause, or corrected later
    ("So $n=5$ works, since $5$ is not divisible by $3$.", None),
    ("Therefore such a function exists, because f is not constant.", None),
    ("Thus such a sequence exists and it is not unique.", None),
    ("The sequence never becomes negative, so it is bounded.", None),
    ("The game is won by the first player, who never loses.", None),
    ("Hence every n works and none fail.", None),
    ("No, wait.", None),
    ("\\text{Yes, because } f \\text{ is not constant}", "yes"),
    # second review 2026-12-03: a qualified, doubled or inverted answer is not read
    ("Yes, if n is even.", None),
    ("No, yes.", None),
    ("No, it depends on n.", None),
    ("Yes, this is the only stationary distribution.", "yes"),   # "only" describing, not conditioning
    ("Yes, no two of them coincide.", None),  # "no" as a determiner, not a second answer; but a yes restated
    # with a denial answers "Do two of them coincide?" and "Are they distinct?" alike (review 2026-12-03)
    ("Yes, no two of them coincide, because ...", None),
    ("Yes, because no prime divides it.", "yes"),                # a reason may deny
    ("Yes, we can.", "yes"),                                     # review 2026-12-03: false negatives
    ("No, 15 is not prime.", "no"),
    ("Yes, we cannot.", None),
    ("Yes, it is not possible.", None),
    ("Hence there is no contradiction.", None),                  # affirms the claim
    ("It is impossible to find a counterexample.", None),
    ("The inequality cannot fail.", None),
    ("It cannot be smaller than 3.", None),                      # a bound, not an existence
    ("It is impossible to determine.", None),
    ("There is no other way.", None),
    ("The limit does not always exist.", None),
    ("Such a tiling is impossible.", None),
    ("The first player cannot win.", None),
    ("Thus, there does not exist such a sequence of digits and a positive integer N.", None),
    ("There is no such tiling when n is odd.", None),
    ("There is no such tiling, but a covering exists.", None),
])
def test_polarity(sentence, expected):
    assert polarity(sentence) == expected


def _closing(after: str, said: str) -> bool:
    return followup_ok(after, "yesno", said)


def test_final_polarity_reads_a_leading_yes_that_opens_the_last_paragraph():
    text = "## Answer\n\n**Yes.** Such a sequence exists. Specifically, take $a_n = n$."
    assert final_polarity(text, _closing) == "yes"
    assert final_polarity(text) is None  # by default nothing may follow the leading sentence
    assert final_polarity("Yes, we first try n = 1.\n\nIt works for every n.", _closing) is None
    assert final_polarity("Try a grid.\n\nNo, wait. Actually we can always achieve it by choosing a larger grid, which works.",
                          _closing) is None
    assert final_polarity("Yes! No!", _closing) is None and final_polarity("No. Yes.", _closing) is None  # two answers
    # review 2026-12-03: what follows a leading yes/no is read with a whitelist, not a list of bad words
    assert final_polarity("Yes. Just kidding.", _closing) is None
    assert final_polarity("Yes. Unless n is odd.", _closing) is None


@pytest.mark.parametrize(("answer", "expected"), [
    ("\\text{Yes, because } f \\text{ is not constant}", "yes"),
    ("No such function", None),         # a short denial: see test_is_short_denial
    ("\\text{impossible}", None),
    ("does not exist", None),
    ("Not sure", None),
    ("\\text{I do not know}", None),
    ("f is not constant", None),
    ("Yes, No", None), ("Yes/No", None), ("No, wait, yes", None), ("Yes, but only if n is even", None),
    ("\\text{Yes, if } n \\text{ is even}", None), ("Yes, because no prime divides it", "yes"),
])
def test_answer_polarity(answer, expected):
    assert answer_polarity(answer) == expected


@pytest.mark.parametrize(("answer", "expected"), [
    ("\\text{impossible}", True), ("It is not possible.", True), ("No such function", True), ("does not exist", True),
    ("\\text{There is no such tiling}", True),
    ("No", False), ("Not sure", False), ("possible", False), ("f is not constant", False),
])
def test_is_short_denial(answer, expected):
    assert is_short_denial(answer) is expected


@pytest.mark.parametrize(("sentence", "expected"), [
    ("There are no such primes.", True),
    ("None.", True),
    ("No real solution exists.", False),  # a kind of number the gold does not name (see below)
    ("Such a function does not exist.", True),
    ("There are two such primes.", False),
    ("There are no such primes if n is even.", False),
    ("It is not true that no solution exists.", False),
    ("The answer is 5.", False),
    ("Thus none of the remaining cases fail, so all n work.", False),  # "none" as a determiner
    ("So every prime works; none are excluded.", False),
    ("There is no such thing as a free lunch, so the values are 2 and 3.", False),  # states values
    ("None of them work.", True),
    # second review 2026-12-03: a partial denial is not "none"
    ("There are no other solutions.", False),
    ("No further solutions exist.", False),
    ("No solution exists for odd n.", False),
    ("There are no nontrivial solutions.", False),
    ("There is no largest such number.", False),
    ("There is no sequence of non-zero digits and positive integer N satisfying the property.", True),
    # final review 2026-12-03: only whitelisted shapes; adjectives, modals, beliefs, searches, places limit a denial
    ("No small primes work.", False),
    ("There are no obvious solutions.", False),
    ("There is no solution to the second equation.", False),
    ("There are no such primes in this range.", False),
    ("There may be no such solutions.", False),
    ("I believe there are no such solutions.", False),
    ("No such solutions were found by our search.", False),
    ("No such function exists.", True),
])
def test_says_none(sentence, expected):
    assert says_none(sentence) is expected


def test_says_none_reads_a_kind_of_number_only_when_the_gold_names_it():
    assert says_none("No real solution exists.", "no real solutions")
    assert not says_none("There are no integer solutions.", "no real solutions")
    assert not says_none("There are no solutions in the integers.", "none")
    assert says_none("There are no such primes.", "none")  # the noun itself is no limit


@pytest.mark.parametrize(("sentence", "expected"), [
    ("At most two of them can hold.", 2.0),
    # final review 2026-12-03: a question, hedge, condition, complement, other unit or index is not the count
    ("Is it two?", None), ("Two of them can hold if n is even.", None), ("Maybe two of them hold.", None),
    ("All but two of them hold.", None), ("Two pairs of them hold.", None), ("Only inequality 2 holds.", None),
    ("The maximum is 12 apples.", 12.0),
    ("There are no such primes.", 0.0),
    ("Two or three of them can hold.", None),
    ("It works for $n = 3$ and 4 others.", 4.0),  # a number inside a formula is not the sentence's
    ("None of them work.", 0.0),
    ("None of them is prime.", None),         # "none" read only as "None." or "none (of them) exist/work"
    ("No one can win this game.", None),      # "one" is not a number word
    ("The answer is the smaller one.", None),
    ("The answer is three quarters.", None),  # a fraction word
    ("It cannot hold.", None),
    # second review 2026-12-03: a bounded, negated or approximate number is not the number
    ("More than two of them can hold.", None),
    ("No two of them can hold.", None),
    ("At least two of them are needed.", None),
    ("It can't be two.", None),
    ("Around two of them hold.", None),
    ("Twenty-one of them hold.", 21.0),
    ("Five two.", None),                      # two numbers
    ("All non-zero terms vanish.", None),     # "zero" inside a word
])
def test_stated_count(sentence, expected):
    assert stated_count(sentence) == expected
