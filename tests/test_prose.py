"""Reading final answers written as sentences (grpo_data.prose): each reader on a small table."""

import pytest

from grpo_data.prose import final_polarity, final_sentence, polarity, says_none, stated_count


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
    ("Hence such an infinite sequence cannot exist.", "no"),
    ("Thus, there does not exist such a sequence.", "no"),
    ("It is impossible to tile the board.", "no"),
    ("It is not impossible to tile the board.", None),   # two negations
    ("It cannot be done if n is odd.", None),            # a condition
    ("Is it possible?", None),                           # a question
    ("No matter which n we take, the sum is even.", None),
    ("Thus the robot can stay inside the corridor.", None),  # an affirmation without yes
    ("The graph contains no cycle.", None),              # "no" as a determiner
    ("Therefore $a \\neq b$ and $x$ is not in $S$.", "no"),  # words in formulas are not read
])
def test_polarity(sentence, expected):
    assert polarity(sentence) == expected


def test_final_polarity_reads_a_leading_yes_that_opens_the_last_paragraph():
    assert final_polarity("## Answer\n\n**Yes.** Such a sequence exists. Specifically, take $a_n = n$.") == "yes"
    assert final_polarity("Yes, we first try n = 1.\n\nIt works for every n.") is None


@pytest.mark.parametrize(("sentence", "expected"), [
    ("There are no such primes.", True),
    ("None.", True),
    ("No real solution exists.", True),
    ("Such a function does not exist.", True),
    ("There are two such primes.", False),
    ("There are no such primes if n is even.", False),
    ("It is not true that no solution exists.", False),
    ("The answer is 5.", False),
])
def test_says_none(sentence, expected):
    assert says_none(sentence) is expected


@pytest.mark.parametrize(("sentence", "expected"), [
    ("At most two of them can hold.", 2.0),
    ("The maximum is 12 apples.", 12.0),
    ("There are no such primes.", 0.0),
    ("Two or three of them can hold.", None),
    ("It works for $n = 3$ and 4 others.", 4.0),  # a number inside a formula is not the sentence's
    ("None of them is prime.", 0.0),
    ("It cannot hold.", None),
])
def test_stated_count(sentence, expected):
    assert stated_count(sentence) == expected
