"""The profile's verifier counts: no_answer apart from wrong in its metadata, and the format warning's
examples of final sentences the verifier could not read."""

import logging
from types import SimpleNamespace

import polars as pl

from grpo_data.profiler import UNREAD_EXAMPLES, _Tally, keep_unread, verdict_totals, warn_format
from grpo_data.verify import Verdict


def test_verdict_totals_count_no_answer_apart_from_wrong():
    table = pl.DataFrame({"n_ok": [3, 0], "n_wrong": [1, 2], "n_no_answer": [4, 6], "n_timeout": [0, 1]})
    assert verdict_totals(table) == {"ok": 3, "wrong": 3, "no_answer": 10, "timeout": 1}


def test_tally_keeps_a_few_unread_sentences():
    tally = _Tally()
    comps = [SimpleNamespace(text="t", token_ids=[1, 2], truncated=False)] * 5
    verdicts = [Verdict(False, "no_answer", f"sentence {i}") for i in range(4)] + [Verdict(False, "wrong", "3")]
    tally.add(comps, verdicts)
    assert tally.unread == ["sentence 0", "sentence 1", "sentence 2"]
    assert tally.reasons == {"no_answer": 4, "wrong": 1}


def test_a_run_keeps_only_the_few_unread_sentences_it_shows():
    unread: list[str] = []
    for chunk in range(1000):  # a long run: what is kept does not grow with the problems
        keep_unread(unread, ["Thus it can stay inside.", f"problem {chunk}", f"problem {chunk} again"])
    assert unread == ["Thus it can stay inside.", "problem 0", "problem 0 again"][:UNREAD_EXAMPLES]


def test_format_warning_shows_unread_final_sentences(caplog):
    with caplog.at_level(logging.WARNING, logger="grpo_data.profiler"):
        warn_format(0.1, "boxed", "this run's", ["Thus it can stay inside.", "Thus it can stay inside.", "It has no cycle."])
    assert "only 10%" in caplog.text
    assert caplog.text.count("unread final sentence: Thus it can stay inside.") == 1
    assert "unread final sentence: It has no cycle." in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="grpo_data.profiler"):
        warn_format(0.9, "boxed", "this run's", ["x"])
    assert caplog.text == ""
