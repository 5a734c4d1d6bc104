"""Prose from results (issue #59, item 5): every figure quoted in README and docs/results must be a
number stored in the result files its section names.

A checked Markdown file names its sources in HTML comments, which hold from their line (a table row
may end with one) until the next one:

    <!-- results: bench/results/frontier.json bench/results/frontier-calibration-1.json -->

Paths are relative to the repository and may be globs (`bench/results/curriculum-runs/**/*.json`); a
source may name subtrees, `file.json#compare.*.final_accuracy,start` (dotted keys, `*` for every key
or item at its level, an integer for one item of a list: `evals.-1`), so that a section checks against the numbers it quotes and not a whole run.
Sources are kept narrow: `chance_acceptance` measures the share of figures 0.000-1.000 a section's
sources would accept, and the test bounds it.
`<!-- results: none -->` opens a stretch that quotes no measured figure. A figure is a decimal with
at least two places (0.673, +0.052, 1.02x, 3,667.5). It is sourced when a number stored in those
files (anywhere in their JSON, per-problem maps and draws left out) rounds to it at the places it is
printed, or its negative does (a difference quoted the other way round). Integers (counts, budgets,
years), numbers in code spans and thresholds (a goal's ">= 0.15") are not read. A figure no result
stores (a hand computation from stored numbers, a figure from outside this project) is named with its
reason on its line: `<!-- not-stored: 1.34 1.49: amortized by hand from the stored ratios -->`; a
reason with no figure named (`<!-- not-stored: : REASON -->`) covers the whole of the next line.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHECKED = ("README.md", "docs/results/index.md", "docs/results/frontier.md")
SKIPPED_KEYS = frozenset({"per_problem", "per_problem_final", "per_problem_start", "per_problem_evals", "draws",
                          "trace", "steps", "curve"})
SOURCES = re.compile(r"<!--\s*results:\s*(.*?)\s*-->")
NOT_STORED = re.compile(r"<!--\s*not-stored:\s*([^:]*?)\s*:\s*(.+?)\s*-->")
THRESHOLD = re.compile(r"(?:>=|<=|>|<|≥|≤|within)\s*$")
CODE = re.compile(r"`[^`]*`")
# a decimal with >= 2 places (a ratio's "1.02x" too), not part of a version (1.2.3), a hash or an exponent (6.0e-5)
FIGURE = re.compile(r"(?<![\w.])[+-]?\d{1,3}(?:,\d{3})*\.\d{2,}(?![\d.]\d|e[-+]?\d|[A-Za-wyz_]|x\w)")


@dataclass(frozen=True)
class Unsourced:
    file: str
    line: int
    figure: str
    why: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.figure} {self.why}"


def figures(line: str) -> list[str]:
    """The figures a line of prose quotes (code spans, comments and thresholds left out)."""
    line = CODE.sub(" ", re.sub(r"<!--.*?-->", " ", line))
    return [m.group(0) for m in FIGURE.finditer(line) if not THRESHOLD.search(line[: m.start()])]


def stored_numbers(tree, skip: frozenset = SKIPPED_KEYS) -> list[float]:
    """Every number in a parsed JSON tree, the subtrees under `skip` keys left out."""
    out: list[float] = []
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            stack.extend(v for k, v in node.items() if k not in skip)
        elif isinstance(node, list):
            stack.extend(node)
        elif isinstance(node, (int, float)) and not isinstance(node, bool):
            out.append(float(node))
    return out


def sourced(figure: str, numbers: list[float]) -> bool:
    """Whether a stored number rounds to `figure` at its printed places (either sign)."""
    text = figure.replace(",", "")
    places = len(text.split(".", 1)[1])
    value = float(text)
    half = 0.5 * 10 ** -places + 1e-9
    return any(abs(v - value) <= half or abs(-v - value) <= half for v in numbers)


def select(tree, path: str) -> list:
    """The subtrees at a dotted key path; `*` stands for every key (or item) at its level."""
    nodes = [tree]
    for part in path.split("."):
        nxt = []
        for node in nodes:
            if part == "*":
                nxt.extend(node.values() if isinstance(node, dict) else node if isinstance(node, list) else [])
            elif isinstance(node, dict) and part in node:
                nxt.append(node[part])
            elif isinstance(node, list) and part.lstrip("-").isdigit() and -len(node) <= int(part) < len(node):
                nxt.append(node[int(part)])
        nodes = nxt
    return nodes


def _load(patterns: list[str], root: Path, cache: dict) -> tuple[list[float], list[str]]:
    """The numbers of every source: `glob` (whole files) or `glob#path,path` (only those subtrees).
    A glob matching no file, or a key path matching nothing in any of the glob's files, is reported
    missing."""
    numbers, missing = [], []
    for pattern in patterns:
        glob, _, keys = pattern.partition("#")
        paths, hits = sorted(root.glob(glob)), {}
        if not paths:
            missing.append(pattern)
        for path in paths:
            if not isinstance(cache.get(path), (dict, list)):
                cache[path] = json.loads(path.read_text())
            if not keys:
                numbers.extend(stored_numbers(cache[path]))
                continue
            for key in keys.split(","):
                found = select(cache[path], key)
                hits[key] = hits.get(key, 0) + len(found)
                numbers.extend(n for sub in found for n in stored_numbers(sub))
        missing += [f"{glob}#{key}" for key in keys.split(",") if keys and paths and not hits.get(key)]
    return numbers, missing


def chance_acceptance(numbers: list[float], places: int = 3) -> float:
    """The share of figures 0.000 ... 1.000 (at `places`) a set of stored numbers would source: how
    narrow a section's sources are (near 1, any figure passes and the check says nothing)."""
    import numpy as np

    stored = np.unique(np.abs(np.asarray(numbers, dtype=np.float64)))
    if stored.size == 0:
        return 0.0
    grid = np.arange(10**places + 1) / 10**places
    at = np.clip(np.searchsorted(stored, grid), 1, stored.size - 1) if stored.size > 1 else np.zeros(grid.size, int)
    near = np.minimum(np.abs(stored[at] - grid), np.abs(stored[np.maximum(at - 1, 0)] - grid))
    return float(np.mean(near <= 0.5 * 10**-places + 1e-9))


def sections(text: str, root: Path = ROOT, cache: dict | None = None, places: int = 3) -> list[tuple[int, str, float]]:
    """Each `<!-- results: ... -->` of a text: its line, its sources, and their chance acceptance of
    figures printed at `places` decimals (a two-place figure's tolerance is ten times a three-place one's)."""
    cache = {} if cache is None else cache
    out = []
    for no, line in enumerate(text.splitlines(), start=1):
        found = SOURCES.search(line)
        if found and found.group(1).split() != ["none"]:
            numbers, _ = _load(found.group(1).split(), root, cache)
            out.append((no, found.group(1), chance_acceptance(numbers, places)))
    return out


def check_text(text: str, name: str, root: Path = ROOT, cache: dict | None = None) -> list[Unsourced]:
    """The figures of one Markdown text that no named result stores."""
    cache = {} if cache is None else cache
    out: list[Unsourced] = []
    numbers: list[float] | None = None
    excused = False
    for no, line in enumerate(text.splitlines(), start=1):
        found = SOURCES.search(line)
        if found:  # from this line on (a table row names its sources in a comment of its own)
            spec = found.group(1).split()
            numbers = []
            if spec != ["none"]:
                numbers, missing = _load(spec, root, cache)
                out += [Unsourced(name, no, p, "names a results file that does not exist") for p in missing]
            line = SOURCES.sub(" ", line)
        named: set[str] = set()
        for m in NOT_STORED.finditer(line):
            if not m.group(1):  # the whole next line
                excused = True
            named |= set(m.group(1).split())
        if NOT_STORED.fullmatch(line.strip()) and excused:
            continue
        for fig in figures(line):
            if excused or fig in named:
                continue
            if numbers is None:
                out.append(Unsourced(name, no, fig, "is quoted before any <!-- results: ... --> comment"))
            elif not sourced(fig, numbers):
                out.append(Unsourced(name, no, fig, "is stored in none of the section's results files"))
        excused = False
    return out


def check(files: tuple[str, ...] = CHECKED, root: Path = ROOT) -> list[Unsourced]:
    """Every unsourced figure of the checked files."""
    cache: dict = {}
    return [u for f in files for u in check_text((root / f).read_text(), f, root, cache)]
