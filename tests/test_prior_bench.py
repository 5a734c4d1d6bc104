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


def test_samples_at_agreement_reads_the_first_bracketing_pair_and_never_extrapolates():
    from bench.prior_bench import samples_at_agreement

    points = [(1000, 0.85), (2000, 0.87), (1500, 0.86), (3000, 0.88)]  # unsorted on purpose
    assert samples_at_agreement(points, 0.865) == pytest.approx(1750)  # between 1500 and 2000
    assert samples_at_agreement(points, 0.85) == 1000
    assert samples_at_agreement(points, 0.89) is None and samples_at_agreement(points, 0.84) is None
    # not monotone: the first bracket in order of samples wins (1000 -> 1500 brackets 0.86)
    assert samples_at_agreement([(1000, 0.85), (1500, 0.87), (2000, 0.86)], 0.86) == pytest.approx(1250)


def test_matched_ratios_are_scratch_over_prior_at_one_agreement():
    from bench.prior_bench import matched_ratios

    def curve(*pts):
        return [{"confidence": c, "samples": s, "agreement_vs_reference": a} for c, s, a in pts]

    curves = {"scratch": curve((0.7, 1000, 0.85), (0.8, 2000, 0.87), (0.9, 4000, 0.89)),
              "prior": curve((0.7, 600, 0.86), (0.8, 800, 0.88), (0.9, 1200, 0.89))}
    got = matched_ratios(curves)
    # scratch reaches the prior's 0.88 at 3000 samples: 3000 / 800; the prior reaches scratch's 0.87 at 700
    assert got["scratch_samples_at_prior_agreement"] == pytest.approx(3000)
    assert got["primary_ratio"] == pytest.approx(3.75) and got["goal_met"] is True
    assert got["prior_samples_at_scratch_agreement"] == pytest.approx(700)
    assert got["secondary_ratio"] == pytest.approx(2000 / 700)
    curves["prior"][1]["agreement_vs_reference"] = 0.95  # outside scratch's curve: not judged
    assert matched_ratios(curves)["primary_ratio"] is None and matched_ratios(curves)["goal_met"] is None
