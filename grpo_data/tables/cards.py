"""Hugging Face dataset cards for curriculum shard sets (`grpo card`).

The card (markdown with YAML front matter) states what a user of the shards must know to trust
them: how pass rates were measured (model and weights hash, sampling, chat template, verifier), what
the estimate the buckets use is and how many samples stand behind it, what the columns mean, counts
per bucket, the expected share of groups that teach nothing, rejected rows by reason, and known
limitations. A histogram of the estimates (PNG), with the band training uses, is written beside it.

The card ends with its reuse record, a YAML block another team's code reads back
(`read_card_record`): what produced the pass rates (`grpo_data.tables.exports.card_record`: model, weights
hash, sampling, prompt template, verifier and versions, prior), what the estimate is, and the prior
the set carries. Given the profile the set was built from, the card also writes that profile's
per-problem counts beside it (`NAME.dart.parquet`, DART-Math's columns with each round's samples
and successes; `grpo_data.tables.exports`), which `read_export` reads back into the profile's rows. Its
`p_est`/`p_std` are the set's own, copied (null for profile rows the set does not hold): fitted again
on the whole profile they would differ from the buckets beside them.

The prose on how the pass rates were measured and where the rows came from (the prior, sources,
mixture, decontamination, the profiling run) is in `grpo_data.tables.card_provenance`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import yaml

from grpo_data.curriculum.estimates import posteriors
from grpo_data.curriculum.priors import offset_evidence
from grpo_data.curriculum.stats import DEFAULT_GROUP_SIZE, grid_all_same
from grpo_data.tables import io
from grpo_data.tables.card_provenance import (
    backend_note,
    context_line,
    prior_section,
    profiling_prior_line,
    provenance_sections,
    seeding_note,
    verifier_line,
)
from grpo_data.tables.exports import ExportError, card_record, export_profile, id_scheme, unknown_fields
from grpo_data.tables.profile_table import read_profile, read_rejects
from grpo_data.tables.shards import ShardIntegrityError, read_shards, verify_shards

_ESTIMATE_DOCS = ("`p_est` (estimated pass rate: posterior mean, see above; what `bucket` is cut on), "
                  "`p_std` (its posterior standard deviation)")
COLUMN_DOCS = {
    "native": "`id`, `source`, `prompt` (chat messages), `answer` (gold), `level`, `meta`, `k` (samples), "
              "`n_correct`, `pass_rate` (raw: n_correct / k), `ci_low`/`ci_high` (90% Jeffreys interval of the "
              f"raw rate), {_ESTIMATE_DOCS}, `bucket`",
    "verl": "`data_source`, `prompt` (chat messages), `ability`, `reward_model` {`style`: rule, `ground_truth`}, "
            "`extra_info` {`index`, `split`, `id`, `level`, `pass_rate` (raw: n_correct / k), `k`, `n_correct`, "
            f"{_ESTIMATE_DOCS}}}, `{{avg}}`, `bucket`",
    "trl": "`prompt` (chat messages), `solution` (gold answer for the reward function), `id`, `level`, `k`, "
           f"`n_correct`, `pass_rate` (raw: n_correct / k), {_ESTIMATE_DOCS}, `{{avg}}`, `bucket`",
}


def avg_column_doc(manifest: dict, ks: pl.Series) -> str:
    """What the community-convention column holds: k per problem and the sampling it was measured at."""
    name = manifest.get("avg_column")
    if not name:
        return ""
    text = (f"\n\n`{name}` is `pass_rate` (raw) under the name public RL datasets use (`avg@k_<model>`): the mean "
            "verified correctness of the profiling model's samples at the sampling settings above.")
    if ks.len() and ks.min() != ks.max():
        text += (f" Samples were drawn adaptively, {int(ks.min())}-{int(ks.max())} per problem (column `k`); "
                 f"`{name.split('_')[0]}` names the most any problem got.")
    return text


PRIOR_DOC = ("`prior_rate` (another model's pass rate, see Prior from another model; null where it has none), "
             "`prior_k` (the pseudo-samples it counts for)")


def size_category(n: int) -> str:
    for limit, label in ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M")):
        if n < limit:
            return label
    return "n>1M"


def profile_column(table: pl.DataFrame, name: str) -> pl.Series:
    """A profile column (`pass_rate`, `p_est`, `k`, `level`) of any shard format: top level, or in
    verl's extra_info."""
    if name in table.columns:
        return table[name]
    if "extra_info" in table.columns and name in [f.name for f in table.schema["extra_info"].fields]:
        return table["extra_info"].struct.field(name)
    raise ShardIntegrityError(f"the shard set has no `{name}` column (written before `{name}` existed?); "
                              "rebuild it with `grpo shards`")


def histogram_figure(rates: pl.Series, edges: list[float], title: str, band: tuple[float, float] | None = None):
    """Histogram of estimated pass rates (a matplotlib Figure): the bucket edges dashed, the training
    `band` shaded (when given)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.2), dpi=120)
    ax.hist(rates.to_numpy(), bins=20, range=(0, 1), color="#4C72B0", edgecolor="white")
    for e in edges[1:-1]:
        ax.axvline(e, color="#C44E52", lw=1, ls="--")
    if band is not None:
        ax.axvspan(*band, color="#55A868", alpha=0.15, label=f"training band [{band[0]:g}, {band[1]:g}]")
        ax.legend(fontsize=7)
    ax.set_xlabel("estimated pass rate (p_est)")
    ax.set_ylabel("problems")
    ax.set_title(title)
    fig.tight_layout()
    return fig


def histogram(rates: pl.Series, edges: list[float], path: Path, title: str,
              band: tuple[float, float] | None = None) -> Path:
    """`histogram_figure` saved as a PNG at `path`."""
    import matplotlib.pyplot as plt

    fig = histogram_figure(rates, edges, title, band)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path


def front_matter(name: str, manifest: dict, license: str, pretty_name: str | None, language: str) -> dict:
    buckets = sorted(manifest["buckets"], key=int)
    return {
        "license": license,
        "language": [language],
        "pretty_name": pretty_name or name,
        "task_categories": ["question-answering", "text-generation"],
        "tags": ["math", "reinforcement-learning", "grpo", "curriculum", "pass-rate"],
        "size_categories": [size_category(manifest["rows"])],
        "source_datasets": [manifest.get("source") or "original"],
        "configs": [{"config_name": f"bucket_{b}", "data_files": [{"split": "train", "path": f"bucket={b}/*.parquet"}]}
                    for b in buckets] + [{"config_name": "all", "default": True,
                                          "data_files": [{"split": "train", "path": "bucket=*/*.parquet"}]}],
    }


def samples_section(ks: np.ndarray, rule: dict | None, prior: bool = False) -> str:
    """Markdown: how many samples stand behind the estimates (k -> problems, and the mean)."""
    values, counts = np.unique(ks, return_counts=True)
    lines = "\n".join(f"| {int(v)} | {int(n)} |" for v, n in zip(values, counts, strict=True))
    how = (f"Samples were drawn adaptively: a screen of {rule.get('screen_k')} per problem, then {rule.get('step_k')} "
           f"more at a time while its band decision ([{rule.get('lo')}, {rule.get('hi')}], confidence "
           f"{rule.get('confidence')}) stayed uncertain, up to {rule.get('max_k')}." if rule
           else "Every problem got the same number of samples.")
    if rule and prior and rule.get("prior_screen_k", rule.get("screen_k")) < rule.get("screen_k"):
        how += (f" Where the prior, moved by the offset fitted on the problems before, already decided a problem, "
                f"its screen was {rule['prior_screen_k']}.")
    mean = float(ks.mean()) if ks.size else float("nan")
    return (f"{how} Mean samples per problem: {mean:.2f} ({int(ks.sum())} in all).\n\n"
            f"| samples (k) | problems |\n| --- | --- |\n{lines}")


def screen_note(n_correct: np.ndarray, ks: np.ndarray, p_est: np.ndarray) -> str:
    """What the estimate made of this set's 1-of-2 screens (empty when it has none)."""
    half = (n_correct == 1) & (ks == 2)
    if not half.any():
        return ""
    n = int(half.sum())
    if n == 1:
        return f" In this set, 1 problem stopped at 1 correct of 2 (raw rate 0.5); its estimate is {p_est[half][0]:.3f}."
    return (f" In this set, {n} problems stopped at 1 correct of 2 (raw rate 0.5); their estimates run from "
            f"{p_est[half].min():.3f} to {p_est[half].max():.3f}.")


def signal_section(all_same: np.ndarray, p_est: np.ndarray, group_size: int, band: tuple[float, float] | None) -> str:
    """Markdown: the expected share of groups that teach nothing, over the set and inside the band."""
    text = (f"A GRPO group of G = {group_size} answers teaches nothing when all are right or all wrong. Drawing "
            f"problems uniformly from this set, an expected **{mean_percent(all_same)}** of groups "
            f"would come back all right or all wrong: the mean over problems of E[p^{group_size} + "
            f"(1-p)^{group_size}] under each problem's posterior (as measured by the profile, before training).")
    if band is not None:
        inside = (p_est >= band[0]) & (p_est <= band[1])
        text += (f" {int(inside.sum())} problems ({100 * inside.mean():.1f}%) have an estimate inside the training band "
                 f"[{band[0]:g}, {band[1]:g}]; drawn from those alone, {mean_percent(all_same[inside])} "
                 "of groups would be all right or all wrong.")
    return text


REUSE_HEADING = "## Reuse"


def reuse_section(record: dict, export: Path | None) -> str:
    """Markdown: the machine-readable record (a YAML block) and where the per-problem counts are."""
    unknown = unknown_fields(record["card"])
    gaps = (f" The profile's metadata does not say {', '.join(f'`{u}`' for u in unknown)} (written by an older "
            "`grpo profile`); those are null." if unknown else "")
    counts = (f"Per-problem counts of the profile: `{export.name}` beside this card, in DART-Math's query-info "
              "columns (`n_samples_list`/`n_corrects_list`: samples and successes of each sampling round, "
              "`tot_n_samples`, `tot_n_corrects`, `pass_rate`, `pass_rate_bernoulli_std`) with this set's `p_est`/`p_std` "
              "(null for profile rows the set does not hold), the question (`query`) and source to join on where ids are "
              "hashes (`ids` above), and the profile's other columns; `grpo_data.tables.exports.read_export` reads it back into the profile's rows, "
              f"`--prior dart` reads it as another model's difficulty. Its record is `{export.with_suffix('.json').name}`."
              if export is not None else
              "Per-problem counts in the shards: `k`, `n_correct`. The profile's rounds and every other column, in "
              "DART-Math's or the avg@K convention: `grpo export --profile PROFILE --format dart|avg`, or `grpo card "
              "--profile PROFILE`, which writes them beside the card.")
    block = yaml.safe_dump(record, sort_keys=False, allow_unicode=True)
    return (f"{REUSE_HEADING}\n\nWhat produced these pass rates, machine-readable "
            f"(`grpo_data.tables.cards.read_card_record`):{gaps}\n\n```yaml\n{block}```\n\n{counts}\n")


def read_card_record(card: str | Path) -> dict:
    """The reuse record of a card written by `write_card` ({"card": `card_record`, "estimate",
    "shards_prior"}); ExportError naming the file when it has none or it does not parse."""
    card = Path(card)
    text = card.read_text(encoding="utf-8")
    _, found, after = text.partition(f"\n{REUSE_HEADING}\n")
    start = after.find("```yaml\n")
    end = after.find("\n```", start + 1)
    if not found or start < 0 or end < 0:
        raise ExportError(f"{card}: no `{REUSE_HEADING}` section with a ```yaml record (a card written before it "
                          "existed?); rewrite it with `grpo card`")
    try:
        record = yaml.safe_load(after[start + len("```yaml\n"):end + 1])
    except yaml.YAMLError as exc:
        raise ExportError(f"{card}: its reuse record is not YAML ({exc})") from None
    if not isinstance(record, dict) or "card" not in record:
        raise ExportError(f"{card}: its reuse record has no `card` field")
    return record


def set_problems(table: pl.DataFrame) -> pl.DataFrame:
    """A shard set's problem columns in any format: id, level, prompt, and source (verl's data_source)
    and meta where the format keeps them."""
    source = next((c for c in ("source", "data_source") if c in table.columns), None)
    return pl.DataFrame({"id": profile_column(table, "id"), "level": profile_column(table, "level")}).with_columns(
        table["prompt"], *([table[source].alias("source")] if source else []),
        *([table["meta"]] if "meta" in table.columns else []))


def same_profile(manifest_profile: dict, meta: dict, path: Path) -> None:
    """Refuse a profile that is not the one the shard set was built from (model, weights, run time, rows)."""
    for key in ("model", "weights_hash", "created", "rows", "samples"):
        if key in manifest_profile and key in meta and manifest_profile[key] != meta[key]:
            raise ExportError(f"{path}: `{key}` = {meta[key]!r}, but the shard set was built from a profile with "
                              f"{manifest_profile[key]!r}: give the profile the set was built from")


def mean_percent(values: np.ndarray) -> str:
    return f"{100 * values.mean():.1f}%" if values.size else "-"


def write_card(shards: str | Path, name: str, out: str | Path | None = None, license: str = "apache-2.0",
               pretty_name: str | None = None, language: str = "en", band: tuple[float, float] | None = None,
               group_size: int = DEFAULT_GROUP_SIZE, profile: str | Path | None = None) -> Path:
    """Write the card for the shard set at `shards` (and its histogram beside it); returns its path.

    band:       the band training uses (the scheduler's lo, hi), shaded in the histogram and used for the
                in-band counts; None draws none and says so.
    group_size: G of the expected share of all-right or all-wrong groups.
    profile:    the profile the set was built from (refused when it is another): its per-problem counts
                are written beside the card as NAME.dart.parquet (`grpo_data.tables.exports`)."""
    if band is not None and not 0 <= band[0] < band[1] <= 1:
        raise ValueError(f"band must satisfy 0 <= lo < hi <= 1, got {list(band)}")
    if group_size < 1:
        raise ValueError(f"group_size must be >= 1, got {group_size}")
    shards = Path(shards)
    manifest = verify_shards(shards)
    out = Path(out) if out else Path("data_cards") / f"{name}.md"
    table = read_shards(shards)
    p_est = profile_column(table, "p_est")
    png = histogram(p_est, manifest["edges"], out.with_suffix(".png"), f"{name}: estimated pass rates", band)
    estimate = manifest.get("estimate") or {}
    per_level = estimate.get("prior") == "per level"
    counts = pl.DataFrame({"n_correct": profile_column(table, "n_correct"), "k": profile_column(table, "k"),
                           "level": profile_column(table, "level")})
    own = counts["k"].is_not_null().to_numpy()  # rows with a profile (the others rest on a prior alone)
    prior_info = manifest.get("prior")
    evidence = counts.with_columns(pl.col("n_correct", "k").cast(pl.Float64).fill_null(0.0))
    if prior_info:  # what the estimates were fitted on: own counts + the prior's moved pseudo-counts
        s, f = offset_evidence(profile_column(table, "prior_rate").fill_null(np.nan).to_numpy(),
                               profile_column(table, "prior_k").fill_null(np.nan).to_numpy(),
                               prior_info.get("offset_from_profile", 0.0))
        evidence = evidence.with_columns(pl.col("n_correct") + s, pl.col("k") + s + f)
    all_same = grid_all_same(posteriors(evidence, per_level), group_size)  # (N,), rows in `table` order
    ks, p = counts["k"].to_numpy().astype(np.float64), p_est.to_numpy()
    bucket = table["bucket"].to_numpy()
    prof = manifest.get("profile", {})
    export, in_set = None, set_problems(table)
    if profile is not None:
        rows, rows_meta = read_profile(profile)
        same_profile(prof, rows_meta, Path(profile))
        ids = profile_column(table, "id")
        # the set's own estimates, copied: fitted again on the whole profile (rows the set dropped included,
        # without the prior it may carry) they would differ from the buckets beside them
        given = pl.DataFrame({"id": ids, "p_est": p_est, "p_std": profile_column(table, "p_std")})
        said = {**estimate, "from": f"the shard set {shards.name} (its buckets' p_est)",
                **({"with_prior": prior_info.get("spec")} if prior_info else {})}
        export = out.with_suffix(".dart.parquet")
        export_profile(rows, rows_meta, export, "dart", problems=in_set, where=str(profile),
                       inputs=[profile], estimates=(given, said), left_out=read_rejects(profile))
    record = {"card": card_record(prof), "estimate": manifest.get("estimate"), "shards_prior": manifest.get("prior"),
              "ids": id_scheme(in_set)}
    cfg = prof.get("config", {})
    sampling = cfg.get("sampling", {})
    rule = cfg.get("rule")
    meta = front_matter(name, manifest, license, pretty_name, language)

    def bucket_row(b: str, v: dict) -> str:
        mine = bucket == int(b)
        mean_k = f"{ks[mine & own].mean():.1f}" if (mine & own).any() else "-"
        return (f"| {b} | [{v['lo']:.2f}, {v['hi']:.2f}{']' if v['hi'] == 1.0 else ')'} | {v['rows']} | {mean_k} "
                f"| {mean_percent(all_same[mine])} |")

    rows = "\n".join(bucket_row(b, v) for b, v in sorted(manifest["buckets"].items(), key=lambda kv: int(kv[0])))
    rejected = manifest.get("rejected") or {}
    left = sum((prof.get("left_out") or {}).values())
    left_note = f", of which {left} did not fit the profiling context (see Rejected rows)" if left else ""
    rej_lines = "\n".join(f"| {reason} | {n} |" for reason, n in rejected.items()) or "| (none) | 0 |"
    avg_doc = avg_column_doc(manifest, profile_column(table, "k").drop_nulls())
    columns_doc = COLUMN_DOCS[manifest['format']].replace('{avg}', manifest.get('avg_column') or 'avg@k_<model>')
    if prior_info and not manifest.get("avg_column"):  # a set without a profile has no avg@k column
        columns_doc = columns_doc.replace(", `avg@k_<model>`", "")
    if prior_info:
        columns_doc = columns_doc.replace("`p_std` (its posterior standard deviation)",
                                          f"`p_std` (its posterior standard deviation), {PRIOR_DOC}")
    prior = ("one per level, fitted (EM on a 41-point grid of pass rates) to the counts of this set's problems of "
             "that level and shrunk toward the whole set's fit (a level of n problems keeps n / (n + 20) of its own)"
             if per_level else "one for the whole set, fitted (EM on a 41-point grid of pass rates) to its counts")
    samples_text = (samples_section(ks[own], rule, bool(prof.get("prior"))) if own.any()
                    else "No problem was profiled: every estimate rests on the prior below.")
    prior_text = prior_section(prior_info, int(own.sum())) + "\n\n" if prior_info else ""
    prior_limit = ("\n- Estimates that rest on the prior alone are another model's view, moved by an offset fitted "
                   "elsewhere (or none); they order problems as that model does. Profile them before trusting their "
                   "bucket." if prior_info and prior_info.get("alone") else "")
    band_note = (f"The shaded span is the band training uses, [{band[0]:g}, {band[1]:g}] (the scheduler's lo and hi)."
                 if band is not None else "No training band was given to the card (`band=`), so none is drawn.")
    body = f"""# {pretty_name or name}

Math problems bucketed by the estimated pass rate of a profiling model, for curriculum GRPO training.
Built with grpo-curriculum (`grpo shards`, format `{manifest['format']}`) from `{manifest.get('source') or 'unknown'}`.

## How pass rates were measured

- Profiling model: `{prof.get('model', 'unknown')}`, weights sha256 (first 16 hex) `{prof.get('weights_hash', 'unknown')}`
- Engine: {prof.get('engine', 'unknown')}{backend_note(prof)}; samples per problem: {'adaptive ' + str(rule) if rule else 'k = ' + str(cfg.get('k', 'unknown'))}
- Sampling: temperature {sampling.get('temperature')}, top_p {sampling.get('top_p')}, max_tokens {sampling.get('max_tokens')}, stop strings {sampling.get('stop')}, stop token ids {sampling.get('stop_token_ids')}
- Chat template hash: `{prof.get('template_hash', 'unknown')}`; prompt settings: {cfg.get('prompt', {})}
- {context_line(prof)}
- {verifier_line(record['card']['verifier'])}; seed {cfg.get('seed')}{seeding_note(prof.get('seeding'))}
- {profiling_prior_line(prof.get('prior'))}
- Profiled: {prof.get('created', 'unknown')}

**Estimated pass rate** (`p_est`, what the buckets, their counts and the histogram use) = the posterior
mean of the problem's pass rate under an empirical-Bayes prior: {prior}. It is the prior the
profiler's adaptive sampling decided with. `p_std` is the posterior standard deviation. A
problem screened 1 correct of 2 is not put at 0.5: one success rules out a pass rate of 0, and its
level says where in between it most likely lies: low in a level where nearly every problem went 0
of 2, near 0.5 in a level of problems around 0.5.{screen_note(counts['n_correct'].to_numpy()[own], ks[own], p[own])}

**Raw pass rate** (`pass_rate`) = verified-correct samples / samples drawn (`n_correct / k`), at the
sampling settings above, kept for compatibility; `ci_low`/`ci_high` are its 90% equal-tailed
interval under the Jeffreys Beta(1/2, 1/2) prior (no pooling).

## Samples behind the estimates

{samples_text}

{prior_text}## Columns

{columns_doc}{avg_doc}

## Buckets

| bucket | estimated pass rate | problems | mean k | all-right or all-wrong groups (G = {group_size}) |
| --- | --- | --- | --- | --- |
{rows}

Total: {manifest['rows']} problems. Not profiled (left out): {manifest.get('unprofiled', 0)}{left_note}.

![estimated pass-rate histogram]({png.name})

{band_note}

## Groups that teach nothing

{signal_section(all_same, p, group_size, band)}

{provenance_sections(manifest.get("data") or {})}
## Rejected rows

| reason | rows |
| --- | --- |
{rej_lines}

## Known limitations

- Pass rates belong to the profiling model and sampling settings above; another model (or the same
  one after training) has other pass rates. Re-profile before reusing the buckets elsewhere.
- Verifier timeouts and errors are scored as wrong; they are counted per problem in the profile.
- An estimate from few samples leans on its level: a problem unlike the rest of its level is pulled
  toward them until it has many samples (see `k`). `p_std` holds under the fitted prior, a
  distribution on a grid of steps of 0.025.
- A raw pass rate of 0 or 1 means "no success/failure seen in k tries", not certainty.{prior_limit}
- Answers are judged by math-verify's extraction (last `\\boxed{{}}`, then LaTeX, then a final
  number); answers in other forms can be scored wrong.

{reuse_section(record, export)}"""
    text = "---\n" + yaml.safe_dump(meta, sort_keys=False) + "---\n\n" + body
    return io.write_text(out, text)
