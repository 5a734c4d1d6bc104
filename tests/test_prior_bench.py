"""The prior benchmark's arithmetic (bench/prior_bench.py, Amendment 6) and arm Aw's wiring in the
curriculum benchmark, by hand; no engine runs here."""

import numpy as np
import polars as pl
import pytest

from bench import curriculum_bench as cb
from bench import prior_bench as pb
from grpo_data.curriculum.priors import Prior, PriorSource
from grpo_data.curriculum.stats import StoppingRule


def prior_of(rates, k=4.0):
    source = PriorSource("profile:x", ("n_correct", "k"), "counts", 1.0, None, "m", "test")
    rates = np.asarray(rates, dtype=np.float64)
    return Prior(source, rates, np.full(rates.size, k), k)


def test_band_decision_reads_a_prior_profile_with_the_priors_pseudo_counts():
    rule = StoppingRule()
    # 40 problems the pool's prior says are mostly solved or failed, and one 1 of 2 in the middle
    c = np.array([2] * 20 + [0] * 20 + [1], dtype=np.float64)
    table = pl.DataFrame({"n_correct": c, "k": np.full(c.size, 2.0)})
    alone = pb.band_decision(table, rule)
    assert not alone[:40].any()
    # another model's view: the last problem and the first one at 0.5, counted as 4 pseudo-samples
    rates = np.array([0.5] + [1.0] * 19 + [0.0] * 20 + [0.5])
    with_prior = pb.band_decision(table, rule, prior_of(rates))
    assert with_prior[0] and not alone[0]  # 2 of 2 plus 2 of 4 pseudo-samples: 4 of 6, in the band
    assert with_prior[40] and not with_prior[1:40].any()


def test_summarize_states_the_goal_as_registered():
    truth = np.array([True, False, False, True])
    decisions = {"scratch_screen2": truth.copy(), "prior_screen2": np.array([True, False, True, True]),
                 "scratch_screen1": truth.copy(), "prior_screen1": truth.copy()}
    out = pb.summarize(truth, decisions, {"scratch_screen2": 12, "prior_screen2": 6, "scratch_screen1": 8,
                                          "prior_screen1": 5})
    assert out["prior_screen2"]["samples_ratio_scratch_over_prior"] == 2.0
    assert out["prior_screen2"]["agreement_minus_scratch"] == pytest.approx(-0.25)
    assert out["goal_met"] is False  # 2x fewer, but a quarter less agreement
    assert out["prior_screen1"]["samples_ratio_scratch_over_prior"] == pytest.approx(1.6)
    assert out["scratch_screen2"]["samples_per_problem"] == 3.0
    decisions["prior_screen2"] = truth.copy()
    assert pb.summarize(truth, decisions, {"scratch_screen2": 12, "prior_screen2": 6, "scratch_screen1": 8,
                                           "prior_screen1": 5})["goal_met"] is True


def test_arm_aw_is_a_with_a_prior_profile_and_no_profile_of_its_own():
    assert cb.ARMS["Aw"]["overrides"] == cb.ARMS["A"]["overrides"]
    assert cb.ARMS["Aw"]["profile"] is False and cb.ARMS["Aw"]["prior_profile"] is True
    assert not any(a.get("prior_profile") for name, a in cb.ARMS.items() if name != "Aw")
