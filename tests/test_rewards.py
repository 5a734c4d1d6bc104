"""The reward registry: each reward by hand, the weighted sum, "no score" kept apart from zero, and
what the trainer does with an unscored answer (out of the loss and out of its group's statistics)."""

import math

import numpy as np
import pytest
import torch

from grpo_data.generation.engines import Completion
from grpo_data.generation.rollouts import ScoredGroup
from grpo_data.verify.rewards import (
    REWARDS,
    Answer,
    build_reward,
    check_terms,
    correctness,
    format_reward,
    length_penalty,
)
from grpo_data.verify.verdict import Verdict
from grpo_train.config import AlgoConfig
from grpo_train.config_io import load_config
from grpo_train.groups import Overlong, make_group
from grpo_train.sequences import flatten_groups, group_reward_stats, sequence_advantages

RIGHT, WRONG, NONE, TIMEOUT = (Verdict(True, "ok"), Verdict(False, "wrong"), Verdict(False, "no_answer"),
                               Verdict(False, "timeout"))


def answer(text="so \\boxed{4}", verdict=RIGHT, n_tokens=10, truncated=False, max_tokens=100):
    return Answer(text, verdict, n_tokens, truncated, max_tokens)


GOLD_UNREADABLE, ERROR = Verdict(False, "unparseable_gold"), Verdict(False, "error")


@pytest.mark.parametrize(("verdict", "expected", "strict"), [
    (RIGHT, 1.0, 1.0), (WRONG, 0.0, 0.0), (NONE, 0.0, 0.0), (TIMEOUT, 0.0, None), (ERROR, 0.0, None),
    (GOLD_UNREADABLE, None, None)])
def test_correctness_scores_what_the_answer_earned_and_refuses_an_unreadable_gold(verdict, expected, strict):
    assert correctness(answer(verdict=verdict)) == expected  # a timeout is the answer's doing: 0
    assert correctness(answer(verdict=verdict), undecided="none") == strict
    with pytest.raises(ValueError, match="undecided must be zero or none"):
        correctness(answer(), undecided="skip")


@pytest.mark.parametrize(("text", "truncated", "expected"), [("so \\boxed{4}", False, 1.0), ("so 4", False, 0.0),
                                                             ("so \\boxed{4", False, 0.0), ("\\boxed{4} and", True, 0.0)])
def test_format_reward_needs_a_boxed_answer_and_a_stop(text, truncated, expected):
    assert format_reward(answer(text=text, truncated=truncated)) == expected


def test_length_penalty_hand_values():
    assert length_penalty(answer(n_tokens=25, max_tokens=100)) == -0.25
    assert length_penalty(answer(n_tokens=25, max_tokens=100), free_tokens=50) == 0.0
    assert length_penalty(answer(n_tokens=75, max_tokens=100), free_tokens=50) == -0.5
    assert length_penalty(answer(n_tokens=400, max_tokens=100)) == -1.0


def test_weighted_sum_and_no_score_propagates():
    reward = build_reward([{"name": "correctness", "weight": 0.9}, {"name": "format", "weight": 0.1},
                           {"name": "length_penalty", "weight": 0.2, "free_tokens": 0}])
    assert reward(answer(n_tokens=50)) == pytest.approx(0.9 + 0.1 - 0.1)
    assert reward(answer(text="4", verdict=WRONG, n_tokens=0)) == 0.0
    assert reward(answer(verdict=GOLD_UNREADABLE)) is None  # one unscorable term: the sum is unscored, not 0.1
    strict = build_reward([{"name": "correctness", "undecided": "none"}, {"name": "format", "weight": 0.1}])
    assert strict(answer(verdict=TIMEOUT)) is None and reward(answer(verdict=TIMEOUT)) == pytest.approx(0.1 - 0.02)
    assert build_reward("correctness")(answer()) == 1.0


@pytest.mark.parametrize(("terms", "message"), [
    ([{"name": "brevity"}], "unknown reward 'brevity'; choose one of: correctness"),
    ([{"weight": 1.0}], r"reward.terms\[0\] must be a mapping with a name"),
    ([{"name": "format", "weight": "high"}], "weight must be a finite number"),
    ([{"name": "format", "weight": True}], "weight must be a finite number"),
    ([{"name": "length_penalty", "free": 3}], "unknown option.*free; accepted: free_tokens"),
    ([], "reward.terms is empty"),
])
def test_bad_terms_name_the_term_and_the_fix(terms, message):
    with pytest.raises(ValueError, match=message):
        check_terms(terms)


def test_train_config_checks_reward_terms():
    cfg = load_config(None, ["reward.terms=[{name: correctness, weight: 0.9}, {name: format, weight: 0.1}]"])
    assert [t["name"] for t in cfg.reward.terms] == ["correctness", "format"]
    # YAML 1.1 reads 1e-2 (no dot) as text; the weight is still the number
    cfg = load_config(None, ["reward.terms=[{name: correctness}, {name: format, weight: 1e-2}, "
                             "{name: length_penalty, weight: 1e-1, free_tokens: 1e3}]"])
    assert cfg.reward.terms[1]["weight"] == 0.01 and cfg.reward.terms[2]["free_tokens"] == 1000
    assert isinstance(cfg.reward.terms[2]["free_tokens"], int)
    with pytest.raises(ValueError, match="unknown reward"):
        load_config(None, ["reward.terms=[{name: style}]"])
    assert set(REWARDS) >= {"correctness", "format", "length_penalty"}


def scored_group(verdicts, texts=None):
    texts = texts or ["\\boxed{1}"] * len(verdicts)
    comps = [Completion(t, (5, 6, 7), "stop") for t in texts]
    return ScoredGroup(comps, list(verdicts))


def test_unscored_answers_are_nan_rewards_kept_out_of_the_loss():
    group = make_group(0, [1, 2], scored_group([RIGHT, TIMEOUT, WRONG, WRONG]), Overlong("keep", 16),
                       build_reward([{"name": "correctness", "undecided": "none"}]))
    assert np.isnan(group.rewards[1]) and group.rewards[[0, 2, 3]].tolist() == [1.0, 0.0, 0.0]
    assert group.train_mask.tolist() == [True, False, True, True]
    assert group.correct.tolist() == [1.0, 0.0, 0.0, 0.0]  # the scheduler still counts it as not correct
    seqs = flatten_groups([group])
    assert [s.train for s in seqs] == [True, False, True, True]
    adv = sequence_advantages(seqs, AlgoConfig(advantage="grpo", eps=0.0))
    # statistics over the three scored answers [1, 0, 0]: mean 1/3, sample std sqrt(1/3)
    z = (1 - 1 / 3) / math.sqrt(1 / 3)
    torch.testing.assert_close(adv, torch.tensor([z, 0.0, -z / 2, -z / 2]))
    assert group_reward_stats(seqs) == [(1.0, 1.0, 3.0)]


def test_shaped_reward_flows_into_the_group():
    reward = build_reward([{"name": "correctness", "weight": 1.0}, {"name": "format", "weight": 0.5}])
    group = make_group(3, [1], scored_group([RIGHT, WRONG], ["\\boxed{1}", "1"]), Overlong("keep", 16), reward)
    assert group.rewards.tolist() == [1.5, 0.0] and group.train_mask is None


def test_distinct_wrong_answers_ignore_right_ones():
    from grpo_train.groups import Group

    def group(answers, correct):
        return Group(0, [1], [], np.zeros(len(answers)), np.array(correct, dtype=float), None, answers)

    assert group(["4", "5", "5", "4"], [1, 0, 0, 1]).distinct_wrong_answers == 0.5  # the same mistake twice
    assert group(["4", "4", "4", "7", "8", ""], [1, 1, 1, 0, 0, 0]).distinct_wrong_answers == 1.0
    assert group(["4", "4", "4", "7"], [1, 1, 1, 0]).distinct_wrong_answers is None  # one wrong: nothing to compare
