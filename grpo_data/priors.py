"""Difficulty another model measured, read from a dataset's own columns as a discounted prior.

Public training sets publish difficulty for free. A prior spec names where a row's value lives and
how it becomes a pass rate; `read_prior` turns a table's column into per-problem pseudo-counts that
the scheduler and the adaptive profiler weigh beside this model's own samples (`merge_offline`: added
to a profile's counts, moved by the offset fitted between the two; alone where there is no profile):

    prior = read_prior("bigmath", frame_columns(problems), weight=4)
    prior.n_correct, prior.k            # (N,) pseudo-counts, NaN where a row has no value

Specs (`--prior` of grpo load / profile / shards, `data.prior` of grpo train, `prior=` of the plug-ins):

    NAME                     a preset below
    avg@K_<model>            a pass-rate column named the way this project's trl/verl shards and public
                             RL datasets name it: K samples of <model> (each row's own `k`, where the
                             table has one: K is only the most any row got in this project's shards,
                             the fewest in its `grpo export --format avg`)
    FIELD[:SCALE[:SAMPLES]]  any column (dotted for nested fields; a key holding a dot, such as
                             `DeepSeek-R1-Distill-Qwen-1.5B`, is matched whole): value / SCALE is the pass
                             rate; a negative SCALE means the column measures failure, pass rate
                             1 - value / |SCALE|; SAMPLES is how many samples stand behind each value
                             (unknown when left out). SCALE defaults to 1. A value written as a fraction
                             string `c/k` is c of k samples, read only with SCALE 1 or -1: under another
                             scale it is refused, so Polaris' `3/8` read with `lime` cannot become 0.996.

Presets, each with where its reading comes from (the sources were read on the Hub and in the authors'
code; a direction a source does not state is marked as this module's reading):

    bigmath        `llama8b_solve_rate`, a pass rate on [0, 1] from 64 samples of Llama-3.1-8B
                   (SynthLabsAI/Big-Math-RL-Verified card: "the percent of Llama-3.1-8B rollouts that
                   succeed (out of 64)", stored as float64 on [0, 1]).
    polaris        `difficulty`, "the pass rate of the problem estimated by Deepseek-R1-distill-Qwen-7B"
                   (POLARIS-Project/Polaris-Dataset-53K card), stored as strings `c/8` (the samples are
                   the denominator; thinking-machines' tinker-cookbook parses `3/8` the same way).
    skywork_1.5b, skywork_7b, skywork_32b
                   `extra_info.model_difficulty.DeepSeek-R1-Distill-Qwen-{1.5B,7B,32B}`, integers per
                   model (Skywork/Skywork-OR1-RL-Data card). SkyworkAI/Skywork-OR1's
                   or1_scripts/data_preprocess/download_and_filter_data_7b.py keeps 1 <= d <= 15, so
                   16 samples with 0 and 16 the all-same extremes. Reading d as the number of failed
                   samples (pass rate 1 - d/16) is this module's: the card and code do not state the
                   direction. The evidence: the name `difficulty`, and SkyworkAI/Skywork-OR1 issue #40,
                   where a user reads 16 as "16 incorrect on 16 attempts" and the maintainer's reply
                   does not correct it. If it is the number solved, use
                   `extra_info.model_difficulty.DeepSeek-R1-Distill-Qwen-7B:16:16`.
    lime           `difficulty`, d = 100 x (1 - successes / 128) from 128 samples of Qwen2.5-Math-7B at
                   temperature 0.6 (lime-nlp/DeepScaleR_Difficulty, MATH_Difficulty, orz_math_difficulty
                   cards). The cards give the formula; if a file names the column otherwise, use
                   `COLUMN:-100:128`.
    dart           `n_corrects_list` / `n_samples_list`, the correct and drawn samples of each synthesis
                   job (hkust-nlp/dart-math-pool-math-query-info card); pass rate sum(corrects) /
                   sum(samples), exact counts. The DART-Math paper (arXiv 2407.13690) synthesizes with
                   one 7B open-weight model, DeepSeekMath-7B-RL.
    avg            the table's one `avg@K_<model>` column (this project's trl/verl shards and `grpo export
                   --format avg` write it). Where it copies the very counts a scheduler starts from
                   (the shards' own `n_correct`/`k`, or the profile they came from), `merge_offline`
                   refuses it: the same samples would count twice.

An avg@K column (the `avg` preset or a spec naming one) is the mean of K samples per row in verl's
mean@N and published tables; a table that also has each row's sample count, `k` (or verl's
`extra_info.k`: this project's exports and shards, whose rows can have more or fewer samples than K),
is read with that count, so a row of 8 samples under an avg@2 name counts as 8 samples, not 2.

The discount. A value counts as k = min(samples, weight) pseudo-samples, (n_correct, k) = (rate x k, k),
with `weight` (DEFAULT_WEIGHT) far below what the source drew: another model's pass rate predicts this
policy's only up to a shared logit offset and a per-problem scatter. The offset is learned: from
this model's own counts where a profile covers the prior's problems (`fit_logit_offset`, in the
adaptive profiler as it samples and when a scheduler starts from both), and online as each
difficulty group's drift in the band scheduler (rows only the prior covers form groups of their own,
see `origin_groups`). The scatter is what the discount is for. Assumed, not measured: a logit scatter of 1 near p = 0.5 is a
pass-rate spread of 0.25, the spread of a Beta posterior after 3 samples (0.25 / (n + 1) = 1/16), so
another model's estimate weighs about as much as a 4-sample screen however many samples it drew.

Rows without a value (a null, NaN, an empty string, a missing nested key) are simply unprofiled: the
scheduler gives them their group's prior. A missing column, a value outside its range or one that is
not a number is a `PriorError` naming the column, the row and what to do.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

DEFAULT_WEIGHT = 4.0  # pseudo-samples another model's estimate counts for at most (see the module docstring)
AVG_COLUMN = re.compile(r"avg@(\d+)_(.+)")
SAMPLE_COUNT_FIELDS = ("k", "extra_info.k")  # an avg@K table's samples per row, where it states them
_FRACTION = re.compile(r"\s*(\d+(?:\.\d*)?)\s*/\s*(\d+(?:\.\d*)?)\s*")
_TOLERANCE = 1e-9  # rates this far outside [0, 1] are rounding, not errors


class PriorError(ValueError):
    """A prior spec that cannot be read from the data: unknown form, missing column, bad value."""


@dataclass(frozen=True)
class PriorSource:
    """Where a prior's values live and how one becomes a pass rate.

    name:     the preset or the spec as given.
    fields:   dotted paths read per row (two for `counts`: corrects, samples).
    kind:     "rate" (pass rate = value / scale), "difficulty" (1 - value / scale) or "counts"
              (sum of the first field's list over the second's).
    scale:    what a value is divided by (> 0).
    samples:  samples behind each value when the source states them (None: a fraction string's
              denominator, or unknown).
    model:    the model that drew them, as the source names it.
    citation: where this reading comes from.
    profile:  for an earlier profile read as a prior (`grpo_data.prior_profile`): its path, sha256,
              model and weights hash, as its metadata records them; None for a column.
    """

    name: str
    fields: tuple[str, ...]
    kind: str = "rate"
    scale: float = 1.0
    samples: float | None = None
    model: str | None = None
    citation: str = ""
    profile: dict | None = None


def _skywork(size: str) -> PriorSource:
    model = f"DeepSeek-R1-Distill-Qwen-{size}"
    return PriorSource(f"skywork_{size.lower()}", (f"extra_info.model_difficulty.{model}",), "difficulty", 16.0, 16.0,
                       model, "Skywork/Skywork-OR1-RL-Data extra_info.model_difficulty; 16 samples from Skywork-OR1's "
                       "filter script (keeps 1..15); d read as failures of 16 (this module's reading, not stated; "
                       "SkyworkAI/Skywork-OR1 issue #40 reads it so, uncorrected)")


PRESETS: dict[str, PriorSource] = {
    "bigmath": PriorSource("bigmath", ("llama8b_solve_rate",), "rate", 1.0, 64.0, "Llama-3.1-8B",
                           "SynthLabsAI/Big-Math-RL-Verified card: solve rate of 64 Llama-3.1-8B rollouts"),
    "polaris": PriorSource("polaris", ("difficulty",), "rate", 1.0, None, "DeepSeek-R1-Distill-Qwen-7B",
                           "POLARIS-Project/Polaris-Dataset-53K card: pass rate by DeepSeek-R1-Distill-Qwen-7B, "
                           "as c/8 strings"),
    "skywork_1.5b": _skywork("1.5B"),
    "skywork_7b": _skywork("7B"),
    "skywork_32b": _skywork("32B"),
    "lime": PriorSource("lime", ("difficulty",), "difficulty", 100.0, 128.0, "Qwen2.5-Math-7B",
                        "lime-nlp *_Difficulty cards: d = 100 x (1 - successes / 128), Qwen2.5-Math-7B, T = 0.6"),
    "dart": PriorSource("dart", ("n_corrects_list", "n_samples_list"), "counts", 1.0, None, "DeepSeekMath-7B-RL",
                        "hkust-nlp/dart-math-pool-*-query-info: correct and drawn samples per synthesis job"),
    "avg": PriorSource("avg", ("avg@K_<model>",), "rate", 1.0, None, None,
                       "this project's trl/verl shards: avg@K_<model>, the raw pass rate of K samples"),
}


# ---------------------------------------------------------------------------- specs
def parse_spec(spec: str) -> PriorSource:
    """The PriorSource a spec names (see the module docstring); `avg` is resolved against a table's
    columns later (`resolve`)."""
    spec = str(spec).strip()
    if not spec:
        raise PriorError("an empty prior spec; name a preset (" + ", ".join(PRESETS) + ") or FIELD[:SCALE[:SAMPLES]]")
    if spec in PRESETS:
        return PRESETS[spec]
    match = AVG_COLUMN.fullmatch(spec)
    if match:
        return PriorSource(spec, (spec,), "rate", 1.0, float(match.group(1)), match.group(2),
                           f"`{spec}`: the raw pass rate of {match.group(1)} samples of {match.group(2)}")
    field, *rest = spec.split(":")
    if len(rest) > 2 or not field:
        raise PriorError(f"prior {spec!r}: expected a preset ({', '.join(PRESETS)}), avg@K_<model> or "
                         "FIELD[:SCALE[:SAMPLES]], e.g. difficulty:-100:128")
    try:
        scale = float(rest[0]) if rest else 1.0
        samples = float(rest[1]) if len(rest) > 1 else None
    except ValueError:
        raise PriorError(f"prior {spec!r}: SCALE and SAMPLES must be numbers (FIELD[:SCALE[:SAMPLES]], e.g. "
                         "difficulty:-100:128)") from None
    if scale == 0 or not math.isfinite(scale) or (samples is not None and not samples >= 1):
        raise PriorError(f"prior {spec!r}: SCALE must be a non-zero number and SAMPLES at least 1")
    kind = "rate" if scale > 0 else "difficulty"
    return PriorSource(spec, (field,), kind, abs(scale), samples, None, f"column `{field}` as named by the user")


def resolve(source: PriorSource, names: Sequence[str]) -> PriorSource:
    """`source` with the `avg` preset bound to the table's one avg@K_<model> column; raises when it
    has none or several (naming them)."""
    if source.name != "avg":
        return source
    found = [n for n in names if AVG_COLUMN.fullmatch(n)]
    if len(found) != 1:
        which = f"several ({', '.join(found)}): name one as the prior" if found else "none"
        raise PriorError(f"prior avg reads the table's avg@K_<model> column, and it has {which}")
    return parse_spec(found[0])


def is_avg(source: PriorSource) -> bool:
    """Whether `source` reads an `avg@K_<model>` column (the `avg` preset or one named directly)."""
    return source.name == "avg" or AVG_COLUMN.fullmatch(source.fields[0]) is not None


def keep_patterns(spec: str | None) -> tuple[str, ...]:
    """Regular expressions of the top-level field names a loader keeps in each row's meta so that
    `spec` can be read from the canonical table later (every dot-prefix of each field, so a column
    named with a dot is kept whole)."""
    if not spec:
        return ()
    source = parse_spec(spec)
    if source.name == "avg":
        return (AVG_COLUMN.pattern, "k")
    out = ["k"] if is_avg(source) else []  # an avg column's per-row samples (`read_prior`)
    for path in source.fields:
        parts = path.split(".")
        out += [re.escape(".".join(parts[: i + 1])) for i in range(len(parts))]
    return tuple(dict.fromkeys(out))


# ---------------------------------------------------------------------------- columns
@dataclass(frozen=True)
class Columns:
    """A table's top-level fields: their names and a getter of one field's values (a list, one Python
    value per row); `where` names the table in errors."""

    names: tuple[str, ...]
    get: Callable[[str], list]
    rows: int
    where: str = "the data"


def frame_columns(frame, where: str = "the data") -> Columns:
    """Columns of a polars DataFrame; fields a loader kept in each row's `meta` JSON (under
    "fields", see `keep_patterns`) count as columns too."""
    kept: list[dict] = []
    if "meta" in frame.columns:
        for text in frame["meta"].to_list():
            try:
                meta = json.loads(text) if text else {}
            except json.JSONDecodeError:
                meta = {}
            kept.append(meta.get("fields") or {} if isinstance(meta, dict) else {})
    extra = [n for n in dict.fromkeys(k for row in kept for k in row) if n not in frame.columns]

    def get(name: str) -> list:
        return frame[name].to_list() if name in frame.columns else [row.get(name) for row in kept]

    return Columns(tuple(frame.columns) + tuple(extra), get, frame.height, where)


def dataset_columns(dataset, where: str = "the dataset") -> Columns:
    """Columns of a map-style `datasets.Dataset` (TRL's train set, verl's RLHFDataset.dataframe)."""
    return Columns(tuple(dataset.column_names), lambda name: list(dataset[name]), len(dataset), where)


def record_columns(records: Sequence[dict | None], where: str = "the data") -> Columns:
    """Columns of a list of row dicts (missing keys read as None)."""
    rows = [r or {} for r in records]
    names = tuple(dict.fromkeys(k for r in rows for k in r))
    return Columns(names, lambda name: [r.get(name) for r in rows], len(rows), where)


def _head(path: str, names: Sequence[str]) -> tuple[str, list[str]] | None:
    """The longest dot-prefix of `path` that is a column name, and the rest of its segments."""
    parts = path.split(".")
    for i in range(len(parts), 0, -1):
        if ".".join(parts[:i]) in names:
            return ".".join(parts[:i]), parts[i:]
    return None


_ABSENT = object()


def _descend(value, parts: list[str]):
    """value[a][b]... for the segments `parts`, a key holding a dot matched whole (longest first);
    _ABSENT where a key is missing. JSON text is opened."""
    while parts:
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except json.JSONDecodeError:
                return _ABSENT
        if not isinstance(value, dict):
            return _ABSENT
        for i in range(len(parts), 0, -1):
            key = ".".join(parts[:i])
            if key in value:
                value, parts = value[key], parts[i:]
                break
        else:
            return _ABSENT
    return value


def field_values(columns: Columns, path: str, spec: str) -> list:
    """One value per row of the dotted field `path` (_ABSENT where a nested key is missing); raises
    when the field is not in the table at all."""
    head = _head(path, columns.names)
    values = None if head is None else [_descend(v, head[1]) for v in columns.get(head[0])]
    if values is None or all(v is _ABSENT for v in values):
        shown = ", ".join(columns.names[:20]) + (", ..." if len(columns.names) > 20 else "")
        raise PriorError(f"prior {spec}: {columns.where} has no field `{path}` (its columns: {shown}). A table "
                         f"written by `grpo load` keeps it only when loaded with `--prior {spec}`; or name the field "
                         "that holds it: FIELD[:SCALE[:SAMPLES]] (grpo_data.priors)")
    return values


# ---------------------------------------------------------------------------- values
def _missing(value) -> bool:
    return (value is None or value is _ABSENT or (isinstance(value, float) and math.isnan(value))
            or (isinstance(value, str) and not value.strip()))


def parse_number(value) -> tuple[float, float | None]:
    """(number, denominator) of one cell: a number or numeric string (denominator None), or a fraction
    string `c/k` (Polaris' `3/8`: 0.375 with denominator 8). ValueError for anything else."""
    if isinstance(value, bool):
        raise ValueError("a boolean")
    if isinstance(value, int | float | np.integer | np.floating):
        return float(value), None
    if isinstance(value, str):
        fraction = _FRACTION.fullmatch(value)
        if fraction:
            c, k = float(fraction.group(1)), float(fraction.group(2))
            if k <= 0:
                raise ValueError("a fraction over 0")
            return c / k, k
        try:
            return float(value), None
        except ValueError:
            raise ValueError("not a number") from None
    raise ValueError(f"a {type(value).__name__}, not a number")


def _row_rate(source: PriorSource, values: tuple) -> tuple[float, float] | None:
    """(pass rate, samples, NaN when unknown) of one row, None when it has no value; ValueError names
    what is wrong with the value."""
    if source.kind == "counts":
        corrects, drawn = values
        if _missing(corrects) or _missing(drawn):
            return None
        try:
            c, n = (float(np.sum(np.asarray(x, dtype=np.float64))) for x in (corrects, drawn))
        except (TypeError, ValueError):
            raise ValueError("not lists of counts") from None
        if n <= 0:
            return None
        if not 0 <= c <= n:
            raise ValueError(f"{c:g} correct of {n:g} samples")
        return c / n, n
    (value,) = values
    if _missing(value):
        return None
    number, denominator = parse_number(value)
    if not math.isfinite(number):
        raise ValueError("not finite")
    if denominator is not None and source.scale != 1:
        # Polaris' `3/8` is 3 of 8 samples; divided by 100 (lime's percents) it would read as 0.996
        raise ValueError(f"a fraction string c/k, which reads as c of k samples only with SCALE 1 (the polaris preset, "
                         f"FIELD:1 for solved or FIELD:-1 for failed samples), not over {source.scale:g}")
    rate = number / source.scale if source.kind == "rate" else 1.0 - number / source.scale
    if not -_TOLERANCE <= rate <= 1 + _TOLERANCE:
        raise ValueError(f"outside [0, {source.scale:g}]")
    samples = denominator if denominator is not None else source.samples
    return min(max(rate, 0.0), 1.0), float("nan") if samples is None else samples


@dataclass(frozen=True)
class Prior:
    """Another model's estimate per problem, read from a table.

    source:  what was read and how (PriorSource).
    rate:    (N,) pass rate, NaN where the row has no value.
    samples: (N,) samples behind each value, NaN where the source does not say.
    weight:  the most pseudo-samples one value counts for (the discount).
    """

    source: PriorSource
    rate: np.ndarray
    samples: np.ndarray
    weight: float = DEFAULT_WEIGHT

    @property
    def k(self) -> np.ndarray:
        """(N,) pseudo-samples: min(samples, weight), `weight` where samples are unknown; NaN without a value."""
        k = np.where(np.isnan(self.samples), self.weight, np.minimum(self.samples, self.weight))
        return np.where(np.isnan(self.rate), np.nan, k)

    @property
    def n_correct(self) -> np.ndarray:
        """(N,) pseudo-successes rate x k (fractional), NaN without a value."""
        return self.rate * self.k

    def describe(self) -> dict:
        """What a card or a run's metadata says about the prior."""
        stated = self.samples[np.isfinite(self.samples)]
        return {"spec": self.source.name, "fields": list(self.source.fields), "model": self.source.model,
                "samples": None if stated.size == 0 else (float(stated.min()), float(stated.max())),
                "weight": self.weight, "problems": int(np.isfinite(self.rate).sum()), "rows": int(self.rate.size),
                "citation": self.source.citation, **({"profile": self.source.profile} if self.source.profile else {})}

    def summary(self) -> str:
        """One line for a command's output: how many problems have a value, whose, from how many samples."""
        info = self.describe()
        samples = ("samples unstated" if info["samples"] is None
                   else "-".join(f"{x:g}" for x in sorted(set(info["samples"]))) + " samples")
        return (f"prior {info['spec']}: {info['problems']} of {info['rows']} problems have a value "
                f"({info['model'] or 'model unnamed'}, {samples}; each counted as at most {self.weight:g} "
                "pseudo-samples)")


def prior_weight(spec: str | None, weight: float | None, flags: tuple[str, str] = ("prior", "prior_weight")) -> float:
    """The discount a run asked for: DEFAULT_WEIGHT when `weight` is left out (None), else `weight`
    as given (a 0 stays 0, for `read_prior` to refuse). A weight without a prior spec is refused: it
    would be ignored. `flags` names the two settings in the message (e.g. "--prior", "--prior-weight")."""
    if weight is not None and not spec:
        raise PriorError(f"{flags[1]} {weight} without {flags[0]}: the weight discounts a prior and does nothing "
                         f"alone; give {flags[0]} too, or leave {flags[1]} out")
    return DEFAULT_WEIGHT if weight is None else float(weight)


def row_sample_counts(source: PriorSource, columns: Columns) -> tuple[str, list] | None:
    """(field, one value per row) of the table's per-row sample count (SAMPLE_COUNT_FIELDS) when
    `source` reads an avg@K column and the table has one, else None."""
    if not AVG_COLUMN.fullmatch(source.fields[0]):
        return None
    for path in SAMPLE_COUNT_FIELDS:
        head = _head(path, columns.names)
        if head is not None:
            values = [_descend(v, head[1]) for v in columns.get(head[0])]
            if not all(_missing(v) for v in values):  # a `k` with no value falls through to `extra_info.k`
                return path, values
    return None


def _sample_count(value, field: str, stated: float) -> float:
    """A row's own sample count from `field` (`stated`, the K of avg@K, where the row has none);
    ValueError for a value that is not a count of at least 1."""
    if _missing(value):
        return stated
    count, _ = parse_number(value)
    if not (count >= 1 and float(count).is_integer()):
        raise ValueError(f"read with `{field}` = {value!r}, not a sample count of at least 1")
    return count


def read_prior(spec: str, columns: Columns, weight: float = DEFAULT_WEIGHT, ids: Sequence | None = None) -> Prior:
    """The prior `spec` names, read from `columns`; `ids` (one per row) name rows in errors."""
    if not weight >= 1:
        raise PriorError(f"the prior's weight must be at least 1 pseudo-sample, got {weight} (to ignore the prior, "
                         "leave it out)")
    source = resolve(parse_spec(spec), columns.names)
    fields = [field_values(columns, path, source.name) for path in source.fields]
    counted = row_sample_counts(source, columns)
    rate, samples = np.full(columns.rows, np.nan), np.full(columns.rows, np.nan)
    bad, first = 0, ""
    for i, values in enumerate(zip(*fields, strict=True)):
        try:
            got = _row_rate(source, values)
            if got is not None and counted is not None:
                got = (got[0], _sample_count(counted[1][i], counted[0], got[1]))
        except (ValueError, TypeError) as exc:
            if not bad:
                shown = values[0] if len(values) == 1 else values
                first = (f"row {i}" + (f" (id {ids[i]})" if ids is not None else "")
                         + f": `{'`, `'.join(source.fields)}` = {shown!r} is {exc}")
            bad += 1
            continue
        if got is not None:
            rate[i], samples[i] = got
    if bad:
        tail = "" if source.samples is None else f":{source.samples:g}"
        hint = (f"; if the column holds percents use `{source.fields[0]}:100{tail}` when they count solved samples "
                f"or `{source.fields[0]}:-100{tail}` when they count failed ones (as lime-nlp's `difficulty`: the "
                "lime preset)" if source.kind == "rate" else "")
        raise PriorError(f"prior {source.name}: {bad} rows of {columns.where} cannot be read as a pass rate, "
                         f"e.g. {first}{hint}; fix or drop those rows, or describe the column with "
                         "FIELD[:SCALE[:SAMPLES]] (grpo_data.priors)")
    if np.isnan(rate).all():
        raise PriorError(f"prior {source.name}: no row of {columns.where} has a value in "
                         f"`{'`, `'.join(source.fields)}`")
    return Prior(source, rate, samples, float(weight))


def stored_prior(rate, k) -> Prior | None:
    """The prior a shard set carries (`prior_rate`, `prior_k` as `grpo shards --prior` writes them,
    None or NaN where a row has none), or None when no row has one. The pseudo-samples are already
    discounted; the set's card names the model behind them."""
    r = np.array([np.nan if v is None else float(v) for v in rate], dtype=np.float64)
    n = np.array([np.nan if v is None else float(v) for v in k], dtype=np.float64)
    if not np.isfinite(r).any():
        return None
    source = PriorSource("shards", ("prior_rate", "prior_k"), citation="the shard set's prior (see its card)")
    return Prior(source, r, n, float(np.nanmax(n)))


# ---------------------------------------------------------------------------- with a profile
class Start(NamedTuple):
    """What a scheduler starts from when a prior is given (`merge_offline`).

    offline:    (n_correct, k) per problem, NaN where neither the profile nor the prior has one.
    from_prior: (N,) the rows only the prior covers (None without a prior).
    offset:     the logit offset of this model against the prior's, fitted on the rows both cover
                (0 when none do; then the scheduler's drift learns it).
    """

    offline: tuple[np.ndarray, np.ndarray] | None
    from_prior: np.ndarray | None
    offset: float = 0.0


def merge_offline(offline: tuple[np.ndarray, np.ndarray] | None, prior: Prior | None) -> Start:
    """A profile's counts and a prior, combined. Where the profile measured a problem its own counts
    are kept and the prior's pseudo-counts added, moved by the offset fitted between the two on the
    problems both cover (`fit_logit_offset`, `offset_evidence`): the adaptive profiler stopped on
    exactly that evidence, and a 2-sample screen alone would undo its decision. Where only the prior
    has a value, its pseudo-counts, moved the same way. Either may be None."""
    if prior is None:
        return Start(offline, None)
    has = np.isfinite(prior.k)
    if offline is None:
        return Start((prior.n_correct, prior.k), has)
    c, k = (np.asarray(x, dtype=np.float64) for x in offline)
    measured = np.isfinite(c) & np.isfinite(k) & (k > 0)
    check_other_samples(prior, c, k, measured)
    offset = fit_logit_offset(prior.rate, np.where(measured, c, np.nan), np.where(measured, k, np.nan))
    s, f = offset_evidence(prior.rate, prior.k, offset)
    own_c, own_k = np.where(measured, c, 0.0), np.where(measured, k, 0.0)
    known = measured | has
    return Start((np.where(known, own_c + s, np.nan), np.where(known, own_k + s + f, np.nan)), has & ~measured, offset)


def check_recorded_prior(meta: dict, prior: Prior | None, profile: str, fix: str,
                         options: tuple[str, str] = ("--prior", "--prior-profile")) -> None:
    """Refuse a profile whose adaptive stopping weighed a prior (its metadata's `prior`, as
    `grpo profile --adaptive --prior` or `--prior-profile` records it) when the run combines it with
    no prior, or with another source or weight: where the profiler stopped early because the prior
    agreed, its own counts alone are fewer samples than its decision rested on. A column prior is
    the same source when its spec is; an earlier profile when its file's sha256 is (moved or renamed
    is fine, changed is not). `fix` says how this command passes a prior, with {option} (one of
    `options`: the column's setting, the profile's), {spec} and {weight} filled in (e.g. "pass
    {option} {spec} --prior-weight {weight}")."""
    recorded = (meta or {}).get("prior")
    if not recorded:
        return
    spec, weight = str(recorded.get("spec")), float(recorded.get("weight", DEFAULT_WEIGHT))
    was = recorded.get("profile")
    given = None if prior is None else prior.source.profile
    same = prior is not None and (given is not None and given.get("sha256") == was.get("sha256") if was
                                  else given is None and prior.source.name == spec)
    if same and math.isclose(prior.weight, weight):
        return
    shown = "none" if prior is None else f"{prior.source.name} at weight {prior.weight:g}" + (
        f" (sha256 {str(given.get('sha256'))[:16]})" if given else "")
    if was:
        source, option, value = f"{spec} (sha256 {str(was.get('sha256'))[:16]})", options[1], was.get("path")
        need = "that file, unchanged"
    else:
        source, option, value = spec, options[0], spec
        need = f"the data must hold the prior's field: `grpo load --prior {spec}` keeps it"
    raise PriorError(f"{profile} was profiled with prior {source} at weight {weight:g}: its adaptive stopping counted "
                     f"that prior's pseudo-counts, so its own counts alone are too few where it stopped early; this "
                     f"run gives {shown}. {fix.format(option=option, spec=value, weight=f'{weight:g}')} ({need}), or "
                     "profile again without a prior")


def check_other_samples(prior: Prior, c: np.ndarray, k: np.ndarray, measured: np.ndarray) -> None:
    """Refuse an `avg@K_<model>` prior whose every value, on the rows the counts (c, k) also
    measured, is exactly their c / k: this project's trl/verl shards write that column as a copy of
    the profile's pass rate, so adding it to the same counts would count the same samples twice."""
    both = measured & np.isfinite(prior.rate)
    if not is_avg(prior.source) or not both.any():
        return
    if np.allclose(prior.rate[both], c[both] / k[both], rtol=0.0, atol=1e-9):
        raise PriorError(f"prior {prior.source.name}: on all {int(both.sum())} problems the profile also measured, its "
                         "value is the profile's own n_correct / k (this project's trl/verl shards write "
                         "avg@K_<model> as a copy of those counts): adding it would count the same samples twice. "
                         "Leave the prior out (the counts start the scheduler already), or name another model's column")


def origin_groups(groups: np.ndarray | None, from_prior: np.ndarray | None) -> np.ndarray | None:
    """Difficulty groups with the prior's rows apart from the rest: each group's drift then is the
    offset between the other model and this policy (for prior rows), not a blend of it with the
    profile's rows, which need none."""
    if from_prior is None or not from_prior.any() or from_prior.all():
        return groups
    base = np.zeros(from_prior.size, dtype=np.int64) if groups is None else np.asarray(groups, dtype=np.int64)
    return np.unique(base * 2 + from_prior.astype(np.int64), return_inverse=True)[1].reshape(-1)


def fit_logit_offset(rate: np.ndarray, n_correct: np.ndarray, k: np.ndarray, kappa: float = 1.0,
                     iters: int = 20) -> float:
    """The logit shift d maximizing sum c log s(l + d) + (k - c) log(1 - s(l + d)) - kappa d^2 / 2, with
    l = logit(rate) of another model's pass rates and (c, k) this model's own counts: how much easier
    (d > 0) or harder this model finds the problems. Newton steps from 0; `kappa` keeps the shift
    near 0 while few samples are in. Rows with a NaN are left out; rates are clipped to [0.01, 0.99]
    so a 0 or 1 from the other model does not make its logit infinite."""
    r, c, k = (np.asarray(x, dtype=np.float64) for x in (rate, n_correct, k))
    use = np.isfinite(r) & np.isfinite(c) & np.isfinite(k) & (k > 0)
    if not use.any():
        return 0.0
    base = np.log(np.clip(r[use], 0.01, 0.99)) - np.log1p(-np.clip(r[use], 0.01, 0.99))
    c, k = c[use], k[use]
    d = 0.0
    for _ in range(iters):
        p = 1.0 / (1.0 + np.exp(-(base + d)))
        step = ((c - k * p).sum() - kappa * d) / ((k * p * (1 - p)).sum() + kappa)
        d += step
        if abs(step) < 1e-8:
            break
    return float(d)


def offset_evidence(rate: np.ndarray, k: np.ndarray, offset: float) -> tuple[np.ndarray, np.ndarray]:
    """(successes, failures) of k pseudo-samples at another model's pass rate moved by a logit
    `offset`: sigmoid(logit(rate) + offset) x k; 0 and 0 where a row has none.
    A rate outside [0.01, 0.99] (0 and 1 have no finite logit; `fit_logit_offset` clips there) moves
    by as much as the nearest of those two does, kept in [0, 1]: the evidence changes continuously
    with the offset, a 0 stays 0 at offset 0 and rises only as the offset grows (1 logit: 0.017),
    where clipping first lifted every 0 to 0.01 (a 0/4 to 0.04 successes) for any offset above
    rounding noise.
    The rate is moved, not the counts: a 0.99 counted as 4 pseudo-samples stays near 0.98 under a
    1-logit shift, where moving half-sample-smoothed counts would pull it to 0.75."""
    r, k = np.asarray(rate, dtype=np.float64), np.asarray(k, dtype=np.float64)
    if offset != 0.0:  # at 0 the rates stand exactly as read (sigmoid(logit(r)) is r only up to rounding)
        clipped = np.clip(r, 0.01, 0.99)
        moved = 1.0 / (1.0 + np.exp(-(np.log(clipped) - np.log1p(-clipped) + offset)))
        r = np.clip(r + (moved - clipped), 0.0, 1.0)  # inside [0.01, 0.99]: exactly the moved rate
    has = np.isfinite(r) & np.isfinite(k)
    s = np.where(has, r * np.where(has, k, 0.0), 0.0)
    return s, np.where(has, k, 0.0) - s
