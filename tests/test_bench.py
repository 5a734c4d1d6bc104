"""Benchmark arithmetic: where a learning curve crosses a target, its value at a budget, and the
e2e benchmark's full accounting (profile charged, offline filter, frontier movement)."""

import numpy as np
import polars as pl
import pytest

from bench.e2e_bench import ARMS, arm_args
from bench.e2e_stats import (
    aggregate,
    charged,
    frontier_noise_floor,
    frontier_share,
    offline_filter,
    paired_se,
    rollouts_to_reach,
    seed_summary,
)

CURVE = [{"rollouts_generated": 0, "heldout_accuracy": 0.40}, {"rollouts_generated": 1000, "heldout_accuracy": 0.50},
         {"rollouts_generated": 3000, "heldout_accuracy": 0.46}, {"rollouts_generated": 4000, "heldout_accuracy": 0.60}]


def test_rollouts_to_reach_interpolates_the_first_crossing():
    assert rollouts_to_reach(CURVE, 0.45, "rollouts_generated") == pytest.approx(500)
    assert rollouts_to_reach(CURVE, 0.55, "rollouts_generated") == pytest.approx(3000 + 1000 * (0.09 / 0.14))
    assert rollouts_to_reach(CURVE, 0.40, "rollouts_generated") == 0
    assert rollouts_to_reach(CURVE, 0.61, "rollouts_generated") is None


def test_the_profile_is_charged_to_every_point_of_the_curve():
    curve = charged(CURVE, 2500)
    assert [r["total_rollouts"] for r in curve] == [2500, 3500, 5500, 6500]
    assert rollouts_to_reach(curve, 0.45) == pytest.approx(3000)  # 500 training + 2500 profile


def test_each_arm_pays_for_the_profile_it_uses_out_of_the_same_budget():
    setting = ["scheduler.lo=0.2", "scheduler.hi=0.8"]

    def args_of(arm, first=False):
        args, charge = arm_args(ARMS[arm], 1, first, "train.parquet", "filtered.parquet", "profile.parquet", 9000, 4000,
                                setting)
        return dict(a.split("=", 1) for a in args), charge

    a, charge = args_of("A", first=True)
    assert charge == 4000 and a["run.max_rollouts"] == "5000" and a["data.profile"] == "profile.parquet"
    assert a["data.train"] == "train.parquet" and a["scheduler.name"] == "band" and a["run.eval_first"] == "true"
    a0, charge = args_of("A0")
    assert charge == 0 and a0["run.max_rollouts"] == "9000" and a0["data.profile"] == "null"
    assert a0["scheduler.name"] == "band" and a0["run.eval_first"] == "false"
    b, charge = args_of("B")
    assert charge == 0 and b["run.max_rollouts"] == "9000" and b["scheduler.name"] == "uniform"
    c, charge = args_of("C")
    assert charge == 4000 and c["run.max_rollouts"] == "5000" and c["data.train"] == "filtered.parquet"
    assert c["data.profile"] == "null" and c["scheduler.name"] == "uniform"
    # only the band arms take the band chosen on validation
    assert [x.get("scheduler.hi") for x in (a, a0, b, c)] == ["0.8", "0.8", None, None]


def test_the_headline_runs_only_with_a_matching_validation_selection(tmp_path):
    import json

    from bench.e2e_bench import BUDGET, CANDIDATES, TRAINING, chosen_on_validation

    path = tmp_path / "e2e_select.json"
    with pytest.raises(FileNotFoundError, match="run `grpo bench e2e_select` first"):
        chosen_on_validation(path, BUDGET)
    sel = {"split": "val", "budget_total_rollouts": BUDGET, "candidates": CANDIDATES, "chosen": "band_0.2_0.8",
           "training": list(TRAINING)}
    path.write_text(json.dumps(sel))
    assert chosen_on_validation(path, BUDGET) == ("band_0.2_0.8", ["scheduler.lo=0.2", "scheduler.hi=0.8"])
    with pytest.raises(ValueError, match="another budget"):
        chosen_on_validation(path, 5_000)
    path.write_text(json.dumps({**sel, "split": "test"}))
    with pytest.raises(ValueError, match="split"):
        chosen_on_validation(path, BUDGET)
    # the headline reads the selection where e2e_select wrote it (--out-dir), and stops before it builds anything
    from bench.e2e_bench import run

    with pytest.raises(FileNotFoundError, match="run `grpo bench e2e_select` first"):
        run(results=tmp_path / "elsewhere", workdir=str(tmp_path / "never"))
    assert not (tmp_path / "never").exists()
    # a selection made at other training settings (the stored one: lr 1e-4) does not carry over
    path.write_text(json.dumps({**sel, "training": [*TRAINING[:-1], "optim.lr=0.0001"]}))
    with pytest.raises(ValueError, match="training settings"):
        chosen_on_validation(path, BUDGET)


def test_the_headline_refuses_a_band_chosen_on_another_warm_start(tmp_path):
    import json

    from bench.e2e_bench import selected_on_same_inputs

    inputs = {"policy": "p1", "train": "t1", "test": "x", "profile": "f1", "train_filtered": "y"}
    path = tmp_path / "e2e_select.json"
    path.write_text(json.dumps({"inputs": {"policy": "p1", "train": "t1", "val": "v", "profile": "f1"}}))
    selected_on_same_inputs(path, inputs)  # the validation split is not the headline's input: no clash
    path.write_text(json.dumps({"inputs": {"policy": "p0", "train": "t1", "val": "v", "profile": "f0"}}))
    with pytest.raises(ValueError, match=r"other inputs \(policy, profile.*rerun `grpo bench e2e_select`"):
        selected_on_same_inputs(path, inputs)
    # the policy and pool alone, checked before the profile is made
    with pytest.raises(ValueError, match=r"other inputs \(policy:"):
        selected_on_same_inputs(path, {"policy": "p1", "train": "t1"} | {"policy": "p2"})
    selected_on_same_inputs(path, {"policy": "p0", "train": "t1"})
    path.write_text(json.dumps({"chosen": "band_0.2_0.8"}))  # made before selections recorded their inputs
    with pytest.raises(ValueError, match="policy, train, profile"):
        selected_on_same_inputs(path, inputs)


def test_the_offline_profile_is_stored_once_and_reused_while_its_inputs_match(tmp_path, monkeypatch, capsys):
    """vLLM samples differently on another CPU: e2e keeps one profile for a warm start, in results."""
    import json
    from pathlib import Path

    from bench import e2e_bench
    from pipelines import pipeline

    made = []

    def fake_profile_stage(model, train, pcfg, out, **_):  # profile_stage's reuse rule, with a key
        stamp = out.with_suffix(".inputs.json")
        if out.exists() and stamp.exists() and json.loads(stamp.read_text()) == key:
            return out
        made.append(len(made))
        out.write_text(f"profile {len(made)}"), out.with_suffix(".json").write_text("{}"), stamp.write_text(json.dumps(key))
        return out

    monkeypatch.setattr(pipeline, "profile_stage", fake_profile_stage)
    monkeypatch.setattr(pipeline, "profile_key", lambda *a, **k: key)
    results, out = tmp_path / "results", tmp_path / "runs" / "world-profile.parquet"
    key = {"weights": "w1"}
    e2e_bench.shared_profile(Path("policy"), Path("train"), results, out)
    stored = results / "e2e-profile" / "world-profile.parquet"
    assert made == [0] and stored.read_text() == "profile 1"  # the first profile is stored
    out.write_text("a profile drawn on another machine")  # same inputs, other samples
    e2e_bench.shared_profile(Path("policy"), Path("train"), results, out)
    assert made == [0] and out.read_text() == "profile 1"  # the stored one wins and is not redrawn
    key = {"weights": "w2"}  # another warm start: profiled afresh, the stored profile kept
    e2e_bench.shared_profile(Path("policy"), Path("train"), results, out)
    assert made == [0, 1] and out.read_text() == "profile 2" and stored.read_text() == "profile 1"
    assert "made from other inputs: profiling" in capsys.readouterr().out
    e2e_bench.shared_profile(Path("policy"), Path("train"), results, out)  # e2e after e2e_select
    assert made == [0, 1] and out.read_text() == "profile 2", "the local profile of these inputs is kept"


def test_offline_filter_drops_problems_profiled_all_right_or_all_wrong():
    train = pl.DataFrame({"id": ["a", "b", "c", "d", "e"]})
    profile = pl.DataFrame({"id": ["a", "b", "c", "d"], "n_correct": [0, 2, 1, 5], "k": [2, 2, 4, 8]})
    assert offline_filter(train, profile)["id"].to_list() == ["c", "d", "e"]  # e: unprofiled stays


def test_frontier_share_counts_hard_problems_that_reached_one_half():
    start = pl.DataFrame({"id": ["a", "b", "c", "d", "e"], "n_correct": [0, 0, 0, 1, 4], "k": [4] * 5})
    end = pl.DataFrame({"id": ["a", "b", "c", "d", "e"], "n_correct": [2, 1, 4, 4, 4], "k": [4] * 5})
    got = frontier_share(start, end)
    assert got == {"start_hard": 3, "moved": 2, "share": pytest.approx(2 / 3)}  # d started at 0.25: not hard


def _arm(points, profile_samples, ratio=0.5):
    evals = [{"step": i, "rollouts_generated": x, "total_rollouts": x + profile_samples, "heldout_accuracy": y,
              "heldout_accuracy_se": 0.01} for i, (x, y) in enumerate(points)]
    return {"evals": evals, "profile_samples": profile_samples, "informative_rollout_ratio": ratio}


def test_seed_summary_charges_the_profile_and_amortizes_it():
    arms = {"A": _arm([(0, 0.40), (1000, 0.60)], 1000, 0.9), "A0": _arm([(0, 0.40), (4000, 0.60)], 0),
            "B": _arm([(0, 0.40), (6000, 0.50)], 0), "C": _arm([(0, 0.40), (5000, 0.50)], 1000)}
    ids = pl.DataFrame({"id": ["p", "q"], "n_correct": [0, 0], "k": [4, 4]})
    finals = {a: ids.with_columns(pl.Series("n_correct", [2, 0] if a == "A" else [0, 0])) for a in arms}
    s = seed_summary(arms, ids, finals, amortize_over=(1, 10))
    assert s["target_B_final"] == 0.50
    # A reaches 0.50 after 500 training rollouts; charged its 1000-sample profile: 1500
    assert s["rollouts_to_B_final"]["amortized_1"]["A"] == pytest.approx(1500)
    assert s["rollouts_to_B_final"]["amortized_10"]["A"] == pytest.approx(600)
    assert s["rollouts_to_B_final"]["amortized_1"]["C"] == pytest.approx(6000)
    assert s["ratios_charged"]["B_over_A"] == pytest.approx(6000 / 1500)
    assert s["ratios_charged"]["C_over_A"] == pytest.approx(6000 / 1500)
    assert s["frontier"]["A"]["share"] == 0.5 and s["frontier"]["B"]["share"] == 0.0

    seeds = [{"arms": arms, "summary": s}, {"arms": arms, "summary": {**s, "final_accuracy": {
        **s["final_accuracy"], "A": 0.58}}}]
    agg = aggregate(seeds)
    assert agg["A_minus_B"]["mean"] == pytest.approx(0.09)
    assert agg["goals"]["A reaches B's final with >= 2x fewer rollouts"]
    assert agg["goals"]["informative_ratio_A >= 0.8"] and agg["goals"]["frontier A >= 0.3 and > B by >= 2 SE"]
    # one target for every seed, B's mean final (0.50): A at 1500 charged, B at 6000
    common = agg["rollouts_to_B_mean_final"]
    assert common["target"] == pytest.approx(0.50) and common["B_over_A"]["mean"] == pytest.approx(4.0)
    # a seed where B ended at or below its start: every arm "reaches" B's final at its first
    # evaluation; that seed's ratio is reported as undefined, and a goal that needs every seed is not met
    flat = {**s, "target_B_final": 0.40, "ratios_charged": {"B_over_A": None, "C_over_A": None, "A0_over_A": None}}
    agg = aggregate([*seeds, {"arms": arms, "summary": flat, "initial_accuracy": 0.40}])
    assert agg["rollout_ratios_charged"]["B_over_A"]["undefined_in_seeds"] == 1
    assert agg["rollout_ratios_charged"]["B_over_A"]["reached_in_seeds"] == 2 == agg["rollout_ratios_charged"]["B_over_A"]["seeds"]
    assert not agg["goals"]["A reaches B's final with >= 2x fewer rollouts"]
    # a frontier lead inside the noise is not "more than B": 0.5 vs 0 on two seeds, 0.31 vs 0.4 on a third
    noisy = {**s, "frontier": {**s["frontier"], "A": {"share": 0.31}, "B": {"share": 0.4}}}
    agg = aggregate([*seeds, {"arms": arms, "summary": noisy}])
    assert agg["frontier"]["A"]["mean"] > agg["frontier"]["B"]["mean"]
    assert not agg["goals"]["frontier A >= 0.3 and > B by >= 2 SE"]


def test_e2e_seeds_are_stored_one_by_one_and_pooled_only_when_they_share_settings_and_inputs(tmp_path):
    """Seeds of the headline run in separate invocations (sessions): each is stored on its own, a
    stored one is reused, one made with other settings is never overwritten, and the pooled result
    records every arm's code hash and says when it has fewer than 3 seeds."""
    import json

    from bench.e2e_bench import BUDGET, SHARED, assemble, seed_dir, seed_path, stored_seed
    from grpo_data.tables import io

    arms = {"A": _arm([(0, 0.40), (1000, 0.60)], 1000, 0.9), "A0": _arm([(0, 0.40), (4000, 0.60)], 0),
            "B": _arm([(0, 0.40), (6000, 0.50)], 0), "C": _arm([(0, 0.40), (5000, 0.50)], 1000)}
    ids = pl.DataFrame({"id": ["p", "q"], "n_correct": [0, 0], "k": [4, 4]})
    finals = {a: ids.with_columns(pl.Series("n_correct", [2, 0] if a == "A" else [0, 0])) for a in arms}
    # as run() builds it: tuples in memory, lists once stored as JSON; the two must compare equal
    shared = {k: None for k in SHARED} | {"budget_total_rollouts": BUDGET, "training": ("optim.lr=3e-5",),
                                         "inputs": {"policy": "aa", "profile": "bb"}, "arms": ARMS,
                                         "band_setting": {"chosen_on_validation": "x", "overrides": ("lo=0.2",)}}

    def seed_result(seed, code, a_final):
        summary = seed_summary(arms, ids, finals)
        summary = {**summary, "final_accuracy": {**summary["final_accuracy"], "A": a_final}}
        return {"seed": seed, "arms": {a: {**r, "code": code} for a, r in arms.items()}, "summary": summary,
                "initial_accuracy": 0.40}

    assert stored_seed(tmp_path, 0, shared) is None
    io.write_json(seed_path(tmp_path, 0), {**shared, "seed_result": seed_result(0, "c0de0", 0.60)})
    io.write_json(seed_path(tmp_path, 2), {**shared, "seed_result": seed_result(2, "c0de2", 0.58)})
    assert stored_seed(tmp_path, 2, shared)["arms"]["A"]["code"] == "c0de2"
    got = assemble(tmp_path)
    assert [s["seed"] for s in got["seeds"]] == [0, 2]
    assert got["run_code"] == {"seed0": dict.fromkeys(arms, "c0de0"), "seed2": dict.fromkeys(arms, "c0de2")}
    assert "partial" in got["variant"] and got["inputs"] == {"policy": "aa", "profile": "bb"}
    assert "2 versions" in got["code_note"] and set(got["seed_provenance"]) == {"seed0", "seed2"}
    assert got["summary"]["A_minus_B"]["mean"] == pytest.approx(0.09)
    from bench.report import e2e_lines

    assert e2e_lines({**got, "pool": 800, "pool_after_offline_filter": 300, "profile_samples": 1000, "eval_k": 4,
                      "band_setting": None})[-1].endswith("seed0 c0de0; seed2 c0de2")
    # a seed made from another warm start (its policy hash differs): named, never pooled nor overwritten
    other = {**shared, "inputs": {"policy": "zz", "profile": "bb"}}
    io.write_json(seed_path(tmp_path, 1), {**other, "seed_result": seed_result(1, "c0de1", 0.6)})
    with pytest.raises(ValueError, match=r"seed1\.json differs .*\['inputs'\]"):
        assemble(tmp_path)
    # checked before anything trains, whichever seed is asked for: run() would stop here
    with pytest.raises(ValueError, match=r"seed1\.json': \['inputs'\]"):
        stored_seed(tmp_path, 0, shared)
    assert json.loads(seed_path(tmp_path, 1).read_text())["inputs"]["policy"] == "zz"
    assert [s["seed"] for s in assemble(tmp_path, seeds=(0, 2))["seeds"]] == [0, 2]  # only the named seeds
    with pytest.raises(FileNotFoundError, match=r"no stored seed \[3\]"):
        assemble(tmp_path, seeds=(0, 3))
    # a --quick budget keeps its seeds apart from the full headline's
    assert seed_dir(tmp_path, 5_000) != seed_dir(tmp_path) and stored_seed(tmp_path, 0, {**shared,
                                                                           "budget_total_rollouts": 5_000}) is None
    with pytest.raises(FileNotFoundError, match="no stored seeds"):
        assemble(tmp_path, budget=5_000)


def test_data_bench_finds_every_planted_and_broken_row():
    """The data benchmark's own checks, on 20k rows (the full run is `grpo bench data`)."""
    from bench import data_bench

    r = data_bench.run(n=20_000)
    for fmt in ("jsonl", "parquet"):
        c = r["results"][fmt]["checks"]
        assert c["planted_removed"] == c["planted"] == 1000 and c["false_positive_removals"] == 0
        assert c["broken_in_rejects"] == c["broken_rows"] == 1000 and c["broken_wrong_reason"] == 0
        assert c["rows_accounted"] and c["near_misses_kept"] == c["near_misses"] == 1000


def test_variants_compare_pairs_seeds_and_calls_only_beyond_two_standard_errors():
    from bench.report import variants_table
    from bench.variants_bench import compare, summarize_run

    def run(acc):
        return {"final": {"heldout_accuracy": acc}}

    runs = {"default": {0: run(0.50), 1: run(0.55), 2: run(0.60)},
            "better": {0: run(0.52), 1: run(0.57), 2: run(0.63)},  # +0.02, +0.02, +0.03: se 0.0033
            "noisy": {0: run(0.60), 1: run(0.50), 2: run(0.61)}}  # +0.1, -0.05, +0.01: se 0.044
    out = compare(runs)
    assert out["default"]["verdict"] == "reference" and out["default"]["minus_default"]["mean"] == 0
    assert out["better"]["verdict"] == "higher"
    assert out["better"]["minus_default"]["mean"] == pytest.approx(0.07 / 3)
    assert out["noisy"]["verdict"] == "no difference (95% interval holds 0)"
    assert out["better"]["minus_default"]["ci95"][0] > 0  # 0.0233 +- 4.30 x 0.0033
    assert out["noisy"]["heldout_accuracy"]["min"] == 0.5 and out["noisy"]["heldout_accuracy"]["n"] == 3

    records = [{"kind": "eval", "step": 0, "rollouts_generated": 0, "heldout_accuracy": 0.4, "heldout_pass_at_4": 0.6,
                "heldout_maj_at_4": 0.5, "heldout_accuracy_level_1": 0.9}]
    records += [{"kind": "train", "step": i, "rollouts_generated": 100 * i, "kl": 0.01 * i, "entropy": 1.0,
                 "completion_len_mean": 10.0, "informative_rollout_ratio": 0.5, "reward_mean": 0.5} for i in range(1, 13)]
    records.append({**records[0], "step": 12, "rollouts_generated": 1200, "heldout_accuracy": 0.45})
    one = summarize_run(records, 30.0)
    assert one["initial_accuracy"] == 0.4 and one["final"]["heldout_accuracy"] == 0.45
    assert one["kl"] == pytest.approx(0.01 * sum(range(3, 13)) / 10)  # the last 10 steps
    assert one["by_level"] == {"heldout_accuracy_level_1": 0.9} and "heldout_accuracy_level_1" not in one["final"]
    result = {"eval_k": 4, "budget_rollouts": 1200, "seeds": [0], "runs": {"default": {"0": one}},
              "summary": {m: compare({"default": {0: one}}, m) for m in
                          ("heldout_accuracy", "heldout_pass_at_4", "heldout_maj_at_4")}, "claims": {}}
    for key in ("kl", "entropy", "completion_len", "seconds"):
        result["summary"][key] = {"default": {"mean": one[key], "se": float("nan")}}
    table = variants_table(result)
    assert any(line.startswith("| default | 0.45 +- nan (0.45-0.45) |") for line in table)


def test_variants_reuse_a_finished_run_only_under_the_same_key(tmp_path):
    import json

    from bench.common import completed, run_key

    pl.DataFrame({"id": ["a"], "n_correct": [1]}).write_parquet(tmp_path / "w.parquet", metadata={"created": "1"})
    key = run_key(["algo.tau=0.5", "run.eval_first=false"], [str(tmp_path / "w.parquet")])
    assert key == run_key(["algo.tau=0.5", "run.eval_first=true", "run.out=elsewhere"], [str(tmp_path / "w.parquet")])
    run = tmp_path / "arm"
    run.mkdir()
    records = [{"kind": "eval", "step": 0}, {"kind": "train", "step": 1, "rollouts_generated": 120},
               {"kind": "eval", "step": 1}]
    (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    assert completed(run, key, 100) is None  # no key saved: run it again
    (run / "bench-key.json").write_text(json.dumps({"key": key, "seconds": 12.5}))
    assert completed(run, key, 100) == (records, 12.5)
    assert completed(run, key, 200) is None  # stopped before the budget
    assert completed(run, run_key(["algo.tau=0.3"], [str(tmp_path / "w.parquet")]), 100) is None
    # the same rows written again (another creation time in the footer): the same input
    pl.DataFrame({"id": ["a"], "n_correct": [1]}).write_parquet(tmp_path / "w.parquet", metadata={"created": "2"})
    assert completed(run, run_key(["algo.tau=0.5"], [str(tmp_path / "w.parquet")]), 100) == (records, 12.5)
    pl.DataFrame({"id": ["a"], "n_correct": [2]}).write_parquet(tmp_path / "w.parquet")  # same path, new content
    assert completed(run, run_key(["algo.tau=0.5"], [str(tmp_path / "w.parquet")]), 100) is None


def test_a_minus_b_error_pairs_problems_and_the_larger_error_decides():
    import numpy as np

    a1, b1 = {"p": 1.0, "q": 0.5, "r": 0.0}, {"p": 0.5, "q": 0.5, "r": 0.0}
    a2, b2 = {"p": 1.0, "q": 1.0, "r": 0.5}, {"p": 1.0, "q": 0.5, "r": 0.0}
    seeds = [{"per_problem_final": {"A": a1, "B": b1}}, {"per_problem_final": {"A": a2, "B": b2}}]
    d = np.array([0.25, 0.25, 0.25])  # per problem, A - B averaged over the two seeds
    assert paired_se(seeds, "A", "B") == pytest.approx(d.std(ddof=1) / np.sqrt(3))  # 0: every problem moved alike
    arms = {a: _arm([(0, 0.4), (1000, 0.5)], 0) for a in ("A", "A0", "B", "C")}
    summaries = [{"final_accuracy": {"A": 0.60, "A0": 0.5, "B": 0.50, "C": 0.5}, "final_se": {}, "target_B_final": 0.5,
                  "ratios_charged": {"B_over_A": 2.0, "C_over_A": 1.0, "A0_over_A": 1.0},
                  "frontier": {a: {"share": 0.0} for a in arms}},
                 {"final_accuracy": {"A": 0.64, "A0": 0.5, "B": 0.50, "C": 0.5}, "final_se": {}, "target_B_final": 0.5,
                  "ratios_charged": {"B_over_A": 2.0, "C_over_A": 1.0, "A0_over_A": 1.0},
                  "frontier": {a: {"share": 0.0} for a in arms}}]
    agg = aggregate([{"arms": arms, "summary": summ, **extra} for summ, extra in zip(summaries, seeds, strict=True)])
    diff = agg["A_minus_B"]
    assert diff["mean"] == pytest.approx(0.12) and diff["se_over_seeds"] == pytest.approx(0.02)
    assert diff["in_se"] == pytest.approx(0.12 / 0.02)  # the seeds' error is the larger one here
    assert agg["goals"]["A - B >= 3 SE"] and not agg["goals"]["... and >= 1.5x fewer than C"]


def test_the_frontier_noise_floor_re_measures_the_untrained_policy():
    seeds = [{"per_problem_start": {"p": 0.0, "q": 0.0, "r": 1.0}},
             {"per_problem_start": {"p": 0.5, "q": 0.0, "r": 1.0}}]
    assert frontier_noise_floor(seeds) == pytest.approx(0.5)  # of p, q (hard in the first), p read >= 0.5 again


def test_gsweep_arms_keep_the_answers_per_step_and_compare_allocation_with_the_best_fixed_g():
    from bench.gsweep_bench import STEP_ANSWERS, arm_summary, arms, compare, fixed, kl_arms
    from bench.report import gsweep_lines
    from grpo_train.config_io import config_from_tree

    for name, overrides in {**arms(), **kl_arms()}.items():
        cfg = config_from_tree({}, overrides)  # every arm is a valid train config
        assert cfg.rollout.batch_groups * cfg.rollout.group_size == STEP_ANSWERS, name
    assert config_from_tree({}, arms()["allocate"]).rollout.sizing == "allocate"
    assert config_from_tree({}, arms()["sequential"]).rollout.group_sizing().mode == "sequential"
    with pytest.raises(ValueError, match="does not divide"):
        fixed(3)

    def records(curve, ratio=0.5):
        evals = [{"kind": "eval", "rollouts_generated": x, "heldout_accuracy": y, "heldout_accuracy_se": 0.01}
                 for x, y in curve]
        trains = [{"kind": "train", "rollouts_generated": curve[-1][0], "informative_rollout_ratio": ratio,
                   "baseline_variance": 0.02, "kl": 0.0, "samples_per_problem": 8.0, "rounds": 2, "underfilled": False,
                   "step_seconds": 3.0}]
        return evals + trains

    # every arm is read at exactly 4,000 rollouts: G8's last evaluation is at 4,200, so its accuracy
    # there is 0.5 + 0.1 x 2000 / 2200 = 0.5909 (not its 0.6); G4 ends at 0.5
    g8 = arm_summary(records([(0, 0.4), (2000, 0.5), (4200, 0.6)]), 10.0)
    target = 0.5 + 0.1 * 2000 / 2200
    steady = arm_summary(records([(0, 0.4), (2000, 0.6), (4000, 0.62)], ratio=0.95), 12.0)
    # on the grid 0.4, 0.5, 0.6, 0.61, 0.62: it reaches the target between 1,000 and 2,000 and stays
    steady_at = 1000 + (target - 0.5) / 0.1 * 1000
    # a noisy seed touches the target early (0.7 at 1,000), falls back and ends below it: not reached
    noisy = arm_summary(records([(0, 0.4), (1000, 0.7), (2000, 0.5), (4000, 0.58)], ratio=0.95), 12.0)
    seed = {"G4": arm_summary(records([(0, 0.4), (4000, 0.5)]), 10.0), "G8": g8, "allocate": steady}
    out = compare([seed, seed], budget=4000)
    assert out["best_fixed"] == "G8" and out["best_fixed_accuracy_at_budget"] == pytest.approx(target)
    assert out["arms"]["G8"]["accuracy_at_budget"]["mean"] == pytest.approx(target)
    assert out["arms"]["G8"]["final_accuracy"]["mean"] == pytest.approx(0.6)  # the last evaluation, kept beside it
    x = out["allocate_fewer_rollouts_than_best_fixed"]
    assert x["mean_curve"] == pytest.approx(4000 / steady_at) and x["per_seed"] == pytest.approx([4000 / steady_at] * 2)
    assert all(v is None for v in out["goals"].values()), "two seeds: no goal is judged"
    assert any("not judged yet" in line for line in gsweep_lines({"summary": out, "budget_total_rollouts": 4000,
                                                                  "step_answers": 128, "seeds": [0, 1]}))
    out = compare([seed, seed, seed], budget=4000)
    assert all(out["goals"].values())
    lines = gsweep_lines({"summary": out, "budget_total_rollouts": 4000, "step_answers": 128, "seeds": [0, 1, 2]})
    assert any(line.startswith("| allocate | 0.62") for line in lines)
    assert any(f"on the seed-mean curves: {4000 / steady_at:.2f}x" in line for line in lines)

    # with the noisy seed: the seed-mean curve (0.4, 0.567, 0.567, 0.587, 0.607) crosses the target
    # only between 3,000 and 4,000; the noisy seed counts as not reached, it is not dropped
    with_seq = {**seed, "sequential": steady}
    out = compare([with_seq, with_seq, {**with_seq, "allocate": noisy}], budget=4000)
    x = out["allocate_fewer_rollouts_than_best_fixed"]
    mean_at_3000, mean_at_4000 = (0.61 * 2 + 0.54) / 3, (0.62 * 2 + 0.58) / 3
    crossing = 3000 + (target - mean_at_3000) / (mean_at_4000 - mean_at_3000) * 1000
    assert x["mean_curve"] == pytest.approx(4000 / crossing)
    assert x["per_seed"][:2] == pytest.approx([4000 / steady_at] * 2) and x["per_seed"][2] is None
    assert x["reached_in_seeds"] == 2
    assert out["goals"] == {"allocate reaches the best fixed G's accuracy with >= 1.3x fewer rollouts": False,
                            "allocate informative ratio >= 0.9": True}
    lines = gsweep_lines({"summary": out, "budget_total_rollouts": 4000, "step_answers": 128, "seeds": [0, 1, 2]})
    assert any("goal allocate reaches the best fixed G's accuracy with >= 1.3x fewer rollouts: MISSED" in line
               for line in lines)
    assert any(line.endswith("seed by seed (against that seed's best fixed G): 2.10x, 2.10x, not reached")
               for line in lines)
    # another per-problem arm is read the same way (steady in every seed), but judges no goal
    assert out["per_problem_arms"]["sequential"] == {"mean_curve": pytest.approx(4000 / steady_at),
                                                     "per_seed": pytest.approx([4000 / steady_at] * 3),
                                                     "reached_in_seeds": 3, "seeds": 3,
                                                     "informative_rollout_ratio": pytest.approx(0.95)}
    assert any(line.startswith("- sequential, read the same way: 2.10x on the seed-mean curves; seed by seed: "
                               "2.10x, 2.10x, 2.10x; informative ratio 0.95") for line in lines)
    with pytest.raises(ValueError, match="a curve ending at 3,000 rollouts cannot be read at 4,000"):
        compare([{**seed, "G4": arm_summary(records([(0, 0.4), (3000, 0.5)]), 10.0)}], budget=4000)


def test_gsweep_pareto_front_keeps_only_points_nothing_cheaper_beats():
    import numpy as np

    from bench.gsweep_bench import mean_curve, pareto, pareto_front
    from bench.report import gsweep_lines

    pts = [("a", 1000, 0.70), ("b", 1000, 0.72), ("c", 2000, 0.71), ("d", 2500, 0.75), ("e", 3000, 0.75),
           ("f", 500, 0.60)]
    # f is cheapest; b beats a at equal cost; c is beaten by b (cheaper, higher); e ties d but costs more
    assert [p[0] for p in pareto_front(pts)] == ["f", "b", "d"]
    assert pareto_front([("x", 1, 0.5), ("y", 1, 0.5)]) == [("x", 1, 0.5)]

    # each seed is read on the grid (linear between its evaluations), then pooled
    curve = mean_curve([[(0, 0.5), (1000, 0.6), (2000, 0.7)], [(0, 0.7), (1200, 0.8), (2000, 0.8)]],
                       np.array([0.0, 1000.0, 2000.0]))
    assert [c["rollouts"] for c in curve] == [0, 1000, 2000]
    assert [c["accuracy"] for c in curve] == pytest.approx([0.6, (0.6 + 0.7 + 0.1 * 1000 / 1200) / 2, 0.75])
    assert curve[0]["se"] == pytest.approx(0.1)  # sample std of (0.5, 0.7) is 0.1414, over sqrt 2

    seed = {"G4": {"curve": [(0, 0.9), (1000, 0.5), (2000, 0.6)], "seconds": 100.0, "final_accuracy": 0.6},
            "G8": {"curve": [(0, 0.4), (1000, 0.55), (2000, 0.58)], "seconds": 80.0, "final_accuracy": 0.58}}
    out = pareto([seed, seed], budget=2000)
    # the step-0 evaluation (the shared warm start) is never on the front, however high
    assert [(p["arm"], p["rollouts"]) for p in out["front_rollouts"]] == [("G8", 1000), ("G4", 2000)]
    assert [p["arm"] for p in out["front_seconds"]] == ["G8", "G4"]
    lines = gsweep_lines({"summary": {"arms": {}, "pareto": out}, "budget_total_rollouts": 2000,
                          "step_answers": 128, "seeds": [0, 1]})
    assert any("Pareto front, test accuracy against rollouts" in line and "G8 at 1,000 (0.55), G4 at 2,000 (0.6)" in line
               for line in lines)


def test_gsweep_records_where_the_variance_schedule_moved_g():
    from bench.gsweep_bench import arm_summary, compare
    from bench.report import gsweep_lines

    trains = [{"kind": "train", "rollouts_generated": 128 * (i + 1), "group_size": g, "informative_rollout_ratio": 0.5,
               "rounds": 1, "underfilled": False, "step_seconds": 1.0} for i, g in enumerate([8, 8, 4, 4, 8])]
    evals = [{"kind": "eval", "rollouts_generated": x, "heldout_accuracy": 0.5, "heldout_accuracy_se": 0.01}
             for x in (0, 640)]
    summary = arm_summary(evals + trains, 5.0)
    assert summary["g_path"] == [[128, 8], [384, 4], [640, 8]]
    fixed = arm_summary(evals + [{**t, "group_size": 8} for t in trains], 5.0)
    r = {"summary": compare([{"variance": summary, "G8": fixed}], budget=640), "budget_total_rollouts": 640, "step_answers": 128,
         "seeds": [{"seed": 0, "arms": {"variance": summary, "G8": fixed}}]}
    moved = [line for line in gsweep_lines(r) if "G over the run" in line]
    assert moved == ["- variance: G over the run (from the rollouts count shown), seed 0: 8 at 128 -> 4 at 384 -> 8 at 640"]
    widened = [{**t, "band_lo": lo, "band_hi": 1 - lo} for t, lo in zip(trains, [0.2, 0.2, 0.2, 0.15, 0.15], strict=True)]
    summary = arm_summary(evals + widened, 5.0)
    assert summary["band_path"] == [[128, 0.2, 0.8], [512, 0.15, 0.85]]
    r["seeds"][0]["arms"]["variance"] = summary
    assert [line for line in gsweep_lines(r) if "band over the run" in line] == [
        "- variance: band over the run (from the rollouts count shown), seed 0: [0.2, 0.8] at 128 -> [0.15, 0.85] at 512"]


def test_demo_lr_choice_is_the_best_mean_validation_final_and_flags_regressions():
    from bench.demo_lr_bench import summarize

    curves = {0: {1e-4: [(0, 0.78, 0.01), (23, 0.76, 0.01)], 3e-5: [(0, 0.78, 0.01), (23, 0.84, 0.01)]},
              2: {1e-4: [(0, 0.54, 0.01), (6, 0.30, 0.01)], 3e-5: [(0, 0.54, 0.01), (8, 0.52, 0.01), (23, 0.55, 0.01)]}}
    r = summarize(curves)
    assert r["chosen_lr"] == pytest.approx(3e-5)
    assert r["over_seeds"]["3e-05"]["final"]["mean"] == pytest.approx((0.84 + 0.55) / 2)
    assert r["over_seeds"]["0.0001"]["change"]["mean"] == pytest.approx((-0.02 - 0.24) / 2)
    # a fall beyond 2 SE of the two evaluations (hypot(0.01, 0.01) = 0.014) is a regression; -0.02 is not
    assert r["per_seed"]["2"]["0.0001"]["regressed"] and not r["per_seed"]["0"]["0.0001"]["regressed"]
    assert not r["per_seed"]["2"]["3e-05"]["regressed"]
    assert r["chosen_minus_other_by_seed"]["0.0001"]["mean"] == pytest.approx((0.08 + 0.25) / 2)
    del curves[2][1e-4]
    with pytest.raises(ValueError, match="every rate needs every seed; missing \\(seed, lr\\): \\[\\('2', '0.0001'\\)\\]"):
        summarize(curves)



def test_gsweep_pools_stored_runs_with_their_code_and_names_what_is_missing_or_mismatched(tmp_path):
    """A sweep takes several sessions: each finished run is stored as a summary (run_path); the
    result pools the stored runs, records each one's code hash, and refuses mixing settings."""
    import json

    from bench.gsweep_bench import BUDGET, arms, assemble, run_path, stored_run
    from grpo_data.tables import io

    shared = {"budget_total_rollouts": BUDGET, "step_answers": 128, "training": ["optim.lr=3e-5"], "eval_every": 1000,
              "inputs": {"policy": "aa"}}

    def store(name, code, final, shared=shared, seed=0):
        summary = {"curve": [(0, 0.7), (BUDGET, final)], "final_accuracy": final, "final_se": 0.02,
                   "informative_rollout_ratio": 0.8, "baseline_variance": 0.01, "kl_reached": float("nan"),
                   "samples_per_problem": 4.0, "rounds_per_step": 2.0, "underfilled_share": 0.0, "seconds": 60.0}
        io.write_json(run_path(tmp_path, BUDGET, seed, name, "aa"), {"arm": name, "seed": seed, "overrides": arms()[name],
                                                               "shared": shared, "code": code, "summary": summary})

    store("G4", "aaa", 0.80)
    store("allocate", "bbb", 0.82)
    r = assemble(("G4", "allocate"), (0,), tmp_path, plot_to=tmp_path / "sweep.png")
    assert (tmp_path / "sweep.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and r["plot"] == str(tmp_path / "sweep.png")
    # allocate is ahead at every grid point: the front is allocate's alone
    assert {p["arm"] for p in r["summary"]["pareto"]["front_rollouts"]} == {"allocate"}
    assert r["run_code"] == {"seed0/G4": "aaa", "seed0/allocate": "bbb"} and "partial" in r["variant"]
    assert "2 versions" in r["code_note"] and r["inputs"] == {"policy": "aa"}
    assert r["summary"]["best_fixed"] == "G4" and r["summary"]["arms"]["allocate"]["final_accuracy"]["mean"] == 0.82
    from bench.report import gsweep_lines

    assert any("2 versions of the library code" in line for line in gsweep_lines(r))
    with pytest.raises(FileNotFoundError, match=r"\['seed0/G8'\]"):
        assemble(("G4", "G8"), (0,), tmp_path)
    # reused only with the same overrides, settings and inputs; one made with others is never overwritten
    path = run_path(tmp_path, BUDGET, 0, "G4", "aa")
    assert stored_run(path, arms()["G4"], shared)["code"] == "aaa"
    with pytest.raises(ValueError, match=r"other \['overrides'\]"):
        stored_run(path, arms()["G8"], shared)
    with pytest.raises(ValueError, match=r"other \['inputs'\]"):
        stored_run(path, arms()["G4"], {**shared, "inputs": {"policy": "zz"}})
    store("G8", "aaa", 0.81, shared={**shared, "training": ["optim.lr=1e-4"]})
    with pytest.raises(ValueError, match=r"G8.json differs .* in \['training'\]"):
        assemble(("G4", "G8"), (0,), tmp_path)
    assert json.loads(run_path(tmp_path, BUDGET, 0, "G8", "aa").read_text())["shared"]["training"] == ["optim.lr=1e-4"]
    # runs from another warm start are kept apart; with two stored, assembling must name one
    io.write_json(run_path(tmp_path, BUDGET, 0, "G4", "bb"), {"arm": "G4", "seed": 0, "overrides": arms()["G4"],
                                                              "shared": {**shared, "inputs": {"policy": "bb"}},
                                                              "code": "ccc", "summary": {}})
    with pytest.raises(ValueError, match=r"2 warm starts .*\['aa', 'bb'\].*--warm-start"):
        assemble(("G4", "allocate"), (0,), tmp_path)
    assert assemble(("G4", "allocate"), (0,), tmp_path, warm_start="aa")["run_code"]["seed0/G4"] == "aaa"


def test_gsweep_run_stores_each_run_reuses_it_and_stops_on_a_mismatch_before_training(tmp_path, monkeypatch):
    """run() with the engines replaced: a second invocation trains nothing, a stored run made with
    other settings stops the next invocation before it trains, and nothing stored is rewritten."""
    import json

    import pipelines.stages
    from bench import common, gsweep_bench

    policy = tmp_path / "policy"
    policy.mkdir()
    (policy / "model.safetensors").write_bytes(b"weights")
    from grpo_data.profile_metadata import weights_hash

    (policy / "bootstrap.json").write_text(json.dumps({"weights_hash": weights_hash(str(policy))}))
    world = {}
    for split in ("train", "test"):
        world[split] = tmp_path / f"{split}.parquet"
        pl.DataFrame({"id": ["a", "b"], "x": [1, 2]}).write_parquet(world[split])
    monkeypatch.setattr(pipelines.stages, "warm_policy", lambda: policy)
    monkeypatch.setattr(pipelines.stages, "write_world", lambda out: world)
    trained = []

    models = []

    def fake_train(name, args, base, out, inputs, budget):
        trained.append(name)
        models.append(base[0])
        (out / name).mkdir(parents=True, exist_ok=True)
        (out / name / "bench-key.json").write_text(json.dumps({"key": {"code": "fake"}, "seconds": 5.0}))
        ev = {"kind": "eval", "heldout_accuracy": 0.7 + 0.01 * len(trained), "heldout_accuracy_se": 0.02}
        return [{**ev, "rollouts_generated": 0},
                {"kind": "train", "rollouts_generated": budget, "informative_rollout_ratio": 0.8, "rounds": 2,
                 "underfilled": False, "step_seconds": 1.0},
                {**ev, "rollouts_generated": budget}], 5.0

    monkeypatch.setattr(common, "cached_train_run", fake_train)
    kw = {"seeds": (0,), "only": ("G4", "allocate"), "kl": False, "workdir": str(tmp_path / "w"),
          "results": tmp_path / "r"}
    first = gsweep_bench.run(**kw)
    assert trained == ["G4", "allocate"] and first["run_code"] == {"seed0/G4": "fake", "seed0/allocate": "fake"}
    warm = weights_hash(str(policy))
    stored = gsweep_bench.run_path(tmp_path / "r", gsweep_bench.BUDGET, 0, "G4", warm)
    assert json.loads(stored.read_text())["shared"]["base"][0] == gsweep_bench.MODEL_ARG  # no machine's path
    # the warm start was stored with the results; a later run trains from it and builds none
    kept = tmp_path / "r" / gsweep_bench.WARM_START
    assert (kept / "model.safetensors").read_bytes() == b"weights" and set(models) == {f"model={kept}"}

    def no_build():
        raise AssertionError("a stored warm start is there: nothing is built")

    monkeypatch.setattr(pipelines.stages, "warm_policy", no_build)
    before = stored.read_text()
    again = gsweep_bench.run(**kw)
    assert trained == ["G4", "allocate"]  # both reused
    same = json.dumps(again["summary"], sort_keys=True) == json.dumps(first["summary"], sort_keys=True)  # NaN-safe
    assert same and stored.read_text() == before
    # another learning rate: the stored G4 is named and nothing trains, allocate included
    monkeypatch.setattr(gsweep_bench, "TRAINING", (*gsweep_bench.TRAINING[:-2], "optim.lr=1e-4", "optim.minibatches=1"))
    with pytest.raises(ValueError, match=r"G4\.json was made with other \['base', 'training'\]"):
        gsweep_bench.run(**kw)
    assert trained == ["G4", "allocate"] and stored.read_text() == before
    with pytest.raises(ValueError, match="repeated seeds"):
        gsweep_bench.run(**{**kw, "seeds": (0, 0, 0)})
    (kept / "model.safetensors").write_bytes(b"other weights")  # a damaged copy is named, never trained from
    with pytest.raises(ValueError, match=r"gsweep-warm-start: its weights hash \w+ is not the \w+ its bootstrap"):
        gsweep_bench.run(**kw)
    assert trained == ["G4", "allocate"]


def test_bench_seeds_argument_rejects_repeats_and_names_the_format():
    from pipelines.commands.bench import parse_seeds

    assert parse_seeds("2,0", (0, 1, 2)) == (2, 0) and parse_seeds(None, (0,)) == (0,)
    with pytest.raises(ValueError, match="repeats a seed"):
        parse_seeds("1,1", (0,))
    with pytest.raises(ValueError, match="comma-separated integers"):
        parse_seeds("0;1", (0,))


def test_gsweep_warm_start_argument_only_assembles(tmp_path):
    """--warm-start picks stored runs to assemble; a sweep that would train is told where its warm
    start comes from instead of silently ignoring it, and assembling nothing says so."""
    from pipelines.commands.bench import run_one

    with pytest.raises(ValueError, match="with --assemble"):
        run_one("gsweep", False, tmp_path, warm_start="caedf446027e3e25")
    with pytest.raises(FileNotFoundError, match="no stored gsweep runs"):
        run_one("gsweep", False, tmp_path, arms="G4", seeds="0", assemble=True)


def test_a_stopped_benchmark_kills_its_training_run_and_what_that_started(tmp_path):
    """SIGTERM to the benchmark (`pkill`, a job scheduler) ends the child and its own children: a
    killed sweep once left its `grpo train` running, holding the CPU and the DeepSpeed port."""
    import os
    import signal
    import sys
    import threading
    import time

    from bench.common import run_child

    pids = tmp_path / "pids"
    script = (f"import subprocess, os, time; p = subprocess.Popen(['sleep', '60']); "
              f"open({str(pids)!r}, 'w').write(f'{{os.getpid()}} {{p.pid}}'); time.sleep(60)")

    def stop_when_started():
        while not pids.exists() or not pids.read_text():
            time.sleep(0.05)
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=stop_when_started, daemon=True).start()
    with open(tmp_path / "log", "w") as log, pytest.raises(SystemExit) as stopped:
        run_child([sys.executable, "-c", script], log)
    assert stopped.value.code == 128 + signal.SIGTERM
    def running(pid: int) -> bool:  # a killed grandchild may stay a zombie where PID 1 does not reap
        try:
            return open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0] != "Z"
        except FileNotFoundError:
            return False

    time.sleep(0.2)
    assert [pid for pid in map(int, pids.read_text().split()) if running(pid)] == []
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL or callable(signal.getsignal(signal.SIGTERM))
    with open(tmp_path / "log2", "w") as log:
        assert run_child([sys.executable, "-c", "raise SystemExit(3)"], log) == 3


def test_a_curve_is_read_on_the_budget_grid_linearly_between_evaluations():
    from bench.gsweep_bench import budget_grid, on_grid

    curve = [(c["rollouts_generated"], c["heldout_accuracy"]) for c in CURVE]
    assert on_grid(curve, np.array([2000.0, 4000.0])) == pytest.approx([0.48, 0.60])  # 0.50 -> 0.46 halfway: 0.48
    assert budget_grid(2_500).tolist() == [0, 1000, 2000, 2500]  # every EVAL_EVERY, and the budget itself
    with pytest.raises(ValueError, match="ending at 4,000 rollouts cannot be read at 5,000"):
        on_grid(curve, np.array([5000.0]))


def test_a_spread_of_one_seed_prints_its_value_not_a_nan_se():
    from bench.common import mean_se
    from bench.report import _spread

    assert _spread(mean_se([0.733])) == "0.733 (1 seed)"
    assert _spread(mean_se([0.7, 0.8])) == "0.75 +- 0.05 (0.7-0.8)"
    assert _spread({}) == "n/a"


def test_verify_ab_measures_two_checkouts_in_one_run():
    """#64: `grpo bench verify_ab --against COMMIT` judges the same clean set with this checkout's verifier
    and COMMIT's, each in its own process; against HEAD both sides give the same verdicts."""
    from bench import verify_ab

    result = verify_ab.run("HEAD", n=40, rounds=1)
    assert result["new"]["ok"] == result["old"]["ok"] and result["new"]["ok"][0] > 0
    assert result["median_new_over_old"] > 0 and len(result["old"]["commit"]) == 40
    with pytest.raises(ValueError, match="names no commit"):
        verify_ab.run("no-such-commit-xyz", n=4, rounds=1)


def test_frontier_bench_histogram_and_paired_gain_on_hand_computed_rates():
    """#59 calibration helpers: solved (>= 0.9) and hopeless (<= 0.05) shares, per-level means, the
    zero-variance share a group of 8 would have, and a paired gain with its SE."""
    import polars as pl

    from bench.frontier_bench import histogram, paired

    rates = pl.DataFrame({"id": ["a", "b", "c", "d"], "p": [1.0, 0.0, 0.5, 0.95]})
    problems = pl.DataFrame({"id": ["a", "b", "c", "d"], "level": [1, 10, 5, 1]})
    h = histogram(rates, problems)
    assert h["solved_share"] == 0.5 and h["hopeless_share"] == 0.25 and h["solved_or_hopeless_share"] == 0.75
    assert h["mean_by_level"] == {"1": 0.975, "5": 0.5, "10": 0.0} and sum(h["bins_tenths"]) == 4
    assert h["expected_zero_variance_share_g8"] == pytest.approx((1 + 1 + 2 * 0.5 ** 8 + 0.95 ** 8 + 0.05 ** 8) / 4)
    after = pl.DataFrame({"id": ["a", "b", "c", "d"], "p": [1.0, 0.5, 0.75, 0.95]})
    g = paired(rates, after)
    assert g["gain"] == pytest.approx(0.1875) and g["se"] == pytest.approx(0.1197, abs=1e-4) and g["problems"] == 4


def test_frontier_lr_grid_chooses_the_best_stable_rate_and_grows_at_an_edge():
    """#59 Amendment 2: an unstable run (a point below the start by > 2 SE) is never chosen; a choice
    at the top (bottom) of the grid asks for twice the highest (half the lowest) rate; inside, none."""
    from bench.frontier_lr import choose, stable

    def c(*accs, se=0.01):
        return [{"accuracy": a, "se": se} for a in accs]

    assert stable(c(0.70, 0.69, 0.75)) and not stable(c(0.70, 0.66, 0.90))  # 0.04 > 2 * hypot(0.01, 0.01)
    inside = choose({3e-5: c(0.70, 0.72), 6e-5: c(0.70, 0.78), 1.2e-4: c(0.70, 0.74)})
    assert inside == {"chosen": 6e-5, "extend": None, "stable": [3e-5, 6e-5, 1.2e-4]}
    # the best final is unstable: the next stable one is chosen, and it sits inside the grid
    assert choose({3e-5: c(0.70, 0.72), 6e-5: c(0.70, 0.75), 1.2e-4: c(0.70, 0.60, 0.90)})["extend"] is None
    top = choose({3e-5: c(0.70, 0.72), 6e-5: c(0.70, 0.75), 1.2e-4: c(0.70, 0.80)})
    assert top["chosen"] == 1.2e-4 and top["extend"] == pytest.approx(2.4e-4)
    assert choose({3e-5: c(0.70, 0.80), 6e-5: c(0.70, 0.75)})["extend"] == pytest.approx(1.5e-5)
    assert choose({3e-5: c(0.70, 0.60, 0.8)}) == {"chosen": None, "extend": 1.5e-5, "stable": []}


def test_frontier_plot_draws_waste_per_step_and_pass_and_accuracy_per_level(tmp_path):
    from bench.frontier_bench import plot

    steps = [{"rollouts_generated": 128 * (i + 1), "zero_variance_fraction": 0.5 - 0.01 * i} for i in range(6)]
    result = {"steps": steps, "zero_variance_per_pass": [{"rollouts": 384, "mixed": 0.5}, {"rollouts": 384, "mixed": 0.6}],
              "per_problem_evals": [{"rollouts": 0, "per_problem": {"a": 0.5, "b": 0.0}},
                                    {"rollouts": 768, "per_problem": {"a": 0.75, "b": 0.25}}]}
    out = plot(result, {"a": 1, "b": 10}, tmp_path / "f.png")
    assert out.exists() and out.stat().st_size > 10_000


def test_the_frontier_comparison_plan_states_its_smallest_resolvable_effect_before_any_run(tmp_path):
    """Training spread 0.02 per seed over 3 seeds leads (0.0115 against an evaluation SE of about
    0.004 for 100 problems at 0.5, k = 32): the smallest effect is read with t at 2 degrees of freedom."""
    import json

    from bench.curriculum_stats import smallest_resolvable
    from bench.frontier_bench import comparison_plan, training_spread

    per_seed = [{"mean": m, "se": 0.01} for m in (0.0, 0.02, 0.04)]  # sd 0.02
    (tmp_path / "curriculum-x.json").write_text(json.dumps({"compare": {"A": {"paired_minus": {"B": {"per_seed": per_seed}}}}}))
    spread = training_spread(tmp_path)
    assert spread == {"pairs": 1, "median": pytest.approx(0.02), "p75": pytest.approx(0.02)}
    plan = comparison_plan({str(i): 0.5 for i in range(100)}, spread)
    se = 0.02 / 3 ** 0.5
    assert plan["median"]["se_training"] == pytest.approx(se) and plan["median"]["df"] == 2
    assert plan["median"]["smallest_resolvable"] == pytest.approx(smallest_resolvable(se, 2))
