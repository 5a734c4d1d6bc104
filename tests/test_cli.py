import subprocess
import sys

import pytest

from pipelines.cli import SUBCOMMANDS, build_parser


def test_help_lists_every_subcommand():
    proc = subprocess.run([sys.executable, "-m", "pipelines.cli", "--help"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0
    for name in SUBCOMMANDS:
        assert name in proc.stdout


def test_unknown_subcommand_and_bad_flag_fail_clearly(capsys):
    parser = build_parser()
    with pytest.raises(SystemExit) as exc:
        parser.parse_args(["frobnicate"])
    assert exc.value.code == 2
    assert "invalid choice: 'frobnicate'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        parser.parse_args(["verify", "x.jsonl", "--no-such-flag"])
    assert "unrecognized arguments: --no-such-flag" in capsys.readouterr().err


def test_deepspeed_launcher_puts_local_rank_before_the_subcommand():
    args = build_parser().parse_args(["--local_rank=1", "train", "--config", "x.yaml"])
    assert args.command == "train" and args.local_rank == 1


def test_train_with_a_missing_model_is_one_line_naming_the_path():
    proc = subprocess.run([sys.executable, "-m", "pipelines.cli", "train", "-o", "model=/nonexistent"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    lines = [line for line in proc.stderr.splitlines() if line.startswith("grpo train:")]
    assert len(lines) == 1 and "/nonexistent" in lines[0] and "Traceback" not in proc.stderr


def test_train_with_missing_data_names_the_key_and_what_to_run(tmp_path):
    from grpo_train.config_io import load_config
    from grpo_train.trainer import check_inputs

    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "config.json").write_text("{}")
    cfg = load_config(None, [f"model={tmp_path / 'm'}", f"data.train={tmp_path / 'no.parquet'}", "data.heldout=null"])
    with pytest.raises(FileNotFoundError, match=r"data.train .*no.parquet does not exist: write it with grpo load"):
        check_inputs(cfg)


def test_gpu_example_config_names_its_model_and_data():
    """`grpo train --config pipelines/gpu_example.yaml` trains what the file names, not the toy."""
    from grpo_train.config_io import load_config

    cfg = load_config("pipelines/gpu_example.yaml")
    assert cfg.model == "deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B"
    assert cfg.data.train == "runs/dsr/data/train.parquet" and cfg.data.heldout == "runs/dsr/data/heldout.parquet"
    assert cfg.data.profile == "runs/dsr/profile.parquet" and cfg.run.out == "runs/dsr/train"
    assert cfg.rollout.temperature == 0.6 and cfg.rollout.max_tokens == 8192
    assert cfg.rollout.vllm.max_model_len is not None and cfg.optim.gradient_checkpointing
    demo = load_config("pipelines/arith_demo.yaml")
    assert demo.model == "runs/demo/policy-warm" and demo.data.train == "runs/demo/world/train.parquet"
    # the demo trains with the sampler chosen on validation (uniform + DAPO), from no profile
    assert demo.scheduler.name == "uniform" and demo.rollout.dynamic_resampling and demo.data.profile is None


def test_documented_launch_commands_are_the_ones_the_code_runs():
    """The README, the YAML comments and `grpo train --help` show the launch that
    pipelines.pipeline.launch_command builds (and the 2-rank test runs)."""
    from pathlib import Path

    from pipelines.pipeline import launch_command

    cmd = launch_command(8, Path("pipelines/gpu_example.yaml"))
    documented = "deepspeed " + " ".join(cmd[1:-1])  # without the pipeline's own --resume
    assert documented == "deepspeed --num_gpus 8 --module pipelines.cli train --config pipelines/gpu_example.yaml"
    for path in ("README.md", "pipelines/gpu_example.yaml", "pipelines/commands/train.py"):
        text = Path(path).read_text()
        assert documented in text, path
        assert "deepspeed --num_gpus 8 -m " not in text, path  # the launcher has no -m
