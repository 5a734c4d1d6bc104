"""Issue #36: imports run one way, CLI -> bench -> pipelines -> grpo_train -> grpo_data, and no module
imports itself back through another (lazy imports inside functions count: they fail the same way
when two modules need each other's names)."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("grpo_data", "grpo_train", "pipelines", "bench")


def layer(module: str) -> int:
    """0 the library's base, up to 4 the command line (`grpo`: pipelines.cli and pipelines.commands)."""
    if module == "pipelines.cli" or module.startswith("pipelines.commands"):
        return 4
    return {"bench": 3, "pipelines": 2, "grpo_train": 1, "grpo_data": 0}[module.split(".")[0]]


def import_graph() -> dict[str, set[str]]:
    graph = {}
    for pkg in PACKAGES:
        for path in (ROOT / pkg).rglob("*.py"):
            module = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
            deps = set()
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                    deps.add(node.module)  # and `from pkg import module` names the module itself:
                    deps.update(f"{node.module}.{alias.name}" for alias in node.names)
                elif isinstance(node, ast.Import):
                    deps.update(alias.name for alias in node.names)
            graph[module] = {d for d in deps if d.split(".")[0] in PACKAGES}
    return {module: {d for d in deps if d in graph} for module, deps in graph.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    found, state = [], {}

    def visit(node, path):
        state[node] = "open"
        path.append(node)
        for dep in sorted(graph.get(node, ())):
            if dep not in graph:
                continue
            if state.get(dep) == "open":
                found.append(path[path.index(dep):] + [dep])
            elif dep not in state:
                visit(dep, path)
        path.pop()
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node, [])
    return found


def test_the_checker_finds_a_circle_and_an_upward_arrow():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c", "a"]]
    assert cycles({"a": {"b"}, "b": set()}) == []
    assert layer("pipelines.commands.bench") > layer("bench.e2e_bench") > layer("pipelines.stages") > layer("grpo_train.trainer")


def test_no_module_imports_itself_back():
    graph = import_graph()
    assert "grpo_data.generation.engines" in graph and "grpo_data.generation.engine_base" in graph["grpo_data.generation.vllm_engine"]
    assert cycles(graph) == []


def test_every_import_points_down_the_layers():
    graph = import_graph()
    upward = sorted(f"{m} -> {d}" for m, deps in graph.items() for d in deps
                    if d in graph and layer(d) > layer(m))
    assert upward == []


ROOMS = ("grpo_data.tables", "grpo_data.verify", "grpo_data.generation", "grpo_data.curriculum")


def test_every_module_of_grpo_data_lives_in_a_room_or_beside_the_profiler():
    top = sorted(p.stem for p in (ROOT / "grpo_data").glob("*.py"))
    assert top == ["__init__", "lazy", "profile_chunks", "profile_config", "profile_metadata", "profile_parts", "profiler",
                   "ray_profile"]
    rooms = sorted(p.name for p in (ROOT / "grpo_data").iterdir() if (p / "__init__.py").exists())
    assert rooms == ["curriculum", "generation", "integrations", "tables", "verify"]


BESIDE_THE_ROOMS = ("grpo_data.profile", "grpo_data.ray_profile", "grpo_data.integrations")


def test_no_room_imports_from_beside_the_profiler():
    """The rooms are the base: what a room reads of a profile (its columns, its reader, the seeding
    scheme) lives in a room, so the profiler and the plug-ins sit on top and nothing reaches up."""
    graph = import_graph()
    assert "grpo_data.profile_parts" in graph["grpo_data.profiler"]  # the checker sees the profiler's arrows
    upward = sorted(f"{m} -> {d}" for m, deps in graph.items() if m.startswith(ROOMS)
                    for d in deps if d.startswith(BESIDE_THE_ROOMS))
    assert upward == []


def test_reading_a_profile_loads_no_verifier_or_engine(tmp_path):
    """A card, a shard set or a report reads a profile back (`read_profile`, `read_rejects`) and
    merging one writes it: neither pays for math-verify, vLLM or torch."""
    import subprocess
    import sys

    code = ("import sys\nimport polars as pl\n"
            "from grpo_data.tables.profile_table import REQUIRED_COLUMNS, read_profile, read_rejects\n"
            "import grpo_data.profile_parts\n"
            f"path = {str(tmp_path / 'p.parquet')!r}\n"
            "pl.DataFrame({c: [1] for c in REQUIRED_COLUMNS}).write_parquet(path)\n"
            "table, meta = read_profile(path)\n"
            "assert table.height == 1 and meta == {} and read_rejects(path).height == 0\n"
            "from grpo_data.profile_parts import merge_parts, parts_dir\n"
            "parts_dir(path).mkdir()\n"
            "pl.DataFrame({c: [1] for c in REQUIRED_COLUMNS}).with_columns(id=pl.lit('a')).write_parquet(parts_dir(path) / 'shard0000-of-0001-000000.parquet')\n"
            "assert merge_parts(path).height == 1 and read_profile(path)[1]['rows'] == 1\n"
            "print(sorted(m for m in ('vllm', 'torch', 'datasets', 'math_verify', 'sympy', 'transformers') if m in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0 and out.stdout.strip() == "[]", out.stderr


def test_each_rooms_public_names_resolve_and_its_docstring_lists_every_module():
    import importlib

    for room in ROOMS:
        package = importlib.import_module(room)
        modules = sorted(p.stem for p in (ROOT / room.replace(".", "/")).glob("*.py") if p.stem != "__init__")
        listed = [line.split()[0] for line in package.__doc__.splitlines() if line.startswith("    ") and line[4] != " "]
        assert sorted(listed) == modules, room
        assert package.__all__ and dir(package) == package.__all__
        for name in package.__all__:
            value = getattr(package, name)
            assert getattr(value, "__name__", name) == name, f"{room}.{name}"
        with pytest.raises(AttributeError, match=f"{room}.*no_such_name"):
            package.no_such_name  # noqa: B018


def test_a_room_loads_no_engine_until_a_name_needs_one():
    """Reading tables, posteriors or rewards never pays for vLLM, torch or datasets: a fresh
    interpreter that imports every room and uses a table name has none of them loaded."""
    import subprocess
    import sys

    code = ("import sys, grpo_data.tables, grpo_data.verify, grpo_data.generation, grpo_data.curriculum\n"
            "from grpo_data.tables import write_json, to_table\n"
            "from grpo_data.curriculum import posterior\n"
            "from grpo_data.tables import io\n"
            "assert io.write_json is write_json\n"
            "print(sorted(m for m in ('vllm', 'torch', 'datasets', 'math_verify', 'transformers') if m in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "[]", out.stderr


def test_the_command_line_builds_its_parser_without_an_engine():
    """`grpo --help` (every command's flags, their defaults read from the dataclasses that own them)
    imports no engine: a flag's help that reaches for a default must find it in a light module."""
    import subprocess
    import sys

    code = ("import sys\nfrom pipelines.cli import build_parser\nbuild_parser()\n"
            "print(sorted(m for m in ('vllm', 'torch', 'ray', 'datasets', 'math_verify', 'deepspeed') if m in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "[]", out.stderr


MAX_LINES = 500


def long_modules(root: Path, limit: int = MAX_LINES) -> dict[str, int]:
    """Library modules (the four packages) over `limit` lines, by path."""
    return {str(path.relative_to(root)): n for pkg in PACKAGES for path in sorted((root / pkg).rglob("*.py"))
            if (n := len(path.read_text().splitlines())) > limit}


def test_the_line_counter_finds_a_long_module(tmp_path):
    (tmp_path / "bench").mkdir()
    (tmp_path / "bench" / "long.py").write_text("x = 1\n" * (MAX_LINES + 1))
    (tmp_path / "bench" / "short.py").write_text("x = 1\n" * MAX_LINES)
    assert long_modules(tmp_path) == {"bench/long.py": MAX_LINES + 1}


def test_no_library_module_is_over_500_lines():
    """A module a reader can hold in mind: split along a seam (as profiler -> profile_*.py) rather
    than grow past it."""
    assert long_modules(ROOT) == {}
