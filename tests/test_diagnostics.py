"""Health detectors on synthetic metric streams: each fires on the failure it names, stays quiet on a
healthy run and on the others' failures, and warns once per episode."""

import numpy as np
import pytest

from grpo_train.diagnostics import DETECTORS, DiagnosticsConfig, Health


def healthy(step: int, rng: np.random.Generator) -> dict:
    return {"kind": "train", "step": step, "zero_variance_fraction": 0.5 + rng.normal(0, 0.03),
            "batch_pass_rate": 0.5 + rng.normal(0, 0.03), "reward_mean": 0.5 + rng.normal(0, 0.05),
            "entropy": 1.0 + rng.normal(0, 0.05), "distinct_wrong_ratio": 0.8, "kl": 0.01 + rng.normal(0, 0.001),
            "grad_norm": 1.0 + rng.normal(0, 0.1), "completion_len_mean": 20 + rng.normal(0, 1),
            "truncated_fraction": 0.0, "band_occupancy": 0.3, "underfilled": False}


# the last 10 of 30 steps go wrong in one way each
FAILURES = {
    "reward_collapse": {"zero_variance_fraction": 0.99, "batch_pass_rate": 0.99},
    "entropy_collapse": {"entropy": 0.1, "distinct_wrong_ratio": 0.2},
    "kl_blowup": {"kl": 0.5},
    "oscillation": "oscillate",
    "length_runaway": {"completion_len_mean": 60.0, "truncated_fraction": 0.4},
    "zero_variance_surge": {"zero_variance_fraction": 0.85},
    "band_dry": {"band_occupancy": 0.001, "underfilled": True},
}


def stream(failure: str | None, steps: int = 30, bad_from: int = 20) -> list[dict]:
    rng = np.random.default_rng(0)
    out = []
    for step in range(1, steps + 1):
        r = healthy(step, rng)
        if failure is not None and step > bad_from:
            change = FAILURES[failure]
            if change == "oscillate":
                r["reward_mean"] = 0.1 if step % 2 else 0.9
                r["grad_norm"] = 0.1 if step % 2 else 5.0
            else:
                r.update(change)
        out.append(r)
    return out


def run(records, cfg=DiagnosticsConfig()):
    health = Health(cfg)
    fired = []
    for r in records:
        fired += health.observe(r)
    return fired


def test_a_healthy_run_raises_nothing():
    assert run(stream(None, steps=60)) == []


@pytest.mark.parametrize("failure", sorted(FAILURES))
def test_each_failure_fires_its_own_detector_once(failure):
    records = stream(failure)
    fired = run(records)
    names = {w.name for w in fired}
    # a collapse to all-right groups is also a surge of zero-variance groups: that pair may fire together
    allowed = {failure} | ({"zero_variance_surge"} if failure == "reward_collapse" else set())
    assert failure in names and names <= allowed, names
    assert sum(w.name == failure for w in fired) == 1  # once per episode, not every step
    first = next(w for w in fired if w.name == failure)
    assert 20 < first.step <= 30 and first.message.count("Try:") == 1
    assert records[-1][f"diag_{failure}"] == 1.0  # the metric marks every step it is on
    assert records[10][f"diag_{failure}"] == 0.0


def test_every_detector_has_a_failure_stream():
    assert set(DETECTORS) == set(FAILURES)


def test_a_detector_warns_again_only_after_a_full_healthy_window():
    rng = np.random.default_rng(1)
    records = [healthy(s, rng) for s in range(1, 61)]
    for r in records[14:18] + records[20:23] + records[40:44]:  # two episodes close together, one later
        r["kl"] = 0.5
    fired = [w for w in run(records) if w.name == "kl_blowup"]
    # the window mean passes 0.1 at the second spike (steps 16 and 42); the episode at steps 21-23 comes
    # back before a full healthy window has passed: no new warning
    assert [w.step for w in fired] == [16, 42]


def test_kl_growth_fires_on_a_jump_not_on_an_ordinary_rise():
    records = stream(None, steps=40, bad_from=30)
    for r in records[30:]:
        r["kl"] = 0.05  # under kl_max 0.1, but 5x the window before
    assert [w.name for w in run(records)] == ["kl_blowup"]
    warmup = stream(None)
    for i, r in enumerate(warmup):
        r["kl"] = min(0.015, 0.0015 * i)  # from 0 to a normal level in the second window: the first never counts
    assert not run(warmup)
    assert not run(records, DiagnosticsConfig(kl_growth=10))
    ramp = stream(None, steps=300)
    for i, r in enumerate(ramp):
        r["kl"] = 0.02 * i / 300  # KL rising steadily from 0, as every run's does
    assert not run(ramp)
    # a resumed run is handed its earlier records, and sees the jump the same way
    before = Health(DiagnosticsConfig())
    assert [w.name for r in records[:38] for w in before.observe(r)] == ["kl_blowup"]
    health = Health(DiagnosticsConfig(), history=records[:38])
    assert [w.name for r in records[38:] for w in health.observe(r)] == []  # already on at step 38: no repeat
    fresh = Health(DiagnosticsConfig(), history=[{k: v for k, v in r.items() if not k.startswith("diag_")}
                                                 for r in records[:30]])
    assert [w.name for r in records[30:] for w in fresh.observe(r)] == ["kl_blowup"]


def test_oscillation_ignores_a_trend_and_a_single_spike():
    records = stream(None)
    for i, r in enumerate(records):
        r["reward_mean"] = 0.2 + 0.02 * i  # steady improvement: 0.2 -> 0.8
    records[25]["grad_norm"] = 10.0  # one spike
    assert not run(records)


def test_disabled_diagnostics_do_nothing():
    assert run(stream("kl_blowup"), DiagnosticsConfig(enabled=False)) == []


def test_resume_inside_an_episode_does_not_warn_again():
    records = stream("kl_blowup")
    first = Health(DiagnosticsConfig())
    fired = [w for r in records[:25] for w in first.observe(r)]
    assert [w.name for w in fired] == ["kl_blowup"]
    resumed = Health(DiagnosticsConfig(), history=records[:25])  # records carry diag_kl_blowup
    assert [w for r in records[25:] for w in resumed.observe(r)] == []


def test_heldout_regression_fires_on_a_paired_drop_beyond_the_noise():
    from grpo_train.diagnostics import heldout_regression

    rng = np.random.default_rng(0)
    levels = np.repeat(np.arange(1, 5), 100)
    first = rng.binomial(4, np.repeat([0.9, 0.7, 0.5, 0.2], 100)) / 4
    cfg = DiagnosticsConfig()
    assert heldout_regression(first, first, cfg) is None
    noisy = np.clip(first + rng.choice([-0.25, 0.0, 0.25], size=first.size), 0, 1)  # resampling noise, no trend
    assert heldout_regression(first, noisy, cfg) is None
    worse = first.copy()
    worse[levels == 1] -= 0.5  # level 1 loses half its accuracy: -0.125 overall
    message = heldout_regression(first, worse, cfg, levels)
    assert message is not None and message.startswith(f"held-out regression: accuracy fell from {first.mean():.3f} at the start")
    assert "(-0.125," in message and "most on level(s) 1 (-0.500)" in message and "optim.lr" in message
    assert heldout_regression(first, worse, DiagnosticsConfig(regression_min_drop=0.2)) is None  # too small to count
    assert heldout_regression(first, worse[:-1], cfg) is None  # not the same problems: no comparison
    nulls = levels.astype(object)
    nulls[:50] = None  # half of level 1 has no level: left out of the per-level part, still in the total
    with_nulls = heldout_regression(first, worse, cfg, nulls)
    assert "(-0.125," in with_nulls and "most on level(s) 1 (-0.500)" in with_nulls
    floats = levels.astype(float)
    floats[:50] = np.nan  # a polars integer column with nulls reads back as floats with NaN
    assert "most on level(s) 1 (-0.500)" in heldout_regression(first, worse, cfg, floats)


def test_the_trainer_marks_an_evaluation_that_regressed(tmp_path):
    from types import SimpleNamespace

    import polars as pl

    from grpo_train.config_io import load_config
    from grpo_train.trainer import Trainer

    heldout = pl.DataFrame({"id": [f"p{i}" for i in range(200)], "level": [1 + i % 2 for i in range(200)]})
    (tmp_path / "evals").mkdir()
    heldout.with_columns(pl.Series("n_correct", [4] * 200), pl.lit(4).alias("k")).write_parquet(
        tmp_path / "evals" / "step-000000.parquet")
    trainer = SimpleNamespace(cfg=load_config(None, []), run_dir=tmp_path, heldout=heldout, step=20)
    record = {"warnings": [{"name": "kl_blowup", "message": "x"}]}  # a warning already there is kept
    Trainer._check_regression(trainer, record, np.array([1.0] * 100 + [0.5] * 100))
    assert record["diag_heldout_regression"] == 1.0
    assert [w["name"] for w in record["warnings"]] == ["kl_blowup", "heldout_regression"]
    record = {}
    Trainer._check_regression(trainer, record, np.ones(200))
    assert record == {"diag_heldout_regression": 0.0}
    trainer.heldout = heldout.reverse()  # other problems (or order) than the first evaluation: no comparison
    record = {}
    Trainer._check_regression(trainer, record, np.zeros(200))
    assert record == {}
    # the baseline is the starting policy: a run that did not evaluate step 0 (run.eval_first=false)
    # is not compared with a later, already trained, evaluation
    (tmp_path / "evals" / "step-000000.parquet").rename(tmp_path / "evals" / "step-000007.parquet")
    trainer.heldout = heldout
    record = {"warnings": [{"name": "kl_blowup", "message": "x"}]}
    Trainer._check_regression(trainer, record, np.zeros(200))
    assert record == {"warnings": [{"name": "kl_blowup", "message": "x"}]}
