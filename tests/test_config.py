"""Training config: YAML and dotted overrides, unknown keys and bad combinations refused with
the key named, numbers, and the settings a config hands the scheduler and the profile check."""

import pytest

from grpo_train.config_io import dump_config, load_config


def test_config_overrides_unknown_keys_and_bad_combinations(tmp_path):
    f = tmp_path / "c.yaml"
    f.write_text("train:\n  rollout: {group_size: 4}\n  run: {steps: 7}\n")
    cfg = load_config(f, ["algo.clip_high=0.3", "optim.betas=[0.9, 0.95]"])
    assert cfg.rollout.group_size == 4 and cfg.run.steps == 7 and cfg.algo.clip_high == 0.3
    assert cfg.optim.betas == (0.9, 0.95)
    assert "group_size: 4" in dump_config(cfg)
    with pytest.raises(ValueError, match="unknown config key\\(s\\) rollout.group; accepted under rollout: engine"):
        load_config(None, ["rollout.group=4"])
    with pytest.raises(ValueError, match="group_size must be >= 2"):
        load_config(None, ["rollout.group_size=1"])
    with pytest.raises(ValueError, match="offline_band needs data.profile"):
        load_config(None, ["scheduler.name=offline_band"])
    with pytest.raises(ValueError, match="algo.advantage must be one of"):
        load_config(None, ["algo.advantage=ppo"])


def test_config_numbers_written_without_a_dot_are_numbers_and_bad_ones_name_the_key(tmp_path):
    # YAML reads 3e-5 (no dot) as a string; it reached AdamW as '3e-5' and failed inside torch
    f = tmp_path / "c.yaml"
    f.write_text("train:\n  optim: {lr: 3e-5}\n")
    assert load_config(f).optim.lr == pytest.approx(3e-5)
    cfg = load_config(None, ["optim.lr=1e-4", "run.max_rollouts=7e3", "scheduler.max_prior_k=null"])
    assert cfg.optim.lr == pytest.approx(1e-4) and cfg.run.max_rollouts == 7000 and type(cfg.run.max_rollouts) is int
    assert cfg.scheduler.max_prior_k is None
    # inside tuples too, and integers stay exact
    cfg = load_config(None, ["optim.betas=[0.9, 1e-3]", "rollout.stop_token_ids=[1e2]", "run.seed=12345678901234567891"])
    assert cfg.optim.betas == (0.9, 0.001) and cfg.rollout.stop_token_ids == (100,) and cfg.run.seed == 12345678901234567891
    # one stop string is one stop string (it was split into its characters downstream)
    assert load_config(None, ["rollout.stop='###'", "rollout.stop_token_ids=7"]).rollout.stop == ("###",)
    for bad, message in [("optim.lr=fast", "optim.lr: expected a number, got 'fast'"),
                         ("optim.lr=true", "optim.lr: expected a number, got True"),
                         ("optim.lr=[1]", "optim.lr: expected a number"),
                         ("rollout.group_size=2.5", "rollout.group_size: expected an integer, got 2.5"),
                         ("optim.betas=[0.9]", "optim.betas: expected 2 values, got 1"),
                         ("rollout.stop_token_ids=[7, x]", "rollout.stop_token_ids[1]: expected an integer, got 'x'"),
                         ("diagnostics.enabled='false'", "diagnostics.enabled: expected true or false, got 'false'"),
                         ("run.eval_first=0", "run.eval_first: expected true or false, got 0"),
                         ("optim.lr=.nan", "optim.lr: expected a finite number, got nan"),
                         ("optim.betas=0.9", "optim.betas: expected a list, got 0.9"),
                         ("run.seed=2.5", "run.seed: expected an integer, got 2.5")]:
        with pytest.raises(ValueError, match=message.replace("[", "\\[")):
            load_config(None, [bad])


def test_a_profile_sampled_unlike_training_is_named():
    from grpo_train.config_io import config_from_tree
    from grpo_train.scheduler_start import profile_mismatches

    cfg = config_from_tree({}, ["model=runs/policy", "rollout.temperature=0.7", "rollout.max_tokens=1024"])
    meta = {"model": "runs/policy/", "config": {"sampling": {"temperature": 1.0, "top_p": 1.0, "max_tokens": 1024}}}
    assert profile_mismatches(meta, cfg) == ["temperature 1.0 in the profile, 0.7 in training"]
    meta["model"] = "runs/other"
    assert profile_mismatches(meta, cfg)[-1] == "model runs/other in the profile, runs/policy in training"
    assert profile_mismatches({}, cfg) == []


def test_refresh_trigger_refuses_an_unknown_name():
    from grpo_train.metrics import refresh_triggered

    with pytest.raises(ValueError, match="centre or surprise"):
        refresh_triggered("drift", 0.25, {"n_correct": 0, "generated_rollouts": 1}, 0.5)


def test_pass_epoch_and_surprise_trigger_reach_the_band_scheduler():
    from grpo_train.scheduler_start import scheduler_kwargs

    cfg = load_config(None, ["scheduler.epoch=pass", "scheduler.skip_below=0.3", "scheduler.refresh_trigger=surprise"])
    assert scheduler_kwargs(cfg.scheduler)["epoch"] == "pass" and scheduler_kwargs(cfg.scheduler)["skip_below"] == 0.3
    with pytest.raises(ValueError, match="pool, band or pass"):
        load_config(None, ["scheduler.epoch=passes"])
    with pytest.raises(ValueError, match="centre or surprise"):
        load_config(None, ["scheduler.refresh_trigger=stale"])
    # a surprise needs the band scheduler's predictions, and group sizes fixed before the answers are seen
    with pytest.raises(ValueError, match="needs scheduler.name=band .got uniform"):
        load_config(None, ["scheduler.refresh_trigger=surprise", "scheduler.name=uniform"])
    with pytest.raises(ValueError, match="rollout.sizing=fixed .got screen"):
        load_config(None, ["scheduler.refresh_trigger=surprise", "rollout.sizing=screen"])


def test_a_scheduler_setting_the_chosen_scheduler_ignores_is_refused():
    """Unknown settings are errors everywhere: a band-only setting under uniform (or a refresh, which
    only the band scheduler can do) is refused by name; uniform and offline_band take
    without_replacement, and every scheduler keeps lo/hi, the band the trace measures."""
    from grpo_train.config_io import load_config
    from grpo_train.scheduler_start import scheduler_kwargs

    with pytest.raises(ValueError, match=r"scheduler.name=uniform does not use scheduler.decay, scheduler.dry: leave"):
        load_config(None, ["scheduler.name=uniform", "scheduler.decay=0.9", "scheduler.dry=widen"])
    with pytest.raises(ValueError, match=r"scheduler.name=greso does not use scheduler.refresh_every"):
        load_config(None, ["scheduler.name=greso", "scheduler.refresh_every=5"])
    with pytest.raises(ValueError, match=r"scheduler.name=pools does not use scheduler.without_replacement"):
        load_config(None, ["scheduler.name=pools", "scheduler.without_replacement=false"])
    cfg = load_config(None, ["scheduler.name=uniform", "scheduler.without_replacement=false", "scheduler.lo=0.3"])
    assert scheduler_kwargs(cfg.scheduler) == {"without_replacement": False}
    cfg = load_config(None, ["scheduler.name=offline_band", "data.profile=p.parquet", "scheduler.without_replacement=false"])
    assert scheduler_kwargs(cfg.scheduler) == {"lo": 0.2, "hi": 0.8, "without_replacement": False}
    assert load_config(None, ["scheduler.name=uniform", "scheduler.decay=0.99"]).scheduler.unused_settings() == []
