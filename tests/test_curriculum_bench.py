"""The curriculum benchmark's arithmetic (bench/curriculum_bench.py), by hand; no engine runs here."""

from pathlib import Path

import numpy as np
import polars as pl
import pytest

from bench import curriculum_bench as cb
from bench import curriculum_stats as cs


def test_profile_cost_and_charging_add_rollouts_and_tokens():
    profile = pl.DataFrame({"k": [2, 4, None], "mean_completion_tokens": [10.0, 25.5, None]})
    cost = cb.profile_cost(profile)
    assert cost == {"rollouts": 6, "tokens": 2 * 10 + 4 * 25.5}  # 122
    records = [{"rollouts_generated": 0, "tokens_generated": 0}, {"rollouts_generated": 640, "tokens_generated": 40_000}]
    charged = cs.charge(records, cost)
    assert [(r["total_rollouts"], r["total_tokens"]) for r in charged] == [(6, 122), (646, 40_122)]
    assert cs.charge(records, {"rollouts": 0, "tokens": 0})[1]["total_tokens"] == 40_000
    assert cb.training_budget(8_000, cost) == 7_994
    with pytest.raises(ValueError, match="use up the budget"):
        cb.training_budget(6, cost)
    assert cb.arm_overrides("S")[-1] == "rollout.max_rounds=8" and cb.arm_overrides("S")[2] == "rollout.max_rounds=4"


def test_regime_overrides_sit_between_the_shared_and_the_arms_and_reach_the_profile():
    t06 = cb.arm_overrides("S", "multi_t06")
    assert t06.index("rollout.temperature=1.0") < t06.index("rollout.temperature=0.6") < t06.index("rollout.max_rounds=8")
    assert cb.arm_overrides("B", "multi") == [*cb.TRAINING, "scheduler.name=uniform"]  # stored runs keep matching
    assert cb.profile_settings("multi_t06")["temperature"] == 0.6 and "temperature" not in cb.profile_settings("multi")
    assert cb.profile_settings("multi_t06")["max_k"] == cb.PROFILE["max_k"]


def test_reach_interpolates_in_tokens():
    evals = [{"heldout_accuracy": 0.5, "total_tokens": 100}, {"heldout_accuracy": 0.6, "total_tokens": 300},
             {"heldout_accuracy": 0.7, "total_tokens": 500}]
    assert cs.reach(evals, 0.65, "total_tokens") == pytest.approx(400.0)
    assert cs.reach(evals, 0.4, "total_tokens") == 100.0
    assert cs.reach(evals, 0.8, "total_tokens") is None


def test_paired_difference_by_hand():
    a = {"p1": 1.0, "p2": 0.5, "p3": 0.25}
    b = {"p1": 0.5, "p2": 0.5, "p3": 0.0}
    d = cs.paired_difference(a, b)  # differences 0.5, 0, 0.25: mean 0.25, sd 0.25, se 0.25 / sqrt 3
    assert d["mean"] == pytest.approx(0.25) and d["se"] == pytest.approx(0.25 / np.sqrt(3)) and d["problems"] == 3
    with pytest.raises(ValueError, match="different problems"):
        cs.paired_difference(a, {"p1": 0.0})


def _train(rollouts, groups, right, wrong, mixed, in_band, pass_rate, refresh=0, screen=0):
    return {"rollouts_generated": rollouts, "groups_generated": groups, "groups_all_right_share": right,
            "groups_all_wrong_share": wrong, "groups_mixed_share": mixed, "groups_in_band_share": in_band,
            "batch_pass_rate": pass_rate, "refresh_rollouts": refresh, "screen_rollouts": screen}


def test_waste_per_pass_cuts_the_trace_at_pool_x_g_rollouts():
    # a pool of 4 problems at G = 8: a pass is 32 rollouts
    trains = [_train(16, 2, 0.5, 0.0, 0.5, 0.5, 0.75), _train(32, 2, 0.0, 0.5, 0.5, 0.5, 0.25),
              _train(48 + 8, 2, 1.0, 0.0, 0.0, 0.0, 1.0, refresh=8)]
    passes = cs.waste_per_pass(trains, pool=4, group_size=8)
    assert [p["pass"] for p in passes] == [1, 2] and [p["groups"] for p in passes] == [4, 2]
    first = passes[0]
    assert (first["all_right"], first["all_wrong"], first["mixed"]) == (0.25, 0.25, 0.5)
    assert first["all_right"] + first["all_wrong"] + first["mixed"] == 1.0
    assert first["batch_pass_rate"] == pytest.approx(0.5)  # 16 at 0.75 and 16 at 0.25
    assert passes[1]["refresh_rollouts"] == 8 and passes[1]["batch_pass_rate"] == 1.0  # refresh not in the rate


def test_pool_table_is_one_draw_and_drops_the_level_only_without_level():
    train = pl.DataFrame({"id": [f"p{i}" for i in range(50)], "level": list(range(50))})
    a, b = cb.pool_table(train, 20, level=True), cb.pool_table(train, 20, level=False)
    assert a["id"].to_list() == b["id"].to_list() and a.height == 20 and "level" not in b.columns
    with pytest.raises(ValueError, match="a pool of 60"):
        cb.pool_table(train, 60, level=True)


def _arm(final, per_problem, tokens_curve, ratio=0.5):
    evals = [{"heldout_accuracy": acc, "total_tokens": t, "total_rollouts": t // 10} for acc, t in tokens_curve]
    evals[-1]["heldout_accuracy"] = final
    return {"evals": evals, "per_problem_final": per_problem, "informative_rollout_ratio_charged": ratio}


def test_compare_reads_the_goals_from_paired_differences_and_tokens():
    ids = [f"p{i}" for i in range(4)]
    seeds = []
    for shift in (0.0, 0.01, 0.02):
        base = {i: 0.5 for i in ids}
        ahead = {i: 0.75 + shift * (j % 2) for j, i in enumerate(ids)}
        seeds.append({"arms": {
            "A": _arm(0.76, ahead, [(0.5, 0), (0.6, 100), (0.76, 1000)], ratio=0.85),
            "B": _arm(0.5, base, [(0.45, 0), (0.5, 1000)]),
            "P": _arm(0.5, base, [(0.45, 0), (0.5, 1000)]),
        }})
    out = cs.compare(seeds)
    # A reaches B's final 0.5 at tokens 0 + (0.5 - 0.5) ... = 0: its first eval is already 0.5
    assert out["fewer_tokens_than_B"]["reached_in_seeds"] == 0  # a ratio over 0 tokens is undefined, not counted
    assert out["paired_minus"]["B"]["mean"] == pytest.approx(np.mean([0.25, 0.255, 0.26]))
    assert out["goals"]["A informative ratio charged >= 0.8"]
    # the goal names P, S and R: with S and R not run it is not judged (None), never met on the subset
    assert out["goals"]["A ahead of P, S, R by >= 2 paired SE"] is None
    every_peer = [{"arms": {**s["arms"], "S": s["arms"]["P"], "R": s["arms"]["P"]}} for s in seeds]
    assert cs.compare(every_peer)["goals"]["A ahead of P, S, R by >= 2 paired SE"] is True
    assert cs.compare(every_peer, default="S")["goals"]["S ahead of P, R by >= 2 paired SE"] is False  # S - S not asked


def test_goals_are_judged_only_in_the_cells_they_were_registered_for():
    assert cs.goals_judged("multi", "nolevel", "test") and cs.goals_judged("multi_t06", "nolevel", "test")
    assert not cs.goals_judged("one_pass", "nolevel", "test") and not cs.goals_judged("multi", "level", "test")
    assert not cs.goals_judged("multi", "nolevel", "val")


def test_the_report_words_a_goal_that_was_not_judged():
    from bench.report import _verdict

    assert [_verdict(True), _verdict(False), _verdict(None)] == ["met", "MISSED", "not judged"]


def test_the_preregistration_names_every_arm_the_benchmark_runs():
    """Read from the hand-written registrations (bench/PREREGISTRATION.md; bench/README.md is a copy
    `grpo bench all` regenerates), and the frontier-only arms run only where registered."""
    prereg = Path(cb.__file__).resolve().parent / "PREREGISTRATION.md"
    assert cb.preregistered_arms(prereg) == set(cb.ARMS)
    assert "Pre-registration: curriculum benchmark (2026-12-03" in prereg.read_text()
    assert "TS" not in cb.arms_for("multi") and {"TS", "SG"} <= set(cb.arms_for("frontier"))


def test_the_frontier_regime_runs_nothing_before_its_budgets_are_registered_and_counts_charged_tokens():
    with pytest.raises(ValueError, match="set when its comparison is registered"):
        cb.registered("frontier")
    cb.registered("multi")
    assert cb.budget_args("multi", {"rollouts": 800, "tokens": 40_000}) == ["run.max_rollouts=7200"]
    tokens = {**cb.REGIMES["frontier"], "tokens": 2_000_000, "eval_tokens": 500_000}
    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(cb.REGIMES, "frontier", tokens)
        assert cb.budget_args("frontier", {"rollouts": 6720, "tokens": 300_000}) == [
            "run.max_rollouts=0", "run.token_budget=2000000", "run.charged_tokens=300000"]
        base = cb.base_args(Path("w"), Path("test.parquet"), Path("pool.parquet"), 6e-5, "frontier")
        assert "run.eval_every_tokens=500000" in base and f"run.eval_k={cb.EVAL_K_ENDS}" in base
    from bench.common import finished

    records = [{"kind": "train", "rollouts_generated": 10, "tokens_generated": 1_700_000}, {"kind": "eval"}]
    assert finished(records, {"tokens": 2_000_000, "charged": 300_000})
    assert not finished(records, {"tokens": 2_000_000, "charged": 299_999}) and finished(records, 10)
    assert cb.profile_settings("multi", "SG")["k"] == 8 and not cb.profile_settings("multi", "SG")["adaptive"]


def test_reach_and_stay_waits_for_the_last_dip():
    evals = [{"heldout_accuracy": a, "total_tokens": t} for a, t in ((0.5, 0), (0.7, 100), (0.55, 200), (0.66, 300),
                                                                      (0.7, 400))]
    assert cs.reach(evals, 0.65, "total_tokens") == pytest.approx(75.0)  # the first, noisy crossing
    assert cs.reach_and_stay(evals, 0.65, "total_tokens") == 300.0
    assert cs.reach_and_stay(evals[:3], 0.65, "total_tokens") is None


def test_the_lr_is_read_from_the_validation_choice_and_never_guessed(tmp_path):
    with pytest.raises(FileNotFoundError, match="curriculum_lr"):
        cb.chosen_lr(tmp_path)
    sel = {"candidates": list(cb.LR_CANDIDATES), "training": list(cb.TRAINING), "chosen": 3e-5}
    (tmp_path / cb.LR_FILE).write_text(__import__("json").dumps(sel))
    assert cb.chosen_lr(tmp_path) == 3e-5
    (tmp_path / cb.LR_FILE).write_text(__import__("json").dumps({**sel, "training": ["rollout.group_size=16"]}))
    with pytest.raises(ValueError, match="other candidates or training"):
        cb.chosen_lr(tmp_path)


def test_base_args_share_evaluation_and_lr_and_arms_come_after():
    base = cb.base_args(Path("w"), Path("test.parquet"), Path("pool.parquet"), 3e-5)
    assert "optim.lr=3e-05" in base and f"run.eval_k_ends={cb.EVAL_K_ENDS}" in base and "data.heldout=test.parquet" in base
    assert not any(a.startswith("scheduler.") for a in base)  # the sampler is the arm's alone


def _stored_arm(final, per_problem, tokens, profile=None):
    profile = profile or {"rollouts": 0, "tokens": 0}
    evals = [{"step": 10, "eval_k": 4, "heldout_accuracy": final - 0.02, "heldout_accuracy_se": 0.01,
              "total_rollouts": 4000 + profile["rollouts"], "total_tokens": tokens / 2 + profile["tokens"]},
             {"step": 20, "eval_k": 32, "heldout_accuracy": final, "heldout_accuracy_se": 0.005,
              "total_rollouts": 8000, "total_tokens": tokens + profile["tokens"]}]
    return {"evals": evals, "profile": profile, "informative_rollout_ratio_charged": 0.5, "steps": 20,
            "waste_per_pass": [{"pass": 1, "mixed": 0.4}, {"pass": 2, "mixed": 0.3}], "per_problem_final": per_problem}


def test_assemble_pairs_the_stored_seeds_and_says_when_partial(tmp_path):
    import json

    folder = tmp_path / cb.RUNS / "multi-nolevel"
    for seed, shift in ((0, 0.0), (1, 0.1)):
        for arm, acc in (("A", {"p1": 1.0, "p2": 0.5}), ("B", {"p1": 0.5, "p2": 0.5})):
            acc = {k: v - shift for k, v in acc.items()}
            (folder / f"seed{seed}").mkdir(parents=True, exist_ok=True)
            (folder / f"seed{seed}" / f"{arm}.json").write_text(json.dumps(
                _stored_arm(float(np.mean(list(acc.values()))), acc, 10_000)))
    (folder / "seed2").mkdir()  # a stopped seed with B only: not in the comparison
    (folder / "seed2" / "B.json").write_text(json.dumps(_stored_arm(0.5, {"p1": 0.5, "p2": 0.5}, 10_000)))
    out = cb.assemble(tmp_path, "multi", "nolevel", plot_to=tmp_path / "c.png")
    assert out["seeds"] == [0, 1, 2] and out["complete_seeds"] == [0, 1] and out["arms"] == ["A", "B"]
    assert "partial" in out["variant"] and (tmp_path / "c.png").exists()
    d = out["compare"]["A"]["paired_minus"]["B"]  # per seed A - B = 0.25 on both seeds
    assert d["mean"] == pytest.approx(0.25) and [p["mean"] for p in d["per_seed"]] == [0.25, 0.25]
    (folder / "seed1" / "A.json").unlink()  # one complete seed left: nothing to pair over seeds
    assert "compare" not in cb.assemble(tmp_path, "multi", "nolevel")
    with pytest.raises(FileNotFoundError, match="grpo bench curriculum"):
        cb.assemble(tmp_path, "one_pass", "level")


def test_the_default_is_the_cheapest_arm_tied_with_the_best_on_validation():
    # per seed, per-problem finals of 2 problems; B best, A0 behind by a steady 0.25 (a clear loss),
    # P behind by 0.05 on one seed and ahead by 0.05 on the other (a tie); P spends fewer tokens than B
    def seed(b, a0, p):
        return {"arms": {name: {"evals": [{"heldout_accuracy": float(np.mean(list(v.values()))), "total_tokens": t}],
                                "per_problem_final": v}
                         for name, v, t in (("B", b, 500), ("A0", a0, 400), ("P", p, 450))}}

    seeds = [seed({"x": 1.0, "y": 0.5}, {"x": 0.75, "y": 0.25}, {"x": 0.95, "y": 0.5}),
             seed({"x": 0.5, "y": 0.5}, {"x": 0.25, "y": 0.25}, {"x": 0.55, "y": 0.5}),
             seed({"x": 0.5, "y": 1.0}, {"x": 0.25, "y": 0.75}, {"x": 0.5, "y": 0.9})]
    out = cb.choose_default(seeds)
    assert out["best"] == "B" and out["best_minus"]["A0"]["in_se"] == float("inf")  # 0.25 on every seed
    assert out["tied_with_best"] == ["B", "P"] and out["chosen"] == "P" and out["profiles"] is False
    assert out["best_minus"]["P"]["mean"] == pytest.approx(np.mean([0.025, -0.025, 0.05]))


def test_profile_pays_compares_a_with_a0_and_amortizes_the_profile():
    def arm(evals, profile, per_problem):
        return {"evals": [{"heldout_accuracy": acc, "total_tokens": t} for t, acc in evals],
                "profile": {"rollouts": profile[0], "tokens": profile[1]}, "per_problem_final": per_problem}

    # A pays 100 tokens of profile; reaches A0's final 0.7 at 300 charged tokens (200 with the profile shared
    # by 2 of... N = 10: 300 - 90 = 210); A0 ends at 0.7 after 600 tokens
    seed = {"arms": {"A": arm([(100, 0.5), (300, 0.7), (700, 0.72)], (50, 100), {"p": 1.0, "q": 0.5}),
                     "A0": arm([(0, 0.5), (600, 0.7)], (0, 0), {"p": 0.5, "q": 0.5})}}
    out = cs.profile_pays([seed, seed], pool=2, amortize=(1, 10))
    assert out["amortized_1"]["mean"] == pytest.approx(600 / 300)
    assert out["amortized_10"]["mean"] == pytest.approx(600 / 210) and out["amortized_10"]["reached_in_seeds"] == 2
    assert out["A_minus_A0"]["mean"] == pytest.approx(0.25) and out["profile_rollouts_per_problem"] == 25


def test_wall_per_phase_sums_each_phase():
    records = [{"kind": "train", "gen_tokens_step": 1000, "gen_tokens_per_s": 500.0, "verify_seconds": 0.5,
                "train_seconds": 1.0, "weight_sync_s": 0.1, "step_seconds": 4.0},
               {"kind": "train", "gen_tokens_step": 300, "gen_tokens_per_s": 100.0, "verify_seconds": 0.25,
                "train_seconds": 1.5, "weight_sync_s": 0.1, "step_seconds": 5.0},
               {"kind": "eval", "eval_seconds": 7.0}]
    w = cs.wall_per_phase(records)
    assert w["generation"] == pytest.approx(5.0) and w["verification"] == 0.75 and w["learner"] == 2.5
    assert w["training_steps"] == 9.0 and w["evaluation"] == 7.0 and w["weight_sync"] == pytest.approx(0.2)


def test_coverage_reads_the_last_step_of_a_run():
    trains = [{"distinct_problems_trained": 8, "times_trained_mean": 1.0},
              {"distinct_problems_trained": 12, "times_trained_mean": 1.25}]  # 15 groups trained over 12 problems
    assert cs.coverage(trains) == {"distinct_problems_trained": 12, "times_trained_mean": 1.25}


def test_a_cell_refuses_runs_of_another_code_unless_the_change_is_named_with_its_reason(tmp_path):
    """#59: stored runs made by different library code are not pooled silently; each other hash must
    be accepted with a reason, which the result keeps."""
    import json

    folder = tmp_path / cb.RUNS / "multi-nolevel"
    codes = {(0, "A"): "c1", (0, "B"): "c1", (1, "A"): "c1", (1, "B"): "c2"}
    for (seed, arm), code in codes.items():
        (folder / f"seed{seed}").mkdir(parents=True, exist_ok=True)
        (folder / f"seed{seed}" / f"{arm}.json").write_text(json.dumps(
            {**_stored_arm(0.5, {"p1": 0.5, "p2": 0.5}, 10_000), "code": code}))
    with pytest.raises(ValueError, match=r"2 code states \(the cell's: c1; other: c2: seed1/B\).*--accept-code"):
        cb.assemble(tmp_path, "multi", "nolevel")
    with pytest.raises(ValueError, match="names no reason"):
        cb.assemble(tmp_path, "multi", "nolevel", accept_code={"c2": " "})
    out = cb.assemble(tmp_path, "multi", "nolevel", accept_code={"c2": "docstrings only", "c9": "unused"})
    assert out["code"] == {"code": "c1", "states": {"c1": ["seed0/A", "seed0/B", "seed1/A"], "c2": ["seed1/B"]},
                           "accepted": {"c2": "docstrings only"}, "pairs_across_codes": {"A-B": ["seed1"]}}


def test_the_cells_code_is_todays_when_a_run_holds_it_and_warm_starts_never_mix():
    from bench.run_trace import one_code

    runs = {"seed0/A": {"code": "old"}, "seed0/B": {"code": "old"}, "seed1/A": {"code": "new"}}
    # one run rerun on today's code is the cell's; the two older ones need the reason
    with pytest.raises(ValueError, match=r"the cell's: new; other: old: seed0/A, seed0/B"):
        one_code(runs, current="new")
    got = one_code(runs, {"old": "the plot only"}, current="new")
    assert got["code"] == "new" and got["pairs_across_codes"] == {}  # seed0's pair shares a code, seed1 has one run
    # B and P on one code, A and S on another: every A-B and S-B difference crosses code states
    split = {f"seed{s}/{a}": {"code": "y" if a in "BP" else "x"} for s in (0, 1) for a in ("A", "B", "P", "S")}
    crossing = one_code(split, {"y": "why"}, current="x")["pairs_across_codes"]
    assert crossing == {p: ["seed0", "seed1"] for p in ("A-B", "A-P", "B-S", "P-S")}
    with pytest.raises(ValueError, match="2 warm starts"):
        one_code({"seed0/A": {"code": "x", "warm_start": "w1"}, "seed0/B": {"code": "x", "warm_start": "w2"}})
    with pytest.raises(ValueError, match="1 runs record none"):  # a stored run from before warm starts were kept
        one_code({"seed0/A": {"code": "x", "warm_start": "w1"}, "seed0/B": {"code": "x"}})


def test_accepted_codes_parse_from_flags_and_refuse_a_missing_reason_marker():
    from bench.run_trace import parse_accepted

    assert parse_accepted(["abc=only the plot changed", " d = x=y "]) == {"abc": "only the plot changed", "d": "x=y"}
    assert parse_accepted(None) == {}
    with pytest.raises(ValueError, match="HASH=REASON"):
        parse_accepted(["abc"])


def test_a_stored_run_keeps_its_steps_draws_and_every_evaluation(tmp_path):
    """#59 item 3: the per-step trace (in-band count derived), the draws file, and every evaluation's
    per-problem rates at the rollouts and tokens it was made at (a step evaluated twice: the later)."""
    import json

    import polars as pl

    from bench import run_trace

    records = [
        {"kind": "eval", "step": 0, "eval_k": 32, "rollouts_generated": 0, "tokens_generated": 0},
        {"kind": "train", "step": 1, "groups_generated": 20, "groups_in_band_share": 0.35, "batch_pass_rate": 0.6,
         "diag_band_dry": 0.0, "tokens_generated": 900, "rollouts_generated": 160, "loss": 0.1},
        {"kind": "eval", "step": 1, "eval_k": 4, "rollouts_generated": 160, "tokens_generated": 900},
        {"kind": "eval", "step": 1, "eval_k": 32, "rollouts_generated": 160, "tokens_generated": 900},
    ]
    (tmp_path / "evals").mkdir()
    for step, n in ((0, [8, 32]), (1, [16, 0])):
        pl.DataFrame({"id": ["a", "b"], "n_correct": n, "k": [32, 32]}).write_parquet(
            tmp_path / "evals" / f"step-{step:06d}.parquet")
    trace = run_trace.step_trace(records)
    assert trace == [{"step": 1, "groups_generated": 20, "groups_in_band_share": 0.35, "batch_pass_rate": 0.6,
                      "diag_band_dry": 0.0, "tokens_generated": 900, "rollouts_generated": 160, "groups_in_band": 7}]
    evals = run_trace.per_problem_evals(tmp_path, records)
    assert evals == [{"step": 0, "k": 32, "rollouts": 0, "tokens": 0, "per_problem": {"a": 0.25, "b": 1.0}},
                     {"step": 1, "k": 32, "rollouts": 160, "tokens": 900, "per_problem": {"a": 0.5, "b": 0.0}}]
    assert run_trace.draws(tmp_path) == []  # a run made before draws were written
    (tmp_path / "draws.jsonl").write_text(json.dumps({"step": 1, "id": ["a"], "predicted": [0.5]}) + "\n")
    assert run_trace.draws(tmp_path) == [{"step": 1, "id": ["a"], "predicted": [0.5]}]
    stamp = run_trace.stamp("2026-12-08T00:00:00Z")
    assert stamp["started"] == "2026-12-08T00:00:00Z" and stamp["finished"] >= stamp["started"]
    assert len(stamp["git"].removesuffix("+dirty")) == 40 and "cpus" in stamp["machine"]


def test_noise_reads_evaluation_problems_seeds_and_the_bootstrap_and_names_the_larger():
    """#59 item 4, by hand: two seeds of two problems, k = 5. Arm a (0.6, 0.8) and (0.8, 1.0), arm b
    0.5 everywhere: differences (0.1, 0.3) and (0.3, 0.5). Seed means 0.2 and 0.4: SE over seeds 0.1.
    Problem means over seeds 0.2 and 0.4: SE over problems 0.1. Evaluation (binomial, k - 1 = 4):
    sqrt(sum of pa(1 - pa) + 0.25 over the 4 cells / 4) / 4."""
    from bench.curriculum_stats import noise, planned_se, smallest_resolvable

    a = [{"x": 0.6, "y": 0.8}, {"x": 0.8, "y": 1.0}]
    b = [{"x": 0.5, "y": 0.5}, {"x": 0.5, "y": 0.5}]
    got = noise(a, b, k=5, draws=4000)
    assert got["mean"] == pytest.approx(0.3) and got["se_seeds"] == pytest.approx(0.1)
    assert got["se_problems"] == pytest.approx(0.1)
    cells = (0.24 + 0.25) + (0.16 + 0.25) + (0.16 + 0.25) + (0.0 + 0.25)
    assert got["se_evaluation"] == pytest.approx(np.sqrt(cells / 4) / 4)
    # k = 5 answers per problem and 2 problems: evaluation sampling (0.160) outweighs the rest
    assert got["larger"] == "evaluation" and got["se_larger"] == got["se_evaluation"] and got["df"] is None
    assert 0.05 < got["se_bootstrap"] < 0.15 and got["training_noise_measured"]
    one = noise(a[:1], b[:1])  # one seed, no k: training and evaluation noise unmeasured, never the larger
    assert not one["training_noise_measured"] and np.isnan(one["se_seeds"]) and np.isnan(one["se_evaluation"])
    assert one["larger"] in ("problems", "bootstrap") and one["df"] is None
    with pytest.raises(ValueError, match="same problems"):
        noise([{"x": 0.1}], [{"y": 0.1}])
    assert smallest_resolvable(0.01) == pytest.approx(0.028, abs=1e-4)
    assert smallest_resolvable(0.01, df=2) == pytest.approx(0.0536, abs=2e-4)  # t: 4.30 + 1.06
    # p = 0.5 on 100 problems at k = 32, 4 seeds: sqrt(2 x 0.25 / 32 / 100 / 4) = 0.00625; a training
    # sd of 0.02 per seed gives 0.01 over 4 seeds, the larger, read with t at 3 degrees of freedom
    plan = planned_se(np.full(100, 0.5), k=32, seeds=4, training_sd=0.02)
    assert plan["se_evaluation"] == pytest.approx(0.00625) and plan["se_training"] == pytest.approx(0.01)
    assert plan["df"] == 3 and plan["smallest_resolvable"] == pytest.approx(smallest_resolvable(0.01, 3))


def test_noise_on_shared_problem_effects_matches_a_simulation():
    """Problems shared by every seed carry one effect each: the problems' SE must see it once, not
    divided by the seeds. 400 problems, effect sd 0.1, 3 seeds, evaluation sd 0.05: the SE over
    problems is about sqrt(0.1^2 + 0.05^2 / 3) / sqrt(400) = 0.0052."""
    from bench.curriculum_stats import noise

    rng = np.random.default_rng(1)
    effect = rng.normal(0, 0.1, 400)
    a = [dict(enumerate(0.5 + effect + rng.normal(0, 0.05, 400))) for _ in range(3)]
    b = [dict(enumerate(np.full(400, 0.5))) for _ in range(3)]
    got = noise(a, b, draws=500)
    assert got["se_problems"] == pytest.approx(np.sqrt(0.1 ** 2 + 0.05 ** 2 / 3) / 20, rel=0.1)
