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
