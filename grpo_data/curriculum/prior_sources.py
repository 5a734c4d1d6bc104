"""Where a prior's values live and how one becomes a pass rate: specs, presets, and the `Prior`
they read into (the discount of another model's estimate, `Prior.k`). Re-exported by
`grpo_data.curriculum.priors`, which says how the pieces fit together.

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

The discount. A value counts as k = min(samples, weight) pseudo-samples, (n_correct, k) = (rate x k, k),
with `weight` (DEFAULT_WEIGHT) far below what the source drew: another model's pass rate predicts this
policy's only up to a shared logit offset and a per-problem scatter. The offset is learned: from
this model's own counts where a profile covers the prior's problems (`fit_logit_offset`, in the
adaptive profiler as it samples and when a scheduler starts from both), and online as each
difficulty group's drift in the band scheduler (rows only the prior covers form groups of their own,
see `grpo_data.curriculum.prior_offset`). The scatter is what the discount is for. Assumed, not measured: a logit scatter of 1 near p = 0.5 is a
pass-rate spread of 0.25, the spread of a Beta posterior after 3 samples (0.25 / (n + 1) = 1/16), so
another model's estimate weighs about as much as a 4-sample screen however many samples it drew.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

DEFAULT_WEIGHT = 4.0  # pseudo-samples another model's estimate counts for at most (see the module docstring)
AVG_COLUMN = re.compile(r"avg@(\d+)_(.+)")


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
    profile:  for an earlier profile read as a prior (`grpo_data.curriculum.prior_profile`): its path, sha256,
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


# ---------------------------------------------------------------------------- the prior read
@dataclass(frozen=True)
class Prior:
    """Another model's estimate per problem, read from a table.

    source:  what was read and how (PriorSource).
    rate:    (N,) pass rate, NaN where the row has no value.
    samples: (N,) samples behind each value, NaN where the source does not say.
    weight:  the most pseudo-samples one value counts for (the discount).
    fit_weight: learn the discount from this model's own counts (`prior_offset.fit_prior_weight`,
             the marginal likelihood of them given the prior's view), `weight` then its cap: where
             the two models agree closely the view earns more than a fixed discount gives it.
    """

    source: PriorSource
    rate: np.ndarray
    samples: np.ndarray
    weight: float = DEFAULT_WEIGHT
    fit_weight: bool = False

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
                "citation": self.source.citation, **({"profile": self.source.profile} if self.source.profile else {}),
                **({"fit_weight": True} if self.fit_weight else {})}

    def summary(self) -> str:
        """One line for a command's output: how many problems have a value, whose, from how many samples."""
        info = self.describe()
        samples = ("samples unstated" if info["samples"] is None
                   else "-".join(f"{x:g}" for x in sorted(set(info["samples"]))) + " samples")
        return (f"prior {info['spec']}: {info['problems']} of {info['rows']} problems have a value "
                f"({info['model'] or 'model unnamed'}, {samples}; each counted as at most {self.weight:g} "
                "pseudo-samples" + (", the discount fitted to this model's own samples" if self.fit_weight else "") + ")")


def prior_weight(spec: str | None, weight: float | None, flags: tuple[str, str] = ("prior", "prior_weight")) -> float:
    """The discount a run asked for: DEFAULT_WEIGHT when `weight` is left out (None), else `weight`
    as given (a 0 stays 0, for `read_prior` to refuse). A weight without a prior spec is refused: it
    would be ignored. `flags` names the two settings in the message (e.g. "--prior", "--prior-weight")."""
    if weight is not None and not spec:
        raise PriorError(f"{flags[1]} {weight} without {flags[0]}: the weight discounts a prior and does nothing "
                         f"alone; give {flags[0]} too, or leave {flags[1]} out")
    return DEFAULT_WEIGHT if weight is None else float(weight)
